//! The streaming join against brute force (exact, with hot keys, deletes and narrowed radii).

use super::runs::{split_bits, visit_run, Outcome};
use super::*;
use crate::component::reader::SignatureReader;
use crate::signature::tests::{families, signature_index, Kin};
use crate::signature::Sketch;
use crate::signature::{Evidence, Signature};
use crate::test_rng::Rng;
use std::collections::BTreeMap;
use tantivy::DocAddress;

/// Signatures around random bases: simhash neighbours (1-3 bits flipped), resemblance
/// neighbours (far fingerprint, a few sketch words changed), band-sharing strangers (far
/// fingerprint, band words kept, the rest changed: met under every band key, no match),
/// exact copies; then a hot block key (`hot_block` distinct fingerprints sharing the low
/// 16 bits, some of them within 3 of each other) and a hot band (`hot_band` far
/// fingerprints with the same band words, one in `neighbours_one_in` of them a resemblance
/// neighbour of one template).
fn corpus(
    seed: u64,
    rule: &MatchRule,
    n: usize,
    hot_block: usize,
    (hot_band, neighbours_one_in): (usize, u64),
) -> Vec<Signature> {
    let mut rng = Rng(seed);
    let words = rule.minhash().sketch_words();
    let random = |rng: &mut Rng| Signature {
        fingerprint: Fingerprint(rng.next()),
        sketch: Sketch {
            words: (0..words).map(|_| rng.next()).collect(),
        },
    };
    use Kin::*;
    let kin = [
        SimhashNeighbour,
        ResemblanceNeighbour,
        BandStranger,
        Copy,
        Copy,
    ];
    let mut sigs = families(&mut rng, rule, n, &kin);
    let block = rng.next() & 0xffff;
    for i in 0..hot_block {
        let mut s = random(&mut rng);
        s.fingerprint.0 = if i % 4 == 3 {
            let near = sigs[sigs.len() - 1].fingerprint.0;
            near ^ 1 << (16 + rng.below(48)) ^ 1 << (16 + rng.below(48))
        } else {
            (s.fingerprint.0 & !0xffff) | block
        };
        sigs.push(s);
    }
    let template = random(&mut rng);
    for _ in 0..hot_band {
        let mut s = random(&mut rng);
        s.sketch.words[..5].copy_from_slice(&template.sketch.words[..5]);
        if rng.below(neighbours_one_in) == 0 {
            // A resemblance neighbour of the template.
            s.sketch.words = template.sketch.words.clone();
            s.sketch.words[words - 1] = rng.next();
        }
        sigs.push(s);
    }
    sigs
}

/// The join over the index of `sigs` (numbers by position), in join order, with stats.
fn joined(
    index: &tantivy::Index,
    rule: &MatchRule,
    max_distance: u32,
    cap: usize,
    threads: usize,
) -> (Vec<(u64, u64, Evidence)>, PairStats) {
    let searcher = index.reader().unwrap().searcher();
    let reader = SignatureReader::new(&searcher, rule).unwrap();
    let numbers: Vec<_> = searcher
        .segment_readers()
        .iter()
        .map(|s| s.fast_fields().u64("n").unwrap())
        .collect();
    let number = |a: DocAddress| numbers[a.segment_ord as usize].first(a.doc_id).unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let mut out = Vec::new();
        let stats = join(
            reader.segments(),
            &searcher,
            rule,
            max_distance,
            cap,
            None,
            |f| {
                f.for_each_pair(|a, b, e| {
                    assert!(a < b, "{a:?} {b:?} {e:?}");
                    out.push((number(a), number(b), e))
                })
            },
        )
        .unwrap();
        (out, stats)
    })
}

/// Brute force: every live pair `matches_within` accepts.
fn brute(
    rule: &MatchRule,
    sigs: &[Signature],
    deleted: &std::collections::BTreeSet<usize>,
    max_distance: u32,
) -> BTreeMap<(u64, u64), Evidence> {
    let mut out = BTreeMap::new();
    for i in 0..sigs.len() {
        for j in i + 1..sigs.len() {
            if deleted.contains(&i) || deleted.contains(&j) {
                continue;
            }
            if let Some(e) = rule.matches_within(&sigs[i], &sigs[j], max_distance) {
                out.insert((i as u64, j as u64), e);
            }
        }
    }
    out
}

fn as_map(pairs: &[(u64, u64, Evidence)]) -> BTreeMap<(u64, u64), Evidence> {
    let mut map = BTreeMap::new();
    for &(a, b, e) in pairs {
        let key = (a.min(b), a.max(b));
        assert!(map.insert(key, e).is_none(), "pair {key:?} reported twice");
    }
    map
}

/// Exact against brute force, across segments and deletes, with the evidence, each pair
/// once: unbounded, and with a small bound where the hot block key is split (exact, no key
/// cut); and the same order on 1 and 2 threads.
#[test]
fn streaming_join_equals_brute_force_with_hot_block_keys_and_deletes() {
    let rule = MatchRule::default();
    let sigs = corpus(7, &rule, 420, 300, (0, 1));
    let (index, _, deleted) = signature_index(&rule, &sigs, 97, |i| i % 13 == 5);
    assert!(!deleted.is_empty());
    let oracle = brute(&rule, &sigs, &deleted, 3);
    assert!(oracle.len() > 200, "{}", oracle.len());
    assert!(oracle.values().any(|e| e.resemblance().is_some()));
    assert!(oracle.values().any(|e| e.distance() == 0));
    let (pairs, stats) = joined(&index, &rule, 3, usize::MAX, 2);
    assert_eq!(as_map(&pairs), oracle);
    assert_eq!(stats.pairs, pairs.len() as u64);
    // The hot block key (300 distinct fingerprints) is split by sub-blocks, exactly.
    let (bounded, stats) = joined(&index, &rule, 3, 16, 2);
    assert_eq!(as_map(&bounded), oracle);
    assert_eq!(stats.hot_keys, 0);
    let (one_thread, _) = joined(&index, &rule, 3, 16, 1);
    assert_eq!(one_thread, bounded, "the order depends on the threads");
}

/// A narrowed simhash radius: pairs beyond it come only through the resemblance branch.
#[test]
fn streaming_join_with_a_narrowed_radius_equals_brute_force() {
    let rule = MatchRule::default();
    let sigs = corpus(8, &rule, 300, 120, (0, 1));
    let (index, _, deleted) = signature_index(&rule, &sigs, 61, |i| i % 17 == 2);
    for k in [0, 1, 2] {
        let (pairs, _) = joined(&index, &rule, k, 8, 2);
        assert_eq!(as_map(&pairs), brute(&rule, &sigs, &deleted, k), "k = {k}");
    }
}

/// A band shared by many more distinct fingerprints than the bound, few of them matching
/// each other (a template): counted as cut, and what is reported is still a subset of
/// brute force with the right evidence; unbounded, exact.
#[test]
fn streaming_join_counts_a_sparse_hot_band_and_stays_within_brute_force() {
    let rule = MatchRule::default();
    let sigs = corpus(9, &rule, 120, 0, (60, 3));
    let (index, _, deleted) = signature_index(&rule, &sigs, 50, |i| i % 19 == 3);
    let oracle = brute(&rule, &sigs, &deleted, 3);
    let (exact, stats) = joined(&index, &rule, 3, usize::MAX, 2);
    assert_eq!(as_map(&exact), oracle);
    assert_eq!(stats.hot_keys, 0);
    let (bounded, stats) = joined(&index, &rule, 3, 8, 2);
    assert!(stats.hot_keys > 0);
    let found = as_map(&bounded);
    for (pair, e) in &found {
        assert_eq!(oracle.get(pair), Some(e), "{pair:?}");
    }
    assert!(found.len() < oracle.len(), "the bound cut nothing");
}

/// A band shared by many more distinct fingerprints than the bound, most of them matching
/// each other (a family of edited copies that keep every band, as batch_bench's at 10M):
/// joined exactly, no key cut, each family pair once, on 1 and 2 threads alike.
#[test]
fn streaming_join_joins_a_dense_hot_band_exactly() {
    let rule = MatchRule::default();
    let sigs = corpus(10, &rule, 120, 0, (90, 1));
    let (index, _, deleted) = signature_index(&rule, &sigs, 50, |i| i % 23 == 4);
    let oracle = brute(&rule, &sigs, &deleted, 3);
    assert!(
        oracle
            .values()
            .filter(|e| e.resemblance().is_some())
            .count()
            > 2000
    );
    let (bounded, stats) = joined(&index, &rule, 3, 8, 2);
    assert_eq!(stats.hot_keys, 0);
    assert_eq!(as_map(&bounded), oracle);
    let (one_thread, _) = joined(&index, &rule, 3, 8, 1);
    assert_eq!(one_thread, bounded);
}

/// A family that keeps every band (more classes than the bound, all resemblance neighbours)
/// met under its later bands with a few strangers that share those bands' keys but not the
/// first band's (one a resemblance neighbour of the family, the others not): exact, no key
/// cut, although a later band's run is mostly pairs reported under the first band.
#[test]
fn streaming_join_joins_a_family_with_strangers_on_later_bands_exactly() {
    let rule = MatchRule::default();
    let mut rng = Rng(11);
    let words = rule.minhash().sketch_words();
    let template: Vec<u64> = (0..words).map(|_| rng.next()).collect();
    let mut sigs: Vec<Signature> = Vec::new();
    for _ in 0..60 {
        let mut w = template.clone();
        w[words - 1] = rng.next();
        sigs.push(Signature {
            fingerprint: Fingerprint(rng.next()),
            sketch: Sketch { words: w },
        });
    }
    for stranger in 0..5 {
        let mut w: Vec<u64> = if stranger == 0 {
            template.clone()
        } else {
            (0..words).map(|_| rng.next()).collect()
        };
        w[..5].copy_from_slice(&template[..5]);
        w[0] ^= 1; // band 0's key differs; bands 1.. are the family's
        sigs.push(Signature {
            fingerprint: Fingerprint(rng.next()),
            sketch: Sketch { words: w },
        });
    }
    let (index, _, deleted) = signature_index(&rule, &sigs, 20, |_| false);
    let oracle = brute(&rule, &sigs, &deleted, 3);
    // The first stranger matches every family member under band 1.
    let under_band_1 = oracle
        .values()
        .filter(|e| matches!(e, Evidence::Resemblance { band: 1, .. }))
        .count();
    assert_eq!(under_band_1, 60);
    let (bounded, stats) = joined(&index, &rule, 3, 8, 2);
    assert_eq!(stats.hot_keys, 0);
    assert_eq!(as_map(&bounded), oracle);
}

/// A dense long run: every pair once; a sparse one: each member with the next `cap` only,
/// reported as cut; a short one: every pair, never cut.
#[test]
fn visit_run_completes_dense_runs_and_cuts_sparse_ones() {
    let every: std::collections::BTreeSet<(usize, usize)> = (0..40)
        .flat_map(|a| (a + 1..40).map(move |b| (a, b)))
        .collect();
    for (name, outcome, cap, cut) in [
        ("dense", Outcome::Matched, 5, false),
        ("skipped", Outcome::Skipped, 5, false),
        ("sparse", Outcome::Rejected, 5, true),
        ("short", Outcome::Rejected, 39, false),
    ] {
        let mut seen = Vec::new();
        let was_cut = visit_run(40, cap, |a, b| {
            seen.push((a, b));
            outcome
        });
        assert_eq!(was_cut, cut, "{name}");
        let set: std::collections::BTreeSet<_> = seen.iter().copied().collect();
        assert_eq!(set.len(), seen.len(), "{name}: a pair visited twice");
        let expected: std::collections::BTreeSet<_> = if cut {
            every
                .iter()
                .copied()
                .filter(|&(a, b)| b - a <= cap)
                .collect()
        } else {
            every.clone()
        };
        assert_eq!(set, expected, "{name}");
    }
}

#[test]
fn split_bits_covers_the_bits_in_balanced_parts() {
    let masks = split_bits(!0xffff, 4);
    assert_eq!(masks.len(), 4);
    assert_eq!(masks.iter().fold(0, |a, m| a | m), !0xffff);
    assert!(masks.iter().all(|m| m.count_ones() == 12));
    assert_eq!(masks.iter().map(|m| m.count_ones()).sum::<u32>(), 48);
}
