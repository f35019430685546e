//! [`AnalyzedDocument`]: the document type tantivy indexes, carrying its staged tokens.

use super::make_current;
use super::signing::DeferredSigning;
use super::staged::StagedTokens;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tantivy::schema::Document;
use tantivy::TantivyDocument;

/// A document as [`DedupWriter`](crate::DedupWriter) gives it to tantivy: a
/// [`TantivyDocument`] and, for the values of text fields indexed with the scheme's analyzer,
/// the tokens the writer made when it signed the document, so tantivy does not analyse them
/// again (see below). The inner tantivy writer of a [`DedupWriter`](crate::DedupWriter)
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
///
/// One analysis per document: tantivy indexes the tokens the writer's signer already made.
///
/// [`DedupWriter`](crate::DedupWriter) needs a document's signature before it adds the
/// document (the policy decides by it), so it analyses the text itself. Analysing it again
/// when tantivy indexes the text fields would double the cost. Instead:
///
/// 1. the writer signs the configured text fields (their values joined by line breaks, exactly
///    as [`Signer::sign`](crate::Signer::sign) sees them) and logs every token with its offsets;
/// 2. it hands tantivy an `AnalyzedDocument`: the document plus those tokens, split back into
///    the text values they came from;
/// 3. whenever tantivy reads the document's values (its first step when indexing a document, on
///    the indexing thread), the document makes its tokens the thread's current ones;
/// 4. the tokenizer registered under [`SIMHASH_TOKENIZER_NAME`](crate::SIMHASH_TOKENIZER_NAME)
///    ([`crate::register_tokenizer`]) replays the current tokens for a text **equal** to a
///    staged value, and analyses any other text as before.
///
/// Under [`Policy::Off`](crate::Policy::Off) nothing needs the signature before the document
/// is added, so the writer does not sign it: the document tells the indexing thread to sign
/// it, the same tokenizer gives the signer each fingerprinted value's tokens as it cuts them
/// for the index (no token log), and the segment component stores the finished signature.
/// A document whose Han run continues across a joining line break, or whose fingerprinted
/// fields are not in field-id order (the order tantivy cuts them in), is signed whole on the
/// indexing thread and replayed as above; a value tantivy does not cut with this tokenizer
/// leaves the component to sign the joined text (two analyses, the same signature).
///
/// Correctness never depends on tantivy's internal order: tokens are replayed only for a text
/// byte-equal to the value they were made from, by the same scheme's analysis, and a value is
/// given exactly the tokens analysing it alone gives (a Han run that continues across the line
/// break joining two values is cut by jieba as one run: that run alone is cut again within each
/// value). If tantivy ever tokenized a value without first reading the document's
/// values on that thread, the text would simply be analysed twice; the counters
/// ([`NearDupIndex::analysis_counts`](crate::NearDupIndex::analysis_counts)) show it, and a
/// test asserts that nothing is analysed twice.
pub struct AnalyzedDocument {
    doc: TantivyDocument,
    tokens: Tokens,
}

/// The tokens a document carries for tantivy, or the signing tantivy's thread is to do.
pub(super) enum Tokens {
    /// The writer's staged tokens (none: tantivy analyses the document as usual).
    Staged(Option<Arc<StagedTokens>>),
    /// To be signed on the indexing thread as tantivy cuts its values
    /// ([`Policy::Off`](crate::Policy::Off)); `number` tells the document from the thread's
    /// previous one.
    Deferred {
        number: u64,
        signing: Arc<DeferredSigning>,
    },
}

/// Numbers documents signed on tantivy's threads (0 is none).
static NEXT_NUMBER: AtomicU64 = AtomicU64::new(1);

impl AnalyzedDocument {
    pub(crate) fn with_tokens(doc: TantivyDocument, staged: Option<Arc<StagedTokens>>) -> Self {
        AnalyzedDocument {
            doc,
            tokens: Tokens::Staged(staged),
        }
    }

    /// `doc`, to be signed on tantivy's indexing thread by `signing`, which the segment
    /// component then stores.
    pub(crate) fn signed_when_indexed(
        doc: TantivyDocument,
        signing: &Arc<DeferredSigning>,
    ) -> Self {
        AnalyzedDocument {
            doc,
            tokens: Tokens::Deferred {
                number: NEXT_NUMBER.fetch_add(1, Ordering::Relaxed),
                signing: Arc::clone(signing),
            },
        }
    }

    /// The document.
    pub fn document(&self) -> &TantivyDocument {
        &self.doc
    }

    /// The document, without its tokens.
    pub fn into_document(self) -> TantivyDocument {
        self.doc
    }

    /// Whether the document carries tokens for tantivy to replay, or is signed while tantivy
    /// cuts its text.
    pub fn has_tokens(&self) -> bool {
        !matches!(self.tokens, Tokens::Staged(None))
    }
}

impl std::fmt::Debug for AnalyzedDocument {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnalyzedDocument")
            .field("doc", &self.doc)
            .field(
                "staged_values",
                &match &self.tokens {
                    Tokens::Staged(staged) => staged.as_ref().map(|s| s.values.len()),
                    Tokens::Deferred { .. } => None,
                },
            )
            .finish()
    }
}

impl From<TantivyDocument> for AnalyzedDocument {
    fn from(doc: TantivyDocument) -> Self {
        AnalyzedDocument {
            doc,
            tokens: Tokens::Staged(None),
        }
    }
}

impl Document for AnalyzedDocument {
    type Value<'a> = <TantivyDocument as Document>::Value<'a>;
    type FieldsValuesIter<'a> = <TantivyDocument as Document>::FieldsValuesIter<'a>;

    fn iter_fields_and_values(&self) -> Self::FieldsValuesIter<'_> {
        // tantivy reads a document's values before it tokenizes them, on the thread that
        // indexes it: from here on, this thread's tokenizer can replay this document's tokens.
        make_current(&self.doc, &self.tokens);
        self.doc.iter_fields_and_values()
    }

    fn into_tantivy_document(self) -> TantivyDocument {
        self.doc
    }
}
