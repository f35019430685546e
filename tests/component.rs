//! The segment component: every segment's signatures and sorted key tables in a file of its
//! own. Lookups through the tables find exactly what a brute-force scan of the match rule finds
//! (across segments, deletes, merges and reopening); a merged segment's file equals the file a
//! rebuild from scratch writes; damaged files are errors that name the file, never panics.

mod common;

use common::{edited_texts, unmerged_writer, TestIndex};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use tantivy::collector::DocSetCollector;
use tantivy::indexer::NoMergePolicy;
use tantivy::schema::Value;
use tantivy::{DocAddress, Index, TantivyDocument, Term};
use tantivy_simhash::{
    BlockLayout, DedupWriter, Error, Evidence, Fingerprint, NearDupIndex, NearDupLookup,
    NearDupQuery, Policy, Signature, COMPONENT_EXTENSION,
};

/// The test's document number of a hit (ids are `d{i}`).
fn doc_number(s: &NearDupLookup, id_field: tantivy::schema::Field, a: DocAddress) -> usize {
    let doc: TantivyDocument = s.searcher().doc(a).unwrap();
    doc.get_first(id_field).and_then(|v| v.as_str()).unwrap()[1..]
        .parse()
        .unwrap()
}

/// What a bounded `NearDupQuery` must return, by brute force over every document of each
/// segment: per segment and key of the query, the first `bound` live documents in doc id order
/// whose signature has that key, those that the rule matches.
fn bounded_query_oracle(
    t: &TestIndex,
    s: &NearDupLookup,
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
            let holders = (0..segment.max_doc()).filter(|&d| {
                !segment.is_deleted(d) && doc_keys[d as usize].get(position) == Some(key)
            });
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

/// Every query of `sigs` against brute force over `live`: rule lookups, bounded lookups and
/// queries, simhash-only lookups and `NearDupQuery`.
fn check(
    t: &TestIndex,
    s: &NearDupLookup,
    sigs: &[Signature],
    live: &BTreeSet<usize>,
    label: &str,
) {
    let rule = *t.index.rule();
    let k = rule.layout().max_distance();
    let fields = t.index.fields();
    let (mut by_resemblance, mut matches) = (0, 0);
    for (q, query) in sigs.iter().enumerate() {
        let oracle: BTreeSet<usize> = live
            .iter()
            .copied()
            .filter(|&i| rule.matches(query, &sigs[i]).is_some())
            .collect();
        let found = s.lookup_signature_addresses(query).unwrap();
        let got: BTreeSet<usize> = found.iter().map(|&(a, _)| doc_number(s, t.id, a)).collect();
        assert_eq!(
            got.len(),
            found.len(),
            "{label}, query {q}: a document twice"
        );
        assert_eq!(got, oracle, "{label}, query {q}: rule");
        for &(a, e) in &found {
            let i = doc_number(s, t.id, a);
            assert_eq!(rule.matches(query, &sigs[i]), Some(e), "{label}, query {q}");
            by_resemblance += usize::from(matches!(e, Evidence::Resemblance { .. }));
        }
        matches += found.len();
        for bound in [1, 3] {
            let qa = NearDupQuery::from_signature(fields, query.clone())
                .with_max_postings_per_key(bound);
            let in_query = s.searcher().search(&qa, &DocSetCollector).unwrap();
            assert_eq!(
                in_query,
                bounded_query_oracle(t, s, query, bound, sigs),
                "{label}, query {q}, bound {bound}: NearDupQuery"
            );
        }
        let within: BTreeSet<usize> = live
            .iter()
            .copied()
            .filter(|&i| query.fingerprint.distance(sigs[i].fingerprint) <= k)
            .collect();
        let near: BTreeSet<usize> = s
            .lookup_addresses(query.fingerprint, k)
            .unwrap()
            .iter()
            .map(|&(a, _)| doc_number(s, t.id, a))
            .collect();
        assert_eq!(near, within, "{label}, query {q}: simhash-only");
        let docs = s
            .searcher()
            .search(
                &NearDupQuery::from_signature(fields, query.clone()),
                &DocSetCollector,
            )
            .unwrap();
        let ids: BTreeSet<usize> = docs.into_iter().map(|a| doc_number(s, t.id, a)).collect();
        assert_eq!(ids, oracle, "{label}, query {q}: NearDupQuery");
    }
    assert!(
        matches > sigs.len() && by_resemblance > 0,
        "{label}: {matches} / {by_resemblance}"
    );
}

fn add(writer: &mut DedupWriter, t: &TestIndex, i: usize, text: &str) {
    let mut doc = TantivyDocument::default();
    doc.add_text(t.id, format!("d{i}"));
    doc.add_text(t.body, text);
    writer.add_document(doc).unwrap();
}

/// The texts: edited copies, and exact copies of the first (hot keys: every key of it is held
/// by 12 documents).
fn texts() -> Vec<String> {
    let mut texts = edited_texts(23, 200);
    for _ in 0..12 {
        texts.push(texts[0].clone());
    }
    texts
}

#[test]
fn tables_equal_brute_force_across_segments_deletes_merges_and_reopening() {
    // On disk, so the reopened index reads the same files.
    let dir = tempfile::tempdir().unwrap();
    let t = common::dir_index_with(dir.path(), common::config(BlockLayout::default()));
    let mut signer = t.index.rule().signer(t.index.scheme());
    let texts = texts();
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
    check(&t, &first, &sigs, &live, "segments and deletes");

    // New documents in a new segment beside the old ones.
    for i in texts.len()..texts.len() + 30 {
        add(&mut writer, &t, i, &texts[i - 30]);
    }
    writer.commit().unwrap();
    let mut all = sigs.clone();
    all.extend_from_slice(&sigs[sigs.len() - 30..]);
    live.extend(texts.len()..texts.len() + 30);
    check(
        &t,
        &t.index.lookups().unwrap(),
        &all,
        &live,
        "a new segment",
    );

    // Merged to one segment: its file rebuilt from the sources' live documents.
    let segments = t.index.index().searchable_segment_ids().unwrap();
    writer.index_writer_mut().merge(&segments).wait().unwrap();
    writer.commit().unwrap();
    writer.wait_merging_threads().unwrap();
    let merged = t.index.lookups().unwrap();
    assert_eq!(merged.searcher().segment_readers().len(), 1);
    check(&t, &merged, &all, &live, "merged");
    // The searcher made before the merge still reads its segments' files.
    check(
        &t,
        &first,
        &sigs,
        &(0..texts.len()).filter(|i| i % 7 != 3).collect(),
        "old searcher",
    );

    // Reopened from the directory, every searcher of the old handle dropped.
    drop((first, merged));
    let reopened = NearDupIndex::open_recorded(Index::open_in_dir(dir.path()).unwrap()).unwrap();
    let t2 = TestIndex {
        index: reopened,
        id: t.id,
        body: t.body,
        host: t.host,
    };
    check(&t2, &t2.index.lookups().unwrap(), &all, &live, "reopened");
}

/// The component files of an index's segments, by segment id.
fn component_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == COMPONENT_EXTENSION))
        .collect();
    files.sort();
    files
}

/// An on-disk index in `dir`, the signatures of [`texts`], and a one-thread `Off` writer that
/// never merges on its own (the tests merge when they choose).
fn signed_index_without_merges(dir: &Path) -> (TestIndex, Vec<Signature>, DedupWriter) {
    let t = common::dir_index_with(dir, common::config(BlockLayout::default()));
    let mut signer = t.index.rule().signer(t.index.scheme());
    let sigs: Vec<Signature> = texts().iter().map(|x| signer.sign(x)).collect();
    let writer = unmerged_writer(&t.index, Policy::Off);
    (t, sigs, writer)
}

/// The component file that indexing documents `order` (with `signature(i)`) into a fresh
/// one-segment index writes.
fn rebuilt_file(order: &[usize], signature: impl Fn(usize) -> Signature) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let fresh = common::dir_index_with(dir.path(), common::config(BlockLayout::default()));
    let mut w = fresh
        .index
        .writer_with_num_threads(1, 30_000_000, Policy::Off)
        .unwrap();
    for &i in order {
        let doc = tantivy::doc!(fresh.id => format!("d{i}"), fresh.body => "text");
        w.add_document_with_signature(doc, signature(i)).unwrap();
    }
    w.commit().unwrap();
    only_segment_file(dir.path(), &fresh.index)
}

/// A segment merged from segments with deletes holds exactly the file that indexing its live
/// documents, in the merged order, into a fresh one-segment index writes: the signatures, the
/// bitset and every table, byte for byte.
#[test]
fn a_merged_file_equals_a_rebuild_from_scratch() {
    let dir = tempfile::tempdir().unwrap();
    let (t, sigs, mut writer) = signed_index_without_merges(dir.path());
    for (i, sig) in sigs.iter().enumerate() {
        let doc = tantivy::doc!(t.id => format!("d{i}"), t.body => "text");
        writer
            .add_document_with_signature(doc, sig.clone())
            .unwrap();
        if i % 37 == 36 {
            writer.commit().unwrap();
        }
    }
    writer.commit().unwrap();
    // Deletes reaching into every segment, some before and some after a first merge.
    for i in (0..sigs.len()).filter(|i| i % 5 == 2) {
        writer.delete_term(Term::from_field_text(t.id, &format!("d{i}")));
    }
    writer.commit().unwrap();
    let ids = t.index.index().searchable_segment_ids().unwrap();
    writer.index_writer_mut().merge(&ids[..3]).wait().unwrap();
    for i in (0..sigs.len()).filter(|i| i % 11 == 6) {
        writer.delete_term(Term::from_field_text(t.id, &format!("d{i}")));
    }
    writer.commit().unwrap();
    let ids = t.index.index().searchable_segment_ids().unwrap();
    writer.index_writer_mut().merge(&ids).wait().unwrap();
    writer.commit().unwrap();
    writer.wait_merging_threads().unwrap();
    let s = t.index.lookups().unwrap();
    assert_eq!(s.searcher().segment_readers().len(), 1);
    let order: Vec<usize> = (0..s.searcher().segment_reader(0).max_doc())
        .map(|d| doc_number(&s, t.id, DocAddress::new(0, d)))
        .collect();
    assert!(order.len() < sigs.len() * 4 / 5, "{} live", order.len());
    drop(s);
    let merged = only_segment_file(dir.path(), &t.index);
    let rebuilt = rebuilt_file(&order, |i| sigs[i].clone());
    // tantivy's footer (after our bytes) records the file's own checksum and version: equal too.
    assert_eq!(merged.len(), rebuilt.len());
    assert!(
        merged == rebuilt,
        "the merged file differs from the rebuild"
    );
}

/// The file of the single segment of the index in `dir` (its bytes).
fn only_segment_file(dir: &Path, index: &NearDupIndex) -> Vec<u8> {
    let searcher = index.searcher().unwrap();
    assert_eq!(searcher.segment_readers().len(), 1);
    let segment = searcher.segment_reader(0).segment_id().uuid_string();
    std::fs::read(dir.join(format!("{segment}.{COMPONENT_EXTENSION}"))).unwrap()
}

/// A segment of fingerprints only stores one word per document (no zero sketches), reads its
/// documents back with empty sketches, and merged with a segment of full signatures gives the
/// file a rebuild from scratch writes (the fingerprint-only documents with empty sketches).
#[test]
fn fingerprint_only_segments_store_no_sketch_and_merge_like_a_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let (t, sigs, mut writer) = signed_index_without_merges(dir.path());
    let rule = *t.index.rule();
    let empty = tantivy_simhash::Sketch::empty(rule.minhash());
    let fingerprint_only = |i: usize| !i.is_multiple_of(3);
    let doc = |i: usize| tantivy::doc!(t.id => format!("d{i}"), t.body => "text");
    let only: Vec<usize> = (0..sigs.len()).filter(|&i| fingerprint_only(i)).collect();
    for &i in &only {
        writer
            .add_document_with_fingerprint(doc(i), sigs[i].fingerprint)
            .unwrap();
    }
    writer.commit().unwrap();
    let file = only_segment_file(dir.path(), &t.index);
    let full_bytes = (1 + rule.minhash().sketch_words()) * 8 * only.len();
    assert!(
        file.len() * 2 < full_bytes,
        "{} bytes for {} fingerprints",
        file.len(),
        only.len()
    );
    for i in (0..sigs.len()).filter(|&i| !fingerprint_only(i)) {
        writer
            .add_document_with_signature(doc(i), sigs[i].clone())
            .unwrap();
    }
    writer.commit().unwrap();
    let s = t.index.lookups().unwrap();
    assert_eq!(s.searcher().segment_readers().len(), 2);
    for (i, sig) in sigs.iter().enumerate() {
        let got = s.signature_of_id(&format!("d{i}")).unwrap().unwrap();
        assert_eq!(got.fingerprint, sig.fingerprint);
        let want = if fingerprint_only(i) {
            &empty
        } else {
            &sig.sketch
        };
        assert_eq!(&got.sketch, want, "d{i}");
    }
    drop(s);
    let ids = t.index.index().searchable_segment_ids().unwrap();
    writer.index_writer_mut().merge(&ids).wait().unwrap();
    writer.commit().unwrap();
    writer.wait_merging_threads().unwrap();
    let s = t.index.lookups().unwrap();
    let order: Vec<usize> = (0..s.searcher().segment_reader(0).max_doc())
        .map(|d| doc_number(&s, t.id, DocAddress::new(0, d)))
        .collect();
    drop(s);
    let merged = only_segment_file(dir.path(), &t.index);
    let rebuilt = rebuilt_file(&order, |i| {
        let mut sig = sigs[i].clone();
        if fingerprint_only(i) {
            sig.sketch = empty.clone();
        }
        sig
    });
    assert!(
        merged == rebuilt,
        "the merged file differs from the rebuild"
    );
}

/// Keys of 3 blocks of 16 bits (48 bits) need 8-byte table entries; lookups still find every
/// fingerprint within the layout's distance.
#[test]
fn wide_keys_are_found_through_wide_entries() {
    let layout = BlockLayout::new(4, 3, 1).unwrap();
    let t = common::ram_index(layout);
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
    let mut found_near = 0;
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
        found_near += got.len();
        assert_eq!(got, want, "query {q}");
    }
    assert!(found_near > fps.len(), "{found_near}");
}

/// An index made on disk with a few segments; returns its directory and a query text.
fn small_disk_index() -> (tempfile::TempDir, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let t = common::dir_index_with(dir.path(), common::config(BlockLayout::default()));
    let texts = edited_texts(3, 60);
    let mut writer = unmerged_writer(&t.index, Policy::Off);
    for (i, text) in texts.iter().enumerate() {
        add(&mut writer, &t, i, text);
        if i % 25 == 24 {
            writer.commit().unwrap();
        }
    }
    writer.commit().unwrap();
    drop(writer);
    (dir, texts)
}

/// Opens the index in `dir` and runs every lookup; the first error, if any.
fn use_index(dir: &Path, texts: &[String]) -> Result<(), Error> {
    let index = NearDupIndex::open_recorded(Index::open_in_dir(dir).map_err(Error::Tantivy)?)?;
    let s = index.lookups()?;
    for text in texts {
        let sig = index.sign(text);
        s.lookup_signature(&sig)?;
        s.lookup(sig.fingerprint)?;
    }
    s.verify_checksums()
}

/// Truncated and damaged component files are errors that name the file and say what to do;
/// never a panic. Every changed byte is caught (by the structure check on open, or by the
/// checksum every merge verifies).
#[test]
fn damaged_files_are_errors_that_name_the_file() {
    let (dir, texts) = small_disk_index();
    use_index(dir.path(), &texts).unwrap();
    let file = component_files(dir.path())[0].clone();
    let name = file.file_name().unwrap().to_string_lossy().to_string();
    let original = std::fs::read(&file).unwrap();
    let mut rng = common::Rng(77);
    let mut damaged_cases = Vec::new();
    // Truncations: nothing, a header, mid-file, the footer cut.
    for len in [
        0,
        8,
        40,
        64,
        original.len() / 2,
        original.len() - 30,
        original.len() - 1,
    ] {
        damaged_cases.push(original[..len].to_vec());
    }
    // Single bytes changed anywhere, and a few bursts.
    for _ in 0..60 {
        let mut bytes = original.clone();
        let at = rng.below(bytes.len() as u64) as usize;
        bytes[at] ^= 1 << rng.below(8);
        damaged_cases.push(bytes);
    }
    for _ in 0..10 {
        let mut bytes = original.clone();
        let at = rng.below(bytes.len() as u64 - 64) as usize;
        for b in &mut bytes[at..at + 64] {
            *b = rng.next_u64() as u8;
        }
        damaged_cases.push(bytes);
    }
    for (case, bytes) in damaged_cases.iter().enumerate() {
        std::fs::write(&file, bytes).unwrap();
        let result = std::panic::catch_unwind(|| use_index(dir.path(), &texts));
        let Ok(result) = result else {
            panic!("case {case}: a damaged file panicked");
        };
        let err = result
            .err()
            .unwrap_or_else(|| panic!("case {case}: damage went unnoticed"));
        let msg = err.to_string();
        // tantivy's own footer check names the file too ("... {path} ...").
        assert!(
            msg.contains(&name) || msg.contains(name.trim_end_matches(".neardup")),
            "case {case}: {msg}"
        );
    }
    std::fs::write(&file, &original).unwrap();
    use_index(dir.path(), &texts).unwrap();
}

/// A segment merge refuses a damaged source file (the checksum) rather than copying it.
#[test]
fn a_merge_refuses_a_damaged_source() {
    let (dir, _texts) = small_disk_index();
    let file = component_files(dir.path())[0].clone();
    let mut bytes = std::fs::read(&file).unwrap();
    // A byte in the signatures: consistent structure, wrong content.
    bytes[70] ^= 0x10;
    std::fs::write(&file, &bytes).unwrap();
    let index = NearDupIndex::open_recorded(Index::open_in_dir(dir.path()).unwrap()).unwrap();
    let mut writer = index
        .writer_with_num_threads(1, 30_000_000, Policy::Off)
        .unwrap();
    let ids = index.index().searchable_segment_ids().unwrap();
    let err = writer
        .index_writer_mut()
        .merge(&ids)
        .wait()
        .unwrap_err()
        .to_string();
    assert!(err.contains("checksum") && err.contains("damaged"), "{err}");
}

/// Plain tantivy: reading needs nothing; writing needs the component registered, and says so.
#[test]
fn plain_tantivy_reads_freely_and_writes_once_the_component_is_registered() {
    let (dir, _texts) = small_disk_index();
    let index = Index::open_in_dir(dir.path()).unwrap();
    let searcher = index.reader().unwrap().searcher();
    assert_eq!(searcher.num_docs(), 60);
    let err = index.writer::<TantivyDocument>(15_000_000).err().unwrap();
    assert!(err.to_string().contains(COMPONENT_EXTENSION), "{err}");
    let config = tantivy_simhash::IndexRecord::read(&index)
        .unwrap()
        .unwrap()
        .config(None, None)
        .unwrap();
    let mut index = index;
    index.register_plugin(config.segment_component().unwrap());
    let mut writer = index.writer::<TantivyDocument>(15_000_000).unwrap();
    writer.add_document(TantivyDocument::default()).unwrap();
    writer.commit().unwrap();
}

/// An index sorted by a field is refused up front: the component keeps doc id order.
#[test]
fn an_index_sorted_by_a_field_is_refused() {
    let config = common::config(BlockLayout::default());
    let (schema, ..) = common::schema(&config);
    let settings = tantivy::IndexSettings {
        sort_by_field: Some(tantivy::IndexSortByField {
            field: "simhash_seq".into(),
            order: tantivy::Order::Asc,
        }),
        ..Default::default()
    };
    let index = Index::builder()
        .schema(schema)
        .settings(settings)
        .create_in_ram()
        .unwrap();
    let err = NearDupIndex::create(index, config).unwrap_err().to_string();
    assert!(err.contains("sorted by a field"), "{err}");
}
