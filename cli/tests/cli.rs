//! End-to-end tests of the `neardup` binary on the fixtures in `tests/fixtures/`
//! (`sample.jsonl.gz` is made by `eval/src/bin/make_demo.rs`; the `bad-*.jsonl` files by hand).
//! Expected results come from the library's fingerprints by brute force, not from the binary.

mod cli_support;

use cli_support::*;
use flate2::read::MultiGzDecoder;
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Output};
use tantivy_simhash::{Evidence, Fingerprint, MatchRule, Scheme, Signature};

const K: u32 = 3;

fn summary(out: &Output) -> Value {
    let lines = json_lines(out);
    let last = lines.last().expect("a summary line").clone();
    assert_eq!(last["event"], "summary", "{}", stdout(out));
    last
}

/// The fixture's documents: (id, text as fingerprinted: title, line break, text).
fn sample_docs() -> Vec<(String, String)> {
    gz_docs(&fixture("sample.jsonl.gz"))
        .into_iter()
        .map(|(id, text, _)| (id, text))
        .collect()
}

/// The documents of a gzip JSONL file: (id, text as fingerprinted: title, line break, text,
/// host or "").
fn gz_docs(path: &Path) -> Vec<(String, String, String)> {
    let reader = BufReader::new(MultiGzDecoder::new(std::fs::File::open(path).unwrap()));
    reader
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
            let title = v["title"].as_str().unwrap_or("");
            let text = v["text"].as_str().unwrap();
            let joined = if title.is_empty() {
                text.to_string()
            } else {
                format!("{title}\n{text}")
            };
            let host = v["host"].as_str().unwrap_or("").to_string();
            (v["id"].as_str().unwrap().to_string(), joined, host)
        })
        .collect()
}

/// The signatures the index stores (default scheme and rule): the oracle of its decisions.
fn signatures(docs: &[(String, String)]) -> (MatchRule, Vec<Signature>) {
    let rule = MatchRule::default();
    let mut signer = rule.signer(&Scheme::default());
    let sigs = docs.iter().map(|(_, t)| signer.sign(t)).collect();
    (rule, sigs)
}

fn fingerprints(docs: &[(String, String)]) -> Vec<Fingerprint> {
    let scheme = Scheme::default();
    docs.iter().map(|(_, t)| scheme.fingerprint(t)).collect()
}

/// `neardup index INPUT --index DIR EXTRA...`
fn index_file(input: &Path, dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["index", p(input), "--index", p(dir)];
    args.extend_from_slice(extra);
    neardup(&args)
}

fn index_sample(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["--json", "-q"];
    args.extend_from_slice(extra);
    index_file(&fixture("sample.jsonl.gz"), dir, &args)
}

#[test]
fn help_documents_exit_codes() {
    let out = neardup(&["--help"]);
    assert_eq!(code(&out), 0);
    let help = stdout(&out);
    for needle in [
        "Exit status",
        "130",
        "--skip-bad",
        "index",
        "similar",
        "stats",
    ] {
        assert!(help.contains(needle), "--help lacks {needle}: {help}");
    }
}

#[test]
fn tag_index_stats_similar_search_agree_with_brute_force() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ix");
    let docs = sample_docs();
    let (rule, sigs) = signatures(&docs);
    let matches = |i: usize, j: usize| rule.matches(&sigs[i], &sigs[j]);

    let out = index_sample(&dir, &["--dedup", "tag"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // Under tag, a document is tagged when the rule matches it with any earlier document.
    let tagged = (0..sigs.len())
        .filter(|&i| (0..i).any(|j| matches(i, j).is_some()))
        .count();
    assert!(tagged > 0, "the fixture must hold near-duplicates");
    let by_resemblance = (0..sigs.len())
        .filter(|&i| (0..i).any(|j| matches!(matches(i, j), Some(Evidence::Resemblance { .. }))))
        .count();
    assert!(
        by_resemblance > 0,
        "the fixture must hold resemblance-only matches"
    );
    let s = summary(&out);
    assert_eq!(s["added"], docs.len());
    assert_eq!(s["tagged"], tagged);
    assert_eq!(s["rejected"], 0);
    let events = json_lines(&out);
    assert_eq!(
        events.iter().filter(|e| e["event"] == "tagged").count(),
        tagged
    );

    let out = neardup(&["stats", p(&dir), "--json", "--clusters"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let stats = &json_lines(&out)[0];
    assert_eq!(stats["documents"], docs.len());
    assert_eq!(stats["k"], K);
    assert_eq!(stats["policy"], "tag");
    // The largest cluster is at least as large as the largest set of documents within k of one.
    let fps = fingerprints(&docs);
    let biggest = (0..fps.len())
        .map(|i| {
            (0..fps.len())
                .filter(|&j| fps[i].distance(fps[j]) <= K)
                .count()
        })
        .max()
        .unwrap();
    let largest = stats["largest_clusters"][0]["documents"].as_u64().unwrap() as usize;
    assert!(largest >= biggest, "{largest} < {biggest}");

    // similar --id: the documents the rule matches with the ones with the most neighbours, and
    // one without any; strongest evidence first, ties by id.
    let neighbours = |i: usize| -> Vec<(String, String, u32, Option<f64>)> {
        let mut v: Vec<(String, Evidence)> = (0..sigs.len())
            .filter(|&j| j != i)
            .filter_map(|j| matches(i, j).map(|e| (docs[j].0.clone(), e)))
            .collect();
        v.sort_by(|a, b| a.1.cmp_strength(&b.1).then_with(|| a.0.cmp(&b.0)));
        v.into_iter()
            .map(|(id, e)| {
                let by = if e.resemblance().is_some() {
                    "resemblance"
                } else {
                    "simhash"
                };
                let r = e
                    .resemblance()
                    .map(|r| (f64::from(r) * 1000.0).round() / 1000.0);
                (id, by.to_string(), e.distance(), r)
            })
            .collect()
    };
    let mut order: Vec<usize> = (0..docs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(neighbours(i).len()));
    let lonely = order.iter().rev().find(|&&i| neighbours(i).is_empty());
    let mut probes: Vec<usize> = order.iter().take(3).copied().collect();
    probes.extend(lonely);
    for i in probes {
        let out = neardup(&["similar", p(&dir), "--id", &docs[i].0, "--json"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let got: Vec<(String, String, u32, Option<f64>)> = json_lines(&out)
            .iter()
            .map(|v| {
                (
                    v["id"].as_str().unwrap().to_string(),
                    v["by"].as_str().unwrap().to_string(),
                    v["distance"].as_u64().unwrap() as u32,
                    v["resemblance"].as_f64(),
                )
            })
            .collect();
        assert_eq!(got, neighbours(i), "similar --id {}", docs[i].0);
    }
    // similar --text with a document's own text finds it at distance 0; -k 0 keeps only those.
    let (id0, text0) = &docs[order[0]];
    let out = neardup(&["similar", p(&dir), "--text", text0, "-k", "0", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let got = json_lines(&out);
    assert!(got.iter().any(|v| v["id"] == id0.as_str()));
    assert!(got.iter().all(|v| v["distance"] == 0));
    // Human output names the count.
    let out = neardup(&["similar", p(&dir), "--id", id0]);
    assert!(stdout(&out).starts_with(&format!("{} near-duplicates", neighbours(order[0]).len())));

    // search: every hit holds the word, ranks count from 1, at most --limit.
    let out = neardup(&["search", p(&dir), "licence OR license", "-n", "5", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let hits = json_lines(&out);
    assert!(!hits.is_empty() && hits.len() <= 5);
    for (rank, hit) in hits.iter().enumerate() {
        assert_eq!(hit["rank"], rank + 1);
        let id = hit["id"].as_str().unwrap();
        let (_, text) = docs.iter().find(|(d, _)| d == id).unwrap();
        let lower = text.to_lowercase();
        assert!(
            lower.contains("licence") || lower.contains("license"),
            "{id}"
        );
    }
    // A query tantivy cannot parse is an error, not a crash.
    let out = neardup(&["search", p(&dir), "title:(unclosed"]);
    assert_eq!(code(&out), 1);
    assert_stderr_has(&out, "cannot parse the query");
    // Unknown id.
    let out = neardup(&["similar", p(&dir), "--id", "no-such-id"]);
    assert_eq!(code(&out), 1);
    assert_stderr_has(&out, "no document has id `no-such-id`");
}

#[test]
fn reject_follows_the_greedy_oracle_and_plain_stdin_and_gzip_agree() {
    let docs = sample_docs();
    let (rule, sigs) = signatures(&docs);
    // Greedy: a document is rejected when the rule matches it with a kept one.
    let mut kept: Vec<&Signature> = Vec::new();
    let mut rejected = 0;
    for sig in &sigs {
        if kept.iter().any(|k| rule.matches(k, sig).is_some()) {
            rejected += 1;
        } else {
            kept.push(sig);
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let gz = tmp.path().join("gz");
    let out = index_sample(&gz, &["--dedup", "reject"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let s = summary(&out);
    assert_eq!(s["rejected"], rejected);
    assert_eq!(s["added"], docs.len() - rejected);
    assert_eq!(s["index_documents"], docs.len() - rejected);

    // The same input, decompressed, through stdin.
    let mut plain = Vec::new();
    MultiGzDecoder::new(std::fs::File::open(fixture("sample.jsonl.gz")).unwrap())
        .read_to_end(&mut plain)
        .unwrap();
    let stdin_dir = tmp.path().join("stdin");
    let mut child = spawn(&[
        "index",
        "-",
        "--index",
        p(&stdin_dir),
        "--dedup",
        "reject",
        "--json",
        "-q",
    ]);
    child.stdin.take().unwrap().write_all(&plain).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(summary(&out)["rejected"], rejected);

    // Indexing the same file again adds nothing: ids already in the index are skipped.
    let out = index_sample(&gz, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let s = summary(&out);
    assert_eq!(s["added"], 0);
    assert_eq!(s["skipped_existing_id"], docs.len() - rejected);
    assert_eq!(
        s["rejected"], rejected,
        "the rejected ones are rejected again"
    );
}

#[test]
fn replace_keeps_the_newest_of_each_near_duplicate_set() {
    let docs = sample_docs();
    let (rule, sigs) = signatures(&docs);
    // Oracle: each document deletes every stored document the rule matches, then is stored.
    let mut stored: Vec<usize> = Vec::new();
    let mut replacing = 0;
    let mut replaced = 0;
    for i in 0..sigs.len() {
        let before = stored.len();
        stored.retain(|&j| rule.matches(&sigs[i], &sigs[j]).is_none());
        if stored.len() < before {
            replacing += 1;
            replaced += before - stored.len();
        }
        stored.push(i);
    }
    assert!(replaced > 0, "the fixture must hold near-duplicates");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ix");
    let out = index_sample(&dir, &["--dedup", "replace"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let s = summary(&out);
    assert_eq!(s["replacing"], replacing);
    assert_eq!(s["replaced"], replaced);
    assert_eq!(s["index_documents"], stored.len());
    // Stored documents are found by id; replaced ones are gone (ten of each).
    let gone: Vec<usize> = (0..docs.len()).filter(|i| !stored.contains(i)).collect();
    for (&i, expected) in gone
        .iter()
        .take(10)
        .map(|i| (i, 1))
        .chain(stored.iter().take(10).map(|i| (i, 0)))
    {
        let id = &docs[i].0;
        let out = neardup(&["similar", p(&dir), "--id", id, "-k", "0", "--json"]);
        assert_eq!(code(&out), expected, "{id}: {}", stderr(&out));
    }
}

#[test]
fn the_demo_runs_with_no_arguments() {
    let out = neardup(&["demo"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../demo/corpus.jsonl.gz");
    let lines = BufReader::new(MultiGzDecoder::new(std::fs::File::open(corpus).unwrap()))
        .lines()
        .count();
    assert!(
        text.contains(&format!("indexed {lines} documents")),
        "{text}"
    );
    for needle in [
        "$ neardup search",
        "$ neardup similar",
        "$ neardup stats",
        "$ neardup mirrors",
        "$ neardup clusters",
        "help.srccode.edu",
    ] {
        assert!(text.contains(needle), "{needle} missing: {text}");
    }
    // A page found under another site's chrome: the first hit of that `similar` is a
    // resemblance match on another host beyond the simhash radius, as the library's rule says.
    let section = text
        .split("under other sites' menus and footers")
        .nth(1)
        .expect("the demo shows a copy under other chrome");
    let mut lines = section
        .lines()
        .skip_while(|l| !l.starts_with("$ neardup similar"));
    let id = lines
        .next()
        .unwrap()
        .rsplit(' ')
        .next()
        .unwrap()
        .to_string();
    let hit = lines.nth(1).unwrap();
    let fields: Vec<&str> = hit.split_whitespace().collect();
    assert!(
        fields[0].starts_with("r=0.") && fields[1].starts_with("d="),
        "{hit}"
    );
    let copy = fields[2];
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../demo/corpus.jsonl.gz");
    let docs: Vec<(String, String, String)> = gz_docs(&corpus)
        .into_iter()
        .filter(|(d, _, _)| *d == id || d == copy)
        .collect();
    assert_eq!(docs.len(), 2, "{id} and {copy}");
    assert_ne!(docs[0].2, docs[1].2, "two hosts");
    let (rule, sigs) = signatures(&[
        (docs[0].0.clone(), docs[0].1.clone()),
        (docs[1].0.clone(), docs[1].1.clone()),
    ]);
    match rule.matches(&sigs[0], &sigs[1]) {
        Some(Evidence::Resemblance { distance, .. }) => assert!(distance > K, "{hit}"),
        other => panic!("{id} ~ {copy}: {other:?}"),
    }
}

#[test]
fn ids_are_unique_across_commits() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("ids.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&input).unwrap());
    for i in 0..600 {
        let id = if i < 500 { i } else { i - 500 };
        writeln!(
            f,
            r#"{{"id": "d{id}", "text": "document {i} of the run with words {}"}}"#,
            i * 31
        )
        .unwrap();
    }
    drop(f);
    let dir = tmp.path().join("ix");
    let out = index_file(
        &input,
        &dir,
        &["--dedup", "off", "--commit-every", "10", "--json", "-q"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let s = summary(&out);
    assert_eq!(s["skipped_existing_id"], 100);
    assert_eq!(s["index_documents"], 500);
}

#[test]
fn a_malformed_line_stops_with_file_and_line_and_keeps_what_came_before() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ix");
    let bad = fixture("bad-json.jsonl");
    let out = neardup(&["index", p(&bad), "--index", p(&dir), "-q"]);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(err.contains("bad-json.jsonl:3: malformed JSON"), "{err}");
    assert!(
        err.contains("2 documents this run added before it were committed"),
        "{err}"
    );
    let out = neardup(&["stats", p(&dir), "--json"]);
    assert_eq!(json_lines(&out)[0]["documents"], 2);

    // --skip-bad: counted, skipped, status 3; the first two are already there.
    let out = index_file(&bad, &dir, &["-q", "--skip-bad", "--json"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let s = summary(&out);
    assert_eq!(s["skipped_bad"], 1);
    assert_eq!(s["skipped_existing_id"], 2);
    assert_eq!(s["added"], 2);
    assert_eq!(s["index_documents"], 4);
    assert_stderr_has(&out, "skipped: ");
}

#[test]
fn a_truncated_gzip_file_is_an_error_that_keeps_what_was_read() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(fixture("sample.jsonl.gz")).unwrap();
    let cut = tmp.path().join("cut.jsonl.gz");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let dir = tmp.path().join("ix");
    let out = neardup(&["index", p(&cut), "--index", p(&dir), "-q", "--dedup", "off"]);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(
        err.contains("cannot read line") && err.contains("cut.jsonl.gz"),
        "{err}"
    );
    let out = neardup(&["stats", p(&dir), "--json"]);
    let committed = json_lines(&out)[0]["documents"].as_u64().unwrap();
    assert!(committed > 0 && committed < sample_docs().len() as u64);
}

#[test]
fn missing_fields_empty_bodies_and_non_utf8_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ix");
    let fields = fixture("bad-fields.jsonl");
    let out = neardup(&["index", p(&fields), "--index", p(&dir), "-q"]);
    assert_eq!(code(&out), 1);
    assert_stderr_has(&out, "bad-fields.jsonl:2: no id field `id`");

    let out = index_file(&fields, &dir, &["-q", "--skip-bad", "--json"]);
    assert_eq!(code(&out), 3);
    let err = stderr(&out);
    for needle in [
        "bad-fields.jsonl:3: document `f3` has no text field `text`",
        "bad-fields.jsonl:4: document `f4` has an empty text and no title",
        "bad-fields.jsonl:5: document `f5`: the text field `text` is a number",
    ] {
        assert!(err.contains(needle), "{needle} not in {err}");
    }
    let s = summary(&out);
    assert_eq!(s["skipped_bad"], 4);
    assert_eq!(s["index_documents"], 2);

    let utf8 = fixture("bad-utf8.jsonl");
    let dir2 = tmp.path().join("ix2");
    let out = neardup(&["index", p(&utf8), "--index", p(&dir2), "-q"]);
    assert_eq!(code(&out), 1);
    assert_stderr_has(&out, "bad-utf8.jsonl:2: not valid UTF-8");

    // A field mapping that names another field.
    let out = index_file(
        &utf8,
        &tmp.path().join("ix3"),
        &["--text-field", "body", "-q"],
    );
    assert_eq!(code(&out), 1);
    assert_stderr_has(&out, "has no text field `body`");
}

#[test]
fn a_100_mb_line_is_a_bad_line_not_a_crash() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("huge.jsonl");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&input).unwrap());
        writeln!(
            f,
            r#"{{"id": "before", "text": "a short document before the huge one"}}"#
        )
        .unwrap();
        write!(f, r#"{{"id": "huge", "text": ""#).unwrap();
        let chunk = "lorem ipsum ".repeat(1 << 12);
        let mut written = 0;
        while written < 100 << 20 {
            f.write_all(chunk.as_bytes()).unwrap();
            written += chunk.len();
        }
        writeln!(f, r#""}}"#).unwrap();
        writeln!(
            f,
            r#"{{"id": "after", "text": "a short document after the huge one"}}"#
        )
        .unwrap();
    }
    let dir = tmp.path().join("ix");
    let out = neardup(&["index", p(&input), "--index", p(&dir), "-q"]);
    assert_eq!(code(&out), 1);
    assert_stderr_has(&out, "huge.jsonl:2: the line has");
    assert_stderr_has(&out, "--max-line-bytes");
    let out = index_file(&input, &dir, &["-q", "--skip-bad", "--json"]);
    assert_eq!(code(&out), 3);
    let s = summary(&out);
    assert_eq!(s["skipped_bad"], 1);
    assert_eq!(s["index_documents"], 2);
}

#[test]
fn directories_that_are_not_indexes_are_refused_and_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let out = neardup(&["stats", p(&tmp.path().join("missing"))]);
    assert_eq!(code(&out), 1);
    assert_stderr_has(&out, "does not exist");

    let other = tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "mine").unwrap();
    let out = neardup(&["stats", p(&other)]);
    assert_eq!(code(&out), 1);
    assert_stderr_has(&out, "is not a neardup index");
    let out = neardup(&["index", p(&fixture("bad-json.jsonl")), "--index", p(&other)]);
    assert_eq!(code(&out), 1);
    assert_stderr_has(&out, "is not empty and is not a neardup index");
    let names: Vec<_> = std::fs::read_dir(&other).unwrap().collect();
    assert_eq!(names.len(), 1, "nothing was written");

    let file = tmp.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let out = neardup(&["index", p(&fixture("bad-json.jsonl")), "--index", p(&file)]);
    assert_eq!(code(&out), 1);
    assert_stderr_has(&out, "is a file");

    let out = index_file(&tmp.path().join("nope.jsonl"), &tmp.path().join("new"), &[]);
    assert_eq!(code(&out), 1);
    assert_stderr_has(&out, "cannot open");
    assert!(
        !tmp.path().join("new").exists(),
        "no index is created for a missing file"
    );
}

#[test]
fn an_index_of_another_scheme_or_k_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ix");
    let input = fixture("bad-utf8.jsonl");
    let out = neardup(&["index", p(&input), "--index", p(&dir), "-q", "--skip-bad"]);
    assert_eq!(code(&out), 3);

    let out = index_file(&input, &dir, &["-k", "6", "--skip-bad"]);
    assert_eq!(code(&out), 1);
    assert_stderr_has(&out, "was built with -k 3, but this run asks for -k 6");
    let out = index_file(&input, &dir, &["--language", "english"]);
    assert_eq!(code(&out), 1);
    assert_stderr_has(&out, "--language auto");

    // The library's record says another scheme built it (as an older or newer release would).
    let record = dir.join(".tantivy-simhash.json");
    let text = std::fs::read_to_string(&record).unwrap();
    std::fs::write(&record, text.replace("simhash64-v1", "simhash64-v0")).unwrap();
    let out = neardup(&["stats", p(&dir)]);
    assert_eq!(code(&out), 1);
    assert_stderr_has(&out, "the index's two records of its scheme disagree");
}

#[test]
fn usage_errors_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = p(tmp.path());
    for args in [
        vec!["index"],
        vec!["index", "x.jsonl"],
        vec!["similar", dir],
        vec!["similar", dir, "--id", "a", "--text", "b"],
        vec!["search", dir],
        vec!["frobnicate"],
        vec!["index", "x.jsonl", "--index", dir, "--dedup", "sometimes"],
    ] {
        let out = neardup(&args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
    }
    let input = fixture("bad-json.jsonl");
    for bad in [["-k", "12"], ["--language", "klingon"]] {
        let target = tmp.path().join(bad[1]);
        let mut args = vec!["index", p(&input), "--index", p(&target)];
        args.extend(bad);
        let out = neardup(&args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(!target.exists(), "nothing is created for invalid settings");
    }
}

/// Many small documents, so that results overflow a pipe buffer.
fn many_docs(path: &Path, n: usize) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..n {
        writeln!(
            f,
            r#"{{"id": "d{i}", "text": "common words and the number {i} with {} more"}}"#,
            i * 7919 % 10007
        )
        .unwrap();
    }
}

#[test]
fn a_closed_pipe_ends_quietly() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("many.jsonl");
    many_docs(&input, 3000);
    let dir = tmp.path().join("ix");
    let out = index_file(&input, &dir, &["--dedup", "off", "-q"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let mut child = spawn(&["search", p(&dir), "common", "-n", "3000", "--json"]);
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is gone: the rest of the output meets a closed pipe.
    let out = child.wait_with_output().unwrap();
    assert!(first.contains("\"rank\":1"));
    assert_eq!(code(&out), 0);
    assert_eq!(stderr(&out), "");

    // `neardup pairs DIR | head`: 400 copies of one text make 79,800 pairs.
    let copies = tmp.path().join("copies.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&copies).unwrap());
    for i in 0..400 {
        writeln!(
            f,
            r#"{{"id": "c{i}", "text": "one text copied four hundred times over"}}"#
        )
        .unwrap();
    }
    drop(f);
    let dir = tmp.path().join("copies");
    let out = index_file(&copies, &dir, &["--dedup", "off", "-q"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let mut child = spawn(&["pairs", p(&dir)]);
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(first.starts_with("0\tc"), "{first}");
    assert_eq!(code(&out), 0);
    assert_eq!(stderr(&out), "");
}

/// SIGINT (Ctrl-C), SIGTERM (containers, systemd, schedulers) and SIGHUP (a closed terminal)
/// each commit what was read, say so, and exit with 128 + the signal's number.
#[cfg(unix)]
#[test]
fn stop_signals_commit_what_was_indexed() {
    for (signal, status, name) in [
        ("INT", 130, "SIGINT"),
        ("TERM", 143, "SIGTERM"),
        ("HUP", 129, "SIGHUP"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let input = tmp.path().join("many.jsonl");
        many_docs(&input, 500);
        let text = std::fs::read(&input).unwrap();
        let dir = tmp.path().join("ix");
        // Feed stdin, keep it open, signal once a first commit shows that lines were read (the
        // handler is set by then; stdin stays open, so the run cannot end on its own).
        let mut child = spawn(&[
            "index",
            "-",
            "--index",
            p(&dir),
            "--dedup",
            "off",
            "--commit-every",
            "50",
            "--json",
            "-q",
        ]);
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&text).unwrap();
        stdin.flush().unwrap();
        let committed_segments = || {
            let meta = std::fs::read_to_string(dir.join("meta.json")).unwrap_or_default();
            serde_json::from_str::<Value>(&meta)
                .ok()
                .and_then(|m| m["segments"].as_array().map(|s| s.len()))
                .unwrap_or(0)
        };
        while committed_segments() == 0 {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let status_of_kill = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status_of_kill.success());
        let out = child.wait_with_output().unwrap();
        drop(stdin);
        assert_eq!(code(&out), status, "{name}: {}", stderr(&out));
        let expected = format!("interrupted by {name}: committed everything read up to <stdin>:");
        assert_stderr_has(&out, &expected);
        let s = summary(&out);
        assert_eq!(s["interrupted"], true);
        assert_eq!(s["signal"], name);
        let committed = s["index_documents"].as_u64().unwrap();
        let out = neardup(&["stats", p(&dir), "--json"]);
        assert_eq!(json_lines(&out)[0]["documents"], committed);

        // Rerunning finishes the job without duplicates.
        let out = neardup(&["index", p(&input), "--index", p(&dir), "--json", "-q"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let s = summary(&out);
        assert_eq!(s["skipped_existing_id"], committed);
        assert_eq!(s["index_documents"], 500);
    }
}

#[test]
fn search_collapses_near_duplicates_by_default() {
    let docs = sample_docs();
    let (rule, sigs) = signatures(&docs);
    let sig_of = |id: &str| &sigs[docs.iter().position(|(d, _)| d == id).unwrap()];
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ix");
    let out = index_sample(&dir, &["--dedup", "off"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));

    // "google cloud" hits the templated google-cloud READMEs, many of them within k.
    let query = "google cloud client library";
    let out = neardup(&["search", p(&dir), query, "-n", "5", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let groups = json_lines(&out);
    assert!(!groups.is_empty() && groups.len() <= 5);
    let out = neardup(&[
        "search",
        p(&dir),
        query,
        "-n",
        "200",
        "--no-collapse",
        "--json",
    ]);
    let all = json_lines(&out);
    // The best hit leads the first group (among hits tied on the score, the collapse picks by
    // fingerprint, `TopDocs` by address).
    assert_eq!(groups[0]["score"], all[0]["score"]);
    let tied: Vec<&Value> = all
        .iter()
        .filter(|h| h["score"] == all[0]["score"])
        .collect();
    assert!(tied.iter().any(|h| h["id"] == groups[0]["id"]));
    let mut folded = 0;
    for (i, g) in groups.iter().enumerate() {
        let leader = sig_of(g["id"].as_str().unwrap());
        let members = g["members"].as_array().unwrap();
        assert!(g["group_size"].as_u64().unwrap() as usize > members.len());
        for m in members {
            // Every member is matched by the rule with its leader, with that evidence.
            let evidence = rule.matches(leader, sig_of(m["id"].as_str().unwrap()));
            let evidence = evidence.expect("a member the rule does not match with its leader");
            assert_eq!(m["distance"].as_u64().unwrap() as u32, evidence.distance());
            assert_eq!(
                m["resemblance"].as_f64().map(|r| r as f32),
                evidence.resemblance()
            );
            folded += 1;
        }
        for h in &groups[..i] {
            let other = sig_of(h["id"].as_str().unwrap());
            assert!(
                rule.matches(leader, other).is_none(),
                "leaders do not match"
            );
        }
    }
    assert!(folded > 0, "the query must fold near-duplicates");
    // Without collapse the same hits come one by one.
    let out = neardup(&[
        "search",
        p(&dir),
        query,
        "-n",
        "5",
        "--no-collapse",
        "--json",
    ]);
    assert_eq!(json_lines(&out).len(), 5);
}

#[test]
fn search_distinct_field_gives_one_result_per_host() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ix");
    let out = index_sample(&dir, &["--dedup", "off"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let query = "google cloud client library";
    // The oracle: every hit, one by one, with its host.
    let out = neardup(&[
        "search",
        p(&dir),
        query,
        "-n",
        "100000",
        "--no-collapse",
        "--json",
    ]);
    let all = json_lines(&out);
    let mut best: std::collections::HashMap<String, (f64, usize)> = Default::default();
    for h in &all {
        let entry = best
            .entry(h["host"].as_str().unwrap().to_string())
            .or_insert((f64::MIN, 0));
        entry.0 = entry.0.max(h["score"].as_f64().unwrap());
        entry.1 += 1;
    }
    assert!(best.len() > 3 && best.values().any(|b| b.1 > 1));
    let n = 3;
    let out = neardup(&[
        "search",
        p(&dir),
        query,
        "-n",
        "3",
        "--distinct-field",
        "host",
        "--json",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let groups = json_lines(&out);
    assert_eq!(groups.len(), n);
    let mut scores: Vec<f64> = best.values().map(|b| b.0).collect();
    scores.sort_by(|a, b| b.total_cmp(a));
    for (g, want_score) in groups.iter().zip(&scores) {
        let host = g["host"].as_str().unwrap();
        // The leader is the host's best hit, in rank order of the hosts' best hits; the
        // group counts every hit of the host.
        assert_eq!(g["distinct_value"], host);
        assert_eq!(g["score"].as_f64().unwrap(), *want_score);
        assert_eq!(g["score"].as_f64().unwrap(), best[host].0);
        assert_eq!(g["group_size"].as_u64().unwrap() as usize, best[host].1);
        assert_eq!(g["group_size_exact"], true);
    }
    // In text, the group line names the field.
    let out = neardup(&[
        "search",
        p(&dir),
        query,
        "-n",
        "3",
        "--distinct-field",
        "host",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_stdout_has(&out, "more with host");
    // A field that is not fast is an error that says what to do.
    let out = neardup(&["search", p(&dir), query, "--distinct-field", "text"]);
    assert_ne!(code(&out), 0);
    assert_stderr_has(&out, "not a fast field");
    let out = neardup(&[
        "search",
        p(&dir),
        query,
        "--distinct-field",
        "host",
        "--no-collapse",
    ]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}

/// Indexes `docs` (id, host, text) one `neardup index` run each, so that the order they were
/// added in (the order `--leader` reads) is the order of `docs`.
fn index_one_by_one(dir: &Path, docs: &[(&str, &str, String)]) {
    let tmp = tempfile::tempdir().unwrap();
    for (id, host, text) in docs {
        let input = tmp.path().join(format!("{id}.jsonl"));
        let line = serde_json::json!({ "id": id, "host": host, "text": text });
        std::fs::write(&input, format!("{line}\n")).unwrap();
        let out = index_file(&input, dir, &["--dedup", "off", "--json", "-q"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
}

fn ids_of(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .map(|l| l["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn search_leader_and_derank_follow_the_insertion_order_and_the_ranked_list() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ix");
    // Hosts a, b, c; the number of "zephyr"s (same length otherwise) ranks a1 > b2 > c1 > a3 >
    // b1 > a2, while they are added in another order. The filler words differ per document.
    let zephyr = |tf: usize, seed: usize| {
        let filler: Vec<String> = (0..20 - tf).map(|w| format!("w{seed}x{w}")).collect();
        format!("{}{}", "zephyr ".repeat(tf), filler.join(" "))
    };
    let paragraph = "Permission is hereby granted, free of charge, to any person obtaining a copy \
                     of this quokka software, to deal in it without restriction, including the \
                     rights to use, copy, modify, merge, publish and distribute it.";
    let docs = vec![
        ("b2", "b.example", zephyr(5, 0)),
        ("q-b", "q.example", paragraph.to_string()),
        ("a3", "a.example", zephyr(3, 1)),
        ("c1", "c.example", zephyr(4, 2)),
        ("q-c", "q.example", paragraph.to_string()),
        ("a1", "a.example", zephyr(6, 3)),
        (
            "q-other",
            "r.example",
            "A field guide to the quokka of Rottnest Island.".to_string(),
        ),
        ("b1", "b.example", zephyr(2, 4)),
        ("q-a", "q.example", paragraph.to_string()),
        ("a2", "a.example", zephyr(1, 5)),
    ];
    index_one_by_one(&dir, &docs);
    let added = |id: &str| docs.iter().position(|d| d.0 == id).unwrap();
    let search = |query: &str, extra: &[&str]| {
        let mut args = vec!["search", p(&dir), query, "--json"];
        args.extend_from_slice(extra);
        let out = neardup(&args);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        json_lines(&out)
    };

    // The oracle: every hit, ranked, ungrouped.
    let all = search("zephyr", &["-n", "100", "--no-collapse"]);
    assert_eq!(all.len(), 6);
    let host_of = |id: &str| docs[added(id)].1;
    for limit in [1usize, 10] {
        for (flag, newest) in [
            (None, false),
            (Some("newest"), true),
            (Some("oldest"), false),
        ] {
            // Groups by host, in rank order of their best hits; the leader: the best-ranked
            // hit, or the host's document added last / first.
            let mut hosts: Vec<&str> = Vec::new();
            for id in ids_of(&all) {
                if !hosts.contains(&host_of(&id)) {
                    hosts.push(host_of(&id));
                }
            }
            hosts.truncate(limit);
            let hits_of = |host: &str| -> Vec<String> {
                ids_of(&all)
                    .into_iter()
                    .filter(|id| host_of(id) == host)
                    .collect()
            };
            let leaders: Vec<String> = hosts
                .iter()
                .map(|h| {
                    let hits = hits_of(h);
                    match flag {
                        None => hits[0].clone(),
                        Some(_) => {
                            let by_age = hits.iter().map(|id| (added(id), id));
                            let chosen = if newest { by_age.max() } else { by_age.min() };
                            chosen.unwrap().1.clone()
                        }
                    }
                })
                .collect();
            let moved: Vec<String> = ids_of(&all)
                .into_iter()
                .filter(|id| hosts.contains(&host_of(id)) && !leaders.contains(id))
                .collect();
            let n = limit.to_string();
            let mut extra = vec!["-n", n.as_str(), "--distinct-field", "host"];
            if let Some(flag) = flag {
                extra.extend(["--leader", flag]);
            }
            let groups = search("zephyr", &extra);
            assert_eq!(ids_of(&groups), leaders, "{flag:?} -n {limit}");
            for g in &groups {
                let host = g["host"].as_str().unwrap();
                assert_eq!(
                    g["group_size"].as_u64().unwrap() as usize,
                    hits_of(host).len()
                );
            }
            extra.push("--derank");
            let flat = search("zephyr", &extra);
            let want: Vec<String> = leaders.iter().chain(&moved).cloned().collect();
            assert_eq!(ids_of(&flat), want, "derank {flag:?} -n {limit}");
            for (i, line) in flat.iter().enumerate() {
                assert_eq!(line["rank"].as_u64().unwrap() as usize, i + 1);
                let id = line["id"].as_str().unwrap();
                let oracle = all.iter().find(|h| h["id"] == id).unwrap();
                assert_eq!(line["score"], oracle["score"]);
                assert_eq!(line["moved"], i >= leaders.len());
                // A moved hit names the leader of its host's group.
                let leader = leaders.iter().find(|l| host_of(l) == host_of(id)).unwrap();
                match i >= leaders.len() {
                    true => assert_eq!(line["leader_id"], leader.as_str()),
                    false => assert!(line.get("leader_id").is_none()),
                }
            }
        }
    }
    // The case the flags were made for: three identical copies (near-duplicates by the rule)
    // added as q-b, q-c, q-a.
    for (flag, want) in [("newest", "q-a"), ("oldest", "q-b")] {
        let groups = search("quokka", &["--leader", flag]);
        let copies = groups.iter().find(|g| g["group_size"] == 3).unwrap();
        assert_eq!(copies["id"], want, "--leader {flag}");
        let mut members: Vec<&str> = copies["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap())
            .collect();
        members.sort();
        let mut others: Vec<&str> = ["q-a", "q-b", "q-c"]
            .into_iter()
            .filter(|c| *c != want)
            .collect();
        others.sort();
        assert_eq!(members, others);
        let flat = search("quokka", &["--leader", flag, "--derank"]);
        assert_eq!(flat.len(), 4);
        let mut moved: Vec<&str> = flat[2..]
            .iter()
            .map(|l| {
                assert_eq!(l["moved"], true);
                assert_eq!(l["leader_id"], want);
                l["id"].as_str().unwrap()
            })
            .collect();
        moved.sort();
        assert_eq!(moved, others);
        assert!(flat[..2].iter().any(|l| l["id"] == want));
    }
    // In text, a moved hit says where it comes from.
    let out = neardup(&[
        "search",
        p(&dir),
        "quokka",
        "--leader",
        "newest",
        "--derank",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_stdout_has(&out, "moved: a near-duplicate of q-a");
    // Flags that make no sense together are usage errors (exit 2) that name the flags.
    for (extra, needle) in [
        (
            &["--leader", "newest", "--no-collapse"][..],
            "--no-collapse",
        ),
        (&["--derank", "--no-collapse"][..], "--no-collapse"),
        (&["--leader", "latest"][..], "newest"),
    ] {
        let mut args = vec!["search", p(&dir), "quokka"];
        args.extend_from_slice(extra);
        let out = neardup(&args);
        assert_eq!(code(&out), 2, "{extra:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{extra:?}: {}", stderr(&out));
    }
}

#[test]
fn mirrors_finds_the_mirror_hosts_of_the_fixture() {
    // The fixture holds 24 pages of help.srccode.edu (an original) and their copies on two full
    // mirrors, 24 pages of an unrelated host, and natural documents (mirrors-truth.json).
    let mirrors = ["archive.dausfa.de", "help.srccode.edu", "rikomimo.in"];
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ix");
    let out = index_sample(&dir, &["--dedup", "off"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));

    let out = neardup(&["mirrors", p(&dir), "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let pairs = json_lines(&out);
    let mut found: Vec<(String, String)> = pairs
        .iter()
        .filter(|v| {
            mirrors.contains(&v["host_a"].as_str().unwrap())
                || mirrors.contains(&v["host_b"].as_str().unwrap())
        })
        .map(|v| {
            assert_eq!(v["is_mirror"], true);
            (
                v["host_a"].as_str().unwrap().to_string(),
                v["host_b"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    found.sort();
    let want: Vec<(String, String)> = vec![
        ("archive.dausfa.de".into(), "help.srccode.edu".into()),
        ("archive.dausfa.de".into(), "rikomimo.in".into()),
        ("help.srccode.edu".into(), "rikomimo.in".into()),
    ];
    assert_eq!(found, want);
    assert!(pairs
        .iter()
        .all(|v| v["host_a"] != "kb.raordari50.nl" && v["host_b"] != "kb.raordari50.nl"));

    let out = neardup(&["mirrors", p(&dir), "--host", "help.srccode.edu", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let mut copies: Vec<String> = json_lines(&out)
        .iter()
        .map(|v| {
            assert_eq!(v["host_a"], "help.srccode.edu");
            v["host_b"].as_str().unwrap().to_string()
        })
        .collect();
    copies.sort();
    assert_eq!(copies, ["archive.dausfa.de", "rikomimo.in"]);
    let out = neardup(&["mirrors", p(&dir), "--host", "no.such.host"]);
    assert_eq!(code(&out), 1);
    assert_stderr_has(&out, "no page of");
    let out = neardup(&["mirrors", p(&dir)]);
    assert_stdout_has(&out, "help.srccode.edu");
}

/// A pair of ids with the rule's evidence: (smaller id, larger id, distance, resemblance).
type RulePair = (String, String, u32, Option<String>);

/// The same pairs, ids and distances equal and resemblance estimates equal to the printed three
/// decimals: 4-bit sketches give estimates like 0.8375 exactly, which JSON (shortest `f32`
/// digits, read back as `f64`) rounds up and `{:.3}` of the `f32` itself rounds down.
fn assert_same_pairs(got: &[RulePair], expected: &[RulePair]) {
    let key = |p: &RulePair| (p.0.clone(), p.1.clone(), p.2);
    assert_eq!(
        got.iter().map(key).collect::<Vec<_>>(),
        expected.iter().map(key).collect::<Vec<_>>()
    );
    for (g, e) in got.iter().zip(expected) {
        match (&g.3, &e.3) {
            (None, None) => {}
            (Some(a), Some(b)) => {
                let (a, b): (f64, f64) = (a.parse().unwrap(), b.parse().unwrap());
                assert!((a - b).abs() < 0.0011, "{g:?} against {e:?}");
            }
            _ => panic!("{g:?} against {e:?}"),
        }
    }
}

/// Every pair of sample documents the rule matches (its simhash branch narrowed to `k`), by
/// brute force of `MatchRule::matches_within`.
fn brute_pairs(
    docs: &[(String, String)],
    rule: &MatchRule,
    sigs: &[Signature],
    k: u32,
) -> Vec<RulePair> {
    let mut pairs = Vec::new();
    for i in 0..sigs.len() {
        for j in i + 1..sigs.len() {
            if let Some(e) = rule.matches_within(&sigs[i], &sigs[j], k) {
                let (a, b) = (&docs[i].0, &docs[j].0);
                let r = e.resemblance().map(|r| format!("{r:.3}"));
                pairs.push((a.min(b).clone(), a.max(b).clone(), e.distance(), r));
            }
        }
    }
    pairs.sort();
    pairs
}

#[test]
fn pairs_and_clusters_agree_with_brute_force() {
    let docs = sample_docs();
    let (rule, sigs) = signatures(&docs);
    let expected = brute_pairs(&docs, &rule, &sigs, K);
    assert!(expected.iter().any(|p| p.3.is_none()) && expected.iter().any(|p| p.3.is_some()));
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ix");
    let out = index_sample(&dir, &["--dedup", "off"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));

    let out = neardup(&["pairs", p(&dir), "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let mut got: Vec<RulePair> = json_lines(&out)
        .iter()
        .map(|v| {
            let branch = v["match"].as_str().unwrap();
            let resemblance = v["resemblance"].as_f64().map(|r| format!("{r:.3}"));
            assert_eq!(branch == "resemblance", resemblance.is_some(), "{v}");
            (
                v["a"].as_str().unwrap().to_string(),
                v["b"].as_str().unwrap().to_string(),
                v["distance"].as_u64().unwrap() as u32,
                resemblance,
            )
        })
        .collect();
    got.sort();
    assert_same_pairs(&got, &expected);
    // The TSV lines say the same: distance, id, id, resemblance (or "-").
    let out = neardup(&["pairs", p(&dir)]);
    let mut tsv: Vec<RulePair> = stdout(&out)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 4, "{l}");
            let r = (f[3] != "-").then(|| f[3].to_string());
            (f[1].to_string(), f[2].to_string(), f[0].parse().unwrap(), r)
        })
        .collect();
    tsv.sort();
    assert_same_pairs(&tsv, &expected);
    // A smaller k narrows the simhash branch only; --limit cuts the output.
    let out = neardup(&["pairs", p(&dir), "-k", "1", "--json"]);
    let n1 = brute_pairs(&docs, &rule, &sigs, 1).len();
    assert_eq!(json_lines(&out).len(), n1);
    let out = neardup(&["pairs", p(&dir), "--limit", "2", "--json"]);
    assert_eq!(json_lines(&out).len(), 2.min(expected.len()));
    let out = neardup(&["pairs", p(&dir), "-k", "4"]);
    assert_eq!(code(&out), 2, "k beyond the layout is a usage error");
    // --min-resemblance keeps the pairs whose sketches estimate at least it, whichever branch
    // matched (an empty sketch has no estimate and stays), and says how many it left out.
    let minhash = *rule.minhash();
    let sig_of = |id: &str| &sigs[docs.iter().position(|(d, _)| d == id).unwrap()];
    for min in ["0.67", "0.9"] {
        let floor: f32 = min.parse().unwrap();
        let kept: Vec<RulePair> = expected
            .iter()
            .filter(|(a, b, _, _)| {
                let (x, y) = (sig_of(a), sig_of(b));
                x.sketch.is_empty()
                    || y.sketch.is_empty()
                    || x.sketch.resemblance(&y.sketch, &minhash) >= floor
            })
            .cloned()
            .collect();
        let out = neardup(&["pairs", p(&dir), "--json", "--min-resemblance", min]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let mut got: Vec<(String, String)> = json_lines(&out)
            .iter()
            .map(|v| {
                (
                    v["a"].as_str().unwrap().into(),
                    v["b"].as_str().unwrap().into(),
                )
            })
            .collect();
        got.sort();
        let want: Vec<(String, String)> = kept.iter().map(|k| (k.0.clone(), k.1.clone())).collect();
        assert_eq!(got, want, "--min-resemblance {min}");
        let left_out = expected.len() - kept.len();
        assert!(
            stderr(&out).contains(&format!("{left_out} pair")),
            "{}",
            stderr(&out)
        );
        if min == "0.9" {
            assert!(
                left_out > 0 && !kept.is_empty(),
                "{left_out} of {}",
                expected.len()
            );
        }
    }
    let out = neardup(&["pairs", p(&dir), "--min-resemblance", "1.5"]);
    assert_ne!(code(&out), 0);
    assert!(
        stderr(&out).contains("expected a number in 0..=1"),
        "{}",
        stderr(&out)
    );

    // Clusters: connected components of the brute-force pairs.
    let index_of = |id: &str| docs.iter().position(|(d, _)| d == id).unwrap();
    let mut parent: Vec<usize> = (0..docs.len()).collect();
    fn find(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            x = parent[x];
        }
        x
    }
    for (a, b, _, _) in &expected {
        let (ra, rb) = (
            find(&mut parent, index_of(a)),
            find(&mut parent, index_of(b)),
        );
        parent[ra.max(rb)] = ra.min(rb);
    }
    let mut components: std::collections::BTreeMap<usize, Vec<String>> = Default::default();
    for (i, (id, _)) in docs.iter().enumerate() {
        let r = find(&mut parent, i);
        components.entry(r).or_default().push(id.clone());
    }
    let mut want: Vec<Vec<String>> = components
        .into_values()
        .filter(|c| c.len() >= 2)
        .map(|mut c| {
            c.sort();
            c
        })
        .collect();
    want.sort();
    let out = neardup(&[
        "clusters",
        p(&dir),
        "--limit",
        "0",
        "--mode",
        "components",
        "--json",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let lines = json_lines(&out);
    let sizes: Vec<u64> = lines.iter().map(|v| v["size"].as_u64().unwrap()).collect();
    assert!(sizes.windows(2).all(|w| w[0] >= w[1]), "largest first");
    let mut got: Vec<Vec<String>> = lines
        .iter()
        .map(|v| {
            let mut m: Vec<String> = v["members"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_str().unwrap().to_string())
                .collect();
            m.sort();
            assert_eq!(
                v["cluster"].as_str().unwrap(),
                m[0],
                "named by the smallest id"
            );
            m
        })
        .collect();
    got.sort();
    assert_eq!(got, want);

    // Clusters by leader (the default): in input order, each document joins the first
    // earlier leader it is paired with, else leads.
    let paired: BTreeSet<(&str, &str)> = expected
        .iter()
        .flat_map(|(a, b, _, _)| [(a.as_str(), b.as_str()), (b.as_str(), a.as_str())])
        .collect();
    let mut leaders: Vec<(&str, Vec<String>)> = Vec::new();
    for (id, _) in &docs {
        match leaders
            .iter_mut()
            .find(|(l, _)| paired.contains(&(*l, id.as_str())))
        {
            Some((_, members)) => members.push(id.clone()),
            None => leaders.push((id, vec![id.clone()])),
        }
    }
    let mut want: Vec<(String, Vec<String>)> = leaders
        .into_iter()
        .filter(|(_, m)| m.len() >= 2)
        .map(|(l, m)| (l.to_string(), m))
        .collect();
    want.sort();
    let out = neardup(&["clusters", p(&dir), "--limit", "0", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let mut got: Vec<(String, Vec<String>)> = json_lines(&out)
        .iter()
        .map(|v| {
            let m: Vec<String> = v["members"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_str().unwrap().to_string())
                .collect();
            (v["cluster"].as_str().unwrap().to_string(), m)
        })
        .collect();
    got.sort();
    assert_eq!(got, want);
}

/// `stats` shows the rule and its keys as the library reads them from the index.
#[test]
fn stats_shows_the_rule_and_its_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("idx");
    let out = index_sample(&dir, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let store = tantivy_simhash::app::open(&dir).unwrap();
    let rule = store.index.rule().to_string();
    let keys = store.index.rule().keys_per_document();
    drop(store);
    let out = neardup(&["stats", p(&dir), "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let stats = &json_lines(&out)[0];
    assert_eq!(stats["rule"], rule.as_str());
    assert_eq!(stats["keys_per_document"], keys);
    let out = neardup(&["stats", p(&dir)]);
    assert_stdout_has(&out, &format!("rule       {rule}\n"));
    assert_stdout_has(
        &out,
        &format!("keys       {keys} per document, in sorted tables"),
    );
}
