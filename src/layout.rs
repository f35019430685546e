//! Block layouts: the keys a fingerprint is indexed under (the account is on [`BlockLayout`]).

use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use serde::{Deserialize, Serialize};
use std::ops::RangeInclusive;

/// Bits of a key reserved for the combination index.
const COMBO_BITS: u32 = 16;
/// Bits of a key left for the block bits.
const MAX_KEY_BITS: u32 = 64 - COMBO_BITS;

/// Maps a fingerprint to the keys it is indexed under.
///
/// The accessors ([`max_distance`](Self::max_distance), [`blocks`](Self::blocks), ...) are
/// free and never fail.
///
/// Block layouts: the keys a fingerprint is indexed under.
///
/// Pigeonhole (Manku, Jain and Das Sarma, WWW 2007): split the 64 bits into `b` blocks and use
/// every combination of `c` blocks as a key. Two fingerprints within Hamming distance `k` differ
/// in at most `k` blocks, so when `b - c >= k` at least `c` blocks agree and they share the key
/// made of those blocks. A lookup fetches the postings of the query's keys (candidates) and keeps
/// those within `k`.
///
/// | layout | keys per doc | key bits | k guaranteed | expected candidates per lookup at N docs |
/// |---|---|---|---|---|
/// | 4 x 16, single blocks (default) | 4 | 16 | <= 3 | 4 N / 2^16 (61 at 1M) |
/// | 5 x ~13, single blocks | 5 | 12-13 | <= 4 | ~5 N / 2^12.8 (~700 at 1M) |
/// | 8 x 8, pairs | 28 | 16 | <= 6 | 28 N / 2^16 (427 at 1M) |
/// | 6 x ~10.7, triples | 20 | 32 | <= 3 | 20 N / 2^32 (~0 at 1M; for 1B+) |
///
/// The candidates are for uniformly spread fingerprints; real ones have hot keys (boilerplate,
/// exact duplicates), which every consumer caps or groups.
///
/// A key is one `u64` term: the combination's index in the top 16 bits, then the combined
/// block bits. All keys of one combination therefore form one contiguous numeric range
/// ([`BlockLayout::key_range`]), which a range query or a term-dictionary scan can read; the
/// crate's batch jobs do not (they read the signature columns and compute the keys, see
/// [`NearDupGraph`](crate::NearDupGraph)).
///
/// A layout is its three numbers (a `Copy` value of 20 bytes): the blocks and combinations are
/// computed when used, so building one allocates nothing. Cost: the accessors are free; a
/// fingerprint's keys ([`keys_into`](Self::keys_into)) cost `num_keys()` combinations
/// stepped through in order, a shift and a mask per block; a key of one combination by its
/// index ([`key`](Self::key), [`key_range`](Self::key_range)) first finds its blocks, about
/// `blocks` steps. Nothing here does I/O.
///
/// ```
/// use tantivy_simhash::{BlockLayout, Fingerprint};
///
/// let layout = BlockLayout::default(); // 4 blocks of 16 bits, k <= 3
/// let a = Fingerprint(0x0123_4567_89ab_cdef);
/// let b = Fingerprint(a.0 ^ 0b111); // 3 bits flipped, all in block 0
/// assert!(layout.first_shared_key(a, b).is_some());
/// assert_eq!(layout.keys(a).len(), 4);
/// assert!(BlockLayout::new(4, 1, 4).is_err()); // 4 blocks cannot guarantee k = 4
/// # Ok::<(), tantivy_simhash::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "LayoutSpec", into = "LayoutSpec")]
pub struct BlockLayout {
    blocks: u32,
    blocks_per_key: u32,
    max_distance: u32,
    /// `binomial(blocks, blocks_per_key)`, checked to fit 16 bits of key at construction.
    num_keys: u32,
    /// The width of the narrow blocks (64 / `blocks`) and how many blocks are one bit wider
    /// (64 % `blocks`): kept so that a block's span costs no division.
    base_width: u8,
    wider_blocks: u8,
}

/// The serialised form: the three numbers that define a layout.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct LayoutSpec {
    blocks: u32,
    blocks_per_key: u32,
    max_distance: u32,
}

impl TryFrom<LayoutSpec> for BlockLayout {
    type Error = Error;
    fn try_from(s: LayoutSpec) -> Result<Self> {
        BlockLayout::new(s.blocks, s.blocks_per_key, s.max_distance)
    }
}

impl From<BlockLayout> for LayoutSpec {
    fn from(l: BlockLayout) -> Self {
        LayoutSpec {
            blocks: l.blocks,
            blocks_per_key: l.blocks_per_key,
            max_distance: l.max_distance,
        }
    }
}

impl Default for BlockLayout {
    /// 4 blocks of 16 bits, single blocks as keys: guarantees k <= 3.
    fn default() -> Self {
        BlockLayout::build(4, 1, 3)
    }
}

impl BlockLayout {
    /// `blocks` blocks of 64/`blocks` bits (the first 64 % `blocks` one bit wider), every
    /// combination of `blocks_per_key` blocks a key, guaranteeing every pair within
    /// `max_distance` shares a key.
    ///
    /// Errors ([`Error::InvalidConfig`], saying what to use instead) when the layout cannot
    /// guarantee `max_distance` (`blocks - blocks_per_key < max_distance`), or when a key
    /// would not fit (more than 48 key bits, more than 65,536 combinations). Cost: a few
    /// checks; nothing is allocated.
    pub fn new(blocks: u32, blocks_per_key: u32, max_distance: u32) -> Result<Self> {
        if blocks == 0 || blocks > 64 || blocks_per_key == 0 || blocks_per_key > blocks {
            return Err(Error::InvalidConfig(format!(
                "layout of {blocks} blocks with {blocks_per_key} per key; expected \
                 1 <= blocks_per_key <= blocks <= 64"
            )));
        }
        if blocks - blocks_per_key < max_distance {
            return Err(Error::InvalidConfig(format!(
                "{blocks} blocks with {blocks_per_key} per key guarantee distance <= {}, not {max_distance}; \
                 use at least {} blocks, or BlockLayout::for_distance({max_distance})",
                blocks - blocks_per_key,
                max_distance + blocks_per_key
            )));
        }
        let widest = (64 / blocks + u32::from(64 % blocks != 0)) * blocks_per_key;
        if widest > MAX_KEY_BITS {
            return Err(Error::InvalidConfig(format!(
                "keys of {blocks_per_key} blocks out of {blocks} need up to {widest} bits; at most \
                 {MAX_KEY_BITS} fit: use more blocks or fewer per key"
            )));
        }
        let n_combos = binomial(blocks, blocks_per_key);
        if n_combos > 1 << COMBO_BITS {
            return Err(Error::InvalidConfig(format!(
                "{n_combos} keys per fingerprint; at most {} are supported: use fewer blocks",
                1u64 << COMBO_BITS
            )));
        }
        Ok(BlockLayout::build(blocks, blocks_per_key, max_distance))
    }

    fn build(blocks: u32, blocks_per_key: u32, max_distance: u32) -> Self {
        BlockLayout {
            blocks,
            blocks_per_key,
            max_distance,
            num_keys: binomial(blocks, blocks_per_key) as u32,
            base_width: (64 / blocks) as u8,
            wider_blocks: (64 % blocks) as u8,
        }
    }

    /// (shift, width) of block `block`: `blocks` blocks of 64/`blocks` bits from bit 0 up, the
    /// first 64 % `blocks` of them one bit wider.
    #[inline]
    fn span(&self, block: u32) -> (u32, u32) {
        let base = u32::from(self.base_width);
        let extra = u32::from(self.wider_blocks);
        (
            block * base + block.min(extra),
            base + u32::from(block < extra),
        )
    }

    /// The blocks of every combination, in key order (combinations in lexicographic order of
    /// their ascending block lists), each as a mask with bit `b` set for block `b`.
    fn combos(&self) -> Combos {
        Combos::new(self.blocks, self.blocks_per_key)
    }

    /// The blocks of combination `combo` (below `num_keys()`) as a mask: the `combo`-th
    /// `blocks_per_key`-subset in lexicographic order, found by counting the subsets that
    /// start with each smaller block. Cost: at most `blocks` binomials of `blocks_per_key`
    /// terms.
    fn combo(&self, combo: usize) -> u64 {
        let (n, k) = (self.blocks, self.blocks_per_key);
        let mut rank = combo as u64;
        let mut mask = 0u64;
        let mut next = 0;
        for slot in 0..k {
            let left = k - slot - 1;
            for block in next..n {
                let with_block = binomial(n - block - 1, left);
                if rank < with_block {
                    mask |= 1 << block;
                    next = block + 1;
                    break;
                }
                rank -= with_block;
            }
        }
        mask
    }

    /// The key bits of the blocks in `combo` (a mask): their bits of `fp`, concatenated from
    /// the lowest block up.
    #[inline]
    fn combo_bits(&self, combo: u64, fp: Fingerprint) -> u64 {
        blocks_of(combo).fold(0u64, |bits, b| {
            let (shift, width) = self.span(b);
            (bits << width) | ((fp.0 >> shift) & mask(width))
        })
    }

    /// The layout this crate recommends for `max_distance`: 4 x 16 singles for k <= 3, 5 single
    /// blocks for k = 4, pairs of k + 2 blocks for k = 5..=6, triples of k + 3 blocks for
    /// k = 7..=9. Larger k is rejected ([`Error::InvalidConfig`]): at 64 bits it matches
    /// unrelated texts (docs/QUALITY.md). Cost: as [`new`](Self::new).
    pub fn for_distance(max_distance: u32) -> Result<Self> {
        match max_distance {
            0..=3 => BlockLayout::new(4, 1, max_distance),
            4 => BlockLayout::new(5, 1, 4),
            5..=6 => BlockLayout::new(max_distance + 2, 2, max_distance),
            7..=9 => BlockLayout::new(max_distance + 3, 3, max_distance),
            _ => Err(Error::InvalidConfig(format!(
                "no layout for distance {max_distance}; expected 0..=9 (beyond that 64-bit \
                 fingerprints of unrelated texts match, see docs/QUALITY.md)"
            ))),
        }
    }

    /// The largest distance this layout guarantees to find.
    pub fn max_distance(&self) -> u32 {
        self.max_distance
    }

    /// The number of blocks.
    pub fn blocks(&self) -> u32 {
        self.blocks
    }

    /// Blocks per key.
    pub fn blocks_per_key(&self) -> u32 {
        self.blocks_per_key
    }

    /// Keys per fingerprint.
    pub fn num_keys(&self) -> usize {
        self.num_keys as usize
    }

    /// A stable identifier, recorded by indexes, e.g. `blocks=4;per_key=1;k=3`.
    pub fn id(&self) -> String {
        format!(
            "blocks={};per_key={};k={}",
            self.blocks, self.blocks_per_key, self.max_distance
        )
    }

    /// The key of combination `combo` (0..num_keys) for `fp`. Cost: a shift and mask per block
    /// of the combination. Errors: [`Error::Setting`] when `combo >= num_keys()`.
    ///
    /// ```
    /// # use tantivy_simhash::{BlockLayout, Fingerprint};
    /// let layout = BlockLayout::default();
    /// let fp = Fingerprint(0x0123_4567_89ab_cdef);
    /// assert_eq!(layout.key(0, fp)?, layout.keys(fp)[0]);
    /// assert!(layout.key(layout.num_keys(), fp).is_err());
    /// # Ok::<(), tantivy_simhash::Error>(())
    /// ```
    pub fn key(&self, combo: usize, fp: Fingerprint) -> Result<u64> {
        self.check_combo(combo)?;
        Ok(self.combo_key(combo, fp))
    }

    /// `Err` naming the valid range when `combo` is not a combination of this layout.
    fn check_combo(&self, combo: usize) -> Result<()> {
        if combo < self.num_keys() {
            return Ok(());
        }
        Err(Error::Setting(format!(
            "key combination {combo} of layout `{}`: expected 0 to {} (the layout has {} keys, \
             BlockLayout::num_keys)",
            self.id(),
            self.num_keys() - 1,
            self.num_keys()
        )))
    }

    /// [`key`](Self::key) for a `combo` the caller knows is below `num_keys()` (a loop over
    /// the combinations, a position of [`keys`](Self::keys)).
    pub(crate) fn combo_key(&self, combo: usize, fp: Fingerprint) -> u64 {
        ((combo as u64) << MAX_KEY_BITS) | self.combo_bits(self.combo(combo), fp)
    }

    /// All keys of `fp`, in combination order. Cost: one allocation of `num_keys()` keys;
    /// [`keys_into`](Self::keys_into) reuses a buffer.
    pub fn keys(&self, fp: Fingerprint) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.num_keys());
        self.keys_into(fp, &mut out);
        out
    }

    /// Appends the keys of `fp` to `out` (`num_keys()` of them). Never fails.
    pub fn keys_into(&self, fp: Fingerprint, out: &mut Vec<u64>) {
        out.extend(
            self.combos()
                .enumerate()
                .map(|(c, combo)| ((c as u64) << MAX_KEY_BITS) | self.combo_bits(combo, fp)),
        );
    }

    /// The numeric range that holds every key of combination `combo`. Cost: a sum over the
    /// combination's blocks. Errors: [`Error::Setting`] when `combo >= num_keys()`.
    pub fn key_range(&self, combo: usize) -> Result<RangeInclusive<u64>> {
        self.check_combo(combo)?;
        Ok(self.combo_key_range(combo))
    }

    /// [`key_range`](Self::key_range) for a `combo` the caller knows is below `num_keys()`.
    pub(crate) fn combo_key_range(&self, combo: usize) -> RangeInclusive<u64> {
        let width: u32 = blocks_of(self.combo(combo)).map(|b| self.span(b).1).sum();
        let lo = (combo as u64) << MAX_KEY_BITS;
        lo..=lo | mask(width)
    }

    /// The bits of `fp` outside combination `combo`'s blocks, moved down to bit 0 in their
    /// order (64 minus the key's width of them). The key tables keep some of them beside each
    /// document: the bits two fingerprints differ in there are a lower bound of their
    /// distance, so a candidate farther than a lookup's distance on them is dropped without
    /// reading its row. Cost: a shift and a mask per block, after finding the combination's
    /// blocks; [`rests_into`](Self::rests_into) gives every combination's in one pass.
    #[cfg(test)]
    pub(crate) fn combo_rest(&self, combo: usize, fp: Fingerprint) -> u64 {
        self.rest_of(self.combo(combo), fp)
    }

    /// The rest of every combination (the bits of `fp` outside its blocks, moved down to bit 0
    /// in their order: see `combo_rest`), in order, appended to `out`. Cost: as
    /// [`keys_into`](Self::keys_into).
    pub(crate) fn rests_into(&self, fp: Fingerprint, out: &mut Vec<u64>) {
        out.extend(self.combos().map(|combo| self.rest_of(combo, fp)));
    }

    /// The bits of `fp` outside the blocks of `combo` (a mask), moved down in their order.
    fn rest_of(&self, combo: u64, fp: Fingerprint) -> u64 {
        // Blocks ascend by shift: removing them from the highest down keeps the lower ones'
        // shifts valid.
        let mut bits = fp.0;
        let mut left = combo;
        while left != 0 {
            let b = 63 - left.leading_zeros();
            left &= !(1u64 << b);
            let (shift, width) = self.span(b);
            let above = bits.checked_shr(shift + width).unwrap_or(0);
            bits = (bits & mask(shift)) | above.checked_shl(shift).unwrap_or(0);
        }
        bits
    }

    /// The combination index a key belongs to (free; a key of another layout gives a
    /// meaningless index, possibly `>= num_keys()`).
    pub fn combo_of_key(&self, key: u64) -> usize {
        (key >> MAX_KEY_BITS) as usize
    }

    /// The first combination under which `a` and `b` share a key, if any. Batch jobs report a
    /// pair only under this key, so no global set of seen pairs is needed. Cost: at most
    /// `num_keys()` mask tests on the XOR of the two.
    pub fn first_shared_key(&self, a: Fingerprint, b: Fingerprint) -> Option<usize> {
        let diff = a.0 ^ b.0;
        // The blocks of `diff` with a differing bit; a combination of none of them is shared.
        let differing = (0..self.blocks).fold(0u64, |m, blk| {
            let (shift, width) = self.span(blk);
            m | (u64::from((diff >> shift) & mask(width) != 0) << blk)
        });
        self.combos().position(|combo| combo & differing == 0)
    }

    /// Expected candidates per lookup among `docs` uniformly random fingerprints (documents that
    /// share at least one key with the query, counted once per shared key). Cost: one pass
    /// over the combinations.
    pub fn expected_candidates(&self, docs: u64) -> f64 {
        self.combos()
            .map(|combo| {
                let bits: u32 = blocks_of(combo).map(|b| self.span(b).1).sum();
                docs as f64 / 2f64.powi(bits as i32)
            })
            .sum()
    }
}

fn mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

fn binomial(n: u32, k: u32) -> u64 {
    let k = k.min(n - k) as u64;
    let mut r = 1u64;
    for i in 0..k {
        r = r.saturating_mul(n as u64 - i) / (i + 1);
    }
    r
}

/// The blocks of a combination mask, lowest first.
#[inline]
fn blocks_of(combo: u64) -> impl Iterator<Item = u32> {
    let mut left = combo;
    std::iter::from_fn(move || {
        (left != 0).then(|| {
            let b = left.trailing_zeros();
            left &= left - 1;
            b
        })
    })
}

/// The `k`-subsets of `0..n` in lexicographic order of their ascending lists, as masks (bit
/// `b` for block `b`): `[0, 1], [0, 2], ..., [1, 2], ...`. The order is the keys' (a key
/// holds its combination's index), so it is part of the on-disk format.
struct Combos {
    n: u32,
    k: usize,
    /// The current subset, ascending, in the first `k` slots.
    current: [u8; 64],
    started: bool,
    done: bool,
}

impl Combos {
    fn new(n: u32, k: u32) -> Combos {
        Combos {
            n,
            k: k as usize,
            current: [0; 64],
            started: false,
            done: k == 0 || k > n,
        }
    }
}

impl Iterator for Combos {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        if self.done {
            return None;
        }
        let k = self.k;
        if !self.started {
            self.started = true;
            for (i, slot) in self.current[..k].iter_mut().enumerate() {
                *slot = i as u8;
            }
        } else {
            // The last slot that can still move right moves one block; the slots after it
            // follow it in a row.
            let n = self.n as usize;
            let Some(i) = (0..k)
                .rev()
                .find(|&i| (self.current[i] as usize) < n - k + i)
            else {
                self.done = true;
                return None;
            };
            self.current[i] += 1;
            for j in i + 1..k {
                self.current[j] = self.current[j - 1] + 1;
            }
        }
        Some(self.current[..k].iter().fold(0u64, |m, &b| m | (1 << b)))
    }
}

/// Fails when `max_distance` exceeds `layout_k`, the largest distance the keys guarantee to
/// find: a lookup there could miss matches. The one check behind every distance a caller asks
/// for (lookups, queries, the writer, the all-pairs join).
pub(crate) fn check_distance(layout_k: u32, max_distance: u32) -> Result<()> {
    if max_distance > layout_k {
        return Err(Error::InvalidConfig(format!(
            "distance {max_distance} is beyond what the index layout guarantees to find \
             ({layout_k}); ask for at most {layout_k}, or rebuild the index with \
             BlockLayout::for_distance({max_distance})"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn flip(fp: u64, positions: &[u32]) -> u64 {
        positions.iter().fold(fp, |x, &p| x ^ (1u64 << p))
    }

    /// A seed fingerprint and a neighbour with `d` distinct bits flipped, d in 0..=k+1.
    fn neighbour(k: u32) -> impl Strategy<Value = (u64, u64, u32)> {
        (any::<u64>(), 0..=k + 1)
            .prop_flat_map(|(fp, d)| {
                (
                    Just(fp),
                    proptest::sample::subsequence((0u32..64).collect::<Vec<_>>(), d as usize),
                )
            })
            .prop_map(|(fp, pos)| (fp, flip(fp, &pos), pos.len() as u32))
    }

    fn layouts() -> Vec<BlockLayout> {
        let mut v: Vec<BlockLayout> = (0..=9)
            .map(|k| BlockLayout::for_distance(k).unwrap())
            .collect();
        v.push(BlockLayout::new(6, 3, 3).unwrap());
        v.push(BlockLayout::new(7, 2, 5).unwrap());
        v
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn neighbours_within_k_share_a_key((a, b, d) in neighbour(9)) {
            let (fa, fb) = (Fingerprint(a), Fingerprint(b));
            prop_assert_eq!(fa.distance(fb), d);
            for layout in layouts() {
                let shared_by_keys = layout.keys(fa).iter().zip(layout.keys(fb)).any(|(x, y)| *x == y);
                prop_assert_eq!(shared_by_keys, layout.first_shared_key(fa, fb).is_some());
                if d <= layout.max_distance() {
                    prop_assert!(shared_by_keys, "layout {} d {}", layout.id(), d);
                }
            }
        }

        #[test]
        fn the_rest_of_a_key_bounds_the_distance((a, b, _) in neighbour(9), c in any::<u64>()) {
            for layout in layouts() {
                for combo in 0..layout.num_keys() {
                    let width = (layout.combo_key_range(combo).end() & mask(MAX_KEY_BITS)).count_ones();
                    for (x, y) in [(a, b), (a, c)] {
                        let (fx, fy) = (Fingerprint(x), Fingerprint(y));
                        let rest = layout.combo_rest(combo, fx) ^ layout.combo_rest(combo, fy);
                        // 64 - width bits, no more.
                        prop_assert_eq!(rest >> (64 - width), 0);
                        // The key's bits and the rest's are the fingerprint's, each once.
                        let key = layout.combo_key(combo, fx) ^ layout.combo_key(combo, fy);
                        prop_assert_eq!(rest.count_ones() + (key & mask(MAX_KEY_BITS)).count_ones(), fx.distance(fy));
                    }
                }
            }
        }

        #[test]
        fn keys_lie_in_their_ranges(a in any::<u64>()) {
            for layout in layouts() {
                for (c, key) in layout.keys(Fingerprint(a)).into_iter().enumerate() {
                    prop_assert!(layout.key_range(c).unwrap().contains(&key));
                    prop_assert_eq!(layout.key(c, Fingerprint(a)).unwrap(), key);
                    prop_assert_eq!(layout.combo_of_key(key), c);
                }
            }
        }
    }

    /// The combinations of the old layout (a table built by recursion), whose order the keys
    /// on disk follow.
    fn combinations(n: u32, k: u32, start: u32, current: &mut Vec<u32>, out: &mut Vec<Vec<u32>>) {
        if current.len() == k as usize {
            out.push(current.clone());
            return;
        }
        for i in start..n {
            current.push(i);
            combinations(n, k, i + 1, current, out);
            current.pop();
        }
    }

    /// The combinations stepped through and found by index are the recursion's table, in its
    /// order, and the spans tile the 64 bits as the old table did; so keys (which hold the
    /// combination's index) are the ones indexes already hold.
    #[test]
    fn combinations_and_spans_are_the_tables_of_the_old_layout() {
        let mut all = layouts();
        all.extend(
            [(1, 1), (3, 2), (16, 4), (20, 2), (64, 2), (13, 13)]
                .map(|(b, k)| BlockLayout::build(b, k, b - k)),
        );
        for layout in all {
            let mut table = Vec::new();
            combinations(
                layout.blocks,
                layout.blocks_per_key,
                0,
                &mut Vec::new(),
                &mut table,
            );
            let masks: Vec<u64> = table
                .iter()
                .map(|c| c.iter().fold(0u64, |m, &b| m | (1 << b)))
                .collect();
            assert_eq!(
                layout.combos().collect::<Vec<_>>(),
                masks,
                "{}",
                layout.id()
            );
            assert_eq!(layout.num_keys(), masks.len());
            for (i, &m) in masks.iter().enumerate() {
                assert_eq!(layout.combo(i), m, "{} combination {i}", layout.id());
            }
            let mut shift = 0;
            for b in 0..layout.blocks {
                let width = 64 / layout.blocks + u32::from(b < 64 % layout.blocks);
                assert_eq!(layout.span(b), (shift, width));
                shift += width;
            }
            assert_eq!(shift, 64);
        }
    }

    #[test]
    fn the_default_layouts_keys_are_its_four_16_bit_blocks() {
        let layout = BlockLayout::default();
        let fp = Fingerprint(0x0123_4567_89ab_cdef);
        let keys = layout.keys(fp);
        assert_eq!(
            keys,
            [
                0xcdef,
                (1 << 48) | 0x89ab,
                (2 << 48) | 0x4567,
                (3 << 48) | 0x0123
            ]
        );
        let mut rests = Vec::new();
        layout.rests_into(fp, &mut rests);
        assert_eq!(rests[0], 0x0123_4567_89ab);
        assert_eq!(rests[3], 0x4567_89ab_cdef);
        assert_eq!(std::mem::size_of::<BlockLayout>(), 20);
    }

    #[test]
    fn adversarial_spread_flips_are_found() {
        // k flips, one per block, in every block position: the worst case for pigeonhole.
        for layout in layouts() {
            let k = layout.max_distance();
            for seed in [0u64, u64::MAX, 0x0123_4567_89ab_cdef] {
                for first in 0..layout.blocks() {
                    let pos: Vec<u32> = (0..k)
                        .map(|i| {
                            let (shift, width) = layout.span((first + i) % layout.blocks());
                            shift + width - 1
                        })
                        .collect();
                    let b = flip(seed, &pos);
                    assert_eq!(Fingerprint(seed).distance(Fingerprint(b)), k);
                    assert!(layout
                        .first_shared_key(Fingerprint(seed), Fingerprint(b))
                        .is_some());
                }
            }
        }
    }

    #[test]
    fn one_flip_per_block_escapes_single_block_layouts() {
        // k + 1 flips spread one per block defeat a layout of k + 1 single blocks: k + 1 is
        // not guaranteed (and the default layout does not find it).
        let layout = BlockLayout::default();
        let b = flip(0, &[0, 16, 32, 48]);
        assert_eq!(Fingerprint(0).distance(Fingerprint(b)), 4);
        assert!(layout
            .first_shared_key(Fingerprint(0), Fingerprint(b))
            .is_none());
    }

    #[test]
    fn constructor_rejects_what_it_cannot_guarantee() {
        assert!(BlockLayout::new(4, 1, 4).is_err());
        assert!(BlockLayout::new(8, 2, 7).is_err());
        assert!(BlockLayout::new(0, 1, 0).is_err());
        assert!(BlockLayout::new(4, 5, 0).is_err());
        assert!(BlockLayout::new(1, 1, 0).is_err()); // 64-bit key does not fit
        assert!(BlockLayout::new(64, 32, 4).is_err()); // too many combinations
        assert!(BlockLayout::for_distance(10).is_err());
        let l = BlockLayout::new(8, 2, 6).unwrap();
        assert_eq!(l.num_keys(), 28);
        assert_eq!(BlockLayout::default().num_keys(), 4);
    }

    #[test]
    fn a_combination_index_past_the_layout_is_an_error() {
        for layout in layouts() {
            let n = layout.num_keys();
            let fp = Fingerprint(0x0123_4567_89ab_cdef);
            for combo in [n, n + 1, usize::MAX] {
                for err in [layout.key(combo, fp).err(), layout.key_range(combo).err()] {
                    let message = err.map(|e| e.to_string()).unwrap_or_default();
                    assert!(
                        message.contains(&format!("key combination {combo}"))
                            && message.contains(&format!("expected 0 to {}", n - 1)),
                        "{}: {message}",
                        layout.id()
                    );
                }
            }
            assert_eq!(layout.key(n - 1, fp).unwrap(), layout.keys(fp)[n - 1]);
        }
    }

    #[test]
    fn expected_candidates_match_the_table() {
        let c = BlockLayout::default().expected_candidates(1_000_000);
        assert!((c - 61.03).abs() < 0.01, "{c}");
        let c = BlockLayout::for_distance(6)
            .unwrap()
            .expected_candidates(1_000_000);
        assert!((c - 427.2).abs() < 0.1, "{c}");
    }

    #[test]
    fn serde_round_trip_and_validation() {
        let l = BlockLayout::for_distance(6).unwrap();
        let json = serde_json::to_string(&l).unwrap();
        assert_eq!(serde_json::from_str::<BlockLayout>(&json).unwrap(), l);
        assert!(serde_json::from_str::<BlockLayout>(
            r#"{"blocks":4,"blocks_per_key":1,"max_distance":5}"#
        )
        .is_err());
    }
}
