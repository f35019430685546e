//! A searcher of one reader stays readable while another reader's writer commits, merges its
//! segments away and reloads: each reader's warmer keeps the component files of its own live
//! searchers, whatever the other reader does. Both the index's own reader
//! (`NearDupIndex::searcher`) and the public `NearDupIndex::reader` are checked.

mod common;

use common::{ram_index, Rng, TestIndex};
use tantivy::indexer::{LogMergePolicy, NoMergePolicy};
use tantivy::{doc, ReloadPolicy, Searcher};
use tantivy_simhash::{BlockLayout, DedupWriter, Fingerprint, NearDupLookup, Policy};

/// An index of 300 random fingerprints in three segments, its writer (merging nothing yet) and
/// the fingerprints.
fn three_segments(rng: &mut Rng) -> (TestIndex, DedupWriter, Vec<Fingerprint>) {
    let t = ram_index(BlockLayout::default());
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
    (t, w, fps)
}

/// Every seventh fingerprint's matches over `searcher`, by id.
fn answers(t: &TestIndex, searcher: &Searcher, fps: &[Fingerprint]) -> Vec<Vec<String>> {
    let lookup = NearDupLookup::new(t.index.fields(), searcher).unwrap();
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
}

/// Lets the writer merge the segments into fewer (waiting for its merges), with `reload` (another reader's reload)
/// run after each commit and after tantivy's warmer garbage collection (a background thread,
/// every second) has had time to run.
fn merge_away(t: &TestIndex, mut w: DedupWriter, rng: &mut Rng, reload: &dyn Fn()) {
    let mut merging = LogMergePolicy::default();
    merging.set_min_num_segments(2);
    w.index_writer().set_merge_policy(Box::new(merging));
    for i in 0..3 {
        w.add_document_with_fingerprint(doc!(t.id => format!("e{i}")), Fingerprint(rng.next_u64()))
            .unwrap();
        w.commit().unwrap();
        reload();
    }
    std::thread::sleep(std::time::Duration::from_millis(2500));
    w.add_document_with_fingerprint(doc!(t.id => "f"), Fingerprint(rng.next_u64()))
        .unwrap();
    w.commit().unwrap();
    reload();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    w.wait_merging_threads().unwrap();
    reload();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(
        t.index.index().searchable_segment_ids().unwrap().len() < 3,
        "nothing was merged"
    );
}

#[test]
fn a_held_searcher_reads_its_segments_after_another_reader_merged_them_away() {
    let mut rng = Rng(3);
    let (t, w, fps) = three_segments(&mut rng);
    // A searcher of the index's own reader, over three segments, held by the caller.
    let held = t.index.searcher().unwrap();
    assert_eq!(held.segment_readers().len(), 3);
    let before = answers(&t, &held, &fps);
    assert!(before.iter().all(|ids| !ids.is_empty()));
    // The writer merges the three segments into one and reloads its own reader a few times.
    merge_away(&t, w, &mut rng, &|| {});
    // The held searcher's segments were merged away; their component files must still be there.
    assert_eq!(answers(&t, &held, &fps), before);
}

/// Two public readers: one's reloads (and garbage collection) never release the files of the
/// other's held searcher.
#[test]
fn two_public_readers_keep_each_others_searchers_readable() {
    let mut rng = Rng(5);
    let (t, w, fps) = three_segments(&mut rng);
    let first = t.index.reader(ReloadPolicy::Manual).unwrap();
    let second = t.index.reader(ReloadPolicy::Manual).unwrap();
    let held = first.searcher();
    assert_eq!(held.segment_readers().len(), 3);
    let before = answers(&t, &held, &fps);
    assert!(before.iter().all(|ids| !ids.is_empty()));
    merge_away(&t, w, &mut rng, &|| second.reload().unwrap());
    assert!(second.searcher().segment_readers().len() < 3);
    assert_eq!(answers(&t, &held, &fps), before);
    // The first reader, reloaded, sees the merged segments and the same answers (the newer
    // documents' fingerprints are not among the queries).
    first.reload().unwrap();
    assert_eq!(answers(&t, &first.searcher(), &fps), before);
}
