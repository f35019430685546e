//! NearDupCollapse against a brute-force oracle: every hit scored by tantivy, ranked by (key,
//! fingerprint, id),
//! cut at the fetch-th hit (ties with it left out), folded greedily in rank order.

mod common;

use common::{add_committing, flip_bits, unmerged_writer, Rng};
use proptest::prelude::*;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;
use tantivy::collector::TopDocs;
use tantivy::indexer::NoMergePolicy;
use tantivy::query::{EnableScoring, Explanation, Query, QueryParser, Scorer, Weight};
use tantivy::schema::{Field, Schema, FAST, STORED, STRING, TEXT};
use tantivy::{doc, DocId, Index, Order, Score, Searcher, SegmentReader, Term};
use tantivy_simhash::{
    BlockLayout, Collapsed, Error, Evidence, Fingerprint, GroupBy, MatchRule, NearDupCollapse,
    NearDupConfig, NearDupIndex, NearDupLookup, Policy, RankKey, Signature,
};

const WORDS: [&str; 12] = [
    "alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "lambda", "theta", "zeta",
    "iota", "rho",
];

struct Corpus {
    docs: Vec<DocSpec>,
}

#[derive(Clone)]
struct DocSpec {
    id: String,
    body: String,
    rank: Option<u64>,
    fingerprint: Fingerprint,
}

/// Documents in near-duplicate families (0..=5 bits from a seed, so distances around k and
/// k + 1 occur), bodies from a small vocabulary (so scores vary and tie), ranks with ties and
/// gaps.
fn corpus(n: usize, seed: u64) -> Corpus {
    let mut rng = Rng(seed);
    let seeds: Vec<Fingerprint> = (0..n / 8).map(|_| Fingerprint(rng.next_u64())).collect();
    let mut docs: Vec<DocSpec> = Vec::with_capacity(n);
    for i in 0..n {
        let fingerprint = if rng.below(5) == 0 {
            Fingerprint(rng.next_u64())
        } else {
            let s = seeds[rng.below(seeds.len() as u64) as usize];
            let flips = rng.below(6) as u32;
            flip_bits(&mut rng, s, flips)
        };
        let body = if i > 0 && rng.below(6) == 0 {
            // an exact copy of an earlier body: tied scores
            docs[rng.below(i as u64) as usize].body.clone()
        } else {
            let len = 2 + rng.below(12) as usize;
            (0..len)
                .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize])
                .collect::<Vec<_>>()
                .join(" ")
        };
        let rank = (rng.below(10) != 0).then(|| rng.below(40));
        docs.push(DocSpec {
            id: format!("d{i:05}"),
            body,
            rank,
            fingerprint,
        });
    }
    Corpus { docs }
}

struct TestIndex {
    index: NearDupIndex,
    id: Field,
    body: Field,
}

fn build(docs: &[DocSpec], commit_every: usize, policy: Policy) -> TestIndex {
    build_with_layout(docs, commit_every, policy, BlockLayout::default())
}

/// An index whose rule's simhash distance is the layout's (`max_distance` can narrow it, never
/// widen it).
fn build_with_layout(
    docs: &[DocSpec],
    commit_every: usize,
    policy: Policy,
    layout: BlockLayout,
) -> TestIndex {
    let config = NearDupConfig::new("id", ["body"]).with_layout(layout);
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING | FAST | STORED);
    let body = builder.add_text_field("body", TEXT);
    let rank = builder.add_u64_field("rank", FAST);
    config.add_fields(&mut builder);
    let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config).unwrap();
    let mut writer = unmerged_writer(&index, policy);
    let documents = docs.iter().map(|d| {
        let mut document = doc!(id => d.id.clone(), body => d.body.clone());
        if let Some(r) = d.rank {
            document.add_u64(rank, r);
        }
        (document, Some(d.fingerprint))
    });
    add_committing(&mut writer, documents, commit_every);
    TestIndex { index, id, body }
}

fn query(t: &TestIndex, text: &str) -> Box<dyn Query> {
    QueryParser::for_index(t.index.index(), vec![t.body])
        .parse_query(text)
        .unwrap()
}

/// [(member id, distance to the leader)]
type Members = Vec<(String, Option<u32>)>;
/// (leader id, leader key, members, count, count_exact)
type Summary<K> = Vec<(String, K, Members, usize, bool)>;

fn summary<K: RankKey>(c: &Collapsed<K>) -> Summary<K> {
    c.groups()
        .iter()
        .map(|g| {
            (
                g.leader.id.clone(),
                g.leader.key.clone(),
                g.members
                    .iter()
                    .map(|m| (m.id.clone(), m.distance))
                    .collect(),
                g.count,
                g.count_exact,
            )
        })
        .collect()
}

struct OracleHit<K> {
    key: K,
    id: String,
    fingerprint: Fingerprint,
    group: Option<String>,
}

/// Every hit of `all` (unsorted), ranked by (key, fingerprint, id); the window; the greedy fold.
fn oracle<K: RankKey>(
    mut all: Vec<OracleHit<K>>,
    fetch: usize,
    limit: usize,
    k: u32,
    order: Order,
    by_tag: bool,
) -> Summary<K> {
    all.sort_by(|a, b| {
        a.key
            .rank_cmp(&b.key, order)
            .then_with(|| a.fingerprint.cmp(&b.fingerprint))
            .then_with(|| a.id.cmp(&b.id))
    });
    let exact = all.len() < fetch;
    let window: Vec<&OracleHit<K>> = if exact {
        all.iter().collect()
    } else {
        let cutoff = all[fetch - 1].key.clone();
        all.iter()
            .filter(|h| h.key.rank_cmp(&cutoff, order) == Ordering::Less)
            .collect()
    };
    let mut groups: Vec<(&OracleHit<K>, Members)> = Vec::new();
    for h in window {
        let joined = groups.iter().position(|(leader, _)| {
            if by_tag {
                leader.group.is_some() && leader.group == h.group
            } else {
                leader.fingerprint.distance(h.fingerprint) <= k
            }
        });
        match joined {
            Some(i) => {
                let d = groups[i].0.fingerprint.distance(h.fingerprint);
                groups[i].1.push((h.id.clone(), Some(d)))
            }
            None if groups.len() < limit => groups.push((h, Vec::new())),
            None => {}
        }
    }
    groups
        .into_iter()
        .map(|(l, m)| {
            let count = m.len() + 1;
            (l.id.clone(), l.key.clone(), m, count, exact)
        })
        .collect()
}

fn fingerprints(docs: &[DocSpec]) -> HashMap<String, Fingerprint> {
    docs.iter().map(|d| (d.id.clone(), d.fingerprint)).collect()
}

/// Every live hit of `q`, scored by tantivy.
fn all_hits_by_score(
    s: &NearDupLookup,
    q: &dyn Query,
    fps: &HashMap<String, Fingerprint>,
) -> Vec<OracleHit<Score>> {
    let n = s.searcher().num_docs() as usize;
    let hits = s
        .searcher()
        .search(q, &TopDocs::with_limit(n.max(1)).order_by_score())
        .unwrap();
    hits.into_iter()
        .map(|(key, a)| {
            let id = s.id_of(a).unwrap().unwrap();
            OracleHit {
                key,
                fingerprint: fps[&id],
                group: s.group_of(a).unwrap(),
                id,
            }
        })
        .collect()
}

fn all_hits_by_rank(
    s: &NearDupLookup,
    q: &dyn Query,
    fps: &HashMap<String, Fingerprint>,
    order: Order,
) -> Vec<OracleHit<Option<u64>>> {
    let n = s.searcher().num_docs() as usize;
    let hits = s
        .searcher()
        .search(
            q,
            &TopDocs::with_limit(n.max(1)).order_by_fast_field::<u64>("rank", order),
        )
        .unwrap();
    hits.into_iter()
        .map(|(key, a)| {
            let id = s.id_of(a).unwrap().unwrap();
            OracleHit {
                key,
                fingerprint: fps[&id],
                group: None,
                id,
            }
        })
        .collect()
}

const QUERIES: [&str; 5] = ["alpha", "beta gamma", "omega", "rho iota kappa", "zeta"];

#[test]
fn by_score_matches_oracle_on_many_segments() {
    let c = corpus(1200, 1);
    let t = build(&c.docs, 97, Policy::Off);
    // deletes: a few documents disappear from both sides
    {
        let mut w = t.index.writer(20_000_000, Policy::Off).unwrap();
        w.index_writer().set_merge_policy(Box::new(NoMergePolicy));
        for i in (0..1200).step_by(37) {
            w.delete_term(Term::from_field_text(t.id, &format!("d{i:05}")));
        }
        w.commit().unwrap();
    }
    let fps = fingerprints(&c.docs);
    let s = t.index.lookups().unwrap();
    assert!(s.searcher().segment_readers().len() >= 10);
    for text in QUERIES {
        let q = query(&t, text);
        let all = || all_hits_by_score(&s, q.as_ref(), &fps);
        for (limit, fetch) in [(1, 1), (3, 5), (10, 40), (10, 13), (5, 5000)] {
            for k in [0, 3] {
                let collapse = NearDupCollapse::by_score(t.index.fields(), limit)
                    .fetch(fetch)
                    .max_distance(k)
                    .unwrap();
                let got = s.searcher().search(q.as_ref(), &collapse).unwrap();
                let want = oracle(all(), fetch, limit, k, Order::Desc, false);
                assert_eq!(
                    summary(&got),
                    want,
                    "query {text:?} limit {limit} fetch {fetch} k {k}"
                );
                assert_eq!(got.is_complete(), all().len() < fetch);
            }
        }
    }
}

#[test]
fn by_fast_field_matches_oracle_both_orders() {
    let c = corpus(900, 2);
    let t = build(&c.docs, 150, Policy::Off);
    let fps = fingerprints(&c.docs);
    let s = t.index.lookups().unwrap();
    for text in QUERIES {
        let q = query(&t, text);
        for order in [Order::Desc, Order::Asc] {
            for (limit, fetch) in [(4, 16), (10, 40), (3, 2000)] {
                let collapse =
                    NearDupCollapse::by_fast_field::<u64>(t.index.fields(), limit, "rank", order)
                        .fetch(fetch);
                let got = s.searcher().search(q.as_ref(), &collapse).unwrap();
                let want = oracle(
                    all_hits_by_rank(&s, q.as_ref(), &fps, order),
                    fetch,
                    limit,
                    3,
                    order,
                    false,
                );
                assert_eq!(summary(&got), want, "{text:?} {order:?} {limit} {fetch}");
            }
        }
    }
}

#[test]
fn widening_finds_enough_groups_within_the_bound() {
    // 60 near-copies of one text rank first; 8 other documents follow.
    let mut rng = Rng(7);
    let seed = Fingerprint(rng.next_u64());
    let mut docs = Vec::new();
    for i in 0..60 {
        docs.push(DocSpec {
            id: format!("c{i:03}"),
            body: format!(
                "licence licence licence licence grant{}",
                " pad".repeat(i % 7)
            ),
            rank: None,
            fingerprint: flip_bits(&mut rng, seed, (i % 2) as u32),
        });
    }
    for (i, word) in WORDS.iter().enumerate().take(8) {
        docs.push(DocSpec {
            id: format!("o{i:03}"),
            body: format!("licence {word}{}", " pad".repeat(60 + i)),
            rank: None,
            fingerprint: Fingerprint(rng.next_u64()),
        });
    }
    let t = build(&docs, 17, Policy::Off);
    let fps = fingerprints(&docs);
    let s = t.index.lookups().unwrap();
    let q = query(&t, "licence");
    let collapse = NearDupCollapse::by_score(t.index.fields(), 5).fetch(20);
    // One search with fetch 20 sees only the copies: one group.
    let once = s.searcher().search(q.as_ref(), &collapse).unwrap();
    assert_eq!(once.fetch(), 20);
    assert_eq!(once.groups().len(), 1);
    assert!(!once.is_complete());
    // Widening: 20 -> 40 -> 80 (complete).
    let wide = collapse.search(s.searcher(), q.as_ref()).unwrap();
    assert_eq!(wide.fetch(), 80);
    assert_eq!(wide.groups().len(), 5);
    assert!(wide.is_complete());
    assert_eq!(wide.groups()[0].count, 60);
    let want = oracle(
        all_hits_by_score(&s, q.as_ref(), &fps),
        80,
        5,
        3,
        Order::Desc,
        false,
    );
    assert_eq!(summary(&wide), want);
    // The bound: never more than max_fetch; the result says it is not complete.
    let bounded = collapse
        .max_fetch(40)
        .search(s.searcher(), q.as_ref())
        .unwrap();
    assert_eq!(bounded.fetch(), 40);
    assert!(bounded.groups().len() < 5);
    assert!(!bounded.is_complete());
    assert!(bounded.groups().iter().all(|g| !g.count_exact));
}

fn boundary_case(flips_a: u32, flips_b: u32, seed: u64) -> (Fingerprint, Vec<DocSpec>) {
    let mut rng = Rng(seed);
    let leader = Fingerprint(rng.next_u64());
    let a = flip_bits(&mut rng, leader, flips_a);
    let b = flip_bits(&mut rng, leader, flips_b);
    let docs = vec![
        DocSpec {
            id: "leader".into(),
            body: "needle needle needle needle".into(),
            rank: Some(3),
            fingerprint: leader,
        },
        DocSpec {
            id: "a".into(),
            body: "needle needle hay".into(),
            rank: Some(2),
            fingerprint: a,
        },
        DocSpec {
            id: "b".into(),
            body: "needle hay hay hay".into(),
            rank: Some(1),
            fingerprint: b,
        },
    ];
    (leader, docs)
}

#[test]
fn distance_k_joins_and_k_plus_one_does_not() {
    for k in 0..=6u32 {
        // a at exactly k joins; b at k + 1 leads its own group (whatever its distance to a:
        // members never attract).
        let (_, docs) = boundary_case(k, k + 1, 11 + k as u64);
        let t = build_with_layout(&docs, 2, Policy::Off, BlockLayout::for_distance(6).unwrap());
        let s = t.index.lookups().unwrap();
        let q = query(&t, "needle");
        let got = NearDupCollapse::by_score(t.index.fields(), 10)
            .max_distance(k)
            .unwrap()
            .search(s.searcher(), q.as_ref())
            .unwrap();
        let ids: Vec<(String, Members)> = got
            .groups()
            .iter()
            .map(|g| {
                (
                    g.leader.id.clone(),
                    g.members
                        .iter()
                        .map(|m| (m.id.clone(), m.distance))
                        .collect(),
                )
            })
            .collect();
        assert_eq!(
            ids,
            vec![
                ("leader".to_string(), vec![("a".to_string(), Some(k))]),
                ("b".to_string(), vec![]),
            ],
            "k = {k}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Generated neighbours (0..=k+1 bits from a seed) on two segments: the collapse equals the
    /// oracle.
    #[test]
    fn neighbours_fold_like_the_oracle(seed in any::<u64>(), k in 0u32..=4, n in 5usize..40) {
        let mut rng = Rng(seed);
        let centre = Fingerprint(rng.next_u64());
        let docs: Vec<DocSpec> = (0..n)
            .map(|i| {
                let flips = rng.below(k as u64 + 2) as u32;
                DocSpec {
                    id: format!("p{i:03}"),
                    body: format!("needle {}", "hay ".repeat(rng.below(5) as usize)),
                    rank: Some(rng.below(4)),
                    fingerprint: flip_bits(&mut rng, centre, flips),
                }
            })
            .collect();
        let layout = BlockLayout::for_distance(4).unwrap();
        let t = build_with_layout(&docs, n / 2 + 1, Policy::Off, layout);
        let fps = fingerprints(&docs);
        let s = t.index.lookups().unwrap();
        let q = query(&t, "needle");
        let fetch = n / 2 + 1;
        let collapse =
            NearDupCollapse::by_score(t.index.fields(), 4)
                .max_distance(k)
                .unwrap()
                .fetch(fetch);
        let got = s.searcher().search(q.as_ref(), &collapse).unwrap();
        let all = all_hits_by_score(&s, q.as_ref(), &fps);
        let want = oracle(all, fetch, 4, k, Order::Desc, false);
        prop_assert_eq!(summary(&got), want);
    }
}

#[test]
fn tag_collapse_groups_by_stored_group_id() {
    let c = corpus(700, 3);
    let t = build(&c.docs, 120, Policy::Tag);
    let fps = fingerprints(&c.docs);
    let s = t.index.lookups().unwrap();
    // Some groups exist, and some tagged documents are farther than k from their group's
    // leader in a result: a tag is not a distance.
    for text in QUERIES {
        let q = query(&t, text);
        for (limit, fetch) in [(5, 20), (10, 400)] {
            let collapse = NearDupCollapse::by_score(t.index.fields(), limit)
                .fetch(fetch)
                .group_by(GroupBy::Tag)
                .unwrap();
            let got = s.searcher().search(q.as_ref(), &collapse).unwrap();
            let want = oracle(
                all_hits_by_score(&s, q.as_ref(), &fps),
                fetch,
                limit,
                3,
                Order::Desc,
                true,
            );
            assert_eq!(summary(&got), want, "{text:?} {limit} {fetch}");
            for g in got.groups() {
                for m in &g.members {
                    assert_eq!(m.group, g.leader.group);
                }
            }
        }
    }
}

#[test]
fn tag_collapse_needs_the_group_field() {
    let config = NearDupConfig::new("id", ["body"]).with_group_field(None);
    let mut builder = Schema::builder();
    builder.add_text_field("id", STRING | FAST);
    builder.add_text_field("body", TEXT);
    config.add_fields(&mut builder);
    let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config).unwrap();
    let err = NearDupCollapse::by_score(index.fields(), 3)
        .group_by(GroupBy::Tag)
        .err()
        .unwrap();
    assert!(err.to_string().contains("group"), "{err}");
}

fn split(docs: &[DocSpec], parts: usize) -> Vec<Vec<DocSpec>> {
    let mut out = vec![Vec::new(); parts];
    for (i, d) in docs.iter().enumerate() {
        out[(i * 7 + i / 3) % parts].push(d.clone());
    }
    out
}

/// `docs` split over three indexes, each committed every `commit_every` documents.
fn shards_of(docs: &[DocSpec], commit_every: usize) -> Vec<TestIndex> {
    split(docs, 3)
        .iter()
        .map(|d| build(d, commit_every, Policy::Off))
        .collect()
}

fn lookups_of(shards: &[TestIndex]) -> Vec<NearDupLookup> {
    shards.iter().map(|t| t.index.lookups().unwrap()).collect()
}

#[test]
fn three_shards_merge_to_the_single_index_result() {
    let c = corpus(1000, 4);
    let single = build(&c.docs, 130, Policy::Off);
    let shards = shards_of(&c.docs, 90);
    let s1 = single.index.lookups().unwrap();
    let shard_searchers = lookups_of(&shards);
    let refs: Vec<&Searcher> = shard_searchers.iter().map(|s| s.searcher()).collect();
    for text in QUERIES {
        let q = query(&single, text);
        for limit in [1, 4, 10] {
            // By score, with widening. Only single-term queries: tantivy sums the scores of
            // several terms in an order that depends on where the documents sit, so a
            // multi-term score can differ in its last bit between two indexes of the same
            // documents (seen here: 3.077274 vs 3.0772738), and such near-ties may swap.
            if !text.contains(' ') {
                let collapse = NearDupCollapse::by_score(single.index.fields(), limit);
                let one = collapse.search(s1.searcher(), q.as_ref()).unwrap();
                let merged = collapse.search_shards(&refs, q.as_ref()).unwrap();
                assert_eq!(summary(&merged), summary(&one), "{text:?} limit {limit}");
                assert_eq!(merged.fetch(), one.fetch());
            }
            // by a fast field, small fetch (ties at the cut-off)
            let by_rank = NearDupCollapse::by_fast_field::<u64>(
                single.index.fields(),
                limit,
                "rank",
                Order::Desc,
            )
            .fetch(limit + 3);
            let one = by_rank.search(s1.searcher(), q.as_ref()).unwrap();
            let merged = by_rank.search_shards(&refs, q.as_ref()).unwrap();
            assert_eq!(
                summary(&merged),
                summary(&one),
                "{text:?} by rank, limit {limit}"
            );
        }
    }
}

#[test]
fn shard_results_serialize_and_merge() {
    let c = corpus(600, 5);
    let single = build(&c.docs, 100, Policy::Off);
    let shards = shards_of(&c.docs, 70);
    let s1 = single.index.lookups().unwrap();
    let q = query(&single, "alpha beta");
    let by_rank =
        NearDupCollapse::by_fast_field::<u64>(single.index.fields(), 6, "rank", Order::Desc)
            .fetch(30)
            .keep_window(true);
    // Leaves: one search each, results shipped as JSON.
    let mut parts = Vec::new();
    for t in &shards {
        let s = t.index.lookups().unwrap();
        let part = s.searcher().search(q.as_ref(), &by_rank).unwrap();
        let json = serde_json::to_string(&part).unwrap();
        parts.push(serde_json::from_str::<Collapsed<Option<u64>>>(&json).unwrap());
    }
    let merged = Collapsed::merge(parts.clone()).unwrap();
    let one = s1.searcher().search(q.as_ref(), &by_rank).unwrap();
    assert_eq!(summary(&merged), summary(&one));
    assert_eq!(merged.cutoff(), one.cutoff());
    // Associative: merging (part 0 + part 1) with part 2 gives the same groups.
    let left = Collapsed::merge(parts[..2].to_vec()).unwrap();
    let again = Collapsed::merge(vec![left, parts[2].clone()]).unwrap();
    assert_eq!(summary(&again), summary(&one));

    // Parts without their window, or with other settings, are refused.
    let s = shards[0].index.lookups().unwrap();
    let without = s
        .searcher()
        .search(
            q.as_ref(),
            &NearDupCollapse::by_fast_field::<u64>(single.index.fields(), 6, "rank", Order::Desc)
                .fetch(30),
        )
        .unwrap();
    assert!(Collapsed::merge(vec![without, parts[1].clone()]).is_err());
    let other_fetch = s
        .searcher()
        .search(
            q.as_ref(),
            &NearDupCollapse::by_fast_field::<u64>(single.index.fields(), 6, "rank", Order::Desc)
                .fetch(31)
                .keep_window(true),
        )
        .unwrap();
    assert!(Collapsed::merge(vec![other_fetch, parts[1].clone()]).is_err());
    assert!(Collapsed::<Option<u64>>::merge(Vec::new()).is_err());
}

/// A query whose weight counts how tantivy drives it.
#[derive(Clone, Debug)]
struct SpyQuery {
    inner: Arc<dyn Query>,
    pruning: Arc<AtomicUsize>,
    plain: Arc<AtomicUsize>,
}

struct SpyWeight {
    inner: Box<dyn Weight>,
    pruning: Arc<AtomicUsize>,
    plain: Arc<AtomicUsize>,
}

impl Query for SpyQuery {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(SpyWeight {
            inner: self.inner.weight(scoring)?,
            pruning: self.pruning.clone(),
            plain: self.plain.clone(),
        }))
    }
}

impl Weight for SpyWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        self.inner.scorer(reader, boost)
    }
    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        self.inner.explain(reader, doc)
    }
    fn for_each(
        &self,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(DocId, Score),
    ) -> tantivy::Result<()> {
        self.plain.fetch_add(1, AtomicOrdering::SeqCst);
        self.inner.for_each(reader, callback)
    }
    fn for_each_pruning(
        &self,
        threshold: Score,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) -> tantivy::Result<()> {
        self.pruning.fetch_add(1, AtomicOrdering::SeqCst);
        self.inner.for_each_pruning(threshold, reader, callback)
    }
}

#[test]
fn collect_segment_is_delegated_so_pruning_is_kept() {
    let c = corpus(300, 6);
    let t = build(&c.docs, 100, Policy::Off);
    let s = t.index.lookups().unwrap();
    let segments = s.searcher().segment_readers().len();
    let spy = SpyQuery {
        inner: Arc::from(query(&t, "alpha beta")),
        pruning: Arc::new(AtomicUsize::new(0)),
        plain: Arc::new(AtomicUsize::new(0)),
    };
    let collapse = NearDupCollapse::by_score(t.index.fields(), 3);
    s.searcher().search(&spy, &collapse).unwrap();
    assert_eq!(spy.pruning.load(AtomicOrdering::SeqCst), segments);
    assert_eq!(spy.plain.load(AtomicOrdering::SeqCst), 0);
}

/// For each leader (by id, in rank order), the hits of `all` whose first leader within `k` (or
/// with the same tag) it is.
fn oracle_exact_counts<K>(
    all: &[OracleHit<K>],
    leaders: &[String],
    k: u32,
    by_tag: bool,
) -> Vec<usize> {
    let leader_hits: Vec<&OracleHit<K>> = leaders
        .iter()
        .map(|id| all.iter().find(|h| &h.id == id).unwrap())
        .collect();
    let mut counts = vec![0; leaders.len()];
    for h in all {
        let first = leader_hits.iter().position(|l| {
            if by_tag {
                l.group.is_some() && l.group == h.group
            } else {
                l.fingerprint.distance(h.fingerprint) <= k
            }
        });
        if let Some(i) = first {
            counts[i] += 1;
        }
    }
    counts
}

#[test]
fn exact_counts_count_every_hit() {
    let c = corpus(1500, 8);
    let t = build(&c.docs, 200, Policy::Tag);
    let fps = fingerprints(&c.docs);
    let s = t.index.lookups().unwrap();
    let mut lower_bounds_raised = 0;
    for text in QUERIES {
        let q = query(&t, text);
        for by_tag in [false, true] {
            let mut collapse = NearDupCollapse::by_score(t.index.fields(), 6)
                .fetch(9)
                .max_fetch(9);
            if by_tag {
                collapse = collapse.group_by(GroupBy::Tag).unwrap();
            }
            let windowed = collapse.search(s.searcher(), q.as_ref()).unwrap();
            let exact = collapse
                .exact_counts(true)
                .search(s.searcher(), q.as_ref())
                .unwrap();
            let all = all_hits_by_score(&s, q.as_ref(), &fps);
            assert!(all.len() > 9, "the window must not hold every hit");
            assert!(!windowed.is_complete());
            let leaders: Vec<String> = exact.groups().iter().map(|g| g.leader.id.clone()).collect();
            let want = oracle_exact_counts(&all, &leaders, 3, by_tag);
            let got: Vec<usize> = exact.groups().iter().map(|g| g.count).collect();
            assert_eq!(got, want, "{text:?} by_tag {by_tag}");
            assert!(exact.groups().iter().all(|g| g.count_exact));
            // Same groups as without exact counts; counts at least the window's.
            assert_eq!(windowed.groups().len(), exact.groups().len());
            for (w, e) in windowed.groups().iter().zip(exact.groups()) {
                assert_eq!(w.leader.id, e.leader.id);
                assert_eq!(w.members, e.members);
                assert!(e.count >= w.count);
                lower_bounds_raised += usize::from(e.count > w.count);
            }
        }
    }
    assert!(lower_bounds_raised > 0);
}

#[test]
fn exact_counts_sum_over_shards() {
    let c = corpus(900, 9);
    let single = build(&c.docs, 130, Policy::Off);
    let shards = shards_of(&c.docs, 90);
    let s1 = single.index.lookups().unwrap();
    let shard_searchers = lookups_of(&shards);
    let refs: Vec<&Searcher> = shard_searchers.iter().map(|s| s.searcher()).collect();
    for text in QUERIES {
        let q = query(&single, text);
        let by_rank =
            NearDupCollapse::by_fast_field::<u64>(single.index.fields(), 5, "rank", Order::Desc)
                .fetch(7)
                .max_fetch(7)
                .exact_counts(true);
        let one = by_rank.search(s1.searcher(), q.as_ref()).unwrap();
        let merged = by_rank.search_shards(&refs, q.as_ref()).unwrap();
        assert_eq!(summary(&merged), summary(&one), "{text:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    /// Any split of a corpus into 2 to 4 shards, any fetch and limit: the merged shard results
    /// equal the single index's, by a fast field full of ties and by a single-term score.
    #[test]
    fn any_split_merges_to_the_single_index_result(
        seed in any::<u64>(),
        parts in 2usize..=4,
        fetch in 1usize..30,
        limit in 1usize..8,
    ) {
        let c = corpus(240, seed);
        let mut rng = Rng(seed ^ 0x5eed);
        let mut split_docs = vec![Vec::new(); parts];
        for d in &c.docs {
            split_docs[rng.below(parts as u64) as usize].push(d.clone());
        }
        let single = build(&c.docs, 60, Policy::Off);
        let shards: Vec<TestIndex> = split_docs.iter().map(|d| build(d, 25, Policy::Off)).collect();
        let s1 = single.index.lookups().unwrap();
        let shard_searchers: Vec<NearDupLookup> =
            shards.iter().map(|t| t.index.lookups().unwrap()).collect();
        let refs: Vec<&Searcher> = shard_searchers.iter().map(|s| s.searcher()).collect();
        for text in ["alpha", "omega sigma"] {
            let q = query(&single, text);
            let by_rank = NearDupCollapse::by_fast_field::<u64>(single.index.fields(), limit, "rank", Order::Asc)
            .fetch(fetch)
            .keep_window(true);
            // One search per shard at this fetch, merged, against one search of the single index.
            let one = s1.searcher().search(q.as_ref(), &by_rank).unwrap();
            let merged = Collapsed::merge(
                refs.iter().map(|s| s.search(q.as_ref(), &by_rank).unwrap()).collect(),
            )
            .unwrap();
            prop_assert_eq!(summary(&merged), summary(&one));
            prop_assert_eq!(merged.cutoff(), one.cutoff());
            prop_assert_eq!(merged.rest().len(), one.rest().len());
            // With widening.
            let one = by_rank.search(s1.searcher(), q.as_ref()).unwrap();
            let merged = by_rank.search_shards(&refs, q.as_ref()).unwrap();
            prop_assert_eq!(summary(&merged), summary(&one));
            if !text.contains(' ') {
                let by_score = NearDupCollapse::by_score(single.index.fields(), limit)
                .fetch(fetch);
                let one = by_score.search(s1.searcher(), q.as_ref()).unwrap();
                let merged = by_score.search_shards(&refs, q.as_ref()).unwrap();
                prop_assert_eq!(summary(&merged), summary(&one));
            }
        }
    }
}

/// The trap of issue 12: an ascending inner collector under a descending collapse returned 0
/// groups as a plain collector, and `search` widened and returned d19..d15 instead of d0..d4,
/// without an error. The order is now stated once; a collector that disagrees is an error.
#[test]
fn the_rank_order_is_stated_once_and_a_disagreeing_collector_is_an_error() {
    // 20 documents far apart (no two within k), ranked 0..19 by the `rank` field.
    let mut rng = Rng(12);
    let docs: Vec<DocSpec> = (0..20)
        .map(|i| DocSpec {
            id: format!("d{i}"),
            body: "alpha beta".into(),
            rank: Some(i),
            fingerprint: Fingerprint(rng.next_u64()),
        })
        .collect();
    for a in &docs {
        for b in &docs {
            assert!(a.id == b.id || a.fingerprint.distance(b.fingerprint) > 3);
        }
    }
    let t = build(&docs, 7, Policy::Off);
    let s = t.index.lookups().unwrap();
    let q = query(&t, "alpha");
    let leaders = |c: &Collapsed<Option<u64>>| -> Vec<String> {
        c.groups().iter().map(|g| g.leader.id.clone()).collect()
    };
    let first_five: Vec<String> = (0..5).map(|i| format!("d{i}")).collect();

    let ascending = NearDupCollapse::by_fast_field::<u64>(t.index.fields(), 5, "rank", Order::Asc);
    let plain = s.searcher().search(q.as_ref(), &ascending).unwrap();
    assert_eq!(leaders(&plain), first_five);
    let widened = ascending.search(s.searcher(), q.as_ref()).unwrap();
    assert_eq!(leaders(&widened), first_five);

    // The trap's shape: the collector ranks ascending, the collapse is told descending.
    let confused = NearDupCollapse::with_top_docs(t.index.fields(), 5, Order::Desc, |n| {
        TopDocs::with_limit(n).order_by_fast_field::<u64>("rank", Order::Asc)
    });
    let err = s.searcher().search(q.as_ref(), &confused).unwrap_err();
    assert!(err.to_string().contains("ranks in Desc order"), "{err}");
    let err = confused.search(s.searcher(), q.as_ref()).unwrap_err();
    assert!(err.to_string().contains("by_fast_field"), "{err}");
    // Told the order it ranks in, the same collector gives the right groups.
    let agreeing = NearDupCollapse::with_top_docs(t.index.fields(), 5, Order::Asc, |n| {
        TopDocs::with_limit(n).order_by_fast_field::<u64>("rank", Order::Asc)
    });
    assert_eq!(
        leaders(&agreeing.search(s.searcher(), q.as_ref()).unwrap()),
        first_five
    );
}

/// Texts in near-duplicate families from the query vocabulary: bases, copies with a few words
/// changed (the simhash branch), and copies under another site's chrome or with a paragraph
/// added (beyond the simhash distance, caught by the resemblance branch).
fn signed_texts(n: usize, seed: u64) -> Vec<String> {
    let mut rng = Rng(seed);
    let mut bases: Vec<Vec<&str>> = Vec::new();
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let variant = rng.below(4);
        if bases.is_empty() || variant == 0 {
            let len = 30 + rng.below(60) as usize;
            let words: Vec<&str> = (0..len)
                .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize])
                .collect();
            out.push(words.join(" "));
            bases.push(words);
            continue;
        }
        let mut d = bases[rng.below(bases.len() as u64) as usize].clone();
        for _ in 0..rng.below(3) {
            let at = rng.below(d.len() as u64) as usize;
            d[at] = WORDS[rng.below(WORDS.len() as u64) as usize];
        }
        let body = d.join(" ");
        out.push(match variant {
            1 => body,
            2 => format!("Site News\nhome | about | theta rho\n\n{body}\n\nall rights reserved"),
            _ => {
                let extra: Vec<&str> = (0..d.len() / 4)
                    .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize])
                    .collect();
                format!("{body}\n\n{}", extra.join(" "))
            }
        });
    }
    out
}

/// Signed documents through DedupWriter (the index computes and stores their signatures).
fn build_signed(texts: &[String], first: usize, commit_every: usize) -> TestIndex {
    let config = NearDupConfig::new("id", ["body"]);
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING | FAST | STORED);
    let body = builder.add_text_field("body", TEXT);
    builder.add_u64_field("rank", FAST);
    config.add_fields(&mut builder);
    let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config).unwrap();
    let mut writer = unmerged_writer(&index, Policy::Off);
    let documents = texts.iter().enumerate().map(|(i, text)| {
        let name = format!("d{:05}", first + i);
        (doc!(id => name, body => text.as_str()), None)
    });
    add_committing(&mut writer, documents, commit_every);
    TestIndex { index, id, body }
}

/// (leader id, [(member id, distance, resemblance)], count, count_exact)
type RuleSummary = Vec<(String, Vec<(String, Option<u32>, Option<f32>)>, usize, bool)>;

fn rule_summary<K: RankKey>(c: &Collapsed<K>) -> RuleSummary {
    c.groups()
        .iter()
        .map(|g| {
            let members = g
                .members
                .iter()
                .map(|m| (m.id.clone(), m.distance, m.resemblance))
                .collect();
            (g.leader.id.clone(), members, g.count, g.count_exact)
        })
        .collect()
}

/// The oracle by the rule: every hit of the query ranked by (score, fingerprint, id), cut at
/// the `fetch`-th (ties left out), folded greedily with `MatchRule::matches_within`; exact
/// counts from every hit's first matching leader.
fn rule_oracle(
    hits: &[(Score, String)],
    sigs: &HashMap<String, Signature>,
    rule: &MatchRule,
    (fetch, limit, k): (usize, usize, u32),
    exact_counts: bool,
) -> RuleSummary {
    let mut all: Vec<(Score, &String, &Signature)> =
        hits.iter().map(|(s, id)| (*s, id, &sigs[id])).collect();
    all.sort_by(|a, b| {
        b.0.partial_cmp(&a.0)
            .unwrap()
            .then_with(|| a.2.fingerprint.cmp(&b.2.fingerprint))
            .then_with(|| a.1.cmp(b.1))
    });
    let complete = all.len() < fetch;
    let window: Vec<_> = if complete {
        all.clone()
    } else {
        let cutoff = all[fetch - 1].0;
        all.iter().filter(|h| h.0 > cutoff).cloned().collect()
    };
    type Group<'a> = (
        &'a Signature,
        String,
        Vec<(String, Option<u32>, Option<f32>)>,
    );
    let mut groups: Vec<Group> = Vec::new();
    for (_, id, sig) in &window {
        let joined = groups
            .iter()
            .enumerate()
            .find_map(|(i, g)| rule.matches_within(g.0, sig, k).map(|e| (i, e)));
        match joined {
            Some((i, e)) => groups[i]
                .2
                .push(((*id).clone(), Some(e.distance()), e.resemblance())),
            None if groups.len() < limit => groups.push((sig, (*id).clone(), Vec::new())),
            None => {}
        }
    }
    let counts: Vec<usize> = if exact_counts && !complete {
        let mut counts = vec![0; groups.len()];
        for (_, _, sig) in &all {
            let first = groups
                .iter()
                .position(|g| rule.matches_within(g.0, sig, k).is_some());
            if let Some(i) = first {
                counts[i] += 1;
            }
        }
        counts
    } else {
        groups.iter().map(|g| g.2.len() + 1).collect()
    };
    groups
        .into_iter()
        .zip(counts)
        .map(|((_, id, members), count)| (id, members, count, complete || exact_counts))
        .collect()
}

/// Every live hit of `q` by score, with its id.
fn scored_ids(s: &NearDupLookup, q: &dyn Query) -> Vec<(Score, String)> {
    let n = s.searcher().num_docs() as usize;
    s.searcher()
        .search(q, &TopDocs::with_limit(n.max(1)).order_by_score())
        .unwrap()
        .into_iter()
        .map(|(score, a)| (score, s.id_of(a).unwrap().unwrap()))
        .collect()
}

/// Signed texts, so both branches of the rule fire: the collapse (plain and with exact
/// counts, whole and narrowed to k = 1) equals the oracle that folds by
/// `MatchRule::matches_within`, with the evidence (distance, resemblance) of every member; and
/// three shards merge to the single index's result.
#[test]
fn the_collapse_folds_by_the_match_rule() {
    let texts = signed_texts(600, 31);
    let t = build_signed(&texts, 0, 80);
    let rule = *t.index.rule();
    let mut signer = rule.signer(t.index.scheme());
    let sigs: HashMap<String, Signature> = texts
        .iter()
        .enumerate()
        .map(|(i, x)| (format!("d{i:05}"), signer.sign(x)))
        .collect();
    let s = t.index.lookups().unwrap();
    assert!(s.searcher().segment_readers().len() >= 5);
    let shards: Vec<TestIndex> = (0..3)
        .map(|p| build_signed(&texts[p * 200..(p + 1) * 200], p * 200, 50))
        .collect();
    let shard_searchers: Vec<NearDupLookup> =
        shards.iter().map(|t| t.index.lookups().unwrap()).collect();
    let shard_refs: Vec<&Searcher> = shard_searchers.iter().map(|s| s.searcher()).collect();
    let mut by_resemblance = 0;
    for text in ["alpha", "beta", "omega", "theta rho", "zeta"] {
        let q = query(&t, text);
        let hits = scored_ids(&s, q.as_ref());
        for (fetch, limit, k) in [(12, 4, 3), (40, 8, 3), (40, 8, 1), (5000, 20, 3)] {
            for exact in [false, true] {
                let collapse = NearDupCollapse::by_score(t.index.fields(), limit)
                    .fetch(fetch)
                    .max_fetch(fetch)
                    .max_distance(k)
                    .unwrap()
                    .exact_counts(exact);
                let got = collapse.search(s.searcher(), q.as_ref()).unwrap();
                let want = rule_oracle(&hits, &sigs, &rule, (fetch, limit, k), exact);
                let case = format!("{text:?} fetch {fetch} limit {limit} k {k} exact {exact}");
                assert_eq!(rule_summary(&got), want, "{case}");
                by_resemblance += want
                    .iter()
                    .flat_map(|g| &g.1)
                    .filter(|m| m.2.is_some())
                    .count();
                // Single-term scores are the same in any layout: the shards merge to it.
                if !text.contains(' ') {
                    let merged = collapse.search_shards(&shard_refs, q.as_ref()).unwrap();
                    assert_eq!(rule_summary(&merged), want, "shards: {case}");
                }
            }
        }
    }
    assert!(by_resemblance > 0, "no member joined by resemblance");
}

/// `max_distance` narrows the rule and cannot widen it beyond what the keys guarantee.
#[test]
fn max_distance_beyond_the_layout_is_an_error() {
    let t = build_signed(&signed_texts(5, 1), 0, 5);
    let err = NearDupCollapse::by_score(t.index.fields(), 3)
        .max_distance(4)
        .err();
    assert!(matches!(err, Some(Error::InvalidConfig(_))), "{err:?}");
    let sig = |fp: u64| Signature {
        fingerprint: Fingerprint(fp),
        sketch: Default::default(),
    };
    let rule = MatchRule::default();
    assert_eq!(rule.matches_within(&sig(0), &sig(0b11), 1), None);
    assert_eq!(
        rule.matches_within(&sig(0), &sig(0b11), 2),
        Some(Evidence::Simhash { distance: 2 })
    );
}
