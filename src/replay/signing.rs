//! Signing on tantivy's indexing thread ([`Policy::Off`](crate::Policy::Off)): the writer does
//! not sign; the replaying tokenizer signs each fingerprinted value while it cuts the value for
//! the index, and the segment component takes the finished signature
//! ([`take_signature`]). One analysis per document and no token log.
//!
//! The signature is defined on the fingerprinted values joined by line breaks. Cut one by one,
//! the values give the joined text's tokens except where a Han run continues across a joining
//! line break (jieba cuts such a run whole); a document with one, or whose values tantivy cuts
//! in another order than the join's, is signed at once on the indexing thread and its tokens
//! replayed instead (the writer's usual path, moved to this thread).

use super::staged::{StagingPool, POOLED_BYTES};
use super::{join_text_values, sign_and_stage, Current, CURRENT};
use crate::fingerprint::{is_han, Scheme};
use crate::signature::{MatchRule, Signature, Signer};
use std::cell::RefCell;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tantivy::schema::Field;
use tantivy::TantivyDocument;

/// What signing a writer's documents on tantivy's indexing threads needs; shared by the
/// documents ([`AnalyzedDocument`](super::AnalyzedDocument)).
#[derive(Debug)]
pub(crate) struct DeferredSigning {
    /// Tells this configuration's cached signer from another's.
    id: u64,
    scheme: Scheme,
    rule: MatchRule,
    text_fields: Arc<Vec<Field>>,
    analysis: u64,
    staging: Arc<StagingPool>,
    /// Whether tantivy cuts the values in the join's order (fields in field id order).
    in_join_order: bool,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl DeferredSigning {
    /// The deferred signing of an index whose fingerprinted fields are `text_fields`; `None`
    /// when tantivy would not cut them all with the tokenizer registered under
    /// [`SIMHASH_TOKENIZER_NAME`](crate::SIMHASH_TOKENIZER_NAME) (a user analyzer, a field
    /// indexed otherwise), so the writer must sign them itself. (Should a user's own tokenizer
    /// be registered under that name, the values never reach a session and the component
    /// signs the joined text instead: two analyses, the same signature.)
    pub(crate) fn new(
        scheme: &Scheme,
        rule: &MatchRule,
        text_fields: &Arc<Vec<Field>>,
        replay_fields: &[Field],
        staging: &Arc<StagingPool>,
    ) -> Option<Arc<DeferredSigning>> {
        if !scheme.tokens_replayable()
            || text_fields.is_empty()
            || text_fields.as_slice() != replay_fields
        {
            return None;
        }
        Some(Arc::new(DeferredSigning {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            scheme: scheme.clone(),
            rule: *rule,
            text_fields: Arc::clone(text_fields),
            analysis: super::analysis_id(scheme),
            staging: Arc::clone(staging),
            in_join_order: text_fields.windows(2).all(|w| w[0] < w[1]),
        }))
    }

    /// Starts signing `doc` on this thread: a session its values' tokens go to, or at once
    /// (signature and staged tokens) when its values cannot be signed one by one.
    pub(super) fn start(&self, doc: &TantivyDocument, current: &mut Current) {
        let mut session = Session::take(self);
        if self.in_join_order {
            let Session { text, ranges, .. } = &mut session;
            ranges.clear();
            join_text_values(doc, &self.text_fields, text, |_, range| ranges.push(range));
            if !han_run_crosses(&session.text, &session.ranges) {
                let joined = session
                    .signer
                    .needs_joined_text()
                    .then_some(session.text.as_str());
                session.signer.begin_values(joined);
                (session.next, session.lines, session.counted_to) = (0, 0, 0);
                if session.ranges.is_empty() {
                    current.signature = Some(session.signer.finish_values());
                    session.put_back();
                } else {
                    current.session = Some(session);
                }
                return;
            }
        }
        let (signature, staged) = sign_and_stage(
            &mut session.signer,
            &self.staging,
            self.analysis,
            doc,
            &self.text_fields,
            &self.text_fields,
        );
        current.staged = staged;
        current.signature = Some(signature);
        session.put_back();
    }
}

/// Whether a Han run continues across a line break joining two values (the built-in tokenizer
/// joins Han characters across whitespace): then the joined text's tokens are not the values'.
pub(super) fn han_run_crosses(text: &str, ranges: &[Range<usize>]) -> bool {
    let mut tail_is_han = false;
    for range in ranges {
        let Some(value) = text.get(range.clone()) else {
            continue;
        };
        let Some(first) = value.chars().find(|c| !c.is_whitespace()) else {
            continue;
        };
        if tail_is_han && is_han(first) {
            return true;
        }
        tail_is_han = value
            .chars()
            .rev()
            .find(|c| !c.is_whitespace())
            .is_some_and(is_han);
    }
    false
}

/// One document being signed value by value on this thread.
pub(super) struct Session {
    config: u64,
    analysis: u64,
    signer: Signer,
    /// The fingerprinted values joined by line breaks, and each value's place in it.
    text: String,
    ranges: Vec<Range<usize>>,
    /// The next value expected.
    next: usize,
    /// Line breaks in `text` before `counted_to` (the values' line numbers).
    lines: u32,
    counted_to: usize,
}

thread_local! {
    /// The last session's signer and buffers, for the next document on this thread.
    static SPARE: RefCell<Option<Session>> = const { RefCell::new(None) };
}

impl Session {
    /// This thread's spare session when it is `signing`'s, or a new one.
    fn take(signing: &DeferredSigning) -> Session {
        let spare = SPARE.with(|s| s.borrow_mut().take());
        match spare {
            Some(s) if s.config == signing.id => s,
            _ => Session {
                config: signing.id,
                analysis: signing.analysis,
                signer: signing.rule.signer(&signing.scheme),
                text: String::new(),
                ranges: Vec::new(),
                next: 0,
                lines: 0,
                counted_to: 0,
            },
        }
    }

    /// Keeps the signer and buffers for the next document; a buffer a very long document grew
    /// is freed rather than kept for the thread's lifetime.
    pub(super) fn put_back(mut self) {
        if self.text.capacity() > POOLED_BYTES {
            self.text = String::new();
        }
        if self.ranges.capacity() * std::mem::size_of::<Range<usize>>() > POOLED_BYTES {
            self.ranges = Vec::new();
        }
        SPARE.with(|s| *s.borrow_mut() = Some(self));
    }

    /// Whether `text`, which tantivy is about to cut with the tokenizer of `analysis`, is the
    /// next value to sign.
    pub(super) fn expects(&self, analysis: u64, text: &str) -> bool {
        analysis == self.analysis
            && self
                .ranges
                .get(self.next)
                .and_then(|r| self.text.get(r.clone()))
                == Some(text)
    }

    /// Starts the expected value: its first line in the joined text (an empty value adds no
    /// joining line break, as [`join_text_values`] joins them).
    pub(super) fn start_value(&mut self) {
        let start = self.ranges.get(self.next).map_or(0, |r| r.start);
        if let Some(before) = self.text.as_bytes().get(self.counted_to..start) {
            let breaks = memchr::memchr_iter(b'\n', before).count();
            self.lines = self.lines.saturating_add(breaks as u32);
            self.counted_to = start;
        }
        self.signer.start_value(self.lines);
    }

    /// One token of the expected value `value`.
    #[inline]
    pub(super) fn token(&mut self, value: &str, token: &str, from: usize, to: usize) {
        self.signer.value_token(value, token, from, to);
    }

    /// Ends the expected value; the signature once it was the last.
    pub(super) fn end_value(&mut self) -> Option<Signature> {
        self.next += 1;
        (self.next == self.ranges.len()).then(|| self.signer.finish_values())
    }

    /// The signature of the whole joined text, when tantivy did not cut every value with the
    /// replaying tokenizer (a second analysis; not expected).
    fn sign_joined(&mut self) -> Signature {
        self.signer.sign(&self.text)
    }
}

/// The signature of the document this thread is indexing, when it was signed on this thread;
/// `None` for a document the writer signed (its signature is in its fields) or any other.
/// Called by the segment component once per document, after tantivy has cut its text.
pub(crate) fn take_signature() -> Option<Signature> {
    CURRENT.with(|current| {
        let mut current = current.borrow_mut();
        if let Some(signature) = current.signature.take() {
            return Some(signature);
        }
        let mut session = current.session.take()?;
        let signature = session.sign_joined();
        session.put_back();
        Some(signature)
    })
}
