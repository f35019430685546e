//! The `neardup` binary as a new user meets it (issue 28): a closed pipe, a mistyped field, long
//! ids, a read-only index, a named pipe, huge limits, large texts, output order and messages.
//! Oracles are the inputs themselves (ids, counts) and other commands of the same binary.

mod cli_support;

use cli_support::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};

/// A text of `words` pseudo-random words (a small LCG seeded by `seed`): texts of two seeds
/// share almost nothing, so only copies of one text are near-duplicates.
fn text(seed: u64, words: usize) -> String {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out = String::new();
    for _ in 0..words {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let len = 3 + (x >> 60) as usize % 6;
        if !out.is_empty() {
            out.push(' ');
        }
        for i in 0..len {
            out.push((b'a' + ((x >> (8 + 5 * i)) % 26) as u8) as char);
        }
    }
    out
}

/// `n` documents, each text twice (ids `a<i>` and `b<i>`): with `--dedup tag` every `b` is a
/// tagged near-duplicate, so `index --json` writes an event for half of them.
fn copies_input(path: &Path, n: u64) {
    let lines: Vec<String> = (0..n)
        .flat_map(|i| {
            let t = text(i, 40);
            [
                doc_line(&format!("a{i}"), &t),
                doc_line(&format!("b{i}"), &t),
            ]
        })
        .collect();
    write_lines(path, &lines);
}

/// The number of documents `stats --json` reports.
fn documents(dir: &Path) -> u64 {
    let out = neardup(&["stats", p(dir), "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    json_lines(&out)[0]["documents"]
        .as_u64()
        .expect("a document count")
}

#[test]
fn a_closed_stdout_commits_what_was_read_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("docs.jsonl");
    let dir = tmp.path().join("idx");
    copies_input(&input, 2000);
    // Stdout is a pipe whose reader is gone before the first event is written.
    let mut child = Command::new(BIN)
        .args(["index", p(&input), "--index", p(&dir), "--json", "-q"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 141, "{}", stderr(&out));
    assert_stderr_has(&out, "stdout was closed");
    assert_stderr_has(&out, "committed everything read up to");
    let first = documents(&dir);
    assert!(first > 0, "the run lost everything it indexed");
    // The same command, its output read to the end, completes the input exactly once.
    let out = neardup(&["index", p(&input), "--index", p(&dir), "--json", "-q"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let summary = json_lines(&out).pop().unwrap();
    assert_eq!(summary["skipped_existing_id"].as_u64(), Some(first));
    assert_eq!(documents(&dir), 4000);
}

#[test]
fn a_mistyped_field_of_a_failed_first_run_is_not_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("f.jsonl");
    let dir = tmp.path().join("idx");
    let lines: Vec<String> = (0..5)
        .map(|i| doc_line(&i.to_string(), &text(i, 30)))
        .collect();
    write_lines(&input, &lines);
    let out = neardup(&[
        "index",
        p(&input),
        "--index",
        p(&dir),
        "--text-field",
        "body",
        "-q",
    ]);
    assert_eq!(code(&out), 1);
    // The message names the fields the line has and the flag that chooses one.
    assert_stderr_has(
        &out,
        "no text field `body` (the line's fields: `id`, `text`)",
    );
    assert_stderr_has(&out, "--text-field");
    // The typo is not the index's mapping: the command without the flag works.
    index_quietly(&input, &dir, &["--json"]);
    assert_eq!(documents(&dir), 5);
    let stats = json_lines(&neardup(&["stats", p(&dir), "--json"]))[0].clone();
    assert_eq!(stats["fields"]["text"], "text");
    // Once documents were committed with a mapping, it is the index's default.
    let other = tmp.path().join("g.jsonl");
    let body: Vec<String> = (5..8)
        .map(|i| serde_json::json!({"id": i.to_string(), "body": text(i, 30)}).to_string())
        .collect();
    write_lines(&other, &body);
    let fresh = tmp.path().join("idx2");
    let out = neardup(&[
        "index",
        p(&other),
        "--index",
        p(&fresh),
        "--text-field",
        "body",
        "-q",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    index_quietly(&other, &fresh, &[]);
    assert_eq!(documents(&fresh), 3);
}

#[test]
fn ids_longer_than_the_limit_are_bad_lines_and_reruns_add_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("long.jsonl");
    let dir = tmp.path().join("idx");
    let limit = tantivy_simhash::MAX_ID_BYTES;
    let longest = "i".repeat(limit);
    let lines = vec![
        doc_line("short", &text(1, 30)),
        doc_line(&longest, &text(2, 30)),
        doc_line(&"j".repeat(limit + 1), &text(3, 30)),
        doc_line(&"k".repeat(100_000), &text(4, 30)),
        doc_line(&"k".repeat(100_000), &text(5, 30)),
    ];
    write_lines(&input, &lines);
    for run in 0..3 {
        let out = neardup(&[
            "index",
            p(&input),
            "--index",
            p(&dir),
            "--skip-bad",
            "-q",
            "--json",
        ]);
        assert_eq!(code(&out), 3, "{}", stderr(&out));
        assert_stderr_has(&out, &format!("more than the {limit} an id can have"));
        let summary = json_lines(&out).pop().unwrap();
        assert_eq!(summary["skipped_bad"], 3);
        assert_eq!(summary["skipped_existing_id"], if run == 0 { 0 } else { 2 });
        assert_eq!(documents(&dir), 2, "run {run}");
    }
    // The longest accepted id is found by its id.
    let out = neardup(&["similar", p(&dir), "--id", &longest, "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// Runs the binary at `bin` as a user who may not write `dir`'s files: `nobody` through
/// `setpriv` when the tests run as root (root writes anywhere), else the current user.
fn run_unprivileged(bin: &Path, args: &[&str]) -> std::process::Output {
    let uid = Command::new("id").arg("-u").output().unwrap();
    let mut cmd = if String::from_utf8_lossy(&uid.stdout).trim() == "0" {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(bin);
        c
    } else {
        Command::new(bin)
    };
    cmd.args(args).output().expect("run neardup unprivileged")
}

/// Sets the permission bits of `path` and, for a directory, of everything under it.
fn chmod_tree(path: &Path, dir_mode: u32, file_mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).unwrap();
    let mode = if meta.is_dir() { dir_mode } else { file_mode };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    if meta.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            chmod_tree(&entry.unwrap().path(), dir_mode, file_mode);
        }
    }
}

#[test]
fn a_read_only_index_can_be_read() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("docs.jsonl");
    let dir = tmp.path().join("idx");
    copies_input(&input, 20);
    index_quietly(&input, &dir, &[]);
    // What each command prints while the index is writable: the oracle.
    let reads: [&[&str]; 6] = [
        &["stats", p(&dir), "--json"],
        &["search", p(&dir), "the", "--json"],
        &["similar", p(&dir), "--id", "a3", "--json"],
        &["pairs", p(&dir), "--json"],
        &["clusters", p(&dir), "--json"],
        &["mirrors", p(&dir), "--json"],
    ];
    let expected: Vec<String> = reads.iter().map(|args| stdout(&neardup(args))).collect();
    let bin = tmp.path().join("neardup");
    std::fs::copy(BIN, &bin).unwrap();
    chmod_tree(tmp.path(), 0o555, 0o444);
    std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o555)).unwrap();
    for (args, want) in reads.iter().zip(&expected) {
        let out = run_unprivileged(&bin, args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        let parse = |s: &str| -> Vec<Value> {
            s.lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        };
        assert_eq!(parse(&stdout(&out)), parse(want), "{args:?}");
    }
    let out = run_unprivileged(&bin, &["index", p(&input), "--index", p(&dir), "-q"]);
    assert_eq!(code(&out), 1);
    assert_stderr_has(&out, "adding documents needs write access");
    chmod_tree(tmp.path(), 0o755, 0o644);
}

#[test]
fn a_named_pipe_is_read_as_it_is_written() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("p");
    let dir = tmp.path().join("idx");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    // More than a pipe holds (64 KiB): the producer's write can only complete if neardup reads.
    let lines: Vec<String> = (0..600)
        .map(|i| doc_line(&i.to_string(), &text(i, 40)))
        .collect();
    let data = lines.join("\n") + "\n";
    assert!(data.len() > 1 << 17);
    let producer = {
        let (fifo, data) = (fifo.clone(), data.clone());
        std::thread::spawn(move || {
            // Opening blocks until neardup opens the pipe for reading. A reader that closes it
            // without reading makes the write fail (EPIPE), as it kills a shell's producer.
            let first = std::fs::OpenOptions::new()
                .write(true)
                .open(&fifo)
                .and_then(|mut f| f.write_all(data.as_bytes()));
            if first.is_err() {
                // Feed the real open, so that the test ends either way.
                let mut f = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
                f.write_all(data.as_bytes()).unwrap();
            }
            first.is_ok()
        })
    };
    index_quietly(&fifo, &dir, &[]);
    assert!(
        producer.join().unwrap(),
        "neardup opened and closed the pipe before reading it"
    );
    assert_eq!(documents(&dir), 600);
}

#[test]
fn a_limit_beyond_the_index_returns_every_result() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("docs.jsonl");
    let dir = tmp.path().join("idx");
    copies_input(&input, 20);
    index_quietly(&input, &dir, &[]);
    // A word of each text: every document matches, and -n 40 (the index's size) shows all.
    let query: Vec<String> = (0..20).map(|i| text(i, 1).to_string()).collect();
    let query = query.join(" ");
    for extra in [
        &[][..],
        &["--no-collapse"],
        &["--derank"],
        &["--leader", "newest"],
    ] {
        let search = |n: &str| {
            let mut args = vec!["search", p(&dir), &query, "--json", "-n", n];
            args.extend_from_slice(extra);
            let out = neardup(&args);
            assert_eq!(code(&out), 0, "-n {n} {extra:?}: {}", stderr(&out));
            stdout(&out)
        };
        let all = search("40");
        assert!(!all.is_empty());
        assert_eq!(search("1000000000"), all, "{extra:?}");
        assert_eq!(search("18446744073709551615"), all, "{extra:?}");
    }
}

#[test]
fn a_text_too_long_for_the_command_line_is_looked_up_from_a_file_or_stdin() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("docs.jsonl");
    let dir = tmp.path().join("idx");
    // Two documents of 2 MB each (beyond Linux's 128 KiB limit on one argument).
    let long = text(7, 400_000);
    assert!(long.len() > 2_000_000);
    let lines = vec![
        doc_line("long", &long),
        doc_line("copy", &long),
        doc_line("other", &text(8, 400_000)),
    ];
    write_lines(&input, &lines);
    index_quietly(&input, &dir, &[]);
    // The oracle: the document's own lookup (itself left out, so one match: its copy).
    let by_id = neardup(&["similar", p(&dir), "--id", "long", "--json"]);
    let ids = |out: &std::process::Output| -> Vec<String> {
        assert_eq!(code(out), 0, "{}", stderr(out));
        json_lines(out)
            .iter()
            .map(|v| v["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&by_id), ["copy"]);
    let page = tmp.path().join("page.txt");
    std::fs::write(&page, &long).unwrap();
    let from_file = neardup(&["similar", p(&dir), "--text-file", p(&page), "--json"]);
    assert_eq!(ids(&from_file), ["copy", "long"]);
    let mut child = Command::new(BIN)
        .args(["similar", p(&dir), "--text-file", "-", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(long.as_bytes())
        .unwrap();
    let from_stdin = child.wait_with_output().unwrap();
    assert_eq!(ids(&from_stdin), ids(&from_file));
}

#[test]
fn pairs_are_in_id_order_whatever_the_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("docs.jsonl");
    copies_input(&input, 300);
    // One segment, then many small ones (a commit every 7 documents, the input reversed).
    let one = tmp.path().join("one");
    let many = tmp.path().join("many");
    let mut reversed: Vec<String> = std::fs::read_to_string(&input)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    reversed.reverse();
    let input_reversed = tmp.path().join("reversed.jsonl");
    write_lines(&input_reversed, &reversed);
    index_quietly(&input, &one, &["--dedup", "off"]);
    index_quietly(
        &input_reversed,
        &many,
        &["--dedup", "off", "--commit-every", "7"],
    );
    let a = neardup(&["pairs", p(&one)]);
    let b = neardup(&["pairs", p(&many)]);
    assert_eq!(code(&a), 0);
    let lines: Vec<(String, String)> = stdout(&a)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[1].to_string(), f[2].to_string())
        })
        .collect();
    // The oracle: a<i> and b<i> are the only pairs, smaller id first, sorted by ids.
    let mut expected: Vec<(String, String)> = (0..300)
        .map(|i| (format!("a{i}"), format!("b{i}")))
        .collect();
    expected.sort();
    assert_eq!(lines, expected);
    assert_eq!(stdout(&a), stdout(&b), "the same input, other segments");
}

#[test]
fn messages_say_what_was_found_and_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("docs.jsonl");
    let dir = tmp.path().join("idx");
    copies_input(&input, 3);
    // --memory-mb beyond what tantivy can take is a usage error, before anything is written.
    let out = neardup(&[
        "index",
        p(&input),
        "--index",
        p(&dir),
        "--memory-mb",
        "1000000000",
    ]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert_stderr_has(&out, "--memory-mb 1000000000 is more than tantivy can use");
    assert!(!dir.exists());
    // An empty input says so.
    let empty = tmp.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let out = index_quietly(&empty, &dir, &[]);
    assert_stderr_has(&out, "the input held no document (it is empty)");
    // A null id is named as such.
    let null = tmp.path().join("null.jsonl");
    std::fs::write(&null, "{\"id\": null, \"text\": \"x y z\"}\n").unwrap();
    let out = neardup(&["index", p(&null), "--index", p(&dir), "-q"]);
    assert_eq!(code(&out), 1);
    assert_stderr_has(&out, "the id field `id` is null");
    // A read command on a file names the file, not a path inside it.
    let out = neardup(&["stats", p(&input)]);
    assert_eq!(code(&out), 1);
    assert_stderr_has(&out, "is a file, not an index");
    assert!(
        !stderr(&out).contains(".neardup-creating"),
        "{}",
        stderr(&out)
    );
    // Lines of documents without a title end without spaces.
    index_quietly(&input, &dir, &[]);
    for args in [
        vec!["search", p(&dir), &text(0, 1)],
        vec!["similar", p(&dir), "--id", "a0"],
        vec!["clusters", p(&dir)],
        vec!["stats", p(&dir)],
    ] {
        let out = neardup(&args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        for line in stdout(&out).lines() {
            assert_eq!(line, line.trim_end(), "{args:?}");
        }
    }
    // No deletions: stats does not talk of them.
    let out = neardup(&["stats", p(&dir)]);
    assert!(!stdout(&out).contains("deleted"), "{}", stdout(&out));
}

/// Issue 28 item 13: `stats` reads the index's metadata and its group column only; the largest
/// clusters (the all-pairs join) come with `--clusters` and are then those `clusters` lists.
/// Item 14: the keys per document are named once (the rule's), the layout's block keys apart.
#[test]
fn stats_lists_clusters_only_when_asked_and_names_the_keys_once() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("docs.jsonl");
    copies_input(&input, 6);
    let dir = tmp.path().join("ix");
    index_quietly(&input, &dir, &[]);

    let stats = json_lines(&neardup(&["stats", p(&dir), "--json"]))[0].clone();
    assert!(stats.get("largest_clusters").is_none(), "{stats}");
    assert!(stats.get("rule_keys_per_document").is_none(), "{stats}");
    assert_eq!(stats["keys_per_document"], 16, "{stats}");
    assert_eq!(stats["block_keys_per_document"], 4, "{stats}");
    // Groups recorded while indexing are still listed: a<i> and b<i> each.
    assert_eq!(stats["largest_groups"].as_array().map(Vec::len), Some(5));
    let human = stdout(&neardup(&["stats", p(&dir)]));
    assert!(!human.contains("clusters by the rule"), "{human}");

    // --clusters: the sizes and ids `clusters` gives, largest first.
    let out = neardup(&["stats", p(&dir), "--json", "--clusters", "-n", "3"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed = json_lines(&out)[0]["largest_clusters"].clone();
    let clusters = json_lines(&neardup(&["clusters", p(&dir), "--json", "-n", "3"]));
    assert_eq!(listed.as_array().map(Vec::len), Some(3), "{listed}");
    assert_eq!(clusters.len(), 3);
    for (l, c) in listed.as_array().unwrap().iter().zip(&clusters) {
        assert_eq!(
            (&l["cluster"], &l["documents"]),
            (&c["cluster"], &c["size"])
        );
        assert_eq!(l["documents"], 2, "{l}");
    }
    let human = stdout(&neardup(&["stats", p(&dir), "--clusters"]));
    assert!(human.contains("clusters by the rule"), "{human}");
}

/// Issue 28 item 14: the first line of `similar`, `clusters` and `pairs` names the rule in a few
/// words (`stats` prints all of it) instead of repeating its 200-character description.
#[test]
fn result_headers_name_the_rule_briefly() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("docs.jsonl");
    copies_input(&input, 2);
    let dir = tmp.path().join("ix");
    index_quietly(&input, &dir, &[]);
    let brief = "(simhash within 3, or resemblance >= 0.55)";
    let similar = stdout(&neardup(&["similar", p(&dir), "--id", "a0"]));
    let clusters = stdout(&neardup(&["clusters", p(&dir)]));
    let pairs = stderr(&neardup(&["pairs", p(&dir)]));
    for header in [
        similar.lines().next(),
        clusters.lines().next(),
        pairs.lines().next(),
    ] {
        let header = header.expect("a first line");
        assert!(header.contains(brief), "{header}");
        assert!(!header.contains("MinHash bands"), "{header}");
    }
    let stats = stdout(&neardup(&["stats", p(&dir)]));
    assert!(stats.contains("MinHash bands"), "{stats}");
}

/// Issue 28 item 14: `mirrors` on an index whose documents have no host says where hosts come
/// from instead of only "0 pages on 0 hosts".
#[test]
fn mirrors_without_hosts_points_to_the_host_field() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("docs.jsonl");
    copies_input(&input, 2);
    let dir = tmp.path().join("ix");
    index_quietly(&input, &dir, &[]);
    for args in [vec!["mirrors", p(&dir)], vec!["mirrors", p(&dir), "--json"]] {
        let out = neardup(&args);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_stderr_has(
            &out,
            "no document of the index has a host (the input field `host`)",
        );
        assert_stderr_has(&out, "--host-field NAME");
    }
}

/// Issue 28 item 12: an integer id of any length is an id (the README's promise), also beyond
/// the 308 digits an f64 holds, where serde_json gives up ("number out of range"); it is the same
/// id as its digits in a string.
#[test]
fn an_integer_id_of_hundreds_of_digits_is_an_id() {
    let tmp = tempfile::tempdir().unwrap();
    let digits: String = (0..400).map(|i| char::from(b'1' + (i % 9) as u8)).collect();
    let input = tmp.path().join("long.jsonl");
    std::fs::write(
        &input,
        format!("{{\"id\": {digits}, \"text\": \"{}\"}}\n", text(7, 30)),
    )
    .unwrap();
    let dir = tmp.path().join("ix");
    let out = index_quietly(&input, &dir, &["--json"]);
    assert_eq!(json_lines(&out).pop().unwrap()["added"], 1);
    let out = neardup(&["similar", p(&dir), "--text", &text(7, 30), "--json"]);
    assert_eq!(
        json_lines(&out)[0]["id"],
        digits.as_str(),
        "{}",
        stdout(&out)
    );
    // The same digits as a string: the id is taken, so a rerun adds nothing.
    let quoted = tmp.path().join("quoted.jsonl");
    std::fs::write(
        &quoted,
        format!("{{\"id\": \"{digits}\", \"text\": \"other\"}}\n"),
    )
    .unwrap();
    let out = index_quietly(&quoted, &dir, &["--json"]);
    assert_eq!(json_lines(&out).pop().unwrap()["skipped_existing_id"], 1);
    assert_eq!(documents(&dir), 1);
    // Another number out of range is still named as malformed JSON.
    let bad = tmp.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        format!(
            "{{\"id\": 1, \"text\": \"x\", \"n\": 1{}}}\n",
            "0".repeat(400)
        ),
    )
    .unwrap();
    let out = neardup(&["index", p(&bad), "--index", p(&dir), "-q"]);
    assert_eq!(code(&out), 1);
    assert_stderr_has(&out, "number out of range");
}

/// Issue 28 item 12: a write that fails for want of room says that the committed documents are
/// safe and what to do, and the rerun it advises completes the input. A file size limit stands
/// in for a full disk (SIGXFSZ ignored, so the write fails with EFBIG as a full disk fails with
/// ENOSPC; an ignored signal stays ignored across exec). 32 KB is below the near-duplicate
/// file of a 200-document segment (~44 KB), so the first commit fails.
#[cfg(unix)]
#[test]
fn a_write_without_room_keeps_the_committed_documents_and_says_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("docs.jsonl");
    copies_input(&input, 400);
    let dir = tmp.path().join("ix");
    let bin = env!("CARGO_BIN_EXE_neardup");
    let script = format!(
        "trap '' XFSZ; ulimit -f 32; exec '{bin}' index '{}' --index '{}' -q --commit-every 200",
        input.display(),
        dir.display()
    );
    let out = Command::new("bash").args(["-c", &script]).output().unwrap();
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("the documents of the index's last commit are safe"),
        "{err}"
    );
    assert!(err.contains("rerun the same command"), "{err}");
    let committed = documents(&dir);
    assert!(committed < 800, "{committed}");
    // The advised rerun, with room, completes the input exactly once.
    let out = index_quietly(&input, &dir, &["--json"]);
    assert_eq!(documents(&dir), 800);
    assert_eq!(
        json_lines(&out).pop().unwrap()["skipped_existing_id"].as_u64(),
        Some(committed)
    );
}

/// Issue 28 item 14: a search result shows the passage of its text that matched the query, not
/// the text's first characters.
#[test]
fn a_search_result_shows_the_passage_that_matched() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("docs.jsonl");
    let long = format!("{} zanzibarite {}", text(3, 60), text(4, 10));
    write_lines(
        &input,
        &[doc_line("far", &long), doc_line("other", &text(5, 30))],
    );
    let dir = tmp.path().join("ix");
    index_quietly(&input, &dir, &[]);
    let out = neardup(&["search", p(&dir), "zanzibarite"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let shown = stdout(&out);
    let lines: Vec<&str> = shown.lines().collect();
    assert!(lines[0].contains("far"), "{shown}");
    assert!(!long[..100].contains("zanzibarite"));
    assert!(lines[1].contains("zanzibarite"), "{shown}");
}

/// Issue 28 item 14: when the window of top hits holds fewer members of a group than the group
/// has hits, the line under its leader says how many more are ranked lower instead of an
/// ellipsis after a list that looks complete ("+ 2 near-duplicates: x (d=0), …").
#[test]
fn a_group_says_how_many_of_its_members_are_ranked_lower() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("docs.jsonl");
    // c1 and c2 are copies; c3 is c1 with three more words (longer: a lower score for the
    // same one occurrence of the query); f1, a text of its own, scores between them.
    let body = format!("zebra {}", text(1, 30));
    write_lines(
        &input,
        &[
            doc_line("c1", &body),
            doc_line("c2", &body),
            doc_line("c3", &format!("{body} {}", text(9, 3))),
            doc_line("f1", &format!("zebra {}", text(2, 31))),
        ],
    );
    let dir = tmp.path().join("ix");
    index_quietly(&input, &dir, &["--dedup", "off"]);
    // The ranking the test relies on, by the same binary: c1 and c2, f1, c3.
    let ranked = json_lines(&neardup(&[
        "search",
        p(&dir),
        "zebra",
        "--no-collapse",
        "--json",
    ]));
    // c1 and c2 tie; which comes first depends on the segment each indexing thread wrote.
    let ids: Vec<&str> = ranked.iter().filter_map(|h| h["id"].as_str()).collect();
    let (mut copies, rest) = (ids[..2.min(ids.len())].to_vec(), &ids[2.min(ids.len())..]);
    copies.sort_unstable();
    assert_eq!(
        (copies, rest),
        (vec!["c1", "c2"], &["f1", "c3"][..]),
        "{ranked:?}"
    );
    // One result: a window of 3 hits (c1, c2, f1) holds one member of c1's group of 3.
    let out = neardup(&["search", p(&dir), "zebra", "-n", "1"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let shown = stdout(&out);
    // The group's leader is the copy listed first; the line under it names the other.
    let leader = shown
        .lines()
        .find(|l| l.trim_start().starts_with("1."))
        .and_then(|l| l.split_whitespace().nth(2))
        .unwrap_or_default();
    let copy = if leader == "c1" { "c2" } else { "c1" };
    assert!(
        ["c1", "c2"].contains(&leader)
            && shown.contains(&format!(
                "+ 2 near-duplicates: {copy} (d=0); 1 more ranked lower"
            )),
        "{shown}"
    );
}
