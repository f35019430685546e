//! The peers the joins are measured against: the in-memory floor for the rule, the fingerprint-only
//! pigeonhole self-joins of issue 5, and brute force.

use super::*;

/// The in-memory peer: per combination, sort (key, row), compare within equal keys, keep a
/// pair under its first shared combination. One thread, no grouping of duplicates.
pub(crate) fn pigeonhole_self_join(fps: &[u64], layout: &BlockLayout, k: u32) -> Res<u64> {
    let mut pairs = 0u64;
    let mut t: Vec<(u64, u32)> = Vec::with_capacity(fps.len());
    for c in 0..layout.num_keys() {
        t.clear();
        for (i, &fp) in fps.iter().enumerate() {
            t.push((layout.key(c, Fingerprint(fp))?, i as u32));
        }
        t.sort_unstable();
        let mut start = 0;
        while start < t.len() {
            let mut end = start + 1;
            while end < t.len() && t[end].0 == t[start].0 {
                end += 1;
            }
            for i in start..end {
                let a = fps[t[i].1 as usize];
                for &(_, j) in &t[i + 1..end] {
                    let b = fps[j as usize];
                    if (a ^ b).count_ones() <= k
                        && layout.first_shared_key(Fingerprint(a), Fingerprint(b)) == Some(c)
                    {
                        pairs += 1;
                    }
                }
            }
            start = end;
        }
    }
    Ok(pairs)
}

/// The tuned in-memory peer, for the default layout only: per 16-bit block, a counting sort of
/// the fingerprints, comparisons within equal blocks (with the library's distance test), a
/// pair kept under its first equal block. One thread, no grouping of duplicates.
pub(crate) fn pigeonhole_counting_sort(fps: &[u64], k: u32) -> u64 {
    // The same distance test as the library's: k rounds of "clear the lowest set bit" (cheaper
    // than a popcount without the popcnt instruction).
    assert_eq!(
        k, 3,
        "the tuned peer is written for the default layout (k = 3)"
    );
    let within = |diff: u64| {
        let mut x = diff;
        for _ in 0..3 {
            x &= x.wrapping_sub(1);
        }
        x == 0
    };
    let mut pairs = 0u64;
    let mut sorted = vec![0u64; fps.len()];
    for c in 0..4u32 {
        let block = |fp: u64| ((fp >> (16 * c)) & 0xffff) as usize;
        let mut offsets = vec![0u32; (1 << 16) + 1];
        for &fp in fps {
            offsets[block(fp) + 1] += 1;
        }
        for i in 1..offsets.len() {
            offsets[i] += offsets[i - 1];
        }
        let mut next = offsets.clone();
        for &fp in fps {
            let b = block(fp);
            sorted[next[b] as usize] = fp;
            next[b] += 1;
        }
        for w in offsets.windows(2) {
            let run = &sorted[w[0] as usize..w[1] as usize];
            for (i, &a) in run.iter().enumerate() {
                for &b in &run[i + 1..] {
                    let diff = a ^ b;
                    if within(diff) && (0..c).all(|e| (diff >> (16 * e)) & 0xffff != 0) {
                        pairs += 1;
                    }
                }
            }
        }
    }
    pairs
}

/// The two in-memory pigeonhole self-joins, checked against the batch job's pair count.
pub(crate) fn pigeonhole_peers(
    fps: &[u64],
    layout: &BlockLayout,
    k: u32,
    total_pairs: u64,
    t: &mut Timings,
) -> Res<()> {
    let start = Instant::now();
    let naive_pairs = pigeonhole_self_join(fps, layout, k)?;
    t.naive = secs(start);
    println!(
        "in-memory pigeonhole self-join, sort of (key, row) per combination (1 thread): \
         {:.3} s, {naive_pairs} pairs",
        t.naive
    );
    assert_eq!(naive_pairs, total_pairs, "the peers disagree");
    let start = Instant::now();
    let ph_pairs = pigeonhole_counting_sort(fps, k);
    t.ph = secs(start);
    println!(
        "in-memory pigeonhole self-join, counting sort per block (1 thread): {:.3} s, \
         {ph_pairs} pairs",
        t.ph
    );
    assert_eq!(ph_pairs, total_pairs, "the peers disagree");
    Ok(())
}

/// Brute force on `brute_queries` sampled documents, extrapolated to N^2/2 comparisons.
pub(crate) fn brute_force(fps: &[u64], k: u32, brute_queries: usize, threads: usize) -> f64 {
    let n = fps.len();
    let sample = brute_queries.min(n).max(1);
    let t = Instant::now();
    let found: u64 = {
        use rayon::prelude::*;
        let step = (n / sample).max(1);
        (0..sample)
            .into_par_iter()
            .map(|q| {
                let a = fps[(q * step) % n];
                fps.iter().filter(|&&b| (a ^ b).count_ones() <= k).count() as u64
            })
            .sum()
    };
    let brute_sample = secs(t);
    let brute = brute_sample / sample as f64 * n as f64 / 2.0;
    println!(
        "brute force ({threads} threads): {brute_sample:.3} s for {sample} scans of {n} \
         ({found} matches), extrapolated to all pairs: {brute:.1} s"
    );
    brute
}

/// The in-memory floor for the same rule on `threads` threads, as an expert writes it with
/// every signature in memory (materialised before the clock starts): the full bits of every
/// band (one column per band, 8 bytes a document each), then per key position a counting sort
/// of (key, row) and the pairs of each run verified, each pair once: a simhash pair under its
/// first shared block key, a resemblance match under its first shared band (its evidence's).
/// Returns seconds and pairs.
pub(crate) fn floor(corpus: &Corpus, rule: &MatchRule, threads: usize) -> Res<(f64, u64)> {
    use rayon::prelude::*;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;
    let n = corpus.fps.len();
    let config = rule.minhash();
    let words = config.sketch_words();
    let layout = rule.layout();
    let blocks = layout.num_keys();
    let bands = config.bands as usize;
    let k = layout.max_distance();
    let sigs: Vec<Signature> = pool.install(|| {
        (0..n)
            .into_par_iter()
            .map(|i| corpus.signature(i, words))
            .collect()
    });
    let block_widths: Vec<u32> = (0..blocks)
        .map(|p| {
            layout
                .key_range(p)
                .map(|r| (r.end() - r.start()).count_ones())
        })
        .collect::<tantivy_simhash::Result<_>>()?;
    let key_mask = (1u64 << config.key_bits) - 1;
    let t = Instant::now();
    let pairs = pool.install(|| {
        let band_bits: Vec<Vec<u64>> = (0..bands)
            .into_par_iter()
            .map(|b| {
                sigs.iter()
                    .map(|s| s.sketch.band(config, b as u32))
                    .collect()
            })
            .collect();
        let fps: Vec<u64> = sigs.iter().map(|s| s.fingerprint.0).collect();
        (0..blocks + bands)
            .into_par_iter()
            .map(|p| {
                let (width, keyed): (u32, Vec<u64>) = if p < blocks {
                    let keys = fps
                        .iter()
                        .map(|&fp| layout.key(p, Fingerprint(fp)).unwrap_or(0))
                        .collect();
                    (block_widths[p], keys)
                } else {
                    // u64::MAX: no band keys (an empty sketch).
                    let keys = (0..n)
                        .map(|r| {
                            if sigs[r].sketch.is_empty() {
                                u64::MAX
                            } else {
                                band_bits[p - blocks][r] & key_mask
                            }
                        })
                        .collect();
                    (config.key_bits, keys)
                };
                let width = width.min(24);
                let slot = |row: usize| (keyed[row] & ((1 << width) - 1)) as usize;
                let mut offsets = vec![0u32; (1 << width) + 1];
                for (row, &key) in keyed.iter().enumerate().take(n) {
                    if key != u64::MAX {
                        offsets[slot(row) + 1] += 1;
                    }
                }
                for i in 1..offsets.len() {
                    offsets[i] += offsets[i - 1];
                }
                let mut next = offsets.clone();
                let mut sorted = vec![0u32; offsets[offsets.len() - 1] as usize];
                for (row, &key) in keyed.iter().enumerate().take(n) {
                    if key != u64::MAX {
                        let s = slot(row);
                        sorted[next[s] as usize] = row as u32;
                        next[s] += 1;
                    }
                }
                let mut found = 0u64;
                for w in offsets.windows(2) {
                    let run = &sorted[w[0] as usize..w[1] as usize];
                    for (x, &a) in run.iter().enumerate() {
                        for &b in &run[x + 1..] {
                            let (a, b) = (a as usize, b as usize);
                            if keyed[a] != keyed[b] {
                                continue; // a key wider than the slot
                            }
                            let (fa, fb) = (fps[a], fps[b]);
                            let d = (fa ^ fb).count_ones();
                            if p < blocks {
                                let first =
                                    layout.first_shared_key(Fingerprint(fa), Fingerprint(fb));
                                found += u64::from(d <= k && first == Some(p));
                                continue;
                            }
                            let band = p - blocks;
                            if d <= k
                                || band_bits[band][a] != band_bits[band][b]
                                || (0..band).any(|q| band_bits[q][a] == band_bits[q][b])
                            {
                                continue;
                            }
                            found += u64::from(rule.matches(&sigs[a], &sigs[b]).is_some());
                        }
                    }
                }
                found
            })
            .sum::<u64>()
    });
    Ok((secs(t), pairs))
}

/// Brute force with `MatchRule::matches` for the documents `sample` against all: their pairs.
pub(crate) fn brute_force_rule(
    corpus: &Corpus,
    rule: &MatchRule,
    sample: &[usize],
) -> (f64, Vec<u64>) {
    use rayon::prelude::*;
    let words = rule.minhash().sketch_words();
    let t = Instant::now();
    let counts = sample
        .par_iter()
        .map(|&q| {
            let a = corpus.signature(q, words);
            (0..corpus.fps.len())
                .filter(|&j| j != q && rule.matches(&a, &corpus.signature(j, words)).is_some())
                .count() as u64
        })
        .collect();
    (secs(t), counts)
}
