//! Feature counting and the 64 simhash counters, the inner loop of fingerprinting.
//!
//! Both are exact integer arithmetic, so the fingerprint does not depend on the order in which
//! features are counted or added (the tests compare against a plain per-bit reference).

use super::{TermWeight, WEIGHT_SCALE};

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
    /// Occupied slots, in first-seen order.
    occupied: Vec<u32>,
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
        self.occupied.clear();
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
    }

    /// Distinct features counted since [`FeatureCounts::clear`].
    pub(crate) fn len(&self) -> usize {
        self.occupied.len()
    }

    /// Adds `by` to the count of `key`.
    #[inline(always)]
    pub(crate) fn add(&mut self, key: u64, by: u32) {
        if (self.occupied.len() + 1) * 2 > self.active {
            self.grow();
        }
        let mask = self.active - 1;
        let mut i = (key >> self.shift) as usize;
        loop {
            let slot = &mut self.slots[i];
            if slot.stamp != self.generation {
                *slot = Slot {
                    key,
                    count: by,
                    stamp: self.generation,
                };
                self.occupied.push(i as u32);
                return;
            }
            if slot.key == key {
                slot.count = slot.count.wrapping_add(by);
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /// Doubles the table (only when `clear` was given too small an estimate).
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let entries: Vec<(u64, u32)> = self.iter().collect();
        self.use_slots((self.active * 2).max(16));
        self.occupied.clear();
        for (key, count) in entries {
            self.add(key, count);
        }
    }

    /// Every (feature, count), in first-seen order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.occupied.iter().map(|&i| {
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
