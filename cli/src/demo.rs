//! `neardup demo`: the whole product on a small corpus built into the binary (see
//! `demo/README.md` for where each document comes from and its licence).

use super::app::{self, Requested};
use super::batch_cmds::clusters_in;
use super::index_cmd::{index_files, IndexOptions};
use super::index_summary::print_summary;
use super::mirrors_cmd::mirrors_in;
use super::read_cmds::{search_in, similar_in, stats_in};
use super::{CliResult, DemoArgs, Failure, Out, Status};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use tantivy::DocAddress;
use tantivy_simhash::{ClusterMode, Evidence, Policy};

/// The demo corpus: gzip JSONL, built by `cargo run --release -p tantivy-simhash-eval --bin make_demo`.
const CORPUS: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../demo/corpus.jsonl.gz"
));

/// The queries of the collapsed searches: templated Google Cloud READMEs, and chapters of the
/// Rust book in Chinese at several points of its history.
const QUERIES: &[&str] = &["google cloud client library", "并发 Sync Send"];

pub(super) fn run(args: &DemoArgs) -> CliResult<Status> {
    let tmp = tempfile::Builder::new().prefix("neardup-demo-").tempdir()?;
    let (dir, corpus) = demo_paths(args, tmp.path())?;
    let mut out = Out::new(false);
    let shown_dir = match &args.keep {
        Some(d) => d.display().to_string(),
        None => "DIR".to_string(),
    };
    out.line("neardup demo: English and Chinese documents with natural near-duplicates (licence")?;
    out.line(
        "texts copied between packages, releases of one README, versions of one manual page)",
    )?;
    out.line("and a small web of mirror sites. Sources and licences: demo/README.md.")?;
    out.line("")?;

    out.line(format_args!(
        "$ neardup index corpus.jsonl.gz --index {shown_dir} --dedup tag"
    ))?;
    out.flush()?;
    let req = Requested {
        policy: Some(Policy::Tag),
        ..Requested::default()
    };
    let (store, _) = app::open_or_create(&dir, &req)?;
    let opts = IndexOptions {
        skip_bad: false,
        max_line_bytes: 32 << 20,
        commit_every: 0,
        memory_mb: 128,
        quiet: false,
    };
    let summary = index_files(&store, &[corpus], &opts, &mut out)?;
    print_summary(&mut out, &store, &summary)?;
    if summary.interrupted {
        out.flush()?;
        return Ok(Status::Interrupted(summary.signal_status));
    }
    out.line("")?;
    show_read_commands(&store, &shown_dir, &mut out)?;

    match &args.keep {
        Some(d) => out.line(format_args!(
            "The index is in {}; try the commands above on it.",
            d.display()
        ))?,
        None => out.line(
            "The index was in a temporary directory, now removed; `neardup demo --keep DIR` keeps it.",
        )?,
    }
    out.flush()?;
    Ok(Status::Done)
}

/// Where the demo's index goes (`--keep`, which must not exist yet, or under `tmp`) and the
/// corpus it reads (`--corpus`, or the built-in one written under `tmp`).
fn demo_paths(args: &DemoArgs, tmp: &Path) -> CliResult<(PathBuf, PathBuf)> {
    let dir = match &args.keep {
        Some(d) => {
            if d.exists() {
                return Err(Failure::Usage(format!(
                    "--keep {}: it already exists; name a new directory",
                    d.display()
                )));
            }
            d.clone()
        }
        None => tmp.join("index"),
    };
    let corpus: PathBuf = match &args.corpus {
        Some(c) => c.clone(),
        None => {
            let path = tmp.join("corpus.jsonl.gz");
            std::fs::write(&path, CORPUS)?;
            path
        }
    };
    Ok((dir, corpus))
}

/// The reading commands on the demo's index, each after the command line that does the same.
fn show_read_commands(store: &app::Store, shown_dir: &str, out: &mut Out) -> CliResult<()> {
    for query in QUERIES {
        out.line(format_args!("$ neardup search {shown_dir} '{query}' -n 4"))?;
        search_in(store, query, app::SearchSettings::new(4), out)?;
        out.line("")?;
    }

    out.line(format_args!("$ neardup stats {shown_dir} --clusters"))?;
    stats_in(store, 5, true, out)?;
    out.line("")?;

    // A near-duplicate lookup for the first document of the largest group.
    let largest = largest_group_leader(store)?;
    if let Some(id) = largest {
        out.line(format_args!("$ neardup similar {shown_dir} --id {id}"))?;
        similar_in(store, app::SimilarTo::Id(&id), None, 10, out)?;
        out.line("")?;
    }

    // A page found under other sites' chrome: the copies simhash misses and the rule finds.
    if let Some(id) = copied_under_other_chrome(store)? {
        out.line(
            "The same page under other sites' menus and footers: simhash alone misses these \
             copies (distance > 3);",
        )?;
        out.line("the rule's MinHash branch finds them (r = estimated resemblance).")?;
        out.line(format_args!("$ neardup similar {shown_dir} --id {id}"))?;
        similar_in(store, app::SimilarTo::Id(&id), None, 10, out)?;
        out.line("")?;
    }

    out.line(format_args!(
        "$ neardup clusters {shown_dir} -n 3 --members 3"
    ))?;
    clusters_in(store, Default::default(), 3, 2, 3, ClusterMode::Leader, out)?;
    out.line("")?;

    out.line(format_args!("$ neardup mirrors {shown_dir}"))?;
    mirrors_in(store, None, false, 10, out)?;
    out.line("")?;
    Ok(())
}

/// The first document of the largest group recorded while indexing.
fn largest_group_leader(store: &app::Store) -> CliResult<Option<String>> {
    let searcher = store.index.searcher()?;
    let groups = store.largest_groups(&searcher, 1)?;
    Ok(groups.into_iter().next().map(|g| g.group))
}

/// The page with copies on the most other hosts that match it only by resemblance (a copy
/// under another site's chrome), ties by id; `None` when there is none. Cost: one host read
/// and one lookup per document (about a second on the demo corpus).
fn copied_under_other_chrome(store: &app::Store) -> CliResult<Option<String>> {
    let searcher = store.index.lookups()?;
    let mut hosts: HashMap<DocAddress, String> = HashMap::new();
    for (ord, segment) in searcher.searcher().segment_readers().iter().enumerate() {
        for doc in segment.doc_ids_alive() {
            let address = DocAddress::new(ord as u32, doc);
            hosts.insert(address, store.load_doc(searcher.searcher(), address)?.host);
        }
    }
    let mut best: Option<(usize, String)> = None;
    for (address, host) in &hosts {
        let Some(signature) = searcher.signature_at(*address) else {
            continue;
        };
        if host.is_empty() {
            continue;
        }
        let other_hosts: BTreeSet<&str> = searcher
            .lookup_signature_addresses(&signature)?
            .into_iter()
            .filter(|(_, e)| matches!(e, Evidence::Resemblance { .. }))
            .filter_map(|(a, _)| hosts.get(&a).map(String::as_str))
            .filter(|h| !h.is_empty() && *h != host.as_str())
            .collect();
        if other_hosts.is_empty() {
            continue;
        }
        let id = searcher.id_of(*address)?.unwrap_or_default();
        let better = match &best {
            None => true,
            Some((n, best_id)) => {
                other_hosts.len() > *n || (other_hosts.len() == *n && id < *best_id)
            }
        };
        if better {
            best = Some((other_hosts.len(), id));
        }
    }
    Ok(best.map(|(_, id)| id))
}
