//! Reruns of `neardup index` give the index of one uninterrupted run: after a bad line, under
//! every policy, and after SIGKILLs at several points of a run (the crash test: what was
//! committed is a prefix of the input, the index opens, a rerun completes it exactly once).
//! The reference is always a fresh, uninterrupted run over the same (fixed) input.

mod cli_support;
#[path = "../../tests/common/mod.rs"]
mod common;

use cli_support::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;
use tantivy::Index;
use tantivy_simhash::NearDupIndex;

const POLICIES: [&str; 4] = ["off", "reject", "tag", "replace"];

/// What an index holds: each live document's id and group (`None` when not tagged).
fn contents(dir: &Path) -> BTreeMap<String, Option<String>> {
    let index = NearDupIndex::open_recorded(Index::open_in_dir(dir).unwrap()).unwrap();
    common::live_ids_and_groups(&index.lookups().unwrap())
}

fn index(input: &Path, dir: &Path, policy: &str) -> Output {
    neardup(&[
        "index",
        p(input),
        "--index",
        p(dir),
        "--dedup",
        policy,
        "-q",
        "--json",
    ])
}

const LICENCE: &str = "Permission is hereby granted, free of charge, to any person obtaining a \
    copy of this software and associated documentation files, to deal in the Software without \
    restriction, including without limitation the rights to use, copy, modify, merge, publish, \
    distribute, sublicense, and sell copies of the Software, subject to the following conditions: \
    the above copyright notice and this permission notice shall be included in all copies.";
const RECIPE: &str = "Whisk the eggs with sugar until pale, fold in the flour and melted butter, \
    pour the batter into a buttered tin and bake for forty minutes until a skewer comes out \
    clean; let the cake cool on a rack before you cut it into slices and serve it with cream.";

#[test]
fn a_rerun_after_a_bad_line_gives_the_index_of_one_uninterrupted_run() {
    let tmp = tempfile::tempdir().unwrap();
    // A, B (A lightly edited), a bad line, C, D (C edited), E (A again, another edit).
    let lines = |third: String| {
        vec![
            doc_line("A", LICENCE),
            doc_line("B", &LICENCE.to_uppercase().replace(", ", ",  ")),
            third,
            doc_line("C", RECIPE),
            doc_line("D", &RECIPE.replace("forty", "forty-five")),
            doc_line("E", &format!("  {LICENCE}  ")),
        ]
    };
    let broken = tmp.path().join("broken.jsonl");
    write_lines(&broken, &lines("{\"id\": \"X\", \"text\": ".into()));
    let fixed = tmp.path().join("fixed.jsonl");
    write_lines(
        &fixed,
        &lines(doc_line("X", "a short note about something else entirely")),
    );
    for policy in POLICIES {
        let reference = tmp.path().join(format!("reference-{policy}"));
        let out = index(&fixed, &reference, policy);
        assert_eq!(code(&out), 0, "{policy}: {}", stderr(&out));
        let expected = contents(&reference);

        let dir = tmp.path().join(format!("rerun-{policy}"));
        let out = index(&broken, &dir, policy);
        assert_eq!(code(&out), 1, "{policy}: the bad line stops the run");
        // Fix the line, rerun the same command; and once more, which must change nothing.
        std::fs::copy(&fixed, &broken).unwrap();
        for round in 1..=2 {
            let out = index(&broken, &dir, policy);
            assert_eq!(code(&out), 0, "{policy}: {}", stderr(&out));
            assert_eq!(
                contents(&dir),
                expected,
                "{policy}: rerun {round} differs from one uninterrupted run"
            );
        }
        write_lines(&broken, &lines("{\"id\": \"X\", \"text\": ".into()));
    }
}

/// `n` documents in families of near-duplicates (each a base text with one word changed), so
/// that every policy has work to do.
fn family_docs(n: usize) -> Vec<String> {
    let words = [
        "amber", "basalt", "cedar", "dune", "ember", "fjord", "glacier", "heath", "inlet", "jetty",
        "kelp", "lagoon", "moss", "nettle", "oak", "pebble", "quartz", "reed", "sorrel", "tundra",
        "umber", "vale", "willow", "yarrow", "zephyr", "alder", "bramble", "cliff", "delta", "elm",
    ];
    (0..n)
        .map(|i| {
            let family = i % 400;
            let mut text: Vec<&str> = (0..48)
                .map(|j| words[(family * 31 + j * j * 7 + j * 3) % words.len()])
                .collect();
            let variant = i / 400;
            text[(variant * 11) % 48] = words[(variant * 13 + 5) % words.len()];
            doc_line(
                &format!("doc-{i:05}"),
                &format!("{} family {family}", text.join(" ")),
            )
        })
        .collect()
}

/// The opstamp of the last commit (0 before the first), read from tantivy's `meta.json`.
fn committed_opstamp(dir: &Path) -> u64 {
    std::fs::read_to_string(dir.join("meta.json"))
        .ok()
        .and_then(|m| serde_json::from_str::<Value>(&m).ok())
        .and_then(|m| m["opstamp"].as_u64())
        .unwrap_or(0)
}

/// The crash test: SIGKILL a run once it has committed `after` operations (or at once, for 0;
/// or when it ends by itself), then check what is left and rerun.
#[cfg(unix)]
#[test]
fn sigkill_at_several_points_loses_only_uncommitted_work_and_a_rerun_completes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("families.jsonl");
    let lines = family_docs(3000);
    write_lines(&input, &lines);
    let position: BTreeMap<String, usize> = (0..lines.len())
        .map(|i| (format!("doc-{i:05}"), i))
        .collect();
    for policy in ["tag", "replace"] {
        let reference = tmp.path().join(format!("reference-{policy}"));
        let out = index(&input, &reference, policy);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let expected = contents(&reference);
        for after in [0, 1, 600, 1500] {
            let dir = tmp.path().join(format!("killed-{policy}-{after}"));
            let mut child = Command::new(BIN)
                .args(["index", p(&input), "--index", p(&dir), "--dedup", policy])
                .args(["--commit-every", "256", "-q"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            while after > 0 && committed_opstamp(&dir) < after {
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            child.kill().unwrap();
            child.wait().unwrap();

            let label = format!("{policy}, killed after opstamp {after}");
            if dir.join("meta.json").exists() && committed_opstamp(&dir) > 0 {
                // The index opens, and what it holds was read before anything it lacks.
                let out = neardup(&["stats", p(&dir), "--json"]);
                assert_eq!(code(&out), 0, "{label}: {}", stderr(&out));
                let held = contents(&dir);
                let last = held.keys().map(|id| position[id]).max().unwrap_or(0);
                if policy == "tag" {
                    // Nothing is deleted under tag: the committed documents are exactly the
                    // first ones of the input, with the groups of the uninterrupted run.
                    assert_eq!(held.len(), last + 1, "{label}: not a prefix");
                    for (id, group) in &held {
                        // A document's group depends only on the documents before it.
                        assert_eq!(group, &expected[id], "{label}: {id}");
                    }
                }
            }
            let out = index(&input, &dir, policy);
            assert_eq!(code(&out), 0, "{label}: the rerun: {}", stderr(&out));
            assert_eq!(
                contents(&dir),
                expected,
                "{label}: the rerun differs from one run"
            );
            let out = index(&input, &dir, policy);
            let summary: Value =
                serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap())
                    .unwrap();
            assert_eq!(summary["added"], 0, "{label}: a second rerun adds nothing");
        }
    }
}

#[test]
fn two_fresh_runs_with_several_threads_give_the_same_groups() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("families.jsonl");
    write_lines(&input, &family_docs(2000));
    let mut seen = Vec::new();
    for run in 0..2 {
        let dir = tmp.path().join(format!("run{run}"));
        let out = neardup(&[
            "index",
            p(&input),
            "--index",
            p(&dir),
            "--memory-mb",
            "64",
            "--commit-every",
            "256",
            "-q",
        ]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        seen.push(contents(&dir));
    }
    assert!(seen[0].values().filter(|g| g.is_some()).count() == seen[0].len());
    assert_eq!(seen[0], seen[1]);
}
