//! Checks `explain` against the match rule and the truth files, on a sample of every recipe of
//! the synthetic sets and every family of the hard-negative sets (`../shared/data`).
//!
//! For each sampled pair (title + "\n" + text on both sides, as the truth measures it) both
//! documents go into one index (default configuration, several segments), then:
//! - `NearDupIndex::explain_ids` must give the verdict the index's own lookup gives (`b` among
//!   the matches of `a`), and its branches must agree with the verdict;
//! - its word resemblance must equal the truth file's `jaccard` within 0.01.
//!
//! It also reports how far the rule's own shingles (chrome left out, the scheme's tokens) are
//! from the truth: they are what the sketch estimates, not the truth's shingles.
//!
//! ```text
//! cargo run --release -p tantivy-simhash-eval --bin explain_check -- ../shared/data --sample 50
//! ```
//! Exits with status 1 when any check fails.

#[path = "../support/data.rs"]
mod data;

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use tantivy::schema::{Schema, FAST, STORED, STRING, TEXT};
use tantivy::{doc, Index};
use tantivy_simhash::{NearDupConfig, NearDupIndex, Policy};

#[derive(Deserialize)]
struct Doc {
    id: String,
    #[serde(default)]
    title: String,
    text: String,
}

#[derive(Deserialize)]
struct Pair {
    recipe: String,
    a: Doc,
    b: Doc,
    jaccard: f64,
}

#[derive(Default)]
struct Tally {
    pairs: usize,
    matched: usize,
    verdict_disagrees: usize,
    branch_disagrees: usize,
    truth_off: usize,
    max_truth_diff: f64,
    rule_diff_sum: f64,
    rule_max_diff: f64,
}

fn main() -> data::Res<()> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().unwrap_or_else(|| "../shared/data".into()));
    let mut sample = 50usize;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--sample" => sample = args.next().ok_or("--sample N")?.parse()?,
            other => {
                return Err(
                    format!("unknown argument {other}; expected DATA_DIR [--sample N]").into(),
                )
            }
        }
    }
    let mut failed = false;
    for file in [
        "synthetic-en.jsonl.gz",
        "synthetic-zh.jsonl.gz",
        "hardneg-en.jsonl.gz",
        "hardneg-zh.jsonl.gz",
    ] {
        let all: Vec<Pair> = data::read_jsonl(&dir.join(file), usize::MAX)?;
        // Every recipe: the first `sample` pairs of each (the files are not sorted by recipe
        // within a length bucket, so these span the buckets).
        let mut per: BTreeMap<String, Vec<&Pair>> = BTreeMap::new();
        for p in &all {
            let v = per.entry(p.recipe.clone()).or_default();
            if v.len() < sample {
                v.push(p);
            }
        }
        let config = NearDupConfig::new("id", ["title", "body"]);
        let mut builder = Schema::builder();
        let id = builder.add_text_field("id", STRING | FAST | STORED);
        let title = builder.add_text_field("title", TEXT | STORED);
        let body = builder.add_text_field("body", TEXT | STORED);
        config.add_fields(&mut builder);
        let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config)?;
        let mut w = index.writer(100_000_000, Policy::Off)?;
        for (n, p) in per.values().flatten().enumerate() {
            for d in [&p.a, &p.b] {
                w.add_document(
                    doc!(id => d.id.clone(), title => d.title.clone(), body => d.text.clone()),
                )?;
            }
            if n % 100 == 99 {
                w.commit()?;
            }
        }
        w.commit()?;
        let searcher = index.lookups()?;
        println!("{file}");
        println!(
            "  {:<16} {:>5} {:>7} {:>9} {:>9} {:>11} {:>10} {:>13}",
            "recipe",
            "pairs",
            "matched",
            "verdict≠",
            "branch≠",
            "|Δtruth|max",
            "truth>0.01",
            "rule Δ mean/max"
        );
        for (recipe, pairs) in &per {
            let mut t = Tally::default();
            for p in pairs {
                let e = index.explain_ids(&searcher, &p.a.id, &p.b.id)?;
                let found = searcher.lookup_id(&p.a.id)?.iter().any(|m| m.id == p.b.id);
                t.pairs += 1;
                t.matched += usize::from(e.verdict.is_some());
                t.verdict_disagrees += usize::from(e.verdict.is_some() != found);
                let by_branches = e.simhash.matched || e.minhash.matched;
                t.branch_disagrees += usize::from(by_branches != e.verdict.is_some());
                let d = (e.words.resemblance - p.jaccard).abs();
                t.max_truth_diff = t.max_truth_diff.max(d);
                t.truth_off += usize::from(d > 0.01);
                let r = (e.shingles.resemblance - p.jaccard).abs();
                t.rule_diff_sum += r;
                t.rule_max_diff = t.rule_max_diff.max(r);
                if d > 0.01 {
                    eprintln!(
                        "  {} / {}: word resemblance {:.4}, truth {:.4}",
                        p.a.id, p.b.id, e.words.resemblance, p.jaccard
                    );
                }
            }
            failed |= t.verdict_disagrees > 0 || t.branch_disagrees > 0 || t.truth_off > 0;
            println!(
                "  {:<16} {:>5} {:>7} {:>9} {:>9} {:>11.4} {:>10} {:>7.3}/{:.3}",
                recipe,
                t.pairs,
                t.matched,
                t.verdict_disagrees,
                t.branch_disagrees,
                t.max_truth_diff,
                t.truth_off,
                t.rule_diff_sum / t.pairs.max(1) as f64,
                t.rule_max_diff
            );
        }
    }
    if failed {
        eprintln!("explain_check: FAILED (a verdict, a branch or a resemblance disagrees)");
        std::process::exit(1);
    }
    println!(
        "explain_check: every verdict and branch agrees; word resemblance within 0.01 of the truth"
    );
    Ok(())
}
