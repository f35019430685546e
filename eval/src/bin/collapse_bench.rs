//! Collapse benchmark (issue 4): `NearDupCollapse` returning `limit` groups next to tantivy's
//! `TopDocs` returning `limit` hits, measured in the same run on the same queries.
//!
//! ```text
//! cargo run --release -p tantivy-simhash-eval --bin collapse_bench -- ../shared/data
//! cargo run --release -p tantivy-simhash-eval --bin collapse_bench -- ../shared/data --docs 2000 --queries 50 --runs 1
//! cargo run --release -p tantivy-simhash-eval --bin collapse_bench -- ../shared/data --overfetch 4 --segments 32
//! ```
//!
//! Corpus: `natural-en.jsonl.gz` (title and text indexed with tantivy's default analyzer, id
//! `STRING | FAST | STORED`, section `STRING | FAST` and `section_hash` `u64 FAST`, fingerprints from title + text with the default scheme). Queries:
//! 1 to 3 words sampled from one title (words of 3+ letters), parsed over title and text (OR).
//! Each query runs every method in turn, each method's `--runs` repetitions back to back (so
//! every method is timed warm); its time per query is the best of them; ratios are sums over
//! the queries. `--only N` times method N alone (numbered from 0 in the table's order), for
//! profiling. Index layouts: merged into 1 segment, and
//! `--segments` segments (default 16, no merges). Methods:
//! - `TopDocs(limit)`: `TopDocs::with_limit(limit).order_by_score()` (the baseline);
//! - `TopDocs(limit) + ids`: the baseline plus reading the `limit` user ids (what a result page
//!   needs at least);
//! - `TopDocs(limit) + ids through the crate's id tables`: the same ids read with
//!   `NearDupLookup::id_of`, which reads a segment's ids from its in-memory id table once
//!   built (the collapse reads ids the same way);
//! - `TopDocs(fetch)`: the inner search of the collapse alone (fetch = `--overfetch` x limit,
//!   default 3 x, the library's default);
//! - `collapse, ids of groups read`: `NearDupCollapse::search` (widening up to 64 x limit), ids
//!   of every returned leader and member read (batched per segment);
//! - `collapse, ids not read`: the same with `read_ids(false)` (addresses only, as `TopDocs`);
//! - `collapse, ids not read, exact counts`: plus `exact_counts(true)` (one more pass over
//!   every hit);
//! - `distinct by section (str), ids not read`: the collapse by the value of a `section` fast
//!   field (`group_by(GroupBy::Field("section"))`: one result per section, widening as above).
//!   A section is the url's host and first two path segments (a Debian package's pages, a
//!   Python docs chapter): 14,893 values over the 23,903 documents, 10,708 of them on one
//!   document, the largest on 504 (the `host` field has 5 values, too few to fill 10 groups);
//! - `distinct by section (u64), ids not read`: the same by a `u64` fast field holding a hash
//!   of the section (a numeric column);
//! - `distinct by section (str), ids not read, exact counts`: plus `exact_counts(true)`.
//!
//! `TopDocs(limit) + ids` reads ids as tantivy alone can: per segment, sorted by term ordinal,
//! one dictionary block decompression per block touched.

#[path = "../support/data.rs"]
mod data;

#[path = "../support/pigeonhole.rs"]
mod pigeonhole;

use data::{read_jsonl, Doc, Res};
use pigeonhole::Rng;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tantivy::collector::{Collector, TopDocs};
use tantivy::indexer::NoMergePolicy;
use tantivy::query::{Query, QueryParser};
use tantivy::schema::{Schema, FAST, STORED, STRING, TEXT};
use tantivy::{doc, DocAddress, Index, Score, Searcher, TantivyDocument};
use tantivy_simhash::{
    GroupBy, NearDupCollapse, NearDupConfig, NearDupIndex, NearDupLookup, Policy,
};

struct Args {
    data: PathBuf,
    docs: usize,
    queries: usize,
    runs: usize,
    limit: usize,
    overfetch: usize,
    segments: usize,
    /// Time only this method (its number in the table, from 0): for profiling with `perf`.
    only: Option<usize>,
}

fn parse_args() -> Res<Args> {
    let mut args = Args {
        data: PathBuf::from("../shared/data"),
        docs: usize::MAX,
        queries: 500,
        runs: 3,
        limit: 10,
        overfetch: 3,
        segments: 16,
        only: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--docs" => args.docs = value("--docs")?.parse()?,
            "--queries" => args.queries = value("--queries")?.parse()?,
            "--runs" => args.runs = value("--runs")?.parse::<usize>()?.max(1),
            "--limit" => args.limit = value("--limit")?.parse::<usize>()?.max(1),
            "--overfetch" => args.overfetch = value("--overfetch")?.parse::<usize>()?.max(1),
            "--segments" => args.segments = value("--segments")?.parse::<usize>()?.max(2),
            "--only" => args.only = Some(value("--only")?.parse()?),
            s if !s.starts_with("--") => args.data = PathBuf::from(s),
            s => return Err(format!("unknown option {s}").into()),
        }
    }
    Ok(args)
}

/// The url's host and first two path segments of a document.
fn section_of(doc: &Doc) -> String {
    let rest = doc
        .url
        .split_once("://")
        .map_or(doc.url.as_str(), |(_, r)| r);
    rest.split('/').take(3).collect::<Vec<_>>().join("/")
}

/// FNV-1a: a stable u64 for a string.
fn hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A reproducible index below `n` (0 for `n == 0`), for query sampling.
fn below(rng: &mut Rng, n: usize) -> usize {
    rng.below(n.max(1) as u64) as usize
}

fn sample_queries(docs: &[Doc], n: usize) -> Vec<String> {
    let mut rng = Rng(42);
    let mut out = Vec::with_capacity(n);
    let mut attempts = 0;
    while out.len() < n && attempts < n * 100 {
        attempts += 1;
        let title = &docs[below(&mut rng, docs.len())].title;
        let words: Vec<String> = title
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() >= 3 && w.chars().all(char::is_alphabetic))
            .map(str::to_lowercase)
            .collect();
        if words.is_empty() {
            continue;
        }
        let k = 1 + below(&mut rng, 3.min(words.len()));
        let start = below(&mut rng, words.len() - k + 1);
        out.push(words[start..start + k].join(" "));
    }
    out
}

fn build(
    docs: &[Doc],
    segments: usize,
) -> Res<(NearDupIndex, tantivy::schema::Field, tantivy::schema::Field)> {
    let config = NearDupConfig::new("id", ["title", "text"]);
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING | FAST | STORED);
    let title = builder.add_text_field("title", TEXT);
    let text = builder.add_text_field("text", TEXT);
    let section = builder.add_text_field("section", STRING | FAST);
    let section_hash = builder.add_u64_field("section_hash", FAST);
    config.add_fields(&mut builder);
    let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config)?;
    let mut writer = index.writer_with_num_threads(1, 200_000_000, Policy::Off)?;
    writer
        .index_writer()
        .set_merge_policy(Box::new(NoMergePolicy));
    let per_commit = docs.len().div_ceil(segments.max(1)).max(1);
    for chunk in docs.chunks(per_commit) {
        let batch: Vec<TantivyDocument> = chunk
            .iter()
            .map(|d| {
                doc!(id => d.id.clone(), title => d.title.clone(), text => d.text.clone(),
                     section => section_of(d), section_hash => hash(&section_of(d)))
            })
            .collect();
        writer.add_documents(batch)?;
        writer.commit()?;
    }
    if segments == 1 {
        let ids = index.index().searchable_segment_ids()?;
        if ids.len() > 1 {
            writer.index_writer_mut().merge(&ids).wait()?;
        }
        writer.commit()?;
    }
    writer.wait_merging_threads()?;
    Ok((index, title, text))
}

#[derive(Default, Clone)]
struct Totals {
    time: Duration,
}

fn main() -> Res<()> {
    let args = parse_args()?;
    let path = args.data.join("natural-en.jsonl.gz");
    let docs = read_jsonl(&path, args.docs)?;
    let queries = sample_queries(&docs, args.queries);
    println!(
        "natural-en: {} docs, {} queries (words sampled from titles), limit {}, fetch {} \
         (widening up to {}), best of {} runs",
        docs.len(),
        queries.len(),
        args.limit,
        args.limit * args.overfetch,
        args.limit * 64,
        args.runs
    );
    for segments in [1, args.segments] {
        let start = Instant::now();
        let (index, title, text) = build(&docs, segments)?;
        let searcher = index.lookups()?;
        println!(
            "\n### {} segment(s) (built in {:.1} s)\n",
            searcher.searcher().segment_readers().len(),
            start.elapsed().as_secs_f64()
        );
        bench(&args, &index, &searcher, title, text, &queries)?;
    }
    Ok(())
}

/// The ids of `hits`, read per segment in term-ordinal order (each dictionary block once), as
/// the collapse reads them.
fn read_ids(s: &Searcher, hits: &[(f32, DocAddress)]) -> Res<Vec<String>> {
    let mut ids = vec![String::new(); hits.len()];
    let mut by_segment: Vec<(u32, u64, usize)> = Vec::with_capacity(hits.len());
    let mut columns = Vec::new();
    for (i, (_, a)) in hits.iter().enumerate() {
        let seg = s.segment_reader(a.segment_ord);
        let Some(col) = seg.fast_fields().str("id")? else {
            continue;
        };
        if let Some(ord) = col.ords().first(a.doc_id) {
            by_segment.push((a.segment_ord, ord, i));
        }
        columns.push((a.segment_ord, col));
    }
    by_segment.sort_unstable();
    let mut start = 0;
    while start < by_segment.len() {
        let seg = by_segment[start].0;
        let end = start
            + by_segment[start..]
                .iter()
                .take_while(|x| x.0 == seg)
                .count();
        let col = &columns.iter().find(|c| c.0 == seg).ok_or("column")?.1;
        let ords: Vec<u64> = by_segment[start..end].iter().map(|x| x.1).collect();
        let mut values = Vec::with_capacity(ords.len());
        col.dictionary().sorted_ords_to_term_cb(&ords, |b| {
            values.push(String::from_utf8_lossy(b).into_owned())
        })?;
        for (x, v) in by_segment[start..end].iter().zip(values) {
            ids[x.2] = v;
        }
        start = end;
    }
    Ok(ids)
}

/// The collectors the methods run: tantivy's `TopDocs` at `limit` and at `fetch`, and the
/// collapse in each configuration of the table.
struct Collectors<T, C> {
    top: T,
    top_fetch: T,
    collapse: NearDupCollapse<C>,
    collapse_no_ids: NearDupCollapse<C>,
    collapse_exact: NearDupCollapse<C>,
    distinct: NearDupCollapse<C>,
    distinct_u64: NearDupCollapse<C>,
    distinct_exact: NearDupCollapse<C>,
}

/// A collector of hits by score: `TopDocs::order_by_score` and the collapse's inner collector.
trait ByScore: Collector<Fruit = Vec<(Score, DocAddress)>> {}

impl<T: Collector<Fruit = Vec<(Score, DocAddress)>>> ByScore for T {}

fn collectors(
    index: &NearDupIndex,
    limit: usize,
    fetch: usize,
) -> Res<Collectors<impl ByScore, impl ByScore>> {
    Ok(Collectors {
        top: TopDocs::with_limit(limit).order_by_score(),
        top_fetch: TopDocs::with_limit(fetch).order_by_score(),
        collapse: NearDupCollapse::by_score(index.fields(), limit).fetch(fetch),
        collapse_no_ids: NearDupCollapse::by_score(index.fields(), limit)
            .fetch(fetch)
            .read_ids(false),
        collapse_exact: NearDupCollapse::by_score(index.fields(), limit)
            .fetch(fetch)
            .read_ids(false)
            .exact_counts(true),
        distinct: NearDupCollapse::by_score(index.fields(), limit)
            .fetch(fetch)
            .read_ids(false)
            .group_by(GroupBy::Field("section".into()))?,
        distinct_u64: NearDupCollapse::by_score(index.fields(), limit)
            .fetch(fetch)
            .read_ids(false)
            .group_by(GroupBy::Field("section_hash".into()))?,
        distinct_exact: NearDupCollapse::by_score(index.fields(), limit)
            .fetch(fetch)
            .read_ids(false)
            .exact_counts(true)
            .group_by(GroupBy::Field("section".into()))?,
    })
}

type Method<'a> = Box<dyn Fn(&dyn Query) -> Res<()> + 'a>;

/// Runs `f` and discards its result (kept alive through `black_box`).
fn time<T>(f: impl Fn(&dyn Query) -> Res<T>) -> impl Fn(&dyn Query) -> Res<()> {
    move |q| {
        std::hint::black_box(f(q)?);
        Ok(())
    }
}

/// The index of the method `collapse, ids not read` in [`methods`].
const NO_IDS: usize = 5;

/// The methods of the table, in its order, with their names.
fn methods<'a, T: ByScore, C: ByScore>(
    c: &'a Collectors<T, C>,
    s: &'a Searcher,
    searcher: &'a NearDupLookup,
) -> Vec<(&'static str, Method<'a>)> {
    vec![
        (
            "TopDocs(limit)",
            Box::new(time(|q| Ok(s.search(q, &c.top)?))),
        ),
        (
            "TopDocs(limit) + ids",
            Box::new(time(|q| read_ids(s, &s.search(q, &c.top)?))),
        ),
        (
            "TopDocs(limit) + ids through the crate's id tables (NearDupLookup::id_of)",
            Box::new(time(|q| {
                let hits = s.search(q, &c.top)?;
                hits.iter()
                    .map(|(_, a)| Ok(searcher.id_of(*a)?))
                    .collect::<Res<Vec<_>>>()
            })),
        ),
        (
            "TopDocs(fetch)",
            Box::new(time(|q| Ok(s.search(q, &c.top_fetch)?))),
        ),
        (
            "collapse, ids of groups read",
            Box::new(time(|q| Ok(c.collapse.search(s, q)?))),
        ),
        (
            "collapse, ids not read",
            Box::new(time(|q| Ok(c.collapse_no_ids.search(s, q)?))),
        ),
        (
            "collapse, ids not read, exact counts",
            Box::new(time(|q| Ok(c.collapse_exact.search(s, q)?))),
        ),
        (
            "distinct by section (str), ids not read",
            Box::new(time(|q| Ok(c.distinct.search(s, q)?))),
        ),
        (
            "distinct by section (u64), ids not read",
            Box::new(time(|q| Ok(c.distinct_u64.search(s, q)?))),
        ),
        (
            "distinct by section (str), ids not read, exact counts",
            Box::new(time(|q| Ok(c.distinct_exact.search(s, q)?))),
        ),
    ]
}

/// The best of `runs` back-to-back repetitions of each selected method on one query (zero for
/// the methods `--only` leaves out).
fn best_times(
    methods: &[(&str, Method)],
    q: &dyn Query,
    runs: usize,
    selected: impl Fn(usize) -> bool,
) -> Res<Vec<Duration>> {
    let mut best = vec![Duration::ZERO; methods.len()];
    // Each method's repetitions run back to back, so every method is timed as warm as the
    // others (timed after another method, the first one was timed with cold caches).
    for (i, (_, method)) in methods.iter().enumerate() {
        if selected(i) {
            for _ in 0..runs {
                let t = Instant::now();
                method(q)?;
                let elapsed = t.elapsed();
                if best[i] == Duration::ZERO || elapsed < best[i] {
                    best[i] = elapsed;
                }
            }
        }
    }
    Ok(best)
}

/// What the collapse and the distinct-by-section collapse return, summed over the queries.
#[derive(Default)]
struct Counts {
    hits_total: usize,
    widened: usize,
    groups: usize,
    members: usize,
    short: usize,
    distinct_widened: usize,
    distinct_groups: usize,
    distinct_short: usize,
}

impl Counts {
    fn add<T: ByScore, C: ByScore>(
        &mut self,
        c: &Collectors<T, C>,
        s: &Searcher,
        q: &dyn Query,
        limit: usize,
        fetch: usize,
    ) -> Res<()> {
        let result = c.collapse.search(s, q)?;
        let baseline_hits = s.search(q, &c.top)?.len();
        self.hits_total += baseline_hits;
        self.widened += usize::from(result.fetch() > fetch);
        self.groups += result.groups().len();
        self.members += result
            .groups()
            .iter()
            .map(|g| g.members.len())
            .sum::<usize>();
        self.short += usize::from(result.groups().len() < limit && !result.is_complete());
        let result = c.distinct.search(s, q)?;
        self.distinct_widened += usize::from(result.fetch() > fetch);
        self.distinct_groups += result.groups().len();
        self.distinct_short += usize::from(result.groups().len() < limit && !result.is_complete());
        Ok(())
    }

    fn print(&self, n: f64) {
        println!(
            "hits returned by TopDocs(limit): {:.1}/query; groups returned by collapse: {:.1}/query \
             with {:.1} members/query; {} queries widened; {} queries stopped by the widening \
             bound with fewer than limit groups",
            self.hits_total as f64 / n,
            self.groups as f64 / n,
            self.members as f64 / n,
            self.widened,
            self.short
        );
        println!(
            "distinct by section: {:.1} groups (sections)/query; {} queries widened; {} stopped by \
             the widening bound with fewer than limit sections",
            self.distinct_groups as f64 / n,
            self.distinct_widened,
            self.distinct_short
        );
    }
}

/// The table: mean time per query of each method and its ratios to the two baselines.
fn print_times(methods: &[(&str, Method)], totals: &[Totals], n: f64) {
    let base = totals[0].time.as_secs_f64().max(1e-12);
    println!("| method | mean us/query | vs TopDocs(limit) | vs TopDocs(limit) + ids |");
    println!("|---|---|---|---|");
    let with_ids = totals[1].time.as_secs_f64().max(1e-12);
    for ((name, _), total) in methods.iter().zip(totals) {
        let t = total.time.as_secs_f64();
        println!(
            "| {name} | {:.1} | {:.2}x | {:.2}x |",
            t / n * 1e6,
            t / base,
            t / with_ids
        );
    }
}

fn print_ratio_percentiles(mut per_query_ratio: Vec<f64>) {
    per_query_ratio.sort_by(f64::total_cmp);
    let pick = |p: f64| per_query_ratio[((per_query_ratio.len() - 1) as f64 * p) as usize];
    if !per_query_ratio.is_empty() {
        println!(
            "\nper-query (collapse, ids not read) / TopDocs(limit): \
             p50 {:.2}x, p90 {:.2}x, p99 {:.2}x",
            pick(0.5),
            pick(0.9),
            pick(0.99)
        );
    }
}

fn bench(
    args: &Args,
    index: &NearDupIndex,
    searcher: &NearDupLookup,
    title: tantivy::schema::Field,
    text: tantivy::schema::Field,
    queries: &[String],
) -> Res<()> {
    let parser = QueryParser::for_index(index.index(), vec![title, text]);
    let parsed: Vec<Box<dyn Query>> = queries
        .iter()
        .map(|q| parser.parse_query(q))
        .collect::<Result<_, _>>()?;
    let limit = args.limit;
    let s = searcher.searcher();
    let fetch = limit * args.overfetch;
    let collectors = collectors(index, limit, fetch)?;
    let methods = methods(&collectors, s, searcher);
    let selected = |i: usize| args.only.is_none_or(|only| only == i);
    // Warm-up: every query once through every method.
    for q in &parsed {
        for (i, (_, method)) in methods.iter().enumerate() {
            if selected(i) {
                method(q.as_ref())?;
            }
        }
    }
    let mut totals = vec![Totals::default(); methods.len()];
    let mut per_query_ratio = Vec::with_capacity(parsed.len());
    let mut counts = Counts::default();
    for q in &parsed {
        let best = best_times(&methods, q.as_ref(), args.runs, selected)?;
        for (total, b) in totals.iter_mut().zip(&best) {
            total.time += *b;
        }
        per_query_ratio.push(best[NO_IDS].as_secs_f64() / best[0].as_secs_f64().max(1e-9));
        counts.add(&collectors, s, q.as_ref(), limit, fetch)?;
    }
    let n = parsed.len().max(1) as f64;
    print_times(&methods, &totals, n);
    print_ratio_percentiles(per_query_ratio);
    counts.print(n);
    Ok(())
}
