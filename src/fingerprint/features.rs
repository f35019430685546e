//! What a scheme counts as features, and how their occurrences weigh.

use super::*;

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

    pub(super) fn uses_shingles(&self) -> bool {
        self.shingle_len >= 2 && self.shingles > 0.0
    }

    pub(super) fn uses_char_ngrams(&self) -> bool {
        self.char_ngram_len >= 1 && self.char_ngrams > 0.0
    }

    pub(super) fn id(&self) -> String {
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
    pub(super) idf: HashMap<u64, f32, BuildHasherDefault<IdentityHasher>>,
    pub(super) median: f32,
    pub(super) digest: u64,
    pub(super) seed: u64,
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

    pub(super) fn factor(&self, word_hash: u64) -> f32 {
        self.idf.get(&word_hash).copied().unwrap_or(self.median) / self.median
    }
}
