//! `neardup pairs` and `neardup clusters`: batch jobs over the whole index
//! ([`NearDupGraph`](tantivy_simhash::batch::NearDupGraph)).

use super::output::{count, one_line};
use super::store::{self, Store};
use super::{CliResult, ClustersArgs, Failure, Out, PairsArgs, Status};
use serde::Serialize;
use tantivy_simhash::batch::NearDupGraph;

fn graph(store: &Store, k: Option<u32>) -> CliResult<NearDupGraph> {
    let k = store.checked_k(k)?;
    let searcher = store.index.searcher()?;
    Ok(NearDupGraph::with_max_distance(
        store.index.fields(),
        &searcher,
        k,
    )?)
}

#[derive(Serialize)]
struct PairLine<'a> {
    a: &'a str,
    b: &'a str,
    distance: u32,
}

pub(super) fn pairs(args: &PairsArgs) -> CliResult<Status> {
    let store = store::open(&args.dir)?;
    let graph = graph(&store, args.k)?;
    let mut out = Out::new(args.json);
    let mut printed = 0usize;
    let mut total = 0u64;
    // The graph calls back for every pair; after a write error (a closed pipe) or the limit,
    // the rest are only counted.
    let mut failed: Option<Failure> = None;
    graph.for_each_id_pair(|a, b, distance| {
        total += 1;
        if failed.is_some() || (args.limit > 0 && printed >= args.limit) {
            return;
        }
        let (a, b) = if a <= b { (a, b) } else { (b, a) };
        let written = if out.is_json() {
            out.json_line(&PairLine { a, b, distance })
        } else {
            out.line(format_args!("{distance}\t{a}\t{b}"))
        };
        match written {
            Ok(()) => printed += 1,
            Err(e) => failed = Some(e),
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    if !out.is_json() {
        super::eprintln_quiet(&format!(
            "{} within distance {} among {}{}",
            count(total, "pair", "pairs"),
            graph.max_distance(),
            count(graph.num_docs() as u64, "document", "documents"),
            if printed < total as usize {
                format!(" ({printed} printed)")
            } else {
                String::new()
            }
        ));
    }
    out.flush()?;
    Ok(Status::Done)
}

#[derive(Serialize)]
struct ClusterLine<'a> {
    cluster: &'a str,
    size: usize,
    members: Vec<&'a str>,
}

pub(super) fn clusters(args: &ClustersArgs) -> CliResult<Status> {
    let store = store::open(&args.dir)?;
    let mut out = Out::new(args.json);
    clusters_in(
        &store,
        args.k,
        args.limit,
        args.min_size,
        args.members,
        &mut out,
    )?;
    out.flush()?;
    Ok(Status::Done)
}

/// Prints the largest clusters (connected components of the pairs within k), largest first.
pub(crate) fn clusters_in(
    store: &Store,
    k: Option<u32>,
    limit: usize,
    min_size: usize,
    members: usize,
    out: &mut Out,
) -> CliResult<()> {
    let graph = graph(store, k)?;
    let clusters = graph.clusters()?;
    let mut sorted: Vec<_> = clusters
        .iter()
        .filter(|c| c.len() >= min_size.max(2))
        .collect();
    sorted.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.id.cmp(&b.id)));
    let total = sorted.len();
    let clustered: usize = clusters.iter().map(|c| c.len()).sum();
    if limit > 0 {
        sorted.truncate(limit);
    }
    if !out.is_json() {
        out.line(format_args!(
            "{} of at least {} documents within distance {} (chains of pairs), {} in \
             clusters of {}; largest first",
            count(total as u64, "cluster", "clusters"),
            min_size.max(2),
            graph.max_distance(),
            count(clustered as u64, "document", "documents"),
            clusters.num_docs()
        ))?;
    }
    let searcher = graph.searcher();
    for c in sorted {
        if out.is_json() {
            out.json_line(&ClusterLine {
                cluster: &c.id,
                size: c.len(),
                members: c.members.iter().map(|m| m.id.as_str()).collect(),
            })?;
            continue;
        }
        let first = store.load_doc(searcher, c.members[0].address)?;
        out.line(format_args!(
            "{:>6}  {}  {}",
            c.len(),
            c.id,
            one_line(&first.title, 60)
        ))?;
        for m in c.members.iter().skip(1).take(members) {
            let shown = store.load_doc(searcher, m.address)?;
            out.line(format_args!(
                "          {}  {}",
                m.id,
                one_line(&shown.title, 60)
            ))?;
        }
        if c.len() > members + 1 {
            out.line(format_args!("          … {} more", c.len() - members - 1))?;
        }
    }
    Ok(())
}
