//! Fingerprinting throughput next to the analyzer's own throughput, on the same text.
//!
//! ```text
//! cargo bench --bench fingerprint
//! SIMHASH_DATA=path/to/data SIMHASH_BENCH_BYTES=1000000 cargo bench --bench fingerprint
//! ```
//!
//! For English and Chinese (`natural-{en,zh}.jsonl.gz` of `$SIMHASH_DATA`, default
//! `../shared/data`; generated text if the file is missing), about 4 MB of documents of about
//! 4 KB each. One iteration processes every document:
//! - `analyzer`: `Scheme::text_analyzer()`, every token stream consumed to the end;
//! - `fingerprint`: a reused `Fingerprinter` (analysis + features + simhash).
//!
//! Goal (DESIGN.md section 4): `fingerprint` >= 0.7x `analyzer`.

use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use std::hint::black_box;
use std::time::Duration;
use tantivy::tokenizer::TokenStream;
use tantivy_simhash::Scheme;

mod common;
use common::{default_data_dir, load, Lang};

fn bench_bytes() -> usize {
    std::env::var("SIMHASH_BENCH_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4 << 20)
}

fn fingerprinting(c: &mut Criterion) {
    let dir = default_data_dir();
    let scheme = Scheme::default();
    // Load jieba's dictionary before any measurement.
    black_box(scheme.fingerprint("预热结巴分词词典"));
    for lang in [Lang::En, Lang::Zh] {
        let corpus = load(&dir, lang, None, Some(bench_bytes()));
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

        let mut analyzer = scheme.text_analyzer();
        group.bench_function(BenchmarkId::new("analyzer", lang.code()), |b| {
            b.iter(|| {
                for doc in &corpus.docs {
                    let mut stream = analyzer.token_stream(doc);
                    while stream.advance() {
                        black_box(stream.token());
                    }
                }
            })
        });

        let mut fingerprinter = scheme.fingerprinter();
        group.bench_function(BenchmarkId::new("fingerprint", lang.code()), |b| {
            b.iter(|| {
                for doc in &corpus.docs {
                    black_box(fingerprinter.fingerprint(doc));
                }
            })
        });
        group.finish();
    }
}

criterion_group!(benches, fingerprinting);
criterion_main!(benches);
