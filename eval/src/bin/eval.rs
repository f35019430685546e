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
#[path = "../support/data.rs"]
mod data;

use data::{open_lines, read_jsonl, Res};

#[derive(Deserialize)]
struct Doc {
    id: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    source: String,
}

impl Doc {
    fn full(&self) -> String {
        format!("{}\n{}", self.title, self.text)
    }
}

#[derive(Deserialize)]
struct Pair {
    recipe: String,
    a: Doc,
    b: Doc,
    #[serde(default)]
    src: Vec<String>,
    #[serde(default)]
    bucket: String,
    #[serde(default)]
    jaccard: f64,
}

struct Natural {
    docs: Vec<Doc>,
    /// (i, j) with i < j -> resemblance.
    truth: HashMap<(u32, u32), f32>,
}

struct Cross {
    cn: Vec<String>,
    tw: Vec<String>,
    t2s: Vec<f32>,
}

struct Lang {
    name: &'static str,
    synthetic: Vec<Pair>,
    hardneg: Vec<Pair>,
    natural: Natural,
    cross: Option<Cross>,
    /// Sources dropped in the "without" precision figures.
    excluded_sources: &'static [&'static str],
}

fn read_natural(dir: &Path, lang: &str, limit: usize) -> Res<Natural> {
    let docs: Vec<Doc> = read_jsonl(&dir.join(format!("natural-{lang}.jsonl.gz")), limit)?;
    let index: HashMap<&str, u32> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| (d.id.as_str(), i as u32))
        .collect();
    let mut truth = HashMap::new();
    for line in open_lines(&dir.join(format!("natural-{lang}-pairs.tsv")))?
        .lines()
        .skip(1)
    {
        let line = line?;
        let mut f = line.split('\t');
        let (Some(a), Some(b), Some(j)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if let (Some(&x), Some(&y)) = (index.get(a), index.get(b)) {
            truth.insert((x.min(y), x.max(y)), j.parse::<f32>()?);
        }
    }
    Ok(Natural { docs, truth })
}

fn read_cross(dir: &Path, limit: usize) -> Res<Cross> {
    let docs: Vec<Doc> = read_jsonl(&dir.join("crossscript-zh.jsonl.gz"), usize::MAX)?;
    let by_id: HashMap<String, String> = docs.iter().map(|d| (d.id.clone(), d.full())).collect();
    let mut c = Cross {
        cn: vec![],
        tw: vec![],
        t2s: vec![],
    };
    for line in open_lines(&dir.join("crossscript-pairs-zh.tsv"))?
        .lines()
        .skip(1)
    {
        let line = line?;
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 3 || c.cn.len() >= limit {
            continue;
        }
        if let (Some(a), Some(b)) = (by_id.get(f[0]), by_id.get(f[1])) {
            c.cn.push(a.clone());
            c.tw.push(b.clone());
            c.t2s.push(f[2].parse()?);
        }
    }
    Ok(c)
}

fn load(dir: &Path, lang: &'static str, sample: usize) -> Res<Lang> {
    let t = Instant::now();
    // Pairs are grouped by recipe in the files: a sample takes evenly spaced pairs so every
    // recipe and length bucket is in it.
    let spread = |v: Vec<Pair>| -> Vec<Pair> {
        if v.len() <= sample {
            return v;
        }
        let n = v.len();
        v.into_iter()
            .enumerate()
            .filter(|(i, _)| (i * sample) % n < sample)
            .map(|(_, p)| p)
            .collect()
    };
    let synthetic = spread(read_jsonl(
        &dir.join(format!("synthetic-{lang}.jsonl.gz")),
        usize::MAX,
    )?);
    let hardneg = spread(read_jsonl(
        &dir.join(format!("hardneg-{lang}.jsonl.gz")),
        usize::MAX,
    )?);
    let natural = read_natural(dir, lang, sample.saturating_mul(10))?;
    let cross = if lang == "zh" {
        Some(read_cross(dir, sample)?)
    } else {
        None
    };
    eprintln!("loaded {lang} in {:.1?}", t.elapsed());
    Ok(Lang {
        name: lang,
        synthetic,
        hardneg,
        natural,
        cross,
        excluded_sources: if lang == "en" {
            &["licence", "gcloud"]
        } else {
            &["tldr-pages"]
        },
    })
}

/// What is evaluated: one of our schemes, or a peer's recipe reimplemented here.
enum Candidate {
    Scheme(Scheme),
    /// The popular Python `simhash` package (2.x) with its defaults: lower-case, keep the runs
    /// of `[\w\u4e00-\u9fcc]+` concatenated, character 4-grams weighted by their count, md5
    /// (its low 64 bits), 64 bits. Python's `\w` is approximated by `char::is_alphanumeric`
    /// and `_`.
    PySimhash,
}

impl Candidate {
    fn id(&self) -> String {
        match self {
            Candidate::Scheme(s) => s.id().to_string(),
            Candidate::PySimhash => "peer: python simhash 2.x defaults (char 4-grams, md5)".into(),
        }
    }
}

fn fingerprints(candidate: &Candidate, texts: &[String]) -> Vec<Fingerprint> {
    match candidate {
        Candidate::Scheme(scheme) => texts
            .par_iter()
            .map_init(|| scheme.fingerprinter(), |f, t| f.fingerprint(t))
            .collect(),
        Candidate::PySimhash => texts.par_iter().map(|t| py_simhash(t)).collect(),
    }
}

/// Fingerprints printed by the Python package itself (`simhash` 2.1.2,
/// `'%016x' % Simhash(text).value`): the reimplementation must give the same.
const PY_SIMHASH_GOLDEN: [(&str, u64); 4] = [
    (
        "The quick brown fox jumps over the lazy dog, twice!",
        0x2d0b_1695_908e_888b,
    ),
    (
        "软件开发的过程包括需求分析、设计、编码、测试和维护。",
        0xd566_4581_f875_3588,
    ),
    ("ab", 0x2f40_dc2b_92f0_eba0),
    ("Hello_World 123 über", 0x9071_95d6_ab95_a986),
];

fn py_simhash(text: &str) -> Fingerprint {
    use md5::{Digest, Md5};
    let content: Vec<char> = text
        .to_lowercase()
        .chars()
        .filter(|&c| c.is_alphanumeric() || c == '_' || ('\u{4e00}'..='\u{9fcc}').contains(&c))
        .collect();
    let mut counts: HashMap<String, i64> = HashMap::new();
    if content.len() < 4 {
        counts.insert(content.iter().collect(), 1);
    } else {
        for w in content.windows(4) {
            *counts.entry(w.iter().collect()).or_insert(0) += 1;
        }
    }
    let mut v = [0i64; 64];
    for (feature, w) in counts {
        let digest = Md5::digest(feature.as_bytes());
        let mut low = [0u8; 8];
        low.copy_from_slice(&digest[8..16]);
        let h = u64::from_be_bytes(low);
        for (i, x) in v.iter_mut().enumerate() {
            *x += if (h >> i) & 1 == 1 { w } else { -w };
        }
    }
    let mut fp = 0u64;
    for (i, &x) in v.iter().enumerate() {
        if x > 0 {
            fp |= 1 << i;
        }
    }
    Fingerprint(fp)
}

/// Fraction of distances <= k, for k = 0..=KMAX.
fn cumulative(distances: &[u32]) -> [f64; KMAX + 1] {
    let mut out = [0.0; KMAX + 1];
    if distances.is_empty() {
        return out;
    }
    for (k, o) in out.iter_mut().enumerate() {
        *o = distances.iter().filter(|&&d| d as usize <= k).count() as f64 / distances.len() as f64;
    }
    out
}

struct Report {
    recall: Rows,
    hardneg: Rows,
    random: (u64, [u64; KMAX + 1]),
    natural: Rows,
    precision: PrecisionRows,
    natural_random: (u64, [u64; KMAX + 1]),
    cross: Rows,
    seconds: f64,
    mbytes: f64,
}

fn by_group<'a>(
    pairs: &'a [Pair],
    fa: &[Fingerprint],
    fb: &[Fingerprint],
    key: impl Fn(&'a Pair) -> &'a str,
) -> Vec<(String, usize, [f64; KMAX + 1])> {
    let mut groups: Vec<&str> = Vec::new();
    for p in pairs {
        if !groups.contains(&key(p)) {
            groups.push(key(p));
        }
    }
    let mut out: Vec<_> = groups
        .iter()
        .map(|g| {
            let d: Vec<u32> = pairs
                .iter()
                .enumerate()
                .filter(|(_, p)| key(p) == *g)
                .map(|(i, _)| fa[i].distance(fb[i]))
                .collect();
            (g.to_string(), d.len(), cumulative(&d))
        })
        .collect();
    let all: Vec<u32> = (0..pairs.len()).map(|i| fa[i].distance(fb[i])).collect();
    out.push(("all".to_string(), all.len(), cumulative(&all)));
    out
}

/// Counts all pairs i < j of `fps` at distance <= KMAX, excluding pairs `skip` says to skip.
fn random_pairs(
    fps: &[Fingerprint],
    skip: impl Fn(usize, usize) -> bool + Sync,
) -> (u64, [u64; KMAX + 1]) {
    let n = fps.len();
    let (total, hist) = (0..n)
        .into_par_iter()
        .map(|i| {
            let mut h = [0u64; KMAX + 1];
            let mut t = 0u64;
            for j in i + 1..n {
                if skip(i, j) {
                    continue;
                }
                t += 1;
                let d = fps[i].distance(fps[j]) as usize;
                if d <= KMAX {
                    h[d] += 1;
                }
            }
            (t, h)
        })
        .reduce(
            || (0, [0; KMAX + 1]),
            |(t1, mut h1), (t2, h2)| {
                for k in 0..=KMAX {
                    h1[k] += h2[k];
                }
                (t1 + t2, h1)
            },
        );
    let mut cum = [0u64; KMAX + 1];
    let mut acc = 0;
    for k in 0..=KMAX {
        acc += hist[k];
        cum[k] = acc;
    }
    (total, cum)
}

/// Rows of a table: a label, the number of pairs, the share within each k.
type Rows = Vec<(String, usize, [f64; KMAX + 1])>;
/// Rows of the precision table: a label, the pairs within each k, the false positives among them.
type PrecisionRows = Vec<(String, [u64; KMAX + 1], [u64; KMAX + 1])>;

/// Recall on the synthetic pairs: per recipe, then per length bucket (without the heavy and
/// script recipes).
fn synthetic_recall(lang: &Lang, fsa: &[Fingerprint], fsb: &[Fingerprint]) -> Rows {
    let mut recall = by_group(&lang.synthetic, fsa, fsb, |p| p.recipe.as_str());
    for bucket in ["20-50", "50-200", "200-1000", "1000+"] {
        let d: Vec<u32> = lang
            .synthetic
            .iter()
            .enumerate()
            .filter(|(_, p)| p.bucket == bucket && !matches!(p.recipe.as_str(), "heavy" | "script"))
            .map(|(i, _)| fsa[i].distance(fsb[i]))
            .collect();
        recall.push((
            format!("len {bucket} (no heavy/script)"),
            d.len(),
            cumulative(&d),
        ));
    }
    recall
}

/// What the "random" pairs within k are: the recipe (or hard-negative kind), title and source
/// ids of both documents.
fn list_random_pairs(lang: &Lang, fr: &[Fingerprint], srcs: &[HashSet<&str>], k: u32) {
    let pairs: Vec<&Pair> = lang.synthetic.iter().chain(&lang.hardneg).collect();
    let describe = |p: &Pair| format!("{} {:?} {:?}", p.recipe, p.a.title, p.src);
    for i in 0..fr.len() {
        for j in i + 1..fr.len() {
            let d = fr[i].distance(fr[j]);
            if d <= k && srcs[i].is_disjoint(&srcs[j]) {
                println!(
                    "random pair d={d} | {} | {}",
                    describe(pairs[i]),
                    describe(pairs[j])
                );
            }
        }
    }
}

/// Recall on the natural corpus's true pairs, by resemblance floor, with and without the
/// excluded sources.
fn natural_recall(nat: &Natural, fnat: &[Fingerprint], excluded: &[bool]) -> Rows {
    let mut natural = Vec::new();
    for (label, lo, without) in [
        ("J>=0.8", 0.8f32, false),
        ("J>=0.9", 0.9, false),
        ("J>=0.8 without excluded", 0.8, true),
        ("J>=0.9 without excluded", 0.9, true),
    ] {
        let d: Vec<u32> = nat
            .truth
            .iter()
            .filter(|(&(a, b), &j)| {
                j >= lo && !(without && (excluded[a as usize] || excluded[b as usize]))
            })
            .map(|(&(a, b), _)| fnat[a as usize].distance(fnat[b as usize]))
            .collect();
        natural.push((label.to_string(), d.len(), cumulative(&d)));
    }
    natural
}

/// Precision on the natural corpus: every pair within KMAX, brute force, with and without the
/// excluded sources; and the (pairs not in the truth, false positives per k) of all sources.
fn natural_precision(
    nat: &Natural,
    fnat: &[Fingerprint],
    excluded: &[bool],
) -> (PrecisionRows, (u64, [u64; KMAX + 1])) {
    let n = fnat.len();
    let found: Vec<(u32, u32, u32)> = (0..n)
        .into_par_iter()
        .flat_map_iter(|i| {
            (i + 1..n).filter_map(move |j| {
                let d = fnat[i].distance(fnat[j]);
                (d as usize <= KMAX).then_some((i as u32, j as u32, d))
            })
        })
        .collect();
    let mut precision = Vec::new();
    for (label, without) in [("all", false), ("without excluded", true)] {
        let mut within = [0u64; KMAX + 1];
        let mut fp = [0u64; KMAX + 1];
        for &(a, b, d) in &found {
            if without && (excluded[a as usize] || excluded[b as usize]) {
                continue;
            }
            let is_fp = !nat.truth.contains_key(&(a, b));
            for k in d as usize..=KMAX {
                within[k] += 1;
                if is_fp {
                    fp[k] += 1;
                }
            }
        }
        precision.push((label.to_string(), within, fp));
    }
    let total_pairs = (n as u64) * (n as u64).saturating_sub(1) / 2 - nat.truth.len() as u64;
    let mut nat_fp = [0u64; KMAX + 1];
    if let Some((_, _, fpk)) = precision.first() {
        nat_fp = *fpk;
    }
    (precision, (total_pairs, nat_fp))
}

/// Recall across scripts (simplified and traditional Chinese), by t2s resemblance floor.
fn cross_script_recall(scheme: &Candidate, c: &Cross) -> Rows {
    let (fc, ft) = (fingerprints(scheme, &c.cn), fingerprints(scheme, &c.tw));
    let mut cross = Vec::new();
    for (label, lo) in [
        ("t2s J>=0.5", 0.5f32),
        ("t2s J>=0.8", 0.8),
        ("all pairs", -1.0),
    ] {
        let d: Vec<u32> = (0..fc.len())
            .filter(|&i| c.t2s[i] >= lo)
            .map(|i| fc[i].distance(ft[i]))
            .collect();
        cross.push((label.to_string(), d.len(), cumulative(&d)));
    }
    cross
}

fn evaluate(scheme: &Candidate, lang: &Lang, list_random: Option<u32>) -> Report {
    let t = Instant::now();
    let mut bytes = 0usize;
    let mut texts = |pairs: &[Pair]| -> (Vec<String>, Vec<String>) {
        let a: Vec<String> = pairs.iter().map(|p| p.a.full()).collect();
        let b: Vec<String> = pairs.iter().map(|p| p.b.full()).collect();
        bytes += a.iter().chain(&b).map(String::len).sum::<usize>();
        (a, b)
    };
    let (sa, sb) = texts(&lang.synthetic);
    let (ha, hb) = texts(&lang.hardneg);
    let (fsa, fsb) = (fingerprints(scheme, &sa), fingerprints(scheme, &sb));
    let (fha, fhb) = (fingerprints(scheme, &ha), fingerprints(scheme, &hb));
    let recall = synthetic_recall(lang, &fsa, &fsb);
    let hardneg = by_group(&lang.hardneg, &fha, &fhb, |p| p.recipe.as_str());

    // Random pairs: the `a` documents of all synthetic and hard-negative pairs, skipping pairs
    // that share a source document.
    let srcs: Vec<HashSet<&str>> = lang
        .synthetic
        .iter()
        .chain(&lang.hardneg)
        .map(|p| p.src.iter().map(String::as_str).collect())
        .collect();
    let fr: Vec<Fingerprint> = fsa.iter().chain(&fha).copied().collect();
    let random = random_pairs(&fr, |i, j| !srcs[i].is_disjoint(&srcs[j]));
    if let Some(k) = list_random {
        list_random_pairs(lang, &fr, &srcs, k);
    }

    // Natural corpus.
    let nat = &lang.natural;
    let ntexts: Vec<String> = nat.docs.iter().map(Doc::full).collect();
    bytes += ntexts.iter().map(String::len).sum::<usize>();
    let fnat = fingerprints(scheme, &ntexts);
    let excluded: Vec<bool> = nat
        .docs
        .iter()
        .map(|d| lang.excluded_sources.contains(&d.source.as_str()))
        .collect();
    let natural = natural_recall(nat, &fnat, &excluded);
    let (precision, natural_random) = natural_precision(nat, &fnat, &excluded);

    let mut cross = Vec::new();
    if let Some(c) = &lang.cross {
        bytes += c.cn.iter().chain(&c.tw).map(String::len).sum::<usize>();
        cross = cross_script_recall(scheme, c);
    }
    Report {
        recall,
        hardneg,
        random,
        natural,
        precision,
        natural_random,
        cross,
        seconds: t.elapsed().as_secs_f64(),
        mbytes: bytes as f64 / 1e6,
    }
}

fn header(first: &str) {
    print!("| {first} | n |");
    for k in 0..=KMAX {
        print!(" k={k} |");
    }
    println!();
    print!("|---|---|");
    for _ in 0..=KMAX {
        print!("---|");
    }
    println!();
}

fn rows(rows: &[(String, usize, [f64; KMAX + 1])], percent: bool) {
    for (label, n, v) in rows {
        print!("| {label} | {n} |");
        for x in v {
            if percent {
                print!(" {:.1} |", 100.0 * x);
            } else {
                print!(" {:.3} |", x);
            }
        }
        println!();
    }
}

/// A row of false positives per million pairs at each k, after the number of pairs.
fn per_million_row(label: &str, (pairs, fp): (u64, [u64; KMAX + 1])) {
    print!("| {label} (per million) | {pairs} |");
    for c in fp {
        print!(" {:.2} |", 1e6 * c as f64 / pairs.max(1) as f64);
    }
    println!();
}

/// Per precision group: the precision at each k and the pairs within k.
fn precision_rows(precision: &PrecisionRows) {
    for (label, within, fp) in precision {
        print!("| {label}: precision | {} |", within[KMAX]);
        for k in 0..=KMAX {
            let p = if within[k] == 0 {
                1.0
            } else {
                1.0 - fp[k] as f64 / within[k] as f64
            };
            print!(" {:.3} |", p);
        }
        println!();
        print!("| {label}: pairs within k | |");
        for w in within {
            print!(" {w} |");
        }
        println!();
    }
}

fn full_tables(name: &str, lang: &Lang, r: &Report) {
    println!(
        "\n### {name}, {}: synthetic recall (fraction of pairs within k)\n",
        lang.name
    );
    header("recipe");
    rows(&r.recall, false);
    println!(
        "\n### {name}, {}: false-positive rate (%) on hard negatives and random pairs\n",
        lang.name
    );
    header("kind");
    rows(&r.hardneg, true);
    per_million_row("random pairs", r.random);
    per_million_row("natural non-pairs", r.natural_random);
    println!(
        "\n### {name}, {}: natural corpus recall (excluded = {:?})\n",
        lang.name, lang.excluded_sources
    );
    header("truth pairs");
    rows(&r.natural, false);
    println!(
        "\n### {name}, {}: natural corpus precision (pairs within k whose resemblance >= 0.5)\n",
        lang.name
    );
    header("pairs");
    precision_rows(&r.precision);
    if !r.cross.is_empty() {
        println!(
            "\n### {name}, {}: cross-script recall (zh-CN vs zh-TW pages)\n",
            lang.name
        );
        header("pairs");
        rows(&r.cross, false);
    }
}

const SUMMARY_K: [usize; 4] = [3, 4, 5, 6];

fn summary_line(name: &str, lang: &Lang, r: &Report) {
    let get = |rows: &[(String, usize, [f64; KMAX + 1])], label: &str, k: usize| {
        rows.iter()
            .find(|(l, _, _)| l == label)
            .map(|(_, _, v)| v[k])
            .unwrap_or(f64::NAN)
    };
    for k in SUMMARY_K {
        let prec = r
            .precision
            .iter()
            .map(|(_, within, fp)| {
                if within[k] == 0 {
                    1.0
                } else {
                    1.0 - fp[k] as f64 / within[k] as f64
                }
            })
            .collect::<Vec<_>>();
        print!(
            "| {name} | {} | {k} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.3} | {:.2} | {:.2} | {:.2} | {:.3} / {:.3} |",
            lang.name,
            get(&r.recall, "exact-format", k),
            get(&r.recall, "light", k),
            get(&r.recall, "boilerplate", k),
            get(&r.recall, "reorder", k),
            get(&r.recall, "medium", k),
            get(&r.recall, "truncate", k),
            get(&r.recall, "append", k),
            get(&r.recall, "heavy", k),
            100.0 * get(&r.hardneg, "all", k),
            1e6 * r.random.1[k] as f64 / r.random.0.max(1) as f64,
            get(&r.natural, "J>=0.8", k),
            get(&r.natural, "J>=0.8 without excluded", k),
            prec[0],
            prec[1],
        );
        if r.cross.is_empty() {
            println!(" - |");
        } else {
            println!(" {:.2} |", get(&r.cross, "t2s J>=0.5", k));
        }
    }
}

fn candidates() -> Vec<(&'static str, Candidate)> {
    let b = Scheme::builder;
    let mk = |r: tantivy_simhash::Result<Scheme>| match r {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bad candidate: {e}");
            std::process::exit(2)
        }
    };
    let ours = vec![
        ("default", Scheme::default()),
        (
            "words-binary",
            mk(b()
                .features(Features::words())
                .term_weight(TermWeight::Binary)
                .build()),
        ),
        (
            "words+sh2",
            mk(b().features(Features::words_and_shingles(2, 1.0)).build()),
        ),
        (
            "words+sh2x0.5",
            mk(b().features(Features::words_and_shingles(2, 0.5)).build()),
        ),
        (
            "words+sh3",
            mk(b().features(Features::words_and_shingles(3, 1.0)).build()),
        ),
        (
            "sh2",
            mk(b()
                .features(Features {
                    words: 0.0,
                    ..Features::words_and_shingles(2, 1.0)
                })
                .build()),
        ),
        (
            "sh3",
            mk(b()
                .features(Features {
                    words: 0.0,
                    ..Features::words_and_shingles(3, 1.0)
                })
                .build()),
        ),
        (
            "hanchars+sh2",
            mk(b()
                .tokenization(Tokenization::Builtin {
                    han: HanSegmentation::Chars,
                })
                .features(Features::words_and_shingles(2, 1.0))
                .build()),
        ),
        ("char4", mk(b().features(Features::char_ngrams(4)).build())),
        (
            "words-stop0.2",
            mk(b().features(Features::words()).stopword_weight(0.2).build()),
        ),
        ("words-line4", mk(b().short_line(4).build())),
        ("words-line8", mk(b().short_line(8).build())),
        ("words-line12", mk(b().short_line(12).build())),
        (
            "words+sh2x0.5-line8",
            mk(b()
                .features(Features::words_and_shingles(2, 0.5))
                .short_line(8)
                .build()),
        ),
    ];
    let mut all: Vec<(&'static str, Candidate)> = ours
        .into_iter()
        .map(|(n, s)| (n, Candidate::Scheme(s)))
        .collect();
    all.push(("peer-py-simhash", Candidate::PySimhash));
    all
}

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

/// The Python simhash reimplementation must give the package's fingerprints.
fn check_py_simhash() -> Res<()> {
    for (text, want) in PY_SIMHASH_GOLDEN {
        let got = py_simhash(text).0;
        if got != want {
            return Err(format!(
                "the Python simhash reimplementation gives {got:016x} for {text:?}, the package \
                 {want:016x}"
            )
            .into());
        }
    }
    Ok(())
}

/// The matchers' table, one line per matcher and language; returns the default rule's
/// summary per language.
fn matcher_table(
    all_matchers: &[(String, AnyMatcher)],
    data: &[Lang],
) -> serde_json::Map<String, serde_json::Value> {
    if !all_matchers.is_empty() {
        println!("## Matchers side by side (recall as a fraction; hard-negative FP in %; natural precision all / without excluded)\n");
        println!("| matcher | lang | exact-format | light | boilerplate | reorder | medium | truncate | append | heavy | hard-neg FP % | worst family FP % | natural precision | natural J>=0.8 recall | cross-script t2s>=0.5 | bytes/doc | keys/doc |");
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    }
    let mut summary = serde_json::Map::new();
    for (name, m) in all_matchers {
        for lang in data {
            let r = run_matcher(m, lang);
            eprintln!(
                "{name} {}: {:.1} s, hottest natural key {} docs",
                lang.name, r.seconds, r.natural_hottest_key
            );
            matcher_line(name, lang, &r);
            if name == DEFAULT_RULE {
                summary.insert(lang.name.to_string(), summary_value(&r));
            }
        }
    }
    summary
}

/// Writes the default rule's summary (with the rule and its id) to `path`.
fn write_summary(
    path: &Path,
    all_matchers: &[(String, AnyMatcher)],
    mut summary: serde_json::Map<String, serde_json::Value>,
) -> Res<()> {
    if let Some((_, AnyMatcher::Rule(m))) = all_matchers.iter().find(|(n, _)| n == DEFAULT_RULE) {
        summary.insert("rule".into(), serde_json::Value::String(m.rule.to_string()));
        summary.insert("rule_id".into(), serde_json::Value::String(m.rule.id()));
    }
    if summary.is_empty() {
        return Err(format!("--summary-json: the default rule `{DEFAULT_RULE}` was not evaluated; keep it in --matchers").into());
    }
    std::fs::write(path, serde_json::to_string_pretty(&summary)?)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(())
}

/// The schemes' summary table (and with `--full` the full tables), then the schemes' ids.
fn scheme_tables(schemes: &[(&str, Candidate)], data: &[Lang], args: &Args) {
    println!();
    println!("## Summary (recall as a fraction; hard-negative FP in %; random FP per million pairs; natural precision all / without excluded)\n");
    println!("| scheme | lang | k | exact-format | light | boilerplate | reorder | medium | truncate | append | heavy | hard-neg FP % | random FP/1e6 | natural J>=0.8 | natural J>=0.8 w/o excl | natural precision | cross-script t2s>=0.5 |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut reports = Vec::new();
    for (name, scheme) in schemes {
        for lang in data {
            let r = evaluate(scheme, lang, args.list_random);
            eprintln!(
                "{name} {}: {:.1} MB in {:.1} s ({})",
                lang.name,
                r.mbytes,
                r.seconds,
                scheme.id()
            );
            summary_line(name, lang, &r);
            reports.push((name, lang, r));
        }
    }
    if args.full {
        for (name, lang, r) in &reports {
            if name.starts_with("default") || args.only.is_some() {
                full_tables(name, lang, r);
            }
        }
    }
    println!("\nScheme ids:\n");
    for (name, scheme) in schemes {
        println!("- {name}: `{}`", scheme.id());
    }
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

/// A yes/no near-duplicate rule with the keys that generate its candidates.
trait Matcher: Sync {
    type Sig: Send + Sync;
    fn sign_all(&self, texts: &[String]) -> Vec<Self::Sig>;
    /// Candidate keys (a pair that matches should share one; peers may miss a few).
    fn keys(&self, sig: &Self::Sig, out: &mut Vec<u64>);
    fn matches(&self, a: &Self::Sig, b: &Self::Sig) -> bool;
    /// Bytes per document of what is stored to verify a candidate.
    fn bytes(&self) -> usize;
}

/// Our rule.
struct RuleMatcher {
    scheme: Scheme,
    rule: MatchRule,
}

impl Matcher for RuleMatcher {
    type Sig = Signature;
    fn sign_all(&self, texts: &[String]) -> Vec<Signature> {
        texts
            .par_iter()
            .map_init(|| self.rule.signer(&self.scheme), |s, t| s.sign(t))
            .collect()
    }
    fn keys(&self, sig: &Signature, out: &mut Vec<u64>) {
        self.rule.keys_into(sig, out);
    }
    fn matches(&self, a: &Signature, b: &Signature) -> bool {
        self.rule.matches(a, b).is_some()
    }
    fn bytes(&self) -> usize {
        8 + self.rule.sketch_bytes()
    }
}

/// A 64-bit simhash (one of our schemes or a peer's) within `k`, keyed by the layout for `k`.
struct SimhashMatcher {
    candidate: Candidate,
    layout: BlockLayout,
}

impl Matcher for SimhashMatcher {
    type Sig = Fingerprint;
    fn sign_all(&self, texts: &[String]) -> Vec<Fingerprint> {
        fingerprints(&self.candidate, texts)
    }
    fn keys(&self, sig: &Fingerprint, out: &mut Vec<u64>) {
        self.layout.keys_into(*sig, out);
    }
    fn matches(&self, a: &Fingerprint, b: &Fingerprint) -> bool {
        a.is_within(*b, self.layout.max_distance())
    }
    fn bytes(&self) -> usize {
        8
    }
}

/// The truth's own resemblance (`tools/shingles.py`): NFKC, case folding, every Han ideograph a
/// token, every other run of word characters a token, 3-shingles (fewer tokens: one shingle).
/// Han ideographs (the CJK unified blocks and extensions, compatibility ideographs): the truth's
/// own tokenisation, independent of the crate's.
fn is_han(c: char) -> bool {
    matches!(c as u32,
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2A6DF
        | 0x2A700..=0x2EBEF | 0x2F800..=0x2FA1F | 0x30000..=0x3134F)
}

fn truth_shingles(text: &str) -> HashSet<u64> {
    use unicode_normalization::UnicodeNormalization;
    let norm: String = text.nfkc().collect();
    let norm = caseless::default_case_fold_str(&norm);
    let mut tokens: Vec<String> = Vec::new();
    let mut cur = String::new();
    for c in norm.chars() {
        if is_han(c) {
            if !cur.is_empty() {
                tokens.push(std::mem::take(&mut cur));
            }
            tokens.push(c.to_string());
        } else if c.is_alphanumeric() || c == '_' {
            cur.push(c);
        } else if !cur.is_empty() {
            tokens.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        tokens.push(cur);
    }
    let hash = |t: &[String]| xxh3_64(t.join(" ").as_bytes());
    if tokens.is_empty() {
        HashSet::new()
    } else if tokens.len() < 3 {
        std::iter::once(hash(&tokens)).collect()
    } else {
        tokens.windows(3).map(hash).collect()
    }
}

fn jaccard(a: &HashSet<u64>, b: &HashSet<u64>) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    a.intersection(b).count() as f64 / a.union(b).count() as f64
}

fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// MinHash with 128 independent hash functions over the truth's shingles (datasketch's
/// recipe; 32-bit values), matched at an estimated resemblance >= `threshold`. Candidates for
/// the natural corpus come from 64 bands of 2 values (a pair at resemblance 0.3 shares one
/// with probability 0.998), then the 128 values decide.
struct MinHash128 {
    threshold: f64,
}

impl Matcher for MinHash128 {
    type Sig = Vec<u32>;
    fn sign_all(&self, texts: &[String]) -> Vec<Vec<u32>> {
        texts
            .par_iter()
            .map(|t| {
                let sh = truth_shingles(t);
                (0..128u64)
                    .map(|i| {
                        let seed = mix64(i.wrapping_add(0x9e37_79b9_7f4a_7c15));
                        sh.iter()
                            .map(|&s| (mix64(s ^ seed) >> 32) as u32)
                            .min()
                            .unwrap_or(u32::MAX)
                    })
                    .collect()
            })
            .collect()
    }
    fn keys(&self, sig: &Vec<u32>, out: &mut Vec<u64>) {
        for (band, pair) in sig.chunks(2).enumerate() {
            let v = (u64::from(pair[0]) << 32) | u64::from(pair[1]);
            out.push(mix64(v ^ band as u64));
        }
    }
    fn matches(&self, a: &Vec<u32>, b: &Vec<u32>) -> bool {
        let agree = a.iter().zip(b).filter(|(x, y)| x == y).count();
        agree as f64 / 128.0 >= self.threshold
    }
    fn bytes(&self) -> usize {
        128 * 4
    }
}

/// The classic Chinese recipe: jieba's TF-IDF top-10 keywords (jieba's own IDF table and stop
/// words), each hashed (xxh3) and weighted by its TF-IDF weight into a 64-bit simhash, k = 3.
struct JiebaTop10 {
    layout: BlockLayout,
}

static JIEBA: std::sync::LazyLock<(jieba_rs::Jieba, jieba_rs::TfIdf)> =
    std::sync::LazyLock::new(|| (jieba_rs::Jieba::new(), jieba_rs::TfIdf::default()));

impl Matcher for JiebaTop10 {
    type Sig = Fingerprint;
    fn sign_all(&self, texts: &[String]) -> Vec<Fingerprint> {
        use jieba_rs::KeywordExtract;
        let (jieba, tfidf) = &*JIEBA;
        texts
            .par_iter()
            .map(|t| {
                let mut v = [0f64; 64];
                for k in tfidf.extract_keywords(jieba, t, 10, vec![]) {
                    let h = xxh3_64(k.keyword.as_bytes());
                    for (i, x) in v.iter_mut().enumerate() {
                        *x += if (h >> i) & 1 == 1 {
                            k.weight
                        } else {
                            -k.weight
                        };
                    }
                }
                let mut fp = 0u64;
                for (i, &x) in v.iter().enumerate() {
                    if x > 0.0 {
                        fp |= 1 << i;
                    }
                }
                Fingerprint(fp)
            })
            .collect()
    }
    fn keys(&self, sig: &Fingerprint, out: &mut Vec<u64>) {
        self.layout.keys_into(*sig, out);
    }
    fn matches(&self, a: &Fingerprint, b: &Fingerprint) -> bool {
        a.is_within(*b, self.layout.max_distance())
    }
    fn bytes(&self) -> usize {
        8
    }
}

#[derive(Default)]
struct MatchReport {
    /// recipe -> (pairs, share matched).
    recall: Vec<(String, usize, f64)>,
    /// hard-negative kind (and "all") -> (pairs, share matched).
    hardneg: Vec<(String, usize, f64)>,
    natural_recall_j08: f64,
    natural_recall_j09: f64,
    natural_recall_j08_without_excluded: f64,
    natural_precision: f64,
    natural_precision_without_excluded: f64,
    natural_matched_pairs: u64,
    natural_false_positives: u64,
    /// Largest posting list of one key in the natural corpus.
    natural_hottest_key: usize,
    cross_script_recall: Option<f64>,
    bytes_per_doc: usize,
    keys_per_doc: f64,
    seconds: f64,
}

fn grouped<M: Matcher>(
    m: &M,
    pairs: &[Pair],
    sa: &[M::Sig],
    sb: &[M::Sig],
) -> Vec<(String, usize, f64)> {
    let mut groups: Vec<&str> = Vec::new();
    for p in pairs {
        if !groups.contains(&p.recipe.as_str()) {
            groups.push(&p.recipe);
        }
    }
    let mut out = Vec::new();
    for g in groups.into_iter().map(Some).chain([None]) {
        let idx: Vec<usize> = (0..pairs.len())
            .filter(|&i| g.is_none_or(|g| pairs[i].recipe == g))
            .collect();
        let hit = idx.iter().filter(|&&i| m.matches(&sa[i], &sb[i])).count();
        out.push((
            g.unwrap_or("all").to_string(),
            idx.len(),
            hit as f64 / idx.len().max(1) as f64,
        ));
    }
    out
}

/// The natural corpus signed by one matcher: texts, signatures, and which documents come from
/// an excluded source.
struct SignedNatural<'a, S> {
    nat: &'a Natural,
    texts: Vec<String>,
    sigs: Vec<S>,
    excluded: Vec<bool>,
}

impl<'a, S> SignedNatural<'a, S> {
    fn new<M: Matcher<Sig = S>>(m: &M, lang: &'a Lang) -> Self {
        let nat = &lang.natural;
        let texts: Vec<String> = nat.docs.iter().map(Doc::full).collect();
        let sigs = m.sign_all(&texts);
        let excluded: Vec<bool> = nat
            .docs
            .iter()
            .map(|d| lang.excluded_sources.contains(&d.source.as_str()))
            .collect();
        SignedNatural {
            nat,
            texts,
            sigs,
            excluded,
        }
    }

    /// Whether the pair has a document from an excluded source.
    fn touches_excluded(&self, a: u32, b: u32) -> bool {
        self.excluded[a as usize] || self.excluded[b as usize]
    }

    /// The share of the true pairs with resemblance >= `lo` (without the excluded sources if
    /// `without`) that the matcher matches.
    fn recall_at<M: Matcher<Sig = S>>(&self, m: &M, lo: f32, without: bool) -> f64 {
        let sel: Vec<(u32, u32)> = self
            .nat
            .truth
            .iter()
            .filter(|(&(a, b), &j)| j >= lo && !(without && self.touches_excluded(a, b)))
            .map(|(&k, _)| k)
            .collect();
        let hit = sel
            .iter()
            .filter(|&&(a, b)| m.matches(&self.sigs[a as usize], &self.sigs[b as usize]))
            .count();
        hit as f64 / sel.len().max(1) as f64
    }

    /// With `EVAL_DEBUG_FP` set: a false positive's truth resemblance, shingle counts, sources.
    fn debug_false_positive(&self, a: u32, b: u32) {
        let (x, y) = (
            truth_shingles(&self.texts[a as usize]),
            truth_shingles(&self.texts[b as usize]),
        );
        eprintln!(
            "FP\t{:.3}\t{}\t{}\t{}\t{}",
            jaccard(&x, &y),
            x.len().min(y.len()),
            x.len().max(y.len()),
            self.nat.docs[a as usize].source,
            self.nat.docs[b as usize].source
        );
    }
}

/// Each document's candidate keys, sorted and deduplicated.
fn candidate_keys<M: Matcher>(m: &M, sigs: &[M::Sig]) -> Vec<Vec<u64>> {
    sigs.par_iter()
        .map(|s| {
            let mut k = Vec::new();
            m.keys(s, &mut k);
            k.sort_unstable();
            k.dedup();
            k
        })
        .collect()
}

/// The first key two sorted key lists share.
fn first_shared(a: &[u64], b: &[u64]) -> Option<u64> {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => return Some(a[i]),
        }
    }
    None
}

/// (matched pairs, false positives among them) of all sources and without the excluded ones.
type PairCounts = ((u64, u64), (u64, u64));

/// Every matching pair of the natural corpus: candidates from shared keys, each pair judged
/// under its first shared key (in sorted key order) only, so no global set is needed.
fn count_natural_matches<M: Matcher>(
    m: &M,
    signed: &SignedNatural<M::Sig>,
    keys: &[Vec<u64>],
    postings: &HashMap<u64, Vec<u32>>,
) -> PairCounts {
    let lists: Vec<(&u64, &Vec<u32>)> = postings.iter().filter(|(_, v)| v.len() > 1).collect();
    let sigs = &signed.sigs;
    lists
        .par_iter()
        .map(|&(&key, docs)| {
            let (mut all, mut without) = ((0u64, 0u64), (0u64, 0u64));
            for (x, &a) in docs.iter().enumerate() {
                for &b in &docs[x + 1..] {
                    let (a, b) = (a.min(b), a.max(b));
                    if first_shared(&keys[a as usize], &keys[b as usize]) != Some(key)
                        || !m.matches(&sigs[a as usize], &sigs[b as usize])
                    {
                        continue;
                    }
                    let fp = u64::from(!signed.nat.truth.contains_key(&(a, b)));
                    if fp == 1 && std::env::var_os("EVAL_DEBUG_FP").is_some() {
                        signed.debug_false_positive(a, b);
                    }
                    all = (all.0 + 1, all.1 + fp);
                    if !signed.touches_excluded(a, b) {
                        without = (without.0 + 1, without.1 + fp);
                    }
                }
            }
            (all, without)
        })
        .reduce(
            || ((0, 0), (0, 0)),
            |(a, b), (c, d)| ((a.0 + c.0, a.1 + c.1), (b.0 + d.0, b.1 + d.1)),
        )
}

/// 1 - false positives / matched pairs (1 when nothing matched).
fn precision_of((n, fp): (u64, u64)) -> f64 {
    if n == 0 {
        1.0
    } else {
        1.0 - fp as f64 / n as f64
    }
}

/// Recall across scripts on the pairs with t2s resemblance >= 0.5.
fn cross_script_match_recall<M: Matcher>(m: &M, c: &Cross) -> f64 {
    let (fc, ft) = (m.sign_all(&c.cn), m.sign_all(&c.tw));
    let idx: Vec<usize> = (0..fc.len()).filter(|&i| c.t2s[i] >= 0.5).collect();
    let hit = idx.iter().filter(|&&i| m.matches(&fc[i], &ft[i])).count();
    hit as f64 / idx.len().max(1) as f64
}

fn evaluate_matcher<M: Matcher>(m: &M, lang: &Lang) -> MatchReport {
    let t = Instant::now();
    let full = |pairs: &[Pair]| -> (Vec<String>, Vec<String>) {
        (
            pairs.iter().map(|p| p.a.full()).collect(),
            pairs.iter().map(|p| p.b.full()).collect(),
        )
    };
    let (sa, sb) = full(&lang.synthetic);
    let (ha, hb) = full(&lang.hardneg);
    let (ssa, ssb) = (m.sign_all(&sa), m.sign_all(&sb));
    let (sha, shb) = (m.sign_all(&ha), m.sign_all(&hb));
    let mut r = MatchReport {
        recall: grouped(m, &lang.synthetic, &ssa, &ssb),
        hardneg: grouped(m, &lang.hardneg, &sha, &shb),
        bytes_per_doc: m.bytes(),
        ..MatchReport::default()
    };

    let signed = SignedNatural::new(m, lang);
    r.natural_recall_j08 = signed.recall_at(m, 0.8, false);
    r.natural_recall_j09 = signed.recall_at(m, 0.9, false);
    r.natural_recall_j08_without_excluded = signed.recall_at(m, 0.8, true);

    let keys = candidate_keys(m, &signed.sigs);
    r.keys_per_doc = keys.iter().map(Vec::len).sum::<usize>() as f64 / keys.len().max(1) as f64;
    let mut postings: HashMap<u64, Vec<u32>> = HashMap::new();
    for (d, ks) in keys.iter().enumerate() {
        for &k in ks {
            postings.entry(k).or_default().push(d as u32);
        }
    }
    r.natural_hottest_key = postings.values().map(Vec::len).max().unwrap_or(0);
    let (counts, counts_without) = count_natural_matches(m, &signed, &keys, &postings);
    r.natural_precision = precision_of(counts);
    r.natural_precision_without_excluded = precision_of(counts_without);
    (r.natural_matched_pairs, r.natural_false_positives) = counts;

    if let Some(c) = &lang.cross {
        r.cross_script_recall = Some(cross_script_match_recall(m, c));
    }
    r.seconds = t.elapsed().as_secs_f64();
    r
}

fn matcher_line(name: &str, lang: &Lang, r: &MatchReport) {
    let get = |rows: &[(String, usize, f64)], l: &str| {
        rows.iter()
            .find(|(x, _, _)| x == l)
            .map_or(f64::NAN, |(_, _, v)| *v)
    };
    let worst = r
        .hardneg
        .iter()
        .filter(|(l, _, _)| l != "all")
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .map_or(String::from("-"), |(l, _, v)| {
            format!("{:.1} ({l})", 100.0 * v)
        });
    println!(
        "| {name} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1} | {worst} | {:.3} / {:.3} | {:.2} | {} | {} | {:.1} |",
        lang.name,
        get(&r.recall, "exact-format"),
        get(&r.recall, "light"),
        get(&r.recall, "boilerplate"),
        get(&r.recall, "reorder"),
        get(&r.recall, "medium"),
        get(&r.recall, "truncate"),
        get(&r.recall, "append"),
        get(&r.recall, "heavy"),
        100.0 * get(&r.hardneg, "all"),
        r.natural_precision,
        r.natural_precision_without_excluded,
        r.natural_recall_j08,
        r.cross_script_recall.map_or("-".to_string(), |c| format!("{c:.2}")),
        r.bytes_per_doc,
        r.keys_per_doc,
    );
}

/// A rule from its parts (exits on an invalid one: these are the program's own constants).
fn rule(
    width: u8,
    min_line_words: u32,
    bands: u32,
    rows: u32,
    bits: u32,
    slots: u32,
    t: f32,
) -> MatchRule {
    let spec = RuleSpec {
        shingling: Shingling {
            width,
            min_line_words,
            ..Shingling::default()
        },
        minhash: MinHashConfig {
            slots,
            bands,
            rows,
            bits,
            key_bits: 20,
        },
        min_resemblance: t,
        ..RuleSpec::default()
    };
    match MatchRule::new(spec) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("bad rule: {e}");
            std::process::exit(2)
        }
    }
}

enum AnyMatcher {
    Rule(RuleMatcher),
    Simhash(SimhashMatcher),
    MinHash(MinHash128),
    Jieba(JiebaTop10),
}

fn run_matcher(m: &AnyMatcher, lang: &Lang) -> MatchReport {
    match m {
        AnyMatcher::Rule(m) => evaluate_matcher(m, lang),
        AnyMatcher::Simhash(m) => evaluate_matcher(m, lang),
        AnyMatcher::MinHash(m) => evaluate_matcher(m, lang),
        AnyMatcher::Jieba(m) => evaluate_matcher(m, lang),
    }
}

/// The name of the new default rule in the matcher list.
const DEFAULT_RULE: &str = "rule-default";

fn matchers() -> Vec<(String, AnyMatcher)> {
    let k3 = BlockLayout::default();
    let mut out: Vec<(String, AnyMatcher)> = vec![
        (
            DEFAULT_RULE.into(),
            AnyMatcher::Rule(RuleMatcher {
                scheme: Scheme::default(),
                rule: MatchRule::default(),
            }),
        ),
        (
            "today-simhash-k3".into(),
            AnyMatcher::Simhash(SimhashMatcher {
                candidate: Candidate::Scheme(Scheme::default()),
                layout: k3.clone(),
            }),
        ),
        (
            "peer-py-simhash-k3".into(),
            AnyMatcher::Simhash(SimhashMatcher {
                candidate: Candidate::PySimhash,
                layout: k3.clone(),
            }),
        ),
        (
            "peer-jieba-top10-k3".into(),
            AnyMatcher::Jieba(JiebaTop10 { layout: k3 }),
        ),
        (
            "peer-minhash128-j0.8".into(),
            AnyMatcher::MinHash(MinHash128 { threshold: 0.8 }),
        ),
        (
            "peer-minhash128-j0.5".into(),
            AnyMatcher::MinHash(MinHash128 { threshold: 0.5 }),
        ),
    ];
    // The peer's curve, to compare precision at equal recall with the rule's thresholds.
    for t in [0.45, 0.55, 0.6] {
        out.push((
            format!("peer-minhash128-j{t}"),
            AnyMatcher::MinHash(MinHash128 { threshold: t }),
        ));
    }
    // Variants of the rule: shingle width, chrome, bins and bands, threshold. The default is
    // width 3, chrome by shape, no short-line filter, 12 bands x 3 bins (keys hashed from the
    // bins' full values) and a sketch of 512 bins of 2 bits, t = 0.55; each variant changes one
    // thing. `rule-sketch-SLOTSxBITS` is the sketch-width curve (docs/QUALITY.md, "Sketch
    // width"); `rule-sketch-256x8` is the previous default's sketch, rule-no-chrome the rule
    // before chrome.
    let (slots, bits) = (
        MinHashConfig::default().slots,
        MinHashConfig::default().bits,
    );
    let mut variants: Vec<(String, MatchRule)> = vec![
        ("rule-t0.45".into(), rule(3, 0, 12, 3, bits, slots, 0.45)),
        ("rule-t0.5".into(), rule(3, 0, 12, 3, bits, slots, 0.5)),
        ("rule-t0.6".into(), rule(3, 0, 12, 3, bits, slots, 0.6)),
        ("rule-t0.65".into(), rule(3, 0, 12, 3, bits, slots, 0.65)),
        (
            "rule-chrome-line8".into(),
            rule(3, 8, 12, 3, bits, slots, 0.55),
        ),
        ("rule-no-chrome".into(), {
            let mut spec = MatchRule::default().spec().clone();
            spec.shingling.chrome = false;
            MatchRule::new(spec).unwrap_or_else(|e| {
                eprintln!("bad rule: {e}");
                std::process::exit(2)
            })
        }),
        (
            "rule-width2-t0.65".into(),
            rule(2, 0, 12, 3, bits, slots, 0.65),
        ),
        (
            "rule-8bands-3rows".into(),
            rule(3, 0, 8, 3, bits, slots, 0.55),
        ),
        (
            "rule-16bands-4rows".into(),
            rule(3, 0, 16, 4, bits, slots, 0.55),
        ),
    ];
    for (sketch_slots, sketch_bits) in [
        (128, 8),
        (256, 8),
        (256, 4),
        (256, 2),
        (384, 2),
        (512, 2),
        (768, 2),
        (512, 1),
        (1024, 1),
    ] {
        variants.push((
            format!("rule-sketch-{sketch_slots}x{sketch_bits}"),
            rule(3, 0, 12, 3, sketch_bits, sketch_slots, 0.55),
        ));
    }
    for (n, r) in variants {
        out.push((
            n,
            AnyMatcher::Rule(RuleMatcher {
                scheme: Scheme::default(),
                rule: r,
            }),
        ));
    }
    out
}

/// The figures `--summary-json` writes for one language.
fn summary_value(r: &MatchReport) -> serde_json::Value {
    let map = |rows: &[(String, usize, f64)]| -> serde_json::Map<String, serde_json::Value> {
        rows.iter()
            .map(|(l, _, v)| (l.clone(), serde_json::json!(v)))
            .collect()
    };
    serde_json::json!({
        "recall": map(&r.recall),
        "hard_negative_fp": map(&r.hardneg),
        "hard_negative_pairs": r.hardneg.iter().map(|(l, n, _)| (l.clone(), serde_json::json!(n))).collect::<serde_json::Map<_, _>>(),
        "natural_precision": r.natural_precision,
        "natural_precision_without_excluded": r.natural_precision_without_excluded,
        "natural_matched_pairs": r.natural_matched_pairs,
        "natural_false_positives": r.natural_false_positives,
        "natural_recall_j08": r.natural_recall_j08,
        "natural_recall_j09": r.natural_recall_j09,
        "natural_recall_j08_without_excluded": r.natural_recall_j08_without_excluded,
        "cross_script_recall_t2s_05": r.cross_script_recall,
        "bytes_per_doc": r.bytes_per_doc,
        "keys_per_doc": r.keys_per_doc,
        "natural_hottest_key_docs": r.natural_hottest_key,
    })
}

/// Checks the reimplemented truth shingles against the `jaccard` of the first pairs.
fn check_truth_shingles(lang: &Lang) -> Res<()> {
    let mut worst = 0f64;
    for p in lang.synthetic.iter().chain(&lang.hardneg).take(200) {
        let j = jaccard(&truth_shingles(&p.a.full()), &truth_shingles(&p.b.full()));
        worst = worst.max((j - p.jaccard).abs());
    }
    eprintln!(
        "truth shingles, {}: largest |jaccard - truth| over 200 pairs = {worst:.4}",
        lang.name
    );
    if worst > 0.01 {
        return Err(format!(
            "the reimplemented truth shingles disagree with the truth files by {worst:.4} (> 0.01)"
        )
        .into());
    }
    Ok(())
}
