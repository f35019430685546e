//! Index benchmarks (issue 3, section 5), every figure next to its peer measured in the same run.
//!
//! ```text
//! cargo run --release -p tantivy-simhash-eval --bin index_bench -- ../shared/data
//! cargo run --release -p tantivy-simhash-eval --bin index_bench -- ../shared/data --sizes 100000 --queries 500 --runs 1
//! cargo run --release -p tantivy-simhash-eval --bin index_bench -- ../shared/data --skip-lookup     # indexing only
//! cargo run --release -p tantivy-simhash-eval --bin index_bench -- ../shared/data --skip-indexing   # lookup only
//! cargo run --release -p tantivy-simhash-eval --bin index_bench -- ../shared/data --skip-lookup --sample 5000 --modes plain,stored,off
//! cargo run --release -p tantivy-simhash-eval --bin index_bench -- ../shared/data --sizes 1000000 --skip-indexing
//! ```
//!
//! The signatures and the rule's keys live in the segment component's file of each segment
//! (`tantivy_simhash::component`); lookups probe its sorted tables in place.
//!
//! 1. **Lookup latency** at each size (default 100k and 1M fingerprints, 91% random and 9% in
//!    near-duplicate clusters of 10), with the default layout (4 x 16, k = 3), in an on-disk
//!    (mmap) index, warm, with 8 segments and after merging to 1. Queries: half near an indexed
//!    fingerprint (0..=4 bits flipped), half random. Methods: `NearDupLookup::lookup` (ids
//!    included), `NearDupQuery` through `Searcher::search` with `DocSetCollector`, an in-memory
//!    pigeonhole table and a brute-force scan over the same fingerprints. Recall of every
//!    method is checked against brute force. Also the first lookup of a fresh index handle
//!    (nothing to build: the tables are read in place) and the second.
//! 2. **Lookup by the match rule vs simhash-only** at each size, side by side on one index
//!    (8 segments) of signatures (fingerprint + 256-bin sketch, the rule's 16 keys): the
//!    simhash-only `NearDupLookup::lookup` (the default before lookups moved to the rule)
//!    against `lookup_signature` (the rule, ids included), `lookup_signature_addresses` and
//!    `NearDupQuery::from_signature` with `DocSetCollector`, on the same query fingerprints.
//!    Queries: a quarter near an indexed document (fingerprint 0..=4 bits away, 10% of its
//!    sketch bins changed), a quarter a "copy under other chrome" (random fingerprint, 30% of the
//!    bins changed: found only by resemblance), half random. Recall of the rule against
//!    brute force (`MatchRule::matches` over every signature) on a quarter of the queries.
//!    `--rule-lookup-only` runs this section alone.
//! 3. **Bytes per document** of the fingerprint and key fields (tantivy's space usage).
//! 4. **Indexing** `natural-en.jsonl.gz` and `natural-zh.jsonl.gz` (title and text indexed with
//!    the scheme's own analyzer, id `STRING | FAST | STORED`, text not stored): plain tantivy;
//!    `DedupWriter` `Off` given signatures computed beforehand (the cost of storing them);
//!    `Off` signing then `add_document_with_signature` (the text analysed twice); and every
//!    policy through `add_document` one by one and `add_documents` in batches of 1,000 (one
//!    analysis per document). Best of `--runs` (default 2) runs each, the modes taking turns
//!    run by run. Each row gives wall-clock throughput and the process's CPU time (every
//!    thread), whose ratio holds on a loaded machine. `--sample N` indexes the first N records
//!    of each language; `--modes` picks modes (comma-separated: `plain`, `stored`, `two`, and
//!    `off`, `reject`, `tag`, `replace` one by one or `batch-off` .. `batch-replace`; plain is
//!    always run, as the baseline); `--langs en` one language; `--commit-every N` commits
//!    every N documents in every mode (default: once at the end), so that the checks also run
//!    against committed segments.

#[path = "../support/data.rs"]
mod data;
#[path = "../support/pigeonhole.rs"]
mod pigeonhole;

use data::{load_average, read_jsonl, Res};
use pigeonhole::{brute_force, corpus, queries, PigeonholeTable};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tantivy::collector::DocSetCollector;
use tantivy::indexer::NoMergePolicy;
use tantivy::schema::{
    IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, STORED, STRING,
};
use tantivy::{doc, Index, IndexWriter, TantivyDocument};
use tantivy_simhash::{
    register_tokenizer, BlockLayout, Fingerprint, MatchRule, NearDupConfig, NearDupIndex,
    NearDupLookup, NearDupQuery, Policy, Signature, Sketch, SIMHASH_TOKENIZER_NAME,
};

struct Args {
    data: PathBuf,
    sizes: Vec<usize>,
    queries: usize,
    runs: usize,
    lookup: bool,
    indexing: bool,
    rule_lookup_only: bool,
    sample: Option<usize>,
    modes: Option<Vec<String>>,
    langs: Vec<String>,
    /// Indexing: commit every this many documents (every mode), so that later documents are
    /// checked against committed segments; `None`: one commit at the end.
    commit_every: Option<usize>,
}

fn parse_args() -> Res<Args> {
    let mut args = Args {
        data: PathBuf::from("../shared/data"),
        sizes: vec![100_000, 1_000_000],
        queries: 2_000,
        runs: 2,
        lookup: true,
        indexing: true,
        rule_lookup_only: false,
        sample: None,
        modes: None,
        langs: vec!["en".into(), "zh".into()],
        commit_every: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--sizes" => {
                args.sizes = value("--sizes")?
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()?
            }
            "--queries" => args.queries = value("--queries")?.parse()?,
            "--runs" => args.runs = value("--runs")?.parse::<usize>()?.max(1),
            "--skip-lookup" => args.lookup = false,
            "--skip-indexing" => args.indexing = false,
            "--rule-lookup-only" => args.rule_lookup_only = true,
            "--langs" => args.langs = value("--langs")?.split(',').map(str::to_string).collect(),
            "--sample" => args.sample = Some(value("--sample")?.parse()?),
            "--commit-every" => {
                args.commit_every = Some(value("--commit-every")?.parse::<usize>()?.max(1))
            }
            "--modes" => {
                args.modes = Some(value("--modes")?.split(',').map(str::to_string).collect())
            }
            s if !s.starts_with("--") => args.data = PathBuf::from(s),
            s => return Err(format!("unknown option {s}").into()),
        }
    }
    Ok(args)
}

fn main() -> Res<()> {
    let args = parse_args()?;
    println!(
        "# index_bench: {} logical CPUs, load average {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average()
    );
    if args.rule_lookup_only {
        for &n in &args.sizes {
            rule_lookup_bench(n, args.queries)?;
        }
        return Ok(());
    }
    if args.lookup {
        for &n in &args.sizes {
            lookup_bench(n, args.queries)?;
            rule_lookup_bench(n, args.queries)?;
        }
    }
    if args.indexing {
        for lang in &args.langs {
            let path = args.data.join(format!("natural-{lang}.jsonl.gz"));
            indexing_bench(&path, lang, &args)?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Lookup

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

struct Stats {
    p50: f64,
    p99: f64,
    mean: f64,
}

fn stats(mut v: Vec<Duration>) -> Stats {
    v.sort_unstable();
    let at = |q: f64| us(v[((v.len() as f64 * q) as usize).min(v.len() - 1)]);
    Stats {
        p50: at(0.50),
        p99: at(0.99),
        mean: v.iter().map(|d| us(*d)).sum::<f64>() / v.len() as f64,
    }
}

fn lookup_config() -> NearDupConfig {
    NearDupConfig::new("id", Vec::<String>::new()).with_group_field(None)
}

/// The first lookup of a fresh handle on the index in `dir` (every searcher of the old one
/// dropped by the caller; the key tables are read in place, nothing is built): opening, the
/// first lookup without ids (the tables and signatures), the same lookup with ids (the id
/// column's first reads), then a second lookup.
fn first_lookup(dir: &Path, q: Fingerprint) -> Res<()> {
    let t = Instant::now();
    let index = NearDupIndex::open_recorded(Index::open_in_dir(dir)?)?;
    let s = index.lookups()?;
    let open = t.elapsed();
    let k = s.fields().layout().max_distance();
    let t = Instant::now();
    s.lookup_addresses(q, k)?;
    let first = t.elapsed();
    let t = Instant::now();
    s.lookup(q)?;
    let ids = t.elapsed();
    let t = Instant::now();
    s.lookup(q)?;
    let second = t.elapsed();
    println!(
        "fresh handle: open {:.2} ms, first lookup {:.2} ms without ids, then {:.2} ms with ids, second lookup {:.1} us",
        us(open) / 1e3,
        us(first) / 1e3,
        us(ids) / 1e3,
        us(second)
    );
    Ok(())
}

/// Indexes `fps` in 8 commits (no merges) in a temporary directory, and drops the writer and
/// the index (for a fresh handle); returns the directory.
fn build_lookup_index(fps: &[u64]) -> Res<tempfile::TempDir> {
    build_in_eight_commits(fps, lookup_config(), "fingerprints", |w, doc, &fp| {
        w.add_document_with_fingerprint(doc, Fingerprint(fp))
            .map(|_| ())
    })
}

/// Indexes `items` under `config`, one document each (an id and what `add` gives it), in 8
/// commits without merges in a temporary directory; drops the writer and the index, so the
/// next handle is fresh, and returns the directory.
fn build_in_eight_commits<T>(
    items: &[T],
    config: NearDupConfig,
    what: &str,
    mut add: impl FnMut(
        &mut tantivy_simhash::DedupWriter,
        TantivyDocument,
        &T,
    ) -> tantivy_simhash::Result<()>,
) -> Res<tempfile::TempDir> {
    let n = items.len();
    let dir = tempfile::tempdir()?;
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING | FAST);
    config.add_fields(&mut builder);
    let index = NearDupIndex::create(Index::create_in_dir(dir.path(), builder.build())?, config)?;
    let t = Instant::now();
    let mut w = index.writer_with_num_threads(1, 200_000_000, Policy::Off)?;
    w.index_writer_mut()
        .set_merge_policy(Box::new(NoMergePolicy));
    let per_segment = n.div_ceil(8);
    for (i, item) in items.iter().enumerate() {
        add(&mut w, doc!(id => format!("d{i:07}")), item)?;
        if (i + 1) % per_segment == 0 || i + 1 == n {
            w.commit()?;
        }
    }
    println!(
        "indexed {n} {what} (Policy::Off, 1 thread, 8 commits) in {:.2} s",
        t.elapsed().as_secs_f64()
    );
    // The writer holds a searcher of the segments: drop it for the fresh handle.
    drop(w);
    drop(index);
    Ok(dir)
}

fn lookup_bench(n: usize, n_queries: usize) -> Res<()> {
    let layout = BlockLayout::default();
    let k = layout.max_distance();
    println!("\n## Lookup, N = {n}, layout {} (k = {k})", layout.id());
    let fps = corpus(n, 42);
    let qs = queries(&fps, n_queries, k, 7);

    let t = Instant::now();
    let table = PigeonholeTable::new(&layout, &fps)?;
    println!(
        "pigeonhole table built in {:.2} s",
        t.elapsed().as_secs_f64()
    );

    let dir = build_lookup_index(&fps)?;
    first_lookup(dir.path(), Fingerprint(qs[0]))?;
    let index = NearDupIndex::open_recorded(Index::open_in_dir(dir.path())?)?;
    let mut w = index.writer_with_num_threads(1, 200_000_000, Policy::Off)?;
    w.index_writer_mut()
        .set_merge_policy(Box::new(NoMergePolicy));

    let searcher = index.lookups()?;
    bytes_per_doc(&searcher, "random fingerprints")?;
    run_lookups(&searcher, &fps, &qs, &table, k)?;

    let segs = index.index().searchable_segment_ids()?;
    let t = Instant::now();
    w.index_writer_mut().merge(&segs).wait()?;
    w.commit()?;
    w.wait_merging_threads()?;
    println!(
        "merged to one segment in {:.2} s",
        t.elapsed().as_secs_f64()
    );
    drop((searcher, index));
    first_lookup(dir.path(), Fingerprint(qs[0]))?;
    let index = NearDupIndex::open_recorded(Index::open_in_dir(dir.path())?)?;
    let searcher = index.lookups()?;
    bytes_per_doc(&searcher, "random fingerprints, merged")?;
    run_lookups(&searcher, &fps, &qs, &table, k)?;
    Ok(())
}

/// `sketch` with each 8-bit bin replaced by a random byte with probability `percent` / 100.
fn perturb(rng: &mut pigeonhole::Rng, sketch: &Sketch, percent: u64) -> Sketch {
    let mut words = sketch.words.clone();
    for w in &mut words {
        for bin in 0..8 {
            if rng.below(100) < percent {
                let shift = bin * 8;
                *w = (*w & !(0xff << shift)) | ((rng.next_u64() & 0xff) << shift);
            }
        }
    }
    Sketch { words }
}

/// The indexed signatures (the corpus's fingerprints with random sketches) and the queries: a
/// quarter near an indexed document, a quarter a copy under other chrome, half random.
fn rule_signatures(
    n: usize,
    n_queries: usize,
    rule: &MatchRule,
) -> (Vec<Signature>, Vec<Signature>) {
    let k = rule.layout().max_distance();
    let fps = corpus(n, 42);
    let words = rule.minhash().sketch_words();
    let mut rng = pigeonhole::Rng(11);
    let sigs: Vec<Signature> = fps
        .iter()
        .map(|&fp| Signature {
            fingerprint: Fingerprint(fp),
            sketch: Sketch {
                words: (0..words).map(|_| rng.next_u64()).collect(),
            },
        })
        .collect();
    let queries: Vec<Signature> = (0..n_queries)
        .map(|i| {
            let j = rng.below(n as u64) as usize;
            let bits = rng.below(u64::from(k) + 2) as u32;
            match i % 4 {
                0 => Signature {
                    fingerprint: Fingerprint(rng.flip(fps[j], bits)),
                    sketch: perturb(&mut rng, &sigs[j].sketch, 10),
                },
                1 => Signature {
                    fingerprint: Fingerprint(rng.next_u64()),
                    sketch: perturb(&mut rng, &sigs[j].sketch, 30),
                },
                _ => Signature {
                    fingerprint: Fingerprint(rng.next_u64()),
                    sketch: Sketch {
                        words: (0..words).map(|_| rng.next_u64()).collect(),
                    },
                },
            }
        })
        .collect();
    (sigs, queries)
}

/// Indexes `sigs` in 8 commits (no merges) in a temporary directory, and drops the writer and
/// the index (for a fresh handle); returns the directory.
fn build_rule_index(sigs: &[Signature], rule: &MatchRule) -> Res<tempfile::TempDir> {
    let config = lookup_config().with_rule(rule.clone());
    build_in_eight_commits(sigs, config, "signatures", |w, doc, sig| {
        w.add_document_with_signature(doc, sig.clone()).map(|_| ())
    })
}

type RuleMethod<'a> = (String, Box<dyn Fn(&Signature) -> Res<usize> + 'a>);

/// The methods of the rule table, pairs of simhash-only and rule rows.
fn rule_methods(s: &NearDupLookup, k: u32) -> Vec<RuleMethod<'_>> {
    vec![
        (
            "simhash-only: lookup (with ids)".into(),
            Box::new(|q: &Signature| Ok(s.lookup(q.fingerprint)?.len())),
        ),
        (
            "rule: lookup_signature (with ids)".into(),
            Box::new(|q: &Signature| Ok(s.lookup_signature(q)?.len())),
        ),
        (
            "simhash-only: lookup_addresses (no ids)".into(),
            Box::new(move |q: &Signature| Ok(s.lookup_addresses(q.fingerprint, k)?.len())),
        ),
        (
            "rule: lookup_signature_addresses (no ids)".into(),
            Box::new(|q: &Signature| Ok(s.lookup_signature_addresses(q)?.len())),
        ),
        (
            "simhash-only: NearDupQuery::new + DocSetCollector".into(),
            Box::new(|q: &Signature| {
                let query = NearDupQuery::new(s.fields(), q.fingerprint);
                Ok(s.searcher().search(&query, &DocSetCollector)?.len())
            }),
        ),
        (
            "rule: NearDupQuery::from_signature + DocSetCollector".into(),
            Box::new(|q: &Signature| {
                let query = NearDupQuery::from_signature(s.fields(), q.clone())
                    .with_max_postings_per_key(usize::MAX);
                Ok(s.searcher().search(&query, &DocSetCollector)?.len())
            }),
        ),
    ]
}

/// The rule table: latencies per method and ratios to the simhash-only row of the pair.
fn print_rule_rows(rows: &[(&str, Stats, usize)]) {
    println!(
        "| method | p50 us | p99 us | mean us | p50 / simhash-only | p99 / simhash-only | matches |\n|---|---|---|---|---|---|---|"
    );
    for (i, (name, st, found)) in rows.iter().enumerate() {
        let base = &rows[i - i % 2].1;
        println!(
            "| {name} | {:.1} | {:.1} | {:.1} | {:.2}x | {:.2}x | {found} |",
            st.p50,
            st.p99,
            st.mean,
            st.p50 / base.p50,
            st.p99 / base.p99,
        );
    }
}

/// Recall of the rule lookup against brute force, on a quarter of the queries (the near and
/// copy quarters).
fn rule_recall(
    rule: &MatchRule,
    sigs: &[Signature],
    queries: &[Signature],
    s: &NearDupLookup,
) -> Res<()> {
    let (mut want, mut got, mut by_resemblance) = (0usize, 0usize, 0usize);
    for q in queries
        .iter()
        .step_by(4)
        .chain(queries.iter().skip(1).step_by(4))
    {
        let expected: Vec<usize> = (0..sigs.len())
            .filter(|&i| rule.matches(q, &sigs[i]).is_some())
            .collect();
        want += expected.len();
        let hits = s.lookup_signature_addresses(q)?;
        by_resemblance += hits
            .iter()
            .filter(|(_, e)| e.resemblance().is_some())
            .count();
        got += hits.len();
    }
    println!(
        "rule lookup recall against brute force (the near and copy quarters): {got} of {want} \
         ({by_resemblance} by resemblance)"
    );
    Ok(())
}

fn rule_lookup_bench(n: usize, n_queries: usize) -> Res<()> {
    let rule = MatchRule::default();
    let k = rule.layout().max_distance();
    println!("\n## Lookup by the rule vs simhash-only, N = {n} ({rule})");
    let (sigs, queries) = rule_signatures(n, n_queries, &rule);
    let dir = build_rule_index(&sigs, &rule)?;
    let t = Instant::now();
    let index = NearDupIndex::open_recorded(Index::open_in_dir(dir.path())?)?;
    let fresh = index.lookups()?;
    let open = t.elapsed();
    let t = Instant::now();
    fresh.lookup_signature_addresses(&queries[0])?;
    let first = t.elapsed();
    let t = Instant::now();
    fresh.lookup_signature(&queries[0])?;
    println!(
        "fresh handle: open {:.2} ms, first lookup_signature_addresses {:.2} ms, then lookup_signature (ids) {:.2} ms",
        us(open) / 1e3,
        us(first) / 1e3,
        us(t.elapsed()) / 1e3
    );
    drop(fresh);
    let s = index.lookups()?.with_max_postings_per_key(usize::MAX);
    component_report(&s)?;
    // Warm every path once.
    for q in &queries {
        s.lookup(q.fingerprint)?;
        s.lookup_signature(q)?;
    }
    let methods = rule_methods(&s, k);
    // Each method runs every query in turn (as a service doing only that would: taking turns
    // query by query would measure each method with the others' data in the caches).
    let mut rows = Vec::new();
    for (name, f) in &methods {
        let mut times = Vec::with_capacity(queries.len());
        let mut found = 0;
        for q in &queries {
            let t = Instant::now();
            found += f(q)?;
            times.push(t.elapsed());
        }
        rows.push((name.as_str(), stats(times), found));
    }
    print_rule_rows(&rows);
    rule_recall(&rule, &sigs, &queries, &s)
}

/// The bytes of the segment component's files (signatures and key tables) per document.
fn component_report(s: &NearDupLookup) -> Res<()> {
    let (bytes, docs) = component_bytes(s.searcher())?;
    println!(
        "segment component: {} segment(s), {docs} documents, {:.1} MB = {:.1} B per document \
         (signatures and key tables; read in place, nothing built)",
        s.searcher().segment_readers().len(),
        bytes as f64 / 1e6,
        bytes as f64 / docs.max(1) as f64,
    );
    Ok(())
}

/// The bytes of the segment component's files and the documents of their segments (deleted
/// ones included).
fn component_bytes(searcher: &tantivy::Searcher) -> Res<(u64, u64)> {
    let (mut bytes, mut docs) = (0u64, 0u64);
    for seg in searcher.segment_readers() {
        let file = seg.open_read(tantivy::index::SegmentComponent::Custom(
            tantivy_simhash::COMPONENT_EXTENSION.into(),
        ))?;
        bytes += tantivy::HasLen::len(&file) as u64;
        docs += u64::from(seg.max_doc());
    }
    Ok((bytes, docs))
}

/// Times `f` on each query (the call alone); returns the latencies' stats and the sum of the
/// result sizes.
fn time_queries<'q>(
    qs: impl Iterator<Item = &'q u64>,
    mut f: impl FnMut(Fingerprint) -> Res<usize>,
) -> Res<(Stats, usize)> {
    let mut times = Vec::new();
    let mut found = 0;
    for &q in qs {
        let t = Instant::now();
        let n = f(Fingerprint(q))?;
        times.push(t.elapsed());
        found += n;
    }
    Ok((stats(times), found))
}

/// Expected result sizes, from brute force; also warms every path once.
fn expected_sizes(s: &NearDupLookup, fps: &[u64], qs: &[u64], k: u32) -> Res<Vec<usize>> {
    let mut want = Vec::with_capacity(qs.len());
    let mut buf = Vec::new();
    for &q in qs {
        buf.clear();
        brute_force(fps, Fingerprint(q), k, &mut buf);
        want.push(buf.len());
        s.lookup(Fingerprint(q))?;
        s.searcher().search(
            &NearDupQuery::new(s.fields(), Fingerprint(q)),
            &DocSetCollector,
        )?;
    }
    Ok(want)
}

/// The lookup table: latencies, ratios to the in-memory table (row 3), recall against the
/// expected matches (`expected[i]` for row `i`).
fn print_lookup_rows(rows: &[(&str, Stats, usize)], expected: impl Fn(usize) -> usize) {
    let table_p50 = rows[3].1.p50;
    let table_p99 = rows[3].1.p99;
    println!(
        "| method | p50 us | p99 us | mean us | p50 / table | p99 / table | recall |\n|---|---|---|---|---|---|---|"
    );
    for (i, (name, st, found)) in rows.iter().enumerate() {
        let expected = expected(i);
        println!(
            "| {name} | {:.1} | {:.1} | {:.1} | {:.1}x | {:.1}x | {} |",
            st.p50,
            st.p99,
            st.mean,
            st.p50 / table_p50,
            st.p99 / table_p99,
            if *found == expected {
                "100%".to_string()
            } else {
                format!("{found} of {expected}")
            }
        );
    }
}

fn run_lookups(
    s: &NearDupLookup,
    fps: &[u64],
    qs: &[u64],
    table: &PigeonholeTable,
    k: u32,
) -> Res<()> {
    let segments = s.searcher().segment_readers().len();
    let t = Instant::now();
    let reopened = NearDupLookup::new(s.fields(), s.searcher())?;
    let open_cost = t.elapsed();
    drop(reopened);
    println!(
        "\n{segments} segment(s), {} queries; opening a NearDupLookup: {:.1} us",
        qs.len(),
        us(open_cost)
    );
    component_report(s)?;

    let want = expected_sizes(s, fps, qs, k)?;
    let total: usize = want.iter().sum();

    let mut rows: Vec<(&str, Stats, usize)> = Vec::new();
    let (st, found) = time_queries(qs.iter(), |q| Ok(s.lookup(q)?.len()))?;
    rows.push(("NearDupLookup::lookup (with ids)", st, found));
    let (st, found) = time_queries(qs.iter(), |q| Ok(s.lookup_addresses(q, k)?.len()))?;
    rows.push(("NearDupLookup::lookup_addresses (no ids)", st, found));
    let (st, found) = time_queries(qs.iter(), |q| {
        let query = NearDupQuery::new(s.fields(), q);
        Ok(s.searcher().search(&query, &DocSetCollector)?.len())
    })?;
    rows.push(("NearDupQuery + DocSetCollector", st, found));
    let mut buf = Vec::new();
    let (st, found) = time_queries(qs.iter(), |q| {
        buf.clear();
        table.lookup(q, k, &mut buf)?;
        Ok(buf.len())
    })?;
    rows.push(("in-memory pigeonhole table", st, found));
    // Brute force is slow: a quarter of the queries is plenty for its percentiles.
    let (st, found) = time_queries(qs.iter().step_by(4), |q| {
        buf.clear();
        brute_force(fps, q, k, &mut buf);
        Ok(buf.len())
    })?;
    rows.push(("brute-force scan (1/4 of the queries)", st, found));
    let expected_bf: usize = want.iter().step_by(4).sum();

    print_lookup_rows(&rows, |i| match i {
        4 => expected_bf,
        _ => total,
    });
    println!("({total} matches over all queries)");
    Ok(())
}

fn bytes_per_doc(s: &NearDupLookup, what: &str) -> Res<()> {
    let usage = s.searcher().space_usage()?;
    let (component, docs) = component_bytes(s.searcher())?;
    let per = |b: u64| b as f64 / docs.max(1) as f64;
    println!(
        "bytes per document ({what}, {} segment(s)): near-duplicate data {:.1} B (the segment \
         component: signatures and key tables); whole index {:.1} B",
        usage.segments().len(),
        per(component),
        per(usage.total().get_bytes())
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Indexing

#[derive(Deserialize)]
struct Doc {
    id: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    text: String,
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Plain,
    /// `Off`, signatures computed before the clock starts: the cost of storing them.
    Stored,
    /// `Off`, `signature` then `add_document_with_signature`: the text analysed twice.
    TwoAnalyses,
    Batch(Policy),
    OneByOne(Policy),
}

impl Mode {
    /// The mode's name for `--modes`.
    fn key(self) -> String {
        let policy = |p: Policy| format!("{p:?}").to_lowercase();
        match self {
            Mode::Plain => "plain".into(),
            Mode::Stored => "stored".into(),
            Mode::TwoAnalyses => "two".into(),
            Mode::OneByOne(p) => policy(p),
            Mode::Batch(p) => format!("batch-{}", policy(p)),
        }
    }

    fn name(self) -> String {
        match self {
            Mode::Plain => "plain tantivy (same analyzer, no fingerprint)".into(),
            Mode::Stored => "DedupWriter Off, signatures given (storing them only)".into(),
            Mode::TwoAnalyses => {
                "DedupWriter Off, sign then add_document_with_signature (two analyses)".into()
            }
            Mode::Batch(p) => format!("DedupWriter {p:?}, add_documents (batches of 1000)"),
            Mode::OneByOne(p) => format!("DedupWriter {p:?}, add_document one by one"),
        }
    }
}

/// CPU time of this process so far (every thread, user + system), from /proc/self/stat;
/// zero where it cannot be read. Unlike wall time it does not grow when other processes
/// take the cores, so its ratios hold on a loaded machine.
fn cpu_time() -> Duration {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return Duration::ZERO;
    };
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of stat(5): 12 and 13 after the name; 100 ticks/s
    // on Linux (USER_HZ).
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

struct Run {
    elapsed: Duration,
    cpu: Duration,
    fields_bytes_per_doc: f64,
    index_bytes_per_doc: f64,
    stored: u64,
    /// Candidates the writer's near-duplicate checks verified, per document given.
    verified_per_doc: f64,
    /// CPU time of the thread that adds the documents (signing one by one, the writer's checks
    /// and its own per-document work; not tantivy's indexing threads).
    adding_cpu: Duration,
    /// A digest of every stored document's id, group and replaced ids: equal digests, equal
    /// outcomes.
    digest: u64,
}

/// A fresh on-disk index for `mode`: id, title and text (the scheme's analyzer), plus the
/// near-duplicate fields unless plain; returns its directory, the index, the config and a
/// document maker.
#[allow(clippy::type_complexity)]
fn indexing_index(
    mode: Mode,
    key_postings: bool,
) -> Res<(
    tempfile::TempDir,
    Index,
    NearDupConfig,
    impl Fn(&Doc) -> TantivyDocument,
)> {
    let dir = tempfile::tempdir()?;
    let config = NearDupConfig::new("id", ["title", "text"]).with_key_postings(key_postings);
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING | FAST | STORED);
    let indexing = TextFieldIndexing::default()
        .set_tokenizer(SIMHASH_TOKENIZER_NAME)
        .set_index_option(IndexRecordOption::WithFreqsAndPositions);
    let text_options = TextOptions::default().set_indexing_options(indexing);
    let title = builder.add_text_field("title", text_options.clone());
    let text = builder.add_text_field("text", text_options);
    if mode != Mode::Plain {
        config.add_fields(&mut builder);
    }
    let index = Index::create_in_dir(dir.path(), builder.build())?;
    register_tokenizer(&index, config.scheme());
    let make = move |d: &Doc| -> TantivyDocument {
        doc!(id => d.id.as_str(), title => d.title.as_str(), text => d.text.as_str())
    };
    Ok((dir, index, config, make))
}

/// `add_documents` in batches of 1,000 (never spanning a periodic commit), committing once a
/// batch reaches or crosses a multiple of `commit_every`.
fn add_in_batches(
    w: &mut tantivy_simhash::DedupWriter,
    docs: &[Doc],
    make: impl Fn(&Doc) -> TantivyDocument,
    commit_every: Option<usize>,
) -> Res<()> {
    let batch = commit_every.map_or(1000, |n| n.min(1000));
    let mut done = 0;
    for chunk in docs.chunks(batch) {
        w.add_documents(chunk.iter().map(&make).collect())?;
        let before = done;
        done += chunk.len();
        // Commit once a batch reaches or crosses a multiple of N.
        if commit_every.is_some_and(|n| done / n > before / n) {
            w.commit()?;
        }
    }
    Ok(())
}

/// Writes `docs` into `index` the way `mode` says, with a commit every `commit_every`
/// documents (and at the end); returns the candidates the writer verified.
fn write_docs(
    mode: Mode,
    index: &Index,
    config: NearDupConfig,
    make: impl Fn(&Doc) -> TantivyDocument,
    docs: &[Doc],
    signatures: &[Signature],
    commit_every: Option<usize>,
) -> Res<u64> {
    let budget = 200_000_000;
    let mut verified = 0;
    // Whether to commit after the document at position `i` (counting from 0).
    let commit_after = |i: usize| commit_every.is_some_and(|n| (i + 1).is_multiple_of(n));
    match mode {
        Mode::Plain => {
            let mut w: IndexWriter = index.writer(budget)?;
            for (i, d) in docs.iter().enumerate() {
                w.add_document(make(d))?;
                if commit_after(i) {
                    w.commit()?;
                }
            }
            w.commit()?;
            w.wait_merging_threads()?;
        }
        Mode::Stored | Mode::TwoAnalyses => {
            let nd = NearDupIndex::create(index.clone(), config)?;
            let mut w = nd.writer(budget, Policy::Off)?;
            for (i, (d, sig)) in docs.iter().zip(signatures).enumerate() {
                let doc = make(d);
                let sig = if mode == Mode::Stored {
                    sig.clone()
                } else {
                    w.signature(&doc)
                };
                w.add_document_with_signature(doc, sig)?;
                if commit_after(i) {
                    w.commit()?;
                }
            }
            w.commit()?;
            w.wait_merging_threads()?;
        }
        Mode::Batch(policy) | Mode::OneByOne(policy) => {
            let nd = NearDupIndex::create(index.clone(), config)?;
            let mut w = nd.writer(budget, policy)?;
            if let Mode::Batch(_) = mode {
                add_in_batches(&mut w, docs, &make, commit_every)?;
            } else {
                for (i, d) in docs.iter().enumerate() {
                    w.add_document(make(d))?;
                    if commit_after(i) {
                        w.commit()?;
                    }
                }
            }
            verified = w.candidates_verified();
            w.commit()?;
            w.wait_merging_threads()?;
        }
    }
    Ok(verified)
}

/// The documents stored, the bytes of the near-duplicate data (the segment component's files),
/// and of the whole index.
fn index_space(index: &Index) -> Res<(u64, u64, u64)> {
    let reader = index.reader()?;
    let searcher = reader.searcher();
    let stored = searcher.num_docs();
    let usage = searcher.space_usage()?;
    let has_component = index
        .load_metas()?
        .persisted_custom_extensions
        .iter()
        .any(|e| e == tantivy_simhash::COMPONENT_EXTENSION);
    let component = if has_component {
        component_bytes(&searcher)?.0
    } else {
        0
    };
    Ok((stored, component, usage.total().get_bytes()))
}

fn index_once(
    docs: &[Doc],
    (mode, key_postings): (Mode, bool),
    signatures: &[Signature],
    commit_every: Option<usize>,
) -> Res<Run> {
    let (_dir, index, config, make) = indexing_index(mode, key_postings)?;
    let start = Instant::now();
    let cpu_start = cpu_time();
    let thread_start = thread_cpu_time();
    let verified = write_docs(mode, &index, config, make, docs, signatures, commit_every)?;
    let elapsed = start.elapsed();
    let cpu = cpu_time().saturating_sub(cpu_start);
    let adding_cpu = thread_cpu_time().saturating_sub(thread_start);
    let (stored, fields, total) = index_space(&index)?;
    let digest = outcome_digest(&index)?;
    Ok(Run {
        elapsed,
        cpu,
        fields_bytes_per_doc: fields as f64 / stored.max(1) as f64,
        index_bytes_per_doc: total as f64 / stored.max(1) as f64,
        stored,
        verified_per_doc: verified as f64 / docs.len().max(1) as f64,
        adding_cpu,
        digest,
    })
}

/// A digest of the outcome: per stored document its id, group and replaced ids (read from
/// their columns), sorted, hashed. Two builds that store, tag and replace alike give the same.
fn outcome_digest(index: &Index) -> Res<u64> {
    let searcher = index.reader()?.searcher();
    let mut rows = Vec::with_capacity(searcher.num_docs() as usize);
    let mut value = String::new();
    for segment in searcher.segment_readers() {
        let ff = segment.fast_fields();
        let columns = [
            ff.str("id")?,
            ff.str("simhash_group")?,
            ff.str(tantivy_simhash::REPLACED_FIELD)?,
        ];
        for doc in segment.doc_ids_alive() {
            let mut row = String::new();
            for column in columns.iter().flatten() {
                for ord in column.term_ords(doc) {
                    column.ord_to_str(ord, &mut value)?;
                    row.push_str(&value);
                    row.push('\u{1f}');
                }
                row.push('\u{1e}');
            }
            rows.push(row);
        }
    }
    rows.sort_unstable();
    Ok(xxhash_rust::xxh3::xxh3_64(rows.concat().as_bytes()))
}

/// CPU time of the calling thread (`/proc/thread-self/schedstat`: nanoseconds on a CPU); zero
/// where it cannot be read.
fn thread_cpu_time() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}

/// Fingerprinting alone, one thread, for scale.
fn time_fingerprinting(docs: &[Doc], bytes: usize) {
    let scheme = tantivy_simhash::Scheme::default();
    let mut fpr = scheme.fingerprinter();
    let t = Instant::now();
    for d in docs {
        std::hint::black_box(fpr.fingerprint(&format!("{}\n{}", d.title, d.text)));
    }
    let fp_secs = t.elapsed().as_secs_f64();
    println!(
        "fingerprinting alone, 1 thread: {:.0} docs/s, {:.1} MB/s",
        docs.len() as f64 / fp_secs,
        bytes as f64 / 1e6 / fp_secs
    );
}

/// Signing alone (what DedupWriter computes per document), one thread; returns the signatures.
fn sign_all(docs: &[Doc], bytes: usize) -> Res<Vec<Signature>> {
    let config = NearDupConfig::new("id", ["title", "text"]);
    let mut signer = config.rule()?.signer(config.scheme());
    let t = Instant::now();
    let signatures: Vec<Signature> = docs
        .iter()
        .map(|d| signer.sign(&format!("{}\n{}", d.title, d.text)))
        .collect();
    let sign_secs = t.elapsed().as_secs_f64();
    println!(
        "signing alone (fingerprint + sketch), 1 thread: {:.0} docs/s, {:.1} MB/s",
        docs.len() as f64 / sign_secs,
        bytes as f64 / 1e6 / sign_secs
    );
    Ok(signatures)
}

/// The modes `--modes` selects (plain always).
fn selected_modes(args: &Args) -> Res<Vec<(Mode, bool)>> {
    let modes = [
        Mode::Plain,
        Mode::Stored,
        Mode::TwoAnalyses,
        Mode::OneByOne(Policy::Off),
        Mode::OneByOne(Policy::Reject),
        Mode::OneByOne(Policy::Tag),
        Mode::OneByOne(Policy::Replace),
        Mode::Batch(Policy::Off),
        Mode::Batch(Policy::Reject),
        Mode::Batch(Policy::Tag),
        Mode::Batch(Policy::Replace),
    ];
    let modes: Vec<Mode> = match &args.modes {
        None => modes.to_vec(),
        Some(wanted) => {
            for w in wanted {
                if !modes.iter().any(|m| m.key() == *w) {
                    return Err(format!(
                        "unknown mode `{w}`; expected one of: {}",
                        modes.iter().map(|m| m.key()).collect::<Vec<_>>().join(", ")
                    )
                    .into());
                }
            }
            modes
                .into_iter()
                .filter(|m| *m == Mode::Plain || wanted.contains(&m.key()))
                .collect()
        }
    };
    Ok(modes
        .into_iter()
        .flat_map(|m| std::iter::once((m, false)))
        .collect())
}

/// The indexing table: rates and CPU against plain tantivy (the first row), sizes, checks.
fn print_indexing_rows(modes: Vec<(Mode, bool)>, best: Vec<Option<Run>>, n_docs: usize) {
    let mut plain_rate = 0.0;
    let mut plain_cpu = 0.0;
    for ((mode, key_postings), r) in modes.into_iter().zip(best) {
        let Some(r) = r else { continue };
        let rate = n_docs as f64 / r.elapsed.as_secs_f64();
        let cpu = r.cpu.as_secs_f64();
        if mode == Mode::Plain {
            plain_rate = rate;
            plain_cpu = cpu;
        }
        println!(
            "| {} | {} | {:.0} | {:.2}x | {:.2} | {:.2}x | {:.2} | {} | {:.1} | {:.0} | {:.1} | {:016x} |",
            mode.name(),
            match (mode, key_postings) {
                (Mode::Plain, _) => "-",
                (_, true) => "postings",
                (_, false) => "columns",
            },
            rate,
            rate / plain_rate,
            cpu,
            plain_cpu / cpu.max(1e-9),
            r.adding_cpu.as_secs_f64(),
            r.stored,
            r.fields_bytes_per_doc,
            r.index_bytes_per_doc,
            r.verified_per_doc,
            r.digest
        );
    }
}

fn indexing_bench(path: &Path, lang: &str, args: &Args) -> Res<()> {
    let runs = args.runs;
    let mut docs: Vec<Doc> = read_jsonl(path, usize::MAX)?;
    if let Some(n) = args.sample {
        docs.truncate(n);
    }
    let bytes: usize = docs.iter().map(|d| d.title.len() + d.text.len()).sum();
    println!(
        "\n## Indexing natural-{lang}: {} documents, {:.1} MB of title + text; best of {runs} run(s); {}",
        docs.len(),
        bytes as f64 / 1e6,
        args.commit_every
            .map_or("one commit at the end".to_string(), |n| format!("a commit every {n} documents"))
    );
    time_fingerprinting(&docs, bytes);
    let signatures = sign_all(&docs, bytes)?;
    let modes = selected_modes(args)?;
    println!(
        "| writer | keys | docs/s | vs plain | CPU s | vs plain (CPU) | adding thread CPU s | docs stored | fingerprint+keys B/doc | index B/doc | verified/doc | outcome digest |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    // Round-robin over the modes, so a load change on a shared machine hits every mode alike.
    let mut best: Vec<Option<Run>> = modes.iter().map(|_| None).collect();
    for _ in 0..runs {
        for (mode, slot) in modes.iter().zip(best.iter_mut()) {
            let r = index_once(&docs, *mode, &signatures, args.commit_every)?;
            if slot.as_ref().is_none_or(|b| r.elapsed < b.elapsed) {
                *slot = Some(r);
            }
        }
    }
    print_indexing_rows(modes, best, docs.len());
    Ok(())
}
