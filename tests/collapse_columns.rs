//! A collapse reused over many searches keeps its segments' columns and reads ids (and string
//! group values) through the process's id tables once they are built: every id and value it
//! returns equals the doc store (the brute-force oracle), before and after the tables exist,
//! across segments, a merge into one segment and a reload, by the rule and by a field.

mod common;

use common::{flip_bits, unmerged_writer, Rng};
use tantivy::collector::Collector;
use tantivy::query::{Query, QueryParser};
use tantivy::schema::{Field, Schema, Value, FAST, STORED, STRING, TEXT};
use tantivy::{doc, DocAddress, Index, Searcher, TantivyDocument};
use tantivy_simhash::{
    Collapsed, CollapsedHit, Fingerprint, GroupBy, NearDupCollapse, NearDupConfig, NearDupIndex,
    Policy,
};

const WORDS: [&str; 8] = [
    "alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "lambda",
];

struct Fixture {
    index: NearDupIndex,
    id: Field,
    body: Field,
    section: Field,
}

/// 600 documents in near-duplicate families over 6 segments; a `section` string field with
/// 37 values (a document in 10 has none).
fn fixture() -> Fixture {
    let config = NearDupConfig::new("id", ["body"]);
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING | FAST | STORED);
    let body = builder.add_text_field("body", TEXT);
    let section = builder.add_text_field("section", STRING | FAST | STORED);
    config.add_fields(&mut builder);
    let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config).unwrap();
    let mut writer = unmerged_writer(&index, Policy::Off);
    let mut rng = Rng(7);
    let seeds: Vec<Fingerprint> = (0..40).map(|_| Fingerprint(rng.next_u64())).collect();
    for i in 0..600u64 {
        let seed = seeds[rng.below(seeds.len() as u64) as usize];
        let flips = rng.below(8) as u32;
        let fingerprint = flip_bits(&mut rng, seed, flips);
        let text: Vec<&str> = (0..2 + rng.below(6))
            .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize])
            .collect();
        let mut document =
            doc!(id => format!("doc-{i:04}-{}", rng.below(1000)), body => text.join(" "));
        if i % 10 != 3 {
            document.add_text(section, format!("section/{}", i % 37));
        }
        writer
            .add_document_with_fingerprint(document, fingerprint)
            .unwrap();
        if (i + 1) % 100 == 0 {
            writer.commit().unwrap();
        }
    }
    writer.commit().unwrap();
    Fixture {
        index,
        id,
        body,
        section,
    }
}

fn queries(f: &Fixture) -> Vec<Box<dyn Query>> {
    let parser = QueryParser::for_index(f.index.index(), vec![f.body]);
    let mut texts: Vec<String> = WORDS.iter().map(|w| w.to_string()).collect();
    texts.extend(WORDS.windows(2).map(|w| w.join(" ")));
    texts
        .iter()
        .map(|t| parser.parse_query(t).unwrap())
        .collect()
}

/// The stored string of `field` of the hit's document (the oracle).
fn stored(searcher: &Searcher, hit: &CollapsedHit<f32>, field: Field) -> Option<String> {
    let document: TantivyDocument = searcher.doc(hit.address).unwrap();
    document
        .get_first(field)
        .and_then(|v| v.as_str())
        .map(str::to_string)
}

/// Every hit of the result (leaders, members and the rest of the window).
fn hits(result: &Collapsed<f32>) -> Vec<&CollapsedHit<f32>> {
    let mut all = Vec::new();
    for group in result.groups() {
        all.push(&group.leader);
        all.extend(&group.members);
    }
    all.extend(result.rest());
    all
}

/// Runs every query `rounds` times through `collapse`; checks every id (and, by field, every
/// group value) against the doc store, and every round's result against the first. Returns
/// how many hits were checked.
fn check<C>(f: &Fixture, by_field: bool, collapse: &NearDupCollapse<C>, rounds: usize) -> usize
where
    C: Collector<Fruit = Vec<(f32, DocAddress)>>,
{
    let searcher = f.index.searcher().unwrap();
    let queries = queries(f);
    let first: Vec<Collapsed<f32>> = queries
        .iter()
        .map(|q| collapse.search(&searcher, q.as_ref()).unwrap())
        .collect();
    let mut checked = 0;
    for round in 0..rounds {
        for (q, want) in queries.iter().zip(&first) {
            let got = collapse.search(&searcher, q.as_ref()).unwrap();
            assert_eq!(&got, want, "round {round} differs from the first");
            for hit in hits(&got) {
                assert_eq!(Some(&hit.id), stored(&searcher, hit, f.id).as_ref());
                if by_field {
                    assert_eq!(hit.group, stored(&searcher, hit, f.section));
                }
                checked += 1;
            }
        }
    }
    checked
}

#[test]
fn ids_and_values_equal_the_doc_store_before_and_after_tables_across_a_merge() {
    let f = fixture();
    let by_rule = NearDupCollapse::by_score(f.index.fields(), 5).keep_window(true);
    let by_field = NearDupCollapse::by_score(f.index.fields(), 5)
        .keep_window(true)
        .group_by(GroupBy::Field("section".into()))
        .unwrap();
    let searcher = f.index.searcher().unwrap();
    assert_eq!(searcher.segment_readers().len(), 6);
    // 15 queries x 15 window hits x 20 rounds: each of the 6 segments serves far more than the
    // 32 reads after which its id table is built, so both read paths are compared.
    assert!(check(&f, false, &by_rule, 20) > 1000);
    assert!(check(&f, true, &by_field, 20) > 1000);

    // Merge into one segment and reload: the same collapses read the new segment's columns.
    let mut writer = f.index.writer(20_000_000, Policy::Off).unwrap();
    let ids = f.index.index().searchable_segment_ids().unwrap();
    writer.index_writer_mut().merge(&ids).wait().unwrap();
    writer.commit().unwrap();
    writer.wait_merging_threads().unwrap();
    let merged = f.index.searcher().unwrap();
    assert_eq!(merged.segment_readers().len(), 1);
    assert!(check(&f, false, &by_rule, 5) > 200);
    assert!(check(&f, true, &by_field, 5) > 200);
}
