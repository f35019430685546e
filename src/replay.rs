//! One analysis per document: tantivy indexes the tokens the writer's signer already made (the
//! account is on [`AnalyzedDocument`]).

mod document;
mod signing;
mod split;
mod staged;
mod tokenizer;

pub use document::AnalyzedDocument;
pub(crate) use signing::{take_signature, DeferredSigning};
use split::stage;
pub(crate) use staged::{StagedTokens, StagingPool};
use staged::{StagingBuffers, TokenLog, ValueSpan};
pub use tokenizer::AnalysisCounts;
pub(crate) use tokenizer::{register, ReplayCounters};

use crate::fingerprint::Scheme;
use crate::signature::{Signature, Signer};
use std::cell::RefCell;
use std::sync::Arc;
use tantivy::schema::{Field, Value};
use tantivy::TantivyDocument;
use xxhash_rust::xxh3::xxh3_64;

/// Registers the scheme's analysis stage in `index` under
/// [`SIMHASH_TOKENIZER_NAME`](crate::SIMHASH_TOKENIZER_NAME), so text fields can be indexed with
/// the very analysis that fingerprints them.
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

/// What this thread knows of the document it is indexing: the tokens to replay, the
/// value-by-value signing in progress, the signature made on this thread.
#[derive(Default)]
pub(super) struct Current {
    /// The document signed on this thread ([`AnalyzedDocument`]'s number); 0 for any other.
    doc: u64,
    staged: Option<Arc<StagedTokens>>,
    session: Option<signing::Session>,
    signature: Option<Signature>,
}

thread_local! {
    static CURRENT: RefCell<Current> = RefCell::new(Current::default());
}

/// Makes `doc`'s tokens this thread's current ones (tantivy is about to cut its values): its
/// staged tokens, or for a document to sign here, a signing session (started once per
/// document: tantivy reads a document's values more than once).
fn make_current(doc: &TantivyDocument, tokens: &document::Tokens) {
    CURRENT.with(|current| {
        let mut current = current.borrow_mut();
        match tokens {
            document::Tokens::Deferred { number, signing } => {
                if current.doc != *number {
                    current.clear();
                    current.doc = *number;
                    signing.start(doc, &mut current);
                }
            }
            document::Tokens::Staged(staged) => {
                let same = match (current.staged.as_ref(), staged) {
                    (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                    (None, None) => true,
                    _ => false,
                };
                if current.doc != 0 || !same {
                    current.clear();
                    current.staged.clone_from(staged);
                }
            }
        }
    });
}

impl Current {
    fn clear(&mut self) {
        self.doc = 0;
        self.staged = None;
        self.signature = None;
        if let Some(session) = self.session.take() {
            session.put_back();
        }
    }
}

#[cfg(test)]
mod tests;
