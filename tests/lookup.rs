//! Lookups and `NearDupQuery` against brute force, on indexes with several segments, deletes
//! and merges, with generated neighbours (seed fingerprints with 0..=k+1 bits flipped).

mod common;

use common::*;
use proptest::prelude::*;
use std::collections::HashMap;
use tantivy::collector::{Count, DocSetCollector, TopDocs};
use tantivy::query::{BooleanQuery, ConstScoreQuery, Occur, Query, QueryParser, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::{doc, Term};
use tantivy_simhash::{BlockLayout, Fingerprint, NearDupLookup, NearDupQuery, Policy};

/// Ids matched by running the query through tantivy (deleted documents skipped by the collector).
fn query_pairs(s: &NearDupLookup, q: &NearDupQuery) -> Vec<(String, u32)> {
    let addrs = s.searcher().search(q, &DocSetCollector).unwrap();
    let mut v: Vec<(String, u32)> = addrs
        .into_iter()
        .map(|a| {
            let id = s.id_of(a).unwrap().unwrap();
            let fp = s.fingerprint_of_id(&id).unwrap().unwrap();
            (id, fp.distance(q.fingerprint()))
        })
        .collect();
    v.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    v
}

struct Built {
    t: TestIndex,
    live: HashMap<String, Fingerprint>,
    seeds: Vec<Fingerprint>,
}

/// Clusters of neighbours at every distance 0..=k+1 of a seed, plus random documents, over
/// `segments` commits, then deletes, then (optionally) a merge of every segment.
fn build(
    layout: BlockLayout,
    rng_seed: u64,
    clusters: usize,
    segments: usize,
    merge: bool,
) -> Built {
    let k = layout.max_distance();
    let t = ram_index(layout);
    let mut w = unmerged_writer(&t.index, Policy::Off);
    let mut rng = Rng(rng_seed);
    let mut docs = Vec::new();
    let mut seeds = Vec::new();
    for c in 0..clusters {
        let seed = Fingerprint(rng.next_u64());
        seeds.push(seed);
        for d in 0..=k + 1 {
            for r in 0..2 {
                docs.push((format!("c{c}-d{d}-{r}"), flip_bits(&mut rng, seed, d)));
            }
        }
        docs.push((format!("r{c}"), Fingerprint(rng.next_u64())));
    }
    let per_segment = docs.len().div_ceil(segments);
    let mut live = HashMap::new();
    for chunk in docs.chunks(per_segment) {
        for (id, fp) in chunk {
            w.add_document_with_fingerprint(doc!(t.id => id.as_str()), *fp)
                .unwrap();
            live.insert(id.clone(), *fp);
        }
        w.commit().unwrap();
    }
    // Delete about one document in six.
    let ids: Vec<String> = docs.iter().map(|(id, _)| id.clone()).collect();
    for id in ids.iter().filter(|_| rng.below(6) == 0) {
        w.delete_term(Term::from_field_text(t.id, id));
        live.remove(id);
    }
    w.commit().unwrap();
    if merge {
        let segs = t.index.index().searchable_segment_ids().unwrap();
        if segs.len() > 1 {
            w.index_writer_mut().merge(&segs).wait().unwrap();
        }
        w.commit().unwrap();
    }
    w.wait_merging_threads().unwrap();
    let n_segments = t.index.searcher().unwrap().segment_readers().len();
    if merge {
        assert_eq!(n_segments, 1);
    } else {
        assert_eq!(n_segments, segments.min(docs.len().div_ceil(per_segment)));
    }
    Built { t, live, seeds }
}

fn check_all(b: &Built, rng_seed: u64) {
    let s = b.t.index.lookups().unwrap();
    let layout_k = b.t.index.layout().max_distance();
    let mut rng = Rng(rng_seed ^ 0xabcd);
    let mut queries: Vec<Fingerprint> = b.seeds.clone();
    for &seed in &b.seeds {
        let d = rng.below(u64::from(layout_k) + 2) as u32;
        queries.push(flip_bits(&mut rng, seed, d));
    }
    queries.push(Fingerprint(rng.next_u64()));
    let mut total = 0;
    for q in queries {
        for k in 0..=layout_k {
            let want = brute_force(&b.live, q, k);
            assert_eq!(lookup_pairs(&s, q, k), want, "lookup, k={k}, q={q}");
            let query = NearDupQuery::new(s.fields(), q)
                .with_max_distance(k)
                .unwrap();
            assert_eq!(query_pairs(&s, &query), want, "query, k={k}, q={q}");
            let count = s.searcher().search(&query, &Count).unwrap();
            assert_eq!(count, want.len(), "count, k={k}");
            total += want.len();
        }
    }
    assert!(total > b.seeds.len(), "the generated neighbours are found");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, .. ProptestConfig::default() })]

    #[test]
    fn lookups_equal_brute_force(
        rng_seed in any::<u64>(),
        clusters in 3usize..25,
        segments in 1usize..6,
        merge in any::<bool>(),
    ) {
        let b = build(BlockLayout::default(), rng_seed, clusters, segments, merge);
        check_all(&b, rng_seed);
    }
}

#[test]
fn wider_layout_equals_brute_force() {
    let layout = BlockLayout::for_distance(6).unwrap();
    let b = build(layout, 7, 12, 3, false);
    check_all(&b, 7);
    let b = build(BlockLayout::for_distance(6).unwrap(), 8, 12, 4, true);
    check_all(&b, 8);
}

#[test]
fn distance_k_is_found_and_k_plus_1_is_not() {
    for layout in [
        BlockLayout::default(),
        BlockLayout::for_distance(4).unwrap(),
        BlockLayout::for_distance(6).unwrap(),
    ] {
        let k = layout.max_distance();
        let t = ram_index(layout);
        let w = t.index.writer(15_000_000, Policy::Off).unwrap();
        let mut w = w;
        let mut rng = Rng(u64::from(k));
        let q = Fingerprint(rng.next_u64());
        // Many neighbours at exactly k and k+1, with their flipped bits in every block.
        for i in 0..200 {
            let at_k = flip_bits(&mut rng, q, k);
            let beyond = flip_bits(&mut rng, q, k + 1);
            w.add_document_with_fingerprint(doc!(t.id => format!("k{i}")), at_k)
                .unwrap();
            w.add_document_with_fingerprint(doc!(t.id => format!("k1-{i}")), beyond)
                .unwrap();
        }
        w.commit().unwrap();
        let s = t.index.lookups().unwrap();
        let hits = s.lookup(q).unwrap();
        assert_eq!(hits.len(), 200, "layout k={k}");
        assert!(hits
            .iter()
            .all(|h| h.distance == k && h.id.starts_with('k')));
        assert!(hits.iter().all(|h| !h.id.starts_with("k1-")));
        let query = NearDupQuery::new(t.index.fields(), q);
        assert_eq!(s.searcher().search(&query, &Count).unwrap(), 200);
        // Beyond the layout's guarantee is refused, not silently incomplete.
        assert!(s.lookup_within(q, k + 1).is_err());
        assert!(NearDupQuery::new(t.index.fields(), q)
            .with_max_distance(k + 1)
            .is_err());
    }
}

#[test]
fn query_composes_explains_and_skips_deleted() {
    let t = ram_index(BlockLayout::default());
    let mut w = t.index.writer(15_000_000, Policy::Off).unwrap();
    let mut rng = Rng(99);
    let q = Fingerprint(rng.next_u64());
    let far = Fingerprint(!q.0);
    let docs = [
        ("a", "x.org", "apples and pears", q),
        ("b", "y.org", "apples and plums", flip_bits(&mut rng, q, 2)),
        ("c", "y.org", "pears only", flip_bits(&mut rng, q, 3)),
        ("d", "y.org", "apples again", far),
        ("e", "y.org", "apples gone", flip_bits(&mut rng, q, 1)),
    ];
    for (id, host, body, fp) in docs {
        w.add_document_with_fingerprint(doc!(t.id => id, t.host => host, t.body => body), fp)
            .unwrap();
    }
    w.commit().unwrap();
    w.delete_term(Term::from_field_text(t.id, "e"));
    w.commit().unwrap();
    let s = t.index.lookups().unwrap();
    let searcher = s.searcher();
    let near = NearDupQuery::new(t.index.fields(), q);

    // Deleted "e" is skipped: a, b, c.
    assert_eq!(searcher.search(&near, &Count).unwrap(), 3);
    let hits = near.search(searcher).unwrap();
    let got: Vec<(&str, u32)> = hits.iter().map(|h| (h.id.as_str(), h.distance)).collect();
    assert_eq!(got, [("a", 0), ("b", 2), ("c", 3)]);

    // Near-duplicates of q on host y.org.
    let host = TermQuery::new(
        Term::from_field_text(t.host, "y.org"),
        IndexRecordOption::Basic,
    );
    let both = BooleanQuery::new(vec![
        (Occur::Must, Box::new(near.clone()) as Box<dyn Query>),
        (Occur::Must, Box::new(host)),
    ]);
    assert_eq!(searcher.search(&both, &Count).unwrap(), 2);

    // A text query filtered by near-duplicates, scores unchanged; and exclusion.
    let parser = QueryParser::for_index(t.index.index(), vec![t.body]);
    let text = parser.parse_query("apples").unwrap();
    let plain = searcher
        .search(&text, &TopDocs::with_limit(10).order_by_score())
        .unwrap();
    let filtered = BooleanQuery::new(vec![
        (Occur::Must, text.box_clone()),
        (
            Occur::Must,
            Box::new(ConstScoreQuery::new(Box::new(near.clone()), 0.0)),
        ),
    ]);
    let hits = searcher
        .search(&filtered, &TopDocs::with_limit(10).order_by_score())
        .unwrap();
    assert_eq!(hits.len(), 2); // a, b (d is far, e deleted)
    for (score, addr) in &hits {
        let same = plain.iter().find(|(_, a)| a == addr).unwrap();
        assert!((score - same.0).abs() < 1e-6);
    }
    let excluded = BooleanQuery::new(vec![
        (Occur::Must, text.box_clone()),
        (Occur::MustNot, Box::new(near.clone())),
    ]);
    assert_eq!(searcher.search(&excluded, &Count).unwrap(), 1); // d

    // explain: a match says its distance, a non-match is an error.
    let addr_of = |id: &str| {
        let tq = TermQuery::new(Term::from_field_text(t.id, id), IndexRecordOption::Basic);
        searcher
            .search(&tq, &TopDocs::with_limit(1).order_by_score())
            .unwrap()[0]
            .1
    };
    // By the rule (a bare fingerprint: the simhash branch), the evidence.
    let e = near.explain(searcher, addr_of("b")).unwrap();
    assert!(
        e.to_pretty_json().contains("simhash distance 2"),
        "{}",
        e.to_pretty_json()
    );
    // Simhash-only, the radius.
    let within = near.clone().with_max_distance(3).unwrap();
    let e = within.explain(searcher, addr_of("b")).unwrap();
    assert!(
        e.to_pretty_json().contains("Hamming distance 2 <= 3"),
        "{}",
        e.to_pretty_json()
    );
    assert!(within.explain(searcher, addr_of("d")).is_err());
    assert!(near.explain(searcher, addr_of("d")).is_err());

    // from_id and from_text.
    let by_id = NearDupQuery::from_id(s.fields(), s.searcher(), "b").unwrap();
    assert_eq!(
        by_id.fingerprint(),
        s.fingerprint_of_id("b").unwrap().unwrap()
    );
    assert!(NearDupQuery::from_id(s.fields(), s.searcher(), "e").is_err()); // deleted
    assert!(NearDupQuery::from_id(s.fields(), s.searcher(), "nobody").is_err());
    let text = "one two three four five six seven eight nine ten eleven twelve";
    let from_text = NearDupQuery::from_text(&t.index, text);
    assert_eq!(from_text.fingerprint(), t.index.scheme().fingerprint(text));
}
