//! Leader clustering (the graph's and the streaming join's) against a brute-force oracle: in input order, each live document joins
//! the first earlier leader it matches by the rule (checked pair by pair with
//! `MatchRule::matches_within`), else leads. Over multi-segment indexes with deletes, with
//! fingerprints alone (chains of simhash neighbours) and with signed texts (both branches).

mod common;

use common::{edited_texts_under_chrome, flip_bits, ram_index, unmerged_writer, Rng};
use std::collections::BTreeSet;
use tantivy::{doc, Term};
use tantivy_simhash::{
    BlockLayout, Fingerprint, MatchRule, NearDupLookup, Policy, Signature, Sketch,
};
use tantivy_simhash::{ClusterMode, Clusters, NearDupGraph, PairJoin};

/// A cluster as the oracle sees it: the leader's id and the members' ids in input order.
type Found = BTreeSet<(String, Vec<String>)>;

/// Brute-force leader clustering of `live` (in input order) within `k` by `rule`.
fn brute_leaders(rule: &MatchRule, live: &[(String, Signature)], k: u32) -> Found {
    brute_leaders_by(live, |a, b| rule.matches_within(a, b, k).is_some())
}

/// Brute-force leader clustering of `live` (in input order) by the match `matches`.
fn brute_leaders_by(
    live: &[(String, Signature)],
    matches: impl Fn(&Signature, &Signature) -> bool,
) -> Found {
    let mut leaders: Vec<(usize, Vec<usize>)> = Vec::new();
    for (i, (_, sig)) in live.iter().enumerate() {
        match leaders.iter_mut().find(|(l, _)| matches(&live[*l].1, sig)) {
            Some((_, members)) => members.push(i),
            None => leaders.push((i, vec![i])),
        }
    }
    leaders
        .into_iter()
        .filter(|(_, m)| m.len() >= 2)
        .map(|(l, m)| {
            (
                live[l].0.clone(),
                m.iter().map(|&i| live[i].0.clone()).collect(),
            )
        })
        .collect()
}

/// Brute-force connected components, as sorted id lists.
fn brute_components(
    rule: &MatchRule,
    live: &[(String, Signature)],
    k: u32,
) -> BTreeSet<Vec<String>> {
    brute_components_by(live, |a, b| rule.matches_within(a, b, k).is_some())
}

/// Brute-force connected components by the match `matches`, as sorted id lists.
fn brute_components_by(
    live: &[(String, Signature)],
    matches: impl Fn(&Signature, &Signature) -> bool,
) -> BTreeSet<Vec<String>> {
    let n = live.len();
    let mut label: Vec<usize> = (0..n).collect();
    // Label propagation until stable: quadratic and slow, but independent of union-find.
    loop {
        let mut changed = false;
        for i in 0..n {
            for j in i + 1..n {
                if label[i] != label[j] && matches(&live[i].1, &live[j].1) {
                    let m = label[i].min(label[j]);
                    label[i] = m;
                    label[j] = m;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    let mut out: std::collections::BTreeMap<usize, Vec<String>> = Default::default();
    for (i, (id, _)) in live.iter().enumerate() {
        out.entry(label[i]).or_default().push(id.clone());
    }
    out.into_values()
        .filter(|c| c.len() >= 2)
        .map(|mut c| {
            c.sort();
            c
        })
        .collect()
}

/// Adds `docs` (id, text or fingerprint) in order over several segments, deletes every
/// eleventh, and returns the graph and the live documents in input order with their
/// signatures as the oracle computes them (signing the text with the index's own signer, or
/// the bare fingerprint).
fn build(
    layout: BlockLayout,
    docs: &[(String, Result<String, Fingerprint>)],
) -> (NearDupLookup, MatchRule, Vec<(String, Signature)>) {
    let t = ram_index(layout);
    let rule = *t.index.rule();
    let mut w = unmerged_writer(&t.index, Policy::Off);
    let mut live = Vec::new();
    for (i, (id, content)) in docs.iter().enumerate() {
        let sig = match content {
            Ok(text) => {
                w.add_document(doc!(t.id => id.clone(), t.body => text.clone()))
                    .unwrap();
                t.index.sign(text)
            }
            Err(fp) => {
                w.add_document_with_fingerprint(doc!(t.id => id.clone()), *fp)
                    .unwrap();
                Signature {
                    fingerprint: *fp,
                    sketch: Sketch::empty(rule.minhash()),
                }
            }
        };
        live.push((id.clone(), sig));
        if i % 53 == 52 {
            w.commit().unwrap();
        }
    }
    w.commit().unwrap();
    for (id, _) in docs.iter().step_by(11) {
        w.delete_term(Term::from_field_text(t.id, id));
    }
    w.commit().unwrap();
    let deleted: BTreeSet<&String> = docs.iter().step_by(11).map(|(id, _)| id).collect();
    live.retain(|(id, _)| !deleted.contains(id));
    let searcher = t.index.lookups().unwrap();
    assert!(searcher.searcher().segment_readers().len() > 2);
    (searcher, rule, live)
}

fn graph(s: &NearDupLookup) -> NearDupGraph {
    NearDupGraph::new(s.fields(), s.searcher()).unwrap()
}

fn join(s: &NearDupLookup, k: u32) -> PairJoin {
    PairJoin::with_max_distance(s.fields(), s.searcher(), k).unwrap()
}

fn found_leaders(graph: &NearDupGraph) -> Found {
    leaders_of(&graph.clusters().unwrap())
}

fn leaders_of(clusters: &Clusters) -> Found {
    assert_eq!(clusters.mode(), ClusterMode::Leader);
    assert_eq!(clusters.join_stats().hot_keys, 0);
    clusters
        .iter()
        .map(|c| {
            assert_eq!(c.leader, 0);
            assert_eq!(c.id, c.members[0].id);
            // Members in input order.
            assert!(c.members.windows(2).all(|w| w[0].sequence < w[1].sequence));
            (
                c.id.clone(),
                c.members.iter().map(|m| m.id.clone()).collect(),
            )
        })
        .collect()
}

fn found_components(graph: &NearDupGraph) -> BTreeSet<Vec<String>> {
    components_of(&graph.clusters_by(ClusterMode::Components).unwrap())
}

fn components_of(clusters: &Clusters) -> BTreeSet<Vec<String>> {
    clusters
        .iter()
        .map(|c| c.members.iter().map(|m| m.id.clone()).collect())
        .collect()
}

/// Every member of `found` matches its leader by `rule` within `k` (the count of those that
/// do not: the target is 0).
fn members_failing_leader(
    rule: &MatchRule,
    live: &[(String, Signature)],
    k: u32,
    found: &Found,
) -> usize {
    let sig = |id: &str| &live.iter().find(|(x, _)| x == id).unwrap().1;
    found
        .iter()
        .flat_map(|(leader, members)| members.iter().map(move |m| (leader, m)))
        .filter(|(l, m)| rule.matches_within(sig(l), sig(m), k).is_none())
        .count()
}

/// Chains of simhash neighbours: each document is a few bits from a random earlier one, so
/// components chain far beyond `k` while leaders must not.
fn chained_fingerprints(n: usize, k: u32, seed: u64) -> Vec<(String, Result<String, Fingerprint>)> {
    let mut rng = Rng(seed);
    let mut fps: Vec<Fingerprint> = Vec::new();
    for _ in 0..n {
        let fp = if !fps.is_empty() && rng.below(3) > 0 {
            let base = fps[fps.len() - 1 - rng.below(fps.len().min(6) as u64) as usize];
            let bits = rng.below(u64::from(k) + 1) as u32;
            flip_bits(&mut rng, base, bits)
        } else {
            Fingerprint(rng.next_u64())
        };
        fps.push(fp);
    }
    // Ids not in input order, so that "first added" and "smallest id" differ.
    fps.into_iter()
        .enumerate()
        .map(|(i, fp)| (format!("d{:05}", (i * 7919) % 100_000), Err(fp)))
        .collect()
}

#[test]
fn leader_clusters_equal_brute_force_on_fingerprint_chains() {
    for (layout, seed) in [
        (BlockLayout::default(), 1),
        (BlockLayout::for_distance(6).unwrap(), 2),
    ] {
        let k = layout.max_distance();
        let docs = chained_fingerprints(700, k, seed);
        let (searcher, rule, live) = build(layout, &docs);
        let graph = graph(&searcher);
        let truth = brute_leaders(&rule, &live, k);
        let found = found_leaders(&graph);
        assert_eq!(found, truth, "layout {}", layout.id());
        assert_eq!(members_failing_leader(&rule, &live, k, &found), 0);
        // The streaming join's clusters: the same, without the graph.
        let streamed = join(&searcher, k);
        assert_eq!(leaders_of(&streamed.clusters().unwrap()), truth);
        assert_eq!(
            components_of(&streamed.components().unwrap()),
            brute_components(&rule, &live, k)
        );
        // Not vacuous: components chain, and some of their members do not match the first.
        let components = found_components(&graph);
        assert_eq!(components, brute_components(&rule, &live, k));
        let largest = components.iter().map(Vec::len).max().unwrap();
        let largest_leader = found.iter().map(|(_, m)| m.len()).max().unwrap();
        assert!(largest > largest_leader, "{largest} vs {largest_leader}");
        // A narrower k is the same clustering by the narrowed rule.
        let narrow =
            NearDupGraph::with_max_distance(searcher.fields(), searcher.searcher(), k - 1).unwrap();
        assert_eq!(found_leaders(&narrow), brute_leaders(&rule, &live, k - 1));
        assert_eq!(
            leaders_of(&join(&searcher, k - 1).clusters().unwrap()),
            brute_leaders(&rule, &live, k - 1)
        );
    }
}

/// 500 edited texts under site chrome (seed `seed`), with ids not in input order.
fn signed_texts(seed: u64) -> Vec<(String, Result<String, Fingerprint>)> {
    edited_texts_under_chrome(seed, 500)
        .into_iter()
        .enumerate()
        .map(|(i, t)| (format!("t{:04}", (i * 613) % 10_000), Ok(t)))
        .collect()
}

#[test]
fn leader_clusters_equal_brute_force_on_signed_texts() {
    let docs = signed_texts(7);
    let (searcher, rule, live) = build(BlockLayout::default(), &docs);
    let graph = graph(&searcher);
    let k = rule.layout().max_distance();
    let truth = brute_leaders(&rule, &live, k);
    assert!(truth.len() > 10);
    let found = found_leaders(&graph);
    assert_eq!(found, truth);
    assert_eq!(members_failing_leader(&rule, &live, k, &found), 0);
    assert_eq!(found_components(&graph), brute_components(&rule, &live, k));
    let streamed = join(&searcher, k).clusters().unwrap();
    assert_eq!(leaders_of(&streamed), truth);
}

/// `PairJoin::min_resemblance`: pairs, leader clusters and components equal brute force over
/// the rule's pairs whose sketches estimate at least the floor (a pair with an empty sketch
/// stays), on signed texts (both branches, estimates spread from copies to strangers) and on
/// bare fingerprints (empty sketches: every pair stays).
#[test]
fn min_resemblance_pairs_and_clusters_equal_brute_force() {
    let docs = signed_texts(13);
    let (searcher, rule, live) = build(BlockLayout::default(), &docs);
    let k = rule.layout().max_distance();
    let minhash = *rule.minhash();
    let all: BTreeSet<(String, String)> =
        brute_pairs(&live, |a, b| rule.matches_within(a, b, k).is_some());
    let mut dropped_simhash = 0;
    for min in [0.0f32, 0.5, 0.67, 0.9] {
        let keeps = |a: &Signature, b: &Signature| {
            rule.matches_within(a, b, k).is_some()
                && (a.sketch.is_empty()
                    || b.sketch.is_empty()
                    || a.sketch.resemblance(&b.sketch, &minhash) >= min)
        };
        let join = join(&searcher, k).min_resemblance(min).unwrap();
        let mut pairs = BTreeSet::new();
        let stats = join
            .for_each_id_pair(|p| {
                assert!(pairs.insert((p.a.min(p.b).to_string(), p.a.max(p.b).to_string())));
            })
            .unwrap();
        let truth = brute_pairs(&live, keeps);
        assert_eq!(pairs, truth, "min_resemblance {min}");
        assert_eq!(stats.pairs, truth.len() as u64);
        assert_eq!(
            stats.below_min_resemblance,
            (all.len() - truth.len()) as u64
        );
        dropped_simhash += all
            .difference(&truth)
            .filter(|(a, b)| {
                let sig = |id: &str| &live.iter().find(|(x, _)| x == id).unwrap().1;
                sig(a).fingerprint.distance(sig(b).fingerprint) <= k
            })
            .count();
        assert_eq!(
            leaders_of(&join.clusters().unwrap()),
            brute_leaders_by(&live, keeps)
        );
        assert_eq!(
            components_of(&join.components().unwrap()),
            brute_components_by(&live, keeps)
        );
    }
    // Not vacuous: the floors drop pairs of both branches and keep others.
    assert!(dropped_simhash > 0, "no simhash match was dropped");
    let at_067 = brute_pairs(&live, |a, b| {
        rule.matches_within(a, b, k).is_some() && a.sketch.resemblance(&b.sketch, &minhash) >= 0.67
    });
    assert!(
        !at_067.is_empty() && at_067.len() < all.len(),
        "{} of {}",
        at_067.len(),
        all.len()
    );

    // Bare fingerprints have empty sketches: no estimate, so every pair stays.
    let docs = chained_fingerprints(300, k, 5);
    let (searcher, rule, live) = build(BlockLayout::default(), &docs);
    let strict = join(&searcher, k).min_resemblance(1.0).unwrap();
    let mut n = 0u64;
    let stats = strict.for_each_doc_pair(|_| n += 1).unwrap();
    let truth = brute_pairs(&live, |a, b| rule.matches_within(a, b, k).is_some());
    assert_eq!(n, truth.len() as u64);
    assert!(n > 0);
    assert_eq!(stats.below_min_resemblance, 0);
    assert_eq!(
        leaders_of(&strict.clusters().unwrap()),
        brute_leaders(&rule, &live, k)
    );

    // Out of range: a clear error.
    for bad in [-0.1f32, 1.5, f32::NAN] {
        let e = join(&searcher, k)
            .min_resemblance(bad)
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected a number in 0..=1"), "{e}");
    }
}

/// Every pair of `live` that `matches`, as (smaller id, larger id).
fn brute_pairs(
    live: &[(String, Signature)],
    matches: impl Fn(&Signature, &Signature) -> bool,
) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (i, (a, sa)) in live.iter().enumerate() {
        for (b, sb) in &live[i + 1..] {
            if matches(sa, sb) {
                out.insert((a.min(b).clone(), a.max(b).clone()));
            }
        }
    }
    out
}
