//! Chrome-aware word 3-shingles, from the tokens of the scheme's own analysis.
//!
//! Units are the scheme's tokens, except that a Han token counts one unit per character (as the
//! resemblance of the evaluation does): jieba's cut of a sentence moves when one character is
//! edited, single characters do not. A shingle is `width` consecutive units.
//!
//! **Chrome by shape** (`chrome`, on by default). Before shingling, the units of lines that
//! have the shape of site chrome are removed: link lists (`Home | Docs | Blog`, breadcrumbs),
//! the site name when it also ends the title (`Install guide | Daily Dev` over a `Daily Dev`
//! header; the title's suffix goes too) and short lines that repeat that name (a copyright
//! footer). The content on both sides then joins up as on the bare page. Shapes, not lengths:
//! prose never has them, so documents without chrome keep every unit (measured: the natural
//! corpora's matches barely move), and the decision does not depend on spacing or line width.
//! If nothing but chrome remains, every unit counts.
//!
//! **Short lines** (`min_line_words`, off by default). A line with fewer than
//! `min_line_words` of the scheme's tokens is chrome, and shingles that start on it are left
//! out. When fewer than `min_content_shingles` remain (a list of short items, a one-line text),
//! every shingle counts instead. Measured, it also matches "the same licence body under other
//! copyright lines", which whole-page resemblance calls different, and re-wrapping changes
//! which lines are short.
//!
//! Both are deterministic and per document: no corpus statistics.

use super::chrome::LineChrome;
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
    /// Leave out site chrome recognised by its shape (link lists, the site name and the title's
    /// site suffix, short lines that repeat the site name; [`crate::signature`] module docs):
    /// its units are removed before shingling, so the content on both sides of a header joins
    /// up as on the bare page. On by default; a record written before this option existed
    /// reads as off (what it was built with).
    #[serde(default)]
    pub chrome: bool,
}

impl Default for Shingling {
    fn default() -> Self {
        Shingling {
            width: 3,
            // Off: measured, dropping every short line finds copies under other chrome but also
            // "the same licence body under other copyright lines", which whole-page
            // resemblance calls different (docs/QUALITY.md, "Chrome-aware shingles").
            min_line_words: 0,
            min_content_shingles: 16,
            min_content_percent: 50,
            // On: chrome by shape (link lists, the site name) leaves natural documents alone and
            // finds copies under another site's header and footer (docs/QUALITY.md).
            chrome: true,
        }
    }
}

impl Shingling {
    pub(crate) fn id(&self) -> String {
        let id = format!(
            "sh{};line{};min{};pct{}",
            self.width, self.min_line_words, self.min_content_shingles, self.min_content_percent
        );
        // Only when on, so the ids of rules without it stay as recorded.
        if self.chrome {
            id + ";chrome1"
        } else {
            id
        }
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
    /// (non-decreasing). `span` is the token's own text in the signed text when the analysis
    /// gives offsets into it: a Han token can run across a line break (Han runs join across
    /// whitespace), and each of its characters is then a unit of its own line, so that removing
    /// a chrome line never takes a character of the next line with it.
    pub(crate) fn token(&mut self, token: &str, hash: u64, line: u32, span: Option<&str>) {
        let l = line as usize;
        if self.line_words.len() <= l {
            self.line_words.resize(l + 1, 0);
        }
        self.line_words[l] += 1;
        if token.chars().next().is_some_and(is_han) {
            let mut char_lines = span.filter(|s| s.contains('\n')).map(|s| {
                let mut at = line;
                s.chars().filter_map(move |c| {
                    if c == '\n' {
                        at = at.saturating_add(1);
                    }
                    (!c.is_whitespace()).then_some(at)
                })
            });
            let mut buf = [0u8; 4];
            for c in token.chars() {
                let unit_line = char_lines.as_mut().and_then(Iterator::next).unwrap_or(line);
                let unit = xxh3_64_with_seed(c.encode_utf8(&mut buf).as_bytes(), UNIT_SEED);
                self.units.push((unit, unit_line));
            }
            let last = self.units.last().map_or(l, |u| u.1 as usize);
            if self.line_words.len() <= last {
                self.line_words.resize(last + 1, 0);
            }
        } else {
            self.units.push((hash, line));
        }
    }

    /// Removes the units of chrome lines and of site-name suffixes (`chrome`, per line, from
    /// [`chrome_lines`](super::chrome::chrome_lines)), unless nothing would remain.
    pub(crate) fn drop_chrome(&mut self, chrome: &[LineChrome]) {
        let line_of = |l: u32| {
            chrome
                .get(l as usize)
                .copied()
                .unwrap_or(LineChrome::Content)
        };
        if self
            .units
            .iter()
            .all(|&(_, l)| line_of(l) == LineChrome::Chrome)
        {
            return;
        }
        let mut kept: Vec<(u64, u32)> = Vec::with_capacity(self.units.len());
        let mut i = 0;
        while i < self.units.len() {
            let line = self.units[i].1;
            let end = i + self.units[i..].iter().take_while(|u| u.1 == line).count();
            match line_of(line) {
                LineChrome::Chrome => {}
                LineChrome::Content => kept.extend_from_slice(&self.units[i..end]),
                LineChrome::NameSuffix { name_line } => {
                    let name: Vec<u64> = self
                        .units
                        .iter()
                        .filter(|u| u.1 == name_line)
                        .map(|u| u.0)
                        .collect();
                    let here = &self.units[i..end];
                    let tail_is_name = !name.is_empty()
                        && here.len() > name.len()
                        && here[here.len() - name.len()..]
                            .iter()
                            .map(|u| u.0)
                            .eq(name.iter().copied());
                    let keep = if tail_is_name {
                        here.len() - name.len()
                    } else {
                        here.len()
                    };
                    kept.extend_from_slice(&here[..keep]);
                }
            }
            i = end;
        }
        self.units = kept;
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
