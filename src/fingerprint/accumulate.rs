//! Feature counting and the 64 simhash counters, the inner loop of fingerprinting.
//!
//! Both are exact integer arithmetic, so the fingerprint does not depend on the order in which
//! features are counted or added (the tests compare against a plain per-bit reference).

use super::{TermWeight, WEIGHT_SCALE};
use std::hint::{black_box, select_unpredictable};

/// How many times each feature hash occurs in one document: open addressing with linear
/// probing, keyed by the hash itself (feature keys are xxh3 outputs, already uniform). A slot
/// is occupied when its stamp equals the current generation, so clearing is O(1).
///
/// A document uses only a prefix of the slots sized for it (`active`): after one long document
/// has grown the table, a short one still probes a few cache-resident kilobytes rather than
/// scattering over the whole table (a writer signs documents of every length with one table).
#[derive(Debug, Default, Clone)]
pub(crate) struct FeatureCounts {
    slots: Vec<Slot>,
    /// Occupied slots, in first-seen order: the first `len` entries (the vector is as long as
    /// the most a table of `active` slots holds, so [`add`](Self::add) writes an entry for
    /// every feature and only counts the new ones, without a branch).
    occupied: Vec<u32>,
    len: usize,
    generation: u32,
    /// Slots this document uses: a power of two, at most `slots.len()`.
    active: usize,
    /// `64 - log2(active)`: the slot of `h` is `h >> shift`.
    shift: u32,
}

#[derive(Debug, Default, Clone, Copy)]
struct Slot {
    key: u64,
    count: u32,
    stamp: u32,
}

impl FeatureCounts {
    /// Empties the table, sized for up to `expected` distinct features without growing.
    pub(crate) fn clear(&mut self, expected: usize) {
        self.len = 0;
        // Load factor at most 1/2.
        let want = (expected.max(8) * 2).next_power_of_two();
        self.use_slots(want);
    }

    /// Starts a new generation over the first `active` slots (a power of two), allocating them
    /// if the table is smaller. Every slot then reads as free.
    fn use_slots(&mut self, active: usize) {
        if self.slots.len() < active {
            self.slots = vec![Slot::default(); active];
            self.generation = 1;
        } else {
            self.generation = self.generation.wrapping_add(1);
            if self.generation == 0 {
                self.slots.fill(Slot::default());
                self.generation = 1;
            }
        }
        self.active = active;
        self.shift = 64 - active.trailing_zeros();
        // `add` keeps at most `active / 2` features before growing.
        if self.occupied.len() < active / 2 {
            self.occupied.resize(active / 2, 0);
        }
    }

    /// Distinct features counted since [`FeatureCounts::clear`].
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Adds `by` to the count of `key`.
    #[inline]
    pub(crate) fn add(&mut self, key: u64, by: u32) {
        self.add_all(std::iter::once((key, by)));
    }

    /// Adds each `(key, by)` of `items`, in order, as [`add`](Self::add) does one.
    ///
    /// Whether a feature is new is a coin toss in text (about half of a document's words
    /// repeat an earlier one), so that choice is made by selects, not branches: the probe stops
    /// at the key's slot or the first free one, the slot is written either way (a new count or
    /// the old one plus `by`), and the slot's number is written after the occupied ones but
    /// counted only when new. The one branch left is a collision, rare at a load of at most
    /// 1/2. The table's fields live in locals for the whole loop (measured: docs/PERFORMANCE.md,
    /// "Fingerprinting").
    #[inline(always)]
    pub(crate) fn add_all(&mut self, items: impl Iterator<Item = (u64, u32)>) {
        let (mut len, mut mask, mut shift) = (self.len, self.active - 1, self.shift);
        let mut generation = self.generation;
        for (key, by) in items {
            if (len + 1) * 2 > mask + 1 {
                self.len = len;
                self.grow();
                (len, mask, shift) = (self.len, self.active - 1, self.shift);
                generation = self.generation;
            }
            let slots = &mut self.slots[..];
            let mut i = (key >> shift) as usize & mask;
            // `black_box`: the compiler would otherwise test "free" and "same key" as two
            // branches, the first of them the coin toss.
            while slots
                .get(i)
                .is_some_and(|slot| black_box((slot.stamp == generation) & (slot.key != key)))
            {
                i = (i + 1) & mask;
            }
            let Some(slot) = slots.get_mut(i) else {
                continue;
            };
            let new = slot.stamp != generation;
            let count = select_unpredictable(new, 0, slot.count).wrapping_add(by);
            *slot = Slot {
                key,
                count,
                stamp: generation,
            };
            if let Some(entry) = self.occupied.get_mut(len) {
                *entry = i as u32;
            }
            len += usize::from(new);
        }
        self.len = len;
    }

    /// Doubles the table (only when `clear` was given too small an estimate).
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let entries: Vec<(u64, u32)> = self.iter().collect();
        self.use_slots((self.active * 2).max(16));
        self.len = 0;
        for (key, count) in entries {
            self.add(key, count);
        }
    }

    /// Every (feature, count), in first-seen order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        let occupied = self.occupied.get(..self.len).unwrap_or(&[]);
        occupied.iter().map(|&i| {
            let s = &self.slots[i as usize];
            (s.key, s.count)
        })
    }

    /// Whether `key` was counted.
    #[cfg(test)]
    pub(crate) fn get(&self, key: u64) -> Option<u32> {
        self.iter().find(|&(k, _)| k == key).map(|(_, c)| c)
    }
}

/// For each byte value, eight masks: all ones where the bit is 0 (subtract), zero where 1 (add).
static SIGN_MASKS: [[i64; 8]; 256] = {
    let mut t = [[0i64; 8]; 256];
    let mut b = 0;
    while b < 256 {
        let mut i = 0;
        while i < 8 {
            t[b][i] = if (b >> i) & 1 == 1 { 0 } else { -1 };
            i += 1;
        }
        b += 1;
    }
    t
};

/// For each byte value, its eight bits spread to the low bit of eight bytes (bit `j` of the
/// byte to byte `j`): adding these counts the set bits of eight positions at once.
static SPREAD: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let mut j = 0;
        while j < 8 {
            t[b] |= (((b >> j) & 1) as u64) << (8 * j);
            j += 1;
        }
        b += 1;
    }
    t
};

/// Features of one weight, counted per bit: the counters then move by
/// `weight * (set - clear)` per bit, exactly what adding `+weight` or `-weight` feature by
/// feature gives (integer arithmetic, wrapping like the per-feature sum).
#[derive(Clone, Copy)]
struct BitCounts {
    /// Byte lanes: byte `j` of `lanes[k]` counts features with bit `8k + j` set (flushed
    /// before it can overflow).
    lanes: [u64; 8],
    pending: u32,
    ones: [u32; 64],
    features: u32,
}

impl BitCounts {
    const EMPTY: BitCounts = BitCounts {
        lanes: [0; 8],
        pending: 0,
        ones: [0; 64],
        features: 0,
    };

    #[inline]
    fn add(&mut self, h: u64) {
        for (k, lane) in self.lanes.iter_mut().enumerate() {
            *lane += SPREAD[((h >> (8 * k)) & 0xff) as usize];
        }
        self.features += 1;
        self.pending += 1;
        if self.pending == 255 {
            self.spill();
        }
    }

    fn spill(&mut self) {
        for (k, lane) in self.lanes.iter_mut().enumerate() {
            for j in 0..8 {
                self.ones[8 * k + j] += ((*lane >> (8 * j)) & 0xff) as u32;
            }
            *lane = 0;
        }
        self.pending = 0;
    }

    fn apply(&mut self, weight: i64, acc: &mut [i64; 64]) {
        if self.features == 0 {
            return;
        }
        self.spill();
        let n = i64::from(self.features);
        for (a, &ones) in acc.iter_mut().zip(&self.ones) {
            let set = i64::from(ones);
            *a = a.wrapping_add(weight.wrapping_mul(set - (n - set)));
        }
    }
}

/// Counts of occurrences (in units of 1/`unit`) up to this many get their own [`BitCounts`];
/// with `unit` 1 that is terms seen 1 to 4 times, most of a document's distinct words.
const GROUPED_COUNTS: usize = 4;

/// How one kind of feature weighs: `round(w(count) * kind_weight * factor * 2^16)` with `w` the
/// term weight of `count / unit` occurrences (`count` in units of 1/`unit`).
#[derive(Clone, Debug)]
pub(crate) struct Weighting {
    unit: u32,
    kind_weight: f32,
    weight: TermWeight,
    /// The weight of each count below its length with a factor of 1 (most features): computed
    /// once per scheme, instead of a logarithm and a rounding per feature and document.
    by_count: Vec<i64>,
}

/// Counts [`Weighting`] keeps the weight of.
const TABULATED_COUNTS: u32 = 128;

impl Weighting {
    pub(crate) fn new(unit: u32, kind_weight: f32, weight: TermWeight) -> Self {
        let mut w = Weighting {
            unit,
            kind_weight,
            weight,
            by_count: Vec::new(),
        };
        w.by_count = (0..TABULATED_COUNTS).map(|c| w.compute(c, 1.0)).collect();
        w
    }

    /// The definition.
    fn compute(&self, count: u32, factor: f32) -> i64 {
        // `count` is in units of 1/unit; below one occurrence the weight is linear.
        let tf = count as f32 / self.unit as f32;
        let w = match self.weight {
            TermWeight::Binary => tf.min(1.0),
            TermWeight::Sublinear if tf <= 1.0 => tf,
            TermWeight::Sublinear => 1.0 + tf.ln(),
        } * self.kind_weight
            * factor;
        (w * WEIGHT_SCALE).round() as i64
    }

    /// The weight of a feature counted `count` times with `factor` (as [`Self::compute`]).
    #[inline]
    fn of(&self, count: u32, factor: f32) -> i64 {
        match self.by_count.get(count as usize) {
            Some(&w) if factor == 1.0 => w,
            _ => self.compute(count, factor),
        }
    }
}

/// Adds each feature's weight ([`Weighting`]) to the 64 counters, with its sign per bit (`+`
/// where the bit is set).
pub(crate) fn flush(
    counts: &FeatureCounts,
    acc: &mut [i64; 64],
    weighting: &Weighting,
    factor: impl Fn(u64) -> f32,
) {
    // Features whose factor is exactly 1 and whose count is small share a weight per count:
    // computed once, and their bits counted together.
    let mut groups = [BitCounts::EMPTY; GROUPED_COUNTS];
    for (h, count) in counts.iter() {
        let f = factor(h);
        if f == 1.0 && (1..=GROUPED_COUNTS as u32).contains(&count) {
            groups[count as usize - 1].add(h);
            continue;
        }
        let w = weighting.of(count, f);
        for byte in 0..8 {
            let masks = &SIGN_MASKS[((h >> (byte * 8)) & 0xff) as usize];
            let lanes = &mut acc[byte * 8..byte * 8 + 8];
            for (a, m) in lanes.iter_mut().zip(masks) {
                // (w ^ m) - m is w where m == 0 and -w where m == -1.
                *a = a.wrapping_add((w ^ m).wrapping_sub(*m));
            }
        }
    }
    for (i, group) in groups.iter_mut().enumerate() {
        if group.features > 0 {
            group.apply(weighting.of(i as u32 + 1, 1.0), acc);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_rng::Rng;

    /// The definition, feature by feature.
    fn reference(
        counts: &[(u64, u32)],
        unit: u32,
        kind_weight: f32,
        weight: TermWeight,
        factor: impl Fn(u64) -> f32,
    ) -> [i64; 64] {
        let mut acc = [0i64; 64];
        for &(h, count) in counts {
            let tf = count as f32 / unit as f32;
            let w = match weight {
                TermWeight::Binary => tf.min(1.0),
                TermWeight::Sublinear if tf <= 1.0 => tf,
                TermWeight::Sublinear => 1.0 + tf.ln(),
            } * kind_weight
                * factor(h);
            let w = (w * WEIGHT_SCALE).round() as i64;
            for (i, a) in acc.iter_mut().enumerate() {
                *a += if (h >> i) & 1 == 1 { w } else { -w };
            }
        }
        acc
    }

    #[test]
    fn counts_match_a_btreemap() {
        let mut rng = Rng(7);
        let mut table = FeatureCounts::default();
        // Short documents after long ones use a prefix of the grown table.
        for (round, n) in [0usize, 1, 5, 300, 2000, 40, 3, 2000, 900, 12]
            .into_iter()
            .enumerate()
        {
            // Estimates too small on purpose every other round: the table must grow.
            table.clear(if round % 2 == 0 { n } else { 1 });
            let mut truth = std::collections::BTreeMap::new();
            let keys: Vec<u64> = (0..n / 3 + 1).map(|_| rng.next()).collect();
            for _ in 0..n {
                let k = keys[(rng.next() % keys.len() as u64) as usize];
                let by = (rng.next() % 3) as u32 + 1;
                table.add(k, by);
                *truth.entry(k).or_insert(0u32) += by;
            }
            assert_eq!(table.len(), truth.len());
            for (&k, &c) in &truth {
                assert_eq!(table.get(k), Some(c));
            }
            let mut seen: Vec<(u64, u32)> = table.iter().collect();
            seen.sort_unstable();
            assert_eq!(seen, truth.into_iter().collect::<Vec<_>>());
        }
    }

    proptest::proptest! {
        /// Documents of tokens counted by `add_all` (as the fingerprinter counts words: one
        /// table reused, each document sized by its token count or too small so it grows) and
        /// flushed give the counters of the per-feature definition over the counts of a
        /// `BTreeMap`. Keys are drawn from a small pool (repeats) whose slots collide often
        /// (few distinct high bits, so probes run past taken slots and wrap around).
        #[test]
        fn counted_and_flushed_equals_the_definition(
            documents in proptest::collection::vec(
                (
                    proptest::collection::vec((0usize..64, 1u32..6), 0..400),
                    proptest::bool::ANY,
                ),
                1..5,
            ),
            seed in 1u64..u64::MAX,
            high_bits in 1u32..8,
            binary in proptest::bool::ANY,
        ) {
            let mut rng = Rng(seed);
            // Keys sharing their top bits but for `high_bits` of them: home slots collide.
            let pool: Vec<u64> = (0..64)
                .map(|_| (rng.next() >> high_bits) | (rng.next() << (64 - high_bits)))
                .collect();
            let weight = if binary { TermWeight::Binary } else { TermWeight::Sublinear };
            let mut table = FeatureCounts::default();
            for (tokens, undersized) in documents {
                table.clear(if undersized { 1 } else { tokens.len() });
                table.add_all(tokens.iter().map(|&(k, by)| (pool[k], by)));
                let mut truth = std::collections::BTreeMap::new();
                for &(k, by) in &tokens {
                    *truth.entry(pool[k]).or_insert(0u32) += by;
                }
                let pairs: Vec<(u64, u32)> = truth.into_iter().collect();
                let mut seen: Vec<(u64, u32)> = table.iter().collect();
                seen.sort_unstable();
                proptest::prop_assert_eq!(&seen, &pairs);
                proptest::prop_assert_eq!(table.len(), pairs.len());
                let weighting = Weighting::new(2, 1.0, weight);
                let mut acc = [0i64; 64];
                flush(&table, &mut acc, &weighting, |_| 1.0);
                proptest::prop_assert_eq!(acc, reference(&pairs, 2, 1.0, weight, |_| 1.0));
            }
        }
    }

    #[test]
    fn flush_equals_the_per_feature_sum() {
        let mut rng = Rng(11);
        for (n, unit, weight) in [
            (0usize, 1u32, TermWeight::Sublinear),
            (3, 1, TermWeight::Sublinear),
            (700, 1, TermWeight::Sublinear),
            (1500, 3, TermWeight::Sublinear),
            (600, 1, TermWeight::Binary),
            (600, 2, TermWeight::Binary),
        ] {
            let mut table = FeatureCounts::default();
            table.clear(n);
            for _ in 0..n {
                let h = rng.next();
                // Mostly counts 1-4 (grouped), some larger.
                let c = if rng.next().is_multiple_of(5) {
                    // Past the tabulated counts too.
                    (rng.next() % 300) as u32 + 1
                } else {
                    (rng.next() % 4) as u32 + 1
                };
                table.add(h, c);
            }
            let pairs: Vec<(u64, u32)> = table.iter().collect();
            // A factor that is 1 for most features and not for some.
            let factor = |h: u64| if h.is_multiple_of(7) { 0.3 } else { 1.0 };
            for kind_weight in [1.0f32, 0.5] {
                let mut acc = [0i64; 64];
                let weighting = Weighting::new(unit, kind_weight, weight);
                flush(&table, &mut acc, &weighting, factor);
                assert_eq!(
                    acc,
                    reference(&pairs, unit, kind_weight, weight, factor),
                    "n {n}, unit {unit}"
                );
            }
        }
    }
}
