//! `neardup mirrors`: which hosts carry copies of which other hosts' pages
//! (`MirrorFinder`).

use super::app::{self, Store};
use super::{CliResult, MirrorsArgs, Out, Status};
use tantivy_simhash::MirrorStats;
use tantivy_simhash::{HostPair, MirrorFinder};

pub(super) fn mirrors(args: &MirrorsArgs) -> CliResult<Status> {
    let store = app::open(&args.dir)?;
    let mut out = Out::new(args.json);
    mirrors_in(&store, args.host.as_deref(), args.all, args.limit, &mut out)?;
    out.flush()?;
    Ok(Status::Done)
}

/// Prints the mirror report: every mirror pair (or, with `all`, every host pair sharing a
/// page), or the hosts that copy `host`.
pub(crate) fn mirrors_in(
    store: &Store,
    host: Option<&str>,
    all: bool,
    limit: usize,
    out: &mut Out,
) -> CliResult<()> {
    let found = app::mirrors(store, host, all)?;
    let (finder, report) = (&found.finder, &found.report);
    if report.stats.hosts == 0 {
        // Without hosts there is nothing to compare: say where hosts come from.
        super::eprintln_quiet(&format!(
            "no document of the index has a host (the input field `{}`): mirrors compares the \
             pages of different hosts; index the input with --host-field NAME, the JSON field \
             that holds each page's host or site",
            store.record.fields.host
        ));
    }
    let mut shown: Vec<&HostPair> = found.pairs.iter().collect();
    let total = shown.len();
    if limit > 0 {
        shown.truncate(limit);
    }
    if out.is_json() {
        for p in shown {
            out.json_line(p)?;
        }
        return Ok(());
    }
    print_header(out, finder, &report.stats, host, all, total)?;
    if total == 0 {
        return Ok(());
    }
    print_pairs(out, &shown)
}

/// The run's counts and what the table below lists.
fn print_header(
    out: &mut Out,
    finder: &MirrorFinder,
    s: &MirrorStats,
    host: Option<&str>,
    all: bool,
    total: usize,
) -> CliResult<()> {
    out.line(format_args!(
        "{} pages on {} hosts; {} with content beyond the site chrome ({:.0}% of words were chrome); \
         {} cross-host page pairs within distance {}{}",
        s.pages,
        s.hosts,
        s.content_pages,
        s.chrome_share * 100.0,
        s.page_pairs,
        finder.config().max_distance,
        match finder.config().min_resemblance {
            Some(t) => format!(" or of resemblance >= {t}"),
            None => String::new(),
        }
    ))?;
    let what = if all {
        "host pairs sharing pages"
    } else {
        "mirror pairs"
    };
    match host {
        Some(h) => out.line(format_args!("{total} {what} with {h}, best first:"))?,
        None => out.line(format_args!(
            "{total} {what} (shared pages >= {} or >= {:.0}% of the smaller host), best first:",
            finder.config().min_shared_pages,
            finder.config().min_share * 100.0
        ))?,
    }
    Ok(())
}

/// One row a host pair, with its nearest example page pair.
fn print_pairs(out: &mut Out, shown: &[&HostPair]) -> CliResult<()> {
    out.line(format_args!(
        "  {:<28} {:<28} {:>6} {:>11} {:>11} {:>6}",
        "host a", "host b", "shared", "a copied", "b copied", "score"
    ))?;
    for p in shown {
        out.line(format_args!(
            "  {:<28} {:<28} {:>6} {:>4}/{:<4}{:>3.0}% {:>4}/{:<4}{:>3.0}% {:>6.2}{}",
            p.host_a,
            p.host_b,
            p.shared_pages,
            p.matched_a,
            p.pages_a,
            p.share_a * 100.0,
            p.matched_b,
            p.pages_b,
            p.share_b * 100.0,
            p.score,
            if p.is_mirror {
                ""
            } else {
                "  (below the rule)"
            }
        ))?;
        if let Some(e) = p.examples.first() {
            out.line(format_args!(
                "      e.g. {} ~ {} (distance {})",
                e.page_a, e.page_b, e.distance
            ))?;
        }
    }
    Ok(())
}
