//! Fingerprints: a [`Scheme`] turns text into a 64-bit simhash [`Fingerprint`].
//!
//! Charikar's simhash: every feature of the text (a word, a word shingle, a character n-gram) is
//! hashed to 64 bits; its weight is added to counter `i` where bit `i` of the hash is 1 and
//! subtracted where it is 0; bit `i` of the fingerprint is `counter[i] > 0`. Texts whose weighted
//! feature vectors are at angle θ differ in each bit with probability θ/π, so the Hamming
//! distance between fingerprints estimates how different the texts are.
//!
//! A [`Scheme`] fixes every step (normalisation, tokenisation, features, weights, the seeded
//! feature hash, the short-text fallback) and has a stable [`Scheme::id`] that indexes record.
//! Golden tests pin the fingerprints of fixed texts, so any change to a scheme is deliberate.
//!
//! ```
//! use tantivy_simhash::Scheme;
//!
//! let scheme = Scheme::default();
//! let a = scheme.fingerprint("The quick brown fox jumps over the lazy dog near the river bank today");
//! let b = scheme.fingerprint("the QUICK brown fox  jumps over the lazy dog, near the river bank today!");
//! assert_eq!(a.distance(b), 0); // formatting only
//! ```

mod accumulate;
mod analysis;

use accumulate::{flush, FeatureCounts, Weighting};

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

/// Which features a text contributes, and their relative weights. A weight of 0 turns a kind off.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Features {
    /// Weight of single words (tokens).
    pub words: f32,
    /// Length of word shingles (2 = pairs of consecutive tokens); 0 or 1 turns them off.
    pub shingle_len: u8,
    /// Weight of word shingles.
    pub shingles: f32,
    /// Length of character n-grams over the normalised token sequence; 0 turns them off.
    pub char_ngram_len: u8,
    /// Weight of character n-grams.
    pub char_ngrams: f32,
}

impl Features {
    /// Single words only.
    pub fn words() -> Self {
        Features {
            words: 1.0,
            shingle_len: 0,
            shingles: 0.0,
            char_ngram_len: 0,
            char_ngrams: 0.0,
        }
    }

    /// Words and word shingles of length `len`, with the given shingle weight.
    pub fn words_and_shingles(len: u8, weight: f32) -> Self {
        Features {
            shingle_len: len,
            shingles: weight,
            ..Features::words()
        }
    }

    /// Character n-grams only.
    pub fn char_ngrams(len: u8) -> Self {
        Features {
            words: 0.0,
            shingle_len: 0,
            shingles: 0.0,
            char_ngram_len: len,
            char_ngrams: 1.0,
        }
    }

    fn uses_shingles(&self) -> bool {
        self.shingle_len >= 2 && self.shingles > 0.0
    }

    fn uses_char_ngrams(&self) -> bool {
        self.char_ngram_len >= 1 && self.char_ngrams > 0.0
    }

    fn id(&self) -> String {
        let mut parts = Vec::new();
        if self.words > 0.0 {
            parts.push(format!("w{}", self.words));
        }
        if self.uses_shingles() {
            parts.push(format!("s{}x{}", self.shingle_len, self.shingles));
        }
        if self.uses_char_ngrams() {
            parts.push(format!("c{}x{}", self.char_ngram_len, self.char_ngrams));
        }
        parts.join("+")
    }
}

/// How the occurrences of a feature turn into its weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum TermWeight {
    /// Every distinct feature weighs 1, however often it occurs.
    Binary,
    /// `1 + ln(tf)`: a repeated line cannot dominate, but repetition still counts.
    #[default]
    Sublinear,
}

/// A static inverse document frequency table for words, such as jieba's `idf.txt`.
///
/// Static on purpose: a fingerprint must not change when other documents arrive, so the table
/// comes from a fixed corpus, never from the index being built. Words not in the table get
/// the table's median IDF. The weight of a word is multiplied by `idf / median`.
#[derive(Clone, Debug)]
pub struct IdfTable {
    idf: HashMap<u64, f32, BuildHasherDefault<IdentityHasher>>,
    median: f32,
    digest: u64,
    seed: u64,
}

impl IdfTable {
    /// Reads lines of `word idf` (whitespace-separated), jieba's format. Words go through the
    /// same normalisation as text (NFKC, case folding, Traditional to Simplified); lines with
    /// fewer than two fields are skipped.
    ///
    /// Cost: one pass over the input, one hash of each word and one map entry per line.
    /// Errors: [`Error::Io`] when reading fails, [`Error::Input`] (with the line number) when an
    /// idf is not a number, [`Error::InvalidConfig`] when no line holds a `word idf` pair.
    pub fn from_reader(reader: impl BufRead, seed: u64) -> Result<Self> {
        let norm = Normalization::default();
        let mut idf = HashMap::default();
        let mut values = Vec::new();
        let mut digest = 0u64;
        for (n, line) in reader.lines().enumerate() {
            let line = line?;
            let mut parts = line.split_whitespace();
            let (Some(word), Some(value)) = (parts.next(), parts.next()) else {
                continue;
            };
            let value: f32 = value.parse().map_err(|_| Error::Input {
                path: "idf table".into(),
                line: n as u64 + 1,
                message: format!("`{value}` is not a number; expected lines of `word idf`"),
            })?;
            let word = norm.apply(word);
            let h = xxh3_64_with_seed(word.as_bytes(), seed ^ WORD_TAG);
            idf.insert(h, value);
            values.push(value);
            digest = digest.rotate_left(5) ^ h ^ u64::from(value.to_bits());
        }
        if values.is_empty() {
            return Err(Error::InvalidConfig(
                "the IDF table is empty; expected lines of `word idf`".into(),
            ));
        }
        let mid = values.len() / 2;
        values.select_nth_unstable_by(mid, f32::total_cmp);
        Ok(IdfTable {
            idf,
            median: values[mid].max(f32::MIN_POSITIVE),
            digest,
            seed,
        })
    }

    fn factor(&self, word_hash: u64) -> f32 {
        self.idf.get(&word_hash).copied().unwrap_or(self.median) / self.median
    }
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
pub const DEFAULT_SEED: u64 = 0x7473_696d_6861_7368; // "tsimhash"

/// Everything that determines a fingerprint from text. See the [module docs](self).
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
#[derive(Clone, Debug)]
pub struct Scheme {
    inner: Arc<SchemeInner>,
}

#[derive(Debug)]
struct SchemeInner {
    normalization: Normalization,
    tokenization: Tokenization,
    features: Features,
    weight: TermWeight,
    idf: Option<IdfTable>,
    stopword_weight: f32,
    /// Seeded hashes of the stop words (NLTK English and Chinese lists), when damped.
    stopwords: HashSet<u64, BuildHasherDefault<IdentityHasher>>,
    short_line: u32,
    seed: u64,
    min_features: usize,
    id: String,
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
pub const SCHEME_VERSION: u32 = 1;

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

/// Computes fingerprints for one [`Scheme`], reusing its buffers. Not `Sync`: one per thread
/// (for example with rayon's `map_init`).
pub struct Fingerprinter {
    scheme: Scheme,
    analysis: Analysis,
    token_hashes: Vec<u64>,
    /// Per token, its occurrence weight in units of 1/`unit` (short-line damping).
    token_lines: Vec<u32>,
    line_tokens: Vec<u32>,
    token_text: String,
    counts: FeatureCounts,
    acc: [i64; 64],
    /// How words, word shingles and character n-grams weigh under the scheme.
    weightings: [Weighting; 3],
}

/// How a [`Fingerprinter`] reads tokens.
enum Analysis {
    /// The built-in tokenizer, read token by token without building tokens.
    Builtin(Box<SimhashTokenizer>),
    /// A user analyzer, through its token stream.
    Analyzer(TextAnalyzer),
}

/// Receives each token, its seeded hash, the 0-based line it starts on and its byte offsets in
/// the text (`from..to`). A type parameter rather than `dyn`: the sink is inlined into the
/// per-token loop.
pub(crate) trait TokenSink: FnMut(&str, u64, u32, usize, usize) {}
impl<F: FnMut(&str, u64, u32, usize, usize)> TokenSink for F {}

/// No sink.
pub(crate) type NoSink = fn(&str, u64, u32, usize, usize);

const WORD_TAG: u64 = 0x5744_0000_0000_0001;
const SHINGLE_TAG: u64 = 0x5348_0000_0000_0000;
const CHAR_TAG: u64 = 0x4348_0000_0000_0000;
const EXACT_TAG: u64 = 0x4558_0000_0000_0000;
/// Weights are accumulated as fixed point, so the sum does not depend on the order of features.
const WEIGHT_SCALE: f32 = (1u32 << 16) as f32;

impl Fingerprinter {
    /// Calls `sink(token, from, to)` for every token of `text` as the built-in tokenizer cuts
    /// it, without fingerprinting; `false` (and no call) for a user analyzer.
    pub(crate) fn for_each_builtin_token(
        &mut self,
        text: &str,
        sink: &mut dyn FnMut(&str, usize, usize),
    ) -> bool {
        match &mut self.analysis {
            Analysis::Builtin(tokenizer) => {
                tokenizer.for_each_token(text, sink);
                true
            }
            Analysis::Analyzer(_) => false,
        }
    }

    /// The seeded hash of every token of the last text, in order (what a
    /// [`fingerprint_with_tokens`](Self::fingerprint_with_tokens) sink was given).
    pub(crate) fn token_hashes(&self) -> &[u64] {
        &self.token_hashes
    }

    /// The scheme this fingerprinter follows.
    pub fn scheme(&self) -> &Scheme {
        &self.scheme
    }

    /// The fingerprint of `text`. Cost: one analysis of the text with the fingerprinter's
    /// reused buffers (measured at 0.88-0.93x the analyzer's own speed in English, ~117-119
    /// MB/s, 0.92-1.04x in Chinese, ~25-27 MB/s; docs/PERFORMANCE.md, section Fingerprinting).
    /// Never panics, whatever the input.
    pub fn fingerprint(&mut self, text: &str) -> Fingerprint {
        self.fingerprint_details(text).fingerprint
    }

    /// The fingerprint of `text` with how it was made. Cost as
    /// [`fingerprint`](Self::fingerprint); never panics, whatever the input.
    pub fn fingerprint_details(&mut self, text: &str) -> FingerprintDetails {
        self.fingerprint_with_tokens::<NoSink>(text, None, false)
    }

    /// [`Fingerprinter::fingerprint_details`], also giving every token to `sink` with its hash
    /// and the 0-based line it starts on, in the same analysis pass (signatures use it: one
    /// analysis per document). Lines are counted only when `sink_lines` (or the scheme damps
    /// short lines); otherwise the sink sees line 0.
    ///
    /// Cost: one analysis of `text`, one xxh3 hash per token, a feature table of about twice
    /// the token count (reused) and 64 counters per distinct feature kind. Never panics.
    pub(crate) fn fingerprint_with_tokens<S: TokenSink>(
        &mut self,
        text: &str,
        sink: Option<S>,
        sink_lines: bool,
    ) -> FingerprintDetails {
        let inner = Arc::clone(&self.scheme.inner);
        self.analyse(&inner, text, sink, sink_lines);
        let tokens = self.token_hashes.len();
        self.occurrence_weights(inner.short_line);
        self.acc = [0; 64];
        let mut distinct = 0;
        if inner.features.words > 0.0 {
            distinct += self.add_words(&inner);
        }
        if inner.features.uses_shingles() {
            distinct += self.add_word_shingles(&inner);
        }
        if inner.features.uses_char_ngrams() {
            distinct += self.add_char_ngrams(&inner);
        }
        self.details(&inner, tokens, distinct)
    }

    /// The analysis pass: every token's seeded hash into `token_hashes`, its line into
    /// `token_lines` when the scheme damps short lines, the tokens' text into `token_text` when
    /// character n-grams need it; each token also goes to `sink`.
    fn analyse<S: TokenSink>(
        &mut self,
        inner: &SchemeInner,
        text: &str,
        mut sink: Option<S>,
        sink_lines: bool,
    ) {
        self.token_hashes.clear();
        self.token_lines.clear();
        self.line_tokens.clear();
        self.token_text.clear();
        let (seed, damp) = (inner.seed, inner.short_line);
        let want_text = inner.features.uses_char_ngrams();
        let normalized;
        let input: &str = match &inner.tokenization {
            Tokenization::Builtin { .. } => text,
            Tokenization::Analyzer { .. } => {
                normalized = inner.normalization.apply(text);
                &normalized
            }
        };
        let Fingerprinter {
            analysis,
            token_hashes,
            token_lines,
            token_text,
            ..
        } = self;
        let mut prev_han = false;
        let count_lines = damp > 0 || (sink_lines && sink.is_some());
        let mut lines = LineCounter::default();
        let mut on_token = |t: &str, offset_from: usize, offset_to: usize| {
            let line = if count_lines {
                lines.line_at(input, offset_from)
            } else {
                0
            };
            if damp > 0 {
                token_lines.push(line);
            }
            let hash = xxh3_64_with_seed(t.as_bytes(), seed ^ WORD_TAG);
            token_hashes.push(hash);
            if let Some(sink) = sink.as_mut() {
                sink(t, hash, line, offset_from, offset_to);
            }
            if want_text {
                let han = t.chars().next().is_some_and(is_han);
                // Han tokens join without a space, like the text they came from.
                let joins = han && prev_han;
                if !token_text.is_empty() && !joins {
                    token_text.push(' ');
                }
                token_text.push_str(t);
                prev_han = han;
            }
        };
        match analysis {
            Analysis::Builtin(tokenizer) => {
                tokenizer.for_each_token(input, &mut |t, from, to| on_token(t, from, to));
            }
            Analysis::Analyzer(analyzer) => {
                let mut stream = analyzer.token_stream(input);
                while stream.advance() {
                    let token = stream.token();
                    on_token(&token.text, token.offset_from, token.offset_to);
                }
            }
        }
    }

    /// Turns each token's line (in `token_lines`) into its occurrence weight in units of
    /// 1/`damp` (the unit of the scheme's [`Weighting`]s): a token on a line of `n < damp`
    /// tokens weighs `n / damp`.
    fn occurrence_weights(&mut self, damp: u32) {
        if damp > 0 {
            for &l in &self.token_lines {
                let l = l as usize;
                if self.line_tokens.len() <= l {
                    self.line_tokens.resize(l + 1, 0);
                }
                self.line_tokens[l] += 1;
            }
            for l in self.token_lines.iter_mut() {
                *l = self.line_tokens[*l as usize].min(damp);
            }
        }
    }

    /// The occurrence weight of token `i` (1 when the scheme does not damp short lines).
    fn occurrence(&self, i: usize) -> u32 {
        self.token_lines.get(i).copied().unwrap_or(1)
    }

    /// Words as features: counts them, adds them to the counters; returns how many are
    /// distinct.
    fn add_words(&mut self, inner: &SchemeInner) -> usize {
        self.counts.clear(self.token_hashes.len());
        if self.token_lines.is_empty() {
            for &h in &self.token_hashes {
                self.counts.add(h, 1);
            }
        } else {
            for (&h, &occurrence) in self.token_hashes.iter().zip(&self.token_lines) {
                self.counts.add(h, occurrence);
            }
        }
        flush(&self.counts, &mut self.acc, &self.weightings[0], |h| {
            let mut f = inner.idf.as_ref().map_or(1.0, |t| t.factor(h));
            // The set is empty unless stop words are damped (a look-up per feature).
            if !inner.stopwords.is_empty() && inner.stopwords.contains(&h) {
                f *= inner.stopword_weight;
            }
            f
        });
        self.counts.len()
    }

    /// Word shingles as features (a shingle weighs as its least weighted word; one made only
    /// of stop words is damped like them); returns how many are distinct.
    fn add_word_shingles(&mut self, inner: &SchemeInner) -> usize {
        let n = usize::from(inner.features.shingle_len);
        self.counts.clear(self.token_hashes.len());
        let mut buf = [0u8; 64];
        let mut all_stop: HashSet<u64, BuildHasherDefault<IdentityHasher>> = HashSet::default();
        for (start, w) in self.token_hashes.windows(n).enumerate() {
            for (i, h) in w.iter().enumerate() {
                buf[i * 8..i * 8 + 8].copy_from_slice(&h.to_le_bytes());
            }
            let h = xxh3_64_with_seed(&buf[..n * 8], inner.seed ^ SHINGLE_TAG ^ n as u64);
            let occ = (start..start + n)
                .map(|i| self.occurrence(i))
                .min()
                .unwrap_or(1);
            self.counts.add(h, occ);
            if !inner.stopwords.is_empty() && w.iter().all(|t| inner.stopwords.contains(t)) {
                all_stop.insert(h);
            }
        }
        flush(&self.counts, &mut self.acc, &self.weightings[1], |h| {
            if all_stop.contains(&h) {
                inner.stopword_weight
            } else {
                1.0
            }
        });
        self.counts.len()
    }

    /// Character n-grams of the normalised token text as features; returns how many are
    /// distinct.
    fn add_char_ngrams(&mut self, inner: &SchemeInner) -> usize {
        let n = usize::from(inner.features.char_ngram_len);
        self.counts.clear(self.token_text.len());
        let starts: Vec<usize> = self
            .token_text
            .char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(self.token_text.len()))
            .collect();
        for w in starts.windows(n + 1) {
            let gram = &self.token_text[w[0]..w[n]];
            let h = xxh3_64_with_seed(gram.as_bytes(), inner.seed ^ CHAR_TAG ^ n as u64);
            self.counts.add(h, 1);
        }
        flush(&self.counts, &mut self.acc, &self.weightings[2], |_| 1.0);
        self.counts.len()
    }

    /// The simhash of the counters, or the exact-hash fallback below the scheme's
    /// `min_features` distinct features.
    fn details(&self, inner: &SchemeInner, tokens: usize, distinct: usize) -> FingerprintDetails {
        if distinct < inner.min_features {
            let mut bytes = Vec::with_capacity(tokens * 8);
            for h in &self.token_hashes {
                bytes.extend_from_slice(&h.to_le_bytes());
            }
            return FingerprintDetails {
                fingerprint: Fingerprint(xxh3_64_with_seed(&bytes, inner.seed ^ EXACT_TAG)),
                kind: FingerprintKind::Exact,
                tokens,
                features: distinct,
            };
        }
        let mut fp = 0u64;
        for (i, &v) in self.acc.iter().enumerate() {
            if v > 0 {
                fp |= 1 << i;
            }
        }
        FingerprintDetails {
            fingerprint: Fingerprint(fp),
            kind: FingerprintKind::Simhash,
            tokens,
            features: distinct,
        }
    }
}

/// The 0-based line of byte offsets asked in order: each newline is counted once.
#[derive(Default)]
struct LineCounter {
    line: u32,
    scanned: usize,
}

impl LineCounter {
    #[inline]
    fn line_at(&mut self, text: &str, at: usize) -> u32 {
        let at = at.min(text.len());
        if at > self.scanned {
            let newlines = text.as_bytes()[self.scanned..at]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            self.line = self.line.saturating_add(newlines as u32);
            self.scanned = at;
        }
        self.line
    }
}

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

/// Registers the scheme's analysis stage in `index` under [`SIMHASH_TOKENIZER_NAME`], so text
/// fields can be indexed with the very analysis that fingerprints them.
///
/// The registered tokenizer also replays the tokens [`DedupWriter`](crate::DedupWriter) made
/// when it signed a document, so a fingerprinted text field indexed with it is analysed once
/// per document, not twice ([`crate::replay`]); any other text (queries, other documents) is
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
    crate::replay::register(index, scheme);
}

#[cfg(test)]
mod tests;
