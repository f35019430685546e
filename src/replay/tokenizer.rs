//! The tokenizer registered under [`SIMHASH_TOKENIZER_NAME`]: replays the current document's
//! staged tokens for a text equal to a staged value, and analyses any other text.

use super::staged::StagedTokens;
use super::{analysis_id, CURRENT};
use crate::fingerprint::{Scheme, SimhashTokenStream, SimhashTokenizer, SIMHASH_TOKENIZER_NAME};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tantivy::tokenizer::{BoxTokenStream, TextAnalyzer, Token, TokenStream, Tokenizer};

/// How many text values the replaying tokenizer of an index took from the writer's tokens and
/// how many it analysed, since the index was opened
/// ([`NearDupIndex::analysis_counts`](crate::NearDupIndex::analysis_counts)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AnalysisCounts {
    /// Values whose one analysis served both the signature and the index: indexed from the
    /// tokens the writer made when signing, or (under [`Policy::Off`](crate::Policy::Off))
    /// signed by tantivy's indexing thread as it cut them.
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
    /// The scheme's built-in tokenizer, which also signs values on the indexing thread
    /// ([`super::signing`]); `None` under a user analyzer.
    builtin: Option<SimhashTokenizer>,
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
            builtin: scheme.builtin_tokenizer(),
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

/// Replayed tokens, the tokens of a value signed as it was cut, or the inner analyzer's stream.
pub(crate) enum ReplayStream<'a> {
    Replay(Replayed<'a>),
    Signed(SimhashTokenStream<'a>),
    Analyse(BoxTokenStream<'a>),
}

pub(crate) struct Replayed<'a> {
    staged: Arc<StagedTokens>,
    /// The value's runs of tokens ([`StagedValue::parts`](super::staged::StagedValue::parts)) and
    /// the one being read.
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
        let analysis = self.analysis;
        if let Some(builtin) = self.builtin.as_mut() {
            let signed = CURRENT.with(|current| {
                let mut current = current.borrow_mut();
                let session = current.session.as_mut()?;
                if !session.expects(analysis, text) {
                    return None;
                }
                // One analysis: the tokens tantivy indexes are the ones the signer reads.
                session.start_value();
                let stream = builtin.token_stream_with(text, &mut |t, from, to| {
                    session.token(text, t, from, to);
                });
                if let Some(signature) = session.end_value() {
                    current.signature = Some(signature);
                    if let Some(session) = current.session.take() {
                        session.put_back();
                    }
                }
                Some(stream)
            });
            if let Some(stream) = signed {
                self.counters.replayed.fetch_add(1, Ordering::Relaxed);
                return ReplayStream::Signed(stream);
            }
        }
        let found = CURRENT.with(|current| {
            let current = current.borrow();
            let staged = current.staged.as_ref()?;
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
            ReplayStream::Signed(s) => s.advance(),
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
            ReplayStream::Signed(s) => s.token(),
            ReplayStream::Replay(r) => r.token,
        }
    }

    fn token_mut(&mut self) -> &mut Token {
        match self {
            ReplayStream::Analyse(s) => s.token_mut(),
            ReplayStream::Signed(s) => s.token_mut(),
            ReplayStream::Replay(r) => r.token,
        }
    }
}
