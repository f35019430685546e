//! Mirror-site detection on the evaluation web (`mirrors.jsonl.gz`, `mirrors-truth.json`).
//!
//! ```text
//! cargo run --release -p tantivy-simhash-eval --bin mirrors_eval -- ../shared/data
//! cargo run --release -p tantivy-simhash-eval --bin mirrors_eval -- ../shared/data --sample 20   # 20 hosts, CI smoke
//! ```
//!
//! Indexes every page into a temporary tantivy index (host, title and text stored), runs
//! [`MirrorFinder::find_in_index`] with the default settings and scores the host pairs against
//! the truth: precision, recall, recall per kind (full, partial, mirror-of-mirror, aggregator,
//! sibling) and false positives per negative kind (template, syndication, translation). Next to
//! it: the naive whole-page fingerprint (no chrome removal, direct page pairs at k = 3, the
//! index's own fingerprints), ablations, the curve over the score threshold and over k.
//! `--sample N` keeps the first N hosts (by name) and scores only pairs among them. `--keep P SEED`
//! keeps each page with probability P (a thinner web, mirror pairs recomputed by the definition from
//! the counterpart groups), to test the rule near `S = 10`. `--k K` sets the default run's k;
//! `--no-sweeps` skips the variants and curves.

use rayon::prelude::*;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::path::PathBuf;
use std::time::Instant;
use tantivy::schema::{Schema, FAST, STORED, STRING, TEXT};
use tantivy::{doc, Index};
use tantivy_simhash::{HostPage, MirrorConfig, MirrorFinder, MirrorReport};
use tantivy_simhash::{NearDupConfig, NearDupIndex, Policy, Scheme};

#[path = "../../support/data.rs"]
mod data;

mod tables;

use tables::*;

use data::{read_jsonl, Res};

#[derive(Deserialize)]
struct Page {
    id: String,
    title: String,
    text: String,
    host: String,
}

#[derive(Deserialize)]
struct Truth {
    mirror_pairs: Vec<TruthPair>,
    not_mirrors: Vec<TruthNeg>,
    counterpart_groups: Vec<Vec<String>>,
}

#[derive(Deserialize)]
struct TruthPair {
    a: String,
    b: String,
    kind: String,
    shared_pages: u32,
}

#[derive(Deserialize)]
struct TruthNeg {
    a: String,
    b: String,
    why: String,
}

fn key(a: &str, b: &str) -> (String, String) {
    if a <= b {
        (a.to_string(), b.to_string())
    } else {
        (b.to_string(), a.to_string())
    }
}

struct Scorer {
    gold: HashMap<(String, String), String>,
    negatives: HashMap<(String, String), String>,
}

struct Score {
    predicted: usize,
    tp: usize,
    precision: f64,
    recall: f64,
    by_kind: BTreeMap<String, (usize, usize)>,
    fp_by_kind: BTreeMap<String, usize>,
}

impl Scorer {
    fn score(&self, report: &MirrorReport, threshold: f64) -> Score {
        let predicted: HashSet<(String, String)> = report
            .pairs
            .iter()
            .filter(|p| p.score >= threshold)
            .map(|p| key(&p.host_a, &p.host_b))
            .collect();
        let tp = predicted
            .iter()
            .filter(|k| self.gold.contains_key(*k))
            .count();
        let mut by_kind: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        for (k, kind) in &self.gold {
            let e = by_kind.entry(kind.clone()).or_default();
            e.1 += 1;
            if predicted.contains(k) {
                e.0 += 1;
            }
        }
        let mut fp_by_kind: BTreeMap<String, usize> = BTreeMap::new();
        for k in predicted.iter().filter(|k| !self.gold.contains_key(*k)) {
            let why = self
                .negatives
                .get(k)
                .cloned()
                .unwrap_or_else(|| "other".into());
            *fp_by_kind.entry(why).or_default() += 1;
        }
        Score {
            predicted: predicted.len(),
            tp,
            precision: if predicted.is_empty() {
                1.0
            } else {
                tp as f64 / predicted.len() as f64
            },
            recall: if self.gold.is_empty() {
                1.0
            } else {
                tp as f64 / self.gold.len() as f64
            },
            by_kind,
            fp_by_kind,
        }
    }
}

fn row(name: &str, s: &Score, secs: f64) -> String {
    let kinds: Vec<String> = s
        .by_kind
        .iter()
        .map(|(k, (hit, all))| format!("{k} {hit}/{all}"))
        .collect();
    let fps: Vec<String> = s
        .fp_by_kind
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    format!(
        "| {name} | {} | {} | {:.3} | {:.3} | {} | {} | {secs:.1} |",
        s.predicted,
        s.tp,
        s.precision,
        s.recall,
        kinds.join(", "),
        if fps.is_empty() {
            "none".to_string()
        } else {
            fps.join(", ")
        }
    )
}

struct Args {
    data: PathBuf,
    sample: Option<usize>,
    k: Option<u32>,
    sweeps: bool,
    keep: Option<(f64, u64)>,
}

fn parse_args() -> Res<Args> {
    let mut parsed = Args {
        data: PathBuf::from("../shared/data"),
        sample: None,
        k: None,
        sweeps: true,
        keep: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--sample" => {
                parsed.sample = Some(args.next().ok_or("--sample needs a number")?.parse()?)
            }
            "--no-sweeps" => parsed.sweeps = false,
            "--keep" => {
                let share: f64 = args.next().ok_or("--keep needs a share")?.parse()?;
                let seed: u64 = args.next().ok_or("--keep needs a seed")?.parse()?;
                parsed.keep = Some((share, seed));
            }
            "--k" => parsed.k = Some(args.next().ok_or("--k needs a number")?.parse()?),
            _ => parsed.data = PathBuf::from(a),
        }
    }
    Ok(parsed)
}

/// Reads the pages, keeps the first N hosts with `--sample`; returns the pages and the sorted
/// kept host names.
fn read_pages(data: &std::path::Path, sample: Option<usize>) -> Res<(Vec<Page>, Vec<String>)> {
    let mut pages: Vec<Page> = read_jsonl(&data.join("mirrors.jsonl.gz"), usize::MAX)?;
    let mut hosts: Vec<String> = pages.iter().map(|p| p.host.clone()).collect();
    hosts.sort();
    hosts.dedup();
    if let Some(n) = sample {
        hosts.truncate(n);
        let keep: HashSet<&String> = hosts.iter().collect();
        pages.retain(|p| keep.contains(&p.host));
    }
    Ok((pages, hosts))
}

/// A thinner web: keeps each page with probability `share`, and recomputes the mirror pairs
/// with the definition from the counterpart groups (S and host sizes both shrink).
fn thin_web(pages: &mut Vec<Page>, truth: &mut Truth, share: f64, seed: u64) {
    pages.retain(|p| {
        (xxhash_rust::xxh3::xxh3_64_with_seed(p.id.as_bytes(), seed) as f64)
            < share * u64::MAX as f64
    });
    let host_of: HashMap<&str, &str> = pages
        .iter()
        .map(|p| (p.id.as_str(), p.host.as_str()))
        .collect();
    let mut size: HashMap<&str, u32> = HashMap::new();
    for p in pages.iter() {
        *size.entry(p.host.as_str()).or_default() += 1;
    }
    let mut shared: HashMap<(String, String), u32> = HashMap::new();
    for group in &truth.counterpart_groups {
        let mut hs: Vec<&str> = group
            .iter()
            .filter_map(|id| host_of.get(id.as_str()).copied())
            .collect();
        hs.sort_unstable();
        hs.dedup();
        for i in 0..hs.len() {
            for j in i + 1..hs.len() {
                *shared.entry(key(hs[i], hs[j])).or_default() += 1;
            }
        }
    }
    let kinds: HashMap<(String, String), String> = truth
        .mirror_pairs
        .iter()
        .map(|p| (key(&p.a, &p.b), p.kind.clone()))
        .collect();
    truth.mirror_pairs = shared
        .into_iter()
        .filter(|((a, b), s)| {
            let min = size[a.as_str()].min(size[b.as_str()]);
            *s >= 10 || f64::from(*s) >= 0.2 * f64::from(min)
        })
        .map(|((a, b), s)| TruthPair {
            kind: kinds
                .get(&(a.clone(), b.clone()))
                .cloned()
                .unwrap_or_else(|| "new-by-rule".into()),
            a,
            b,
            shared_pages: s,
        })
        .collect();
    let mut near: Vec<u32> = truth.mirror_pairs.iter().map(|p| p.shared_pages).collect();
    near.sort_unstable();
    println!(
        "--keep {share} (seed {seed}): {} pages kept; mirror pairs by the definition: {}, of which S <= 15: {}",
        pages.len(),
        truth.mirror_pairs.len(),
        near.iter().filter(|&&s| s <= 15).count()
    );
}

/// The truth restricted to pairs of kept hosts: the scorer (gold kinds and negative kinds) and
/// the true S of each gold pair.
fn restrict_truth(truth: &Truth, hosts: &[String]) -> (Scorer, HashMap<(String, String), u32>) {
    let host_set: HashSet<&String> = hosts.iter().collect();
    let inside = |a: &String, b: &String| host_set.contains(a) && host_set.contains(b);
    let scorer = Scorer {
        gold: truth
            .mirror_pairs
            .iter()
            .filter(|p| inside(&p.a, &p.b))
            .map(|p| (key(&p.a, &p.b), p.kind.clone()))
            .collect(),
        negatives: truth
            .not_mirrors
            .iter()
            .filter(|p| inside(&p.a, &p.b))
            .map(|p| (key(&p.a, &p.b), p.why.clone()))
            .collect(),
    };
    let true_s: HashMap<(String, String), u32> = truth
        .mirror_pairs
        .iter()
        .filter(|p| inside(&p.a, &p.b))
        .map(|p| (key(&p.a, &p.b), p.shared_pages))
        .collect();
    (scorer, true_s)
}

/// Indexes the pages (host, title and text stored, so the finder can re-read them) into a
/// temporary directory, which the caller keeps alive as long as the index.
fn build_index(pages: &[Page]) -> Res<(tempfile::TempDir, NearDupIndex)> {
    let dir = tempfile::tempdir()?;
    let config = NearDupConfig::new("id", ["title", "text"]);
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING | FAST | STORED);
    let host = builder.add_text_field("host", STRING | STORED);
    let title = builder.add_text_field("title", TEXT | STORED);
    let text = builder.add_text_field("text", TEXT | STORED);
    config.add_fields(&mut builder);
    let index = NearDupIndex::create(Index::create_in_dir(dir.path(), builder.build())?, config)?;
    let mut writer = index.writer(200_000_000, Policy::Off)?;
    let docs = pages
        .iter()
        .map(|p| doc!(id => p.id.as_str(), host => p.host.as_str(), title => p.title.as_str(), text => p.text.as_str()))
        .collect();
    writer.add_documents(docs)?;
    writer.commit()?;
    Ok((dir, index))
}

/// The speed baseline: fingerprinting every page once (title + text); returns the count and
/// the seconds.
fn fingerprint_all(scheme: &Scheme, pages: &[Page]) -> (usize, f64) {
    let t1 = Instant::now();
    let fingerprints: Vec<u64> = pages
        .par_iter()
        .map_init(
            || scheme.fingerprinter(),
            |f, p| f.fingerprint(&format!("{}\n{}", p.title, p.text)).0,
        )
        .collect();
    (fingerprints.len(), t1.elapsed().as_secs_f64())
}

/// Runs the finder with `cfg` over the pages (not the index); the report and the seconds.
struct Runner {
    scheme: Scheme,
    host_pages: Vec<HostPage>,
}

impl Runner {
    fn new(scheme: Scheme, pages: &[Page]) -> Self {
        // Title + text, as the index fingerprints them.
        let host_pages = pages
            .iter()
            .map(|p| HostPage::new(&p.host, &p.id, format!("{}\n{}", p.title, p.text)))
            .collect();
        Runner { scheme, host_pages }
    }

    fn run(&self, cfg: MirrorConfig) -> Res<(MirrorReport, f64)> {
        let t0 = Instant::now();
        let r = MirrorFinder::new(self.scheme.clone(), cfg)?.find(self.host_pages.clone())?;
        Ok((r, t0.elapsed().as_secs_f64()))
    }
}

/// The named variants of the default, one table row each.
fn variant_rows(runner: &Runner, scorer: &Scorer) -> Res<Vec<String>> {
    let naive = MirrorConfig {
        max_distance: 3,
        chrome_min_pages: 0,
        transitive: false,
        ..MirrorConfig::default()
    };
    let variants: Vec<(&str, MirrorConfig)> = vec![
        ("naive baseline: whole page, k = 3, direct pairs", naive),
        (
            "whole page (no chrome removal), k = 8, counterpart groups",
            MirrorConfig {
                chrome_min_pages: 0,
                ..MirrorConfig::default()
            },
        ),
        (
            "chrome removed, k = 8, direct pairs",
            MirrorConfig {
                transitive: false,
                ..MirrorConfig::default()
            },
        ),
        (
            "chrome removed, k = 8 by simhash only (no resemblance branch), counterpart groups",
            MirrorConfig {
                min_resemblance: None,
                ..MirrorConfig::default()
            },
        ),
        (
            "chrome removed, k = 3, counterpart groups",
            MirrorConfig {
                max_distance: 3,
                ..MirrorConfig::default()
            },
        ),
    ];
    let mut rows = Vec::new();
    for (name, cfg) in variants {
        let (r, secs) = runner.run(cfg)?;
        rows.push(row(name, &scorer.score(&r, 1.0), secs));
    }
    Ok(rows)
}

/// The library's default on the index, timed next to fingerprinting every page once; returns
/// the report and its table row.
fn default_run(
    scheme: &Scheme,
    args: &Args,
    index: &NearDupIndex,
    pages: &[Page],
    scorer: &Scorer,
) -> Res<(MirrorReport, String)> {
    let t0 = Instant::now();
    let mut default = MirrorConfig::default();
    if let Some(k) = args.k {
        default.max_distance = k;
    }
    let finder = MirrorFinder::new(scheme.clone(), default.clone())?;
    let report = finder.find_in_index(index, "host")?;
    let secs = t0.elapsed().as_secs_f64();
    println!("default run: {:?}", report.stats);
    let (fingerprinted, fp_secs) = fingerprint_all(scheme, pages);
    println!(
        "speed: find_in_index {secs:.2}s ({:.0} pages/s); fingerprinting the {} pages once {fp_secs:.2}s; ratio {:.2}",
        pages.len() as f64 / secs,
        fingerprinted,
        secs / fp_secs
    );
    let row = row(
        &format!(
            "default: chrome removed, k = {}, counterpart groups (find_in_index)",
            default.max_distance
        ),
        &scorer.score(&report, 1.0),
        secs,
    );
    Ok((report, row))
}

fn main() -> Res<()> {
    let args = parse_args()?;

    let t0 = Instant::now();
    let (mut pages, hosts) = read_pages(&args.data, args.sample)?;
    let mut truth: Truth =
        serde_json::from_reader(File::open(args.data.join("mirrors-truth.json"))?)?;
    if let Some((share, seed)) = args.keep {
        thin_web(&mut pages, &mut truth, share, seed);
    }
    let (scorer, true_s) = restrict_truth(&truth, &hosts);
    println!(
        "{} pages, {} hosts, {} mirror pairs in the truth, read in {:.1}s",
        pages.len(),
        hosts.len(),
        scorer.gold.len(),
        t0.elapsed().as_secs_f64()
    );

    let t0 = Instant::now();
    let (_dir, index) = build_index(&pages)?;
    println!("indexed in {:.1}s", t0.elapsed().as_secs_f64());

    let header = "| method | predicted | TP | precision | recall | recall per kind | false positives | seconds |\n|---|---|---|---|---|---|---|---|";
    let mut rows = Vec::new();

    // The library's default, on the index.
    let scheme = Scheme::default();
    let (report, default_row) = default_run(&scheme, &args, &index, &pages, &scorer)?;
    rows.push(default_row);

    if args.sweeps {
        let runner = Runner::new(scheme, &pages);
        rows.extend(variant_rows(&runner, &scorer)?);
        print_table(header, &rows);
        print_threshold_curve(&scorer, &report);
        print_k_curves(&runner, &scorer, &true_s)?;
        print_chrome_curve(&runner, &scorer)?;
    } else {
        print_table(header, &rows);
    }

    print_copies_example(&report)?;
    print_estimate_quality(&report, &scorer, &true_s);
    print_misses_and_false_positives(&report, &scorer);
    Ok(())
}
