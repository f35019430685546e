//! The summary `neardup index` prints after a run: a JSON line, or a small table.

use super::app::{IngestCounts, Store};
use super::output::count;
use super::{CliResult, Out};
use serde::Serialize;
use std::path::Path;

/// What an indexing run did.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct Summary {
    /// Input lines read (blank lines included).
    pub lines: u64,
    /// What happened to the documents read (added, tagged, rejected, skipped ids, ...).
    #[serde(flatten)]
    pub counts: IngestCounts,
    /// Bad lines skipped (`--skip-bad`).
    pub skipped_bad: u64,
    /// Blank lines (ignored).
    pub blank: u64,
    /// Seconds spent.
    pub seconds: f64,
    /// Documents in the index after the run.
    pub index_documents: u64,
    /// Segments after the run.
    pub index_segments: usize,
    /// Whether a signal (Ctrl-C, SIGTERM, SIGHUP) stopped the run (what was read before was
    /// committed).
    pub interrupted: bool,
    /// The signal that stopped the run (`SIGINT`, `SIGTERM`, `SIGHUP`), when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<&'static str>,
    /// The exit status for that signal (128 + its number).
    #[serde(skip)]
    pub signal_status: u8,
}

/// Prints the summary: a JSON line in JSON mode, a small table otherwise.
pub(crate) fn print_summary(out: &mut Out, store: &Store, s: &Summary) -> CliResult<()> {
    if out.is_json() {
        #[derive(Serialize)]
        struct Line<'a> {
            event: &'static str,
            index: &'a Path,
            #[serde(flatten)]
            summary: &'a Summary,
        }
        return out.json_line(&Line {
            event: "summary",
            index: &store.dir,
            summary: s,
        });
    }
    out.line(summary_headline(store, s))?;
    out.line(format_args!(
        "  added    {:>9}   (policy {}; tagged as near-duplicates: {}, replacing others: {})",
        s.counts.added, store.record.policy, s.counts.tagged, s.counts.replacing
    ))?;
    out.line(format_args!(
        "  rejected {:>9}   (near-duplicates of documents already indexed)",
        s.counts.rejected
    ))?;
    if s.counts.replaced > 0 {
        out.line(format_args!(
            "  replaced {:>9}   (older near-duplicates deleted)",
            s.counts.replaced
        ))?;
    }
    out.line(format_args!(
        "  skipped  {:>9}   (bad lines: {}, ids already indexed: {}, ids replaced earlier: {})",
        s.skipped_bad + s.counts.skipped_existing_id + s.counts.skipped_replaced_id,
        s.skipped_bad,
        s.counts.skipped_existing_id,
        s.counts.skipped_replaced_id
    ))?;
    out.line(format_args!(
        "  index now holds {} in {}",
        count(s.index_documents, "document", "documents"),
        count(s.index_segments as u64, "segment", "segments")
    ))?;
    if s.skipped_bad > 0 {
        out.line(format_args!(
            "  {} skipped (exit status 3)",
            count(s.skipped_bad, "bad line was", "bad lines were")
        ))?;
    }
    Ok(())
}

/// The summary's first line: how many documents, where, how fast, and whether interrupted.
fn summary_headline(store: &Store, s: &Summary) -> String {
    let docs = s.counts.added + s.counts.rejected;
    format!(
        "{} {} into {} in {:.1} s ({:.0} docs/s){}",
        if s.interrupted {
            "interrupted after"
        } else {
            "indexed"
        },
        count(docs, "document", "documents"),
        store.dir.display(),
        s.seconds,
        docs as f64 / s.seconds.max(1e-3),
        if s.interrupted {
            "; what was read was committed"
        } else {
            ""
        },
    )
}
