//! Collapse by any fast field, leaders chosen by a field, and the derank mode, against a
//! brute-force oracle: every hit of the query (scored or ranked by tantivy) with the values the
//! test gave it, ranked by (key, fingerprint, id), cut at the fetch-th hit, folded greedily,
//! leaders chosen, flattened; over several segment layouts, deletes and two shards.

mod common;

use common::{add_committing, flip_bits, unmerged_writer, Rng};
use std::cmp::Ordering;
use std::collections::HashMap;
use tantivy::collector::TopDocs;
use tantivy::query::{Query, QueryParser};
use tantivy::schema::{Field, Schema, FAST, STORED, STRING, TEXT};
use tantivy::{doc, DateTime, Index, Order, Searcher, TantivyDocument, Term};
use tantivy_simhash::ShardStatistics;
use tantivy_simhash::{
    Collapsed, Error, Fingerprint, GroupBy, NearDupCollapse, NearDupConfig, NearDupIndex,
    NearDupLookup, Policy, RankKey,
};

const WORDS: [&str; 8] = [
    "alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "lambda",
];
const QUERIES: [&str; 4] = ["alpha", "beta", "gamma delta", "omega"];

/// The fields a document may be grouped by, with the values the test gave it.
#[derive(Clone, Debug)]
struct DocSpec {
    id: String,
    body: String,
    rank: Option<u64>,
    fingerprint: Fingerprint,
    url: Option<String>,
    num: Option<u64>,
    signed: Option<i64>,
    real: Option<f64>,
    flag: Option<bool>,
    /// Seconds since the epoch.
    published: Option<i64>,
    /// The leader order's field.
    version: Option<u64>,
}

/// The grouping fields of the test schema, and how the oracle renders a document's value of
/// each (as the collapse documents it: strings as stored, numbers in decimal, dates in
/// nanoseconds).
const GROUP_FIELDS: [&str; 6] = ["url", "num", "signed", "real", "flag", "published"];

fn value_of(d: &DocSpec, field: &str) -> Option<String> {
    match field {
        "url" => d.url.clone(),
        "num" => d.num.map(|v| v.to_string()),
        "signed" => d.signed.map(|v| v.to_string()),
        "real" => d.real.map(|v| v.to_string()),
        "flag" => d.flag.map(|v| v.to_string()),
        "published" => d.published.map(|s| (s as i128 * 1_000_000_000).to_string()),
        _ => unreachable!("not a grouping field of the test: {field}"),
    }
}

/// Near-duplicate families (0..=5 bits from a seed), few distinct values per grouping field
/// (so groups have several members) and some documents without one, versions with ties.
fn corpus(n: usize, seed: u64) -> Vec<DocSpec> {
    let mut rng = Rng(seed);
    let seeds: Vec<Fingerprint> = (0..n / 8).map(|_| Fingerprint(rng.next_u64())).collect();
    let reals = [1.5, -2.25, 0.0, 1e20, 3.0];
    (0..n)
        .map(|i| {
            let s = seeds[rng.below(seeds.len() as u64) as usize];
            let flips = rng.below(6) as u32;
            let fingerprint = flip_bits(&mut rng, s, flips);
            let len = 2 + rng.below(8) as usize;
            let body = (0..len)
                .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize])
                .collect::<Vec<_>>()
                .join(" ");
            let mut maybe = |values: u64| (rng.below(8) != 0).then(|| rng.below(values));
            DocSpec {
                id: format!("d{i:05}"),
                body,
                rank: maybe(30),
                fingerprint,
                url: maybe(40).map(|v| format!("/page/{v}")),
                num: maybe(40).map(|v| v * 1_000_003),
                signed: maybe(40).map(|v| v as i64 - 20),
                real: maybe(5).map(|v| reals[v as usize]),
                flag: maybe(2).map(|v| v == 1),
                published: maybe(40).map(|v| 1_600_000_000 + v as i64 * 86_400),
                version: maybe(6),
            }
        })
        .collect()
}

struct TestIndex {
    index: NearDupIndex,
    body: Field,
}

/// An index of `docs`, committed every `commit_every` documents (one segment each, no
/// merges), then the documents of `deleted` deleted.
fn build(docs: &[DocSpec], commit_every: usize, deleted: &[String]) -> TestIndex {
    let config = NearDupConfig::new("id", ["body"]);
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING | FAST | STORED);
    let body = builder.add_text_field("body", TEXT);
    let rank = builder.add_u64_field("rank", FAST);
    let url = builder.add_text_field("url", STRING | FAST);
    let num = builder.add_u64_field("num", FAST);
    let signed = builder.add_i64_field("signed", FAST);
    let real = builder.add_f64_field("real", FAST);
    let flag = builder.add_bool_field("flag", FAST);
    let published = builder.add_date_field("published", FAST);
    let version = builder.add_u64_field("version", FAST);
    // For the error cases: a string that is not fast, and a type a collapse cannot read.
    builder.add_text_field("title", STRING);
    builder.add_bytes_field("blob", FAST);
    config.add_fields(&mut builder);
    let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config).unwrap();
    let mut writer = unmerged_writer(&index, Policy::Off);
    let documents = docs.iter().map(|d| {
        let mut document: TantivyDocument = doc!(id => d.id.clone(), body => d.body.clone());
        if let Some(v) = d.rank {
            document.add_u64(rank, v);
        }
        if let Some(v) = &d.url {
            document.add_text(url, v);
        }
        if let Some(v) = d.num {
            document.add_u64(num, v);
        }
        if let Some(v) = d.signed {
            document.add_i64(signed, v);
        }
        if let Some(v) = d.real {
            document.add_f64(real, v);
        }
        if let Some(v) = d.flag {
            document.add_bool(flag, v);
        }
        if let Some(v) = d.published {
            document.add_date(published, DateTime::from_timestamp_secs(v));
        }
        if let Some(v) = d.version {
            document.add_u64(version, v);
        }
        (document, Some(d.fingerprint))
    });
    add_committing(&mut writer, documents, commit_every);
    for d in deleted {
        writer.delete_term(Term::from_field_text(id, d));
    }
    writer.commit().unwrap();
    TestIndex { index, body }
}

fn query(t: &TestIndex, text: &str) -> Box<dyn Query> {
    QueryParser::for_index(t.index.index(), vec![t.body])
        .parse_query(text)
        .unwrap()
}

/// One hit as the oracle sees it.
#[derive(Clone)]
struct Hit<K> {
    key: K,
    doc: DocSpec,
}

/// Every live hit of `q` with its score (or rank value), found by tantivy alone.
fn all_hits<K: RankKey>(
    s: &NearDupLookup,
    q: &dyn Query,
    docs: &HashMap<String, DocSpec>,
    by_rank: Option<Order>,
    key: impl Fn(f32, Option<u64>) -> K,
) -> Vec<Hit<K>> {
    let n = s.searcher().num_docs() as usize;
    let addresses: Vec<(K, tantivy::DocAddress)> = match by_rank {
        None => s
            .searcher()
            .search(q, &TopDocs::with_limit(n.max(1)).order_by_score())
            .unwrap()
            .into_iter()
            .map(|(score, a)| (key(score, None), a))
            .collect(),
        Some(order) => s
            .searcher()
            .search(
                q,
                &TopDocs::with_limit(n.max(1)).order_by_fast_field::<u64>("rank", order),
            )
            .unwrap()
            .into_iter()
            .map(|(rank, a)| (key(0.0, rank), a))
            .collect(),
    };
    addresses
        .into_iter()
        .map(|(key, a)| Hit {
            key,
            doc: docs[&s.id_of(a).unwrap().unwrap()].clone(),
        })
        .collect()
}

/// What the oracle folds by.
#[derive(Clone, Copy)]
enum Fold<'a> {
    /// Simhash distance within k.
    Rule(u32),
    /// Equal values of a field (a document without one stands alone).
    Field(&'a str),
}

/// (leader id, leader key, group value, members [(id, distance to the leader)], count, exact)
type Group<K> = (
    String,
    K,
    Option<String>,
    Vec<(String, Option<u32>)>,
    usize,
    bool,
);

/// The expected groups: rank, cut, fold, then each group's leader chosen by `version` in
/// `leader_order` (no value last, ties by rank); members in rank order with distances to
/// the leader. Also the derank list (leader ids, then the other hits of the groups in rank
/// order).
fn oracle<K: RankKey>(
    mut all: Vec<Hit<K>>,
    (fetch, limit): (usize, usize),
    order: Order,
    fold: Fold<'_>,
    leader_order: Option<Order>,
) -> (Vec<Group<K>>, Vec<String>) {
    let rank = |a: &Hit<K>, b: &Hit<K>| {
        a.key
            .rank_cmp(&b.key, order)
            .then_with(|| a.doc.fingerprint.cmp(&b.doc.fingerprint))
            .then_with(|| a.doc.id.cmp(&b.doc.id))
    };
    all.sort_by(rank);
    let exact = all.len() < fetch;
    if !exact {
        let cutoff = all[fetch - 1].key.clone();
        all.retain(|h| h.key.rank_cmp(&cutoff, order) == Ordering::Less);
    }
    let value = |h: &Hit<K>| match fold {
        Fold::Rule(_) => None,
        Fold::Field(f) => value_of(&h.doc, f),
    };
    // Each group: its hits in rank order.
    let mut groups: Vec<Vec<Hit<K>>> = Vec::new();
    for h in all {
        let joined = groups.iter().position(|g| match fold {
            Fold::Rule(k) => g[0].doc.fingerprint.distance(h.doc.fingerprint) <= k,
            Fold::Field(_) => value(&g[0]).is_some() && value(&g[0]) == value(&h),
        });
        match joined {
            Some(i) => groups[i].push(h),
            None if groups.len() < limit => groups.push(vec![h]),
            None => {}
        }
    }
    let mut out = Vec::new();
    let mut moved = Vec::new();
    for mut hits in groups {
        if let Some(o) = leader_order {
            // The first hit (in rank order) with the best version.
            let best = (0..hits.len())
                .min_by(|&i, &j| {
                    hits[i]
                        .doc
                        .version
                        .rank_cmp(&hits[j].doc.version, o)
                        .then(i.cmp(&j))
                })
                .unwrap();
            let leader = hits.remove(best);
            hits.insert(0, leader);
        }
        let leader = &hits[0];
        let members: Vec<(String, Option<u32>)> = hits[1..]
            .iter()
            .map(|m| {
                let d = leader.doc.fingerprint.distance(m.doc.fingerprint);
                (m.doc.id.clone(), Some(d))
            })
            .collect();
        out.push((
            leader.doc.id.clone(),
            leader.key.clone(),
            value(leader),
            members,
            hits.len(),
            exact,
        ));
        moved.extend(hits.into_iter().skip(1));
    }
    moved.sort_by(rank);
    let flat = out
        .iter()
        .map(|g| g.0.clone())
        .chain(moved.into_iter().map(|h| h.doc.id))
        .collect();
    (out, flat)
}

fn summary<K: RankKey>(c: &Collapsed<K>) -> (Vec<Group<K>>, Vec<String>) {
    let groups = c
        .groups()
        .iter()
        .map(|g| {
            (
                g.leader.id.clone(),
                g.leader.key.clone(),
                g.leader.group.clone(),
                g.members
                    .iter()
                    .map(|m| (m.id.clone(), m.distance))
                    .collect(),
                g.count,
                g.count_exact,
            )
        })
        .collect();
    let flat = c.deranked().iter().map(|h| h.id.clone()).collect();
    (groups, flat)
}

fn by_id(docs: &[DocSpec]) -> HashMap<String, DocSpec> {
    docs.iter().map(|d| (d.id.clone(), d.clone())).collect()
}

/// Every 29th document deleted.
fn deletions(docs: &[DocSpec]) -> Vec<String> {
    docs.iter().step_by(29).map(|d| d.id.clone()).collect()
}

#[test]
fn by_field_leader_order_and_derank_match_the_oracle_in_any_layout() {
    let docs = corpus(900, 21);
    let deleted = deletions(&docs);
    let live: Vec<DocSpec> = docs
        .iter()
        .filter(|d| !deleted.contains(&d.id))
        .cloned()
        .collect();
    let specs = by_id(&docs);
    let mut leaders_moved = 0;
    // One segment; many segments with deletes.
    for (commit_every, gone) in [(usize::MAX, &[][..]), (61, &deleted[..])] {
        let index_docs = if gone.is_empty() { &live } else { &docs };
        let t = build(index_docs, commit_every, gone);
        let s = t.index.lookups().unwrap();
        for text in QUERIES {
            let q = query(&t, text);
            let all = all_hits(&s, q.as_ref(), &specs, None, |score, _| score);
            for (limit, fetch) in [(1, 2), (4, 9), (10, 30), (8, 5000)] {
                let folds = GROUP_FIELDS
                    .iter()
                    .map(|f| Fold::Field(f))
                    .chain([Fold::Rule(3)]);
                for fold in folds {
                    for leader_order in [None, Some(Order::Desc), Some(Order::Asc)] {
                        let mut collapse = NearDupCollapse::by_score(t.index.fields(), limit)
                            .fetch(fetch)
                            .max_fetch(fetch);
                        if let Fold::Field(f) = fold {
                            collapse = collapse.group_by(GroupBy::Field(f.into())).unwrap();
                        }
                        if let Some(o) = leader_order {
                            collapse = collapse.leader_order("version", o);
                        }
                        let got = collapse.search(s.searcher(), q.as_ref()).unwrap();
                        let want =
                            oracle(all.clone(), (fetch, limit), Order::Desc, fold, leader_order);
                        let case = format!(
                            "{text:?} limit {limit} fetch {fetch} leader order {leader_order:?} \
                             layout {commit_every}"
                        );
                        assert_eq!(summary(&got), want, "{case}");
                        leaders_moved += got
                            .groups()
                            .iter()
                            .filter(|g| g.members.iter().any(|m| m.key > g.leader.key))
                            .count();
                    }
                }
                // Ranked by a fast field, grouped by another, the newest version leading.
                let collapse = NearDupCollapse::by_fast_field::<u64>(
                    t.index.fields(),
                    limit,
                    "rank",
                    Order::Asc,
                )
                .fetch(fetch)
                .max_fetch(fetch)
                .group_by(GroupBy::Field("url".into()))
                .unwrap()
                .leader_order("version", Order::Desc);
                let got = collapse.search(s.searcher(), q.as_ref()).unwrap();
                let all = all_hits(&s, q.as_ref(), &specs, Some(Order::Asc), |_, r| r);
                let want = oracle(
                    all,
                    (fetch, limit),
                    Order::Asc,
                    Fold::Field("url"),
                    Some(Order::Desc),
                );
                assert_eq!(summary(&got), want, "{text:?} by rank, limit {limit}");
            }
        }
    }
    assert!(leaders_moved > 0, "no leader order ever chose another hit");
}

/// The oracle's exact count of each group: every hit of the query whose first group (in
/// rank order of the groups) has its value.
fn oracle_counts(all: &[Hit<f32>], values: &[Option<String>], field: &str) -> Vec<usize> {
    let mut counts = vec![0; values.len()];
    for h in all {
        let v = value_of(&h.doc, field);
        let first = values.iter().position(|g| g.is_some() && *g == v);
        if let Some(i) = first {
            counts[i] += 1;
        }
    }
    // A group without a value stands for its leader alone.
    for (c, v) in counts.iter_mut().zip(values) {
        if v.is_none() {
            *c = 1;
        }
    }
    counts
}

#[test]
fn exact_counts_by_field_count_every_hit() {
    let docs = corpus(1200, 22);
    let deleted = deletions(&docs);
    let specs = by_id(&docs);
    let t = build(&docs, 97, &deleted);
    let s = t.index.lookups().unwrap();
    let mut raised = 0;
    for text in QUERIES {
        let q = query(&t, text);
        let all = all_hits(&s, q.as_ref(), &specs, None, |score, _| score);
        for field in GROUP_FIELDS {
            let collapse = NearDupCollapse::by_score(t.index.fields(), 5)
                .fetch(8)
                .max_fetch(8)
                .group_by(GroupBy::Field(field.into()))
                .unwrap()
                .leader_order("version", Order::Desc);
            let windowed = collapse.search(s.searcher(), q.as_ref()).unwrap();
            assert!(
                !windowed.is_complete(),
                "the window must not hold every hit"
            );
            let exact = collapse
                .exact_counts(true)
                .search(s.searcher(), q.as_ref())
                .unwrap();
            let values: Vec<Option<String>> = exact
                .groups()
                .iter()
                .map(|g| g.leader.group.clone())
                .collect();
            let got: Vec<usize> = exact.groups().iter().map(|g| g.count).collect();
            assert_eq!(got, oracle_counts(&all, &values, field), "{text:?} {field}");
            assert!(exact.groups().iter().all(|g| g.count_exact));
            for (w, e) in windowed.groups().iter().zip(exact.groups()) {
                assert_eq!((&w.leader, &w.members), (&e.leader, &e.members));
                raised += usize::from(e.count > w.count);
            }
        }
        // By the rule, a leader order changes which hit is shown, not what a group counts:
        // the count is of the hits the rule gives the group's best-ranked hit.
        let by_rank_order = NearDupCollapse::by_score(t.index.fields(), 5)
            .fetch(8)
            .max_fetch(8)
            .exact_counts(true);
        let plain = by_rank_order.search(s.searcher(), q.as_ref()).unwrap();
        let newest = by_rank_order
            .leader_order("version", Order::Desc)
            .search(s.searcher(), q.as_ref())
            .unwrap();
        let counts = |c: &Collapsed<f32>| -> Vec<(usize, bool)> {
            c.groups()
                .iter()
                .map(|g| (g.count, g.count_exact))
                .collect()
        };
        assert_eq!(counts(&newest), counts(&plain), "{text:?}");
    }
    assert!(raised > 0, "no count was raised above the window's");
}

#[test]
fn two_shards_merge_to_the_single_index_result() {
    let docs = corpus(800, 23);
    let single = build(&docs, 90, &[]);
    let halves: Vec<Vec<DocSpec>> = (0..2)
        .map(|p| docs.iter().skip(p).step_by(2).cloned().collect())
        .collect();
    let shards: Vec<TestIndex> = halves.iter().map(|h| build(h, 70, &[])).collect();
    let one = single.index.lookups().unwrap();
    let shard_searchers: Vec<NearDupLookup> =
        shards.iter().map(|t| t.index.lookups().unwrap()).collect();
    let refs: Vec<&Searcher> = shard_searchers.iter().map(|s| s.searcher()).collect();
    // Single-term queries: their scores are the same in any layout.
    for text in ["alpha", "omega"] {
        let q = query(&single, text);
        for limit in [1, 5, 12] {
            for group_by in [
                GroupBy::Field("url".into()),
                GroupBy::Field("real".into()),
                GroupBy::Rule,
            ] {
                for exact in [false, true] {
                    let collapse = NearDupCollapse::by_score(single.index.fields(), limit)
                        .group_by(group_by.clone())
                        .unwrap()
                        .leader_order("version", Order::Desc)
                        .exact_counts(exact);
                    let want = collapse.search(one.searcher(), q.as_ref()).unwrap();
                    let merged = collapse.search_shards(&refs, q.as_ref()).unwrap();
                    let case = format!("{text:?} limit {limit} {group_by:?} exact {exact}");
                    assert_eq!(summary(&merged), summary(&want), "{case}");
                    // Leaves shipping JSON to a root (one fetch, no widening) merge the same.
                    let leaf = collapse.keep_window(true).fetch(limit + 2);
                    let parts: Vec<Collapsed<f32>> = refs
                        .iter()
                        .map(|s| {
                            let stats = ShardStatistics::new(refs.to_vec());
                            let part = s
                                .search_with_statistics_provider(q.as_ref(), &leaf, &stats)
                                .unwrap();
                            serde_json::from_str(&serde_json::to_string(&part).unwrap()).unwrap()
                        })
                        .collect();
                    let merged = Collapsed::merge(parts).unwrap();
                    let want = one.searcher().search(q.as_ref(), &leaf).unwrap();
                    assert_eq!(summary(&merged), summary(&want), "leaves: {case}");
                }
            }
        }
    }
}

#[test]
fn a_field_that_cannot_group_is_a_clear_error() {
    let docs = corpus(40, 24);
    let t = build(&docs, usize::MAX, &[]);
    let s = t.index.lookups().unwrap();
    let q = query(&t, "alpha");
    let by_field = |field: &str| {
        NearDupCollapse::by_score(t.index.fields(), 3)
            .group_by(GroupBy::Field(field.into()))
            .unwrap()
    };
    let cases = [
        ("nowhere", "has none"),
        ("title", "not a fast field"),
        ("blob", "of type Bytes"),
    ];
    for (field, says) in cases {
        let err = by_field(field)
            .search(s.searcher(), q.as_ref())
            .unwrap_err();
        assert!(
            matches!(&err, Error::Schema { field: f, .. } if f == field),
            "{err:?}"
        );
        assert!(err.to_string().contains(says), "{field}: {err}");
        // Used as a plain collector, the same message comes through tantivy's error.
        let err = s
            .searcher()
            .search(q.as_ref(), &by_field(field))
            .unwrap_err();
        assert!(err.to_string().contains(says), "{field}: {err}");
        let shards = [s.searcher()];
        let err = by_field(field)
            .search_shards(&shards, q.as_ref())
            .unwrap_err();
        assert!(err.to_string().contains(says), "{field}: {err}");
    }
    // A leader order must compare across segments: not a string column.
    let err = NearDupCollapse::by_score(t.index.fields(), 3)
        .leader_order("url", Order::Desc)
        .search(s.searcher(), q.as_ref())
        .unwrap_err();
    assert!(err.to_string().contains("term ordinals"), "{err}");
    let err = NearDupCollapse::by_score(t.index.fields(), 3)
        .leader_order("nowhere", Order::Desc)
        .search(s.searcher(), q.as_ref())
        .unwrap_err();
    assert!(err.to_string().contains("has none"), "{err}");
}
