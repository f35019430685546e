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

#[path = "../../support/data.rs"]
mod data;
#[path = "../../support/pigeonhole.rs"]
mod pigeonhole;

mod indexing;
mod lookups;
mod rule_lookups;

use indexing::*;
use lookups::*;
use rule_lookups::*;

use data::{load_average, read_jsonl, Doc, Res};
use pigeonhole::{brute_force, corpus, queries, PigeonholeTable};
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

// ---------------------------------------------------------------------------------------------
// Indexing
