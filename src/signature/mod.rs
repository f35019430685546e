//! Signatures: more than one simhash per document, and one rule to match them (the account is on
//! [`MatchRule`](crate::MatchRule)).

pub(crate) mod chrome;
mod minhash;
mod pairs;
mod rule;
mod shingles;

pub(crate) use minhash::{band_from_words, resemblance_of};
pub use minhash::{MinHashConfig, Sketch};
pub use pairs::{distinct_signatures, pairs_in_key_group, pairs_in_memory, PairStats};
pub use rule::{Evidence, MatchRule, RuleSpec};
pub use shingles::Shingling;

use crate::fingerprint::{
    Fingerprint, FingerprintDetails, FingerprintKind, Fingerprinter, Scheme, TokenizationParameters,
};

/// Where [`Signer::sign_logging`] records the tokens of the text it signs (text and byte
/// offsets), for the index layer to hand to tantivy ([`crate::replay`]) without a second
/// analysis. A trait, so this layer imports nothing from the index layer.
pub(crate) trait TokenSink {
    /// One token and its byte offsets in the signed text.
    fn push(&mut self, token: &str, from: usize, to: usize);
}

/// The default bound on the candidates read per key (per segment, and in
/// [`crate::DedupWriter`]'s table of uncommitted documents) by lookups, [`crate::NearDupQuery`]
/// and the writer's near-duplicate check.
///
/// A key shared by more documents than this (a template sentence that fixes a MinHash band in
/// thousands of pages, or thousands of exact copies) is a **hot key**: only 256 of its live
/// documents are verified: per segment the first 256 live postings in doc id order (deleted
/// documents are skipped and do not count); among uncommitted documents, the first added while
/// the key had fewer than 256 live holders (a document deleted or replaced makes room). A
/// lookup verifies at most `keys x 256` candidates per segment (16 keys by default: 4,096),
/// and indexing `n` documents with dedup costs `O(n x keys x 256)` instead of `O(n^2)`
/// (besides skipping the deleted postings that precede them, until a merge drops them).
/// **What it costs in recall**: a match is missed only when *every* key it shares with the
/// query is hot and it is not among those 256 documents of any of them; a key whose live
/// holders never exceed the bound misses nothing, however many of its holders
/// [`Policy::Replace`](crate::Policy::Replace) deleted or where the commits fell
/// (tests/replace_commits.rs). A true
/// near-duplicate usually shares a simhash block key or a band outside the template, so it is
/// still found (tests/hot_keys.rs measures it); exact copies of a document are found as long
/// as one of its copies is among the first 256. Raise the bound to trade time for recall;
/// `usize::MAX` is exact.
pub const DEFAULT_MAX_POSTINGS_PER_KEY: usize = 256;
use serde::{Deserialize, Serialize};
use shingles::ShingleCollector;

/// What a document is matched by: its simhash and its MinHash sketch.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Signature {
    /// The simhash fingerprint.
    pub fingerprint: Fingerprint,
    /// The b-bit MinHash sketch (all zero for a document without tokens).
    pub sketch: Sketch,
}

/// Computes [`Signature`]s for one scheme and rule, reusing buffers. One per thread.
pub struct Signer {
    fingerprinter: Fingerprinter,
    shingling: Shingling,
    minhash: MinHashConfig,
    /// The scheme's tokens carry byte offsets into the signed text (the built-in tokenizer).
    builtin_offsets: bool,
    collector: ShingleCollector,
    bins: minhash::Bins,
    /// The chrome lines of the text being signed, whether its tokens' lines matter, and
    /// whether their spans are read (set by `begin`).
    chrome: Option<Vec<chrome::LineChrome>>,
    lines: bool,
    spans: bool,
}

impl Signer {
    /// A signer for `scheme` under `rule`. Cost: a [`Scheme::fingerprinter`]; the buffers are
    /// empty until the first text and then reused. Use one per thread.
    pub fn new(scheme: &Scheme, rule: &MatchRule) -> Signer {
        Signer {
            fingerprinter: scheme.fingerprinter(),
            shingling: rule.spec().shingling,
            minhash: *rule.minhash(),
            builtin_offsets: matches!(
                scheme.parameters().tokenization,
                TokenizationParameters::Builtin { .. }
            ),
            collector: ShingleCollector::default(),
            bins: minhash::Bins::default(),
            chrome: None,
            lines: false,
            spans: false,
        }
    }

    /// The signature of `text`. Cost: one analysis of the text, with the signer's reused buffers
    /// (measured at 0.70-0.75x the analyzer's own speed in English, ~91 MB/s per record and
    /// ~100 MB/s in 4 KB documents, 0.86-0.93x in Chinese, ~23-24 MB/s; docs/PERFORMANCE.md,
    /// section Fingerprinting). Never panics, whatever the input.
    pub fn sign(&mut self, text: &str) -> Signature {
        self.sign_details(text).0
    }

    /// The signature and how the fingerprint was made. Cost as [`sign`](Self::sign); never
    /// panics, whatever the input.
    pub fn sign_details(&mut self, text: &str) -> (Signature, FingerprintKind) {
        self.sign_with_tokens(text, None)
    }

    /// [`Signer::sign`], also recording every token (text and byte offsets in `text`) in `log`,
    /// from the same analysis pass, so tantivy can index them without analysing again
    /// ([`crate::replay`]).
    pub(crate) fn sign_logging(&mut self, text: &str, log: &mut dyn TokenSink) -> Signature {
        self.sign_with_tokens(text, Some(log)).0
    }

    fn sign_with_tokens(
        &mut self,
        text: &str,
        mut log: Option<&mut dyn TokenSink>,
    ) -> (Signature, FingerprintKind) {
        self.begin(Some(text));
        let (collector, spans) = (&mut self.collector, self.spans);
        let details = self.fingerprinter.fingerprint_with_tokens(
            text,
            Some(|t: &str, hash, line, from, to| {
                collector.token(t, hash, line, spans.then(|| text.get(from..to)).flatten());
                if let Some(log) = log.as_mut() {
                    log.push(t, from, to);
                }
            }),
            self.lines,
        );
        self.finish(details)
    }

    /// Whether signing text values one by one ([`begin_values`](Self::begin_values)) needs
    /// the values' joined text first: chrome lines are found in the whole text before any
    /// token is read.
    pub(crate) fn needs_joined_text(&self) -> bool {
        self.shingling.chrome
    }

    /// Starts signing text values one by one, as tantivy's indexing thread cuts them (the
    /// built-in tokenizer only): the values joined by line breaks are the signed text, so the
    /// signature equals [`sign`](Self::sign)'s of the joined text when no Han run continues
    /// across a joining line break (the caller checks). `joined`: the joined text, needed when
    /// [`needs_joined_text`](Self::needs_joined_text).
    pub(crate) fn begin_values(&mut self, joined: Option<&str>) {
        self.begin(joined);
        self.fingerprinter.begin_values(self.lines);
    }

    /// One token of the current value, at byte offsets `from..to` of `value`.
    #[inline]
    pub(crate) fn value_token(&mut self, value: &str, token: &str, from: usize, to: usize) {
        let (hash, line) = self.fingerprinter.value_token(value, token, from);
        let span = self.spans.then(|| value.get(from..to)).flatten();
        self.collector.token(token, hash, line, span);
    }

    /// Starts a value on 0-based line `line` of the joined text (the line breaks before it,
    /// joining ones included).
    pub(crate) fn start_value(&mut self, line: u32) {
        self.fingerprinter.start_value(line);
    }

    /// The signature of the values given since [`begin_values`](Self::begin_values).
    pub(crate) fn finish_values(&mut self) -> Signature {
        let details = self.fingerprinter.finish_values();
        self.finish(details).0
    }

    /// Chrome lines and whether lines matter, for the text about to be signed.
    fn begin(&mut self, text: Option<&str>) {
        // Lines matter only to chrome detection; most texts have no chrome shape and cost one
        // scan for a spaced separator.
        self.chrome = match text {
            Some(text) if self.shingling.chrome => chrome::chrome_lines(text),
            _ => None,
        };
        self.lines = self.shingling.min_line_words > 0 || self.chrome.is_some();
        // Token offsets index the signed text itself only under the built-in tokenizer (a
        // user analyzer's offsets index the normalised text).
        self.spans = self.lines && self.builtin_offsets;
        self.collector.clear(self.lines);
    }

    /// The sketch from the analysis pass's tokens, and the signature.
    fn finish(&mut self, details: FingerprintDetails) -> (Signature, FingerprintKind) {
        let token_hashes = self.fingerprinter.token_hashes();
        self.collector.complete(token_hashes);
        if let Some(chrome) = &self.chrome {
            self.collector.drop_chrome(chrome);
        }
        let bins = &mut self.bins;
        bins.clear(&self.minhash);
        self.collector
            .for_each_shingle(&self.shingling, token_hashes, |shingle| bins.add(shingle));
        let sketch = if bins.finish() {
            Sketch::from_bins(&self.minhash, bins.values())
        } else {
            Sketch::empty(&self.minhash)
        };
        (
            Signature {
                fingerprint: details.fingerprint,
                sketch,
            },
            details.kind,
        )
    }

    /// The built-in tokenizer's tokens of `text`, without signing ([`crate::replay`] cuts a
    /// value's Han run that the joined text continued into a neighbour).
    pub(crate) fn for_each_builtin_token(
        &mut self,
        text: &str,
        sink: &mut dyn FnMut(&str, usize, usize),
    ) -> bool {
        self.fingerprinter.for_each_builtin_token(text, sink)
    }

    /// The shingle hashes the sketch of `text` is made of (for evaluation and tests). Cost: a
    /// [`sign`](Self::sign) of `text`, plus a vector of its shingles.
    pub fn shingles(&mut self, text: &str) -> Vec<u64> {
        self.sign(text);
        let mut out = Vec::new();
        self.collector.for_each_shingle(
            &self.shingling,
            self.fingerprinter.token_hashes(),
            |shingle| out.push(shingle),
        );
        out
    }
}

#[cfg(test)]
pub(crate) mod tests;
