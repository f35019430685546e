//! Chrome-aware word 3-shingles, from the tokens of the scheme's own analysis.
//!
//! Units are the scheme's tokens, except that a Han token counts one unit per character (as the
//! resemblance of the evaluation does): jieba's cut of a sentence moves when one character is
//! edited, single characters do not. A shingle is `width` consecutive units.
//!
//! **Chrome** (optional, off by default). Navigation bars, breadcrumbs, link lists, "share this" rows and most footers are
//! lines of a few words. A line with fewer than `min_line_words` of the scheme's tokens is
//! chrome, and shingles that start on it are left out. When fewer than `min_content_shingles`
//! remain (a list of short items, a one-line text), every shingle counts instead, so short and
//! list-like documents still get a signature. Deterministic and per document: no corpus
//! statistics. Re-wrapping changes which lines are short, so this family is not
//! formatting-invariant on its own; the rule's simhash branch (formatting-invariant) covers
//! formatting-only copies.

use crate::fingerprint::is_han;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// How a document's shingles are chosen. See the [`signature` module docs](crate::signature).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Shingling {
    /// Units per shingle (3, as in the evaluation's resemblance).
    pub width: u8,
    /// Lines with fewer tokens than this are chrome; 0 keeps every line.
    pub min_line_words: u32,
    /// Below this many content shingles, every shingle counts.
    pub min_content_shingles: u32,
    /// Below this share (in percent) of content shingles among all, every shingle counts: a
    /// page that is mostly short lines (a list, a man page synopsis) is judged whole.
    pub min_content_percent: u32,
}

impl Default for Shingling {
    fn default() -> Self {
        Shingling {
            width: 3,
            // Off by default: measured, it finds copies under other chrome but also "the same
            // licence body under other copyright lines", which whole-page resemblance calls
            // different (docs/QUALITY.md, "Chrome-aware shingles").
            min_line_words: 0,
            min_content_shingles: 16,
            min_content_percent: 50,
        }
    }
}

impl Shingling {
    pub(crate) fn id(&self) -> String {
        format!(
            "sh{};line{};min{};pct{}",
            self.width, self.min_line_words, self.min_content_shingles, self.min_content_percent
        )
    }
}

const UNIT_SEED: u64 = 0x756e_6974_0000_0001;

/// Order-aware combination of unit hashes: each position rotates and multiplies by its own odd
/// constant, then splitmix64's finaliser mixes (cheaper than hashing the bytes again).
fn shingle_hash(units: &[(u64, u32)]) -> u64 {
    const ODD: [u64; 8] = [
        0x9e37_79b9_7f4a_7c15,
        0xc2b2_ae3d_27d4_eb4f,
        0x1656_67b1_9e37_79f9,
        0x27d4_eb2f_1656_67c5,
        0x94d0_49bb_1331_11eb,
        0xbf58_476d_1ce4_e5b9,
        0xff51_afd7_ed55_8ccd,
        0xc4ce_b9fe_1a85_ec53,
    ];
    let mut x = units.len() as u64;
    for (i, (h, _)) in units.iter().enumerate() {
        x ^= h.rotate_left(17 * i as u32).wrapping_mul(ODD[i % 8]);
    }
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Collects units from a token stream and turns them into shingle hashes. Reusable.
#[derive(Default, Debug)]
pub(crate) struct ShingleCollector {
    /// (unit hash, line) per unit.
    units: Vec<(u64, u32)>,
    /// Tokens per line.
    line_words: Vec<u32>,
}

impl ShingleCollector {
    pub(crate) fn clear(&mut self) {
        self.units.clear();
        self.line_words.clear();
    }

    /// One token of the scheme's analysis with its seeded hash, on 0-based line `line`
    /// (non-decreasing).
    pub(crate) fn token(&mut self, token: &str, hash: u64, line: u32) {
        let l = line as usize;
        if self.line_words.len() <= l {
            self.line_words.resize(l + 1, 0);
        }
        self.line_words[l] += 1;
        if token.chars().next().is_some_and(is_han) {
            let mut buf = [0u8; 4];
            for c in token.chars() {
                let unit = xxh3_64_with_seed(c.encode_utf8(&mut buf).as_bytes(), UNIT_SEED);
                self.units.push((unit, line));
            }
        } else {
            self.units.push((hash, line));
        }
    }

    /// The shingle hashes (with repeats) chosen by `shingling`, appended to `out`.
    pub(crate) fn shingles(&self, shingling: &Shingling, out: &mut Vec<u64>) {
        let width = usize::from(shingling.width.max(1));
        let start = out.len();
        let mut all = 0u32;
        let n = width.min(8);
        let hash = |w: &[(u64, u32)]| shingle_hash(w);
        if self.units.is_empty() {
            return;
        }
        if self.units.len() < n {
            out.push(hash(&self.units));
            return;
        }
        let min_words = shingling.min_line_words;
        for w in self.units.windows(n) {
            all += 1;
            if min_words == 0 || self.line_words[w[0].1 as usize] >= min_words {
                out.push(hash(w));
            }
        }
        let content = (out.len() - start) as u64;
        if min_words > 0
            && content < u64::from(all)
            && (content < u64::from(shingling.min_content_shingles)
                || content * 100 < u64::from(all) * u64::from(shingling.min_content_percent))
        {
            out.truncate(start);
            for w in self.units.windows(n) {
                out.push(hash(w));
            }
        }
    }
}
