//! All pairs within k over a whole index (issue 5), next to its peers measured in the same run.
//!
//! ```text
//! cargo run --release -p tantivy-simhash-eval --bin batch_bench -- --docs 1000000
//! cargo run --release -p tantivy-simhash-eval --bin batch_bench -- --docs 10000000 --brute-queries 200
//! cargo run --release -p tantivy-simhash-eval --bin batch_bench -- --docs 20000          # smoke run
//! cargo run --release -p tantivy-simhash-eval --bin batch_bench -- --docs 10000000 --index batch10m-index   # builds it
//! cargo run --release -p tantivy-simhash-eval --bin batch_bench -- --docs 10000000 --index batch10m-index   # reuses it
//! ```
//!
//! With `--index DIR` the index is built in DIR, or reused if DIR holds one (built by an
//! earlier run with the same `--docs`): the second run measures the batch job's memory in a
//! process that never held an index writer.
//!
//! Corpus: `--docs` fingerprints, uniformly random except for planted near-duplicates (5% of
//! the documents are a neighbour at distance 1..=3 of an earlier one) and three hot
//! exact-duplicate groups (0.1%, 0.03% and 0.01% of the documents). Indexed on disk (mmap) with
//! an id, the fingerprint and the keys only (no text), in `--segments` commits without merges.
//!
//! Measured, each separately: building the index; `NearDupGraph::new` (gathering the
//! signature columns); the join by the match rule (`for_each_group_pair`, pairs of distinct
//! signatures, plus the duplicate groups) in a pool of 1 thread and of all threads; every
//! document pair expanded with ids
//! (`for_each_id_pair`); clusters. Peers: two in-memory pigeonhole self-joins of the same
//! fingerprints (one thread, no grouping of duplicates; per combination a counting sort of the
//! fingerprints by block, the floor and the ratios' base, or a sort of (key, row) pairs through
//! the public `BlockLayout` API), comparisons within equal keys, a brute-force scan (all threads, on `--brute-queries`
//! sampled documents, extrapolated to N^2/2 comparisons), and one id read per document
//! (`NearDupSearcher::id_of`) instead of batched reads. Peak memory is the process's peak
//! resident set (VmHWM), reset before each phase (`/proc/self/clear_refs`), so it includes the
//! index pages the phase touches.

#[path = "../support/pigeonhole.rs"]
mod pigeonhole;

use pigeonhole::Rng;
use std::time::Instant;
use tantivy::indexer::NoMergePolicy;
use tantivy::schema::{Schema, FAST, STRING};
use tantivy::{doc, DocAddress, Index};
use tantivy_simhash::batch::NearDupGraph;
use tantivy_simhash::{BlockLayout, Fingerprint, NearDupConfig, NearDupIndex, Policy};

#[path = "../support/data.rs"]
mod data;

use data::{load_average, Res};

struct Args {
    docs: usize,
    index: Option<std::path::PathBuf>,
    segments: usize,
    brute_queries: usize,
}

fn parse_args() -> Res<Args> {
    let mut args = Args {
        docs: 1_000_000,
        index: None,
        segments: 8,
        brute_queries: 1_000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--docs" => args.docs = value("--docs")?.parse()?,
            "--index" => args.index = Some(value("--index")?.into()),
            "--segments" => args.segments = value("--segments")?.parse::<usize>()?.max(1),
            "--brute-queries" => args.brute_queries = value("--brute-queries")?.parse()?,
            s => {
                return Err(format!(
                    "unknown option {s} (--docs, --segments, --brute-queries, --index)"
                )
                .into())
            }
        }
    }
    Ok(args)
}

fn corpus(n: usize, seed: u64) -> Vec<u64> {
    let mut rng = Rng(seed);
    let hot: Vec<(u64, usize)> = [1000, 3333, 10_000]
        .iter()
        .map(|&per| (rng.next_u64(), (n / per).max(2)))
        .collect();
    let mut out = Vec::with_capacity(n);
    for &(fp, count) in &hot {
        out.extend(std::iter::repeat_n(fp, count.min(n / 4)));
    }
    while out.len() < n {
        if out.len() > 10 && rng.below(100) < 5 {
            let base = out[rng.below(out.len() as u64) as usize];
            let d = 1 + rng.below(3) as u32;
            out.push(rng.flip(base, d));
        } else {
            out.push(rng.next_u64());
        }
    }
    out.truncate(n);
    // Shuffle so hot groups and planted pairs spread over segments.
    for i in (1..out.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        out.swap(i, j);
    }
    out
}

fn read_status(key: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Resets the peak resident set to the current one (Linux >= 4.0); false if unsupported.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn peak_mb() -> f64 {
    read_status("VmHWM:").unwrap_or(0) as f64 / 1024.0
}

fn rss_mb() -> f64 {
    read_status("VmRSS:").unwrap_or(0) as f64 / 1024.0
}

/// The in-memory peer: per combination, sort (key, row), compare within equal keys, keep a
/// pair under its first shared combination. One thread, no grouping of duplicates.
fn pigeonhole_self_join(fps: &[u64], layout: &BlockLayout, k: u32) -> Res<u64> {
    let mut pairs = 0u64;
    let mut t: Vec<(u64, u32)> = Vec::with_capacity(fps.len());
    for c in 0..layout.num_keys() {
        t.clear();
        for (i, &fp) in fps.iter().enumerate() {
            t.push((layout.key(c, Fingerprint(fp))?, i as u32));
        }
        t.sort_unstable();
        let mut start = 0;
        while start < t.len() {
            let mut end = start + 1;
            while end < t.len() && t[end].0 == t[start].0 {
                end += 1;
            }
            for i in start..end {
                let a = fps[t[i].1 as usize];
                for &(_, j) in &t[i + 1..end] {
                    let b = fps[j as usize];
                    if (a ^ b).count_ones() <= k
                        && layout.first_shared_key(Fingerprint(a), Fingerprint(b)) == Some(c)
                    {
                        pairs += 1;
                    }
                }
            }
            start = end;
        }
    }
    Ok(pairs)
}

/// The tuned in-memory peer, for the default layout only: per 16-bit block, a counting sort of
/// the fingerprints, comparisons within equal blocks (with the library's distance test), a
/// pair kept under its first equal block. One thread, no grouping of duplicates.
fn pigeonhole_counting_sort(fps: &[u64], k: u32) -> u64 {
    // The same distance test as the library's: k rounds of "clear the lowest set bit" (cheaper
    // than a popcount without the popcnt instruction).
    assert_eq!(
        k, 3,
        "the tuned peer is written for the default layout (k = 3)"
    );
    let within = |diff: u64| {
        let mut x = diff;
        for _ in 0..3 {
            x &= x.wrapping_sub(1);
        }
        x == 0
    };
    let mut pairs = 0u64;
    let mut sorted = vec![0u64; fps.len()];
    for c in 0..4u32 {
        let block = |fp: u64| ((fp >> (16 * c)) & 0xffff) as usize;
        let mut offsets = vec![0u32; (1 << 16) + 1];
        for &fp in fps {
            offsets[block(fp) + 1] += 1;
        }
        for i in 1..offsets.len() {
            offsets[i] += offsets[i - 1];
        }
        let mut next = offsets.clone();
        for &fp in fps {
            let b = block(fp);
            sorted[next[b] as usize] = fp;
            next[b] += 1;
        }
        for w in offsets.windows(2) {
            let run = &sorted[w[0] as usize..w[1] as usize];
            for (i, &a) in run.iter().enumerate() {
                for &b in &run[i + 1..] {
                    let diff = a ^ b;
                    if within(diff) && (0..c).all(|e| (diff >> (16 * e)) & 0xffff != 0) {
                        pairs += 1;
                    }
                }
            }
        }
    }
    pairs
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// Builds the index of `fps` in `--index DIR` (or a temporary directory), or reuses the one
/// DIR holds; returns the temporary directory (kept alive by the caller), the index and the
/// build seconds (0 when reused).
fn open_or_build_index(
    args: &Args,
    fps: &[u64],
    threads: usize,
) -> Res<(tempfile::TempDir, NearDupIndex, f64)> {
    let n = fps.len();
    let tmp = tempfile::tempdir()?;
    let dir = args
        .index
        .clone()
        .unwrap_or_else(|| tmp.path().to_path_buf());
    let config = NearDupConfig::new("id", Vec::<String>::new()).with_group_field(None);
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING | FAST);
    config.add_fields(&mut builder);
    if dir.join("meta.json").exists() {
        // Reuse an index built by an earlier run with the same --docs: the peak memory of the
        // batch job is then measured in a process that never held an index writer.
        println!("build: skipped, reusing the index in --index");
        let index = NearDupIndex::open(Index::open_in_dir(&dir)?, config)?;
        return Ok((tmp, index, 0.0));
    }
    std::fs::create_dir_all(&dir)?;
    let index = NearDupIndex::create(Index::create_in_dir(&dir, builder.build())?, config)?;
    let t = Instant::now();
    {
        let mut w = index.writer_with_num_threads(threads.min(2), 400_000_000, Policy::Off)?;
        w.index_writer_mut()
            .set_merge_policy(Box::new(NoMergePolicy));
        let per_segment = n.div_ceil(args.segments);
        for (i, &fp) in fps.iter().enumerate() {
            w.add_document_with_fingerprint(doc!(id => format!("d{i:08}")), Fingerprint(fp))?;
            if (i + 1) % per_segment == 0 || i + 1 == n {
                w.commit()?;
            }
        }
        w.wait_merging_threads()?;
    }
    let build = secs(t);
    let build_peak = peak_mb();
    println!(
        "build: {build:.2} s (DedupWriter, Policy::Off, {} indexing threads), peak RSS so far \
         {build_peak:.0} MB",
        threads.min(2)
    );
    Ok((tmp, index, build))
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
    searcher: &tantivy_simhash::NearDupSearcher,
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

/// The two in-memory pigeonhole self-joins, checked against the batch job's pair count.
fn pigeonhole_peers(
    fps: &[u64],
    layout: &BlockLayout,
    k: u32,
    total_pairs: u64,
    t: &mut Timings,
) -> Res<()> {
    let start = Instant::now();
    let naive_pairs = pigeonhole_self_join(fps, layout, k)?;
    t.naive = secs(start);
    println!(
        "in-memory pigeonhole self-join, sort of (key, row) per combination (1 thread): \
         {:.3} s, {naive_pairs} pairs",
        t.naive
    );
    assert_eq!(naive_pairs, total_pairs, "the peers disagree");
    let start = Instant::now();
    let ph_pairs = pigeonhole_counting_sort(fps, k);
    t.ph = secs(start);
    println!(
        "in-memory pigeonhole self-join, counting sort per block (1 thread): {:.3} s, \
         {ph_pairs} pairs",
        t.ph
    );
    assert_eq!(ph_pairs, total_pairs, "the peers disagree");
    Ok(())
}

/// Brute force on `brute_queries` sampled documents, extrapolated to N^2/2 comparisons.
fn brute_force(fps: &[u64], k: u32, brute_queries: usize, threads: usize) -> f64 {
    let n = fps.len();
    let sample = brute_queries.min(n).max(1);
    let t = Instant::now();
    let found: u64 = {
        use rayon::prelude::*;
        let step = (n / sample).max(1);
        (0..sample)
            .into_par_iter()
            .map(|q| {
                let a = fps[(q * step) % n];
                fps.iter().filter(|&&b| (a ^ b).count_ones() <= k).count() as u64
            })
            .sum()
    };
    let brute_sample = secs(t);
    let brute = brute_sample / sample as f64 * n as f64 / 2.0;
    println!(
        "brute force ({threads} threads): {brute_sample:.3} s for {sample} scans of {n} \
         ({found} matches), extrapolated to all pairs: {brute:.1} s"
    );
    brute
}

/// One id read per document (`NearDupSearcher::id_of`) next to the batched read of all ids.
fn compare_id_reads(graph: &NearDupGraph, searcher: &tantivy_simhash::NearDupSearcher) -> Res<()> {
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
    let threads = rayon::current_num_threads();
    println!(
        "# batch_bench: N = {n}, layout {} (k = {k}), {} segments, {threads} threads, load average {}",
        layout.id(),
        args.segments,
        load_average()
    );
    let fps = corpus(n, 42);

    let (_tmp, index, build) = open_or_build_index(&args, &fps, threads)?;
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

    let searcher = index.lookups()?;
    let (graph, total_pairs, batch_peak, rss0) = batch_job(&searcher, &fps, threads, &mut t)?;

    pigeonhole_peers(&fps, &layout, k, total_pairs, &mut t)?;
    t.brute = brute_force(&fps, k, args.brute_queries, threads);
    compare_id_reads(&graph, &searcher)?;

    print_summary(n, threads, &t, batch_peak, rss0);
    Ok(())
}
