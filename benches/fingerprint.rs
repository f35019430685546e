//! Fingerprinting throughput next to the analyzer's own throughput, on the same text.
//!
//! ```text
//! cargo bench --bench fingerprint
//! SIMHASH_DATA=path/to/data SIMHASH_BENCH_BYTES=1000000 cargo bench --bench fingerprint
//! SIMHASH_BENCH_RECORDS=1 cargo bench --bench fingerprint   # one document per record
//! ```
//!
//! For English and Chinese (`natural-{en,zh}.jsonl.gz` of `$SIMHASH_DATA`, default
//! `../shared/data`; generated text if the file is missing), about 4 MB of documents of about
//! 4 KB each (records packed together), or with `SIMHASH_BENCH_RECORDS=1` one document per
//! record (`title + "\n" + text`, as the writer signs them: per-document costs show). One
//! iteration processes every document:
//! - `analyzer`: `Scheme::text_analyzer()`, every token stream consumed to the end;
//! - `fingerprint`: a reused `Fingerprinter` (analysis + features + simhash);
//! - `signature`: a reused `Signer` (the fingerprint and the MinHash sketch from one analysis:
//!   what `DedupWriter` computes per document).
//!
//! The throughput of each next to the analyzer's is printed at the end of each language (means
//! of this run). Goal (issue 13): `signature` >= 0.8x `analyzer`.

use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};
use tantivy::tokenizer::TokenStream;
use tantivy_simhash::{MatchRule, Scheme};

mod common;
use common::{default_data_dir, load, Lang, Packing};

fn bench_bytes() -> usize {
    std::env::var("SIMHASH_BENCH_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4 << 20)
}

fn bench_packing() -> Packing {
    match std::env::var("SIMHASH_BENCH_RECORDS").as_deref() {
        Ok("1") => Packing::PerRecord,
        _ => Packing::Packed,
    }
}

fn fingerprinting(c: &mut Criterion) {
    let dir = default_data_dir();
    let scheme = Scheme::default();
    // Load jieba's dictionary before any measurement.
    black_box(scheme.fingerprint("预热结巴分词词典"));
    for lang in [Lang::En, Lang::Zh] {
        let corpus = load(&dir, lang, None, Some(bench_bytes()), bench_packing());
        eprintln!(
            "{}: {} documents, {} bytes from {}",
            lang.code(),
            corpus.docs.len(),
            corpus.bytes,
            corpus.origin
        );
        let mut group = c.benchmark_group("fingerprint");
        group
            .sampling_mode(SamplingMode::Flat)
            .sample_size(10)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(5))
            .throughput(Throughput::Bytes(corpus.bytes as u64));

        // Mean time per iteration of each mode in this run, for the ratios printed below.
        let means: RefCell<BTreeMap<&'static str, (Duration, u32)>> = RefCell::default();
        let mut analyzer = scheme.text_analyzer();
        group.bench_function(BenchmarkId::new("analyzer", lang.code()), |b| {
            b.iter_custom(|iters| {
                timed(&means, "analyzer", iters, || {
                    for doc in &corpus.docs {
                        let mut stream = analyzer.token_stream(doc);
                        while stream.advance() {
                            black_box(stream.token());
                        }
                    }
                })
            })
        });

        let mut fingerprinter = scheme.fingerprinter();
        group.bench_function(BenchmarkId::new("fingerprint", lang.code()), |b| {
            b.iter_custom(|iters| {
                timed(&means, "fingerprint", iters, || {
                    for doc in &corpus.docs {
                        black_box(fingerprinter.fingerprint(doc));
                    }
                })
            })
        });

        let mut signer = MatchRule::default().signer(&scheme);
        group.bench_function(BenchmarkId::new("signature", lang.code()), |b| {
            b.iter_custom(|iters| {
                timed(&means, "signature", iters, || {
                    for doc in &corpus.docs {
                        black_box(signer.sign(doc));
                    }
                })
            })
        });
        group.finish();
        let means = means.into_inner();
        let mean = |m: &str| means.get(m).map(|(d, i)| d.as_secs_f64() / f64::from(*i));
        if let Some(analyzer) = mean("analyzer") {
            println!("\n{}: throughput vs the analyzer alone", lang.code());
            for mode in ["analyzer", "fingerprint", "signature"] {
                if let Some(s) = mean(mode) {
                    println!(
                        "{mode}: {:.1} MB/s, {:.2}x",
                        corpus.bytes as f64 / 1e6 / s,
                        analyzer / s
                    );
                }
            }
        }
    }
}

/// Runs `f` `iters` times; adds the time to `means[mode]` and returns it.
fn timed(
    means: &RefCell<BTreeMap<&'static str, (Duration, u32)>>,
    mode: &'static str,
    iters: u64,
    mut f: impl FnMut(),
) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        f();
    }
    let elapsed = start.elapsed();
    let mut m = means.borrow_mut();
    let e = m.entry(mode).or_default();
    e.0 += elapsed;
    e.1 += iters as u32;
    elapsed
}

criterion_group!(benches, fingerprinting);
criterion_main!(benches);
