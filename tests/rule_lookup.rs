//! Lookups by the match rule through the index (DedupWriter, several commits, deletes) find
//! exactly what a brute-force scan with `MatchRule::matches` finds over the live documents.

mod common;

use common::{doc_number, edited_texts, ram_index};
use std::collections::{BTreeMap, BTreeSet};
use tantivy::collector::{Count, DocSetCollector};
use tantivy::{Directory, TantivyDocument, Term};
use tantivy_simhash::{BlockLayout, NearDupQuery, Policy, Signature};

#[test]
fn rule_lookup_equals_brute_force_across_segments_and_deletes() {
    let t = ram_index(BlockLayout::default());
    let rule = *t.index.rule();
    let mut signer = rule.signer(t.index.scheme());
    let texts = edited_texts(11, 240);
    let sigs: Vec<Signature> = texts.iter().map(|x| signer.sign(x)).collect();
    let mut writer = t.index.writer(30_000_000, Policy::Off).unwrap();
    // Several segments, deterministically: no background merges.
    writer
        .index_writer()
        .set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
    for (i, text) in texts.iter().enumerate() {
        let mut doc = TantivyDocument::default();
        doc.add_text(t.id, format!("d{i}"));
        doc.add_text(t.body, text);
        writer.add_document(doc).unwrap();
        if i % 60 == 59 {
            writer.commit().unwrap();
        }
    }
    let deleted: BTreeSet<usize> = (0..texts.len()).filter(|i| i % 9 == 4).collect();
    for &i in &deleted {
        writer.delete_term(Term::from_field_text(t.id, &format!("d{i}")));
    }
    writer.commit().unwrap();
    let searcher = t.index.lookups().unwrap();
    assert!(searcher.searcher().segment_readers().len() >= 2);
    let id_of = |a: tantivy::DocAddress| doc_number(&searcher, &t, a);
    let (mut simhash, mut resemblance) = (0, 0);
    for (q, query) in sigs.iter().enumerate() {
        let oracle: BTreeMap<usize, _> = (0..sigs.len())
            .filter(|i| !deleted.contains(i))
            .filter_map(|i| rule.matches(query, &sigs[i]).map(|e| (i, e)))
            .collect();
        let found = searcher.lookup_signature_addresses(query).unwrap();
        let got: BTreeMap<usize, _> = found.iter().map(|&(a, e)| (id_of(a), e)).collect();
        assert_eq!(got.len(), found.len(), "query {q}: a document twice");
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            oracle.keys().collect::<Vec<_>>(),
            "query {q}"
        );
        for (i, e) in &got {
            assert_eq!(rule.matches(query, &sigs[*i]), Some(*e));
            match e {
                tantivy_simhash::Evidence::Simhash { .. } => simhash += 1,
                tantivy_simhash::Evidence::Resemblance { .. } => resemblance += 1,
            }
        }
        // The text path signs the same way, and reports ids, strongest evidence first.
        let by_text = t.index.lookup_text(&texts[q]).unwrap();
        let mut by_text_addresses: Vec<_> =
            by_text.iter().map(|h| (h.address, h.evidence)).collect();
        by_text_addresses.sort_by_key(|&(a, _)| a);
        let mut found_sorted = found.clone();
        found_sorted.sort_by_key(|&(a, _)| a);
        assert_eq!(by_text_addresses, found_sorted, "query {q}");
        for w in by_text.windows(2) {
            assert!(
                w[0].evidence.cmp_strength(&w[1].evidence).is_le(),
                "query {q}: order"
            );
        }
        for h in &by_text {
            assert_eq!(h.id, format!("d{}", id_of(h.address)));
            assert_eq!(h.distance, h.evidence.distance());
        }
        // NearDupQuery through tantivy's collector: the same documents.
        let query_docs = searcher
            .searcher()
            .search(
                &NearDupQuery::from_signature(t.index.fields(), query.clone()),
                &DocSetCollector,
            )
            .unwrap();
        let query_ids: BTreeSet<usize> = query_docs.into_iter().map(id_of).collect();
        assert_eq!(
            query_ids.iter().collect::<Vec<_>>(),
            oracle.keys().collect::<Vec<_>>(),
            "NearDupQuery, query {q}"
        );
        // By id: the stored signature, so the same matches as the signature (itself included).
        if !deleted.contains(&q) {
            let by_id = searcher.lookup_id(&format!("d{q}")).unwrap();
            let by_id: BTreeSet<usize> = by_id.iter().map(|h| id_of(h.address)).collect();
            assert_eq!(
                by_id.iter().collect::<Vec<_>>(),
                oracle.keys().collect::<Vec<_>>()
            );
            let from_id =
                NearDupQuery::from_id(t.index.fields(), searcher.searcher(), &format!("d{q}"))
                    .unwrap();
            let n = searcher.searcher().search(&from_id, &Count).unwrap();
            assert_eq!(n, oracle.len(), "NearDupQuery::from_id, query {q}");
        }
    }
    assert!(simhash > 0 && resemblance > 0, "{simhash} / {resemblance}");
}

/// An index whose record says it was written by an earlier version (no signatures, or
/// signatures in columns) is refused with a message that says to rebuild it.
#[test]
fn an_index_of_the_previous_format_is_refused_with_a_rebuild_message() {
    let t = ram_index(BlockLayout::default());
    let tantivy_index = t.index.index().clone();
    let dir = tantivy_index.directory();
    // The record file's name, as the schema module documents it.
    let path = std::path::Path::new(".tantivy-simhash.json");
    let record = String::from_utf8(dir.atomic_read(path).unwrap()).unwrap();
    assert!(record.contains("tantivy-simhash/4"), "{record}");
    for old in [
        "tantivy-simhash/1",
        "tantivy-simhash/2",
        "tantivy-simhash/3",
    ] {
        let rewritten = record.replace("tantivy-simhash/4", old);
        dir.atomic_write(path, rewritten.as_bytes()).unwrap();
        let err = tantivy_simhash::NearDupIndex::open_recorded(tantivy_index.clone())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(old) && err.contains("rebuild") && err.contains("neardup index"),
            "{err}"
        );
    }
}
