//! Where the keys live (`NearDupConfig::with_key_postings`): both storages decide, look up and
//! collapse alike, hot keys are detected against brute force in both, an index made before the
//! option existed (its record has no `key_postings`) opens as keys in postings and keeps
//! working, and asking for the other storage than the index has is an error.

mod common;

use common::{
    config_keys, dir_index_with, doc_number, edited_texts, ram_index_with, schema, TestIndex,
    KEY_STORAGES,
};
use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use tantivy::query::QueryParser;
use tantivy::{doc, DocAddress, Index, TantivyDocument, Term};
use tantivy_simhash::{
    BlockLayout, Error, NearDupCollapse, NearDupConfig, NearDupIndex, NearDupSearcher, Outcome,
    Policy, Signature,
};

/// The texts: edited copies, and exact copies of the first text (hot keys: every key of it is
/// held by 10 documents).
fn texts() -> Vec<String> {
    let mut texts = edited_texts(31, 240);
    for _ in 0..10 {
        texts.push(texts[0].clone());
    }
    texts
}

/// Adds `texts` under `policy` with commits every 37 documents and a delete every 13; returns
/// every outcome and the ids deleted.
fn fill(t: &TestIndex, texts: &[String], policy: Policy) -> (Vec<Outcome>, BTreeSet<String>) {
    let mut writer = t
        .index
        .writer_with_num_threads(1, 20_000_000, policy)
        .unwrap();
    writer
        .index_writer()
        .set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
    let mut outcomes = Vec::new();
    let mut deleted = BTreeSet::new();
    for (i, text) in texts.iter().enumerate() {
        let id = format!("d{i}");
        outcomes.push(
            writer
                .add_document(doc!(t.id => id.as_str(), t.body => text.as_str()))
                .unwrap(),
        );
        if i % 13 == 12 {
            let victim = format!("d{}", i - 5);
            writer.delete_term(Term::from_field_text(t.id, &victim));
            deleted.insert(victim);
        }
        if i % 37 == 36 {
            writer.commit().unwrap();
        }
    }
    writer.commit().unwrap();
    (outcomes, deleted)
}

/// Whether some key of `query` is held by more than `bound` documents of one segment (deleted
/// ones included), by brute force over the signatures of the segment's documents.
fn hot_by_brute_force(
    t: &TestIndex,
    s: &NearDupSearcher,
    sigs: &[Signature],
    query: &Signature,
    bound: usize,
) -> bool {
    let rule = t.index.rule();
    let keys = rule.keys(query);
    s.searcher()
        .segment_readers()
        .iter()
        .enumerate()
        .any(|(ord, segment)| {
            let mut holders = vec![0usize; keys.len()];
            for doc in 0..segment.max_doc() {
                let i = doc_number(s, t, DocAddress::new(ord as u32, doc));
                for (h, (k, dk)) in holders.iter_mut().zip(keys.iter().zip(rule.keys(&sigs[i]))) {
                    *h += usize::from(*k == dk);
                }
            }
            holders.iter().any(|&h| h > bound)
        })
}

#[test]
fn both_storages_decide_look_up_and_collapse_alike() {
    let texts = texts();
    for policy in [Policy::Reject, Policy::Tag, Policy::Replace] {
        let mut runs = Vec::new();
        for key_postings in KEY_STORAGES {
            let t = ram_index_with(config_keys(BlockLayout::default(), key_postings));
            let (outcomes, deleted) = fill(&t, &texts, policy);
            runs.push((t, outcomes, deleted));
        }
        let [(tp, outcomes_p, deleted_p), (tc, outcomes_c, deleted_c)] = &runs[..] else {
            unreachable!()
        };
        assert!(tp.index.fields().key_postings() && !tc.index.fields().key_postings());
        assert_eq!(outcomes_p, outcomes_c, "{policy:?}: outcomes");
        assert_eq!(deleted_p, deleted_c);
        let decided = outcomes_c
            .iter()
            .filter(|o| !matches!(o, Outcome::Added { .. }))
            .count();
        assert!(decided > 20, "{policy:?}: {decided} decisions");

        let (sp, sc) = (tp.index.lookups().unwrap(), tc.index.lookups().unwrap());
        let mut signer = tc.index.rule().signer(tc.index.scheme());
        let sigs: Vec<Signature> = texts.iter().map(|x| signer.sign(x)).collect();
        let rule = tc.index.rule();
        // The documents each index keeps (the same, as the outcomes are the same).
        let kept: BTreeSet<usize> = {
            let s = &sc;
            let mut kept = BTreeSet::new();
            for (ord, seg) in s.searcher().segment_readers().iter().enumerate() {
                for doc in seg.doc_ids_alive() {
                    kept.insert(doc_number(s, tc, DocAddress::new(ord as u32, doc)));
                }
            }
            kept
        };
        let mut hot = 0;
        for (q, query) in sigs.iter().enumerate().step_by(3) {
            let oracle: BTreeSet<usize> = kept
                .iter()
                .copied()
                .filter(|&i| rule.matches(query, &sigs[i]).is_some())
                .collect();
            for (s, t, label) in [(&sp, tp, "postings"), (&sc, tc, "columns")] {
                let got: BTreeSet<usize> = s
                    .lookup_signature_addresses(query)
                    .unwrap()
                    .into_iter()
                    .map(|(a, _)| doc_number(s, t, a))
                    .collect();
                assert_eq!(got, oracle, "{policy:?} {label}, query {q}");
                for bound in [1, 2, 4] {
                    let want = hot_by_brute_force(t, s, &sigs, query, bound);
                    let reader = s.signature_reader();
                    assert_eq!(
                        reader.has_hot_key(rule, query, bound).unwrap(),
                        want,
                        "{policy:?} {label}, query {q}, bound {bound}: hot key"
                    );
                    hot += usize::from(want);
                }
            }
            // Bounded lookups cut the same candidates in both storages.
            for bound in [1, 3] {
                let bounded = |s: &NearDupSearcher, t: &TestIndex| -> Vec<usize> {
                    NearDupSearcher::new(t.index.fields(), s.searcher())
                        .unwrap()
                        .with_max_postings_per_key(bound)
                        .lookup_signature(query)
                        .unwrap()
                        .into_iter()
                        .map(|hit| hit.id[1..].parse().unwrap())
                        .collect()
                };
                assert_eq!(bounded(&sp, tp), bounded(&sc, tc), "{policy:?} query {q}");
            }
        }
        assert!(hot > 0, "{policy:?}: the corpus must have hot keys");

        // Collapse under the rule with exact counts and a hot-key bound: the same groups,
        // counts and exactness flags.
        let word = texts[0].split_whitespace().next().unwrap().to_lowercase();
        for bound in [2, usize::MAX] {
            let collapse = |t: &TestIndex, s: &NearDupSearcher| {
                let parser = QueryParser::for_index(t.index.index(), vec![t.body]);
                let query = parser.parse_query(&word).unwrap();
                NearDupCollapse::by_score(t.index.fields(), 8)
                    .fetch(5)
                    .max_fetch(5)
                    .max_postings_per_key(bound)
                    .exact_counts(true)
                    .search(s.searcher(), query.as_ref())
                    .unwrap()
            };
            let (cp, cc) = (collapse(tp, &sp), collapse(tc, &sc));
            let summary = |c: &tantivy_simhash::Collapsed<tantivy::Score>| {
                c.groups()
                    .iter()
                    .map(|g| (g.leader.id.clone(), g.count, g.count_exact))
                    .collect::<Vec<_>>()
            };
            assert!(!cc.groups().is_empty());
            assert_eq!(
                summary(&cp),
                summary(&cc),
                "{policy:?} bound {bound}: collapse"
            );
        }
    }
}

/// Rewrites the record of the index in `dir` as a version before `key_postings` existed wrote
/// it: the record file and the last commit's payload without the field.
fn strip_key_postings(dir: &Path) {
    let path = dir.join(".tantivy-simhash.json");
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(record["key_postings"], serde_json::Value::Bool(true));
    record.as_object_mut().unwrap().remove("key_postings");
    let old = serde_json::to_string(&record).unwrap();
    std::fs::write(&path, &old).unwrap();
    // An empty commit that records the old payload.
    let index = Index::open_in_dir(dir).unwrap();
    let mut writer: tantivy::IndexWriter<TantivyDocument> = index.writer(15_000_000).unwrap();
    let mut prepared = writer.prepare_commit().unwrap();
    prepared.set_payload(&old);
    prepared.commit().unwrap();
    let payload = index.load_metas().unwrap().payload.unwrap();
    assert!(!payload.contains("key_postings"), "{payload}");
}

#[test]
fn an_index_made_before_the_option_opens_as_keys_in_postings_and_keeps_working() {
    let dir = tempfile::tempdir().unwrap();
    // The old code path: keys indexed (the schema's keys field is indexed) and a record without
    // the field.
    let texts = edited_texts(41, 120);
    let (id, body, host) = {
        let t = dir_index_with(dir.path(), config_keys(BlockLayout::default(), true));
        fill(&t, &texts[..80], Policy::Off);
        (t.id, t.body, t.host)
    };
    strip_key_postings(dir.path());

    // Opened with a configuration that does not say (as code written before the option), and
    // from its record alone.
    let plain = common::config(BlockLayout::default());
    assert!(!plain.key_postings(), "new indexes keep keys in columns");
    let opened = NearDupIndex::open(Index::open_in_dir(dir.path()).unwrap(), plain).unwrap();
    assert!(opened.fields().key_postings());
    assert!(opened.config().key_postings());
    let recorded = NearDupIndex::open_recorded(Index::open_in_dir(dir.path()).unwrap()).unwrap();
    assert!(recorded.fields().key_postings());
    let record = tantivy_simhash::IndexRecord::read(recorded.index())
        .unwrap()
        .unwrap();
    assert!(record.key_postings());

    // It keeps working: more documents under Reject (their keys in postings too), lookups equal
    // brute force.
    let t = TestIndex {
        index: recorded,
        id,
        body,
        host,
    };
    let mut writer = t.index.writer(20_000_000, Policy::Reject).unwrap();
    let mut stored: HashMap<usize, Signature> = HashMap::new();
    let mut signer = t.index.rule().signer(t.index.scheme());
    let sigs: Vec<Signature> = texts.iter().map(|x| signer.sign(x)).collect();
    for (i, text) in texts.iter().enumerate().skip(80) {
        let outcome = writer
            .add_document(doc!(id => format!("d{i}"), body => text.as_str()))
            .unwrap();
        if matches!(outcome, Outcome::Added { .. }) {
            stored.insert(i, sigs[i].clone());
        }
    }
    writer.commit().unwrap();
    let s = t.index.lookups().unwrap();
    let postings: usize = s
        .searcher()
        .segment_readers()
        .iter()
        .map(|seg| {
            seg.inverted_index(t.index.fields().keys)
                .unwrap()
                .terms()
                .num_terms()
        })
        .sum();
    assert!(postings > 80, "{postings} key terms");
    let mut live = BTreeSet::new();
    for (ord, seg) in s.searcher().segment_readers().iter().enumerate() {
        for doc in seg.doc_ids_alive() {
            live.insert(doc_number(&s, &t, DocAddress::new(ord as u32, doc)));
        }
    }
    let rule = t.index.rule();
    for (q, query) in sigs.iter().enumerate() {
        let want: BTreeSet<usize> = live
            .iter()
            .copied()
            .filter(|&i| rule.matches(query, &sigs[i]).is_some())
            .collect();
        let got: BTreeSet<usize> = s
            .lookup_signature_addresses(query)
            .unwrap()
            .into_iter()
            .map(|(a, _)| doc_number(&s, &t, a))
            .collect();
        assert_eq!(got, want, "query {q}");
    }
    // Still a record without the field? The writer's commit records the index's storage.
    let record = tantivy_simhash::IndexRecord::read(t.index.index())
        .unwrap()
        .unwrap();
    assert!(record.key_postings());
}

#[test]
fn asking_for_the_other_key_storage_is_an_error() {
    for key_postings in KEY_STORAGES {
        let config = config_keys(BlockLayout::default(), key_postings);
        let (made, ..) = schema(&config);
        let index = Index::create_in_ram(made);
        NearDupIndex::create(index.clone(), config.clone()).unwrap();
        // The configuration that does not say follows the index.
        let follows =
            NearDupIndex::open(index.clone(), common::config(BlockLayout::default())).unwrap();
        assert_eq!(follows.fields().key_postings(), key_postings);
        // The other storage, asked for explicitly.
        let other = config.clone().with_key_postings(!key_postings);
        let err = NearDupIndex::open(index.clone(), other.clone()).unwrap_err();
        assert_key_storage_mismatch(&err);
        let message = err.to_string();
        assert!(message.contains("with_key_postings"), "{message}");
        // Creating on a schema declared for the other storage fails the same way.
        let (other_schema, ..) = schema(&other);
        let err = NearDupIndex::create(Index::create_in_ram(other_schema), config).unwrap_err();
        assert_key_storage_mismatch(&err);
    }
}

/// `err` says the index's key storage is not the one asked for.
fn assert_key_storage_mismatch(err: &Error) {
    assert!(
        matches!(
            err,
            Error::IndexMismatch {
                what: "key storage",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_record_that_disagrees_with_the_schema_is_an_error() {
    // A columns-only index whose record file was edited to claim key postings.
    let dir = tempfile::tempdir().unwrap();
    let config: NearDupConfig = config_keys(BlockLayout::default(), false);
    let (schema, ..) = schema(&config);
    NearDupIndex::create(Index::create_in_dir(dir.path(), schema).unwrap(), config).unwrap();
    let path = dir.path().join(".tantivy-simhash.json");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"key_postings\":false"), "{text}");
    std::fs::write(
        &path,
        text.replace("\"key_postings\":false", "\"key_postings\":true"),
    )
    .unwrap();
    let err = NearDupIndex::open_recorded(Index::open_in_dir(dir.path()).unwrap()).unwrap_err();
    assert_key_storage_mismatch(&err);
}

/// `SignatureFields::add_to_schema` declares what `NearDupConfig::add_fields` declares for a new
/// index (keys in columns only); the keys are indexed only when asked for, in both.
#[test]
fn add_to_schema_has_the_default_key_storage_of_add_fields() {
    use tantivy::schema::{FieldType, Schema};
    let keys_indexed = |schema: &Schema| match schema
        .get_field_entry(schema.get_field("simhash_keys").unwrap())
        .field_type()
    {
        FieldType::U64(options) => options.is_indexed(),
        other => panic!("the keys field is {other:?}, not u64"),
    };
    for key_postings in [None, Some(false), Some(true)] {
        let mut config = NearDupConfig::new("id", ["body"]);
        if let Some(wanted) = key_postings {
            config = config.with_key_postings(wanted);
        }
        let names = config.signature_fields();
        assert_eq!(names.keys, "simhash_keys");
        let mut by_config = Schema::builder();
        config.add_fields(&mut by_config);
        let by_config = by_config.build();
        let mut by_names = Schema::builder();
        match key_postings {
            None => names.add_to_schema(&mut by_names),
            Some(wanted) => names.add_to_schema_with_key_postings(&mut by_names, wanted),
        }
        let by_names = by_names.build();
        let expected = key_postings == Some(true);
        assert_eq!(keys_indexed(&by_config), expected, "{key_postings:?}");
        assert_eq!(keys_indexed(&by_names), expected, "{key_postings:?}");
        // Every signature field is declared alike by both.
        let resolved = names.resolve(&by_names).unwrap();
        assert_eq!(resolved.key_postings(), expected);
        for name in std::iter::once(&names.fingerprint)
            .chain([&names.keys])
            .chain(&names.sketch)
        {
            let entry = |s: &Schema| s.get_field_entry(s.get_field(name).unwrap()).clone();
            assert_eq!(entry(&by_config), entry(&by_names), "{name}");
        }
    }
}
