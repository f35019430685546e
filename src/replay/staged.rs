//! A document's staged tokens: the signing pass's log kept as it is, each text value naming its
//! runs of it; and the pool their buffers go back to when tantivy is done with them.

use crate::signature::TokenSink;
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// One token as logged: its text in the log's buffer and its byte offsets.
#[derive(Clone, Copy, Debug)]
pub(super) struct LoggedToken {
    pub(super) text: (u32, u32),
    pub(super) from: u32,
    pub(super) to: u32,
}

/// The tokens of one analysis pass: text and byte offsets in the analysed text.
#[derive(Default, Debug)]
pub(crate) struct TokenLog {
    pub(super) text: String,
    pub(super) tokens: Vec<LoggedToken>,
    /// Set when an offset did not fit in 32 bits: nothing is staged then.
    pub(super) overflow: bool,
}

impl TokenLog {
    /// A log in the (emptied) buffers `text` and `tokens`, with room for a text of `bytes`
    /// bytes: tokens take about as many bytes as the text, and a word about six.
    pub(super) fn in_buffers(mut text: String, mut tokens: Vec<LoggedToken>, bytes: usize) -> Self {
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

/// A document's tokens, per text value, ready to be replayed by
/// [`ReplayTokenizer`](super::tokenizer::ReplayTokenizer).
///
/// The log of the signing pass is kept as it is (offsets in the joined text): a value names
/// the runs of it that are its tokens, and its start is subtracted when a token is replayed,
/// so staging copies no token (a writer stages every document it adds). When tantivy drops
/// the last reference, the buffers go back to the signer's [`StagingPool`].
#[derive(Debug)]
pub(crate) struct StagedTokens {
    /// Which analysis made them ([`analysis_id`](super::analysis_id)).
    pub(super) analysis: u64,
    /// The joined text the values are slices of.
    pub(super) text: String,
    pub(super) values: Vec<StagedValue>,
    pub(super) token_text: String,
    /// The logged tokens, then those of Han runs cut again within a value; offsets in `text`.
    pub(super) tokens: Vec<LoggedToken>,
    pub(super) pool: Arc<StagingPool>,
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
pub(crate) struct StagingPool(pub(super) Mutex<Vec<StagingBuffers>>);

#[derive(Debug, Default)]
pub(super) struct StagingBuffers {
    pub(super) text: String,
    pub(super) token_text: String,
    pub(super) tokens: Vec<LoggedToken>,
    pub(super) values: Vec<StagedValue>,
}

/// Buffer sets a pool keeps (a writer's signers stage documents as fast as tantivy's threads
/// drop them; the ones in tantivy's queue are not pooled).
pub(super) const POOLED_BUFFERS: usize = 16;
/// A buffer above this capacity (a very long document) is freed rather than kept.
pub(super) const POOLED_BYTES: usize = 1 << 20;

impl StagingPool {
    /// A pooled set of buffers, or new empty ones. Never fails (a poisoned pool gives new).
    pub(super) fn take(&self) -> StagingBuffers {
        self.0
            .lock()
            .ok()
            .and_then(|mut pooled| pooled.pop())
            .unwrap_or_default()
    }

    /// Keeps `buffers` for a later [`take`](Self::take), unless the pool is full or one of
    /// them is too large.
    pub(super) fn give(&self, mut buffers: StagingBuffers) {
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
pub(super) struct StagedValue {
    pub(super) text: Range<usize>,
    /// Where the value starts in the joined text (fits in 32 bits).
    pub(super) base: u32,
    /// The value's tokens, in order: runs of [`StagedTokens::tokens`] (a Han run cut again
    /// at its start, its own logged tokens, a Han run cut again at its end).
    pub(super) parts: [(u32, u32); 3],
}

impl StagedTokens {
    /// The staged value whose text is `text`, if any.
    pub(super) fn find(&self, analysis: u64, text: &str) -> Option<&StagedValue> {
        if analysis != self.analysis {
            return None;
        }
        self.values
            .iter()
            .find(|v| v.text.len() == text.len() && self.text.get(v.text.clone()) == Some(text))
    }

    /// The tokens of value `v`: text and offsets relative to the value.
    #[cfg(test)]
    pub(super) fn value_tokens(&self, v: usize) -> Vec<(&str, u32, u32)> {
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
