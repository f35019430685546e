//! Lookup latency: a tantivy index next to an in-memory pigeonhole table and a brute-force scan
//! over the same fingerprints.
//!
//! ```text
//! cargo bench --bench lookup
//! SIMHASH_BENCH_DOCS=1000000 cargo bench --bench lookup
//! ```
//!
//! `SIMHASH_BENCH_DOCS` fingerprints (default 100,000; 91% random, 9% in near-duplicate clusters)
//! in an on-disk index with the default layout, with 8 segments and with 1; the keys are read
//! from the segment component's sorted tables, in place. One iteration runs one query (they
//! cycle through 256 queries: half near an indexed fingerprint, half random). The
//! `lookup_fresh_searcher` rows open a new lookup handle for every query (what a fresh process
//! pays before its first answer, besides the page cache).
//! At the end the mean time per query of each row and its ratio to `pigeonhole_table`, both
//! measured in this run. Percentiles (p50, p99): `eval/src/bin/index_bench/`.

#[path = "../eval/src/support/pigeonhole.rs"]
mod pigeonhole;

use criterion::{criterion_group, criterion_main, Bencher, BenchmarkId, Criterion};
use pigeonhole::{brute_force, corpus, queries, PigeonholeTable};
use std::cell::RefCell;
use std::hint::black_box;
use std::time::{Duration, Instant};
use tantivy::collector::DocSetCollector;
use tantivy::indexer::NoMergePolicy;
use tantivy::schema::{Schema, FAST, STRING};
use tantivy::{doc, Index};
use tantivy_simhash::{
    BlockLayout, Fingerprint, NearDupConfig, NearDupIndex, NearDupLookup, NearDupQuery, Policy,
};

fn docs() -> usize {
    std::env::var("SIMHASH_BENCH_DOCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

/// An index of `fps` in `segments` segments.
fn build(dir: &std::path::Path, fps: &[u64], segments: usize) -> NearDupLookup {
    let config = NearDupConfig::new("id", Vec::<String>::new()).with_group_field(None);
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING | FAST);
    config.add_fields(&mut builder);
    let index = Index::create_in_dir(dir, builder.build()).unwrap();
    let index = NearDupIndex::create(index, config).unwrap();
    let mut w = index
        .writer_with_num_threads(1, 200_000_000, Policy::Off)
        .unwrap();
    w.index_writer_mut()
        .set_merge_policy(Box::new(NoMergePolicy));
    let per_segment = fps.len().div_ceil(segments);
    for (i, chunk) in fps.chunks(per_segment).enumerate() {
        for (j, &fp) in chunk.iter().enumerate() {
            let doc = doc!(id => format!("d{i}-{j}"));
            w.add_document_with_fingerprint(doc, Fingerprint(fp))
                .unwrap();
        }
        w.commit().unwrap();
    }
    w.wait_merging_threads().unwrap();
    index.lookups().unwrap()
}

/// Total time and iterations of each row, as criterion ran them.
type Means = RefCell<Vec<(String, Duration, u64)>>;

/// Runs `query` `iters` times for criterion and adds the time to row `name` of `means`.
fn timed(b: &mut Bencher, means: &Means, name: &str, mut query: impl FnMut() -> usize) {
    b.iter_custom(|iters| {
        let start = Instant::now();
        for _ in 0..iters {
            black_box(query());
        }
        let elapsed = start.elapsed();
        let mut m = means.borrow_mut();
        match m.iter_mut().find(|(n, _, _)| n == name) {
            Some(row) => {
                row.1 += elapsed;
                row.2 += iters;
            }
            None => m.push((name.to_string(), elapsed, iters)),
        }
        elapsed
    })
}

/// Prints each row's mean per query and its ratio to the pigeonhole table's.
fn print_ratios(n: usize, means: Means) {
    let means = means.into_inner();
    let mean = |(_, d, i): &(String, Duration, u64)| d.as_secs_f64() / (*i).max(1) as f64;
    let Some(table) = means.iter().find(|r| r.0 == "pigeonhole_table").map(mean) else {
        return;
    };
    println!("\nlookup, {n} fingerprints: mean per query vs the in-memory pigeonhole table");
    println!("| row | mean us | vs table |\n|---|---|---|");
    for row in &means {
        let m = mean(row);
        println!("| {} | {:.2} | {:.1}x |", row.0, m * 1e6, m / table);
    }
}

fn bench_lookup(c: &mut Criterion) {
    let n = docs();
    let layout = BlockLayout::default();
    let k = layout.max_distance();
    let fps = corpus(n, 42);
    let qs: Vec<Fingerprint> = queries(&fps, 256, k, 7)
        .into_iter()
        .map(Fingerprint)
        .collect();
    let table = PigeonholeTable::new(&layout, &fps).unwrap();

    let mut group = c.benchmark_group(format!("lookup/{n}"));
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    let mut i = 0usize;
    let mut next = || {
        i = (i + 1) % qs.len();
        qs[i]
    };
    let means: Means = RefCell::new(Vec::new());
    let mut buf = Vec::new();
    group.bench_function("pigeonhole_table", |b| {
        timed(b, &means, "pigeonhole_table", || {
            buf.clear();
            table.lookup(next(), k, &mut buf).unwrap();
            buf.len()
        })
    });
    group.bench_function("brute_force", |b| {
        timed(b, &means, "brute_force", || {
            buf.clear();
            brute_force(&fps, next(), k, &mut buf);
            buf.len()
        })
    });
    for segments in [8, 1] {
        let dir = tempfile::tempdir().unwrap();
        let s = build(dir.path(), &fps, segments);
        let id = |name: &str| BenchmarkId::new(name.to_string(), segments);
        let row = |name: &str| format!("{name}/{segments}");
        group.bench_with_input(id("lookup_with_ids"), &s, |b, s| {
            timed(b, &means, &row("lookup_with_ids"), || {
                s.lookup(next()).unwrap().len()
            })
        });
        group.bench_with_input(id("lookup_addresses"), &s, |b, s| {
            timed(b, &means, &row("lookup_addresses"), || {
                s.lookup_addresses(next(), k).unwrap().len()
            })
        });
        group.bench_with_input(id("lookup_fresh_searcher"), &s, |b, s| {
            timed(b, &means, &row("lookup_fresh_searcher"), || {
                let fresh = NearDupLookup::new(s.fields(), s.searcher()).unwrap();
                fresh.lookup_addresses(next(), k).unwrap().len()
            })
        });
        group.bench_with_input(id("query_docset_collector"), &s, |b, s| {
            timed(b, &means, &row("query_docset_collector"), || {
                let q = NearDupQuery::new(s.fields(), next());
                s.searcher().search(&q, &DocSetCollector).unwrap().len()
            })
        });
    }
    group.finish();
    print_ratios(n, means);
}

criterion_group!(benches, bench_lookup);
criterion_main!(benches);
