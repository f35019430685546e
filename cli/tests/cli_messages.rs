//! The `neardup` messages of issue 15: each says what happened and what to do. Every test
//! builds the situation for real (a held writer lock, a half-created directory, a plain tantivy
//! index, an edited record, ...) and checks the message the binary prints.

mod cli_support;

use cli_support::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use tantivy::schema::{Schema, STRING};
use tantivy::{doc, Index, IndexWriter};

/// Distinct texts, far apart.
fn text(i: usize) -> String {
    let words = [
        "river", "copper", "lantern", "orchard", "granite", "violin", "harbor", "meadow", "saddle",
        "thistle", "walnut", "beacon", "canyon", "falcon", "juniper", "marble",
    ];
    (0..40)
        .map(|j| words[(i * 7 + j * j * 3 + j * i) % words.len()])
        .collect::<Vec<_>>()
        .join(" ")
        + &format!(" number {i}")
}

/// A JSONL file `three.jsonl` in `tmp` with the documents d0, d1 and d2.
fn three_docs(tmp: &Path) -> PathBuf {
    let input = tmp.join("three.jsonl");
    write_lines(
        &input,
        &(0..3)
            .map(|i| doc_line(&format!("d{i}"), &text(i)))
            .collect::<Vec<_>>(),
    );
    input
}

/// An index of three documents in `dir`.
fn small_index(tmp: &Path, dir: &Path) {
    let input = three_docs(tmp);
    let out = neardup(&["index", p(&input), "--index", p(dir), "-q"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn a_second_writer_is_told_another_run_is_writing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ix");
    small_index(tmp.path(), &dir);
    // Hold the index's writer lock, as a running `neardup index` does (a tantivy writer needs
    // the segment component registered: NearDupIndex::open_recorded does it).
    let index =
        tantivy_simhash::NearDupIndex::open_recorded(Index::open_in_dir(&dir).unwrap()).unwrap();
    let writer: IndexWriter = index.index().writer(15_000_000).unwrap();
    let out = neardup(&[
        "index",
        p(&fixture("bad-json.jsonl")),
        "--index",
        p(&dir),
        "-q",
    ]);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(
        err.contains("another `neardup index`") && err.contains(p(&dir)),
        "{err}"
    );
    assert!(err.contains("wait for the other run to finish"), "{err}");
    assert!(!err.contains("LockBusy"), "{err}");
    drop(writer);
    let out = neardup(&[
        "index",
        p(&tmp.path().join("three.jsonl")),
        "--index",
        p(&dir),
        "-q",
    ]);
    assert_eq!(code(&out), 0, "the lock is free again: {}", stderr(&out));
}

#[test]
fn a_directory_another_run_is_creating_is_named_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let input = three_docs(tmp.path());
    // The claim a run holds (locked) while it creates the index.
    let dir = tmp.path().join("ix");
    std::fs::create_dir(&dir).unwrap();
    let claim = std::fs::File::create(dir.join(".neardup-creating")).unwrap();
    claim.lock().unwrap();
    for args in [
        vec!["index", p(&input), "--index", p(&dir), "-q"],
        vec!["stats", p(&dir)],
    ] {
        let out = neardup(&args);
        assert_eq!(code(&out), 1);
        let err = stderr(&out);
        assert!(
            err.contains("is being created by another `neardup index` right now"),
            "{err}"
        );
    }
    // The run dies (its lock goes) after tantivy made the index, before its record was written.
    drop(claim);
    let mut builder = Schema::builder();
    builder.add_text_field("id", STRING);
    Index::create_in_dir(&dir, builder.build()).unwrap();
    let out = neardup(&["stats", p(&dir)]);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(
        err.contains("died before the index was complete; rerun `neardup index"),
        "{err}"
    );
    let out = neardup(&["index", p(&input), "--index", p(&dir), "-q", "--json"]);
    assert_eq!(code(&out), 0, "a rerun creates the index: {}", stderr(&out));
    assert!(!dir.join(".neardup-creating").exists());
    let out = neardup(&["stats", p(&dir), "--json"]);
    let stats: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(stats["documents"], 3);

    // Real races: whoever loses says why, never "not empty and not a neardup index".
    for round in 0..4 {
        let dir = tmp.path().join(format!("race{round}"));
        let children: Vec<_> = (0..2)
            .map(|_| spawn(&["index", p(&input), "--index", p(&dir), "-q", "--json"]))
            .collect();
        let mut succeeded = 0;
        for child in children {
            let out = child.wait_with_output().unwrap();
            let err = stderr(&out);
            if code(&out) == 0 {
                succeeded += 1;
                continue;
            }
            assert_eq!(code(&out), 1, "{err}");
            assert!(
                err.contains("was created by another process at the same time")
                    || err.contains("is being created by another `neardup index`")
                    || err.contains("another `neardup index` (or another program"),
                "{err}"
            );
        }
        assert!(succeeded >= 1);
        let out = neardup(&["stats", p(&dir), "--json"]);
        let stats: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        assert_eq!(stats["documents"], 3, "each id once");
    }
}

#[test]
fn a_run_killed_while_claiming_does_not_block_the_directory_forever() {
    let tmp = tempfile::tempdir().unwrap();
    let input = three_docs(tmp.path());
    // A run killed after making its own claim file, before linking it into place: the file is
    // left, unlocked (its process is gone).
    let dir = tmp.path().join("ix");
    std::fs::create_dir(&dir).unwrap();
    std::fs::File::create(dir.join(".neardup-creating.4242")).unwrap();
    index_quietly(&input, &dir, &["--json"]);
    let out = neardup(&["stats", p(&dir), "--json"]);
    let stats: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(stats["documents"], 3);
    assert!(!dir.join(".neardup-creating.4242").exists());

    // A live claimer's file (locked) is left alone: the directory is being created.
    let dir = tmp.path().join("ix2");
    std::fs::create_dir(&dir).unwrap();
    let live = std::fs::File::create(dir.join(".neardup-creating.4243")).unwrap();
    live.lock().unwrap();
    let out = neardup(&["index", p(&input), "--index", p(&dir), "-q"]);
    assert_eq!(code(&out), 1);
    assert_stderr_has(
        &out,
        "is being created by another `neardup index` right now",
    );
    assert!(dir.join(".neardup-creating.4243").exists());
}

#[test]
fn a_plain_tantivy_index_is_named_and_no_impossible_command_suggested() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("plain");
    std::fs::create_dir(&dir).unwrap();
    let mut builder = Schema::builder();
    let title = builder.add_text_field("title", STRING);
    let index = Index::create_in_dir(&dir, builder.build()).unwrap();
    let mut writer: IndexWriter = index.writer(15_000_000).unwrap();
    writer.add_document(doc!(title => "x")).unwrap();
    writer.commit().unwrap();
    drop(writer);
    let input = tmp.path().join("one.jsonl");
    write_lines(&input, &[doc_line("a", &text(1))]);
    for args in [
        vec!["stats", p(&dir)],
        vec!["search", p(&dir), "x"],
        vec!["index", p(&input), "--index", p(&dir)],
    ] {
        let out = neardup(&args);
        assert_eq!(code(&out), 1);
        let err = stderr(&out);
        assert!(
            err.contains("is a tantivy index, but not one made by `neardup index`"),
            "{args:?}: {err}"
        );
        assert!(err.contains("--index NEWDIR"), "{err}");
        assert!(
            !err.contains(&format!("--index {}", p(&dir))),
            "suggests indexing into the refused directory: {err}"
        );
    }
}

#[test]
fn scheme_mismatches_and_edited_records_say_which_is_which() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ix");
    small_index(tmp.path(), &dir);
    let library_record = dir.join(".tantivy-simhash.json");
    let original = std::fs::read_to_string(&library_record).unwrap();
    let scheme = serde_json::from_str::<Value>(&original).unwrap()["scheme"]
        .as_str()
        .unwrap()
        .to_string();

    // Only the library's record edited: the edited value is the file's, the payload's is
    // the original; neither is "requested".
    let edited = original.replace(&scheme, "edited-scheme");
    std::fs::write(&library_record, edited).unwrap();
    let out = neardup(&["stats", p(&dir)]);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "the record file says `edited-scheme`, the last commit's payload says `{scheme}`"
        )),
        "{err}"
    );
    assert!(
        !err.contains("requested") && !err.contains("neardup stats"),
        "{err}"
    );
    std::fs::write(&library_record, &original).unwrap();

    // Both records name another scheme id than this version computes for the same settings
    // (as an index built by another version of neardup would).
    for file in [".tantivy-simhash.json", "meta.json"] {
        let path = dir.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(&scheme), "{file} names the scheme");
        std::fs::write(&path, text.replace(&scheme, "simhash-of-another-version")).unwrap();
    }
    let scheme_found = "simhash-of-another-version";
    let out = neardup(&["stats", p(&dir)]);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "records the scheme `{scheme_found}`, but this version of neardup computes `{scheme}`"
        )),
        "{err}"
    );
    assert!(err.contains("rebuild it with this version"), "{err}");
    assert!(!err.contains("see `neardup stats`"), "{err}");
}

#[test]
fn damage_under_skip_bad_does_not_advise_skip_bad() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(fixture("sample.jsonl.gz")).unwrap();
    let cut = tmp.path().join("cut.jsonl.gz");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    for extra in [&["--skip-bad"][..], &[]] {
        let dir = tmp.path().join(format!("ix{}", extra.len()));
        let mut args = vec!["index", p(&cut), "--index", p(&dir), "-q"];
        args.extend_from_slice(extra);
        let out = neardup(&args);
        assert_eq!(code(&out), 1);
        let err = stderr(&out);
        assert!(err.contains("cannot read line"), "{err}");
        assert!(!err.contains("or pass --skip-bad"), "{err}");
        assert!(err.contains("repair or re-create it"), "{err}");
    }
    // A bad line without --skip-bad still suggests it.
    let dir = tmp.path().join("bad");
    let out = neardup(&[
        "index",
        p(&fixture("bad-json.jsonl")),
        "--index",
        p(&dir),
        "-q",
    ]);
    assert_eq!(code(&out), 1);
    assert_stderr_has(&out, "or pass --skip-bad");
}

#[test]
fn k_beyond_nine_is_refused_without_suggesting_an_impossible_rebuild() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ix");
    small_index(tmp.path(), &dir);
    for cmd in ["pairs", "clusters"] {
        let out = neardup(&[cmd, p(&dir), "-k", "10"]);
        assert_eq!(code(&out), 2);
        let err = stderr(&out);
        assert!(err.contains("the largest k neardup supports is 9"), "{err}");
        assert!(!err.contains("neardup index -k 10"), "{err}");
        let out = neardup(&[cmd, p(&dir), "-k", "5"]);
        assert_eq!(code(&out), 2);
        assert_stderr_has(&out, "`neardup index -k 5` into a new directory");
    }
    let out = neardup(&[
        "index",
        p(&tmp.path().join("three.jsonl")),
        "--index",
        p(&tmp.path().join("new")),
        "-k",
        "5",
        "-q",
    ]);
    assert_eq!(
        code(&out),
        0,
        "the suggested rebuild works: {}",
        stderr(&out)
    );
}

#[test]
fn similar_refuses_an_empty_text_as_index_does() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ix");
    small_index(tmp.path(), &dir);
    for empty in ["", "   \n\t"] {
        let out = neardup(&["similar", p(&dir), "--text", empty]);
        assert_eq!(code(&out), 2);
        assert_stderr_has(&out, "--text is empty: there is nothing to fingerprint");
        assert_eq!(stdout(&out), "");
    }
    let input = tmp.path().join("empty.jsonl");
    write_lines(&input, &[doc_line("e", "")]);
    let out = neardup(&["index", p(&input), "--index", p(&dir), "-q"]);
    assert_eq!(code(&out), 1);
    assert_stderr_has(&out, "nothing to fingerprint");
}

#[test]
fn a_byte_order_mark_is_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("bom.jsonl");
    let mut bytes = b"\xef\xbb\xbf".to_vec();
    bytes.extend_from_slice(
        format!("{}\n{}\n", doc_line("a", &text(1)), doc_line("b", &text(2))).as_bytes(),
    );
    std::fs::write(&input, bytes).unwrap();
    let dir = tmp.path().join("ix");
    index_quietly(&input, &dir, &[]);
    let out = neardup(&["similar", p(&dir), "--id", "a"]);
    assert_eq!(
        code(&out),
        0,
        "the first document's id is `a`: {}",
        stderr(&out)
    );
}

#[test]
fn counts_of_one_are_singular() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("one-then-bad.jsonl");
    write_lines(&input, &[doc_line("a", &text(1)), "{oops".into()]);
    let dir = tmp.path().join("ix");
    let out = neardup(&["index", p(&input), "--index", p(&dir), "-q"]);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(
        err.contains("the 1 document this run added before it was committed"),
        "{err}"
    );

    let input = tmp.path().join("pair.jsonl");
    write_lines(&input, &[doc_line("b", &text(2)), doc_line("c", &text(2))]);
    let out = neardup(&["index", p(&input), "--index", p(&dir)]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let human = stdout(&out);
    assert!(human.contains("indexed 2 documents"), "{human}");
    assert!(human.contains("index now holds 3 documents in "), "{human}");
    let out = neardup(&["similar", p(&dir), "--id", "b"]);
    assert!(
        stdout(&out).starts_with("1 near-duplicate of `b`"),
        "{}",
        stdout(&out)
    );
    let out = neardup(&["pairs", p(&dir)]);
    assert!(
        stderr(&out).starts_with("1 pair by the rule (simhash within 3, or ")
            && stderr(&out).contains(") among 3 documents"),
        "{}",
        stderr(&out)
    );
    let out = neardup(&["clusters", p(&dir)]);
    assert!(
        stdout(&out).starts_with("1 cluster of at least 2 documents"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn pairs_go_to_stdout_and_their_count_to_stderr_as_documented() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("pairs.jsonl");
    write_lines(
        &input,
        &[
            doc_line("a", &text(3)),
            doc_line("b", &text(3)),
            doc_line("c", &text(4)),
        ],
    );
    let dir = tmp.path().join("ix");
    index_quietly(&input, &dir, &["--dedup", "off"]);
    let out = neardup(&["pairs", p(&dir)]);
    assert_eq!(stdout(&out), "0\ta\tb\t-\n", "stdout holds only the pairs");
    assert!(stderr(&out).starts_with("1 pair by the rule (simhash within 3"));
    let help = stdout(&neardup(&["help", "pairs"]));
    assert!(
        help.contains("go to stdout") && help.contains("goes to stderr"),
        "{help}"
    );
}

#[test]
fn integer_ids_are_exact_and_other_numbers_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("numbers.jsonl");
    write_lines(
        &input,
        &[
            format!(
                r#"{{"id": 123456789012345678901234567890, "text": "{}"}}"#,
                text(5)
            ),
            format!(
                r#"{{"id": 123456789012345678901234567891, "text": "{}"}}"#,
                text(6)
            ),
            format!(r#"{{"id": 42, "text": "{}"}}"#, text(7)),
            format!(r#"{{"id": "42", "text": "{}"}}"#, text(8)),
            format!(r#"{{"id": 1e3, "text": "{}"}}"#, text(9)),
        ],
    );
    let dir = tmp.path().join("ix");
    let out = neardup(&[
        "index",
        p(&input),
        "--index",
        p(&dir),
        "-q",
        "--json",
        "--skip-bad",
    ]);
    assert_eq!(code(&out), 3);
    let err = stderr(&out);
    assert!(
        err.contains(
            "numbers.jsonl:5: the id field `id` is the number 1e3, which is not an integer"
        ),
        "{err}"
    );
    let summary: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    assert_eq!(summary["added"], 3);
    assert_eq!(summary["skipped_existing_id"], 1, "\"42\" is the id 42");
    for id in [
        "123456789012345678901234567890",
        "123456789012345678901234567891",
        "42",
    ] {
        let out = neardup(&["similar", p(&dir), "--id", id]);
        assert_eq!(code(&out), 0, "{id}: {}", stderr(&out));
    }
}
