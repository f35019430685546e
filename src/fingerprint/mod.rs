//! Fingerprints: a [`Scheme`] turns text into a 64-bit simhash [`Fingerprint`] (the account is on
//! [`Scheme`]).

mod accumulate;
mod analysis;
mod features;
mod fingerprinter;

use accumulate::{flush, FeatureCounts, Weighting};

pub use features::{Features, IdfTable, TermWeight};
use fingerprinter::Analysis;
pub use fingerprinter::Fingerprinter;

pub(crate) use analysis::is_han;
pub use analysis::{
    HanSegmentation, Normalization, SimhashTokenStream, SimhashTokenizer, SIMHASH_TOKENIZER_NAME,
};

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::BufRead;
use std::str::FromStr;
use std::sync::Arc;
use tantivy::tokenizer::{TextAnalyzer, TokenStream};
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// A 64-bit simhash fingerprint.
///
/// Displayed and parsed as 16 lower-case hex digits.
///
/// ```
/// use tantivy_simhash::Fingerprint;
/// let a = Fingerprint(0b1011);
/// assert_eq!(a.distance(Fingerprint(0b0001)), 2);
/// assert_eq!(a.to_string(), "000000000000000b");
/// assert_eq!("000000000000000b".parse::<Fingerprint>().unwrap(), a);
/// ```
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub struct Fingerprint(pub u64);

impl Fingerprint {
    /// The Hamming distance: the number of bits in which the two fingerprints differ (0..=64).
    #[inline]
    pub fn distance(self, other: Fingerprint) -> u32 {
        (self.0 ^ other.0).count_ones()
    }

    /// Whether the two fingerprints are within `max_distance` (inclusive).
    #[inline]
    pub fn is_within(self, other: Fingerprint, max_distance: u32) -> bool {
        self.distance(other) <= max_distance
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl FromStr for Fingerprint {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let t = s.trim().trim_start_matches("0x");
        u64::from_str_radix(t, 16).map(Fingerprint).map_err(|e| {
            Error::InvalidConfig(format!(
                "fingerprint `{s}` is not 1 to 16 hex digits ({e}); write it as printed, e.g. 0f3a9c..."
            ))
        })
    }
}

impl From<u64> for Fingerprint {
    fn from(v: u64) -> Self {
        Fingerprint(v)
    }
}

/// How a fingerprint was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FingerprintKind {
    /// A simhash of at least [`Scheme::min_features`] distinct features.
    Simhash,
    /// Too few features for a meaningful simhash: an exact hash of the normalised token sequence.
    /// It matches only texts with the very same tokens (a random 64-bit value against any other).
    Exact,
}

/// A fingerprint with what went into it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FingerprintDetails {
    /// The fingerprint.
    pub fingerprint: Fingerprint,
    /// Simhash, or the short-text fallback.
    pub kind: FingerprintKind,
    /// Tokens after analysis.
    pub tokens: usize,
    /// Distinct features that voted.
    pub features: usize,
}

/// How text is split into tokens.
#[derive(Clone)]
pub enum Tokenization {
    /// The built-in [`SimhashTokenizer`]: words for alphabetic scripts, Han runs by `han`.
    Builtin {
        /// How Han runs are split.
        han: HanSegmentation,
    },
    /// Any tantivy analyzer; it sees the text after [`Normalization::apply`]. `name` goes into
    /// the scheme id, so name different analyzers differently.
    Analyzer {
        /// A stable name for the analyzer (part of the scheme id).
        name: String,
        /// The analyzer.
        analyzer: TextAnalyzer,
    },
}

impl fmt::Debug for Tokenization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tokenization::Builtin { han } => write!(f, "Builtin {{ han: {han:?} }}"),
            Tokenization::Analyzer { name, .. } => write!(f, "Analyzer {{ name: {name:?} }}"),
        }
    }
}

/// The default feature-hash seed.
pub(crate) const DEFAULT_SEED: u64 = 0x7473_696d_6861_7368; // "tsimhash"

/// Everything that determines a fingerprint from text.
///
/// Build one with [`Scheme::builder`]; [`Scheme::default`] is the measured default
/// (docs/QUALITY.md explains the choice).
///
/// ```
/// use tantivy_simhash::{Features, Scheme};
///
/// let scheme = Scheme::builder().features(Features::words()).min_features(4).build()?;
/// let fp = scheme.fingerprint("我们在北京大学学习中文和计算机科学");
/// assert!(scheme.id().contains("w1"));
/// # Ok::<(), tantivy_simhash::Error>(())
/// ```
///
/// Charikar's simhash: every feature of the text (a word, a word shingle, a character n-gram) is
/// hashed to 64 bits; its weight is added to counter `i` where bit `i` of the hash is 1 and
/// subtracted where it is 0; bit `i` of the fingerprint is `counter[i] > 0`. Texts whose weighted
/// feature vectors are at angle θ differ in each bit with probability θ/π, so the Hamming
/// distance between fingerprints estimates how different the texts are.
///
/// A [`Scheme`] fixes every step (normalisation, tokenisation, features, weights, the seeded
/// feature hash, the short-text fallback) and has a stable [`Scheme::id`] that indexes record.
/// Golden tests pin the fingerprints of fixed texts, so any change to a scheme is deliberate.
///
/// ```
/// use tantivy_simhash::Scheme;
///
/// let scheme = Scheme::default();
/// let a = scheme.fingerprint("The quick brown fox jumps over the lazy dog near the river bank today");
/// let b = scheme.fingerprint("the QUICK brown fox  jumps over the lazy dog, near the river bank today!");
/// assert_eq!(a.distance(b), 0); // formatting only
/// ```
#[derive(Clone, Debug)]
pub struct Scheme {
    pub(super) inner: Arc<SchemeInner>,
}

#[derive(Debug)]
pub(super) struct SchemeInner {
    pub(super) normalization: Normalization,
    pub(super) tokenization: Tokenization,
    pub(super) features: Features,
    pub(super) weight: TermWeight,
    pub(super) idf: Option<IdfTable>,
    pub(super) stopword_weight: f32,
    /// Seeded hashes of the stop words (NLTK English and Chinese lists), when damped.
    pub(super) stopwords: HashSet<u64, BuildHasherDefault<IdentityHasher>>,
    pub(super) short_line: u32,
    pub(super) seed: u64,
    pub(super) min_features: usize,
    pub(super) id: String,
}

/// Builds a [`Scheme`]; every setting starts at the default scheme's value.
#[derive(Clone, Debug)]
pub struct SchemeBuilder {
    normalization: Normalization,
    tokenization: Tokenization,
    features: Features,
    weight: TermWeight,
    idf: Option<IdfTable>,
    stopword_weight: f32,
    short_line: u32,
    seed: u64,
    min_features: usize,
}

/// The version of the fingerprint algorithm; part of every scheme id.
pub(crate) const SCHEME_VERSION: u32 = 1;

impl Default for SchemeBuilder {
    fn default() -> Self {
        SchemeBuilder {
            normalization: Normalization::default(),
            tokenization: Tokenization::Builtin {
                han: HanSegmentation::Jieba,
            },
            // Measured in docs/QUALITY.md: words beat shingles and n-grams on every edit recipe.
            features: Features::words(),
            weight: TermWeight::Sublinear,
            idf: None,
            stopword_weight: 1.0,
            short_line: 0,
            seed: DEFAULT_SEED,
            min_features: 8,
        }
    }
}

impl SchemeBuilder {
    /// Sets the normalisation.
    pub fn normalization(mut self, n: Normalization) -> Self {
        self.normalization = n;
        self
    }
    /// Sets the tokenisation.
    pub fn tokenization(mut self, t: Tokenization) -> Self {
        self.tokenization = t;
        self
    }
    /// Uses any tantivy analyzer under a stable `name`.
    pub fn analyzer(self, name: &str, analyzer: TextAnalyzer) -> Self {
        self.tokenization(Tokenization::Analyzer {
            name: name.to_string(),
            analyzer,
        })
    }
    /// Sets the features.
    pub fn features(mut self, f: Features) -> Self {
        self.features = f;
        self
    }
    /// Sets the term weighting.
    pub fn term_weight(mut self, w: TermWeight) -> Self {
        self.weight = w;
        self
    }
    /// Multiplies word weights by a static IDF table (build it with the same seed).
    pub fn idf(mut self, table: IdfTable) -> Self {
        self.idf = Some(table);
        self
    }
    /// Multiplies the weight of stop words (NLTK's English and Chinese lists, from the
    /// `stop-words` crate) and of shingles made only of stop words; 1 leaves them as they are.
    /// Damping them keeps unrelated texts from agreeing on "the", "of", "的".
    pub fn stopword_weight(mut self, w: f32) -> Self {
        self.stopword_weight = w;
        self
    }
    /// Damps words on short lines: a word on a line of `n < tokens` tokens weighs `n / tokens`.
    /// Navigation bars, headers and footers are lines of a few words; content is not. 0 (the
    /// default) turns it off.
    pub fn short_line(mut self, tokens: u32) -> Self {
        self.short_line = tokens;
        self
    }
    /// Sets the feature-hash seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
    /// Below this many distinct features a text gets the exact-hash fallback.
    pub fn min_features(mut self, n: usize) -> Self {
        self.min_features = n;
        self
    }

    /// Checks the settings and builds the scheme. Cost: cheap, except that damped stop words
    /// are normalised and hashed once (a few hundred words).
    ///
    /// Fails with [`Error::InvalidConfig`] for a negative or non-finite weight, no feature
    /// turned on, a shingle or n-gram length above 8, or an IDF table read with another seed.
    pub fn build(self) -> Result<Scheme> {
        self.check()?;
        let stopwords = self.stopword_hashes();
        let id = self.id();
        Ok(Scheme {
            inner: Arc::new(SchemeInner {
                normalization: self.normalization,
                tokenization: self.tokenization,
                features: self.features,
                weight: self.weight,
                idf: self.idf,
                stopword_weight: self.stopword_weight,
                stopwords,
                short_line: self.short_line,
                seed: self.seed,
                min_features: self.min_features,
                id,
            }),
        })
    }

    /// Weights finite and not negative, some feature on, lengths at most 8, the IDF table
    /// read with the scheme's seed.
    fn check(&self) -> Result<()> {
        let f = &self.features;
        for (name, w) in [
            ("stopword_weight", self.stopword_weight),
            ("words", f.words),
            ("shingles", f.shingles),
            ("char_ngrams", f.char_ngrams),
        ] {
            if !(w.is_finite() && w >= 0.0) {
                return Err(Error::InvalidConfig(format!(
                    "feature weight {name} = {w}; expected a finite number >= 0"
                )));
            }
        }
        if f.words == 0.0 && !f.uses_shingles() && !f.uses_char_ngrams() {
            return Err(Error::InvalidConfig(
                "no features: words, shingles and char n-grams are all off; turn one on".into(),
            ));
        }
        if f.shingle_len > 8 || f.char_ngram_len > 8 {
            return Err(Error::InvalidConfig(format!(
                "shingle length {} / char n-gram length {}; expected at most 8",
                f.shingle_len, f.char_ngram_len
            )));
        }
        if let Some(t) = &self.idf {
            if t.seed != self.seed {
                return Err(Error::InvalidConfig(format!(
                    "the IDF table was read with seed {:016x} but the scheme uses {:016x}; \
                     read the table with the scheme's seed",
                    t.seed, self.seed
                )));
            }
        }
        Ok(())
    }

    /// Seeded hashes of the stop words (NLTK English and Chinese, normalised) when they are
    /// damped; empty otherwise.
    fn stopword_hashes(&self) -> HashSet<u64, BuildHasherDefault<IdentityHasher>> {
        let mut stopwords = HashSet::default();
        if self.stopword_weight != 1.0 {
            for lang in ["en", "zh"] {
                for w in stop_words::lookup(lang).unwrap_or(&[]) {
                    let w = self.normalization.apply(w);
                    stopwords.insert(xxh3_64_with_seed(w.as_bytes(), self.seed ^ WORD_TAG));
                }
            }
        }
        stopwords
    }

    /// The scheme id: every setting that changes a fingerprint, in a stable text form.
    fn id(&self) -> String {
        let tok = match &self.tokenization {
            Tokenization::Builtin { han } => match han {
                HanSegmentation::Jieba => "builtin-jieba".to_string(),
                HanSegmentation::Chars => "builtin-hanchars".to_string(),
            },
            Tokenization::Analyzer { name, .. } => format!("analyzer:{name}"),
        };
        let weight = match self.weight {
            TermWeight::Binary => "bin",
            TermWeight::Sublinear => "log",
        };
        let idf = match &self.idf {
            None => "none".to_string(),
            Some(t) => format!("{:016x}", t.digest),
        };
        let mut stop = String::new();
        if self.stopword_weight != 1.0 {
            stop = format!(";stop=nltk-en-zh:{}", self.stopword_weight);
        }
        if self.short_line > 0 {
            stop.push_str(&format!(";line={}", self.short_line));
        }
        format!(
            "simhash64-v{SCHEME_VERSION};norm={};tok={tok};feat={};tf={weight};idf={idf}{stop};seed={:016x};min={}",
            self.normalization.id(),
            self.features.id(),
            self.seed,
            self.min_features
        )
    }
}

/// A scheme's settings as data: what an index records so that the scheme can be rebuilt from
/// the index alone ([`Scheme::parameters`], [`SchemeParameters::to_builder`]).
///
/// Two things cannot be recorded as data: a user analyzer (recorded by its name) and an IDF
/// table (recorded by its digest); rebuilding a scheme that uses one needs it passed back in.
///
/// ```
/// use tantivy_simhash::{Features, Scheme, SchemeParameters};
///
/// let scheme = Scheme::builder().features(Features::words_and_shingles(2, 0.5)).build()?;
/// let json = serde_json::to_string(&scheme.parameters())?;
/// let parameters: SchemeParameters = serde_json::from_str(&json)?;
/// let rebuilt = parameters.to_builder(None, None)?.build()?;
/// assert_eq!(rebuilt.id(), scheme.id());
/// # Ok::<(), tantivy_simhash::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SchemeParameters {
    /// The normalisation.
    pub normalization: Normalization,
    /// The tokenisation.
    pub tokenization: TokenizationParameters,
    /// The features and their weights.
    pub features: Features,
    /// The term weighting.
    pub term_weight: TermWeight,
    /// The digest of the IDF table (16 hex digits), if the scheme uses one.
    pub idf_digest: Option<String>,
    /// The stop-word weight (1: not damped).
    pub stopword_weight: f32,
    /// The short-line damping (0: off).
    pub short_line: u32,
    /// The feature-hash seed.
    pub seed: u64,
    /// The exact-hash fallback threshold.
    pub min_features: usize,
}

/// [`Tokenization`] as data: a user analyzer is recorded by its name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TokenizationParameters {
    /// The built-in tokenizer, with its Han segmentation.
    Builtin {
        /// How Han runs are split.
        han: HanSegmentation,
    },
    /// A user analyzer, by the name it was given.
    Analyzer {
        /// The analyzer's name.
        name: String,
    },
}

impl SchemeParameters {
    /// A builder with these settings. `analyzer` is needed when the tokenisation is a user
    /// analyzer (give the one recorded by name), `idf` when the scheme used an IDF table (its
    /// digest must match).
    ///
    /// Errors: [`Error::InvalidConfig`] when an analyzer or table is needed and missing, or when
    /// the table is not the recorded one. Cost: none beyond the clone of the analyzer.
    pub fn to_builder(
        &self,
        analyzer: Option<TextAnalyzer>,
        idf: Option<IdfTable>,
    ) -> Result<SchemeBuilder> {
        let tokenization = match (&self.tokenization, analyzer) {
            (TokenizationParameters::Builtin { han }, _) => Tokenization::Builtin { han: *han },
            (TokenizationParameters::Analyzer { name }, Some(analyzer)) => Tokenization::Analyzer {
                name: name.clone(),
                analyzer,
            },
            (TokenizationParameters::Analyzer { name }, None) => {
                return Err(Error::InvalidConfig(format!(
                    "the scheme tokenises with the user analyzer `{name}`, which cannot be \
                     recorded as data; pass that analyzer to rebuild the scheme"
                )))
            }
        };
        let idf = match (&self.idf_digest, idf) {
            (None, _) => None,
            (Some(digest), Some(table)) if *digest == format!("{:016x}", table.digest) => {
                Some(table)
            }
            (Some(digest), table) => {
                return Err(Error::InvalidConfig(format!(
                    "the scheme uses the IDF table with digest {digest}, but {}; pass the table \
                     it was built with",
                    match table {
                        Some(t) => format!("the table given has digest {:016x}", t.digest),
                        None => "no table was given".to_string(),
                    }
                )))
            }
        };
        Ok(SchemeBuilder {
            normalization: self.normalization,
            tokenization,
            features: self.features,
            weight: self.term_weight,
            idf,
            stopword_weight: self.stopword_weight,
            short_line: self.short_line,
            seed: self.seed,
            min_features: self.min_features,
        })
    }
}

impl Default for Scheme {
    fn default() -> Self {
        Scheme::from_builder_infallible(SchemeBuilder::default())
    }
}

impl Scheme {
    /// A builder that starts from the default scheme.
    pub fn builder() -> SchemeBuilder {
        SchemeBuilder::default()
    }

    fn from_builder_infallible(b: SchemeBuilder) -> Scheme {
        match b.build() {
            Ok(s) => s,
            // The default settings are checked by a unit test; this arm is unreachable.
            Err(e) => unreachable!("default scheme is invalid: {e}"),
        }
    }

    /// The stable identifier: algorithm version and every parameter. Indexes record it.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The settings as data, to record next to an index ([`SchemeParameters::to_builder`]
    /// rebuilds the scheme from them).
    pub fn parameters(&self) -> SchemeParameters {
        let s = &self.inner;
        SchemeParameters {
            normalization: s.normalization,
            tokenization: match &s.tokenization {
                Tokenization::Builtin { han } => TokenizationParameters::Builtin { han: *han },
                Tokenization::Analyzer { name, .. } => {
                    TokenizationParameters::Analyzer { name: name.clone() }
                }
            },
            features: s.features,
            term_weight: s.weight,
            idf_digest: s.idf.as_ref().map(|t| format!("{:016x}", t.digest)),
            stopword_weight: s.stopword_weight,
            short_line: s.short_line,
            seed: s.seed,
            min_features: s.min_features,
        }
    }

    /// Below this many distinct features the fingerprint is the exact-hash fallback.
    pub fn min_features(&self) -> usize {
        self.inner.min_features
    }

    /// The features.
    pub fn features(&self) -> Features {
        self.inner.features
    }

    /// The scheme's analysis stage as a tantivy analyzer, to register for text fields so that
    /// search and fingerprints share one notion of a word. For a built-in tokenisation it is a
    /// [`SimhashTokenizer`]; for a user analyzer, a clone of it (which does not normalise).
    /// Cost: one small allocation (or the analyzer's clone); cannot fail.
    pub fn text_analyzer(&self) -> TextAnalyzer {
        match &self.inner.tokenization {
            Tokenization::Builtin { han } => {
                TextAnalyzer::from(SimhashTokenizer::new(self.inner.normalization, *han))
            }
            Tokenization::Analyzer { analyzer, .. } => analyzer.clone(),
        }
    }

    /// The built-in tokenizer of this scheme, if it uses it (what
    /// [`text_analyzer`](Self::text_analyzer) wraps).
    pub(crate) fn builtin_tokenizer(&self) -> Option<SimhashTokenizer> {
        match &self.inner.tokenization {
            Tokenization::Builtin { han } => {
                Some(SimhashTokenizer::new(self.inner.normalization, *han))
            }
            Tokenization::Analyzer { .. } => None,
        }
    }

    /// Whether tantivy can index the tokens this scheme's fingerprinting made instead of
    /// analysing again: only the built-in tokenisation gives each text value the tokens the
    /// registered analyzer gives it (a user analyzer sees normalised text when fingerprinting
    /// and the original text when indexing, and may number positions its own way).
    pub(crate) fn tokens_replayable(&self) -> bool {
        matches!(self.inner.tokenization, Tokenization::Builtin { .. })
    }

    /// A reusable fingerprinter (owns an analyzer and scratch buffers). Use one per thread.
    /// Cost: a clone of the scheme (reference-counted) and of its analyzer; the buffers are
    /// empty until the first text and then reused.
    pub fn fingerprinter(&self) -> Fingerprinter {
        let analysis = match &self.inner.tokenization {
            Tokenization::Builtin { han } => Analysis::Builtin(Box::new(SimhashTokenizer::new(
                self.inner.normalization,
                *han,
            ))),
            Tokenization::Analyzer { analyzer, .. } => Analysis::Analyzer(analyzer.clone()),
        };
        Fingerprinter {
            scheme: self.clone(),
            analysis,
            token_hashes: Vec::new(),
            token_lines: Vec::new(),
            line_tokens: Vec::new(),
            token_text: String::new(),
            pass: fingerprinter::PassState::default(),
            counts: FeatureCounts::default(),
            acc: [0; 64],
            weightings: {
                let (f, unit, weight) = (
                    self.inner.features,
                    self.inner.short_line.max(1),
                    self.inner.weight,
                );
                [
                    Weighting::new(unit, f.words, weight),
                    Weighting::new(unit, f.shingles, weight),
                    // Character n-grams are not damped by line.
                    Weighting::new(1, f.char_ngrams, weight),
                ]
            },
        }
    }

    /// The fingerprint of `text`. Cost: one analysis of the text (allocates a fingerprinter;
    /// reuse [`Scheme::fingerprinter`] in loops).
    pub fn fingerprint(&self, text: &str) -> Fingerprint {
        self.fingerprinter().fingerprint(text)
    }

    /// The fingerprint of `text` with how it was made. Cost as [`Scheme::fingerprint`]; never
    /// panics, whatever the input.
    pub fn fingerprint_details(&self, text: &str) -> FingerprintDetails {
        self.fingerprinter().fingerprint_details(text)
    }
}

const WORD_TAG: u64 = 0x5744_0000_0000_0001;
const SHINGLE_TAG: u64 = 0x5348_0000_0000_0000;
const CHAR_TAG: u64 = 0x4348_0000_0000_0000;
const EXACT_TAG: u64 = 0x4558_0000_0000_0000;
/// Weights are accumulated as fixed point, so the sum does not depend on the order of features.
const WEIGHT_SCALE: f32 = (1u32 << 16) as f32;

/// Feature keys are already xxh3 hashes: hashing them again would only cost time.
#[derive(Default, Clone, Copy, Debug)]
pub(crate) struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

#[cfg(test)]
mod tests;
