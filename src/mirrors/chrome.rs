//! Chrome removal: which lines of a host's pages occur on many of its pages.

use crate::fingerprint::{is_han, IdentityHasher};
use crate::signature::Signature;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use tantivy::tokenizer::TokenStream;
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// On how many pages of one host each line and each 3-shingle occurs: what makes a line chrome.
pub(super) struct ChromeCounts {
    /// Chrome removal is on (`chrome_min_pages >= 2`).
    pub(super) strip: bool,
    pub(super) min_pages: u32,
    pub(super) line_pages: HashedCounts,
    pub(super) shingle_pages: HashedCounts,
}

/// Counts by a key that is already an xxh3 hash: no second hashing (SipHash over these maps
/// was a third of the mirror finder's time on natural-en).
pub(super) type HashedCounts = HashMap<u64, u32, BuildHasherDefault<IdentityHasher>>;

impl ChromeCounts {
    pub(super) fn count(lines: &[Vec<Line>], min_pages: u32) -> ChromeCounts {
        let mut line_pages = HashedCounts::default();
        let mut shingle_pages = HashedCounts::default();
        let strip = min_pages >= 2;
        if strip {
            let mut seen_lines = Vec::new();
            let mut seen_shingles = Vec::new();
            for page in lines {
                seen_lines.clear();
                seen_shingles.clear();
                for l in page.iter().filter(|l| l.tokens > 0) {
                    seen_lines.push(l.key);
                    seen_shingles.extend_from_slice(&l.shingles);
                }
                for (seen, counts) in [
                    (&mut seen_lines, &mut line_pages),
                    (&mut seen_shingles, &mut shingle_pages),
                ] {
                    seen.sort_unstable();
                    seen.dedup();
                    for &k in seen.iter() {
                        *counts.entry(k).or_insert(0) += 1;
                    }
                }
            }
        }
        ChromeCounts {
            strip,
            min_pages,
            line_pages,
            shingle_pages,
        }
    }

    /// The line occurs on `min_pages` pages, or most of its 3-shingles do.
    pub(super) fn is_chrome(&self, l: &Line) -> bool {
        let min = self.min_pages;
        self.strip
            && (self.line_pages.get(&l.key).copied().unwrap_or(0) >= min || {
                let repeated = l
                    .shingles
                    .iter()
                    .filter(|s| self.shingle_pages.get(s).copied().unwrap_or(0) >= min)
                    .count();
                !l.shingles.is_empty() && 2 * repeated >= l.shingles.len()
            })
    }
}

/// One page after chrome removal.
pub(super) struct PageContent {
    /// The content's signature; `None` below `min_content_tokens`.
    pub(super) signature: Option<Signature>,
    pub(super) han_share: f64,
    pub(super) tokens: u64,
    pub(super) chrome_tokens: u64,
}

/// What chrome removal needs to know about one line.
pub(super) struct Line {
    pub(super) tokens: u32,
    /// Tokens that start with a Han character.
    pub(super) han_tokens: u32,
    /// The hash of the line's token sequence, numbers masked.
    pub(super) key: u64,
    /// Hashes of its word 3-shingles, numbers masked.
    pub(super) shingles: Vec<u64>,
}

impl Line {
    pub(super) fn analyze(
        analyzer: &mut tantivy::tokenizer::TextAnalyzer,
        line: &str,
        seed: u64,
    ) -> Line {
        const NUMBER: u64 = 0x4e55_4d42_4552_2323;
        let mut hashes: Vec<u64> = Vec::new();
        let mut han_tokens = 0;
        let mut stream = analyzer.token_stream(line);
        while stream.advance() {
            let t = &stream.token().text;
            if t.chars().next().is_some_and(is_han) {
                han_tokens += 1;
            }
            let h = if t.chars().all(|c| c.is_numeric()) {
                NUMBER
            } else {
                xxh3_64_with_seed(t.as_bytes(), seed)
            };
            hashes.push(h);
        }
        let bytes: Vec<u8> = hashes.iter().flat_map(|h| h.to_le_bytes()).collect();
        let shingles = hashes
            .windows(3)
            .map(|w| w[0].rotate_left(1) ^ w[1].rotate_left(17) ^ w[2].rotate_left(33))
            .map(|x| xxh3_64_with_seed(&x.to_le_bytes(), seed))
            .collect();
        Line {
            tokens: hashes.len() as u32,
            han_tokens,
            key: xxh3_64_with_seed(&bytes, seed ^ 1),
            shingles,
        }
    }
}

#[derive(Default)]
pub(super) struct HostContent {
    pub(super) fingerprints: Vec<Option<Signature>>,
    pub(super) han_shares: Vec<f64>,
    pub(super) tokens: u64,
    pub(super) chrome_tokens: u64,
}
