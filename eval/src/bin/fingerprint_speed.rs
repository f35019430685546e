//! Fingerprinting speed next to the analyzer alone, in one run.
//!
//! ```text
//! cargo run --release -p tantivy-simhash-eval --bin fingerprint_speed -- ../shared/data
//! cargo run --release -p tantivy-simhash-eval --bin fingerprint_speed -- ../shared/data --sample 2000 --reps 5
//! cargo run --release -p tantivy-simhash-eval --bin fingerprint_speed -- ../shared/data --lang en --only sign  # to profile
//! cargo run --release -p tantivy-simhash-eval --bin fingerprint_speed -- ../shared/data --docs records  # per record only
//! cargo run --release -p tantivy-simhash-eval --bin fingerprint_speed -- ../shared/data --digest  # no timing
//! ```
//!
//! `--digest` prints, per language, a hash of every document's signature instead of timing
//! (a change meant to be bit-identical must leave it unchanged).
//!
//! For `natural-en.jsonl.gz` and `natural-zh.jsonl.gz` of the data directory (default
//! `$SIMHASH_DATA` or `../shared/data`; generated text if a file is missing), the records
//! (`title + "\n" + text`, all of them or the first `--sample N`) are made into documents two
//! ways (`--docs packed|records|both`, both by default): packed into documents of about 4 KB
//! (per-document costs hidden), and one document per record, as `DedupWriter` signs a record's
//! two text fields (per-document costs show: en records are ~1.6 KB on average, many far
//! shorter). Each repetition (default 3) times, in turn, the scheme's analyzer alone (every
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

#[path = "../../../benches/common/mod.rs"]
mod common;
use common::{default_data_dir, load, Lang, Packing};

struct Args {
    dir: PathBuf,
    sample: Option<usize>,
    reps: usize,
    langs: Vec<Lang>,
    /// Which of analyzer / fingerprint / sign to time (all three by default; one alone is for
    /// `perf record`, and prints no ratios).
    only: Option<Stage>,
    /// The document sets, each measured (or digested) in turn.
    packings: Vec<Packing>,
    digest: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    Analyzer,
    Fingerprint,
    Sign,
}

const USAGE: &str = "usage: fingerprint_speed [DATA_DIR] [--sample N] [--reps R] [--lang en|zh] \
                     [--only analyzer|fingerprint|sign] [--docs packed|records|both] [--digest]";

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        dir: default_data_dir(),
        sample: None,
        reps: 3,
        langs: vec![Lang::En, Lang::Zh],
        only: None,
        packings: vec![Packing::Packed, Packing::PerRecord],
        digest: false,
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
            "--lang" => {
                args.langs = match it.next().as_deref() {
                    Some("en") => vec![Lang::En],
                    Some("zh") => vec![Lang::Zh],
                    other => return Err(format!("--lang {other:?}: expected en or zh")),
                }
            }
            "--only" => {
                args.only = Some(match it.next().as_deref() {
                    Some("analyzer") => Stage::Analyzer,
                    Some("fingerprint") => Stage::Fingerprint,
                    Some("sign") => Stage::Sign,
                    other => {
                        return Err(format!(
                            "--only {other:?}: expected analyzer, fingerprint or sign"
                        ))
                    }
                })
            }
            "--docs" => {
                args.packings = match it.next().as_deref() {
                    Some("packed") => vec![Packing::Packed],
                    Some("records") => vec![Packing::PerRecord],
                    Some("both") => vec![Packing::Packed, Packing::PerRecord],
                    other => {
                        return Err(format!(
                            "--docs {other:?}: expected packed, records or both"
                        ))
                    }
                }
            }
            "--digest" => args.digest = true,
            "-h" | "--help" => return Err(USAGE.into()),
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

/// The best CPU time of each stage over the repetitions (`None`: not timed) and the token count.
struct Timings {
    analyzer: Option<Duration>,
    fingerprint: Option<Duration>,
    sign: Option<Duration>,
    tokens: usize,
}

/// Times the stages `args.only` selects on every document of `docs`, best of `args.reps`.
fn measure(args: &Args, scheme: &Scheme, docs: &[String]) -> Timings {
    let mut fingerprinter = scheme.fingerprinter();
    let mut signer = MatchRule::default().signer(scheme);
    let mut analyzer = scheme.text_analyzer();
    let runs = |stage| args.only.is_none_or(|only| only == stage);
    let best = |t: &mut Option<Duration>, d: Duration| *t = Some(t.map_or(d, |b| b.min(d)));
    let mut out = Timings {
        analyzer: None,
        fingerprint: None,
        sign: None,
        tokens: 0,
    };
    for _ in 0..args.reps {
        if runs(Stage::Analyzer) {
            out.tokens = 0;
            let d = timed(|| {
                for doc in docs {
                    let mut stream = analyzer.token_stream(doc);
                    while stream.advance() {
                        black_box(stream.token());
                        out.tokens += 1;
                    }
                }
            });
            best(&mut out.analyzer, d);
        }
        if runs(Stage::Fingerprint) {
            let d = timed(|| {
                docs.iter()
                    .for_each(|d| _ = black_box(fingerprinter.fingerprint(d)))
            });
            best(&mut out.fingerprint, d);
        }
        if runs(Stage::Sign) {
            let d = timed(|| docs.iter().for_each(|d| _ = black_box(signer.sign(d))));
            best(&mut out.sign, d);
        }
    }
    out
}

/// A hash of the signatures of `docs` under the default rule (fingerprint and sketch words),
/// stable across runs of one build.
fn signature_digest(scheme: &Scheme, docs: &[String]) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut signer = MatchRule::default().signer(scheme);
    let mut hasher = DefaultHasher::new();
    for doc in docs {
        signer.sign(doc).hash(&mut hasher);
    }
    hasher.finish()
}

/// `MB/s` of a timed stage, `-` for one not timed.
fn rate(bytes: usize, d: Option<Duration>) -> Option<f64> {
    d.map(|d| mb_per_s(bytes, d))
}

fn show(v: Option<f64>, width: usize, decimals: usize) -> String {
    v.map_or_else(
        || format!("{:>width$}", "-"),
        |v| format!("{v:>width$.decimals$}"),
    )
}

/// `packed` or `records`.
fn packing_name(packing: Packing) -> &'static str {
    match packing {
        Packing::Packed => "packed",
        Packing::PerRecord => "records",
    }
}

fn print_row(lang: Lang, packing: Packing, docs: usize, bytes: usize, t: &Timings) {
    let a = rate(bytes, t.analyzer);
    let f = rate(bytes, t.fingerprint);
    let s = rate(bytes, t.sign);
    let ratio = |x: Option<f64>| x.zip(a).map(|(x, a)| x / a);
    let (fr, sr) = (ratio(f), ratio(s));
    let missed: Vec<&str> = [
        fr.filter(|&r| r < 0.7).map(|_| "fingerprint < 0.7"),
        sr.filter(|&r| r < 0.8).map(|_| "signature < 0.8"),
    ]
    .into_iter()
    .flatten()
    .collect();
    println!(
        "{:<4} {:<7} {:>6} {:>10.2} {:>10} {} {} {} {} {}{}",
        lang.code(),
        packing_name(packing),
        docs,
        bytes as f64 / 1e6,
        t.tokens,
        show(a, 13, 1),
        show(f, 16, 1),
        show(fr, 7, 2),
        show(s, 9, 1),
        show(sr, 7, 2),
        if missed.is_empty() {
            String::new()
        } else {
            format!("  ({} goal)", missed.join(", "))
        }
    );
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
    // Load jieba's dictionary before any measurement.
    black_box(scheme.fingerprint("预热结巴分词词典"));
    if !args.digest {
        println!(
            "{:<4} {:<7} {:>6} {:>10} {:>10} {:>13} {:>16} {:>7} {:>9} {:>7}",
            "lang",
            "as",
            "docs",
            "MB",
            "tokens",
            "analyzer MB/s",
            "fingerprint MB/s",
            "ratio",
            "sign MB/s",
            "ratio"
        );
    }
    for &lang in &args.langs {
        for &packing in &args.packings {
            let corpus = load(&args.dir, lang, args.sample, None, packing);
            eprintln!(
                "{} {}: {}",
                lang.code(),
                packing_name(packing),
                corpus.origin
            );
            if args.digest {
                let digest = signature_digest(&scheme, &corpus.docs);
                println!(
                    "{} {} documents ({}): signature digest {digest:016x}",
                    lang.code(),
                    corpus.docs.len(),
                    packing_name(packing)
                );
                continue;
            }
            let timings = measure(&args, &scheme, &corpus.docs);
            print_row(lang, packing, corpus.docs.len(), corpus.bytes, &timings);
        }
    }
}
