//! [`IdPolicy`] against a brute-force model: random sequences of adds (one by one and in
//! batches), deletes, commits and rollbacks over a few repeated ids, then phases of 1-4 threads
//! adding the same ids at once. After every commit the index must hold exactly what the model
//! holds, and every outcome must be the model's.

mod common;

use common::Rng;
use std::collections::HashMap;
use std::sync::Mutex;
use tantivy::schema::Schema;
use tantivy::{doc, DocAddress, Index, TantivyDocument, Term};
use tantivy_simhash::{
    BlockLayout, DedupWriter, Error, Fingerprint, IdPolicy, NearDupIndex, NearDupLookup, Outcome,
    Policy,
};

const IDS: u64 = 5;

struct Fixture {
    index: NearDupIndex,
    id: tantivy::schema::Field,
    body: tantivy::schema::Field,
    /// Texts by number; each add uses a fresh one, so the index shows which add survived.
    texts: Vec<String>,
    /// Text number by fingerprint.
    by_fingerprint: HashMap<Fingerprint, usize>,
}

impl Fixture {
    fn new(texts: usize) -> Fixture {
        let config = common::config(BlockLayout::default());
        let (schema, id, body, _): (Schema, _, _, _) = common::schema(&config);
        let index = NearDupIndex::create(Index::create_in_ram(schema), config).unwrap();
        let mut rng = Rng(7);
        let texts: Vec<String> = (0..texts)
            .map(|_| {
                (0..40)
                    .map(|_| format!("w{}", rng.below(5000)))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        let scheme = index.scheme();
        let by_fingerprint: HashMap<Fingerprint, usize> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| (scheme.fingerprint(t), i))
            .collect();
        // Precondition: the index tells the texts apart.
        assert_eq!(by_fingerprint.len(), texts.len());
        Fixture {
            index,
            id,
            body,
            texts,
            by_fingerprint,
        }
    }

    fn doc(&self, id: &str, text: usize) -> TantivyDocument {
        doc!(self.id => id, self.body => self.texts[text].as_str())
    }

    /// What the index holds: (id, text number) of every live document, sorted.
    fn contents(&self) -> Vec<(String, usize)> {
        let searcher = self.index.searcher().unwrap();
        let lookups = NearDupLookup::new(self.index.fields(), &searcher).unwrap();
        let mut out = Vec::new();
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            for doc in 0..segment.max_doc() {
                if segment.is_deleted(doc) {
                    continue;
                }
                let address = DocAddress::new(ord as u32, doc);
                let id = lookups.id_of(address).unwrap().unwrap();
                let fp = lookups.signature_at(address).unwrap().fingerprint;
                out.push((id, self.by_fingerprint[&fp]));
            }
        }
        out.sort();
        out
    }
}

/// The brute-force model: the live (id, text) pairs, committed and as the writer sees them.
#[derive(Clone, Default)]
struct Model {
    committed: Vec<(String, usize)>,
    working: Vec<(String, usize)>,
    ids_replaced: u64,
}

/// What the model expects of one add: the outcome (or the taken id for `Report`).
#[derive(Debug, PartialEq)]
enum Expected {
    Added(usize),
    Taken(String),
    Failed(String),
}

impl Model {
    fn taken(&self, id: &str) -> bool {
        self.working.iter().any(|(i, _)| i == id)
    }

    fn add(&mut self, policy: IdPolicy, id: &str, text: usize) -> Expected {
        let taken = self.taken(id);
        match (policy, taken) {
            (IdPolicy::KeepFirst, true) => return Expected::Taken(id.to_string()),
            (IdPolicy::Report, true) => return Expected::Failed(id.to_string()),
            (IdPolicy::Replace, true) => {
                self.working.retain(|(i, _)| i != id);
                self.ids_replaced += 1;
            }
            _ => {}
        }
        self.working.push((id.to_string(), text));
        Expected::Added(text)
    }

    fn delete(&mut self, id: &str) {
        self.working.retain(|(i, _)| i != id);
    }

    fn commit(&mut self) {
        self.working.sort();
        self.committed = self.working.clone();
    }

    fn rollback(&mut self) {
        self.working = self.committed.clone();
    }
}

fn observed(fx: &Fixture, result: Result<Outcome, Error>) -> Expected {
    match result {
        Ok(Outcome::Added { fingerprint }) => Expected::Added(fx.by_fingerprint[&fingerprint]),
        Ok(Outcome::IdTaken {
            id,
            replaced: false,
        }) => Expected::Taken(id),
        Err(Error::IdTaken {
            id,
            replaced: false,
        }) => Expected::Failed(id),
        other => panic!("unexpected {other:?}"),
    }
}

fn writer(fx: &Fixture, policy: Policy, id_policy: IdPolicy) -> DedupWriter {
    fx.index
        .writer_with_num_threads(1, 15_000_000, policy)
        .unwrap()
        .with_id_policy(id_policy)
}

/// One thread: every outcome and every committed state equals the model's.
#[test]
fn one_thread_matches_the_model() {
    let fx = Fixture::new(300);
    for id_policy in IdPolicy::ALL {
        // Policy::Reject runs the near-duplicate check too (the texts are far apart, so it
        // never fires): ids must be handled the same with and without it.
        for policy in [Policy::Off, Policy::Reject] {
            for seed in 0..6u64 {
                let label = format!("{id_policy:?} {policy:?} seed {seed}");
                let mut w = writer(&fx, policy, id_policy);
                // Start from an empty index each time.
                w.index_writer().delete_all_documents().unwrap();
                w.commit().unwrap();
                let mut model = Model::default();
                let mut next_text = 0;
                let mut rng = Rng(seed * 31 + 1);
                for step in 0..60 {
                    let roll = rng.below(100);
                    let id = format!("id{}", rng.below(IDS));
                    if roll < 55 {
                        let text = next_text;
                        next_text += 1;
                        let want = model.add(id_policy, &id, text);
                        let got = observed(&fx, w.add_document(fx.doc(&id, text)));
                        assert_eq!(got, want, "{label} step {step}: add {id}");
                    } else if roll < 70 {
                        // A batch: in order, stopping at the first error.
                        let n = 2 + rng.below(3) as usize;
                        let adds: Vec<(String, usize)> = (0..n)
                            .map(|i| {
                                let id = format!("id{}", rng.below(IDS));
                                (id, next_text + i)
                            })
                            .collect();
                        next_text += n;
                        let mut want = Vec::new();
                        let mut failed = None;
                        for (id, text) in &adds {
                            match model.add(id_policy, id, *text) {
                                Expected::Failed(id) => {
                                    failed = Some(id);
                                    break;
                                }
                                e => want.push(e),
                            }
                        }
                        let docs = adds.iter().map(|(id, t)| fx.doc(id, *t)).collect();
                        match (w.add_documents(docs), failed) {
                            (Ok(outcomes), None) => {
                                let got: Vec<Expected> =
                                    outcomes.into_iter().map(|o| observed(&fx, Ok(o))).collect();
                                assert_eq!(got, want, "{label} step {step}: batch");
                            }
                            (Err(e), Some(id)) => {
                                assert_eq!(observed(&fx, Err(e)), Expected::Failed(id))
                            }
                            (got, want) => panic!("{label} step {step}: {got:?}, want {want:?}"),
                        }
                    } else if roll < 78 {
                        model.delete(&id);
                        w.delete_term(Term::from_field_text(fx.id, &id));
                    } else if roll < 92 {
                        model.commit();
                        w.commit().unwrap();
                        assert_eq!(fx.contents(), model.committed, "{label} step {step}");
                    } else {
                        model.rollback();
                        w.rollback().unwrap();
                    }
                    assert_eq!(w.ids_replaced(), model.ids_replaced, "{label} step {step}");
                }
                model.commit();
                w.commit().unwrap();
                assert_eq!(fx.contents(), model.committed, "{label} at the end");
                if id_policy != IdPolicy::Off {
                    // Every id at most once.
                    let mut ids: Vec<&String> = model.committed.iter().map(|(i, _)| i).collect();
                    ids.dedup();
                    assert_eq!(ids.len(), model.committed.len(), "{label}");
                }
            }
        }
    }
}

/// Several threads add the same ids at once, in phases that end with a commit or a rollback.
/// Which add of an id wins depends on the scheduler; the rule is that exactly one does, the
/// first to take the writer's lock under `KeepFirst`/`Report` and the last under `Replace`, so
/// within one thread it is the first (the last) of its adds of that id. The model then takes
/// the winners the index shows and checks everything else exactly.
#[test]
fn threads_adding_one_id_at_once_have_one_winner() {
    let fx = Fixture::new(300);
    for id_policy in IdPolicy::ALL {
        for threads in 1..=4usize {
            let label = format!("{id_policy:?} {threads} threads");
            let mut w = writer(&fx, Policy::Reject, id_policy);
            w.index_writer().delete_all_documents().unwrap();
            w.commit().unwrap();
            let mut model = Model::default();
            let mut next_text = 0;
            let mut rng = Rng(threads as u64 * 101);
            for phase in 0..6 {
                // Each thread's adds: (id, text), in its order.
                let plans: Vec<Vec<(String, usize)>> = (0..threads)
                    .map(|_| {
                        (0..12)
                            .map(|_| {
                                next_text += 1;
                                (format!("id{}", rng.below(IDS)), next_text - 1)
                            })
                            .collect()
                    })
                    .collect();
                let results: Mutex<Vec<(String, usize, Expected)>> = Mutex::new(Vec::new());
                let replaced_before = w.ids_replaced();
                std::thread::scope(|s| {
                    for plan in &plans {
                        let (w, fx, results) = (&w, &fx, &results);
                        s.spawn(move || {
                            for (id, text) in plan {
                                let got = observed(fx, w.add_document(fx.doc(id, *text)));
                                results.lock().unwrap().push((id.clone(), *text, got));
                            }
                        });
                    }
                });
                let results = results.into_inner().unwrap();
                let commit = rng.below(4) != 0;
                if commit {
                    w.commit().unwrap();
                }
                let contents = fx.contents();
                // Replay the phase in the model: the winners per id as the index shows them
                // (or, after a rollback, as the outcomes say).
                let mut adds_per_id: HashMap<&str, Vec<usize>> = HashMap::new();
                for (id, text, _) in &results {
                    adds_per_id.entry(id).or_default().push(*text);
                }
                let mut fresh_ids = 0;
                for (id, texts) in &adds_per_id {
                    let taken_before = model.taken(id);
                    fresh_ids += usize::from(!taken_before);
                    let outcomes: Vec<&Expected> = results
                        .iter()
                        .filter(|(i, _, _)| i == id)
                        .map(|(_, _, e)| e)
                        .collect();
                    let added: Vec<usize> = outcomes
                        .iter()
                        .filter_map(|e| match e {
                            Expected::Added(t) => Some(*t),
                            _ => None,
                        })
                        .collect();
                    let first_in_a_thread = |t: usize| {
                        plans
                            .iter()
                            .any(|p| p.iter().find(|(i, _)| i == id).map(|x| x.1) == Some(t))
                    };
                    let last_in_a_thread = |t: usize| {
                        plans
                            .iter()
                            .any(|p| p.iter().rev().find(|(i, _)| i == id).map(|x| x.1) == Some(t))
                    };
                    match id_policy {
                        IdPolicy::Off => {
                            assert_eq!(added.len(), texts.len(), "{label} phase {phase}");
                            for t in texts {
                                model.working.push((id.to_string(), *t));
                            }
                        }
                        IdPolicy::KeepFirst | IdPolicy::Report => {
                            let want_added = usize::from(!taken_before);
                            assert_eq!(added.len(), want_added, "{label} phase {phase} {id}");
                            let refused = outcomes
                                .iter()
                                .filter(|e| matches!(e, Expected::Taken(_) | Expected::Failed(_)))
                                .count();
                            assert_eq!(refused, texts.len() - want_added, "{label} {id}");
                            if let Some(&winner) = added.first() {
                                assert!(first_in_a_thread(winner), "{label} phase {phase} {id}");
                                model.working.push((id.to_string(), winner));
                            }
                        }
                        IdPolicy::Replace => {
                            assert_eq!(added.len(), texts.len(), "{label} phase {phase}");
                            model.working.retain(|(i, _)| i != id);
                            if commit {
                                let survivors: Vec<usize> = contents
                                    .iter()
                                    .filter(|(i, _)| i == id)
                                    .map(|(_, t)| *t)
                                    .collect();
                                assert_eq!(survivors.len(), 1, "{label} phase {phase} {id}");
                                assert!(texts.contains(&survivors[0]), "{label} {id}");
                                assert!(last_in_a_thread(survivors[0]), "{label} {id}");
                                model.working.push((id.to_string(), survivors[0]));
                            }
                        }
                    }
                }
                if id_policy == IdPolicy::Replace {
                    let adds = results.len() as u64;
                    assert_eq!(
                        w.ids_replaced() - replaced_before,
                        adds - fresh_ids as u64,
                        "{label} phase {phase}"
                    );
                }
                if commit {
                    model.commit();
                    assert_eq!(contents, model.committed, "{label} phase {phase}");
                } else {
                    w.rollback().unwrap();
                    model.rollback();
                    assert_eq!(fx.contents(), model.committed, "{label} phase {phase}");
                }
            }
        }
    }
}

/// `IdPolicy::Replace` with a near-duplicate policy: the new version is judged against the
/// other documents, never against the version it replaces.
#[test]
fn replace_by_id_does_not_match_the_old_version() {
    let fx = Fixture::new(3);
    let mut w = writer(&fx, Policy::Reject, IdPolicy::Replace);
    let page = fx.texts[0].clone();
    let edited = format!("{page} one more word");
    assert!(w.add_document(fx.doc("a", 1)).unwrap().is_added());
    assert!(w
        .add_document(doc!(fx.id => "b", fx.body => page.as_str()))
        .unwrap()
        .is_added());
    w.commit().unwrap();
    // An edit of "b" replaces "b" although it is a near-duplicate of it.
    let o = w
        .add_document(doc!(fx.id => "b", fx.body => edited.as_str()))
        .unwrap();
    assert!(matches!(o, Outcome::Added { .. }), "{o:?}");
    // A new version of "a" that duplicates "b" is rejected, and the old "a" stays.
    let o = w
        .add_document(doc!(fx.id => "a", fx.body => page.as_str()))
        .unwrap();
    assert!(
        matches!(o, Outcome::Duplicate { ref of, .. } if of == "b"),
        "{o:?}"
    );
    w.commit().unwrap();
    let searcher = fx.index.lookups().unwrap();
    assert_eq!(searcher.searcher().num_docs(), 2);
    let a = searcher.fingerprint_of_id("a").unwrap();
    assert_eq!(a, Some(fx.index.scheme().fingerprint(&fx.texts[1])));
    let b = searcher.fingerprint_of_id("b").unwrap();
    assert_eq!(b, Some(fx.index.scheme().fingerprint(&edited)));
    assert_eq!(w.ids_replaced(), 1);
}

/// `IdPolicy::KeepFirst` with `Policy::Replace`: an id a newer near-duplicate replaced stays
/// taken (uncommitted and committed), until the document that replaced it is deleted.
#[test]
fn keep_first_skips_ids_a_near_duplicate_replaced() {
    let fx = Fixture::new(3);
    let mut w = writer(&fx, Policy::Replace, IdPolicy::KeepFirst);
    let page = fx.texts[0].clone();
    let a = doc!(fx.id => "a", fx.body => page.as_str());
    assert!(w.add_document(a.clone()).unwrap().is_added());
    let o = w
        .add_document(doc!(fx.id => "b", fx.body => page.as_str()))
        .unwrap();
    assert!(matches!(o, Outcome::Replaced { ref replaced, .. } if replaced == &["a"]));
    let taken = Outcome::IdTaken {
        id: "a".into(),
        replaced: true,
    };
    assert_eq!(w.add_document(a.clone()).unwrap(), taken);
    w.commit().unwrap();
    assert_eq!(w.add_document(a.clone()).unwrap(), taken);
    // Once "b" is deleted, "a" is free again: before the commit and after it.
    w.delete_term(Term::from_field_text(fx.id, "b"));
    assert!(w.add_document(a.clone()).unwrap().is_added());
    assert_eq!(
        w.add_document(a.clone()).unwrap(),
        Outcome::IdTaken {
            id: "a".into(),
            replaced: false
        }
    );
    w.rollback().unwrap();
    w.delete_term(Term::from_field_text(fx.id, "b"));
    w.commit().unwrap();
    assert!(w.add_document(a).unwrap().is_added());
}

/// `IdPolicy::Report` fails with the id, and writes nothing.
#[test]
fn report_fails_and_writes_nothing() {
    let fx = Fixture::new(2);
    let mut w = writer(&fx, Policy::Off, IdPolicy::Report);
    assert!(w.add_document(fx.doc("a", 0)).unwrap().is_added());
    let err = w.add_document(fx.doc("a", 1)).unwrap_err();
    assert!(matches!(err, Error::IdTaken { ref id, replaced: false } if id == "a"));
    let message = err.to_string();
    assert!(
        message.contains("`a`") && message.contains("replace"),
        "{message}"
    );
    w.commit().unwrap();
    assert_eq!(fx.contents(), vec![("a".to_string(), 0)]);
}

#[test]
fn names_round_trip() {
    for p in IdPolicy::ALL {
        assert_eq!(IdPolicy::from_name(p.name()), Some(p));
        assert_eq!(IdPolicy::from_name(&p.name().to_uppercase()), Some(p));
    }
    assert_eq!(IdPolicy::from_name("first"), None);
    assert_eq!(IdPolicy::default(), IdPolicy::Off);
}
