//! The process-wide memory bound on key tables (its own test binary: the bound is global).

mod common;

use common::{edited_texts, ram_index};
use tantivy::TantivyDocument;
use tantivy_simhash::{
    key_table_memory_used, set_key_table_memory_limit, BlockLayout, Policy, Signature,
};

#[test]
fn the_memory_bound_refuses_tables_and_lookups_still_find_everything() {
    let t = ram_index(BlockLayout::default());
    let texts = edited_texts(17, 150);
    let mut writer = t.index.writer(30_000_000, Policy::Off).unwrap();
    for (i, text) in texts.iter().enumerate() {
        let mut doc = TantivyDocument::default();
        doc.add_text(t.id, format!("d{i}"));
        doc.add_text(t.body, text);
        writer.add_document(doc).unwrap();
    }
    writer.commit().unwrap();
    let mut signer = t.index.rule().signer(t.index.scheme());
    let sigs: Vec<Signature> = texts.iter().map(|x| signer.sign(x)).collect();
    let postings = t.index.lookups().unwrap().with_key_tables(false);

    set_key_table_memory_limit(0);
    let refused = t.index.lookups().unwrap();
    assert_eq!(refused.build_key_tables().segments, 0);
    assert_eq!(key_table_memory_used(), 0);
    for q in &sigs {
        assert_eq!(
            refused.lookup_signature_addresses(q).unwrap(),
            postings.lookup_signature_addresses(q).unwrap()
        );
    }
    assert_eq!(refused.key_table_stats().segments, 0);

    // Room again: the tables are built, and their memory is counted until they are dropped.
    set_key_table_memory_limit(u64::MAX);
    let stats = refused.build_key_tables();
    assert_eq!(stats.segments, refused.searcher().segment_readers().len());
    let used = key_table_memory_used();
    assert!(used >= stats.bytes && used > 0, "{used} / {stats:?}");
    for q in &sigs {
        assert_eq!(
            refused.lookup_signature_addresses(q).unwrap(),
            postings.lookup_signature_addresses(q).unwrap()
        );
    }
    // The writer holds a searcher of the segments too.
    drop((refused, postings, writer));
    assert_eq!(key_table_memory_used(), 0, "freed with the last searcher");
}
