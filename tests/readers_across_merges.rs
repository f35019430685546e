//! A searcher of the index's own reader stays readable while a writer (whose reader is another
//! one) commits, merges its segments away and reloads: each reader's warmer keeps the
//! component files of its own live searchers, whatever the other reader does.

mod common;

use common::{ram_index, Rng};
use tantivy::doc;
use tantivy::indexer::{LogMergePolicy, NoMergePolicy};
use tantivy_simhash::{BlockLayout, Fingerprint, NearDupLookup, Policy};

#[test]
fn a_held_searcher_reads_its_segments_after_another_reader_merged_them_away() {
    let t = ram_index(BlockLayout::default());
    let mut rng = Rng(3);
    let fps: Vec<Fingerprint> = (0..300).map(|_| Fingerprint(rng.next_u64())).collect();
    let mut w = t
        .index
        .writer_with_num_threads(1, 20_000_000, Policy::Off)
        .unwrap();
    w.index_writer().set_merge_policy(Box::new(NoMergePolicy));
    for (i, fp) in fps.iter().enumerate() {
        w.add_document_with_fingerprint(doc!(t.id => format!("d{i}")), *fp)
            .unwrap();
        if i % 100 == 99 {
            w.commit().unwrap();
        }
    }
    // A searcher of the index's own reader, over three segments, held by the caller.
    let held = t.index.searcher().unwrap();
    assert_eq!(held.segment_readers().len(), 3);
    let answers = |lookup: &NearDupLookup| -> Vec<Vec<String>> {
        fps.iter()
            .step_by(7)
            .map(|fp| {
                lookup
                    .lookup(*fp)
                    .unwrap()
                    .into_iter()
                    .map(|n| n.id)
                    .collect()
            })
            .collect()
    };
    let before = answers(&NearDupLookup::new(t.index.fields(), &held).unwrap());
    assert!(before.iter().all(|ids| !ids.is_empty()));
    // The writer merges the three segments into one and reloads its own reader a few times.
    let mut merging = LogMergePolicy::default();
    merging.set_min_num_segments(2);
    w.index_writer().set_merge_policy(Box::new(merging));
    for i in 0..3 {
        w.add_document_with_fingerprint(doc!(t.id => format!("e{i}")), Fingerprint(rng.next_u64()))
            .unwrap();
        w.commit().unwrap();
    }
    // tantivy collects warmers' garbage on a background thread every second.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    w.add_document_with_fingerprint(doc!(t.id => "f"), Fingerprint(rng.next_u64()))
        .unwrap();
    w.commit().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    w.wait_merging_threads().unwrap();
    assert!(
        t.index.index().searchable_segment_ids().unwrap().len() < 3,
        "nothing was merged"
    );
    // The held searcher's segments were merged away; their component files must still be there.
    let after = NearDupLookup::new(t.index.fields(), &held).unwrap();
    assert_eq!(answers(&after), before);
}
