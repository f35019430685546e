//! Quality evaluation of fingerprint schemes on the evaluation data.
//!
//! ```text
//! cargo run --release --example eval -- ../shared/data            # all candidate schemes
//! cargo run --release --example eval -- ../shared/data --full     # + full tables of the default
//! cargo run --release --example eval -- ../shared/data --schemes default,words --sample 300
//! cargo run --release --example eval -- ../shared/data --schemes default --lang en --list-random 3
//! ```
//!
//! For each candidate scheme and language it prints recall at k = 0..=10 per synthetic recipe,
//! false-positive rates on hard negatives and on random pairs, recall and precision on the
//! natural corpora (brute force over all fingerprint pairs) and cross-script recall (zh).
//! `--sample N` keeps N pairs per file and N*10 natural documents (a smoke test for CI).
//! `--list-random K` also lists the "random" pairs within K (recipe, title and sources of both).

use flate2::read::GzDecoder;
use rayon::prelude::*;
use serde::Deserialize;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::Instant;
use tantivy_simhash::{Features, Fingerprint, HanSegmentation, Scheme, TermWeight, Tokenization};

const KMAX: usize = 10;
type Res<T> = Result<T, Box<dyn std::error::Error>>;

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

fn open_lines(path: &Path) -> Res<Box<dyn BufRead>> {
    let f = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if path.extension().is_some_and(|e| e == "gz") {
        Ok(Box::new(BufReader::new(GzDecoder::new(f))))
    } else {
        Ok(Box::new(BufReader::new(f)))
    }
}

fn read_jsonl<T: for<'de> Deserialize<'de>>(path: &Path, limit: usize) -> Res<Vec<T>> {
    let mut out = Vec::new();
    for (n, line) in open_lines(path)?.lines().enumerate() {
        if out.len() >= limit {
            break;
        }
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        out.push(
            serde_json::from_str(&line)
                .map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))?,
        );
    }
    Ok(out)
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
    let synthetic = read_jsonl(&dir.join(format!("synthetic-{lang}.jsonl.gz")), sample)?;
    let hardneg = read_jsonl(&dir.join(format!("hardneg-{lang}.jsonl.gz")), sample)?;
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
    recall: Vec<(String, usize, [f64; KMAX + 1])>,
    hardneg: Vec<(String, usize, [f64; KMAX + 1])>,
    random: (u64, [u64; KMAX + 1]),
    natural: Vec<(String, usize, [f64; KMAX + 1])>,
    precision: Vec<(String, [u64; KMAX + 1], [u64; KMAX + 1])>,
    natural_random: (u64, [u64; KMAX + 1]),
    cross: Vec<(String, usize, [f64; KMAX + 1])>,
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
    let mut recall = by_group(&lang.synthetic, &fsa, &fsb, |p| p.recipe.as_str());
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
        // What the "random" pairs within k are: the recipe (or hard-negative kind), title and
        // source ids of both documents.
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
    // Precision: every pair within KMAX, brute force.
    let n = fnat.len();
    let found: Vec<(u32, u32, u32)> = (0..n)
        .into_par_iter()
        .flat_map_iter(|i| {
            let fnat = &fnat;
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

    let mut cross = Vec::new();
    if let Some(c) = &lang.cross {
        bytes += c.cn.iter().chain(&c.tw).map(String::len).sum::<usize>();
        let (fc, ft) = (fingerprints(scheme, &c.cn), fingerprints(scheme, &c.tw));
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
    }
    Report {
        recall,
        hardneg,
        random,
        natural,
        precision,
        natural_random: (total_pairs, nat_fp),
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
    print!("| random pairs (per million) | {} |", r.random.0);
    for c in r.random.1 {
        print!(" {:.2} |", 1e6 * c as f64 / r.random.0.max(1) as f64);
    }
    println!();
    print!(
        "| natural non-pairs (per million) | {} |",
        r.natural_random.0
    );
    for c in r.natural_random.1 {
        print!(
            " {:.2} |",
            1e6 * c as f64 / r.natural_random.0.max(1) as f64
        );
    }
    println!();
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
    for (label, within, fp) in &r.precision {
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

fn main() -> Res<()> {
    let mut args = std::env::args().skip(1);
    let mut dir = PathBuf::from("../shared/data");
    let mut sample = usize::MAX;
    let mut full = false;
    let mut list_random: Option<u32> = None;
    let mut only: Option<Vec<String>> = None;
    let mut langs = vec!["en", "zh"];
    while let Some(a) = args.next() {
        match a.as_str() {
            "--sample" => sample = args.next().ok_or("--sample needs a number")?.parse()?,
            "--full" => full = true,
            "--list-random" => {
                list_random = Some(args.next().ok_or("--list-random needs a k")?.parse()?)
            }
            "--schemes" => {
                only = Some(
                    args.next()
                        .ok_or("--schemes needs a list")?
                        .split(',')
                        .map(str::to_string)
                        .collect(),
                )
            }
            "--lang" => {
                langs = vec![if args.next().as_deref() == Some("zh") {
                    "zh"
                } else {
                    "en"
                }]
            }
            "-h" | "--help" => {
                println!(
                    "usage: eval [DATA_DIR] [--full] [--sample N] [--schemes a,b] [--lang en|zh] [--list-random K]"
                );
                return Ok(());
            }
            _ => dir = PathBuf::from(a),
        }
    }
    let data: Vec<Lang> = langs
        .iter()
        .map(|l| load(&dir, l, sample))
        .collect::<Res<_>>()?;
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
    let mut schemes = candidates();
    if let Some(only) = &only {
        schemes.retain(|(n, _)| only.iter().any(|o| o == n));
    }
    println!("## Summary (recall as a fraction; hard-negative FP in %; random FP per million pairs; natural precision all / without excluded)\n");
    println!("| scheme | lang | k | exact-format | light | boilerplate | reorder | medium | truncate | append | heavy | hard-neg FP % | random FP/1e6 | natural J>=0.8 | natural J>=0.8 w/o excl | natural precision | cross-script t2s>=0.5 |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut reports = Vec::new();
    for (name, scheme) in &schemes {
        for lang in &data {
            let r = evaluate(scheme, lang, list_random);
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
    if full {
        for (name, lang, r) in &reports {
            if name.starts_with("default") || only.is_some() {
                full_tables(name, lang, r);
            }
        }
    }
    println!("\nScheme ids:\n");
    for (name, scheme) in &schemes {
        println!("- {name}: `{}`", scheme.id());
    }
    Ok(())
}
