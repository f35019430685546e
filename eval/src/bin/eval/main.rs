//! Quality evaluation of fingerprint schemes and match rules on the evaluation data.
//!
//! ```text
//! cargo run --release -p tantivy-simhash-eval --bin eval -- ../shared/data            # all matchers and schemes
//! cargo run --release -p tantivy-simhash-eval --bin eval -- ../shared/data --schemes none --summary-json summary.json
//! cargo run --release -p tantivy-simhash-eval --bin eval -- ../shared/data --matchers none --full   # simhash curves
//! cargo run --release -p tantivy-simhash-eval --bin eval -- ../shared/data --schemes default,words --sample 300
//! cargo run --release -p tantivy-simhash-eval --bin eval -- ../shared/data --schemes default --lang en --list-random 3
//! ```
//!
//! **Matchers** (yes/no rules, side by side on the same pairs): the default [`MatchRule`] and
//! variants of it, today's simhash at k = 3, and the peers: the Python `simhash` package's
//! defaults, the Chinese jieba TF-IDF top-10 keyword simhash, and MinHash with 128 hash
//! functions over the truth's own shingles at estimated resemblance >= 0.8 and >= 0.5. For each:
//! recall per synthetic recipe, false positives on hard negatives (overall and per family),
//! natural precision (every matching pair of the natural corpus, from shared keys) and recall
//! at resemblance >= 0.8, cross-script recall (zh). `--summary-json FILE` writes the default
//! rule's figures per language.
//!
//! **Schemes** (simhash curves): recall at k = 0..=10 per synthetic recipe, false-positive
//! rates on hard negatives and random pairs, natural recall and precision (brute force over all
//! fingerprint pairs) and cross-script recall (zh).
//!
//! `--sample N` keeps N evenly spaced pairs per file and the first N*10 natural documents (a
//! smoke test for CI). `--list-random K` also lists the "random" pairs within K.

use rayon::prelude::*;
use serde::Deserialize;
use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::Instant;
use tantivy_simhash::{
    BlockLayout, Features, Fingerprint, HanSegmentation, MatchRule, MinHashConfig, RuleSpec,
    Scheme, Shingling, Signature, TermWeight, Tokenization,
};
use xxhash_rust::xxh3::xxh3_64;

const KMAX: usize = 10;
#[path = "../../support/data.rs"]
mod data;

mod corpus;
mod matchers;
mod peers;
mod schemes;
mod tables;

use corpus::*;
use matchers::*;
use peers::*;
use schemes::*;
use tables::*;

use data::{open_lines, read_jsonl, Doc, Res};

struct Args {
    dir: PathBuf,
    sample: usize,
    full: bool,
    list_random: Option<u32>,
    only: Option<Vec<String>>,
    only_matchers: Option<Vec<String>>,
    summary_json: Option<PathBuf>,
    langs: Vec<&'static str>,
}

/// The command line; `None` after printing the usage (`--help`).
fn parse_args() -> Res<Option<Args>> {
    let mut args = std::env::args().skip(1);
    let mut parsed = Args {
        dir: PathBuf::from("../shared/data"),
        sample: usize::MAX,
        full: false,
        list_random: None,
        only: None,
        only_matchers: None,
        summary_json: None,
        langs: vec!["en", "zh"],
    };
    let list = |v: String| -> Vec<String> { v.split(',').map(str::to_string).collect() };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--sample" => parsed.sample = args.next().ok_or("--sample needs a number")?.parse()?,
            "--full" => parsed.full = true,
            "--list-random" => {
                parsed.list_random = Some(args.next().ok_or("--list-random needs a k")?.parse()?)
            }
            "--schemes" => parsed.only = Some(list(args.next().ok_or("--schemes needs a list")?)),
            "--matchers" => {
                parsed.only_matchers = Some(list(args.next().ok_or("--matchers needs a list")?))
            }
            "--summary-json" => {
                parsed.summary_json = Some(PathBuf::from(
                    args.next().ok_or("--summary-json needs a file")?,
                ))
            }
            "--lang" => {
                parsed.langs = vec![if args.next().as_deref() == Some("zh") {
                    "zh"
                } else {
                    "en"
                }]
            }
            "-h" | "--help" => {
                println!(
                    "usage: eval [DATA_DIR] [--full] [--sample N] [--schemes a,b|none] [--matchers a,b|none] \
                     [--summary-json FILE] [--lang en|zh] [--list-random K]"
                );
                return Ok(None);
            }
            _ => parsed.dir = PathBuf::from(a),
        }
    }
    Ok(Some(parsed))
}

fn main() -> Res<()> {
    let Some(args) = parse_args()? else {
        return Ok(());
    };
    let data: Vec<Lang> = args
        .langs
        .iter()
        .map(|l| load(&args.dir, l, args.sample))
        .collect::<Res<_>>()?;
    check_py_simhash()?;
    for lang in &data {
        check_truth_shingles(lang)?;
    }
    let mut schemes = candidates();
    if let Some(only) = &args.only {
        schemes.retain(|(n, _)| only.iter().any(|o| o == n));
    }
    let mut all_matchers = matchers();
    if let Some(only) = &args.only_matchers {
        all_matchers.retain(|(n, _)| only.iter().any(|o| o == n));
    }
    let summary = matcher_table(&all_matchers, &data);
    if let Some(path) = &args.summary_json {
        write_summary(path, &all_matchers, summary)?;
    }
    if !schemes.is_empty() {
        scheme_tables(&schemes, &data, &args);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Matchers: yes/no rules (ours and the peers'), side by side on the same pairs.
// ---------------------------------------------------------------------------------------------
