//! Fingerprinting speed next to the analyzer alone, in one run.
//!
//! ```text
//! cargo run --release --example fingerprint_speed -- ../shared/data
//! cargo run --release --example fingerprint_speed -- ../shared/data --sample 2000 --reps 5
//! ```
//!
//! For `natural-en.jsonl.gz` and `natural-zh.jsonl.gz` of the data directory (default
//! `$SIMHASH_DATA` or `../shared/data`; generated text if a file is missing), the records
//! (`title + "\n" + text`, all of them or the first `--sample N`) are packed into documents of
//! about 4 KB. Each repetition (default 3) times the scheme's analyzer alone (every token
//! stream consumed) and then full fingerprinting through one reused `Fingerprinter`; the best
//! wall time of each is reported as MB/s (10^6 bytes per second), with the ratio
//! fingerprint / analyzer. Goal: ratio >= 0.7. It also times signing under the default
//! [`MatchRule`] (fingerprint and MinHash sketch from the same analysis pass), with the ratio
//! sign / fingerprint: what the second signature costs.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tantivy::tokenizer::TokenStream;
use tantivy_simhash::{MatchRule, Scheme};

#[path = "../benches/common/mod.rs"]
mod common;
use common::{default_data_dir, load, Lang};

struct Args {
    dir: PathBuf,
    sample: Option<usize>,
    reps: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        dir: default_data_dir(),
        sample: None,
        reps: 3,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut number = |name: &str| -> Result<usize, String> {
            it.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{name} needs a number"))
        };
        match a.as_str() {
            "--sample" => args.sample = Some(number("--sample")?),
            "--reps" => args.reps = number("--reps")?.max(1),
            "-h" | "--help" => {
                return Err("usage: fingerprint_speed [DATA_DIR] [--sample N] [--reps R]".into())
            }
            s if s.starts_with('-') => return Err(format!("unknown option {s}; try --help")),
            s => args.dir = PathBuf::from(s),
        }
    }
    Ok(args)
}

fn mb_per_s(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let scheme = Scheme::default();
    println!("scheme {}", scheme.id());
    let mut fingerprinter = scheme.fingerprinter();
    let rule = MatchRule::default();
    let mut signer = rule.signer(&scheme);
    let mut analyzer = scheme.text_analyzer();
    // Load jieba's dictionary before any measurement.
    black_box(fingerprinter.fingerprint("预热结巴分词词典"));
    println!(
        "{:<4} {:>6} {:>10} {:>10} {:>13} {:>16} {:>7} {:>9} {:>14}",
        "lang",
        "docs",
        "MB",
        "tokens",
        "analyzer MB/s",
        "fingerprint MB/s",
        "ratio",
        "sign MB/s",
        "sign/fingerpr."
    );
    for lang in [Lang::En, Lang::Zh] {
        let corpus = load(&args.dir, lang, args.sample, None);
        eprintln!("{}: {}", lang.code(), corpus.origin);
        let (mut best_a, mut best_f, mut best_s) = (Duration::MAX, Duration::MAX, Duration::MAX);
        let mut tokens = 0usize;
        for _ in 0..args.reps {
            tokens = 0;
            let t = Instant::now();
            for doc in &corpus.docs {
                let mut stream = analyzer.token_stream(doc);
                while stream.advance() {
                    black_box(stream.token());
                    tokens += 1;
                }
            }
            best_a = best_a.min(t.elapsed());

            let t = Instant::now();
            for doc in &corpus.docs {
                black_box(fingerprinter.fingerprint(doc));
            }
            best_f = best_f.min(t.elapsed());

            let t = Instant::now();
            for doc in &corpus.docs {
                black_box(signer.sign(doc));
            }
            best_s = best_s.min(t.elapsed());
        }
        let s = mb_per_s(corpus.bytes, best_s);
        let (a, f) = (
            mb_per_s(corpus.bytes, best_a),
            mb_per_s(corpus.bytes, best_f),
        );
        println!(
            "{:<4} {:>6} {:>10.2} {:>10} {:>13.1} {:>16.1} {:>7.2} {:>9.1} {:>14.2}{}",
            lang.code(),
            corpus.docs.len(),
            corpus.bytes as f64 / 1e6,
            tokens,
            a,
            f,
            f / a,
            s,
            s / f,
            if f / a >= 0.7 { "" } else { "  (< 0.7 goal)" }
        );
    }
}
