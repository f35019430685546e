//! Lookups through in-memory key tables find exactly what a brute-force scan of the match rule
//! finds over the live documents, and exactly what the path without tables finds (the
//! postings, or for keys in columns only a scan of the columns: the same candidates in the same
//! order, so the bound on hot keys cuts the same way), across segments, deletes made before and
//! after a table was built, merges and reopening, with the keys in postings and in columns
//! only.

mod common;

use common::{edited_texts, ram_index_keys, TestIndex, KEY_STORAGES};
use std::collections::BTreeSet;
use tantivy::collector::DocSetCollector;
use tantivy::indexer::NoMergePolicy;
use tantivy::schema::Value;
use tantivy::{DocAddress, Index, TantivyDocument, Term};
use tantivy_simhash::{
    BlockLayout, DedupWriter, Evidence, Fingerprint, NearDupIndex, NearDupQuery, NearDupSearcher,
    Policy, Signature,
};

/// The test's document number of a hit (ids are `d{i}`).
fn doc_number(s: &NearDupSearcher, id_field: tantivy::schema::Field, a: DocAddress) -> usize {
    let doc: TantivyDocument = s.searcher().doc(a).unwrap();
    doc.get_first(id_field).and_then(|v| v.as_str()).unwrap()[1..]
        .parse()
        .unwrap()
}

/// Checks every query of `queries` against brute force over `live`, through key tables (built
/// first) and without them (postings, or a scan of the columns), with and without a bound on
/// hot keys.
fn check(
    t: &TestIndex,
    tables: &NearDupSearcher,
    sigs: &[Signature],
    live: &BTreeSet<usize>,
    label: &str,
) {
    let stats = tables.build_key_tables();
    let segments = tables.searcher().segment_readers().len();
    assert_eq!(
        stats.segments, segments,
        "{label}: every segment has a table"
    );
    assert!(stats.bytes > 0 && stats.documents > 0, "{label}: {stats:?}");
    let rule = t.index.rule().clone();
    let k = rule.layout().max_distance();
    let fields = t.index.fields();
    let postings = NearDupSearcher::new(fields, tables.searcher())
        .unwrap()
        .with_key_tables(false);
    assert_eq!(postings.build_key_tables().segments, 0, "{label}: disabled");
    let scans_before = postings.key_table_stats().scans;
    let (mut by_resemblance, mut matches) = (0, 0);
    for (q, query) in sigs.iter().enumerate() {
        let oracle: BTreeSet<usize> = live
            .iter()
            .copied()
            .filter(|&i| rule.matches(query, &sigs[i]).is_some())
            .collect();
        let found = tables.lookup_signature_addresses(query).unwrap();
        let got: BTreeSet<usize> = found
            .iter()
            .map(|&(a, _)| doc_number(tables, t.id, a))
            .collect();
        assert_eq!(
            got.len(),
            found.len(),
            "{label}, query {q}: a document twice"
        );
        assert_eq!(got, oracle, "{label}, query {q}: rule");
        for &(a, e) in &found {
            let i = doc_number(tables, t.id, a);
            assert_eq!(rule.matches(query, &sigs[i]), Some(e), "{label}, query {q}");
            by_resemblance += usize::from(matches!(e, Evidence::Resemblance { .. }));
        }
        matches += found.len();
        assert_eq!(
            found,
            postings.lookup_signature_addresses(query).unwrap(),
            "{label}, query {q}: tables and postings"
        );
        // Hot keys: the bound cuts the same candidates either way.
        for bound in [1, 3] {
            let a = NearDupSearcher::new(fields, tables.searcher())
                .unwrap()
                .with_max_postings_per_key(bound);
            let b = NearDupSearcher::new(fields, tables.searcher())
                .unwrap()
                .with_max_postings_per_key(bound)
                .with_key_tables(false);
            assert_eq!(
                a.lookup_signature_addresses(query).unwrap(),
                b.lookup_signature_addresses(query).unwrap(),
                "{label}, query {q}, bound {bound}"
            );
            let qa = NearDupQuery::from_signature(fields, query.clone())
                .with_max_postings_per_key(bound);
            let in_query = tables.searcher().search(&qa, &DocSetCollector).unwrap();
            assert_eq!(
                in_query,
                bounded_query_oracle(t, tables, query, bound, sigs),
                "{label}, query {q}, bound {bound}: NearDupQuery"
            );
        }
        // Simhash-only, through tables and postings.
        let within: BTreeSet<usize> = live
            .iter()
            .copied()
            .filter(|&i| query.fingerprint.distance(sigs[i].fingerprint) <= k)
            .collect();
        let near = tables.lookup_addresses(query.fingerprint, k).unwrap();
        let near_ids: BTreeSet<usize> = near
            .iter()
            .map(|&(a, _)| doc_number(tables, t.id, a))
            .collect();
        assert_eq!(near_ids, within, "{label}, query {q}: simhash-only");
        assert_eq!(
            near,
            postings.lookup_addresses(query.fingerprint, k).unwrap(),
            "{label}, query {q}: simhash-only, tables and postings"
        );
        // NearDupQuery reads the same tables.
        let docs = tables
            .searcher()
            .search(
                &NearDupQuery::from_signature(fields, query.clone()),
                &DocSetCollector,
            )
            .unwrap();
        let ids: BTreeSet<usize> = docs
            .into_iter()
            .map(|a| doc_number(tables, t.id, a))
            .collect();
        assert_eq!(ids, oracle, "{label}, query {q}: NearDupQuery");
    }
    // Without tables, keys in columns only are found by scanning: counted, once per lookup and
    // segment.
    let scans = postings.key_table_stats().scans - scans_before;
    if fields.key_postings() {
        assert_eq!(scans, 0, "{label}: postings need no scan");
    } else {
        assert!(
            scans >= 2 * (sigs.len() * segments) as u64,
            "{label}: {scans} scans"
        );
    }
    assert!(
        matches > sigs.len() && by_resemblance > 0,
        "{label}: {matches} / {by_resemblance}"
    );
}

/// What a bounded `NearDupQuery` must return, by brute force over every document of each
/// segment: per segment and key of the query, the first `bound` live documents in doc id order
/// whose signature (the test's, found by the stored id) has that key (deleted ones do not
/// count), those that the rule matches.
fn bounded_query_oracle(
    t: &TestIndex,
    s: &NearDupSearcher,
    query: &Signature,
    bound: usize,
    sigs: &[Signature],
) -> std::collections::HashSet<DocAddress> {
    let rule = t.index.rule();
    let mut out = std::collections::HashSet::new();
    let query_keys = rule.keys(query);
    for (ord, segment) in s.searcher().segment_readers().iter().enumerate() {
        let doc_keys: Vec<Vec<u64>> = (0..segment.max_doc())
            .map(|doc| rule.keys(&sigs[doc_number(s, t.id, DocAddress::new(ord as u32, doc))]))
            .collect();
        for (position, key) in query_keys.iter().enumerate() {
            let holders = (0..segment.max_doc())
                .filter(|&d| !segment.is_deleted(d) && doc_keys[d as usize][position] == *key);
            for doc in holders.take(bound) {
                let a = DocAddress::new(ord as u32, doc);
                if rule.matches(query, &sigs[doc_number(s, t.id, a)]).is_some() {
                    out.insert(a);
                }
            }
        }
    }
    out
}

/// Whether the index holds any posting of the keys field (keys in columns only must hold none).
fn has_key_postings(t: &TestIndex, s: &NearDupSearcher) -> bool {
    s.searcher().segment_readers().iter().any(|segment| {
        segment
            .inverted_index(t.index.fields().keys)
            .map(|inverted| inverted.terms().num_terms() > 0)
            .unwrap()
    })
}

fn add(writer: &mut DedupWriter, t: &TestIndex, i: usize, text: &str) {
    let mut doc = TantivyDocument::default();
    doc.add_text(t.id, format!("d{i}"));
    doc.add_text(t.body, text);
    writer.add_document(doc).unwrap();
}

#[test]
fn key_tables_equal_brute_force_across_segments_deletes_merges_and_reopening() {
    for key_postings in KEY_STORAGES {
        tables_equal_brute_force(key_postings);
    }
}

fn tables_equal_brute_force(key_postings: bool) {
    // On disk, so the reopened index reads the same files.
    let dir = tempfile::tempdir().unwrap();
    let t = common::dir_index_with(
        dir.path(),
        common::config_keys(BlockLayout::default(), key_postings),
    );
    let mut signer = t.index.rule().signer(t.index.scheme());
    let mut texts = edited_texts(23, 200);
    // Exact copies make hot keys (every key of the text held by 12 documents).
    for _ in 0..12 {
        texts.push(texts[0].clone());
    }
    let sigs: Vec<Signature> = texts.iter().map(|x| signer.sign(x)).collect();
    let mut writer = t.index.writer(30_000_000, Policy::Off).unwrap();
    writer
        .index_writer()
        .set_merge_policy(Box::new(NoMergePolicy));
    for (i, text) in texts.iter().enumerate() {
        add(&mut writer, &t, i, text);
        if i % 50 == 49 {
            writer.commit().unwrap();
        }
    }
    let mut live: BTreeSet<usize> = (0..texts.len()).collect();
    for i in (0..texts.len()).filter(|i| i % 7 == 3) {
        writer.delete_term(Term::from_field_text(t.id, &format!("d{i}")));
        live.remove(&i);
    }
    writer.commit().unwrap();
    let first = t.index.lookups().unwrap();
    assert!(first.searcher().segment_readers().len() >= 4);
    assert_eq!(has_key_postings(&t, &first), key_postings);
    check(&t, &first, &sigs, &live, "segments and deletes");

    // Deletes after the tables were built: the same tables (segments are immutable), the new
    // searcher's alive bitsets.
    for i in (0..texts.len()).filter(|i| i % 5 == 1) {
        writer.delete_term(Term::from_field_text(t.id, &format!("d{i}")));
        live.remove(&i);
    }
    writer.commit().unwrap();
    let after_deletes = t.index.lookups().unwrap();
    // (tantivy drops segments whose documents are all deleted.)
    let remaining = after_deletes.searcher().segment_readers().len();
    assert!(remaining >= 2);
    assert_eq!(
        after_deletes.key_table_stats().segments,
        remaining,
        "the tables of unchanged segments are shared with the new searcher, not rebuilt"
    );
    check(&t, &after_deletes, &sigs, &live, "deletes after the build");

    // New documents in a new segment beside the old ones.
    for i in texts.len()..texts.len() + 30 {
        add(&mut writer, &t, i, &texts[i - 30]);
    }
    writer.commit().unwrap();
    let mut all = sigs.clone();
    all.extend_from_slice(&sigs[sigs.len() - 30..]);
    live.extend(texts.len()..texts.len() + 30);
    let grown = t.index.lookups().unwrap();
    check(&t, &grown, &all, &live, "a new segment");

    // Merged to one segment: a new table.
    let segments = t.index.index().searchable_segment_ids().unwrap();
    writer.index_writer_mut().merge(&segments).wait().unwrap();
    writer.commit().unwrap();
    writer.wait_merging_threads().unwrap();
    let merged = t.index.lookups().unwrap();
    assert_eq!(merged.searcher().segment_readers().len(), 1);
    assert_eq!(has_key_postings(&t, &merged), key_postings, "merged");
    check(&t, &merged, &all, &live, "merged");

    // Reopened from the directory, every searcher of the old handle dropped.
    drop((first, after_deletes, grown, merged));
    let reopened = NearDupIndex::open_recorded(Index::open_in_dir(dir.path()).unwrap()).unwrap();
    let t2 = TestIndex {
        index: reopened,
        id: t.id,
        body: t.body,
        host: t.host,
    };
    assert_eq!(t2.index.fields().key_postings(), key_postings);
    let s = t2.index.lookups().unwrap();
    check(&t2, &s, &all, &live, "reopened");
}

/// With key postings, tables are built lazily: a searcher that has served a few lookups has
/// none yet, and one that served enough has them; the results do not change at the switch.
/// With keys in columns only, the first lookup builds them.
#[test]
fn tables_are_built_after_enough_lookups_and_change_no_result() {
    for key_postings in KEY_STORAGES {
        tables_built_when_needed(key_postings);
    }
}

fn tables_built_when_needed(key_postings: bool) {
    let t = ram_index_keys(BlockLayout::default(), key_postings);
    let texts = edited_texts(5, 120);
    let mut writer = t.index.writer(30_000_000, Policy::Off).unwrap();
    for (i, text) in texts.iter().enumerate() {
        add(&mut writer, &t, i, text);
    }
    writer.commit().unwrap();
    let s = t.index.lookups().unwrap();
    let postings = t.index.lookups().unwrap().with_key_tables(false);
    let mut signer = t.index.rule().signer(t.index.scheme());
    let sigs: Vec<Signature> = texts.iter().map(|x| signer.sign(x)).collect();
    // Fewer lookups than the threshold (32 per segment): no table yet with postings; without
    // postings, the first lookup built them.
    for q in &sigs[..10] {
        assert_eq!(
            s.lookup_signature_addresses(q).unwrap(),
            postings.lookup_signature_addresses(q).unwrap()
        );
    }
    let segments = s.searcher().segment_readers().len();
    let expected = if key_postings { 0 } else { segments };
    assert_eq!(s.key_table_stats().segments, expected);
    for q in &sigs {
        assert_eq!(
            s.lookup_signature_addresses(q).unwrap(),
            postings.lookup_signature_addresses(q).unwrap()
        );
        assert_eq!(
            s.lookup(q.fingerprint).unwrap(),
            postings.lookup(q.fingerprint).unwrap()
        );
    }
    // 120 lookups passed the threshold: the table exists, so building changes nothing now.
    let stats = s.key_table_stats();
    assert_eq!(stats.segments, s.searcher().segment_readers().len());
    assert!(stats.bytes > 0);
    assert_eq!(s.build_key_tables(), stats);
    // A searcher with tables disabled reports none, and finds the same.
    assert_eq!(postings.key_table_stats().segments, 0);
}

/// Layouts whose keys are too wide for the table's packed entries fall back to postings (or,
/// keys in columns only, a scan of the columns) for those keys, and still find everything.
#[test]
fn wide_keys_fall_back_to_postings_or_a_scan() {
    for key_postings in KEY_STORAGES {
        wide_keys(key_postings);
    }
}

fn wide_keys(key_postings: bool) {
    // Keys of 3 blocks of 16 bits: 48 bits, too wide for a 32-bit entry with a small directory.
    let layout = BlockLayout::new(4, 3, 1).unwrap();
    let t = ram_index_keys(layout, key_postings);
    let mut writer = t.index.writer(30_000_000, Policy::Off).unwrap();
    let mut rng = common::Rng(9);
    let mut fps = Vec::new();
    for i in 0..300 {
        let fp = if i % 3 == 0 || fps.is_empty() {
            Fingerprint(rng.next_u64())
        } else {
            let base: Fingerprint = fps[rng.below(fps.len() as u64) as usize];
            let bits = rng.below(3) as u32;
            common::flip_bits(&mut rng, base, bits)
        };
        fps.push(fp);
        let mut doc = TantivyDocument::default();
        doc.add_text(t.id, format!("d{i}"));
        writer.add_document_with_fingerprint(doc, fp).unwrap();
        if i % 100 == 99 {
            writer.commit().unwrap();
        }
    }
    writer.commit().unwrap();
    let s = t.index.lookups().unwrap();
    let stats = s.build_key_tables();
    assert_eq!(stats.segments, s.searcher().segment_readers().len());
    for (q, &fp) in fps.iter().enumerate() {
        let want: BTreeSet<usize> = (0..fps.len())
            .filter(|&i| fp.distance(fps[i]) <= 1)
            .collect();
        let got: BTreeSet<usize> = s
            .lookup_addresses(fp, 1)
            .unwrap()
            .into_iter()
            .map(|(a, _)| doc_number(&s, t.id, a))
            .collect();
        assert_eq!(got, want, "query {q}");
    }
    let scans = s.key_table_stats().scans;
    assert_eq!(scans > 0, !key_postings, "{scans} scans");
}
