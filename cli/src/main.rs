//! The `neardup` command line: a thin layer over the library. Each subcommand parses its
//! arguments, calls the library and prints; the index it writes records how to reopen it, so
//! later commands need only the index directory.
//!
//! Exit status (also in `neardup --help` and the README):
//!
//! | status | meaning |
//! |---|---|
//! | 0 | success (also when a read command's stdout is closed early, e.g. `neardup pairs DIR \| head`) |
//! | 1 | error: bad input line (without `--skip-bad`), unreadable file, not an index, scheme mismatch |
//! | 2 | usage: unknown flag, missing argument, invalid value |
//! | 3 | `index --skip-bad` finished but skipped bad input lines (counted in the summary) |
//! | 130, 143, 129 | `index` stopped by SIGINT (Ctrl-C), SIGTERM or SIGHUP; what was read before was committed |
//! | 141 | `index` stopped because its stdout was closed (SIGPIPE, e.g. `\| head`); what was read before was committed |

mod batch_cmds;
mod demo;
mod explain_cmd;
mod index_cmd;
mod index_summary;
mod input;
mod mirrors_cmd;
mod output;
mod read_cmds;
mod report_cmd;
mod signals;

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;
use tantivy_simhash::app;
use tantivy_simhash::{Error, Policy};

pub(crate) use output::Out;

/// Exit status: success.
const EXIT_OK: u8 = 0;
/// Exit status: an error (the message says what and what to do).
const EXIT_ERROR: u8 = 1;
/// Exit status: bad usage (clap's own code for argument errors).
const EXIT_USAGE: u8 = 2;
/// Exit status: bad input lines were skipped (`--skip-bad`).
const EXIT_SKIPPED: u8 = 3;

const EXIT_CODES_HELP: &str = "\
Exit status:
  0    success (also when a read command's stdout is closed early, e.g.
       `neardup pairs DIR | head`: nothing is lost)
  1    error: a bad input line (without --skip-bad), an unreadable file, a directory that is
       not a neardup index, an index built with another scheme or layout
  2    usage: unknown flag, missing argument, invalid value
  3    `index --skip-bad` finished, but bad input lines were skipped (see the summary)
  130  `index` was interrupted by Ctrl-C (SIGINT); the documents read before were committed
  143  the same for SIGTERM (how containers, systemd and schedulers stop programs)
  129  the same for SIGHUP (the terminal was closed)
  141  the same when `index`'s stdout was closed (SIGPIPE, e.g. `neardup index ... | head`)";

/// Near-duplicate detection on tantivy indexes: index JSONL, search with near-duplicates
/// collapsed, find near-duplicates of a document, find mirror sites.
#[derive(Debug, Parser)]
#[command(name = "neardup", version, after_help = EXIT_CODES_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Index JSONL files (plain or gzip; `-` reads stdin) into DIR, with near-duplicate detection.
    Index(IndexArgs),
    /// Full-text search, one result per group of near-duplicates (with the group's size).
    Search(SearchArgs),
    /// Near-duplicates of a document of the index (--id) or of a text (--text, --text-file), with
    /// distances.
    Similar(SimilarArgs),
    /// Every pair of documents the index's match rule matches (each pair once), exact
    /// duplicates included.
    ///
    /// The pairs go to stdout, so that `neardup pairs DIR > pairs.tsv` holds nothing else:
    /// `distance<TAB>id<TAB>id<TAB>resemblance` (the simhash distance; the sketches' resemblance
    /// estimate for a pair matched by the resemblance branch, `-` for a simhash match), or JSON
    /// lines with --json. Each pair's smaller id (in byte order) comes first, and the pairs are
    /// sorted by it, then by the other id: the same input gives the same bytes, however it was
    /// indexed. The count line ("N pairs by the rule (...) among M documents") goes to stderr,
    /// and is left out with --json.
    Pairs(PairsArgs),
    /// Clusters of near-duplicates, largest first: by leader (default: in input order, each
    /// document joins the first earlier leader it matches, else leads), or connected
    /// components (`--mode components`: chains of pairs).
    Clusters(ClustersArgs),
    /// Mirror sites: host pairs that copy each other's pages, or the hosts that copy one host.
    Mirrors(MirrorsArgs),
    /// What an index holds: documents, segments, scheme, layout, field mapping, largest clusters.
    Stats(StatsArgs),
    /// Index a small corpus shipped with neardup into a temporary directory and tour the commands.
    Demo(DemoArgs),
    /// Why two documents (or two texts) are near-duplicates, or why not: every part of the
    /// match rule, the lines left out as site chrome, and a word-level diff.
    Explain(explain_cmd::ExplainArgs),
    /// A review report: one self-contained HTML file (summary, histograms, clusters largest
    /// first, each member beside its leader with the differences highlighted and the evidence).
    Report(report_cmd::ReportArgs),
}

/// Which hit of a collapsed group `search` shows as its leader, by the order documents were
/// added (the store's sequence field).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum LeaderChoice {
    /// The copy added last.
    Newest,
    /// The copy added first.
    Oldest,
}

/// How `clusters` groups documents (the library's `ClusterMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ClusterModeArg {
    /// Every member matches its cluster's leader (the first added).
    Leader,
    /// Connected components of the pairs.
    Components,
}

impl From<ClusterModeArg> for tantivy_simhash::ClusterMode {
    fn from(m: ClusterModeArg) -> Self {
        match m {
            ClusterModeArg::Leader => tantivy_simhash::ClusterMode::Leader,
            ClusterModeArg::Components => tantivy_simhash::ClusterMode::Components,
        }
    }
}

/// What to do with a document that has a near-duplicate already in the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum DedupPolicy {
    /// Index every document; store no groups (the fastest).
    Off,
    /// Do not index it (counted as rejected).
    Reject,
    /// Index it and record its group: that of the nearest document already indexed (of equally
    /// near ones, the first in input order), whatever the threads do.
    Tag,
    /// Index it and delete its near-duplicates: the newest copy wins. The ids it replaced are
    /// recorded, so a rerun skips them instead of bringing old copies back.
    Replace,
}

/// The flag's values are the library's policies; the mapping is all the command line adds.
impl From<DedupPolicy> for Policy {
    fn from(p: DedupPolicy) -> Policy {
        match p {
            DedupPolicy::Off => Policy::Off,
            DedupPolicy::Reject => Policy::Reject,
            DedupPolicy::Tag => Policy::Tag,
            DedupPolicy::Replace => Policy::Replace,
        }
    }
}

#[derive(Debug, Args)]
struct IndexArgs {
    /// JSONL files, one JSON object per line, plain or gzip (detected from the content); `-` is
    /// stdin.
    #[arg(required = true, value_name = "FILES")]
    files: Vec<PathBuf>,
    /// The index directory: created if missing or empty; an existing neardup index is added to.
    #[arg(long, value_name = "DIR")]
    index: PathBuf,
    /// JSON field holding the document id: a string, or an integer of any length (kept as its
    /// decimal text, so 42 and "42" are the same id; a number with a fraction or an exponent
    /// is a bad line). Ids are unique in an index (default: `id`, or the field the index's
    /// last run read).
    #[arg(long, value_name = "NAME")]
    id_field: Option<String>,
    /// JSON field holding the text to index and fingerprint (default: `text`, or the index's).
    #[arg(long, value_name = "NAME")]
    text_field: Option<String>,
    /// JSON field holding the title, optional in each document, fingerprinted with the text
    /// (default: `title`, or the index's).
    #[arg(long, value_name = "NAME")]
    title_field: Option<String>,
    /// JSON field holding the host or site, optional in each document, used by `mirrors`
    /// (default: `host`, or the index's).
    #[arg(long, value_name = "NAME")]
    host_field: Option<String>,
    /// How text is split into words: `auto` (words, Chinese through jieba), `han-chars`
    /// (Chinese character by character), or a stemming language (english, french, german,
    /// spanish, italian, portuguese, dutch, danish, swedish, norwegian, finnish, hungarian,
    /// romanian, russian, greek, arabic, tamil, turkish). Fixed when the index is created.
    #[arg(long, value_name = "LANGUAGE")]
    language: Option<String>,
    /// The match rule's simhash radius: documents whose fingerprints (64 bits) are within this
    /// Hamming distance match, 0..=9 (so do documents that share a MinHash band and whose
    /// sketches estimate resemblance >= 0.55). Fixed when the index is created; default 3.
    #[arg(long, short = 'k', value_name = "K")]
    k: Option<u32>,
    /// What to do with a near-duplicate of a document already indexed (default: tag).
    #[arg(long, value_enum, value_name = "POLICY")]
    dedup: Option<DedupPolicy>,
    /// Skip (and count) bad lines instead of stopping at the first; the exit status is then 3
    /// if any line was skipped.
    #[arg(long)]
    skip_bad: bool,
    /// Longest accepted input line, in bytes; a longer line is a bad line.
    #[arg(long, value_name = "BYTES", default_value_t = 32 << 20)]
    max_line_bytes: usize,
    /// Commit after this many documents (0: only at the end). Committed documents survive a
    /// crash; rerunning the same command skips ids already in the index.
    #[arg(long, value_name = "DOCS", default_value_t = 100_000)]
    commit_every: u64,
    /// Memory for tantivy's indexing threads, in MB (at least 15 per thread).
    #[arg(long, value_name = "MB", default_value_t = 256)]
    memory_mb: usize,
    /// No progress bar.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Print one JSON object per line on stdout: each rejected, tagged or replacing document,
    /// then the summary.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct SearchArgs {
    /// The index directory.
    dir: PathBuf,
    /// The query, in tantivy's query language (words, "phrases", +must, -not, title:word).
    query: String,
    /// How many results (groups, when collapsed).
    #[arg(long, short = 'n', default_value_t = 10)]
    limit: usize,
    /// Show every matching document, near-duplicates included, instead of one per group.
    #[arg(long)]
    no_collapse: bool,
    /// Collapse by the value of this fast field instead of by near-duplicates: one result per
    /// value (`host`: one per site; `group`: one per tag of `--dedup tag`).
    #[arg(long, value_name = "FIELD", conflicts_with = "no_collapse")]
    distinct_field: Option<String>,
    /// Which hit of a group is shown as its leader: `newest` (the copy added to the index last)
    /// or `oldest` (added first), among the group's hits in the top 64 x `--limit` hits;
    /// default: the best-ranked one. The group still ranks where its best hit ranks.
    #[arg(long, value_enum, value_name = "WHICH", conflicts_with = "no_collapse")]
    leader: Option<LeaderChoice>,
    /// Print one flat list instead of groups: the groups' leaders in rank order, then the other
    /// hits of those groups in the top 64 x `--limit` hits (moved behind the leaders, not
    /// dropped), each marked as moved. `--limit` counts the leaders.
    #[arg(long, conflicts_with = "no_collapse")]
    derank: bool,
    /// One JSON object per line on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["id", "text", "text_file"])))]
struct SimilarArgs {
    /// The index directory.
    dir: PathBuf,
    /// The id of a document in the index.
    #[arg(long)]
    id: Option<String>,
    /// A text, fingerprinted with the index's scheme.
    #[arg(long)]
    text: Option<String>,
    /// A file holding the text (UTF-8; `-` reads stdin): for texts too long for the command
    /// line, e.g. `--text-file page.txt` instead of `--text "$(cat page.txt)"`.
    #[arg(long, value_name = "PATH")]
    text_file: Option<PathBuf>,
    /// Simhash-only: report the documents within this Hamming distance (at most the index's
    /// k) instead of those the index's match rule matches (the default: simhash within k, or
    /// a shared MinHash band and an estimated resemblance >= 0.55).
    #[arg(long, short = 'k', value_name = "K")]
    k: Option<u32>,
    /// At most this many near-duplicates (0: all).
    #[arg(long, short = 'n', default_value_t = 0)]
    limit: usize,
    /// One JSON object per line on stdout.
    #[arg(long)]
    json: bool,
}

/// The index and the match rule of a batch command (`pairs`, `clusters`).
#[derive(Debug, Args)]
struct BatchRuleArgs {
    /// The index directory.
    dir: PathBuf,
    /// Narrows the rule's simhash branch to this distance (at most the index's k; default:
    /// the index's k); the resemblance branch is unchanged.
    #[arg(long, short = 'k', value_name = "K")]
    k: Option<u32>,
    /// Opt-in: only pairs whose sketches estimate at least this resemblance (0-1), whichever
    /// branch of the rule matched them; clusters are made of those pairs. For a reader who
    /// counts only pairs at resemblance 0.8 as duplicates, 0.67 (the rule's own threshold,
    /// 0.55, aims at 0.5; its simhash branch can match pairs under it).
    #[arg(long, value_name = "R")]
    min_resemblance: Option<f32>,
}

impl BatchRuleArgs {
    fn narrowing(&self) -> batch_cmds::Narrowing {
        batch_cmds::Narrowing {
            k: self.k,
            min_resemblance: self.min_resemblance,
        }
    }
}

#[derive(Debug, Args)]
struct PairsArgs {
    #[command(flatten)]
    rule: BatchRuleArgs,
    /// Print at most this many pairs (0: all; all are still counted).
    #[arg(long, short = 'n', default_value_t = 0)]
    limit: usize,
    /// One JSON object per line on stdout: {"a", "b", "distance", "match", "resemblance"}
    /// ("match": "simhash" or "resemblance"; "resemblance" only for a resemblance match).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct ClustersArgs {
    #[command(flatten)]
    rule: BatchRuleArgs,
    /// At most this many clusters, largest first (0: all).
    #[arg(long, short = 'n', default_value_t = 10)]
    limit: usize,
    /// Only clusters of at least this many documents.
    #[arg(long, value_name = "DOCS", default_value_t = 2)]
    min_size: usize,
    /// Members listed under each cluster in human output (JSON lists them all).
    #[arg(long, value_name = "N", default_value_t = 5)]
    members: usize,
    /// `leader`: in input order, a document joins the cluster of the first earlier leader it
    /// matches directly, else leads one (every member matches its leader); `components`:
    /// documents linked by chains of matching pairs (two members may share little).
    #[arg(long, value_enum, value_name = "MODE", default_value = "leader")]
    mode: ClusterModeArg,
    /// One JSON object per line on stdout: {"cluster", "size", "members"}.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct MirrorsArgs {
    /// The index directory (its documents need a host: see `index --host-field`).
    dir: PathBuf,
    /// Only the hosts that carry copies of this host's pages.
    #[arg(long, value_name = "HOST")]
    host: Option<String>,
    /// Also host pairs that share pages but stay below the mirror rule.
    #[arg(long)]
    all: bool,
    /// At most this many host pairs (0: all).
    #[arg(long, short = 'n', default_value_t = 0)]
    limit: usize,
    /// One JSON object per line on stdout (one host pair each).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct StatsArgs {
    /// The index directory.
    dir: PathBuf,
    /// How many of the largest groups (and, with --clusters, clusters) to list.
    #[arg(long, short = 'n', default_value_t = 5)]
    limit: usize,
    /// Also list the largest clusters by the rule: this joins every document with every other
    /// (what `neardup clusters` does), so it takes as long as `clusters`; without it `stats` reads
    /// only the index's metadata and its group column.
    #[arg(long)]
    clusters: bool,
    /// One JSON object on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct DemoArgs {
    /// Keep the demo index in DIR (must not exist yet) instead of a temporary directory.
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
    /// Index this JSONL file instead of the corpus built into neardup.
    #[arg(long, value_name = "FILE")]
    corpus: Option<PathBuf>,
}

/// How a command ended, when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    /// Everything done.
    Done,
    /// Done, but bad input lines were skipped.
    SkippedBad,
    /// Stopped by a signal after committing; the exit status (128 + the signal's number).
    Interrupted(u8),
}

/// Why a command failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Bad usage: an invalid value or combination of flags.
    Usage(String),
    /// A library error (bad input, I/O, tantivy, mismatch).
    Error(Error),
    /// An error of the command line itself (not an index, a fixed setting changed).
    Message(String),
    /// Stdout was closed by the reader: stop quietly.
    BrokenPipe,
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        match e {
            Error::Io(io) if io.kind() == io::ErrorKind::BrokenPipe => Failure::BrokenPipe,
            // The store's own errors keep the command line's two kinds: usage (exit 2) and
            // the directory's problems (exit 1, the message alone).
            Error::Setting(message) => Failure::Usage(message),
            Error::Store(message) | Error::Request(message) => Failure::Message(message),
            other => Failure::Error(other),
        }
    }
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::from(Error::Io(e))
    }
}

impl From<tantivy::TantivyError> for Failure {
    fn from(e: tantivy::TantivyError) -> Self {
        Failure::Error(Error::Tantivy(e))
    }
}

pub(crate) type CliResult<T> = std::result::Result<T, Failure>;

/// Runs the command line with the process arguments and returns the exit status.
fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with status 0; usage errors to stderr with 2.
            let code = e.exit_code();
            if e.print().is_err() {
                return ExitCode::from(EXIT_ERROR);
            }
            return ExitCode::from(u8::try_from(code).unwrap_or(EXIT_USAGE));
        }
    };
    let result = match cli.command {
        Command::Index(args) => index_cmd::run(&args),
        Command::Search(args) => read_cmds::search(&args),
        Command::Similar(args) => read_cmds::similar(&args),
        Command::Pairs(args) => batch_cmds::pairs(&args),
        Command::Clusters(args) => batch_cmds::clusters(&args),
        Command::Mirrors(args) => mirrors_cmd::mirrors(&args),
        Command::Stats(args) => read_cmds::stats(&args),
        Command::Demo(args) => demo::run(&args),
        Command::Explain(args) => explain_cmd::run(&args),
        Command::Report(args) => report_cmd::run(&args),
    };
    match result {
        Ok(Status::Done) => ExitCode::from(EXIT_OK),
        Ok(Status::SkippedBad) => ExitCode::from(EXIT_SKIPPED),
        Ok(Status::Interrupted(status)) => ExitCode::from(status),
        Err(Failure::BrokenPipe) => ExitCode::from(EXIT_OK),
        Err(Failure::Usage(msg)) => {
            eprintln_quiet(&format!(
                "error: {msg}\n\nFor more information, try '--help'."
            ));
            ExitCode::from(EXIT_USAGE)
        }
        Err(Failure::Error(e)) => {
            eprintln_quiet(&format!("error: {e}"));
            ExitCode::from(EXIT_ERROR)
        }
        Err(Failure::Message(msg)) => {
            eprintln_quiet(&format!("error: {msg}"));
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// Writes a line to stderr, ignoring failures (there is nowhere left to report them).
pub(crate) fn eprintln_quiet(msg: &str) {
    use std::io::Write;
    let _ = writeln!(io::stderr().lock(), "{msg}");
}
