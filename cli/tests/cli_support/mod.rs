//! Shared helpers of the tests that run the `neardup` binary (cli.rs, cli_messages.rs,
//! reruns.rs): running it, reading what it printed, writing JSONL input.
#![allow(dead_code)]

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_neardup");

/// Runs `neardup ARGS` to the end.
pub fn neardup(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run neardup")
}

/// Starts `neardup ARGS` with stdin, stdout and stderr piped.
pub fn spawn(args: &[&str]) -> Child {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start neardup")
}

pub fn code(out: &Output) -> i32 {
    out.status.code().expect("exit status")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts that the run's standard error contains `needle`, printing all of it if not.
#[track_caller]
pub fn assert_stderr_has(out: &Output, needle: &str) {
    let err = stderr(out);
    assert!(err.contains(needle), "stderr lacks {needle:?}:\n{err}");
}

/// Asserts that the run's standard output contains `needle`, printing all of it if not.
#[track_caller]
pub fn assert_stdout_has(out: &Output, needle: &str) {
    let text = stdout(out);
    assert!(text.contains(needle), "stdout lacks {needle:?}:\n{text}");
}

/// Each stdout line parsed as JSON.
pub fn json_lines(out: &Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

pub fn p(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// A file of `tests/fixtures/`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Writes `lines` to `path`, one a line.
pub fn write_lines(path: &Path, lines: &[String]) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
    f.flush().unwrap();
}

/// A JSONL input line with an id and a text.
pub fn doc_line(id: &str, text: &str) -> String {
    serde_json::json!({"id": id, "text": text}).to_string()
}

/// Runs `neardup index INPUT --index DIR -q` with `extra` flags and asserts that it succeeded
/// (the set-up most tests start from); what it printed.
pub fn index_quietly(input: &Path, dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["index", p(input), "--index", p(dir), "-q"];
    args.extend_from_slice(extra);
    let out = neardup(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    out
}
