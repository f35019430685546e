//! The README's `neardup` examples run as printed on the demo index: every command of the
//! command-line section's `sh` block succeeds (through bash, pipes and `$(...)` included), and
//! every `$ neardup ...` sample prints exactly the output shown under it.
#![cfg(unix)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_neardup");

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).unwrap()
}

/// The fenced blocks of `lang` in the section that starts with `heading`.
fn blocks(text: &str, heading: &str, lang: &str) -> Vec<String> {
    let start = text.find(heading).expect("the section");
    let section = &text[start..];
    let end = section[heading.len()..]
        .find("\n## ")
        .map_or(section.len(), |i| i + heading.len());
    let mut found = Vec::new();
    let mut rest = &section[..end];
    let fence = format!("```{lang}\n");
    while let Some(i) = rest.find(&fence) {
        let body = &rest[i + fence.len()..];
        let close = body.find("```").expect("a closing fence");
        found.push(body[..close].to_string());
        rest = &body[close..][3..];
    }
    found
}

/// Runs `line` with bash in `dir`, with the tested `neardup` first on the PATH.
fn bash(dir: &Path, line: &str) -> Output {
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("bash")
        .args(["-o", "pipefail", "-c", line])
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .expect("run bash")
}

/// Input for the README's `index` example, with its field names (url, body, title, site).
fn write_inputs(dir: &Path) {
    let docs = [
        (
            "https://a.example/1",
            "Readme",
            "A small page about simhash and near duplicates.",
            "a.example",
        ),
        (
            "https://b.example/1",
            "Readme",
            "A small page about simhash and near duplicates!",
            "b.example",
        ),
    ];
    let line = |(url, title, body, site): (&str, &str, &str, &str)| {
        serde_json::json!({"url": url, "title": title, "body": body, "site": site}).to_string()
    };
    let gz = std::fs::File::create(dir.join("docs.jsonl.gz")).unwrap();
    let mut enc = flate2::write::GzEncoder::new(gz, flate2::Compression::default());
    writeln!(enc, "{}", line(docs[0])).unwrap();
    enc.finish().unwrap();
    std::fs::write(dir.join("more.jsonl"), format!("{}\n", line(docs[1]))).unwrap();
    std::fs::write(
        dir.join("page.txt"),
        "Python Client for Cloud Channel Cloud Channel: The Cloud Channel API enables Google \
         Cloud partners to have a single unified resale platform",
    )
    .unwrap();
}

#[test]
fn the_readme_examples_run_as_printed_on_the_demo_index() {
    let tmp = tempfile::tempdir().unwrap();
    let out = bash(tmp.path(), "neardup demo --keep idx");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = readme();
    let section = "## On the command line: `neardup`";

    // The samples first, on the demo index as the demo leaves it.
    let samples = blocks(&text, section, "text");
    assert!(!samples.is_empty(), "the section shows sample output");
    let mut checked = 0;
    for sample in &samples {
        for part in sample.split("$ ").filter(|p| !p.trim().is_empty()) {
            let (command, expected) = part.split_once('\n').unwrap();
            let out = bash(tmp.path(), command);
            assert!(
                out.status.success(),
                "{command}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                expected,
                "$ {command}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 2);

    // Then every command of the sh block, in order (the first adds the files above to idx).
    write_inputs(tmp.path());
    let script = blocks(&text, section, "sh").concat().replace("\\\n", " ");
    let commands: Vec<&str> = script
        .lines()
        .filter(|l| l.starts_with("neardup "))
        .collect();
    assert!(commands.len() >= 10, "{commands:?}");
    for command in commands {
        let out = bash(tmp.path(), command);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{command}: {err}");
        assert!(!err.contains("error"), "{command}: {err}");
        // `report` writes its file and says so on stderr; the others print results on stdout.
        assert!(
            !out.stdout.is_empty() || !err.is_empty(),
            "{command} printed nothing"
        );
    }
}

/// The README's Rust block is the `use` lines of `examples/quickstart.rs`, then the part between
/// its `README: begin` and `README: end` markers (CI runs the example), up to whitespace: an API
/// change that breaks the printed code breaks the example, and an edit of one without the other
/// fails here.
#[test]
fn the_readme_rust_block_is_the_quickstart_example() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let example = std::fs::read_to_string(root.join("examples/quickstart.rs")).unwrap();
    let region = example
        .split("// README: begin")
        .nth(1)
        .and_then(|rest| rest.split("// README: end").next())
        .expect("examples/quickstart.rs marks the README's code");
    let printed = blocks(&readme(), "```rust\n", "rust");
    assert_eq!(printed.len(), 1, "the README prints one Rust block");
    let uses: String = example.lines().filter(|l| l.starts_with("use ")).collect();
    let squeeze = |s: &str| s.split_whitespace().collect::<String>();
    assert_eq!(squeeze(&printed[0]), squeeze(&format!("{uses}{region}")));
}
