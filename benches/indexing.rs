//! Indexing throughput: `DedupWriter` under every policy next to plain tantivy with the same
//! analyzer, measured in one run, with the ratios printed at the end of each language.
//!
//! ```text
//! cargo bench --bench indexing
//! SIMHASH_BENCH_DOCS=5000 SIMHASH_DATA=path/to/data cargo bench --bench indexing
//! ```
//!
//! The first `SIMHASH_BENCH_DOCS` records (default 2,000) of `natural-{en,zh}.jsonl.gz`
//! (`$SIMHASH_DATA`, default `../shared/data`), title and text indexed with the scheme's
//! analyzer (positions), id `STRING | FAST | STORED`, in a RAM index, two indexing threads.
//! One iteration indexes every record and commits. Modes:
//! - `plain`: tantivy alone (no signature fields): the baseline;
//! - `stored`: `DedupWriter` `Off` given signatures computed before the clock starts: what
//!   storing the signature fields costs (tantivy analyses the text);
//! - `two-analyses`: `Off`, signing each document then `add_document_with_signature`: the
//!   writer analyses the text to sign it and tantivy analyses it again;
//! - `off`, `reject`, `tag`, `replace`: `add_document` one by one (one analysis per document);
//! - `off-batch`, `reject-batch`: `add_documents` in batches of 500 (signing in parallel).
//!
//! The goal (issue 13): every policy >= 0.9x `plain`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode};
use flate2::read::GzDecoder;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, STORED, STRING,
};
use tantivy::{doc, Index, IndexWriter, TantivyDocument};
use tantivy_simhash::{
    register_tokenizer, NearDupConfig, NearDupIndex, Policy, Signature, SIMHASH_TOKENIZER_NAME,
};

const MODES: [&str; 9] = [
    "plain",
    "stored",
    "two-analyses",
    "off",
    "reject",
    "tag",
    "replace",
    "off-batch",
    "reject-batch",
];

struct Record {
    id: String,
    title: String,
    text: String,
}

fn data_dir() -> PathBuf {
    std::env::var_os("SIMHASH_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("../shared/data"))
}

fn bench_docs() -> usize {
    std::env::var("SIMHASH_BENCH_DOCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000)
}

/// The first `n` records, or generated ones when the file cannot be read.
fn records(lang: &str, n: usize) -> Vec<Record> {
    let path = data_dir().join(format!("natural-{lang}.jsonl.gz"));
    let read = || -> Result<Vec<Record>, Box<dyn std::error::Error>> {
        let mut out = Vec::new();
        for line in BufReader::new(GzDecoder::new(File::open(&path)?)).lines() {
            if out.len() >= n {
                break;
            }
            let v: serde_json::Value = serde_json::from_str(&line?)?;
            let field = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
            out.push(Record {
                id: field("id"),
                title: field("title"),
                text: field("text"),
            });
        }
        Ok(out)
    };
    match read() {
        Ok(r) if !r.is_empty() => r,
        other => {
            eprintln!(
                "{}: {:?}; using generated text",
                path.display(),
                other.err()
            );
            let words = [
                "near",
                "duplicate",
                "文档",
                "检测",
                "index",
                "tantivy",
                "simhash",
            ];
            (0..n)
                .map(|i| Record {
                    id: format!("g{i}"),
                    title: words[i % words.len()].to_string(),
                    text: (0..400)
                        .map(|j| words[(i * 7 + j * 13) % words.len()])
                        .collect::<Vec<_>>()
                        .join(" "),
                })
                .collect()
        }
    }
}

struct Fields {
    id: Field,
    title: Field,
    text: Field,
}

fn new_index(config: &NearDupConfig, with_signatures: bool) -> (Index, Fields) {
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING | FAST | STORED);
    let analysed = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(SIMHASH_TOKENIZER_NAME)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let title = builder.add_text_field("title", analysed.clone());
    let text = builder.add_text_field("text", analysed);
    if with_signatures {
        config.add_fields(&mut builder);
    }
    let index = Index::create_in_ram(builder.build());
    register_tokenizer(&index, config.scheme());
    (index, Fields { id, title, text })
}

fn make(f: &Fields, r: &Record) -> TantivyDocument {
    doc!(f.id => r.id.as_str(), f.title => r.title.as_str(), f.text => r.text.as_str())
}

const THREADS: usize = 2;
const BUDGET: usize = 80_000_000;

/// Indexes `records` in `mode`; returns the time from the first document to the commit.
fn index_once(mode: &str, records: &[Record], signatures: &[Signature]) -> Duration {
    let config = NearDupConfig::new("id", ["title", "text"]);
    let (index, f) = new_index(&config, mode != "plain");
    if mode == "plain" {
        let mut w: IndexWriter = index.writer_with_num_threads(THREADS, BUDGET).unwrap();
        let start = Instant::now();
        for r in records {
            w.add_document(make(&f, r)).unwrap();
        }
        w.commit().unwrap();
        return start.elapsed();
    }
    let policy = match mode.trim_end_matches("-batch") {
        "reject" => Policy::Reject,
        "tag" => Policy::Tag,
        "replace" => Policy::Replace,
        _ => Policy::Off,
    };
    let index = NearDupIndex::create(index, config).unwrap();
    let mut w = index
        .writer_with_num_threads(THREADS, BUDGET, policy)
        .unwrap();
    let start = Instant::now();
    match mode {
        "stored" => {
            for (r, sig) in records.iter().zip(signatures) {
                w.add_document_with_signature(make(&f, r), sig.clone())
                    .unwrap();
            }
        }
        "two-analyses" => {
            for r in records {
                let doc = make(&f, r);
                let sig = w.signature(&doc);
                w.add_document_with_signature(doc, sig).unwrap();
            }
        }
        m if m.ends_with("-batch") => {
            for chunk in records.chunks(500) {
                w.add_documents(chunk.iter().map(|r| make(&f, r)).collect())
                    .unwrap();
            }
        }
        _ => {
            for r in records {
                w.add_document(make(&f, r)).unwrap();
            }
        }
    }
    w.commit().unwrap();
    start.elapsed()
}

fn indexing(c: &mut Criterion) {
    let n = bench_docs();
    for lang in ["en", "zh"] {
        let records = records(lang, n);
        let config = NearDupConfig::new("id", ["title", "text"]);
        let rule = config.rule().unwrap();
        let mut signer = rule.signer(config.scheme());
        let signatures: Vec<Signature> = records
            .iter()
            .map(|r| signer.sign(&format!("{}\n{}", r.title, r.text)))
            .collect();
        let bytes: usize = records.iter().map(|r| r.title.len() + r.text.len()).sum();
        eprintln!(
            "indexing {lang}: {} records, {:.1} MB",
            records.len(),
            bytes as f64 / 1e6
        );
        // Mean seconds per iteration of each mode, measured by this run.
        let means: RefCell<BTreeMap<&str, (Duration, u32)>> = RefCell::new(BTreeMap::new());
        let mut group = c.benchmark_group(format!("indexing-{lang}"));
        group
            .sampling_mode(SamplingMode::Flat)
            .sample_size(10)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(10));
        for mode in MODES {
            group.bench_function(BenchmarkId::new(mode, records.len()), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        total += index_once(mode, &records, &signatures);
                    }
                    let mut m = means.borrow_mut();
                    let e = m.entry(mode).or_default();
                    e.0 += total;
                    e.1 += iters as u32;
                    total
                })
            });
        }
        group.finish();
        let means = means.into_inner();
        let mean = |m: &str| means.get(m).map(|(d, i)| d.as_secs_f64() / f64::from(*i));
        if let Some(plain) = mean("plain") {
            println!(
                "\nindexing {lang}, {} records: throughput vs plain tantivy",
                records.len()
            );
            println!("| mode | docs/s | vs plain |\n|---|---|---|");
            for mode in MODES {
                if let Some(s) = mean(mode) {
                    println!(
                        "| {mode} | {:.0} | {:.2}x |",
                        records.len() as f64 / s,
                        plain / s
                    );
                }
            }
        }
    }
}

criterion_group!(benches, indexing);
criterion_main!(benches);
