//! The pigeonhole self-join of fingerprints (Manku et al.): every pair of fingerprints within
//! `k`, in memory. [`pairs_in_memory`] is the kernel for a plain slice of fingerprints; the
//! [`NearDupGraph`](super::NearDupGraph) joins whole signatures by the match rule instead.

use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use crate::layout::BlockLayout;
use rayon::prelude::*;

/// Every pair of `fingerprints` within `max_distance` (inclusive), each once, as
/// `f(i, j, distance)` with `i < j` indices into the slice. Identical fingerprints are paired
/// too (distance 0).
///
/// For fingerprints alone (no sketch, no match rule: [`NearDupGraph`](super::NearDupGraph)
/// joins whole signatures by the rule). The comparisons run on the calling thread (only the
/// comparison sort for keys wider than 24 bits uses rayon): identical fingerprints are
/// grouped first (so exact duplicates cost their output, not a quadratic bucket scan), then the
/// distinct ones are joined per key combination of `layout`. Cost: a sort of the slice, then
/// per combination a counting (or comparison) sort and the comparisons within buckets (about
/// `layout.expected_candidates(n) * n / 2` distance tests for uniform fingerprints); memory
/// about 30 bytes per fingerprint at the peak. The number of calls is the number of pairs:
/// `g * (g - 1) / 2` for a group of `g` identical fingerprints.
///
/// Errors with [`Error::InvalidConfig`] when `max_distance` exceeds what `layout` guarantees,
/// or when the slice has more than `u32::MAX` fingerprints.
///
/// ```
/// use tantivy_simhash::{batch::pairs_in_memory, BlockLayout, Fingerprint};
///
/// let fps = [Fingerprint(0), Fingerprint(0b111), Fingerprint(0b1111), Fingerprint(0)];
/// let mut pairs = Vec::new();
/// pairs_in_memory(&fps, &BlockLayout::default(), 3, |i, j, d| pairs.push((i, j, d)))?;
/// pairs.sort();
/// assert_eq!(pairs, [(0, 1, 3), (0, 3, 0), (1, 2, 1), (1, 3, 3)]);
/// # Ok::<(), tantivy_simhash::Error>(())
/// ```
pub fn pairs_in_memory(
    fingerprints: &[Fingerprint],
    layout: &BlockLayout,
    max_distance: u32,
    mut f: impl FnMut(u32, u32, u32),
) -> Result<()> {
    check_distance(layout, max_distance)?;
    if u32::try_from(fingerprints.len()).is_err() {
        return Err(too_many(fingerprints.len()));
    }
    let mut order: Vec<(u64, u32)> = fingerprints
        .iter()
        .enumerate()
        .map(|(i, fp)| (fp.0, i as u32))
        .collect();
    order.sort_unstable();
    let groups = Groups::from_sorted(&order);
    let members: Vec<u32> = order.iter().map(|&(_, i)| i).collect();
    drop(order);
    let emit = |i: u32, j: u32, d: u32, f: &mut dyn FnMut(u32, u32, u32)| {
        if i < j {
            f(i, j, d)
        } else {
            f(j, i, d)
        }
    };
    for g in 0..groups.len() {
        let m = &members[groups.range(g)];
        for (x, &i) in m.iter().enumerate() {
            for &j in &m[x + 1..] {
                emit(i, j, 0, &mut f);
            }
        }
    }
    let join = Join::new(layout, max_distance);
    for combo in 0..layout.num_keys() {
        let buckets = join.buckets(&groups.fingerprints, combo);
        join.verify(&buckets, combo, 0..buckets.runs.len(), &mut |a, b, d| {
            for &i in &members[groups.range(a as usize)] {
                for &j in &members[groups.range(b as usize)] {
                    emit(i, j, d, &mut f);
                }
            }
        });
    }
    Ok(())
}

fn check_distance(layout: &BlockLayout, max_distance: u32) -> Result<()> {
    crate::layout::check_distance(layout.max_distance(), max_distance)
}

pub(super) fn too_many(n: usize) -> Error {
    Error::InvalidConfig(format!(
        "{n} fingerprints; batch jobs handle at most {} at once: split the input (by segment \
         groups or shards) and join the parts",
        u32::MAX
    ))
}

/// Distinct fingerprints (sorted) and where each one's members start in a member array.
struct Groups {
    fingerprints: Vec<u64>,
    starts: Vec<u32>,
}

impl Groups {
    /// From rows sorted by fingerprint.
    fn from_sorted<T>(rows: &[(u64, T)]) -> Groups {
        // Counted first, so both vectors are allocated once at their exact size.
        let distinct = rows.chunk_by(|a, b| a.0 == b.0).count();
        let mut fingerprints = Vec::with_capacity(distinct);
        let mut starts = Vec::with_capacity(distinct + 1);
        let mut at = 0u32;
        for run in rows.chunk_by(|a, b| a.0 == b.0) {
            fingerprints.push(run[0].0);
            starts.push(at);
            at += run.len() as u32;
        }
        starts.push(at);
        Groups {
            fingerprints,
            starts,
        }
    }

    fn len(&self) -> usize {
        self.fingerprints.len()
    }

    fn range(&self, g: usize) -> std::ops::Range<usize> {
        self.starts[g] as usize..self.starts[g + 1] as usize
    }
}

/// The pigeonhole self-join of distinct fingerprints.
struct Join {
    max_distance: u32,
    /// The fingerprint bits of each key combination.
    masks: Vec<u64>,
    layout: BlockLayout,
}

/// The distinct fingerprints of one combination, ordered by that combination's bits, and the
/// runs (buckets with at least two fingerprints) to verify.
struct Buckets {
    fingerprints: Vec<u64>,
    rows: Vec<u32>,
    runs: Vec<(u32, u32)>,
}

impl Buckets {
    /// A counting sort into `1 << width` slots (`slot(fp) < 1 << width`).
    fn by_counting_sort(fingerprints: &[u64], width: u32, slot: impl Fn(u64) -> u64) -> Buckets {
        let n = fingerprints.len();
        // The slot is recomputed in the scatter rather than stored: 4 bytes per fingerprint
        // less at the peak, for a shift and a mask.
        let mut offsets = vec![0u32; (1usize << width) + 1];
        for &fp in fingerprints {
            offsets[slot(fp) as usize + 1] += 1;
        }
        for i in 1..offsets.len() {
            offsets[i] += offsets[i - 1];
        }
        let runs = offsets
            .windows(2)
            .filter(|w| w[1] - w[0] >= 2)
            .map(|w| (w[0], w[1]))
            .collect();
        let mut next = offsets;
        let mut out = Buckets {
            fingerprints: vec![0; n],
            rows: vec![0; n],
            runs,
        };
        for (row, &fp) in fingerprints.iter().enumerate() {
            let s = slot(fp) as usize;
            let at = next[s] as usize;
            next[s] += 1;
            out.fingerprints[at] = fp;
            out.rows[at] = row as u32;
        }
        out
    }

    /// A parallel comparison sort by slot (for keys too wide for a counting sort).
    fn by_comparison_sort(fingerprints: &[u64], slot: impl Fn(u64) -> u64 + Sync) -> Buckets {
        let mut keyed: Vec<(u64, u32)> = fingerprints
            .par_iter()
            .enumerate()
            .map(|(row, &fp)| (slot(fp), row as u32))
            .collect();
        keyed.par_sort_unstable();
        let mut out = Buckets {
            fingerprints: Vec::with_capacity(keyed.len()),
            rows: Vec::with_capacity(keyed.len()),
            runs: Vec::new(),
        };
        let mut start = 0;
        for i in 1..=keyed.len() {
            if i == keyed.len() || keyed[i].0 != keyed[start].0 {
                if i - start >= 2 {
                    out.runs.push((start as u32, i as u32));
                }
                start = i;
            }
        }
        for (_, row) in keyed {
            out.fingerprints.push(fingerprints[row as usize]);
            out.rows.push(row);
        }
        out
    }
}

impl Join {
    fn new(layout: &BlockLayout, max_distance: u32) -> Join {
        let masks = (0..layout.num_keys())
            .map(|c| {
                let zero = layout.combo_key(c, Fingerprint(0));
                (0..64)
                    .filter(|&b| layout.combo_key(c, Fingerprint(1 << b)) != zero)
                    .fold(0u64, |m, b| m | (1 << b))
            })
            .collect();
        Join {
            max_distance,
            masks,
            layout: layout.clone(),
        }
    }

    /// Buckets the distinct `fingerprints` by the bits of `combo`: a counting sort when the key
    /// has at most 24 bits and its offset table is not much larger than the input, a comparison
    /// sort otherwise.
    fn buckets(&self, fingerprints: &[u64], combo: usize) -> Buckets {
        let mask = self.masks[combo];
        let width = mask.count_ones();
        let shift = mask.trailing_zeros();
        let contiguous = width < 64 && (mask >> shift).trailing_ones() == width;
        let base = *self.layout.combo_key_range(combo).start();
        let slot = |fp: u64| -> u64 {
            if contiguous {
                (fp & mask) >> shift
            } else {
                self.layout.combo_key(combo, Fingerprint(fp)) - base
            }
        };
        let n = fingerprints.len();
        if width <= 24 && (1usize << width) <= (4 * n).max(1 << 16) {
            Buckets::by_counting_sort(fingerprints, width, slot)
        } else {
            Buckets::by_comparison_sort(fingerprints, slot)
        }
    }

    /// Compares within the runs `runs` of `b`, calling `f(row_a, row_b, distance)` for every
    /// pair within `k` whose first shared combination is `combo`.
    fn verify(
        &self,
        b: &Buckets,
        combo: usize,
        runs: std::ops::Range<usize>,
        f: &mut dyn FnMut(u32, u32, u32),
    ) {
        // The distance test is the inner loop: with k known at compile time it is k rounds of
        // "clear the lowest set bit", cheaper than a popcount on targets without the popcnt
        // instruction (the default x86-64 target).
        match self.max_distance {
            0 => self.verify_within::<0>(b, combo, runs, f),
            1 => self.verify_within::<1>(b, combo, runs, f),
            2 => self.verify_within::<2>(b, combo, runs, f),
            3 => self.verify_within::<3>(b, combo, runs, f),
            4 => self.verify_within::<4>(b, combo, runs, f),
            5 => self.verify_within::<5>(b, combo, runs, f),
            6 => self.verify_within::<6>(b, combo, runs, f),
            _ => self.verify_within::<{ u32::MAX }>(b, combo, runs, f),
        }
    }

    /// [`verify`](Self::verify) for `max_distance == K`, or any distance with `K == u32::MAX`.
    fn verify_within<const K: u32>(
        &self,
        b: &Buckets,
        combo: usize,
        runs: std::ops::Range<usize>,
        f: &mut dyn FnMut(u32, u32, u32),
    ) {
        let k = self.max_distance;
        let within = |diff: u64| {
            if K == u32::MAX {
                diff.count_ones() <= k
            } else {
                let mut x = diff;
                for _ in 0..K {
                    x &= x.wrapping_sub(1);
                }
                x == 0
            }
        };
        let earlier = &self.masks[..combo];
        let mut hit = |x: usize, y: usize, diff: u64| {
            if earlier.iter().all(|&m| diff & m != 0) {
                f(b.rows[x], b.rows[y], diff.count_ones());
            }
        };
        for &(start, end) in &b.runs[runs] {
            let (start, end) = (start as usize, end as usize);
            for x in start..end {
                let a = b.fingerprints[x];
                let rest = &b.fingerprints[x + 1..end];
                // Eight comparisons without a branch (the compiler vectorises them), then the
                // rare hits one by one.
                let mut chunks = rest.chunks_exact(8);
                let mut at = x + 1;
                for chunk in &mut chunks {
                    let mut mask = 0u32;
                    for (i, &c) in chunk.iter().enumerate() {
                        mask |= u32::from(within(a ^ c)) << i;
                    }
                    while mask != 0 {
                        let i = mask.trailing_zeros() as usize;
                        mask &= mask - 1;
                        hit(x, at + i, a ^ chunk[i]);
                    }
                    at += 8;
                }
                for (i, &c) in chunks.remainder().iter().enumerate() {
                    if within(a ^ c) {
                        hit(x, at + i, a ^ c);
                    }
                }
            }
        }
    }
}
