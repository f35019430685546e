//! `DedupWriter` decides Reject / Tag / Replace by the index's match rule: every outcome equals a
//! brute-force oracle that applies `MatchRule::matches` to every earlier live document, across
//! commits, segments (several indexing threads), deletes by id, and with several threads
//! adding at once.

mod common;

use common::{edited_texts, ram_index, Rng};
use std::collections::{BTreeMap, HashMap};
use tantivy::{doc, Term};
use tantivy_simhash::{BlockLayout, Evidence, MatchRule, Outcome, Policy, Signature};

/// A document the oracle holds.
struct Live {
    id: String,
    signature: Signature,
    group: String,
}

/// What the oracle expects of one document.
#[derive(Debug, PartialEq)]
enum Expected {
    Added,
    Duplicate {
        of: String,
        evidence: Evidence,
    },
    Tagged {
        group: String,
        of: String,
        evidence: Evidence,
    },
    Replaced {
        replaced: Vec<String>,
        evidence: Evidence,
    },
}

fn expected_of(outcome: &Outcome) -> Expected {
    match outcome {
        Outcome::Added { .. } | Outcome::Queued => Expected::Added,
        Outcome::Duplicate { of, evidence, .. } => Expected::Duplicate {
            of: of.clone(),
            evidence: *evidence,
        },
        Outcome::Tagged {
            group,
            of,
            evidence,
            ..
        } => Expected::Tagged {
            group: group.clone(),
            of: of.clone(),
            evidence: *evidence,
        },
        Outcome::Replaced {
            replaced, evidence, ..
        } => Expected::Replaced {
            replaced: replaced.clone(),
            evidence: *evidence,
        },
        Outcome::IdTaken { id, .. } => panic!("`{id}`: no id policy is set, so no id is taken"),
    }
}

/// The oracle: the live documents in the order they were added; a new document's matches are
/// every live one the rule matches, strongest evidence first, then the earliest added.
struct Oracle {
    rule: MatchRule,
    policy: Policy,
    live: Vec<Live>,
}

impl Oracle {
    fn add(&mut self, id: &str, signature: &Signature) -> Expected {
        let mut found: Vec<(Evidence, usize)> = self
            .live
            .iter()
            .enumerate()
            .filter_map(|(i, l)| self.rule.matches(signature, &l.signature).map(|e| (e, i)))
            .collect();
        // Stable: equally strong matches stay in the order they were added.
        found.sort_by(|a, b| a.0.cmp_strength(&b.0));
        let live = |id: &str, group: String| Live {
            id: id.to_string(),
            signature: signature.clone(),
            group,
        };
        let Some(&(evidence, best)) = found.first() else {
            self.live.push(live(id, id.to_string()));
            return Expected::Added;
        };
        match self.policy {
            Policy::Reject => Expected::Duplicate {
                of: self.live[best].id.clone(),
                evidence,
            },
            Policy::Tag => {
                let group = self.live[best].group.clone();
                let of = self.live[best].id.clone();
                self.live.push(live(id, group.clone()));
                Expected::Tagged {
                    group,
                    of,
                    evidence,
                }
            }
            Policy::Replace => {
                let replaced: Vec<String> = found
                    .iter()
                    .map(|&(_, i)| self.live[i].id.clone())
                    .collect();
                self.live.retain(|l| !replaced.contains(&l.id));
                self.live.push(live(id, id.to_string()));
                Expected::Replaced { replaced, evidence }
            }
            Policy::Off => unreachable!("the oracle runs the deciding policies"),
        }
    }

    fn delete(&mut self, id: &str) {
        self.live.retain(|l| l.id != id);
    }
}

#[test]
fn every_policy_decides_like_the_rule_oracle_across_commits_segments_and_deletes() {
    let texts = edited_texts(5, 300);
    for policy in [Policy::Reject, Policy::Tag, Policy::Replace] {
        for (threads, commit_every) in [(1, 1000), (3, 23), (2, 7)] {
            let label = format!("{policy:?}, {threads} threads, a commit every {commit_every}");
            let t = ram_index(BlockLayout::default());
            let rule = *t.index.rule();
            let mut signer = rule.signer(t.index.scheme());
            let mut writer = t
                .index
                .writer_with_num_threads(threads, threads * 15_000_000, policy)
                .unwrap();
            writer
                .index_writer()
                .set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
            let mut oracle = Oracle {
                rule,
                policy,
                live: Vec::new(),
            };
            let mut rng = Rng(99);
            let (mut by_resemblance, mut decided) = (0, 0);
            for (i, text) in texts.iter().enumerate() {
                let id = format!("d{i}");
                let signature = signer.sign(text);
                let outcome = writer
                    .add_document(doc!(t.id => id.as_str(), t.body => text.as_str()))
                    .unwrap();
                assert_eq!(
                    outcome.fingerprint(),
                    Some(signature.fingerprint),
                    "{label}: {id}"
                );
                let want = oracle.add(&id, &signature);
                assert_eq!(expected_of(&outcome), want, "{label}: {id}");
                decided += usize::from(want != Expected::Added);
                by_resemblance += usize::from(matches!(
                    outcome.evidence(),
                    Some(Evidence::Resemblance { .. })
                ));
                // Deletes by id, of committed and of pending documents alike.
                if i % 11 == 10 && !oracle.live.is_empty() {
                    let victim = oracle.live[rng.below(oracle.live.len() as u64) as usize]
                        .id
                        .clone();
                    writer.delete_term(Term::from_field_text(t.id, &victim));
                    oracle.delete(&victim);
                }
                if (i + 1) % commit_every == 0 {
                    writer.commit().unwrap();
                }
            }
            writer.commit().unwrap();
            assert!(decided > 30, "{label}: {decided} decisions");
            assert!(
                by_resemblance > 5,
                "{label}: {by_resemblance} by resemblance"
            );
            // The index holds exactly the oracle's live documents, with its groups.
            let stored = common::live_ids_and_groups(&t.index.lookups().unwrap());
            let want: BTreeMap<String, Option<String>> = oracle
                .live
                .iter()
                .map(|l| {
                    (
                        l.id.clone(),
                        (policy == Policy::Tag).then(|| l.group.clone()),
                    )
                })
                .collect();
            assert_eq!(stored, want, "{label}");
        }
    }
}

/// Several threads add edited copies of shared texts at once under Reject: no two stored
/// documents match by the rule, and every rejected document matches the stored document it
/// names, with the evidence it reports.
#[test]
fn reject_with_threads_stores_no_two_documents_the_rule_matches() {
    let texts = edited_texts(17, 400);
    let t = ram_index(BlockLayout::default());
    let rule = *t.index.rule();
    let mut writer = t.index.writer(30_000_000, Policy::Reject).unwrap();
    let threads = 4;
    let mut signatures: HashMap<String, Signature> = HashMap::new();
    let mut rejected: Vec<(String, String, Evidence)> = Vec::new();
    for round in 0..2 {
        let results: Vec<Vec<(String, Signature, Outcome)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|th| {
                    let (writer, t, texts) = (&writer, &t, &texts);
                    scope.spawn(move || {
                        let mut out = Vec::new();
                        for (i, text) in texts.iter().enumerate().skip(th).step_by(threads) {
                            let id = format!("r{round}-{i}");
                            let doc = doc!(t.id => id.as_str(), t.body => text.as_str());
                            let signature = writer.signature(&doc);
                            let outcome = writer
                                .add_document_with_signature(doc, signature.clone())
                                .unwrap();
                            out.push((id, signature, outcome));
                        }
                        out
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (id, signature, outcome) in results.into_iter().flatten() {
            if let Outcome::Duplicate { of, evidence, .. } = outcome {
                rejected.push((id.clone(), of, evidence));
            }
            signatures.insert(id, signature);
        }
        writer.commit().unwrap();
    }
    let searcher = t.index.lookups().unwrap();
    let mut stored: Vec<String> = Vec::new();
    for (ord, seg) in searcher.searcher().segment_readers().iter().enumerate() {
        for doc in seg.doc_ids_alive() {
            stored.push(
                searcher
                    .id_of(tantivy::DocAddress::new(ord as u32, doc))
                    .unwrap()
                    .unwrap(),
            );
        }
    }
    assert_eq!(stored.len() + rejected.len(), 2 * texts.len());
    assert!(rejected.len() > texts.len(), "round 2 repeats round 1");
    for (i, a) in stored.iter().enumerate() {
        for b in &stored[i + 1..] {
            assert_eq!(
                rule.matches(&signatures[a], &signatures[b]),
                None,
                "{a} and {b} are both stored"
            );
        }
    }
    for (id, of, evidence) in &rejected {
        assert!(stored.contains(of), "{id} names {of}, which is not stored");
        assert_eq!(
            rule.matches(&signatures[id], &signatures[of]),
            Some(*evidence),
            "{id} ~ {of}"
        );
    }
}

/// A document added with only a fingerprint is simhash-only: it is stored without a sketch,
/// and a copy of its text (with a full signature) matches it only within k.
#[test]
fn a_fingerprint_only_document_matches_by_simhash_only() {
    let t = ram_index(BlockLayout::default());
    let rule = *t.index.rule();
    let mut signer = rule.signer(t.index.scheme());
    let texts = edited_texts(23, 200);
    // A pair the rule matches by resemblance only (beyond the simhash radius).
    let (a, b) = (0..texts.len())
        .flat_map(|i| (0..i).map(move |j| (j, i)))
        .find(|&(j, i)| {
            matches!(
                rule.matches(&signer.sign(&texts[j]), &signer.sign(&texts[i])),
                Some(Evidence::Resemblance { .. })
            )
        })
        .expect("a resemblance pair");
    let mut writer = t.index.writer(15_000_000, Policy::Reject).unwrap();
    let fp = signer.sign(&texts[a]).fingerprint;
    assert!(writer
        .add_document_with_fingerprint(doc!(t.id => "bare", t.body => texts[a].as_str()), fp)
        .unwrap()
        .is_added());
    // Not matched by resemblance: the bare document has no sketch.
    assert!(writer
        .add_document(doc!(t.id => "full", t.body => texts[b].as_str()))
        .unwrap()
        .is_added());
    // Within k it still matches (the same fingerprint: distance 0).
    let again = writer
        .add_document(doc!(t.id => "copy", t.body => texts[a].as_str()))
        .unwrap();
    assert!(
        matches!(&again, Outcome::Duplicate { of, evidence: Evidence::Simhash { distance: 0 }, .. } if of == "bare"),
        "{again:?}"
    );
    writer.commit().unwrap();
    let searcher = t.index.lookups().unwrap();
    let stored = searcher.signature_of_id("bare").unwrap().unwrap();
    assert!(stored.sketch.is_empty());
}
