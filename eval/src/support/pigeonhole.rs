//! The peers a tantivy lookup is measured against, on the same fingerprints: an in-memory
//! pigeonhole table (Manku et al.: one sorted table per key combination) and a brute-force scan.
//! Shared by `eval/src/bin/index_bench/` and `benches/lookup.rs`; its splitmix64 [`Rng`] also by
//! `eval/src/bin/collapse_bench.rs` and `eval/src/bin/batch_bench/`.
#![allow(dead_code)]

use tantivy_simhash::{BlockLayout, Fingerprint, Result};

/// One table per key combination of the layout: rows sorted by key, and (for keys of up to 24
/// bits) a direct offset array, so a lookup is one array read per combination; wider keys use
/// a binary search.
pub struct PigeonholeTable {
    layout: BlockLayout,
    fingerprints: Vec<u64>,
    tables: Vec<Table>,
}

struct Table {
    base: u64,
    /// `offsets[key - base]..offsets[key - base + 1]` are the rows of `key`, if direct.
    offsets: Option<Vec<u32>>,
    keys: Vec<u64>,
    rows: Vec<u32>,
}

impl PigeonholeTable {
    /// The tables of `fingerprints` under `layout`. Errors: none in practice (every
    /// combination index is the layout's own).
    pub fn new(layout: &BlockLayout, fingerprints: &[u64]) -> Result<Self> {
        let tables = (0..layout.num_keys())
            .map(|c| {
                let mut t: Vec<(u64, u32)> = fingerprints
                    .iter()
                    .enumerate()
                    .map(|(i, &fp)| Ok((layout.key(c, Fingerprint(fp))?, i as u32)))
                    .collect::<Result<_>>()?;
                t.sort_unstable();
                let range = layout.key_range(c)?;
                let base = *range.start();
                let width = range.end() - range.start() + 1;
                let offsets = (width <= 1 << 24).then(|| {
                    let mut offsets = vec![0u32; width as usize + 1];
                    for &(key, _) in &t {
                        offsets[(key - base) as usize + 1] += 1;
                    }
                    for i in 1..offsets.len() {
                        offsets[i] += offsets[i - 1];
                    }
                    offsets
                });
                Ok(Table {
                    base,
                    offsets,
                    keys: t.iter().map(|&(k, _)| k).collect(),
                    rows: t.iter().map(|&(_, r)| r).collect(),
                })
            })
            .collect::<Result<_>>()?;
        Ok(PigeonholeTable {
            layout: *layout,
            fingerprints: fingerprints.to_vec(),
            tables,
        })
    }

    /// Rows within `k` of `q`, each once, appended to `out`. Errors: none in practice (as
    /// [`new`](Self::new)).
    pub fn lookup(&self, q: Fingerprint, k: u32, out: &mut Vec<u32>) -> Result<()> {
        for (c, table) in self.tables.iter().enumerate() {
            let key = self.layout.key(c, q)?;
            let (start, end) = match &table.offsets {
                Some(o) => {
                    let i = (key - table.base) as usize;
                    (o[i] as usize, o[i + 1] as usize)
                }
                None => {
                    let start = table.keys.partition_point(|&x| x < key);
                    let len = table.keys[start..].partition_point(|&x| x == key);
                    (start, start + len)
                }
            };
            for &row in &table.rows[start..end] {
                let fp = Fingerprint(self.fingerprints[row as usize]);
                if q.distance(fp) <= k && self.layout.first_shared_key(q, fp) == Some(c) {
                    out.push(row);
                }
            }
        }
        Ok(())
    }
}

/// Rows within `k` of `q` by scanning every fingerprint.
pub fn brute_force(fingerprints: &[u64], q: Fingerprint, k: u32, out: &mut Vec<u32>) {
    for (i, &fp) in fingerprints.iter().enumerate() {
        if (fp ^ q.0).count_ones() <= k {
            out.push(i as u32);
        }
    }
}

#[path = "../../../tests/common/rng.rs"]
mod rng;
pub use rng::Rng;

/// `n` fingerprints: about 91% uniformly random, 9% in clusters of 10 near-duplicates (a seed
/// and neighbours at distance 0..=3), the shape the tantivy facts were measured on.
pub fn corpus(n: usize, seed: u64) -> Vec<u64> {
    let mut rng = Rng(seed);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        if rng.below(100) < 9 {
            let s = rng.next_u64();
            for _ in 0..10 {
                let d = rng.below(4) as u32;
                out.push(rng.flip(s, d));
            }
        } else {
            out.push(rng.next_u64());
        }
    }
    out.truncate(n);
    out
}

/// Query fingerprints: half near an indexed one (0..=k+1 bits flipped), half random.
pub fn queries(fingerprints: &[u64], n: usize, k: u32, seed: u64) -> Vec<u64> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|i| {
            if i % 2 == 0 {
                let fp = fingerprints[rng.below(fingerprints.len() as u64) as usize];
                let d = rng.below(u64::from(k) + 2) as u32;
                rng.flip(fp, d)
            } else {
                rng.next_u64()
            }
        })
        .collect()
}
