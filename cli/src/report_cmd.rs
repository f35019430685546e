//! `neardup report`: the review report, one self-contained HTML file.

use super::app;
use super::{CliResult, Failure, Status};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;
use tantivy_simhash::app::ReportCaps;

#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    /// The index directory.
    dir: PathBuf,
    /// The HTML file to write (`-`: stdout).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: PathBuf,
    /// Clusters listed, largest first (the rest are counted).
    #[arg(long, value_name = "N", default_value_t = 20_000)]
    max_clusters: usize,
    /// Clusters whose members and texts the file carries, largest first.
    #[arg(long, value_name = "N", default_value_t = 300)]
    detailed: usize,
    /// Members carried per cluster, besides its leader.
    #[arg(long, value_name = "N", default_value_t = 20)]
    members: usize,
    /// Bytes of each text carried.
    #[arg(long, value_name = "BYTES", default_value_t = 20_000)]
    max_text_bytes: usize,
}

pub(crate) fn run(args: &ReportArgs) -> CliResult<Status> {
    let store = app::open(&args.dir)?;
    let started = Instant::now();
    let caps = ReportCaps {
        max_clusters_listed: args.max_clusters,
        detailed_clusters: args.detailed,
        members_per_cluster: args.members,
        max_text_bytes: args.max_text_bytes,
    };
    let to_stdout = args.output.as_os_str() == "-";
    let stats = if to_stdout {
        let (html, stats) = store.report(caps)?;
        let mut out = std::io::stdout().lock();
        out.write_all(&html).map_err(Failure::from)?;
        out.flush().map_err(Failure::from)?;
        stats
    } else {
        store.write_report_file(&args.output, caps)?
    };
    super::eprintln_quiet(&format!(
        "{} documents, {} clusters ({} listed, {} with members and texts, {} member pairs \
         explained), {} mirror host pairs: {} bytes{} in {:.2} s",
        stats.documents,
        stats.clusters,
        stats.clusters_listed,
        stats.clusters_detailed,
        stats.pairs_shown,
        stats.mirror_pairs,
        stats.bytes,
        if to_stdout {
            String::new()
        } else {
            format!(" to {}", args.output.display())
        },
        started.elapsed().as_secs_f64()
    ));
    Ok(Status::Done)
}
