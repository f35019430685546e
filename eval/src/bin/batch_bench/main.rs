//! All pairs by the match rule over a whole index (issues 5 and 25), next to an in-memory floor
//! measured in the same run.
//!
//! ```text
//! cargo run --release -p tantivy-simhash-eval --bin batch_bench -- --docs 1000000
//! cargo run --release -p tantivy-simhash-eval --bin batch_bench -- --docs 20000          # smoke run
//! cargo run --release -p tantivy-simhash-eval --bin batch_bench -- --docs 10000000 --index batch10m-index   # builds it
//! cargo run --release -p tantivy-simhash-eval --bin batch_bench -- --docs 10000000 --index batch10m-index   # reuses it
//! cargo run --release -p tantivy-simhash-eval --bin batch_bench -- --docs 1000000 --graph  # also NearDupGraph and its peers
//! ```
//!
//! With `--index DIR` the index is built in DIR, or reused if DIR holds one (built by an
//! earlier run with the same `--docs`): the second run measures the batch job in a process
//! that never held an index writer.
//!
//! Corpus: `--docs` signatures (fingerprint and MinHash sketch). Fingerprints are uniformly
//! random except for planted near-duplicates (5% of the documents are a neighbour at distance
//! 1..=3 of an earlier one, with its sketch a few words apart), resemblance neighbours (1%: a
//! random fingerprint, an earlier document's sketch with a few words changed, so they share
//! every band and match only by the resemblance branch) and three hot exact-duplicate groups
//! (0.1%, 0.03% and 0.01% of the documents). Sketches are random words, derived from a seed
//! per document so the corpus costs 16 bytes a document in this process. Indexed on disk
//! (mmap) with an id and the signature only (no text), in `--segments` commits without merges.
//!
//! Measured: the streaming join (`PairJoin::for_each_doc_pair`, on 2 threads and on 1) with the
//! peak of the process's anonymous memory during it (sampled every few milliseconds; the
//! memory-mapped index is not anonymous memory), every pair with ids, and the floor: what an
//! expert writes in memory for the same rule (the 16 keys of every signature in memory, per
//! key position a counting sort of (key, row), the pairs of each run verified with the rule,
//! each pair once under its first shared key of its branch) on 2 threads. The pairs must equal
//! the floor's, and, on `--brute-queries` sampled documents, a brute-force scan with
//! `MatchRule::matches`. The last line is a summary for machines:
//! `all-pairs: docs=N seconds=S floor_ratio=R peak_bytes_per_doc=B`.
//!
//! With `--graph`, also `NearDupGraph` (gathering, its join, ids, clusters) and the
//! fingerprint-only peers (in-memory pigeonhole self-joins, brute force within k) of issue 5,
//! checked against the join's simhash-branch pairs.

#[path = "../../support/pigeonhole.rs"]
mod pigeonhole;

use pigeonhole::Rng;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tantivy::indexer::NoMergePolicy;
use tantivy::schema::{Schema, FAST, STRING};
use tantivy::{doc, DocAddress, Index};
use tantivy_simhash::{
    BlockLayout, Evidence, Fingerprint, MatchRule, NearDupConfig, NearDupIndex, Policy,
};
use tantivy_simhash::{NearDupGraph, PairJoin};
use tantivy_simhash::{Signature, Sketch};

#[path = "../../support/data.rs"]
mod data;

mod corpus;
mod memory;
mod peers;

use corpus::*;
use memory::*;
use peers::*;

use data::{load_average, Res};

struct Args {
    docs: usize,
    index: Option<std::path::PathBuf>,
    segments: usize,
    brute_queries: usize,
    graph: bool,
}

fn parse_args() -> Res<Args> {
    let mut args = Args {
        docs: 1_000_000,
        index: None,
        segments: 8,
        brute_queries: 20,
        graph: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--docs" => args.docs = value("--docs")?.parse()?,
            "--index" => args.index = Some(value("--index")?.into()),
            "--segments" => args.segments = value("--segments")?.parse::<usize>()?.max(1),
            "--brute-queries" => args.brute_queries = value("--brute-queries")?.parse()?,
            "--graph" => args.graph = true,
            s => {
                return Err(format!(
                    "unknown option {s} (--docs, --segments, --brute-queries, --index, --graph)"
                )
                .into())
            }
        }
    }
    Ok(args)
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// The join by the match rule (`for_each_group_pair`) in a pool of `pool_threads` threads:
/// seconds, pairs of distinct signatures, document pairs across them.
fn join(graph: &NearDupGraph, pool_threads: usize) -> Res<(f64, u64, u64)> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(pool_threads)
        .build()?;
    pool.install(|| -> tantivy_simhash::Result<(f64, u64, u64)> {
        let t = Instant::now();
        let (mut group_pairs, mut doc_pairs) = (0u64, 0u64);
        graph.for_each_group_pair(|p| {
            group_pairs += 1;
            doc_pairs += (p.a.docs.len() * p.b.docs.len()) as u64;
        })?;
        Ok((secs(t), group_pairs, doc_pairs))
    })
    .map_err(Into::into)
}

/// Seconds of each step of the batch job and its peers, for the summary.
struct Timings {
    build: f64,
    gather: f64,
    join1: f64,
    join_n: f64,
    ids_time: f64,
    clusters_time: f64,
    /// The counting-sort pigeonhole self-join: the base of the ratios.
    ph: f64,
    naive: f64,
    brute: f64,
}

/// Every document pair expanded with ids (`for_each_id_pair`), checked against the count of
/// the join.
fn time_id_pairs(graph: &NearDupGraph, total_pairs: u64, t: &mut Timings) -> Res<()> {
    let start = Instant::now();
    let mut with_ids = 0u64;
    let mut id_bytes = 0usize;
    graph.for_each_id_pair(|p| {
        with_ids += 1;
        id_bytes += p.a.len() + p.b.len();
    })?;
    t.ids_time = secs(start);
    println!(
        "every document pair with ids (for_each_id_pair): {:.3} s, {with_ids} pairs",
        t.ids_time
    );
    assert_eq!(with_ids, total_pairs);
    let _ = id_bytes;
    Ok(())
}

/// The clusters; returns the peak RSS with them held (MB).
fn time_clusters(graph: &NearDupGraph, t: &mut Timings) -> Res<f64> {
    let start = Instant::now();
    let clusters = graph.clusters()?;
    t.clusters_time = secs(start);
    let clustered: usize = clusters.iter().map(|c| c.len()).sum();
    let largest = clusters.iter().map(|c| c.len()).max().unwrap_or(0);
    println!(
        "clusters: {:.3} s; {} clusters, {clustered} documents, largest {largest}",
        t.clusters_time,
        clusters.len()
    );
    let batch_peak = peak_mb();
    drop(clusters);
    Ok(batch_peak)
}

/// The batch job on the index: gathering, the join on 1 and all threads, every pair with ids,
/// clusters, with the peak memory of the phase. Returns the graph, the number of document pairs
/// and the timings and memory (MB: peak of the phase, RSS before it).
fn batch_job(
    searcher: &tantivy_simhash::NearDupLookup,
    fps: &[u64],
    threads: usize,
    t: &mut Timings,
) -> Res<(NearDupGraph, u64, f64, f64)> {
    let segments = searcher.searcher().segment_readers().len();
    let peak_ok = reset_peak();
    let rss0 = rss_mb();
    let start = Instant::now();
    let graph = NearDupGraph::new(searcher.fields(), searcher.searcher())?;
    t.gather = secs(start);
    println!(
        "gather (NearDupGraph::new, {segments} segments): {:.3} s; {} live docs, {} distinct signatures",
        t.gather,
        graph.num_docs(),
        graph.num_signatures()
    );
    let dup_pairs: u64 = graph
        .duplicate_groups()
        .map(|g| (g.docs.len() as u64) * (g.docs.len() as u64 - 1) / 2)
        .sum();
    let dup_groups = graph.duplicate_groups().count();

    let (join1, group_pairs, cross_pairs) = join(&graph, 1)?;
    let (join_n, _, _) = join(&graph, threads)?;
    (t.join1, t.join_n) = (join1, join_n);
    let total_pairs = dup_pairs + cross_pairs;
    println!(
        "join by the rule (for_each_group_pair): {join1:.3} s on 1 thread, {join_n:.3} s on \
         {threads}; {group_pairs} pairs of distinct signatures + {dup_groups} duplicate groups \
         = {total_pairs} document pairs"
    );
    let join_peak = peak_mb();

    time_id_pairs(&graph, total_pairs, t)?;
    let batch_peak = time_clusters(&graph, t)?;
    if peak_ok {
        println!(
            "peak RSS of the batch phase: {batch_peak:.0} MB (gather + join: {join_peak:.0} MB; \
             RSS before it {rss0:.0} MB, of which the generated corpus {:.0} MB)",
            (fps.len() * 8) as f64 / 1e6
        );
    } else {
        println!(
            "peak RSS of the process: {batch_peak:.0} MB (could not reset the peak per phase)"
        );
    }
    Ok((graph, total_pairs, batch_peak, rss0))
}

/// One id read per document (`NearDupLookup::id_of`) next to the batched read of all ids.
fn compare_id_reads(graph: &NearDupGraph, searcher: &tantivy_simhash::NearDupLookup) -> Res<()> {
    let sample_docs: Vec<DocAddress> = graph
        .groups()
        .step_by((graph.num_signatures() / 10_000).max(1))
        .map(|g| g.docs[0])
        .collect();
    let t = Instant::now();
    for a in &sample_docs {
        std::hint::black_box(searcher.id_of(*a)?);
    }
    let one_by_one = secs(t) / sample_docs.len().max(1) as f64;
    let all_docs: Vec<DocAddress> = graph
        .groups()
        .flat_map(|g| g.docs.iter().copied())
        .collect();
    let t = Instant::now();
    let ids = graph.read_ids(&all_docs)?;
    let batched = secs(t);
    println!(
        "ids: one at a time {:.1} us per id ({} sampled); batched read of all {} ids {batched:.3} s \
         ({:.2} us per id)",
        one_by_one * 1e6,
        sample_docs.len(),
        ids.len(),
        batched / ids.len().max(1) as f64 * 1e6
    );
    Ok(())
}

/// What the streaming join found: pairs, those by the simhash branch, and its stats.
struct Streamed {
    seconds: f64,
    pairs: u64,
    simhash_pairs: u64,
    hot_keys: u64,
    /// Peak anonymous memory above the memory before the join, bytes.
    peak_bytes: u64,
}

/// The streaming join (`PairJoin::for_each_doc_pair`) in a pool of `threads` threads.
fn streaming_join(
    searcher: &tantivy::Searcher,
    index: &NearDupIndex,
    threads: usize,
) -> Res<Streamed> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;
    let before = anon_bytes();
    let sampler = AnonPeak::start();
    let t = Instant::now();
    let (pairs, simhash_pairs, stats) = pool.install(|| -> tantivy_simhash::Result<_> {
        let join = PairJoin::new(index.fields(), searcher)?;
        let (mut pairs, mut simhash_pairs) = (0u64, 0u64);
        let stats = join.for_each_doc_pair(|p| {
            pairs += 1;
            simhash_pairs += u64::from(matches!(p.evidence, Evidence::Simhash { .. }));
        })?;
        Ok((pairs, simhash_pairs, stats))
    })?;
    let seconds = secs(t);
    let peak = sampler.finish();
    Ok(Streamed {
        seconds,
        pairs,
        simhash_pairs,
        hot_keys: stats.hot_keys,
        peak_bytes: peak.saturating_sub(before),
    })
}

/// Every pair with ids (`PairJoin::for_each_id_pair`): seconds, pairs, and the pairs of each
/// document of `sample` (corpus indexes), for the brute-force check.
fn id_pairs(
    searcher: &tantivy::Searcher,
    index: &NearDupIndex,
    threads: usize,
    sample: &[usize],
) -> Res<(f64, u64, Vec<u64>)> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;
    let mut per_sample = vec![0u64; sample.len()];
    let t = Instant::now();
    let pairs = pool.install(|| -> tantivy_simhash::Result<u64> {
        let join = PairJoin::new(index.fields(), searcher)?;
        let mut pairs = 0u64;
        join.for_each_id_pair(|p| {
            pairs += 1;
            for id in [p.a, p.b] {
                let i: usize = id[1..].parse().unwrap_or(usize::MAX);
                if let Ok(at) = sample.binary_search(&i) {
                    per_sample[at] += 1;
                }
            }
        })?;
        Ok(pairs)
    })?;
    Ok((secs(t), pairs, per_sample))
}

fn print_summary(n: usize, threads: usize, t: &Timings, batch_peak: f64, rss0: f64) {
    let Timings {
        build,
        gather,
        join1,
        join_n,
        ids_time,
        clusters_time,
        ph,
        naive,
        brute,
    } = *t;
    let ours = gather + join_n;
    println!("\n## summary, N = {n}");
    println!("| step | seconds | ratio to the in-memory pigeonhole self-join |");
    println!("|---|---|---|");
    println!("| build the index (not part of the job) | {build:.2} | |");
    println!(
        "| gather + join, {threads} threads | {ours:.3} | {:.2} |",
        ours / ph
    );
    println!(
        "| gather + join, 1 thread | {:.3} | {:.2} |",
        gather + join1,
        (gather + join1) / ph
    );
    println!(
        "| every pair with ids | {ids_time:.3} | {:.2} |",
        ids_time / ph
    );
    println!(
        "| clusters | {clusters_time:.3} | {:.2} |",
        clusters_time / ph
    );
    println!("| in-memory pigeonhole self-join, counting sort, 1 thread | {ph:.3} | 1 |");
    println!(
        "| in-memory pigeonhole self-join, comparison sort, 1 thread | {naive:.3} | {:.2} |",
        naive / ph
    );
    println!(
        "| brute force, {threads} threads (extrapolated) | {brute:.1} | {:.0} |",
        brute / ph
    );
    println!(
        "peak RSS of the batch phase: {batch_peak:.0} MB for {n} docs ({:.0} bytes per doc above the RSS before it)",
        (batch_peak - rss0).max(0.0) * 1024.0 * 1024.0 / n as f64
    );
}

fn main() -> Res<()> {
    let args = parse_args()?;
    let n = args.docs;
    let layout = BlockLayout::default();
    let k = layout.max_distance();
    let threads = rayon::current_num_threads().min(2);
    println!(
        "# batch_bench: N = {n}, layout {} (k = {k}) and MinHash bands, {} segments, {threads} \
         threads, load average {}",
        layout.id(),
        args.segments,
        load_average()
    );
    let corpus = corpus(n, 42);
    let (_tmp, index, build) = open_or_build_index(&args, &corpus, threads)?;
    let rule = *index.rule();
    let searcher = index.lookups()?;
    let tantivy_searcher = searcher.searcher().clone();

    let two = streaming_join(&tantivy_searcher, &index, threads)?;
    println!(
        "streaming join (PairJoin::for_each_doc_pair, {threads} threads): {:.3} s, {} pairs \
         ({} by the simhash branch), {} keys cut; peak anonymous memory {:.0} MB above the \
         {:.0} MB before it ({:.0} B/doc)",
        two.seconds,
        two.pairs,
        two.simhash_pairs,
        two.hot_keys,
        two.peak_bytes as f64 / 1e6,
        anon_bytes() as f64 / 1e6,
        two.peak_bytes as f64 / n as f64
    );
    let one = streaming_join(&tantivy_searcher, &index, 1)?;
    println!(
        "streaming join, 1 thread: {:.3} s ({:.2}x the {threads}-thread time)",
        one.seconds,
        one.seconds / two.seconds
    );
    assert_eq!(one.pairs, two.pairs, "the join depends on the threads");

    let step = (n / args.brute_queries.max(1)).max(1);
    let sample: Vec<usize> = (0..n).step_by(step).take(args.brute_queries).collect();
    let (ids_seconds, id_pairs, per_sample) =
        id_pairs(&tantivy_searcher, &index, threads, &sample)?;
    println!(
        "every pair with ids (PairJoin::for_each_id_pair): {ids_seconds:.3} s, {id_pairs} pairs"
    );
    assert_eq!(id_pairs, two.pairs);

    let (floor_seconds, floor_pairs) = floor(&corpus, &rule, threads)?;
    println!(
        "in-memory floor (keys in memory, counting sort per key position, {threads} threads): \
         {floor_seconds:.3} s, {floor_pairs} pairs"
    );
    // A key cut (a run that splitting does not break, beyond the bound) may lose pairs: the
    // difference is reported; without one the pairs must be equal.
    if two.hot_keys == 0 {
        assert_eq!(floor_pairs, two.pairs, "the join and the floor disagree");
    } else {
        assert!(
            floor_pairs >= two.pairs,
            "the join found pairs the floor did not"
        );
        println!(
            "{} keys cut: the join missed {} of the floor's pairs",
            two.hot_keys,
            floor_pairs - two.pairs
        );
    }

    let (brute_seconds, brute) = brute_force_rule(&corpus, &rule, &sample);
    let brute_total: u64 = brute.iter().sum();
    println!(
        "brute force with MatchRule::matches on {} sampled documents: {brute_seconds:.3} s, {} \
         pairs, the join's pairs of the same documents: {}",
        sample.len(),
        brute_total,
        per_sample.iter().sum::<u64>()
    );
    if two.hot_keys == 0 {
        assert_eq!(
            per_sample, brute,
            "the join and brute force disagree on the sample"
        );
    } else {
        assert!(
            per_sample.iter().zip(&brute).all(|(j, b)| j <= b),
            "pairs beyond brute force"
        );
    }

    if args.graph {
        let mut t = Timings {
            build,
            gather: 0.0,
            join1: 0.0,
            join_n: 0.0,
            ids_time: 0.0,
            clusters_time: 0.0,
            ph: 0.0,
            naive: 0.0,
            brute: 0.0,
        };
        let (graph, total_pairs, batch_peak, rss0) =
            batch_job(&searcher, &corpus.fps, threads, &mut t)?;
        assert_eq!(
            total_pairs, two.pairs,
            "NearDupGraph and the streaming join disagree"
        );
        pigeonhole_peers(&corpus.fps, &layout, k, two.simhash_pairs, &mut t)?;
        t.brute = brute_force(&corpus.fps, k, args.brute_queries, threads);
        compare_id_reads(&graph, &searcher)?;
        print_summary(n, threads, &t, batch_peak, rss0);
    }

    println!("\n## summary, N = {n}, {threads} threads (build {build:.1} s, not part of the job)");
    println!("| step | seconds | ratio to the floor |");
    println!("|---|---|---|");
    println!(
        "| streaming join, {threads} threads | {:.3} | {:.2} |",
        two.seconds,
        two.seconds / floor_seconds
    );
    println!(
        "| streaming join, 1 thread | {:.3} | {:.2} |",
        one.seconds,
        one.seconds / floor_seconds
    );
    println!(
        "| every pair with ids, {threads} threads | {ids_seconds:.3} | {:.2} |",
        ids_seconds / floor_seconds
    );
    println!("| in-memory floor, {threads} threads | {floor_seconds:.3} | 1 |");
    println!(
        "all-pairs: docs={n} seconds={:.3} floor_ratio={:.2} peak_bytes_per_doc={:.0}",
        two.seconds,
        two.seconds / floor_seconds,
        two.peak_bytes as f64 / n as f64
    );
    Ok(())
}
