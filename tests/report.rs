//! The review report in a real browser: headless Chromium (Debian's `chromium` package; CI
//! installs it) loads the report of a small index with a cluster and a member opened through
//! the page's hash, and the test reads the DOM it rendered: the clusters listed, the diff
//! opened, and the highlighted spans on each side equal to the word alignment of
//! `explain` (an independent computation: the library's `Explanation` of the same pair). A
//! screenshot goes under the test's output directory.

mod common;

use common::edited_texts_under_chrome;
use std::path::{Path, PathBuf};
use std::process::Command;
use tantivy::schema::{Schema, FAST, STORED, STRING, TEXT};
use tantivy::{doc, Index};
use tantivy_simhash::NearDupGraph;
use tantivy_simhash::RunKind;
use tantivy_simhash::{write_report, ReportOptions};
use tantivy_simhash::{NearDupConfig, NearDupIndex, Policy};

const CHROMIUM: &str = "/usr/bin/chromium";
/// Headless Chromium's flags, shared with tools/report_open_time.py: a fresh profile, no
/// network, no GPU.
const CHROMIUM_FLAGS: &str = include_str!("../tools/chromium-flags.txt");

fn chromium(profile: &Path, extra: &[&str], url: &str) -> std::process::Output {
    assert!(
        Path::new(CHROMIUM).exists(),
        "this test needs headless Chromium at {CHROMIUM}: install Debian's `chromium` package \
         (apt-get install -y chromium; .ci/run does)"
    );
    let out = Command::new(CHROMIUM)
        .args(CHROMIUM_FLAGS.split_whitespace())
        .arg("--virtual-time-budget=5000")
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The inner HTML of the element with id `id` (a `div`; nested divs balanced).
fn element<'a>(dom: &'a str, id: &str) -> &'a str {
    let start = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in the DOM"));
    let open = start + dom[start..].find('>').unwrap() + 1;
    let (mut depth, mut at) = (1, open);
    while depth > 0 {
        let next_open = dom[at..].find("<div").map(|i| at + i);
        let next_close = dom[at..].find("</div>").map(|i| at + i).unwrap();
        match next_open {
            Some(o) if o < next_close => {
                depth += 1;
                at = o + 4;
            }
            _ => {
                depth -= 1;
                at = next_close + 6;
            }
        }
    }
    &dom[open..at - 6]
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// The texts of the `<span class="CLASS">` elements of `html`, with their classes.
fn spans(html: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find("<span class=\"") {
        rest = &rest[i + 13..];
        let q = rest.find('"').unwrap();
        let class = rest[..q].to_string();
        let gt = rest.find('>').unwrap();
        let end = rest.find("</span>").unwrap();
        if matches!(class.as_str(), "del" | "ins" | "mv") {
            out.push((class, unescape(&rest[gt + 1..end])));
        }
        rest = &rest[end..];
    }
    out
}

/// Words as the alignment counts them: runs of letters and digits, Han characters one by one,
/// lower-cased.
fn words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in s.chars() {
        let han = ('\u{4e00}'..='\u{9fff}').contains(&c);
        if c.is_alphanumeric() && !han {
            cur.extend(c.to_lowercase());
            continue;
        }
        if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        if han {
            out.push(c.to_string());
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[test]
fn the_report_renders_in_chromium_with_the_alignment_of_explain() {
    let config = NearDupConfig::new("id", ["body"]);
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING | FAST | STORED);
    let body = builder.add_text_field("body", TEXT | STORED);
    let host = builder.add_text_field("host", STRING | STORED);
    config.add_fields(&mut builder);
    let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config).unwrap();
    let mut w = index.writer(50_000_000, Policy::Off).unwrap();
    let texts = edited_texts_under_chrome(3, 160);
    for (i, t) in texts.iter().enumerate() {
        let h = format!("site{}.example", i % 4);
        w.add_document(doc!(id => format!("d{i:03}"), body => t.clone(), host => h))
            .unwrap();
    }
    w.commit().unwrap();
    let searcher = index.lookups().unwrap();
    let graph = NearDupGraph::new(searcher.fields(), searcher.searcher()).unwrap();
    let clusters = graph.clusters().unwrap();
    let mut sorted: Vec<_> = clusters.iter().collect();
    sorted.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.id.cmp(&b.id)));
    assert!(sorted.len() > 5 && sorted[0].len() > 2);

    let out_dir: PathBuf = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report");
    std::fs::create_dir_all(&out_dir).unwrap();
    let file = out_dir.join("report.html");
    let mut html = Vec::new();
    let options = ReportOptions {
        detailed_clusters: 3,
        ..ReportOptions::default()
    };
    let stats = write_report(&index, &searcher, &options, &mut html).unwrap();
    std::fs::write(&file, &html).unwrap();
    assert_eq!(stats.clusters, sorted.len());
    assert_eq!(stats.clusters_detailed, 3);
    let page = String::from_utf8(html).unwrap();
    // Self-contained: nothing loaded from elsewhere.
    for needle in ["<link", " src=", "http://", "https://", "@import"] {
        assert!(!page.contains(needle), "the page contains {needle}");
    }

    // The largest cluster and its first member (a pair with differences to highlight).
    let cluster = sorted[0];
    let leader = cluster.leader().unwrap();
    let member = &cluster.members[1];
    let e = index
        .explain_ids(&searcher, &leader.id, &member.id)
        .unwrap();
    let (_, deleted, inserted, moved) = e.alignment.counts();
    assert!(deleted + inserted + moved > 0, "the pair differs");
    let url = format!(
        "file://{}#cluster={}&member={}",
        file.display(),
        cluster.id,
        member.id
    );
    let profile = tempfile::tempdir().unwrap();
    let dom = String::from_utf8(chromium(profile.path(), &["--dump-dom"], &url).stdout).unwrap();
    assert!(
        dom.contains("data-ready=\"1\""),
        "the script did not finish"
    );
    // Clusters listed: the first page (50 a page), largest first.
    let list = cluster_rows(&dom);
    let rows = list.matches("<tr class=\"cluster").count();
    assert_eq!(rows, sorted.len().min(50));
    let first_row = list.find("<tr class=\"cluster").unwrap();
    assert!(list[first_row..].starts_with(&format!(
        "<tr class=\"cluster open\" data-id=\"{}\"",
        cluster.id
    )));
    // The diff is open, and each side's highlights are the alignment's marked words.
    let texts_of = |side: usize| -> Vec<String> {
        let (spans_, text) = if side == 0 {
            (
                &e.alignment.a,
                &texts[leader.id[1..].parse::<usize>().unwrap()],
            )
        } else {
            (
                &e.alignment.b,
                &texts[member.id[1..].parse::<usize>().unwrap()],
            )
        };
        e.alignment.marked_words()[side]
            .iter()
            .map(|&(w, _)| text[spans_[w].clone()].to_lowercase())
            .collect()
    };
    for (side, id, kinds) in [
        (0, "side-leader", ["del", "mv"]),
        (1, "side-member", ["ins", "mv"]),
    ] {
        let shown = spans(element(&dom, id));
        assert!(
            shown.iter().all(|(c, _)| kinds.contains(&c.as_str())),
            "{shown:?}"
        );
        let highlighted: Vec<String> = shown.iter().flat_map(|(_, t)| words(t)).collect();
        assert_eq!(highlighted, texts_of(side), "side {id}");
        let kinds_expected: Vec<&str> = e.alignment.marked_words()[side]
            .iter()
            .map(|(_, k)| match k {
                RunKind::Delete => "del",
                RunKind::Insert => "ins",
                _ => "mv",
            })
            .collect();
        let kinds_shown: Vec<&str> = shown
            .iter()
            .flat_map(|(c, t)| std::iter::repeat_n(c.as_str(), words(t).len()))
            .collect();
        assert_eq!(kinds_shown, kinds_expected);
    }
    let evidence = element(&dom, "evidence");
    assert!(
        evidence.contains(&unescape_summary(&e.summary())),
        "{evidence}"
    );
    // The filter box (filled through the hash): only clusters whose id or title match.
    let url = format!("file://{}#filter={}", file.display(), sorted[1].id);
    let dom = String::from_utf8(chromium(profile.path(), &["--dump-dom"], &url).stdout).unwrap();
    let list = cluster_rows(&dom);
    let listed: Vec<&str> = list
        .match_indices("<tr class=\"cluster")
        .map(|(i, _)| &list[i..(i + 60).min(list.len())])
        .collect();
    assert!(!listed.is_empty() && listed.len() < rows, "{listed:?}");
    assert!(listed.iter().any(|r| r.contains(&sorted[1].id)));
    // A screenshot of the opened diff.
    let shot = out_dir.join("report.png");
    let _ = std::fs::remove_file(&shot);
    let url = format!(
        "file://{}#cluster={}&member={}",
        file.display(),
        cluster.id,
        member.id
    );
    chromium(
        profile.path(),
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1400,1000",
            "--hide-scrollbars",
        ],
        &url,
    );
    let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(
        size > 10_000,
        "screenshot of {size} bytes at {}",
        shot.display()
    );
}

/// The rows of the cluster table's body (the page's script also holds the row markup).
fn cluster_rows(dom: &str) -> &str {
    let table = dom
        .find("<table id=\"clusters\">")
        .expect("the cluster table");
    let body = table + dom[table..].find("<tbody>").unwrap();
    let end = body + dom[body..].find("</tbody>").unwrap();
    &dom[body..end]
}

/// The summary as the page escapes it (quotes are escaped by the page's `esc`).
fn unescape_summary(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
