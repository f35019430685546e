//! The store's search and `similar` (what `neardup search` / `similar` and Python's
//! `Index.search` / `similar` run), checked against brute force over the stored signatures:
//! tantivy's own top documents without collapse, the match rule between every leader and its
//! members, the order of addition for leader choices, and every pair within k for `similar`.

mod common;

use std::collections::{BTreeSet, HashMap};
use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy_simhash::app::{
    self, Collapse, LeaderChoice, Requested, Search, SearchHit, SearchSettings, SimilarTo, Store,
};
use tantivy_simhash::{Error, Policy, Signature};

const DOCS: usize = 240;

/// A store of edited copies (every document kept), ids `d0`... in the order added, hosts
/// `h0`..`h2`; and each id's stored signature.
fn store_of_copies(dir: &std::path::Path) -> (Store, HashMap<String, Signature>) {
    let req = Requested {
        policy: Some(Policy::Off),
        ..Requested::default()
    };
    let (store, _) = app::open_or_create(&dir.join("idx"), &req).unwrap();
    let mut writer = store.index.writer(50 << 20, Policy::Off).unwrap();
    for (i, text) in common::edited_texts(7, DOCS).iter().enumerate() {
        let doc = store
            .fields
            .document(&format!("d{i}"), "", text, &format!("h{}", i % 3));
        writer.add_document(doc).unwrap();
    }
    writer.commit().unwrap();
    let lookups = store.index.lookups().unwrap();
    let signatures = (0..DOCS)
        .map(|i| {
            let id = format!("d{i}");
            let s = lookups.signature_of_id(&id).unwrap().unwrap();
            (id, s)
        })
        .collect();
    (store, signatures)
}

/// A word of many documents.
const QUERY: &str = "page";

fn number(id: &str) -> usize {
    id[1..].parse().unwrap()
}

fn run(store: &Store, settings: SearchSettings) -> Vec<SearchHit> {
    Search::new(store, settings)
        .unwrap()
        .run(store, QUERY)
        .unwrap()
}

#[test]
fn without_collapse_the_results_are_tantivys_top_documents() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = store_of_copies(dir.path());
    let settings = SearchSettings {
        collapse: Collapse::Off,
        ..SearchSettings::new(12)
    };
    let hits = run(&store, settings);
    let searcher = store.index.searcher().unwrap();
    let f = store.fields;
    let query = QueryParser::for_index(store.index.index(), vec![f.title, f.text])
        .parse_query(QUERY)
        .unwrap();
    let top = searcher
        .search(&query, &TopDocs::with_limit(12).order_by_score())
        .unwrap();
    assert_eq!(hits.len(), 12);
    for (hit, (score, address)) in hits.iter().zip(&top) {
        assert_eq!((hit.score, hit.address), (*score, *address));
        assert_eq!(hit.doc, store.load_doc(&searcher, *address).unwrap());
        assert_eq!(
            (hit.group_size, hit.members.len(), hit.moved),
            (1, 0, false)
        );
    }
}

#[test]
fn collapsed_groups_hold_what_the_rule_matches_with_their_leader() {
    let dir = tempfile::tempdir().unwrap();
    let (store, sigs) = store_of_copies(dir.path());
    let rule = store.index.rule();
    let hits = run(&store, SearchSettings::new(8));
    assert_eq!(hits.len(), 8);
    assert!(
        hits.iter().any(|h| !h.members.is_empty()),
        "no group folded"
    );
    for (i, hit) in hits.iter().enumerate() {
        assert_eq!(hit.rank, i + 1);
        let leader = &sigs[&hit.doc.id];
        assert!(hit.group_size > hit.members.len() && hit.group_size_exact);
        for m in &hit.members {
            let e = rule
                .matches(leader, &sigs[&m.id])
                .expect("a member the rule matches");
            assert_eq!(m.distance, Some(e.distance()), "{} in {}", m.id, hit.doc.id);
        }
        // A later leader matching an earlier one would have been folded into it.
        for earlier in &hits[..i] {
            assert!(rule.matches(&sigs[&earlier.doc.id], leader).is_none());
        }
    }
}

#[test]
fn leader_choices_pick_by_the_order_of_addition_and_derank_moves_the_members_behind() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = store_of_copies(dir.path());
    for choice in [LeaderChoice::Newest, LeaderChoice::Oldest] {
        let settings = SearchSettings {
            leader: Some(choice),
            ..SearchSettings::new(6)
        };
        let groups = run(&store, settings.clone());
        for g in &groups {
            let leader = number(&g.doc.id);
            for m in &g.members {
                match choice {
                    LeaderChoice::Newest => assert!(number(&m.id) < leader),
                    LeaderChoice::Oldest => assert!(number(&m.id) > leader),
                }
            }
        }
        let flat = run(
            &store,
            SearchSettings {
                derank: true,
                ..settings
            },
        );
        let (leaders, moved) = flat.split_at(groups.len());
        let leader_ids: Vec<_> = groups.iter().map(|g| &g.doc.id).collect();
        assert_eq!(
            leaders.iter().map(|h| &h.doc.id).collect::<Vec<_>>(),
            leader_ids
        );
        assert!(leaders.iter().all(|h| !h.moved && h.leader_id.is_none()));
        let members: BTreeSet<(&str, &str)> = groups
            .iter()
            .flat_map(|g| g.members.iter().map(|m| (m.id.as_str(), g.doc.id.as_str())))
            .collect();
        let moved_with_leader: BTreeSet<(&str, &str)> = moved
            .iter()
            .map(|h| {
                assert!(h.moved);
                (h.doc.id.as_str(), h.leader_id.as_deref().unwrap())
            })
            .collect();
        assert_eq!(moved_with_leader, members);
        assert!(flat.iter().enumerate().all(|(i, h)| h.rank == i + 1));
    }
}

#[test]
fn a_field_collapse_gives_one_result_per_value() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = store_of_copies(dir.path());
    let settings = SearchSettings {
        collapse: Collapse::Field("host".into()),
        ..SearchSettings::new(5)
    };
    let hits = run(&store, settings);
    assert_eq!(hits.len(), 3, "three hosts");
    let hosts: BTreeSet<_> = hits.iter().map(|h| h.doc.host.clone()).collect();
    assert_eq!(hosts.len(), 3);
    for h in &hits {
        assert_eq!(h.group_value.as_deref(), Some(h.doc.host.as_str()));
        for m in &h.members {
            assert_eq!(format!("h{}", number(&m.id) % 3), h.doc.host);
        }
    }
}

#[test]
fn similar_finds_every_document_within_k_or_matched_by_the_rule() {
    let dir = tempfile::tempdir().unwrap();
    let (store, sigs) = store_of_copies(dir.path());
    let rule = store.index.rule();
    for i in (0..DOCS).step_by(17) {
        let id = format!("d{i}");
        let me = &sigs[&id];
        let within: BTreeSet<String> = sigs
            .iter()
            .filter(|(other, s)| **other != id && me.fingerprint.distance(s.fingerprint) <= 2)
            .map(|(other, _)| other.clone())
            .collect();
        let found = app::similar(&store, SimilarTo::Id(&id), Some(2), 0).unwrap();
        assert_eq!(found.within, Some(2));
        let ids: BTreeSet<String> = found.hits.iter().map(|(h, _)| h.id.clone()).collect();
        assert_eq!(ids, within, "{id}");

        let by_rule: BTreeSet<String> = sigs
            .iter()
            .filter(|(other, s)| **other != id && rule.matches(me, s).is_some())
            .map(|(other, _)| other.clone())
            .collect();
        let found = app::similar(&store, SimilarTo::Id(&id), None, 0).unwrap();
        let ids: BTreeSet<String> = found.hits.iter().map(|(h, _)| h.id.clone()).collect();
        assert_eq!(ids, by_rule, "{id}");
        // Strongest evidence first; the stored fields are the hit's.
        for pair in found.hits.windows(2) {
            assert!(pair[0].0.evidence.cmp_strength(&pair[1].0.evidence).is_le());
        }
        for (h, doc) in &found.hits {
            assert_eq!(h.id, doc.id);
        }
        let first = app::similar(&store, SimilarTo::Id(&id), None, 1).unwrap();
        assert_eq!(first.hits.len(), by_rule.len().min(1));
    }
}

#[test]
fn requests_that_cannot_be_answered_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = store_of_copies(dir.path());
    let search = Search::new(&store, SearchSettings::new(3)).unwrap();
    let err = search.run(&store, "title:(unclosed").err().unwrap();
    assert!(matches!(&err, Error::Request(m) if m.contains("cannot parse the query")));
    let zero = Search::new(&store, SearchSettings::new(0)).err().unwrap();
    assert!(matches!(zero, Error::Setting(_)));
    let ungrouped = SearchSettings {
        collapse: Collapse::Off,
        derank: true,
        ..SearchSettings::new(3)
    };
    assert!(matches!(
        Search::new(&store, ungrouped),
        Err(Error::Setting(_))
    ));
    let err = app::similar(&store, SimilarTo::Id("nobody"), None, 0)
        .err()
        .unwrap();
    assert!(matches!(&err, Error::Request(m) if m.contains("no document has id `nobody`")));
    let err = app::similar(&store, SimilarTo::Text(" \n"), None, 0)
        .err()
        .unwrap();
    assert!(matches!(err, Error::Setting(_)));
    let beyond = app::similar(&store, SimilarTo::Id("d0"), Some(9), 0)
        .err()
        .unwrap();
    assert!(matches!(beyond, Error::Setting(_)));
}
