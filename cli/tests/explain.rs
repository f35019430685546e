//! `neardup explain` against the library's `NearDupIndex::explain_ids`: the same verdict,
//! alignment and resemblance; usage and unknown ids.

use std::process::Command;

/// Twelve texts: four bases, each with two edited copies (one under site chrome).
fn texts() -> Vec<String> {
    let bases = [
        "the index stores one signature per document in columns and the keys in sorted tables \
         so that a lookup reads a few postings and verifies each candidate by the match rule",
        "a crawler that keeps one page per cluster must trust that every member really is a copy \
         of the page it keeps otherwise distinct texts are lost without anyone noticing them",
        "release notes for the second version list the changes to the command line the python \
         package and the batch jobs together with the measured costs of each of them on two cores",
        "licence texts differ in names years and formatting while their bodies stay the same so \
         resemblance of word shingles is high and the simhash distance is often small as well",
    ];
    let mut out = Vec::new();
    for (i, b) in bases.iter().enumerate() {
        out.push(b.to_string());
        out.push(b.replacen("the", "a", 2 + i));
        out.push(format!(
            "Daily Site\nhome | docs | blog | contact\n\n{}\n\n(c) 2024 Daily Site",
            b.replacen(" and ", " or ", 1)
        ));
    }
    out
}

#[test]
fn the_command_line_prints_the_library_explanation() {
    let bin = env!("CARGO_BIN_EXE_neardup");
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("docs.jsonl");
    let texts = texts();
    let lines: Vec<String> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            serde_json::json!({"id": format!("d{i}"), "title": format!("doc {i}"), "text": t})
                .to_string()
        })
        .collect();
    std::fs::write(&input, lines.join("\n")).unwrap();
    let dir = tmp.path().join("ix");
    let run = |args: &[&str]| Command::new(bin).args(args).output().unwrap();
    let out = run(&[
        "index",
        input.to_str().unwrap(),
        "--index",
        dir.to_str().unwrap(),
        "-q",
        "--dedup",
        "off",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = tantivy_simhash::app::open(&dir).unwrap();
    let searcher = store.index.lookups().unwrap();
    for (a, b) in [("d0", "d1"), ("d2", "d7"), ("d3", "d11")] {
        let out = run(&["explain", dir.to_str().unwrap(), a, b, "--json"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let lib = store.index.explain_ids(&searcher, a, b).unwrap();
        assert_eq!(v["verdict"], lib.to_json()["verdict"]);
        assert_eq!(v["alignment"], lib.to_json()["alignment"]);
        assert!(
            (v["words"]["resemblance"].as_f64().unwrap() - lib.words.resemblance).abs() < 1e-12
        );
        // The human form states the verdict and the diff markers.
        let out = run(&["explain", dir.to_str().unwrap(), a, b, "--color", "never"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&lib.summary()), "{text}");
    }
    // Two texts instead of ids.
    let out = run(&[
        "explain",
        dir.to_str().unwrap(),
        "--text",
        &texts[0],
        "--text",
        &texts[1],
        "--json",
    ]);
    assert!(out.status.success());
    // One id is a usage error (2); an unknown id an error (1) that names it.
    assert_eq!(
        run(&["explain", dir.to_str().unwrap(), "d0"]).status.code(),
        Some(2)
    );
    let out = run(&["explain", dir.to_str().unwrap(), "d0", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`nope`"));
}
