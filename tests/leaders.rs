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
    let mut leaders: Vec<(usize, Vec<usize>)> = Vec::new();
    for (i, (_, sig)) in live.iter().enumerate() {
        match leaders
            .iter_mut()
            .find(|(l, _)| rule.matches_within(&live[*l].1, sig, k).is_some())
        {
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
    let n = live.len();
    let mut label: Vec<usize> = (0..n).collect();
    // Label propagation until stable: quadratic and slow, but independent of union-find.
    loop {
        let mut changed = false;
        for i in 0..n {
            for j in i + 1..n {
                if label[i] != label[j] && rule.matches_within(&live[i].1, &live[j].1, k).is_some()
                {
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

#[test]
fn leader_clusters_equal_brute_force_on_signed_texts() {
    let texts = edited_texts_under_chrome(7, 500);
    let docs: Vec<_> = texts
        .into_iter()
        .enumerate()
        .map(|(i, t)| (format!("t{:04}", (i * 613) % 10_000), Ok(t)))
        .collect();
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
