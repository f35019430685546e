//! The process-wide memory bound on key tables (its own test binary: the bound is global), with
//! the keys in postings and in columns only (where a segment without a table is scanned).

mod common;

use common::{edited_texts, ram_index_keys, KEY_STORAGES};
use std::collections::BTreeSet;
use tantivy::schema::Value;
use tantivy::{DocAddress, TantivyDocument};
use tantivy_simhash::{
    key_table_memory_used, set_key_table_memory_limit, BlockLayout, NearDupSearcher, Policy,
    Signature,
};

/// The test's document numbers of `found` (ids are `d{i}`).
fn numbers(s: &NearDupSearcher, id: tantivy::schema::Field, found: &[DocAddress]) -> Vec<usize> {
    found
        .iter()
        .map(|&a| {
            let doc: TantivyDocument = s.searcher().doc(a).unwrap();
            doc.get_first(id).and_then(|v| v.as_str()).unwrap()[1..]
                .parse()
                .unwrap()
        })
        .collect()
}

#[test]
fn the_memory_bound_refuses_tables_and_lookups_still_find_everything() {
    for key_postings in KEY_STORAGES {
        memory_bound(key_postings);
    }
}

fn memory_bound(key_postings: bool) {
    let t = ram_index_keys(BlockLayout::default(), key_postings);
    let texts = edited_texts(17, 150);
    let mut writer = t.index.writer(30_000_000, Policy::Off).unwrap();
    for (i, text) in texts.iter().enumerate() {
        let mut doc = TantivyDocument::default();
        doc.add_text(t.id, format!("d{i}"));
        doc.add_text(t.body, text);
        writer.add_document(doc).unwrap();
        if i == 70 {
            writer.commit().unwrap();
        }
    }
    writer.commit().unwrap();
    let mut signer = t.index.rule().signer(t.index.scheme());
    let sigs: Vec<Signature> = texts.iter().map(|x| signer.sign(x)).collect();
    let rule = t.index.rule();
    // Brute force: the rule over every pair.
    let oracle = |q: &Signature| -> BTreeSet<usize> {
        (0..sigs.len())
            .filter(|&i| rule.matches(q, &sigs[i]).is_some())
            .collect()
    };
    let check = |s: &NearDupSearcher, label: &str| {
        for (n, q) in sigs.iter().enumerate() {
            let found: Vec<DocAddress> = s
                .lookup_signature_addresses(q)
                .unwrap()
                .into_iter()
                .map(|(a, _)| a)
                .collect();
            let got: BTreeSet<usize> = numbers(s, t.id, &found).into_iter().collect();
            assert_eq!(
                got.len(),
                found.len(),
                "{label}, query {n}: a document twice"
            );
            assert_eq!(got, oracle(q), "{label}, query {n}");
        }
    };

    set_key_table_memory_limit(0);
    let refused = t.index.lookups().unwrap();
    assert_eq!(refused.build_key_tables().segments, 0);
    assert_eq!(key_table_memory_used(), 0);
    check(&refused, "refused");
    let stats = refused.key_table_stats();
    assert_eq!(stats.segments, 0);
    // Keys in columns only: every lookup of every segment scanned the columns.
    let segments = refused.searcher().segment_readers().len() as u64;
    assert!(segments >= 2);
    let expected_scans = if key_postings {
        0
    } else {
        segments * sigs.len() as u64
    };
    assert_eq!(stats.scans, expected_scans);

    // Room again: the tables are built, and their memory is counted until they are dropped.
    set_key_table_memory_limit(u64::MAX);
    let stats = refused.build_key_tables();
    assert_eq!(stats.segments, refused.searcher().segment_readers().len());
    let used = key_table_memory_used();
    assert!(used >= stats.bytes && used > 0, "{used} / {stats:?}");
    check(&refused, "tables");
    assert_eq!(
        refused.key_table_stats().scans,
        expected_scans,
        "no more scans"
    );
    // The writer holds a searcher of the segments too.
    drop((refused, writer));
    assert_eq!(key_table_memory_used(), 0, "freed with the last searcher");
}
