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

/// How a document's shingles are chosen (see [`MatchRule`](crate::MatchRule) for how they are
/// used).
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
    /// site suffix, short lines that repeat the site name; [`MatchRule`](crate::MatchRule)):
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

/// Multipliers of the positions of a shingle (the 9th unit reuses the first).
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

#[inline]
fn finish(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Order-aware combination of unit hashes: each position rotates and multiplies by its own odd
/// constant, then splitmix64's finaliser mixes (cheaper than hashing the bytes again).
#[inline]
fn shingle_hash(units: &[u64]) -> u64 {
    let mut x = units.len() as u64;
    for (i, h) in units.iter().enumerate() {
        x ^= h.rotate_left(17 * i as u32).wrapping_mul(ODD[i % 8]);
    }
    finish(x)
}

/// [`shingle_hash`] of every window of `N` units, in order (the same values; the width known at
/// compile time lets the position constants fold).
#[inline]
fn windows_of<const N: usize>(units: &[u64], emit: &mut impl FnMut(u64)) {
    for w in units.windows(N) {
        let mut x = N as u64;
        for i in 0..N {
            x ^= w[i].rotate_left(17 * i as u32).wrapping_mul(ODD[i % 8]);
        }
        emit(finish(x));
    }
}

/// Collects units from a token stream and turns them into shingle hashes. Reusable.
///
/// A token that is not Han is one unit, its hash: the analysis pass keeps those hashes
/// anyway (`token_hashes`, the fingerprint's words), so while every token is such a unit and
/// lines do not matter (most documents), the collector only counts them and reads the
/// analysis's hashes instead of keeping a copy.
#[derive(Default, Debug)]
pub(crate) struct ShingleCollector {
    /// While true, every unit so far is the hash of a token (`shared` of them), not copied.
    sharing: bool,
    /// The units at the front that are the analysis's first token hashes.
    shared: usize,
    /// The hash of each unit (after the `shared` ones).
    units: Vec<u64>,
    /// The line of each unit (only when chrome is skipped: `lines` was set by `clear`).
    unit_lines: Vec<u32>,
    /// Tokens per line (likewise).
    line_words: Vec<u32>,
    lines: bool,
    /// The units and lines that `drop_chrome` keeps, swapped with `units` and `unit_lines`
    /// (reused: a writer signs many documents with chrome).
    kept_units: Vec<u64>,
    kept_lines: Vec<u32>,
}

impl ShingleCollector {
    /// Starts a document; `lines`: whether tokens' lines matter (chrome detection).
    pub(crate) fn clear(&mut self, lines: bool) {
        self.units.clear();
        self.unit_lines.clear();
        self.line_words.clear();
        self.lines = lines;
        self.sharing = !lines;
        self.shared = 0;
    }

    /// One token of the scheme's analysis with its seeded hash, on 0-based line `line`
    /// (non-decreasing; ignored unless `clear` was told lines matter). `span` is the token's
    /// own text in the signed text when the analysis gives offsets into it: a Han token can run
    /// across a line break (Han runs join across whitespace), and each of its characters is then
    /// a unit of its own line, so that removing a chrome line never takes a character of the
    /// next line with it.
    #[inline]
    pub(crate) fn token(&mut self, token: &str, hash: u64, line: u32, span: Option<&str>) {
        let before = self.units.len();
        // Han characters (U+3400 and above) start with a UTF-8 byte >= 0xE3: a token starting
        // below is not Han (ASCII words, the common case, skip decoding a char).
        let han = token.as_bytes().first().is_some_and(|&b| b >= 0xe3)
            && token.chars().next().is_some_and(is_han);
        if self.sharing && !han {
            self.shared += 1;
            return;
        }
        self.sharing = false;
        if han {
            let mut buf = [0u8; 4];
            for c in token.chars() {
                let unit = xxh3_64_with_seed(c.encode_utf8(&mut buf).as_bytes(), UNIT_SEED);
                self.units.push(unit);
            }
        } else {
            self.units.push(hash);
        }
        if self.lines {
            let l = line as usize;
            if self.line_words.len() <= l {
                self.line_words.resize(l + 1, 0);
            }
            self.line_words[l] += 1;
            let added = self.units.len() - before;
            match span.filter(|s| han && s.contains('\n')) {
                Some(span) => {
                    let mut at = line;
                    let mut char_lines = span.chars().filter_map(|c| {
                        if c == '\n' {
                            at = at.saturating_add(1);
                        }
                        (!c.is_whitespace()).then_some(at)
                    });
                    for _ in 0..added {
                        let unit_line = char_lines.next().unwrap_or(line);
                        self.unit_lines.push(unit_line);
                    }
                    let last = self.unit_lines.last().map_or(l, |&u| u as usize);
                    if self.line_words.len() <= last {
                        self.line_words.resize(last + 1, 0);
                    }
                }
                None => self.unit_lines.extend(std::iter::repeat_n(line, added)),
            }
        }
    }

    /// Ends the document's units: `token_hashes` are the hashes the analysis pass gave this
    /// collector's tokens, in order. Call once, before [`Self::drop_chrome`] and
    /// [`Self::for_each_shingle`].
    pub(crate) fn complete(&mut self, token_hashes: &[u64]) {
        if !self.sharing && self.shared > 0 {
            // A Han token came after `shared` plain ones: they go in front of the rest.
            let shared = token_hashes.get(..self.shared).unwrap_or(token_hashes);
            self.units.splice(0..0, shared.iter().copied());
            self.shared = 0;
        }
    }

    /// The document's units, given the analysis's `token_hashes` ([`Self::complete`]).
    fn units<'a>(&'a self, token_hashes: &'a [u64]) -> &'a [u64] {
        if self.sharing {
            token_hashes.get(..self.shared).unwrap_or(token_hashes)
        } else {
            &self.units
        }
    }

    /// Removes the units of chrome lines and of site-name suffixes (`chrome`, per line, from
    /// [`chrome_lines`](super::chrome::chrome_lines)), unless nothing would remain. Needs the
    /// units' lines (`clear(true)`).
    pub(crate) fn drop_chrome(&mut self, chrome: &[LineChrome]) {
        if !self.lines || self.unit_lines.len() != self.units.len() {
            return;
        }
        let line_of = |l: u32| {
            chrome
                .get(l as usize)
                .copied()
                .unwrap_or(LineChrome::Content)
        };
        if self
            .unit_lines
            .iter()
            .all(|&l| line_of(l) == LineChrome::Chrome)
        {
            return;
        }
        let (units, lines) = (&mut self.kept_units, &mut self.kept_lines);
        units.clear();
        lines.clear();
        let mut i = 0;
        while i < self.units.len() {
            let line = self.unit_lines[i];
            let end = i + self.unit_lines[i..]
                .iter()
                .take_while(|&&l| l == line)
                .count();
            let keep = match line_of(line) {
                LineChrome::Chrome => 0,
                LineChrome::Content => end - i,
                LineChrome::NameSuffix { name_line } => {
                    let name: Vec<u64> = (0..self.units.len())
                        .filter(|&u| self.unit_lines[u] == name_line)
                        .map(|u| self.units[u])
                        .collect();
                    let here = &self.units[i..end];
                    let tail_is_name = !name.is_empty()
                        && here.len() > name.len()
                        && here[here.len() - name.len()..] == name[..];
                    if tail_is_name {
                        here.len() - name.len()
                    } else {
                        here.len()
                    }
                }
            };
            units.extend_from_slice(&self.units[i..i + keep]);
            lines.extend_from_slice(&self.unit_lines[i..i + keep]);
            i = end;
        }
        std::mem::swap(&mut self.units, &mut self.kept_units);
        std::mem::swap(&mut self.unit_lines, &mut self.kept_lines);
    }

    /// Calls `emit` with each shingle hash (with repeats) chosen by `shingling`.
    /// `token_hashes` as given to [`Self::complete`].
    pub(crate) fn for_each_shingle(
        &self,
        shingling: &Shingling,
        token_hashes: &[u64],
        mut emit: impl FnMut(u64),
    ) {
        let width = usize::from(shingling.width.max(1));
        let n = width.min(8);
        let units = self.units(token_hashes);
        if units.is_empty() {
            return;
        }
        if units.len() < n {
            emit(shingle_hash(units));
            return;
        }
        let min_words = shingling.min_line_words;
        if min_words == 0 || !self.lines {
            all_windows(units, n, &mut emit);
            return;
        }
        let is_content =
            |start: usize| self.line_words[self.unit_lines[start] as usize] >= min_words;
        let all = (self.units.len() - n + 1) as u64;
        let content = (0..all as usize).filter(|&s| is_content(s)).count() as u64;
        let judged_whole = content < all
            && (content < u64::from(shingling.min_content_shingles)
                || content * 100 < all * u64::from(shingling.min_content_percent));
        if judged_whole {
            all_windows(units, n, &mut emit);
        } else {
            for (start, w) in units.windows(n).enumerate() {
                if is_content(start) {
                    emit(shingle_hash(w));
                }
            }
        }
    }
}

/// [`shingle_hash`] of every window of `n` units, in order.
fn all_windows(units: &[u64], n: usize, emit: &mut impl FnMut(u64)) {
    match n {
        3 => windows_of::<3>(units, emit),
        2 => windows_of::<2>(units, emit),
        4 => windows_of::<4>(units, emit),
        _ => {
            for w in units.windows(n) {
                emit(shingle_hash(w));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The definition: a unit per token, or per character of a Han token; every window of
    /// `width` units (all of them when fewer).
    fn reference(tokens: &[(&str, u64)], width: usize) -> Vec<u64> {
        let mut units = Vec::new();
        for &(t, hash) in tokens {
            if t.chars().next().is_some_and(is_han) {
                for c in t.chars() {
                    let mut buf = [0u8; 4];
                    units.push(xxh3_64_with_seed(
                        c.encode_utf8(&mut buf).as_bytes(),
                        UNIT_SEED,
                    ));
                }
            } else {
                units.push(hash);
            }
        }
        if units.is_empty() {
            return Vec::new();
        }
        if units.len() < width {
            return vec![shingle_hash(&units)];
        }
        units.windows(width).map(shingle_hash).collect()
    }

    const WORDS: [&str; 6] = ["a", "bb", "数据", "知", "é", "42"];

    proptest! {
        /// Units shared with the analysis's token hashes (no Han token, lines unused), copied
        /// (Han tokens anywhere, lines counted) or both (plain tokens before the first Han
        /// one) give the shingles of the definition, document after document.
        #[test]
        fn shingles_are_the_windows_of_the_units(
            docs in proptest::collection::vec(
                (proptest::collection::vec(0..WORDS.len(), 0..40), any::<bool>()),
                1..5,
            ),
            width in 1u8..6,
        ) {
            let shingling = Shingling { width, chrome: false, ..Shingling::default() };
            let mut collector = ShingleCollector::default();
            for (picks, lines) in docs {
                let tokens: Vec<(&str, u64)> = picks
                    .iter()
                    .map(|&i| (WORDS[i], xxh3_64_with_seed(WORDS[i].as_bytes(), 9)))
                    .collect();
                collector.clear(lines);
                for (i, &(t, hash)) in tokens.iter().enumerate() {
                    collector.token(t, hash, (i / 7) as u32, None);
                }
                let hashes: Vec<u64> = tokens.iter().map(|&(_, h)| h).collect();
                collector.complete(&hashes);
                let mut got = Vec::new();
                collector.for_each_shingle(&shingling, &hashes, |s| got.push(s));
                prop_assert_eq!(got, reference(&tokens, usize::from(width)));
            }
        }
    }
}
