use super::*;
use crate::fingerprint::Fingerprint;
use crate::signature::Sketch;
use crate::test_rng::Rng;

/// Clusters of signatures: a random base, then copies with a few fingerprint bits flipped (some
/// within the layout's distance, some beyond) and some sketch bits flipped, and exact copies,
/// so the checks see simhash matches, resemblance matches, ties of both and non-matches.
fn signatures(rule: &MatchRule, seed: u64, n: usize) -> Vec<Signature> {
    let mut rng = Rng(seed | 1);
    let words = rule.minhash().sketch_words();
    let mut out: Vec<Signature> = Vec::with_capacity(n);
    for _ in 0..n {
        if rng.below(25) == 0 {
            // No tokens: no sketch, no band keys; it matches by the simhash branch only.
            out.push(Signature {
                fingerprint: Fingerprint(rng.next()),
                sketch: Sketch::empty(rule.minhash()),
            });
            continue;
        }
        if out.is_empty() || rng.below(4) == 0 {
            out.push(Signature {
                fingerprint: Fingerprint(rng.next()),
                sketch: Sketch {
                    words: (0..words).map(|_| rng.next()).collect(),
                },
            });
            continue;
        }
        let base = &out[rng.below(out.len() as u64) as usize];
        if rng.below(6) == 0 {
            // An exact copy: a later query beyond the radius of both sees a tie in strength,
            // which the first added must win.
            out.push(base.clone());
            continue;
        }
        let mut fp = base.fingerprint.0;
        for _ in 0..rng.below(12) {
            fp ^= 1 << rng.below(64);
        }
        let mut sketch = base.sketch.clone();
        for _ in 0..rng.below(words as u64 * 24) {
            let w = rng.below(words as u64) as usize;
            sketch.words[w] ^= 1 << rng.below(64);
        }
        out.push(Signature {
            fingerprint: Fingerprint(fp),
            sketch,
        });
    }
    out
}

/// Each key's list of holders, kept as the table's contract says, with plain vectors: a
/// document joins a key's list while the list has fewer than `bound` live holders (when the
/// list is full its dead holders are dropped first, keeping the order).
fn join_lists(
    lists: &mut HashMap<u64, Vec<usize>>,
    rule: &MatchRule,
    docs: &[(Signature, String, bool)],
    i: usize,
    bound: usize,
) {
    for key in rule.keys(&docs[i].0) {
        let list = lists.entry(key).or_default();
        if list.len() >= bound {
            list.retain(|&j| docs[j].2);
        }
        if list.len() < bound {
            list.push(i);
        }
    }
}

/// The pending matches by brute force: the holders of each key of `query` (its list, from
/// [`join_lists`]), those alive, not `replacing`, that the rule matches, strongest first,
/// ties in the order added.
fn brute_force(
    rule: &MatchRule,
    docs: &[(Signature, String, bool)],
    lists: &HashMap<u64, Vec<usize>>,
    query: &Signature,
    replacing: Option<&str>,
) -> Vec<(Evidence, u32)> {
    let mut candidates = Vec::new();
    for key in rule.keys(query) {
        candidates.extend(lists.get(&key).into_iter().flatten().copied());
    }
    candidates.sort_unstable();
    candidates.dedup();
    let mut out: Vec<(Evidence, u32)> = candidates
        .into_iter()
        .filter(|&i| docs[i].2 && replacing != Some(docs[i].1.as_str()))
        .filter_map(|i| rule.matches(query, &docs[i].0).map(|e| (e, i as u32)))
        .collect();
    out.sort_by(|a, b| a.0.cmp_strength(&b.0));
    out
}

fn same(a: &[(Evidence, u32)], b: &[(Evidence, u32)]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.1 == y.1 && x.0 == y.0)
}

#[test]
fn pending_matches_equal_brute_force() {
    let rule = MatchRule::default();
    for (seed, bound) in [(7, usize::MAX), (11, usize::MAX), (13, 3), (17, 1)] {
        let sigs = signatures(&rule, seed, 400);
        let mut pending = Pending::new(0, bound);
        let mut mirror: Vec<(Signature, String, bool)> = Vec::new();
        let mut lists: HashMap<u64, Vec<usize>> = HashMap::new();
        let mut rng = Rng(seed * 31 + 1);
        let (mut checked, mut matched, mut resemblance) = (0, 0, 0);
        for (i, sig) in sigs.iter().enumerate() {
            // Ids repeat now and then, so a delete or a `replacing` id covers several documents.
            let id = format!("d{}", i as u64 % 350);
            let replacing = (rng.below(5) == 0).then(|| format!("d{}", rng.below(350)));
            for all in [false, true] {
                let got = pending.pending_matches(&rule, sig, all, replacing.as_deref());
                let want = brute_force(&rule, &mirror, &lists, sig, replacing.as_deref());
                let want = if all {
                    &want[..]
                } else {
                    &want[..want.len().min(1)]
                };
                assert!(same(&got, want), "seed {seed} doc {i} all {all}");
                checked += 1;
                matched += usize::from(!want.is_empty());
                resemblance += want
                    .iter()
                    .filter(|(e, _)| matches!(e, Evidence::Resemblance { .. }))
                    .count();
            }
            if rng.below(10) == 0 {
                let victim = format!("d{}", rng.below(350));
                pending.delete_id(&victim);
                for d in mirror.iter_mut().filter(|d| d.1 == victim) {
                    d.2 = false;
                }
            }
            pending.insert(
                &rule,
                sig,
                PendingDoc {
                    id: Arc::from(id.as_str()),
                    group: None,
                    replaced: Chain::default(),
                },
            );
            mirror.push((sig.clone(), id, true));
            join_lists(&mut lists, &rule, &mirror, i, bound);
        }
        // The corpus exercises what the shortcut skips: matches of both kinds.
        assert!(matched > checked / 4, "seed {seed}: {matched} of {checked}");
        assert!(resemblance > 0, "seed {seed}: no resemblance match");
    }
}

#[test]
fn key_hasher_spreads_keys_that_differ_in_one_bit() {
    // Keys differing only in their tag bits (the top) or only in their lowest bits must land
    // in different buckets: the low bits of the hash pick the bucket.
    let hash = |k: u64| {
        let mut h = KeyHasher::default();
        h.write_u64(k);
        h.finish()
    };
    for bit in 0..64 {
        let (a, b) = (hash(0x1234_5678), hash(0x1234_5678 ^ (1 << bit)));
        assert_ne!(a & 0xffff, b & 0xffff, "bit {bit}");
        assert_ne!(a >> 57, b >> 57, "bit {bit}");
    }
}

/// The order-preserving de-duplication the writer did before, with `Vec::contains`.
fn naive_replaced_and_carried(found: &[Found], id: &str) -> (Vec<String>, Vec<String>) {
    let mut replaced: Vec<String> = Vec::new();
    for f in found {
        if !replaced.iter().any(|r| **r == *f.id) {
            replaced.push(f.id.to_string());
        }
    }
    let mut carried = replaced.clone();
    for f in found {
        for r in f.replaced.iter() {
            if !carried.iter().any(|c| **c == **r) {
                carried.push(r.to_string());
            }
        }
    }
    carried.retain(|r| *r != id);
    (replaced, carried)
}

#[test]
fn replaced_and_carried_equal_the_naive_dedup() {
    let mut rng = Rng(99);
    for case in 0..500 {
        let name = |rng: &mut Rng| format!("d{}", rng.below(12));
        // Chains as the writer keeps them (`chain_of`'s form): each id once, not the owner's.
        let found: Vec<Found> = (0..rng.below(6))
            .map(|_| {
                let id = name(&mut rng);
                let replaced = (0..rng.below(6)).map(|_| name(&mut rng)).collect();
                Found {
                    replaced: chain_of(&id, replaced),
                    id: Arc::from(id),
                    group: None,
                    evidence: Evidence::Simhash { distance: 0 },
                }
            })
            .collect();
        let id = name(&mut rng);
        let (replaced, carried) = replaced_and_carried(&found, &id);
        let carried: Vec<String> = carried.iter().map(|r| r.to_string()).collect();
        assert_eq!(
            (replaced, carried),
            naive_replaced_and_carried(&found, &id),
            "case {case}"
        );
    }
}

#[test]
fn a_chain_read_from_the_index_keeps_each_id_once_without_its_owner() {
    let mut rng = Rng(123);
    for case in 0..500 {
        let name = |rng: &mut Rng| format!("d{}", rng.below(8));
        let owner = name(&mut rng);
        let ids: Vec<String> = (0..rng.below(10)).map(|_| name(&mut rng)).collect();
        let mut want: Vec<String> = Vec::new();
        for r in &ids {
            if *r != owner && !want.contains(r) {
                want.push(r.clone());
            }
        }
        let got: Vec<String> = chain_of(&owner, ids)
            .iter()
            .map(|r| r.to_string())
            .collect();
        assert_eq!(got, want, "case {case}");
    }
}

/// The check reads which bands a candidate shares from the key lists it was found in, unless a
/// list that left holders out comes first. Here band 0's list is full (two holders sharing only
/// band 0 with the query), so a third document sharing every band is listed from band 1 on:
/// its evidence must still name band 0, the first band the two sketches share (what the rule
/// says), not the first list it was found in.
#[test]
fn a_full_band_list_does_not_hide_the_first_shared_band() {
    let rule = MatchRule::default();
    let config = rule.minhash();
    let k = rule.layout().max_distance();
    let words = config.sketch_words();
    let mut rng = Rng(41);
    let query = Signature {
        fingerprint: Fingerprint(0),
        sketch: Sketch {
            words: (0..words).map(|_| rng.next()).collect(),
        },
    };
    // Beyond the simhash radius, each at its own distance.
    let far = |bits: u32| Fingerprint((1u64 << bits) - 1);
    // Flips the lowest bit of band `b`'s key field: the band no longer equal to the query's.
    let without_band = |sketch: &mut Sketch, b: u32| {
        let at = (b * config.key_bits) as usize;
        sketch.words[at / 64] ^= 1 << (at % 64);
    };
    let mut docs = Vec::new();
    for n in 0..2 {
        let mut sketch = query.sketch.clone();
        for b in 1..config.bands {
            without_band(&mut sketch, b);
        }
        docs.push(Signature {
            fingerprint: far(k + 2 + n),
            sketch,
        });
    }
    docs.push(Signature {
        fingerprint: far(k + 1),
        sketch: query.sketch.clone(),
    });
    let mut pending = Pending::new(0, 2);
    for (i, sig) in docs.iter().enumerate() {
        pending.insert(
            &rule,
            sig,
            PendingDoc {
                id: Arc::from(format!("d{i}")),
                group: None,
                replaced: Chain::default(),
            },
        );
    }
    let want: Vec<(Evidence, u32)> = {
        let mut want: Vec<(Evidence, u32)> = docs
            .iter()
            .enumerate()
            .filter_map(|(i, d)| rule.matches(&query, d).map(|e| (e, i as u32)))
            .collect();
        want.sort_by(|a, b| a.0.cmp_strength(&b.0));
        want
    };
    assert_eq!(want.len(), 3, "every document matches by resemblance");
    assert!(want
        .iter()
        .all(|(e, _)| matches!(e, Evidence::Resemblance { band: 0, .. })));
    assert!(same(
        &pending.pending_matches(&rule, &query, true, None),
        &want
    ));
    assert!(same(
        &pending.pending_matches(&rule, &query, false, None),
        &want[..1]
    ));
    // The third document was found through the lists of bands 1.. only.
    pending.collect_candidates(&rule, &query);
    let third = pending.candidates.iter().position(|&i| i == 2);
    let listed = third.map(|c| pending.candidate_bands[c]);
    assert_eq!(listed.map(|l| l & 1), Some(0), "band 0's list left it out");
    assert_eq!(pending.overflowed_bands & 1, 1);
}

#[test]
fn the_first_band_from_lists_is_known_only_before_an_overflowed_list() {
    // Listed in bands 2 and 5; band 3's list overflowed (after the first listed band).
    assert_eq!(first_band_from_lists(0b100100, 0b1000), Some(Some(2)));
    // Band 1's list overflowed: band 1 may be shared too, unseen.
    assert_eq!(first_band_from_lists(0b100100, 0b10), None);
    // Listed nowhere, no list overflowed: no band shared.
    assert_eq!(first_band_from_lists(0, 0), Some(None));
    assert_eq!(first_band_from_lists(0, 1 << 40), None);
    assert_eq!(first_band_from_lists(1, u64::MAX), Some(Some(0)));
}
