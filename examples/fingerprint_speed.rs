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
//! about 4 KB. Each repetition (default 3) times, in turn, the scheme's analyzer alone (every
//! token stream consumed), full fingerprinting through one reused `Fingerprinter` and signing
//! under the default [`MatchRule`] (fingerprint and MinHash sketch from the same analysis pass,
//! what `DedupWriter` computes per document). Each is timed by the thread's CPU time
//! (`/proc/thread-self/schedstat`, nanoseconds; wall time where it cannot be read), which does
//! not grow while other processes hold the cores, so the ratios hold on a loaded machine; the
//! best of the repetitions is reported as MB/s (10^6 bytes per CPU second) with the ratios to
//! the analyzer. Goals: fingerprint >= 0.7x, signature >= 0.8x (issue 13).

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

/// This thread's CPU time, from `/proc/thread-self/schedstat` (its first field, in ns); `None`
/// where it cannot be read.
fn thread_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns = stat.split_whitespace().next()?.parse::<u64>().ok()?;
    Some(Duration::from_nanos(ns))
}

/// Times `f` by the thread's CPU time, or by the wall clock where that cannot be read.
fn timed(f: impl FnOnce()) -> Duration {
    let (cpu, wall) = (thread_cpu(), Instant::now());
    f();
    match (cpu, thread_cpu()) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => wall.elapsed(),
    }
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
    println!(
        "scheme {}; timing by {}",
        scheme.id(),
        if thread_cpu().is_some() {
            "thread CPU time"
        } else {
            "wall clock"
        }
    );
    let mut fingerprinter = scheme.fingerprinter();
    let rule = MatchRule::default();
    let mut signer = rule.signer(&scheme);
    let mut analyzer = scheme.text_analyzer();
    // Load jieba's dictionary before any measurement.
    black_box(fingerprinter.fingerprint("预热结巴分词词典"));
    println!(
        "{:<4} {:>6} {:>10} {:>10} {:>13} {:>16} {:>7} {:>9} {:>7}",
        "lang",
        "docs",
        "MB",
        "tokens",
        "analyzer MB/s",
        "fingerprint MB/s",
        "ratio",
        "sign MB/s",
        "ratio"
    );
    for lang in [Lang::En, Lang::Zh] {
        let corpus = load(&args.dir, lang, args.sample, None);
        eprintln!("{}: {}", lang.code(), corpus.origin);
        let (mut best_a, mut best_f, mut best_s) = (Duration::MAX, Duration::MAX, Duration::MAX);
        let mut tokens = 0usize;
        for _ in 0..args.reps {
            tokens = 0;
            best_a = best_a.min(timed(|| {
                for doc in &corpus.docs {
                    let mut stream = analyzer.token_stream(doc);
                    while stream.advance() {
                        black_box(stream.token());
                        tokens += 1;
                    }
                }
            }));
            best_f = best_f.min(timed(|| {
                for doc in &corpus.docs {
                    black_box(fingerprinter.fingerprint(doc));
                }
            }));
            best_s = best_s.min(timed(|| {
                for doc in &corpus.docs {
                    black_box(signer.sign(doc));
                }
            }));
        }
        let s = mb_per_s(corpus.bytes, best_s);
        let (a, f) = (
            mb_per_s(corpus.bytes, best_a),
            mb_per_s(corpus.bytes, best_f),
        );
        println!(
            "{:<4} {:>6} {:>10.2} {:>10} {:>13.1} {:>16.1} {:>7.2} {:>9.1} {:>7.2}{}",
            lang.code(),
            corpus.docs.len(),
            corpus.bytes as f64 / 1e6,
            tokens,
            a,
            f,
            f / a,
            s,
            s / a,
            match (f / a >= 0.7, s / a >= 0.8) {
                (true, true) => "",
                (false, true) => "  (fingerprint < 0.7 goal)",
                (true, false) => "  (signature < 0.8 goal)",
                (false, false) => "  (fingerprint < 0.7, signature < 0.8 goals)",
            }
        );
    }
}
