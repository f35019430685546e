//! One analysis per document: tantivy indexes the tokens the writer's [`Signer`] already made.
//!
//! [`DedupWriter`](crate::DedupWriter) needs a document's signature before it adds the
//! document (the policy decides by it), so it analyses the text itself. Analysing it again
//! when tantivy indexes the text fields would double the cost. Instead:
//!
//! 1. the writer signs the configured text fields (their values joined by line breaks, exactly
//!    as [`Signer::sign`] sees them) and logs every token with its offsets;
//! 2. it hands tantivy an [`AnalyzedDocument`]: the document plus those tokens, split back into
//!    the text values they came from;
//! 3. whenever tantivy reads the document's values (its first step when indexing a document, on
//!    the indexing thread), the document makes its tokens the thread's current ones;
//! 4. the tokenizer registered under [`SIMHASH_TOKENIZER_NAME`]
//!    ([`crate::register_tokenizer`]) replays the current tokens for a text **equal** to a
//!    staged value, and analyses any other text as before.
//!
//! Correctness never depends on tantivy's internal order: tokens are replayed only for a text
//! byte-equal to the value they were made from, by the same scheme's analysis, and a value is
//! given exactly the tokens analysing it alone gives (a Han run that continues across the line
//! break joining two values is cut by jieba as one run: that run alone is cut again within each
//! value). If tantivy ever tokenized a value without first reading the document's
//! values on that thread, the text would simply be analysed twice; the counters
//! ([`NearDupIndex::analysis_counts`](crate::NearDupIndex::analysis_counts)) show it, and a
//! test asserts that nothing is analysed twice.

use crate::fingerprint::{is_han, Scheme, SIMHASH_TOKENIZER_NAME};
use crate::signature::{Signature, Signer, TokenSink};
use std::cell::RefCell;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tantivy::schema::{Document, Field, Value};
use tantivy::tokenizer::{BoxTokenStream, TextAnalyzer, Token, TokenStream, Tokenizer};
use tantivy::TantivyDocument;
use xxhash_rust::xxh3::xxh3_64;

/// One token as logged: its text in the log's buffer and its byte offsets.
#[derive(Clone, Copy, Debug)]
struct LoggedToken {
    text: (u32, u32),
    from: u32,
    to: u32,
}

/// The tokens of one analysis pass: text and byte offsets in the analysed text.
#[derive(Default, Debug)]
pub(crate) struct TokenLog {
    text: String,
    tokens: Vec<LoggedToken>,
    /// Set when an offset did not fit in 32 bits: nothing is staged then.
    overflow: bool,
}

impl TokenLog {
    /// A log in the (emptied) buffers `text` and `tokens`, with room for a text of `bytes`
    /// bytes: tokens take about as many bytes as the text, and a word about six.
    fn in_buffers(mut text: String, mut tokens: Vec<LoggedToken>, bytes: usize) -> Self {
        text.clear();
        tokens.clear();
        text.reserve(bytes);
        tokens.reserve(bytes / 6);
        TokenLog {
            text,
            tokens,
            overflow: false,
        }
    }
}

impl TokenSink for TokenLog {
    fn push(&mut self, token: &str, from: usize, to: usize) {
        let start = self.text.len();
        self.text.push_str(token);
        match (
            u32::try_from(start),
            u32::try_from(self.text.len()),
            u32::try_from(from),
            u32::try_from(to),
        ) {
            (Ok(a), Ok(b), Ok(from), Ok(to)) => self.tokens.push(LoggedToken {
                text: (a, b),
                from,
                to,
            }),
            _ => self.overflow = true,
        }
    }
}

/// One text value of a document within the joined text, and whether tantivy's analysis of its
/// field is the one to replay.
#[derive(Clone, Debug)]
pub(crate) struct ValueSpan {
    pub(crate) range: Range<usize>,
    pub(crate) replayable: bool,
}

/// A document's tokens, per text value, ready to be replayed by [`ReplayTokenizer`].
///
/// The log of the signing pass is kept as it is (offsets in the joined text): a value names
/// the runs of it that are its tokens, and its start is subtracted when a token is replayed,
/// so staging copies no token (a writer stages every document it adds). When tantivy drops
/// the last reference, the buffers go back to the signer's [`StagingPool`].
#[derive(Debug)]
pub(crate) struct StagedTokens {
    /// Which analysis made them ([`analysis_id`]).
    analysis: u64,
    /// The joined text the values are slices of.
    text: String,
    values: Vec<StagedValue>,
    token_text: String,
    /// The logged tokens, then those of Han runs cut again within a value; offsets in `text`.
    tokens: Vec<LoggedToken>,
    pool: Arc<StagingPool>,
}

impl Drop for StagedTokens {
    fn drop(&mut self) {
        self.pool.give(StagingBuffers {
            text: std::mem::take(&mut self.text),
            token_text: std::mem::take(&mut self.token_text),
            tokens: std::mem::take(&mut self.tokens),
            values: std::mem::take(&mut self.values),
        });
    }
}

/// The buffers of staged documents that tantivy is done with, for the next documents a signer
/// stages: a writer stages every document it adds, and reusing them saves four allocations
/// (of about the text's size each) per document. Bounded: at most [`POOLED_BUFFERS`] sets,
/// none larger than [`POOLED_BYTES`].
#[derive(Debug, Default)]
pub(crate) struct StagingPool(Mutex<Vec<StagingBuffers>>);

#[derive(Debug, Default)]
struct StagingBuffers {
    text: String,
    token_text: String,
    tokens: Vec<LoggedToken>,
    values: Vec<StagedValue>,
}

/// Buffer sets a pool keeps (a writer's signers stage documents as fast as tantivy's threads
/// drop them; the ones in tantivy's queue are not pooled).
const POOLED_BUFFERS: usize = 16;
/// A buffer above this capacity (a very long document) is freed rather than kept.
const POOLED_BYTES: usize = 1 << 20;

impl StagingPool {
    /// A pooled set of buffers, or new empty ones. Never fails (a poisoned pool gives new).
    fn take(&self) -> StagingBuffers {
        self.0
            .lock()
            .ok()
            .and_then(|mut pooled| pooled.pop())
            .unwrap_or_default()
    }

    /// Keeps `buffers` for a later [`take`](Self::take), unless the pool is full or one of
    /// them is too large.
    fn give(&self, mut buffers: StagingBuffers) {
        let bytes = [
            buffers.text.capacity(),
            buffers.token_text.capacity(),
            buffers.tokens.capacity() * std::mem::size_of::<LoggedToken>(),
            buffers.values.capacity() * std::mem::size_of::<StagedValue>(),
        ];
        if bytes.iter().any(|&b| b > POOLED_BYTES) {
            return;
        }
        buffers.text.clear();
        buffers.token_text.clear();
        buffers.tokens.clear();
        buffers.values.clear();
        if let Ok(mut pooled) = self.0.lock() {
            if pooled.len() < POOLED_BUFFERS {
                pooled.push(buffers);
            }
        }
    }
}

#[derive(Clone, Debug)]
struct StagedValue {
    text: Range<usize>,
    /// Where the value starts in the joined text (fits in 32 bits).
    base: u32,
    /// The value's tokens, in order: runs of [`StagedTokens::tokens`] (a Han run cut again
    /// at its start, its own logged tokens, a Han run cut again at its end).
    parts: [(u32, u32); 3],
}

impl StagedTokens {
    /// The staged value whose text is `text`, if any.
    fn find(&self, analysis: u64, text: &str) -> Option<&StagedValue> {
        if analysis != self.analysis {
            return None;
        }
        self.values
            .iter()
            .find(|v| v.text.len() == text.len() && self.text.get(v.text.clone()) == Some(text))
    }

    /// The tokens of value `v`: text and offsets relative to the value.
    #[cfg(test)]
    fn value_tokens(&self, v: usize) -> Vec<(&str, u32, u32)> {
        let value = &self.values[v];
        value
            .parts
            .iter()
            .flat_map(|&(a, b)| &self.tokens[a as usize..b as usize])
            .map(|t| {
                let text = &self.token_text[t.text.0 as usize..t.text.1 as usize];
                (text, t.from - value.base, t.to - value.base)
            })
            .collect()
    }
}

/// Registers the scheme's analysis stage in `index` under [`SIMHASH_TOKENIZER_NAME`](crate::SIMHASH_TOKENIZER_NAME), so text
/// fields can be indexed with the very analysis that fingerprints them.
///
/// The registered tokenizer also replays the tokens [`DedupWriter`](crate::DedupWriter) made
/// when it signed a document, so a fingerprinted text field indexed with it is analysed once
/// per document, not twice (this module); any other text (queries, other documents) is
/// analysed as usual.
///
/// Cost: one registration in the index's tokenizer manager (replacing any tokenizer already
/// registered under that name); cannot fail.
///
/// ```
/// use tantivy::schema::{Schema, TextFieldIndexing, TextOptions};
/// use tantivy::Index;
/// use tantivy_simhash::{register_tokenizer, Scheme, SIMHASH_TOKENIZER_NAME};
///
/// let mut builder = Schema::builder();
/// let indexing = TextFieldIndexing::default().set_tokenizer(SIMHASH_TOKENIZER_NAME);
/// builder.add_text_field("body", TextOptions::default().set_indexing_options(indexing));
/// let index = Index::create_in_ram(builder.build());
/// register_tokenizer(&index, &Scheme::default());
/// assert!(index.tokenizers().get(SIMHASH_TOKENIZER_NAME).is_some());
/// ```
pub fn register_tokenizer(index: &tantivy::Index, scheme: &Scheme) {
    register(index, scheme);
}

/// The text a document is fingerprinted from: the string values of `fields`, in field order,
/// joined by line breaks.
pub(crate) fn document_text(doc: &TantivyDocument, fields: &[Field]) -> String {
    let mut text = String::new();
    join_text_values(doc, fields, &mut text, |_, _| {});
    text
}

/// [`document_text`] into `text` (emptied first: a reused buffer), calling
/// `on_value(field, range)` with where in the text each value went.
pub(crate) fn join_text_values(
    doc: &TantivyDocument,
    fields: &[Field],
    text: &mut String,
    mut on_value: impl FnMut(Field, std::ops::Range<usize>),
) {
    // Sized at once: a document's text is copied once, not regrown value by value.
    let values = || {
        fields
            .iter()
            .flat_map(|&f| doc.get_all(f).filter_map(|v| v.as_str()))
    };
    text.clear();
    text.reserve(values().map(|s| s.len() + 1).sum());
    for &f in fields {
        for v in doc.get_all(f) {
            if let Some(s) = v.as_str() {
                if !text.is_empty() {
                    text.push('\n');
                }
                let start = text.len();
                text.push_str(s);
                on_value(f, start..text.len());
            }
        }
    }
}

/// Identifies a scheme's analysis, so one index's tokens are never replayed by another's
/// tokenizer for an equal text.
pub(crate) fn analysis_id(scheme: &Scheme) -> u64 {
    xxh3_64(scheme.id().as_bytes())
}

/// Cuts `text` as the built-in tokenizer does, calling the sink with each token and its byte
/// offsets in `text`.
pub(crate) type Retokenize<'a> = &'a mut dyn FnMut(&str, &mut dyn FnMut(&str, usize, usize));

/// Splits the tokens of the joined `text` back into its values, for the values whose field is
/// indexed with the replaying tokenizer. A value gets exactly the tokens analysing it alone
/// gives: the built-in tokenizer cuts text run by run, and only a Han run can continue across
/// the line break that joins two values (a wrapped line), where jieba cuts the joined run as a
/// whole; such a run is cut again within the value alone (`retokenize`, a few characters up
/// to the next punctuation), every other token is taken from the log. `None` when no value is
/// staged.
fn stage(
    analysis: u64,
    text: String,
    spans: &[ValueSpan],
    log: TokenLog,
    mut values: Vec<StagedValue>,
    pool: &Arc<StagingPool>,
    retokenize: Retokenize<'_>,
) -> Option<Arc<StagedTokens>> {
    if log.overflow || !spans.iter().any(|s| s.replayable) {
        pool.give(StagingBuffers {
            text,
            token_text: log.text,
            tokens: log.tokens,
            values,
        });
        return None;
    }
    let logged = log.tokens.len();
    values.clear();
    let mut staging = Staging {
        token_text: log.text,
        tokens: log.tokens,
        values,
    };
    let mut next = 0;
    for span in spans {
        // The logged tokens that start in this value (spans and tokens are in text order).
        let r = &span.range;
        while next < logged && (staging.tokens[next].from as usize) < r.start {
            next += 1;
        }
        let first = next;
        while next < logged && (staging.tokens[next].from as usize) < r.end {
            next += 1;
        }
        if span.replayable {
            staging.value(&text, r.clone(), first..next, retokenize);
        }
    }
    // Dropped at once when no value is staged: the buffers go back to the pool.
    let staged = StagedTokens {
        analysis,
        text,
        values: staging.values,
        token_text: staging.token_text,
        tokens: staging.tokens,
        pool: Arc::clone(pool),
    };
    (!staged.values.is_empty()).then(|| Arc::new(staged))
}

/// The tokens [`stage`] has split so far.
struct Staging {
    token_text: String,
    /// The log, then the tokens cut again.
    tokens: Vec<LoggedToken>,
    values: Vec<StagedValue>,
}

impl Staging {
    /// Stages the value at `r` of the joined `text` with its own tokens: the logged ones
    /// (`logged`, indices of those that start in it), except that a Han run continued across
    /// either end is cut again within the value. Nothing is staged for it when an offset does
    /// not fit in 32 bits.
    fn value(
        &mut self,
        text: &str,
        r: Range<usize>,
        logged: Range<usize>,
        retokenize: Retokenize<'_>,
    ) {
        let Ok(base) = u32::try_from(r.start) else {
            return;
        };
        let value = &text[r.clone()];
        let (lead, trail) = han_run_crosses(text, &r);
        // The part of the value whose logged tokens are its own: after a Han run continued
        // from the previous value, before one continued into the next.
        let own_from = if lead { leading_han_run_end(value) } else { 0 };
        let own_to = if trail {
            trailing_han_run_start(value)
        } else {
            value.len()
        };
        let appended = self.tokens.len();
        let none = (0, 0);
        let parts = if own_from >= own_to && (lead || trail) {
            // One Han run from end to end: cut the whole value again.
            self.cut_again(value, r.start, 0..value.len(), retokenize)
                .map(|all| [all, none, none])
        } else {
            let head = if lead {
                self.cut_again(value, r.start, 0..own_from, retokenize)
            } else {
                Some(none)
            };
            let own = self.own_logged(logged, r.start + own_from..r.start + own_to);
            let tail = if trail {
                self.cut_again(value, r.start, own_to..value.len(), retokenize)
            } else {
                Some(none)
            };
            head.zip(own).zip(tail).map(|((h, o), t)| [h, o, t])
        };
        match parts {
            Some(parts) => self.values.push(StagedValue {
                text: r,
                base,
                parts,
            }),
            None => self.tokens.truncate(appended),
        }
    }

    /// Tokens of `value[piece]` by analysing it again, appended with offsets in the joined
    /// text (the value starts at `start`); their run, or `None` when an offset does not fit in
    /// 32 bits.
    fn cut_again(
        &mut self,
        value: &str,
        start: usize,
        piece: Range<usize>,
        retokenize: Retokenize<'_>,
    ) -> Option<(u32, u32)> {
        let mut fits = true;
        let first = self.tokens.len();
        let Staging {
            token_text, tokens, ..
        } = self;
        let at = start + piece.start;
        retokenize(&value[piece], &mut |t, from, to| {
            let text_at = token_text.len();
            token_text.push_str(t);
            match (
                u32::try_from(text_at),
                u32::try_from(token_text.len()),
                u32::try_from(at + from),
                u32::try_from(at + to),
            ) {
                (Ok(a), Ok(b), Ok(from), Ok(to)) => tokens.push(LoggedToken {
                    text: (a, b),
                    from,
                    to,
                }),
                _ => fits = false,
            }
        });
        let run = (
            u32::try_from(first).ok()?,
            u32::try_from(tokens.len()).ok()?,
        );
        fits.then_some(run)
    }

    /// The run of `logged` (indices of the logged tokens starting in the value) that starts in
    /// `own` (offsets in the joined text); `None` if one runs past `own`'s end.
    fn own_logged(&self, logged: Range<usize>, own: Range<usize>) -> Option<(u32, u32)> {
        let tokens = &self.tokens[logged.clone()];
        // Tokens are in text order: those before `own` belong to a Han run cut again.
        let skip = tokens.partition_point(|t| (t.from as usize) < own.start);
        let take = tokens[skip..].partition_point(|t| (t.from as usize) < own.end);
        let run = &tokens[skip..skip + take];
        // A token of the log across the end of this value's own part: only a Han run does
        // that, and it is cut again. Never expected; be safe.
        if run.iter().any(|t| t.to as usize > own.end) {
            return None;
        }
        let first = logged.start + skip;
        Some((
            u32::try_from(first).ok()?,
            u32::try_from(first + take).ok()?,
        ))
    }
}

/// Whether a Han run continues across the start and across the end of `range` in `text`
/// (over whitespace, as the built-in tokenizer joins a wrapped line).
fn han_run_crosses(text: &str, range: &Range<usize>) -> (bool, bool) {
    let inner = &text[range.clone()];
    let solid = |c: &char| !c.is_whitespace();
    let first = inner.chars().find(solid);
    let last = inner.chars().rev().find(solid);
    let before = text[..range.start].chars().rev().find(solid);
    let after = text[range.end..].chars().find(solid);
    (
        first.is_some_and(is_han) && before.is_some_and(is_han),
        last.is_some_and(is_han) && after.is_some_and(is_han),
    )
}

/// The byte after the last Han character of the Han run (Han characters and whitespace) that
/// starts `value`.
fn leading_han_run_end(value: &str) -> usize {
    let mut end = 0;
    for (i, c) in value.char_indices() {
        if is_han(c) {
            end = i + c.len_utf8();
        } else if !c.is_whitespace() {
            break;
        }
    }
    end
}

/// The first byte of the Han run that ends `value`.
fn trailing_han_run_start(value: &str) -> usize {
    let mut start = value.len();
    for (i, c) in value.char_indices().rev() {
        if is_han(c) {
            start = i;
        } else if !c.is_whitespace() {
            break;
        }
    }
    start
}

/// Signs the text fields of `doc` (values joined by line breaks, as
/// [`document_text`] does) and stages their tokens for the
/// values whose field is in `replay_fields`. One analysis of the text.
pub(crate) fn sign_and_stage(
    signer: &mut Signer,
    pool: &Arc<StagingPool>,
    analysis: u64,
    doc: &TantivyDocument,
    text_fields: &[Field],
    replay_fields: &[Field],
) -> (Signature, Option<Arc<StagedTokens>>) {
    let StagingBuffers {
        mut text,
        token_text,
        tokens,
        values,
    } = pool.take();
    let mut spans = Vec::new();
    join_text_values(doc, text_fields, &mut text, |field, range| {
        spans.push(ValueSpan {
            range,
            replayable: replay_fields.contains(&field),
        })
    });
    if replay_fields.is_empty() {
        let signature = signer.sign(&text);
        pool.give(StagingBuffers {
            text,
            token_text,
            tokens,
            values,
        });
        return (signature, None);
    }
    let mut log = TokenLog::in_buffers(token_text, tokens, text.len());
    let signature = signer.sign_logging(&text, &mut log);
    let staged = stage(
        analysis,
        text,
        &spans,
        log,
        values,
        pool,
        &mut |piece, sink| {
            signer.for_each_builtin_token(piece, sink);
        },
    );
    (signature, staged)
}

thread_local! {
    /// The staged tokens of the document this thread is indexing.
    static CURRENT: RefCell<Option<Arc<StagedTokens>>> = const { RefCell::new(None) };
}

fn make_current(staged: &Option<Arc<StagedTokens>>) {
    CURRENT.with(|current| {
        let mut current = current.borrow_mut();
        let same = match (current.as_ref(), staged) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        if !same {
            current.clone_from(staged);
        }
    });
}

/// A document as [`DedupWriter`](crate::DedupWriter) gives it to tantivy: a
/// [`TantivyDocument`] and, for the values of text fields indexed with the scheme's analyzer,
/// the tokens the writer made when it signed the document, so tantivy does not analyse them
/// again ([module docs](self)). The inner tantivy writer of a [`DedupWriter`](crate::DedupWriter)
/// takes this type; a plain document converts with `From` (and is analysed by tantivy as usual).
///
/// ```
/// use tantivy::schema::{Schema, Value, TEXT};
/// use tantivy::TantivyDocument;
/// use tantivy_simhash::AnalyzedDocument;
///
/// let mut builder = Schema::builder();
/// let body = builder.add_text_field("body", TEXT);
/// let mut doc = TantivyDocument::new();
/// doc.add_text(body, "some text");
/// let analyzed = AnalyzedDocument::from(doc);
/// assert_eq!(analyzed.document().get_first(body).and_then(|v| v.as_str()), Some("some text"));
/// ```
pub struct AnalyzedDocument {
    doc: TantivyDocument,
    staged: Option<Arc<StagedTokens>>,
}

impl AnalyzedDocument {
    pub(crate) fn with_tokens(doc: TantivyDocument, staged: Option<Arc<StagedTokens>>) -> Self {
        AnalyzedDocument { doc, staged }
    }

    /// The document.
    pub fn document(&self) -> &TantivyDocument {
        &self.doc
    }

    /// The document, without its tokens.
    pub fn into_document(self) -> TantivyDocument {
        self.doc
    }

    /// Whether the document carries tokens for tantivy to replay.
    pub fn has_tokens(&self) -> bool {
        self.staged.is_some()
    }
}

impl std::fmt::Debug for AnalyzedDocument {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnalyzedDocument")
            .field("doc", &self.doc)
            .field(
                "staged_values",
                &self.staged.as_ref().map(|s| s.values.len()),
            )
            .finish()
    }
}

impl From<TantivyDocument> for AnalyzedDocument {
    fn from(doc: TantivyDocument) -> Self {
        AnalyzedDocument { doc, staged: None }
    }
}

impl Document for AnalyzedDocument {
    type Value<'a> = <TantivyDocument as Document>::Value<'a>;
    type FieldsValuesIter<'a> = <TantivyDocument as Document>::FieldsValuesIter<'a>;

    fn iter_fields_and_values(&self) -> Self::FieldsValuesIter<'_> {
        // tantivy reads a document's values before it tokenizes them, on the thread that
        // indexes it: from here on, this thread's tokenizer can replay this document's tokens.
        make_current(&self.staged);
        self.doc.iter_fields_and_values()
    }

    fn into_tantivy_document(self) -> TantivyDocument {
        self.doc
    }
}

/// How many text values the replaying tokenizer of an index took from the writer's tokens and
/// how many it analysed, since the index was opened
/// ([`NearDupIndex::analysis_counts`](crate::NearDupIndex::analysis_counts)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AnalysisCounts {
    /// Values indexed from the tokens the writer made when signing (no second analysis).
    pub replayed: u64,
    /// Values the tokenizer analysed: fields not fingerprinted, documents added without the
    /// writer's signing (a signature or fingerprint given, the inner writer), and query text.
    pub analysed: u64,
}

#[derive(Debug, Default)]
pub(crate) struct ReplayCounters {
    replayed: AtomicU64,
    analysed: AtomicU64,
}

impl ReplayCounters {
    pub(crate) fn get(&self) -> AnalysisCounts {
        AnalysisCounts {
            replayed: self.replayed.load(Ordering::Relaxed),
            analysed: self.analysed.load(Ordering::Relaxed),
        }
    }
}

/// The scheme's analyzer, replaying staged tokens for the values they were made from.
#[derive(Clone)]
pub(crate) struct ReplayTokenizer {
    analysis: u64,
    inner: TextAnalyzer,
    counters: Arc<ReplayCounters>,
    /// The token replayed values are read into: its text keeps its allocation from value to
    /// value (a fresh token would allocate and grow its text for every value).
    token: Token,
}

impl ReplayTokenizer {
    pub(crate) fn new(scheme: &Scheme) -> (Self, Arc<ReplayCounters>) {
        let counters = Arc::new(ReplayCounters::default());
        let tokenizer = ReplayTokenizer {
            analysis: analysis_id(scheme),
            inner: scheme.text_analyzer(),
            counters: Arc::clone(&counters),
            token: Token::default(),
        };
        (tokenizer, counters)
    }
}

/// Registers the replaying analyzer of `scheme` in `index` under [`SIMHASH_TOKENIZER_NAME`].
pub(crate) fn register(index: &tantivy::Index, scheme: &Scheme) -> Arc<ReplayCounters> {
    let (tokenizer, counters) = ReplayTokenizer::new(scheme);
    index
        .tokenizers()
        .register(SIMHASH_TOKENIZER_NAME, TextAnalyzer::from(tokenizer));
    counters
}

/// Replayed tokens, or the inner analyzer's stream.
pub(crate) enum ReplayStream<'a> {
    Replay(Replayed<'a>),
    Analyse(BoxTokenStream<'a>),
}

pub(crate) struct Replayed<'a> {
    staged: Arc<StagedTokens>,
    /// The value's runs of tokens ([`StagedValue::parts`]) and the one being read.
    parts: [(u32, u32); 3],
    part: usize,
    next: usize,
    end: usize,
    /// The value's start in the joined text: subtracted from each token's offsets.
    base: u32,
    position: usize,
    /// The tokenizer's token, reset for this value.
    token: &'a mut Token,
}

impl Tokenizer for ReplayTokenizer {
    type TokenStream<'a> = ReplayStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> ReplayStream<'a> {
        let found = CURRENT.with(|current| {
            let current = current.borrow();
            let staged = current.as_ref()?;
            let value = staged.find(self.analysis, text)?;
            Some((Arc::clone(staged), value.parts, value.base))
        });
        match found {
            Some((staged, parts, base)) => {
                self.counters.replayed.fetch_add(1, Ordering::Relaxed);
                // What `token()` shows before the first `advance()`, as a fresh token.
                self.token.text.clear();
                (self.token.offset_from, self.token.offset_to) = (0, 0);
                (self.token.position, self.token.position_length) = (usize::MAX, 1);
                ReplayStream::Replay(Replayed {
                    staged,
                    parts,
                    part: 0,
                    next: parts[0].0 as usize,
                    end: parts[0].1 as usize,
                    base,
                    position: 0,
                    token: &mut self.token,
                })
            }
            None => {
                self.counters.analysed.fetch_add(1, Ordering::Relaxed);
                ReplayStream::Analyse(self.inner.token_stream(text))
            }
        }
    }
}

impl TokenStream for ReplayStream<'_> {
    fn advance(&mut self) -> bool {
        match self {
            ReplayStream::Analyse(s) => s.advance(),
            ReplayStream::Replay(r) => {
                while r.next >= r.end {
                    r.part += 1;
                    let Some(&(next, end)) = r.parts.get(r.part) else {
                        return false;
                    };
                    (r.next, r.end) = (next as usize, end as usize);
                }
                let t = r.staged.tokens[r.next];
                let text = &r.staged.token_text[t.text.0 as usize..t.text.1 as usize];
                r.token.text.clear();
                r.token.text.push_str(text);
                // Offsets in the value: every staged token starts at or after its value.
                r.token.offset_from = t.from.saturating_sub(r.base) as usize;
                r.token.offset_to = t.to.saturating_sub(r.base) as usize;
                // As the built-in tokenizer numbers them: one position per token.
                r.token.position = r.position;
                r.token.position_length = 1;
                r.position += 1;
                r.next += 1;
                true
            }
        }
    }

    fn token(&self) -> &Token {
        match self {
            ReplayStream::Analyse(s) => s.token(),
            ReplayStream::Replay(r) => r.token,
        }
    }

    fn token_mut(&mut self) -> &mut Token {
        match self {
            ReplayStream::Analyse(s) => s.token_mut(),
            ReplayStream::Replay(r) => r.token,
        }
    }
}

#[cfg(test)]
mod tests;
