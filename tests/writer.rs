//! `DedupWriter`: policies, the pending table, threads, crashes, and the scheme record.

mod common;

use common::*;
use std::collections::HashMap;
use std::process::Command;
use tantivy::schema::{Schema, FAST, STRING, TEXT};
use tantivy::{doc, Index, TantivyDocument, Term};
use tantivy_simhash::{
    BlockLayout, Error, Evidence, Features, Fingerprint, NearDupConfig, NearDupIndex, Outcome,
    Policy, Scheme,
};

/// The record file's name, as the schema module documents it (the constant is internal).
const RECORD_FILE: &str = ".tantivy-simhash.json";

const TEXT_A: &str =
    "Permission is hereby granted, free of charge, to any person obtaining a copy \
    of this software and associated documentation files, to deal in the software without \
    restriction, including without limitation the rights to use, copy, modify and merge it.";
const TEXT_B: &str = "The quarterly report shows revenue growth in every region, led by strong \
    demand for cloud services and a recovery in hardware sales since the spring of last year.";

#[test]
fn policies_on_text() {
    let scheme = Scheme::default();
    let fa = scheme.fingerprint(TEXT_A);
    let fb = scheme.fingerprint(TEXT_B);
    assert!(fa.distance(fb) > 3, "the two texts are far apart");

    for policy in [Policy::Off, Policy::Reject, Policy::Tag, Policy::Replace] {
        let t = ram_index(BlockLayout::default());
        let mut w = t.index.writer(15_000_000, policy).unwrap();
        let add = |w: &tantivy_simhash::DedupWriter, id: &str, text: &str| {
            w.add_document(doc!(t.id => id, t.body => text)).unwrap()
        };
        assert_eq!(add(&w, "a1", TEXT_A), Outcome::Added { fingerprint: fa });
        assert_eq!(add(&w, "b1", TEXT_B), Outcome::Added { fingerprint: fb });
        let second = add(&w, "a2", TEXT_A);
        let expected = match policy {
            Policy::Off => Outcome::Added { fingerprint: fa },
            Policy::Reject => Outcome::Duplicate {
                of: "a1".into(),
                evidence: Evidence::Simhash { distance: 0 },
                fingerprint: fa,
            },
            Policy::Tag => Outcome::Tagged {
                group: "a1".into(),
                of: "a1".into(),
                evidence: Evidence::Simhash { distance: 0 },
                fingerprint: fa,
            },
            Policy::Replace => Outcome::Replaced {
                replaced: vec!["a1".into()],
                evidence: Evidence::Simhash { distance: 0 },
                fingerprint: fa,
            },
        };
        assert_eq!(second, expected, "{policy:?}, pending");
        w.commit().unwrap();
        // After the commit the committed index answers.
        let third = add(&w, "a3", TEXT_A);
        let s = t.index.lookups().unwrap();
        let ids: Vec<String> = s.lookup(fa).unwrap().into_iter().map(|h| h.id).collect();
        match policy {
            Policy::Off => {
                assert!(third.is_added());
                assert_eq!(ids, ["a1", "a2"]);
            }
            Policy::Reject => {
                assert!(matches!(third, Outcome::Duplicate { ref of, .. } if of == "a1"));
                assert_eq!(ids, ["a1"]);
            }
            Policy::Tag => {
                assert!(
                    matches!(third, Outcome::Tagged { ref group, .. } if group == "a1"),
                    "{third:?}"
                );
                assert_eq!(ids, ["a1", "a2"]);
                let hits = s.lookup(fa).unwrap();
                let groups: Vec<Option<String>> = hits
                    .iter()
                    .map(|h| s.group_of(h.address).unwrap())
                    .collect();
                assert_eq!(groups, [Some("a1".into()), Some("a1".into())]);
            }
            Policy::Replace => {
                assert_eq!(
                    third,
                    Outcome::Replaced {
                        replaced: vec!["a2".into()],
                        evidence: Evidence::Simhash { distance: 0 },
                        fingerprint: fa
                    }
                );
                assert_eq!(ids, ["a2"]);
            }
        }
        w.commit().unwrap();
        let s = t.index.lookups().unwrap();
        let n_a = s.lookup(fa).unwrap().len();
        let want = match policy {
            Policy::Off | Policy::Tag => 3,
            Policy::Reject | Policy::Replace => 1,
        };
        assert_eq!(n_a, want, "{policy:?}");
        assert_eq!(s.lookup(fb).unwrap().len(), 1);
    }
}

#[test]
fn batch_fingerprints_like_the_scheme() {
    let t = ram_index(BlockLayout::default());
    let mut w = t.index.writer(15_000_000, Policy::Reject).unwrap();
    let texts = [TEXT_A, TEXT_B, TEXT_A, "a short one", TEXT_B];
    let docs: Vec<TantivyDocument> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| doc!(t.id => format!("d{i}"), t.body => *text))
        .collect();
    let outcomes = w.add_documents(docs).unwrap();
    let scheme = t.index.scheme();
    for (o, text) in outcomes.iter().zip(texts) {
        assert_eq!(o.fingerprint(), Some(scheme.fingerprint(text)));
    }
    let added: Vec<bool> = outcomes.iter().map(Outcome::is_added).collect();
    assert_eq!(added, [true, true, false, true, false]);
    assert_eq!(
        outcomes[4],
        Outcome::Duplicate {
            of: "d1".into(),
            evidence: Evidence::Simhash { distance: 0 },
            fingerprint: scheme.fingerprint(TEXT_B)
        }
    );
    w.commit().unwrap();
    assert_eq!(t.index.lookups().unwrap().searcher().num_docs(), 3);
}

#[test]
fn documents_are_checked() {
    let t = ram_index(BlockLayout::default());
    let w = t.index.writer(15_000_000, Policy::Reject).unwrap();
    let no_id = w.add_document(doc!(t.body => TEXT_A)).unwrap_err();
    assert!(matches!(no_id, Error::Document(_)), "{no_id}");
    let fields = t.index.fields();
    let preset = w
        .add_document(doc!(t.id => "x", t.body => TEXT_A, fields.fingerprint => 5u64))
        .unwrap_err();
    assert!(preset.to_string().contains("simhash"), "{preset}");
    assert_eq!(w.num_pending(), 0);
}

#[test]
fn deletes_by_id_are_seen_before_commit() {
    let t = ram_index(BlockLayout::default());
    let mut w = t.index.writer(15_000_000, Policy::Reject).unwrap();
    assert!(w
        .add_document(doc!(t.id => "a", t.body => TEXT_A))
        .unwrap()
        .is_added());
    w.commit().unwrap();
    assert!(w
        .add_document(doc!(t.id => "p", t.body => TEXT_B))
        .unwrap()
        .is_added());
    // Delete the committed "a" and the pending "p": both stop blocking at once.
    w.delete_term(Term::from_field_text(t.id, "a"));
    w.delete_term(Term::from_field_text(t.id, "p"));
    assert!(w
        .add_document(doc!(t.id => "a2", t.body => TEXT_A))
        .unwrap()
        .is_added());
    assert!(w
        .add_document(doc!(t.id => "p2", t.body => TEXT_B))
        .unwrap()
        .is_added());
    w.commit().unwrap();
    let s = t.index.lookups().unwrap();
    let mut ids: Vec<String> = [TEXT_A, TEXT_B]
        .iter()
        .flat_map(|x| s.lookup(t.index.scheme().fingerprint(x)).unwrap())
        .map(|h| h.id)
        .collect();
    ids.sort();
    assert_eq!(ids, ["a2", "p2"]);
    // Rollback forgets pending documents.
    assert!(w
        .add_document(doc!(t.id => "a3", t.body => "something else entirely, long enough to be a simhash of words"))
        .unwrap()
        .is_added());
    assert_eq!(w.num_pending(), 1);
    w.rollback().unwrap();
    assert_eq!(w.num_pending(), 0);
}

/// Several threads add overlapping near-duplicate clusters at once under Reject: no two stored
/// documents are within k, and every rejected document has a stored near-duplicate.
#[test]
fn reject_with_threads_stores_no_two_near_duplicates() {
    let layout = BlockLayout::default();
    let k = layout.max_distance();
    let t = ram_index(layout);
    let mut w = t.index.writer(30_000_000, Policy::Reject).unwrap();
    let mut rng = Rng(2024);
    let seeds: Vec<Fingerprint> = (0..40).map(|_| Fingerprint(rng.next_u64())).collect();
    let threads = 4;
    let mut rejected: Vec<(Fingerprint, String)> = Vec::new();
    for round in 0..2 {
        let results: Vec<Vec<(Fingerprint, Outcome)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|th| {
                    let w = &w;
                    let t = &t;
                    let seeds = &seeds;
                    scope.spawn(move || {
                        let mut rng = Rng(1000 * round + th);
                        let mut out = Vec::new();
                        for i in 0..200 {
                            let seed = seeds[rng.below(seeds.len() as u64) as usize];
                            let d = rng.below(u64::from(k) + 2) as u32;
                            let fp = flip_bits(&mut rng, seed, d);
                            let id = format!("r{round}-t{th}-{i}");
                            let o = w
                                .add_document_with_fingerprint(doc!(t.id => id), fp)
                                .unwrap();
                            out.push((fp, o));
                        }
                        out
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (fp, o) in results.into_iter().flatten() {
            if let Outcome::Duplicate { of, evidence, .. } = &o {
                assert!(evidence.distance() <= k);
                rejected.push((fp, of.clone()));
            }
        }
        w.commit().unwrap();
    }
    let s = t.index.lookups().unwrap();
    let mut stored: HashMap<String, Fingerprint> = HashMap::new();
    // Read every stored fingerprint from the segment component.
    for (ord, seg) in s.searcher().segment_readers().iter().enumerate() {
        for doc in seg.doc_ids_alive() {
            let address = tantivy::DocAddress::new(ord as u32, doc);
            let id = s.id_of(address).unwrap().unwrap();
            stored.insert(id, s.signature_at(address).unwrap().fingerprint);
        }
    }
    assert_eq!(stored.len() + rejected.len(), 2 * threads as usize * 200);
    assert!(!rejected.is_empty() && stored.len() > seeds.len() / 2);
    let v: Vec<(&String, &Fingerprint)> = stored.iter().collect();
    for i in 0..v.len() {
        for j in i + 1..v.len() {
            assert!(
                v[i].1.distance(*v[j].1) > k,
                "{} and {} are both stored at distance {}",
                v[i].0,
                v[j].0,
                v[i].1.distance(*v[j].1)
            );
        }
    }
    for (fp, of) in &rejected {
        let kept = stored
            .get(of)
            .expect("rejected in favour of a stored document");
        assert!(fp.distance(*kept) <= k);
    }
}

fn disk_index(dir: &std::path::Path, create: bool) -> (NearDupIndex, tantivy::schema::Field) {
    let config = config(BlockLayout::default());
    let (schema, id, _, _) = schema(&config);
    let index = if create {
        Index::create_in_dir(dir, schema).unwrap()
    } else {
        Index::open_in_dir(dir).unwrap()
    };
    let nd = if create {
        NearDupIndex::create(index, config).unwrap()
    } else {
        NearDupIndex::open(index, config).unwrap()
    };
    (nd, id)
}

fn fingerprints_for(n: usize, salt: u64) -> Vec<(String, Fingerprint)> {
    let mut rng = Rng(salt);
    (0..n)
        .map(|i| (format!("s{salt}-{i}"), Fingerprint(rng.next_u64())))
        .collect()
}

fn check_committed_only(dir: &std::path::Path) {
    let (nd, id) = disk_index(dir, false);
    let s = nd.lookups().unwrap();
    assert_eq!(s.searcher().num_docs(), 50);
    for (doc_id, fp) in fingerprints_for(50, 1) {
        let hits = s.lookup(fp).unwrap();
        assert_eq!(hits[0].id, doc_id);
    }
    for (_, fp) in fingerprints_for(30, 2) {
        assert!(s.lookup(fp).unwrap().is_empty());
    }
    // And the index takes a new writer.
    let mut w = nd.writer(15_000_000, Policy::Reject).unwrap();
    let (first, fp) = &fingerprints_for(1, 1)[0];
    let o = w
        .add_document_with_fingerprint(doc!(id => "again"), *fp)
        .unwrap();
    assert!(matches!(o, Outcome::Duplicate { ref of, .. } if of == first));
    w.commit().unwrap();
}

#[test]
fn drop_without_commit_leaves_the_committed_index_correct() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (nd, id) = disk_index(dir.path(), true);
        let mut w = nd.writer(15_000_000, Policy::Reject).unwrap();
        for (doc_id, fp) in fingerprints_for(50, 1) {
            w.add_document_with_fingerprint(doc!(id => doc_id), fp)
                .unwrap();
        }
        w.commit().unwrap();
        for (doc_id, fp) in fingerprints_for(30, 2) {
            w.add_document_with_fingerprint(doc!(id => doc_id), fp)
                .unwrap();
        }
        drop(w);
    }
    check_committed_only(dir.path());
}

/// The child half of `killed_writer_leaves_the_committed_index_correct`: adds, commits, adds
/// more, and aborts the process without dropping anything.
#[test]
#[ignore = "run by killed_writer_leaves_the_committed_index_correct in a child process"]
fn killed_writer_child() {
    let Ok(dir) = std::env::var("TANTIVY_SIMHASH_CHILD_DIR") else {
        return;
    };
    let (nd, id) = disk_index(std::path::Path::new(&dir), true);
    let mut w = nd.writer(15_000_000, Policy::Reject).unwrap();
    for (doc_id, fp) in fingerprints_for(50, 1) {
        w.add_document_with_fingerprint(doc!(id => doc_id), fp)
            .unwrap();
    }
    w.commit().unwrap();
    for (doc_id, fp) in fingerprints_for(30, 2) {
        w.add_document_with_fingerprint(doc!(id => doc_id), fp)
            .unwrap();
    }
    // Start a commit's work without finishing it, then die.
    std::process::abort();
}

#[test]
fn killed_writer_leaves_the_committed_index_correct() {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "killed_writer_child", "--ignored", "--nocapture"])
        .env("TANTIVY_SIMHASH_CHILD_DIR", dir.path())
        .status()
        .unwrap();
    assert!(!status.success(), "the child aborts");
    check_committed_only(dir.path());
}

fn schema_with(config: &NearDupConfig) -> Schema {
    let mut b = Schema::builder();
    b.add_text_field("id", STRING | FAST);
    b.add_text_field("title", TEXT);
    b.add_text_field("body", TEXT);
    config.add_fields(&mut b);
    b.build()
}

/// A searcher of another index whose schema ends before one of the handle's fields (here one
/// without the group field, so the replaced-ids field is past its last field) is an error, not a
/// panic, when lookups open their columns.
#[test]
fn lookups_over_a_searcher_of_another_schema_fail_clearly() {
    let config = NearDupConfig::new("id", ["title", "body"]);
    let index =
        NearDupIndex::create(Index::create_in_ram(schema_with(&config)), config.clone()).unwrap();
    let shorter = Index::create_in_ram(schema_with(&config.with_group_field(None)));
    let fields = index.fields();
    let searcher = shorter.reader().unwrap().searcher();
    let replaced = fields.replaced.unwrap();
    assert!(replaced.field_id() as usize >= searcher.schema().fields().count());
    let err = tantivy_simhash::NearDupLookup::new(fields, &searcher).err();
    assert!(
        err.as_ref()
            .is_some_and(|e| e.to_string().contains("another index")),
        "{err:?}"
    );
}

#[test]
fn an_index_opened_with_another_scheme_or_layout_fails_clearly() {
    let config = NearDupConfig::new("id", ["title", "body"]);
    let index = Index::create_in_ram(schema_with(&config));
    let nd = NearDupIndex::create(index.clone(), config.clone()).unwrap();
    let mut w = nd.writer(15_000_000, Policy::Off).unwrap();
    w.add_document(doc!(nd.fields().id => "a", nd.fields().fingerprint => 1u64))
        .unwrap_err(); // the writer fills the fingerprint itself
    w.add_document(doc!(nd.fields().id => "a")).unwrap();
    w.commit().unwrap();
    drop(w);

    // The same configuration opens, for reading and for writing.
    let again = NearDupIndex::open(index.clone(), config.clone()).unwrap();
    again.writer(15_000_000, Policy::Reject).unwrap();

    let other = Scheme::builder()
        .features(Features::words_and_shingles(2, 1.0))
        .build()
        .unwrap();
    assert_ne!(other.id(), Scheme::default().id());
    let err =
        NearDupIndex::open(index.clone(), config.clone().with_scheme(other.clone())).unwrap_err();
    match &err {
        Error::IndexMismatch {
            what,
            found,
            expected,
        } => {
            assert_eq!(*what, "scheme");
            assert_eq!(found, Scheme::default().id());
            assert_eq!(expected, other.id());
        }
        e => panic!("unexpected {e}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains(Scheme::default().id()) && msg.contains(other.id()),
        "{msg}"
    );
    assert!(msg.contains("rebuild"), "{msg}");
    // create() on an index that records another scheme fails the same way.
    assert!(matches!(
        NearDupIndex::create(index.clone(), config.clone().with_scheme(other)),
        Err(Error::IndexMismatch { what: "scheme", .. })
    ));

    let wider = config
        .clone()
        .with_layout(BlockLayout::for_distance(6).unwrap());
    assert!(matches!(
        NearDupIndex::open(index.clone(), wider),
        Err(Error::IndexMismatch { what: "layout", .. })
    ));

    // An index never recorded: open fails; create on a non-empty one too.
    let plain = Index::create_in_ram(schema_with(&config));
    assert!(matches!(
        NearDupIndex::open(plain.clone(), config.clone()),
        Err(Error::IndexMismatch { .. })
    ));
    let mut pw: tantivy::IndexWriter = plain.writer(15_000_000).unwrap();
    pw.add_document(doc!(plain.schema().get_field("id").unwrap() => "z"))
        .unwrap();
    pw.commit().unwrap();
    assert!(matches!(
        NearDupIndex::create(plain, config.clone()),
        Err(Error::IndexMismatch { .. })
    ));
}

#[test]
fn missing_or_mistyped_fields_fail_clearly() {
    let config = NearDupConfig::new("id", ["body"]);
    // No simhash fields at all.
    let mut b = Schema::builder();
    b.add_text_field("id", STRING | FAST);
    b.add_text_field("body", TEXT);
    let err = NearDupIndex::create(Index::create_in_ram(b.build()), config.clone()).unwrap_err();
    assert!(
        matches!(&err, Error::Schema { field, .. } if field == "simhash"),
        "{err}"
    );
    assert!(err.to_string().contains("add_fields"), "{err}");
    // An id that is not fast.
    let mut b = Schema::builder();
    b.add_text_field("id", STRING);
    b.add_text_field("body", TEXT);
    config.add_fields(&mut b);
    let err = NearDupIndex::create(Index::create_in_ram(b.build()), config.clone()).unwrap_err();
    assert!(
        matches!(&err, Error::Schema { field, .. } if field == "id"),
        "{err}"
    );
    assert!(err.to_string().contains("STRING | FAST"), "{err}");
    // A missing text field.
    let mut b = Schema::builder();
    b.add_text_field("id", STRING | FAST);
    config.add_fields(&mut b);
    let err = NearDupIndex::create(Index::create_in_ram(b.build()), config.clone()).unwrap_err();
    assert!(
        matches!(&err, Error::Schema { field, .. } if field == "body"),
        "{err}"
    );
    // Tag without a group field.
    let no_group = config.clone().with_group_field(None);
    let mut b = Schema::builder();
    b.add_text_field("id", STRING | FAST);
    b.add_text_field("body", TEXT);
    no_group.add_fields(&mut b);
    let nd = NearDupIndex::create(Index::create_in_ram(b.build()), no_group).unwrap();
    assert!(matches!(
        nd.writer(15_000_000, Policy::Tag),
        Err(Error::Schema { .. })
    ));
    assert!(nd.writer(15_000_000, Policy::Reject).is_ok());
}

#[test]
fn the_record_survives_plain_commits_and_merges() {
    let config = NearDupConfig::new("id", ["body"]);
    let dir = tempfile::tempdir().unwrap();
    let index = Index::create_in_dir(dir.path(), {
        let mut b = Schema::builder();
        b.add_text_field("id", STRING | FAST);
        b.add_text_field("body", TEXT);
        config.add_fields(&mut b);
        b.build()
    })
    .unwrap();
    let nd = NearDupIndex::create(index.clone(), config.clone()).unwrap();
    let mut w = nd.writer(15_000_000, Policy::Off).unwrap();
    for i in 0..3 {
        w.add_document(doc!(nd.fields().id => format!("{i}"), nd.fields().id => "x"))
            .unwrap();
        // A plain commit through the inner writer: payload None, the record file remains.
        w.index_writer_mut().commit().unwrap();
    }
    let segs = index.searchable_segment_ids().unwrap();
    w.index_writer_mut().merge(&segs).wait().unwrap();
    w.commit().unwrap();
    w.wait_merging_threads().unwrap();
    assert!(dir.path().join(RECORD_FILE).exists());
    let reopened = Index::open_in_dir(dir.path()).unwrap();
    NearDupIndex::open(reopened.clone(), config.clone()).unwrap();
    let payload = reopened.load_metas().unwrap().payload.unwrap();
    assert!(payload.contains(Scheme::default().id()), "{payload}");
    // Without the file, the payload of the last commit still identifies the scheme.
    std::fs::remove_file(dir.path().join(RECORD_FILE)).unwrap();
    let reopened = Index::open_in_dir(dir.path()).unwrap();
    NearDupIndex::open(reopened.clone(), config.clone()).unwrap();
    let other = config.with_layout(BlockLayout::for_distance(4).unwrap());
    assert!(matches!(
        NearDupIndex::open(reopened, other),
        Err(Error::IndexMismatch { what: "layout", .. })
    ));
}

#[test]
fn the_record_rebuilds_the_configuration() {
    use tantivy::tokenizer::{LowerCaser, SimpleTokenizer, TextAnalyzer};
    use tantivy_simhash::{HanSegmentation, IndexRecord, Tokenization, SIMHASH_TOKENIZER_NAME};

    // A scheme far from the default, a wider layout, other field names: all come back.
    let scheme = Scheme::builder()
        .tokenization(Tokenization::Builtin {
            han: HanSegmentation::Chars,
        })
        .features(Features::words_and_shingles(3, 0.5))
        .stopword_weight(0.25)
        .short_line(4)
        .seed(42)
        .min_features(5)
        .build()
        .unwrap();
    let config = NearDupConfig::new("id", ["body", "title"])
        .with_scheme(scheme.clone())
        .with_layout(BlockLayout::for_distance(5).unwrap())
        .with_fingerprint_field("fp")
        .with_group_field(None);
    let index = Index::create_in_ram(schema_with(&config));
    NearDupIndex::create(index.clone(), config.clone()).unwrap();
    let reopened = NearDupIndex::open_recorded(index.clone()).unwrap();
    assert_eq!(reopened.scheme().id(), scheme.id());
    assert_eq!(reopened.layout(), &BlockLayout::for_distance(5).unwrap());
    assert_eq!(
        reopened.fields(),
        NearDupIndex::open(index.clone(), config).unwrap().fields()
    );
    assert_eq!(reopened.fields().group, None);
    let text = "Identical text, identical fingerprint: 同一段文字得到同一个指纹。";
    assert_eq!(
        reopened.scheme().fingerprint(text),
        scheme.fingerprint(text)
    );

    // Application data is kept beside the record, and the record still opens.
    reopened
        .set_application_data(serde_json::json!({"fields": ["a", "b"]}))
        .unwrap();
    let record = IndexRecord::read(&index).unwrap().unwrap();
    assert_eq!(record.application().unwrap()["fields"][1], "b");
    assert_eq!(record.scheme_id(), scheme.id());
    NearDupIndex::open_recorded(index.clone()).unwrap();

    // A user analyzer is recorded by name: rebuilding needs it, and checks it by the scheme id.
    let analyzer = || {
        TextAnalyzer::builder(SimpleTokenizer::default())
            .filter(LowerCaser)
            .build()
    };
    let custom = Scheme::builder()
        .analyzer("lower", analyzer())
        .build()
        .unwrap();
    let config = NearDupConfig::new("id", ["body"]).with_scheme(custom.clone());
    let index = Index::create_in_ram(schema_with(&config));
    NearDupIndex::create(index.clone(), config).unwrap();
    assert!(matches!(
        NearDupIndex::open_recorded(index.clone()),
        Err(Error::InvalidConfig(msg)) if msg.contains("`lower`")
    ));
    let record = IndexRecord::read(&index).unwrap().unwrap();
    let rebuilt = record.config(Some(analyzer()), None).unwrap();
    assert_eq!(rebuilt.scheme().id(), custom.id());
    // The scheme's analysis is registered for the user analyzer too.
    assert!(index.tokenizers().get(SIMHASH_TOKENIZER_NAME).is_some());

    // A tokenizer the user registered under the scheme's name is left alone.
    let config = NearDupConfig::new("id", ["body"]);
    let index = Index::create_in_ram(schema_with(&config));
    index.tokenizers().register(
        SIMHASH_TOKENIZER_NAME,
        TextAnalyzer::builder(SimpleTokenizer::default()).build(),
    );
    NearDupIndex::create(index.clone(), config).unwrap();
    let mut mine = index.tokenizers().get(SIMHASH_TOKENIZER_NAME).unwrap();
    let mut stream = mine.token_stream("ABC");
    assert!(stream.advance());
    assert_eq!(
        stream.token().text,
        "ABC",
        "not lower-cased: still the user's tokenizer"
    );
}

#[test]
fn a_record_without_parameters_still_opens_with_its_configuration() {
    let config = NearDupConfig::new("id", ["title", "body"]);
    let dir = tempfile::tempdir().unwrap();
    let index = Index::create_in_dir(dir.path(), schema_with(&config)).unwrap();
    NearDupIndex::create(index.clone(), config.clone()).unwrap();
    // An older release wrote only the ids and field names.
    let path = dir.path().join(RECORD_FILE);
    let mut record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    record.as_object_mut().unwrap().remove("settings").unwrap();
    std::fs::write(&path, record.to_string()).unwrap();
    let index = Index::open_in_dir(dir.path()).unwrap();
    NearDupIndex::open(index.clone(), config).unwrap();
    assert!(matches!(
        NearDupIndex::open_recorded(index),
        Err(Error::InvalidConfig(msg)) if msg.contains("NearDupIndex::open")
    ));
}

/// Documents given only a fingerprint (no sketch) and committed are found by the simhash branch
/// at every distance up to k, by a new `Reject` writer and by `lookup`, and nothing beyond k
/// matches them (without a sketch there is no resemblance evidence). Oracle: Hamming distance.
#[test]
fn committed_fingerprint_only_documents_match_at_every_distance_up_to_k() {
    let dir = tempfile::tempdir().unwrap();
    let stored = fingerprints_for(50, 7);
    {
        let (nd, id) = disk_index(dir.path(), true);
        let mut w = nd.writer(15_000_000, Policy::Off).unwrap();
        for (doc_id, fp) in &stored {
            w.add_document_with_fingerprint(doc!(id => doc_id.clone()), *fp)
                .unwrap();
        }
        w.commit().unwrap();
    }
    let (nd, id) = disk_index(dir.path(), false);
    let k = nd.layout().max_distance();
    let s = nd.lookups().unwrap();
    let mut w = nd.writer(15_000_000, Policy::Reject).unwrap();
    let mut rng = Rng(11);
    for (n, (doc_id, fp)) in stored.iter().enumerate() {
        // Flip `d` distinct bits, d from 0 to k + 2.
        let d = (n as u32) % (k + 3);
        let mut mask = 0u64;
        while mask.count_ones() < d {
            mask |= 1 << (rng.next_u64() % 64);
        }
        let query = Fingerprint(fp.0 ^ mask);
        // The brute-force answer over everything committed.
        let nearest = stored
            .iter()
            .map(|(i, f)| (f.distance(query), i))
            .min()
            .unwrap();
        let hits = s.lookup(query).unwrap();
        let o = w
            .add_document_with_fingerprint(doc!(id => format!("q{n}")), query)
            .unwrap();
        if nearest.0 <= k {
            assert_eq!(nearest.1, doc_id, "random fingerprints are far apart");
            assert!(
                hits.iter().any(|h| &h.id == doc_id),
                "d {d}: lookup missed it"
            );
            assert!(
                matches!(&o, Outcome::Duplicate { of, .. } if of == doc_id),
                "d {d}: {o:?}"
            );
        } else {
            assert!(hits.is_empty(), "d {d}: {hits:?}");
            assert!(matches!(o, Outcome::Added { .. }), "d {d}: {o:?}");
        }
    }
    w.commit().unwrap();
}
