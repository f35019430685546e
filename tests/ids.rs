//! Ids read through `NearDupLookup::id_of` (one by one at first, then from the segment's id
//! table once it is built) equal the ids in the doc store, across segments, deletes, a merge and
//! a reopened index.

mod common;

use common::Rng;
use std::collections::HashMap;
use tantivy::indexer::NoMergePolicy;
use tantivy::schema::{Schema, Value, FAST, STORED, STRING, TEXT};
use tantivy::{doc, DocAddress, Index, TantivyDocument, Term};
use tantivy_simhash::{Fingerprint, NearDupConfig, NearDupIndex, NearDupLookup, Policy};

/// Every live document's id by `id_of`, read `rounds` times, checked against the doc store.
fn check_ids(index: &NearDupIndex, rounds: usize) -> usize {
    let tantivy_searcher = index.searcher().unwrap();
    let searcher = NearDupLookup::new(index.fields(), &tantivy_searcher).unwrap();
    let id_field = index.fields().id;
    let mut checked = 0;
    for _ in 0..rounds {
        for (ord, seg) in tantivy_searcher.segment_readers().iter().enumerate() {
            for doc in seg.doc_ids_alive() {
                let address = DocAddress::new(ord as u32, doc);
                let stored: TantivyDocument = tantivy_searcher.doc(address).unwrap();
                let want = stored.get_first(id_field).and_then(|v| v.as_str()).unwrap();
                assert_eq!(searcher.id_of(address).unwrap().as_deref(), Some(want));
                checked += 1;
            }
        }
    }
    checked
}

#[test]
fn ids_from_tables_equal_the_doc_store() {
    let config = NearDupConfig::new("id", ["body"]);
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING | FAST | STORED);
    builder.add_text_field("body", TEXT);
    config.add_fields(&mut builder);
    let dir = tempfile::tempdir().unwrap();
    let index = NearDupIndex::create(
        Index::create_in_dir(dir.path(), builder.build()).unwrap(),
        config.clone(),
    )
    .unwrap();
    let mut w = index.writer(30_000_000, Policy::Off).unwrap();
    w.index_writer().set_merge_policy(Box::new(NoMergePolicy));
    let mut rng = Rng(3);
    let mut live: HashMap<String, Fingerprint> = HashMap::new();
    for commit in 0..3 {
        for i in 0..300 {
            // Ids of every length, some sharing long prefixes, some non-ASCII.
            let name = match i % 3 {
                0 => format!("doc-{commit}-{i}"),
                1 => format!(
                    "{}/{commit}/{i}",
                    "https://example.org/a/long/prefix".repeat(1 + i % 4)
                ),
                _ => format!("文档{commit}号{i}"),
            };
            let fp = Fingerprint(rng.next_u64());
            w.add_document_with_fingerprint(doc!(id => name.as_str()), fp)
                .unwrap();
            live.insert(name, fp);
        }
        w.commit().unwrap();
    }
    let doomed: Vec<String> = live.keys().take(40).cloned().collect();
    for name in &doomed {
        w.delete_term(Term::from_field_text(id, name));
        live.remove(name);
    }
    w.commit().unwrap();
    assert!(index.searcher().unwrap().segment_readers().len() >= 3);
    // Three rounds: the first reads go through the dictionary, later ones through the table.
    assert_eq!(check_ids(&index, 3), 3 * live.len());

    let segments = index.index().searchable_segment_ids().unwrap();
    w.index_writer_mut().merge(&segments).wait().unwrap();
    w.commit().unwrap();
    w.wait_merging_threads().unwrap();
    assert_eq!(check_ids(&index, 3), 3 * live.len());

    // A reopened index (new readers, the same segment) reads the same ids.
    let reopened = NearDupIndex::open(Index::open_in_dir(dir.path()).unwrap(), config).unwrap();
    assert_eq!(check_ids(&reopened, 2), 2 * live.len());
    // And a lookup returns them.
    let s = NearDupLookup::new(reopened.fields(), &reopened.searcher().unwrap()).unwrap();
    for (name, fp) in live.iter().take(50) {
        let hits = s.lookup(*fp).unwrap();
        assert!(hits.iter().any(|h| &h.id == name), "{name}");
    }
}
