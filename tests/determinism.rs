//! The same documents in the same order give the same index: tag groups do not depend on the
//! number of indexing threads or on how tantivy splits segments (checked against a
//! single-threaded brute-force oracle), and `Policy::Replace` records every id it replaced.

mod common;

use common::{flip_bits, ram_index, Rng};
use std::collections::HashMap;
use tantivy::doc;
use tantivy_simhash::{
    BlockLayout, Evidence, Fingerprint, MatchRule, NearDupLookup, Outcome, Policy, Signature,
    Sketch,
};

/// Clusters of fingerprints whose members are all at distance 2 from each other (each is the
/// cluster's centre with one bit flipped), interleaved: every member after the first has
/// several equally near earlier members, spread over many commits and segments.
fn tied_clusters(clusters: usize, members: usize) -> Vec<(String, Fingerprint)> {
    let mut rng = Rng(7);
    let centres: Vec<Fingerprint> = (0..clusters).map(|_| Fingerprint(rng.next_u64())).collect();
    let mut bits: Vec<Vec<u32>> = vec![Vec::new(); clusters];
    let mut docs = Vec::new();
    for round in 0..members {
        for (c, centre) in centres.iter().enumerate() {
            let bit = loop {
                let b = rng.below(64) as u32;
                if !bits[c].contains(&b) {
                    break b;
                }
            };
            bits[c].push(bit);
            docs.push((format!("c{c}-m{round}"), Fingerprint(centre.0 ^ (1 << bit))));
        }
    }
    // A few loners and exact copies between them, so groups of one and distance 0 occur too.
    for i in 0..20 {
        let fp = Fingerprint(rng.next_u64());
        docs.push((format!("loner{i}"), fp));
        if i % 4 == 0 {
            docs.push((format!("copy{i}"), flip_bits(&mut rng, fp, 0)));
        }
    }
    docs
}

/// A fingerprint-only signature (what `add_document_with_fingerprint` stores: an empty sketch).
fn bare(rule: &MatchRule, fp: Fingerprint) -> Signature {
    Signature {
        fingerprint: fp,
        sketch: Sketch::empty(rule.minhash()),
    }
}

/// The oracle of the match rule: in input order, each document's group is that of the earlier
/// document with the strongest evidence (`MatchRule::matches`, ranked by
/// `Evidence::cmp_strength`), the earliest of equally strong ones; its own id when none
/// matches.
fn oracle_groups(
    docs: &[(String, Signature)],
    rule: &MatchRule,
) -> Vec<(String, Option<(String, Evidence)>)> {
    let mut groups: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for (i, (id, sig)) in docs.iter().enumerate() {
        let mut best: Option<(usize, Evidence)> = None;
        for (j, (_, other)) in docs[..i].iter().enumerate() {
            if let Some(e) = rule.matches(sig, other) {
                if best.is_none_or(|(_, b)| e.cmp_strength(&b).is_lt()) {
                    best = Some((j, e));
                }
            }
        }
        match best {
            Some((j, e)) => {
                groups.push(groups[j].clone());
                out.push((groups[j].clone(), Some((docs[j].0.clone(), e))));
            }
            None => {
                groups.push(id.clone());
                out.push((id.clone(), None));
            }
        }
    }
    out
}

/// Every live document's (id, group).
fn stored_groups(searcher: &NearDupLookup) -> HashMap<String, String> {
    common::live_ids_and_groups(searcher)
        .into_iter()
        .map(|(id, group)| {
            let group = group.unwrap_or_else(|| panic!("{id} has no group"));
            (id, group)
        })
        .collect()
}

#[test]
fn tag_groups_follow_input_order_whatever_the_threads() {
    let docs = tied_clusters(12, 10);
    let k = 3;
    let rule = MatchRule::default();
    let signed: Vec<(String, Signature)> = docs
        .iter()
        .map(|(id, fp)| (id.clone(), bare(&rule, *fp)))
        .collect();
    let oracle = oracle_groups(&signed, &rule);
    let ties = (0..docs.len())
        .filter(|&i| {
            let near: Vec<u32> = docs[..i]
                .iter()
                .map(|(_, o)| docs[i].1.distance(*o))
                .filter(|&d| d <= k)
                .collect();
            near.iter()
                .min()
                .is_some_and(|m| near.iter().filter(|&d| d == m).count() >= 2)
        })
        .count();
    assert!(ties > 50, "the input must be full of ties ({ties})");
    for threads in [1, 2, 3, 4] {
        for commit_every in [5, 17, 1000] {
            let t = ram_index(BlockLayout::default());
            let mut writer = t
                .index
                .writer_with_num_threads(threads, threads * 15_000_000, Policy::Tag)
                .unwrap();
            let mut outcomes = Vec::new();
            for (i, (id, fp)) in docs.iter().enumerate() {
                let outcome = writer
                    .add_document_with_fingerprint(doc!(t.id => id.as_str()), *fp)
                    .unwrap();
                outcomes.push(outcome);
                if (i + 1) % commit_every == 0 {
                    writer.commit().unwrap();
                }
            }
            writer.commit().unwrap();
            let label = format!("{threads} threads, a commit every {commit_every}");
            for ((id, _), (outcome, (group, best))) in docs.iter().zip(outcomes.iter().zip(&oracle))
            {
                match (outcome, best) {
                    (Outcome::Added { .. }, None) => {}
                    (
                        Outcome::Tagged {
                            group: g,
                            of,
                            evidence,
                            ..
                        },
                        Some((best_id, best_evidence)),
                    ) => {
                        assert_eq!(
                            (g, of, evidence),
                            (group, best_id, best_evidence),
                            "{label}: {id}"
                        );
                    }
                    other => panic!("{label}: {id}: {other:?}"),
                }
            }
            let stored = stored_groups(&t.index.lookups().unwrap());
            assert_eq!(stored.len(), docs.len(), "{label}");
            for ((id, _), (group, _)) in docs.iter().zip(&oracle) {
                assert_eq!(&stored[id], group, "{label}: {id}");
            }
        }
    }
}

#[test]
fn add_documents_in_parallel_batches_decides_in_input_order() {
    // Fingerprinted in parallel (rayon), checked and inserted in order: the same groups as one
    // document at a time.
    let t = ram_index(BlockLayout::default());
    let texts: Vec<String> = (0..60)
        .map(|i| {
            format!(
                "a shared paragraph about lighthouses and the sea, with its keepers and storms, \
                 version {}",
                i % 3
            )
        })
        .collect();
    let mut writer = t
        .index
        .writer_with_num_threads(3, 45_000_000, Policy::Tag)
        .unwrap();
    let mut all = Vec::new();
    for (chunk_no, chunk) in texts.chunks(16).enumerate() {
        let docs = chunk
            .iter()
            .enumerate()
            .map(|(i, text)| doc!(t.id => format!("d{}", chunk_no * 16 + i), t.body => text.as_str()))
            .collect();
        all.extend(writer.add_documents(docs).unwrap());
        writer.commit().unwrap();
    }
    let rule = t.index.rule();
    let mut signer = rule.signer(t.index.scheme());
    let sigs: Vec<(String, Signature)> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| (format!("d{i}"), signer.sign(text)))
        .collect();
    let oracle = oracle_groups(&sigs, rule);
    for (i, (outcome, (group, _))) in all.iter().zip(&oracle).enumerate() {
        let got = match outcome {
            Outcome::Added { .. } => format!("d{i}"),
            Outcome::Tagged { group, .. } => group.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(&got, group, "d{i}");
    }
}

#[test]
fn replace_records_every_id_of_a_chain() {
    // a ~ b ~ c within 3 in turn, a and c farther apart: c replaces b, which had replaced a.
    let a = Fingerprint(0x0123_4567_89ab_cdef);
    let b = Fingerprint(a.0 ^ 0b11);
    let c = Fingerprint(b.0 ^ 0b1100);
    assert!(a.distance(c) > 3);
    for commit_between in [false, true] {
        let t = ram_index(BlockLayout::default());
        let mut writer = t.index.writer(15_000_000, Policy::Replace).unwrap();
        let mut outcomes = Vec::new();
        for (id, fp) in [("a", a), ("b", b), ("c", c), ("far", Fingerprint(!a.0))] {
            outcomes.push(
                writer
                    .add_document_with_fingerprint(doc!(t.id => id), fp)
                    .unwrap(),
            );
            if commit_between {
                writer.commit().unwrap();
            }
        }
        writer.commit().unwrap();
        assert!(matches!(&outcomes[2], Outcome::Replaced { replaced, .. } if replaced == &["b"]));
        let searcher = t.index.lookups().unwrap();
        assert_eq!(searcher.searcher().num_docs(), 2);
        for (id, replaced) in [("a", true), ("b", true), ("c", false), ("far", false)] {
            assert_eq!(
                searcher.is_replaced(id).unwrap(),
                replaced,
                "{id}, commits between: {commit_between}"
            );
        }
    }
}

#[test]
fn rewriting_groups_keeps_the_input_order_and_the_replaced_ids() {
    // c replaces b (which replaced a); c2 copies c, e copies d, both added without groups, so
    // the batch job rewrites all four into two clusters.
    let a = Fingerprint(0x0123_4567_89ab_cdef);
    let b = Fingerprint(a.0 ^ 0b11);
    let c = Fingerprint(b.0 ^ 0b1100);
    let d = Fingerprint(!a.0);
    let t = ram_index(BlockLayout::default());
    let mut writer = t.index.writer(15_000_000, Policy::Replace).unwrap();
    for (id, fp) in [("a", a), ("b", b), ("c", c)] {
        writer
            .add_document_with_fingerprint(doc!(t.id => id), fp)
            .unwrap();
    }
    writer.set_policy(Policy::Off).unwrap();
    for (id, fp) in [("c2", c), ("d", d), ("e", d)] {
        writer
            .add_document_with_fingerprint(doc!(t.id => id), fp)
            .unwrap();
    }
    writer.commit().unwrap();
    let sequences = |searcher: &NearDupLookup| -> HashMap<String, u64> {
        let mut out = HashMap::new();
        for (ord, seg) in searcher.searcher().segment_readers().iter().enumerate() {
            for doc in 0..seg.max_doc() {
                if !seg.is_deleted(doc) {
                    let id = searcher
                        .id_of(tantivy::DocAddress::new(ord as u32, doc))
                        .unwrap()
                        .unwrap();
                    out.insert(
                        id,
                        searcher
                            .sequence_of(tantivy::DocAddress::new(ord as u32, doc))
                            .unwrap(),
                    );
                }
            }
        }
        out
    };
    let before = sequences(&t.index.lookups().unwrap());
    assert_eq!(before.len(), 4);
    assert!(before["c"] < before["d"] && before["d"] < before["e"]);

    let searcher = t.index.lookups().unwrap();
    let graph = tantivy_simhash::NearDupGraph::new(searcher.fields(), searcher.searcher()).unwrap();
    let written = writer
        .retag(&graph.clusters().unwrap(), |id, _| Ok(doc!(t.id => id)))
        .unwrap();
    assert_eq!(written.rewritten, 4, "{written:?}");
    writer.commit().unwrap();
    let after = t.index.lookups().unwrap();
    assert_eq!(sequences(&after), before);
    assert!(after.is_replaced("a").unwrap() && after.is_replaced("b").unwrap());
}
