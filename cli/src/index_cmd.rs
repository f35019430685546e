//! `neardup index`: JSONL files into an index, through [`DedupWriter`](tantivy_simhash::DedupWriter).

use super::app::{self, FrontEnd, Ingest, Requested, Store};
use super::index_summary::{print_summary, Summary};
use super::input::{parse_line, FieldMap, InputDoc, JsonlReader, Parsed, RawLine};
use super::output::{count, EvidenceJson};
use super::signals::{catch_interrupts, stop_signal, SIGPIPE};
use super::{eprintln_quiet, CliResult, Failure, IndexArgs, Out, Status};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tantivy_simhash::{Error, IdPolicy, Outcome, Policy};

/// Documents fingerprinted together (in parallel) before they are added in order.
const BATCH: usize = 256;
/// Bad lines reported one by one under `--skip-bad`; the rest are only counted.
const MAX_REPORTED_BAD: u64 = 20;

/// How an indexing run behaves.
pub(crate) struct IndexOptions {
    pub skip_bad: bool,
    pub max_line_bytes: usize,
    pub commit_every: u64,
    pub memory_mb: usize,
    pub quiet: bool,
}

#[derive(Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Event<'a> {
    Rejected {
        id: &'a str,
        of: &'a str,
        #[serde(flatten)]
        evidence: EvidenceJson,
    },
    Tagged {
        id: &'a str,
        group: &'a str,
        of: &'a str,
        #[serde(flatten)]
        evidence: EvidenceJson,
    },
    Replaced {
        id: &'a str,
        replaced: &'a [String],
        #[serde(flatten)]
        evidence: EvidenceJson,
    },
}

impl<'a> Event<'a> {
    /// The event of document `id`'s outcome; `None` for a plain add or a skipped id.
    fn of(outcome: &'a Outcome, id: &'a str) -> Option<Event<'a>> {
        match outcome {
            Outcome::Added { .. } | Outcome::Queued | Outcome::IdTaken { .. } => None,
            Outcome::Duplicate { of, evidence, .. } => Some(Event::Rejected {
                id,
                of,
                evidence: (*evidence).into(),
            }),
            Outcome::Tagged {
                group,
                of,
                evidence,
                ..
            } => Some(Event::Tagged {
                id,
                group,
                of,
                evidence: (*evidence).into(),
            }),
            Outcome::Replaced {
                replaced, evidence, ..
            } => Some(Event::Replaced {
                id,
                replaced,
                evidence: (*evidence).into(),
            }),
        }
    }
}

pub(super) fn run(args: &IndexArgs) -> CliResult<Status> {
    // Before anything is created.
    app::check_memory(FrontEnd::CommandLine, args.memory_mb, None)?;
    if args.max_line_bytes == 0 {
        return Err(Failure::Usage("--max-line-bytes must be at least 1".into()));
    }
    check_readable(&args.files)?;
    catch_interrupts();
    let req = Requested {
        id_field: args.id_field.clone(),
        text_field: args.text_field.clone(),
        title_field: args.title_field.clone(),
        host_field: args.host_field.clone(),
        language: args.language.clone(),
        k: args.k,
        policy: args.dedup.map(Policy::from),
    };
    let (store, _created) = app::open_or_create(&args.index, &req)?;
    let opts = IndexOptions {
        skip_bad: args.skip_bad,
        max_line_bytes: args.max_line_bytes,
        commit_every: args.commit_every,
        memory_mb: args.memory_mb,
        quiet: args.quiet,
    };
    let mut out = Out::new(args.json);
    let summary = index_files(&store, &args.files, &opts, &mut out)
        .map_err(|f| failed_write(&args.index, f))?;
    if !summary.interrupted && summary.lines == summary.blank {
        eprintln_quiet(&format!(
            "note: the input held no document ({}); nothing was indexed",
            if summary.lines == 0 {
                "it is empty".to_string()
            } else {
                format!("{}, all blank", count(summary.lines, "line", "lines"))
            }
        ));
    }
    if summary.signal == Some(SIGPIPE.1) {
        // index_files said so on stderr; stdout is gone.
        return Ok(Status::Interrupted(summary.signal_status));
    }
    match print_summary(&mut out, &store, &summary).and_then(|()| out.flush()) {
        Err(Failure::BrokenPipe) => {
            report_closed_stdout(None);
            return Ok(Status::Interrupted(128 + SIGPIPE.0));
        }
        printed => printed?,
    }
    Ok(if summary.interrupted {
        Status::Interrupted(summary.signal_status)
    } else if summary.skipped_bad > 0 {
        Status::SkippedBad
    } else {
        Status::Done
    })
}

/// Fails before anything is written when a file cannot be opened.
fn check_readable(files: &[PathBuf]) -> CliResult<()> {
    let stdin_count = files.iter().filter(|f| f.as_os_str() == "-").count();
    if stdin_count > 1 {
        return Err(Failure::Usage("`-` (stdin) can be given only once".into()));
    }
    for f in files {
        if f.as_os_str() == "-" {
            continue;
        }
        let cannot_open = |e: std::io::Error| {
            Failure::Message(format!(
                "cannot open {}: {e}; nothing was indexed",
                f.display()
            ))
        };
        let meta = std::fs::metadata(f).map_err(cannot_open)?;
        if meta.is_dir() {
            return Err(Failure::Message(format!(
                "{} is a directory; give JSONL files",
                f.display()
            )));
        }
        // Only a regular file is opened to check it: opening and closing a named pipe or a
        // device would end its writer's stream (its producer dies of SIGPIPE).
        if meta.is_file() {
            std::fs::File::open(f).map_err(cannot_open)?;
        }
    }
    Ok(())
}

/// Indexes `files` into `store`, committing every `commit_every` documents, at the end, on a
/// bad line (before failing) and on Ctrl-C (before stopping). Events go to `out` in JSON mode.
pub(crate) fn index_files(
    store: &Store,
    files: &[PathBuf],
    opts: &IndexOptions,
    out: &mut Out,
) -> CliResult<Summary> {
    catch_interrupts();
    let start = Instant::now();
    let (mut run, rx) = Run::start(store, files, opts, start)?;
    let mut last_place: Option<(usize, u64)> = None;
    loop {
        if let Some((number, name)) = stop_signal().or(run.stdout_closed.then_some(SIGPIPE)) {
            run.summary.interrupted = true;
            run.summary.signal = Some(name);
            run.summary.signal_status = 128u8.saturating_add(number);
            break;
        }
        let (file, line, parsed) = match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(ReadMsg::Line { file, line, parsed }) => (file, line, parsed),
            Ok(ReadMsg::Failed(e)) => {
                // Damaged bytes or compression: no later line can be found, so --skip-bad
                // cannot help.
                let advice = "the file cannot be read past this point (--skip-bad skips bad \
                              lines, not damage to the file or its compression): repair or \
                              re-create it, then rerun the same command (documents whose id is \
                              already in the index are skipped)";
                return Err(run.fail_with_commit(Failure::Error(e), advice));
            }
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        run.summary.lines += 1;
        match parsed {
            Ok(Parsed::Blank) => run.summary.blank += 1,
            Ok(Parsed::Doc(doc)) => run.push(doc, out)?,
            Err(message) => {
                let err = Error::Input {
                    path: display_path(&files[file]),
                    line,
                    message,
                };
                run.bad_line(err, opts.skip_bad)?;
            }
        }
        last_place = Some((file, line));
    }
    run.flush(out)?;
    run.commit()?;
    run.progress.finish_and_clear();
    if run.stdout_closed && !run.summary.interrupted {
        // Closed during the last batch: every line was read, only events were lost.
        run.summary.interrupted = true;
        run.summary.signal = Some(SIGPIPE.1);
        run.summary.signal_status = 128u8.saturating_add(SIGPIPE.0);
        report_closed_stdout(None);
    } else if run.stdout_closed {
        report_closed_stdout(Some(place_of(last_place, files)));
    } else if run.summary.interrupted {
        report_interruption(&run.summary, last_place, files);
    }
    // Remember the field mapping and policy of this run as the defaults of the next.
    app::write_record(&store.index, &store.record)?;
    let searcher = store.index.searcher()?;
    run.summary.index_documents = searcher.num_docs();
    run.summary.index_segments = searcher.segment_readers().len();
    run.summary.seconds = start.elapsed().as_secs_f64();
    Ok(run.summary)
}

/// The total size of the input files, for the progress bar; `None` when one is stdin, a pipe
/// or a device, or its size is unknown.
fn input_bytes(files: &[PathBuf]) -> Option<u64> {
    files
        .iter()
        .map(|f| {
            (f.as_os_str() != "-")
                .then(|| {
                    std::fs::metadata(f)
                        .ok()
                        .filter(|m| m.is_file())
                        .map(|m| m.len())
                })
                .flatten()
        })
        .sum()
}

/// Tells where an interrupted run stopped (`last_place`: file number and line) and how to
/// continue.
fn report_interruption(summary: &Summary, last_place: Option<(usize, u64)>, files: &[PathBuf]) {
    let place = place_of(last_place, files);
    eprintln_quiet(&format!(
        "interrupted by {}: committed everything read up to {place}; rerun the same \
         command to continue (documents whose id is already in the index are skipped)",
        summary.signal.unwrap_or("a signal")
    ));
}

/// `FILE:LINE` of `last_place` (file number and line), or "the start".
fn place_of(last_place: Option<(usize, u64)>, files: &[PathBuf]) -> String {
    match last_place {
        Some((file, line)) => format!("{}:{line}", display_path(&files[file]).display()),
        None => "the start".to_string(),
    }
}

/// Says that stdout was closed and what was committed: everything read up to `place`, or
/// (`None`) the whole input, with only output lost.
pub(crate) fn report_closed_stdout(place: Option<String>) {
    let what = match place {
        Some(place) => format!(
            "stopped and committed everything read up to {place}; rerun the same command \
             (with its output going somewhere that reads it all) to continue: documents whose \
             id is already in the index are skipped"
        ),
        None => "every input line was read and committed; only output was lost".to_string(),
    };
    eprintln_quiet(&format!(
        "stdout was closed by the program reading it (SIGPIPE, e.g. `| head`): {what}"
    ));
}

/// A write to the index that failed for want of room (a full disk, a quota, a file size limit),
/// or tantivy's indexing thread stopped by such a failure: say that the committed documents are
/// safe and what to do. Other failures pass unchanged.
fn failed_write(dir: &Path, failure: Failure) -> Failure {
    use std::io::ErrorKind;
    let Failure::Error(Error::Tantivy(e)) = &failure else {
        return failure;
    };
    // tantivy passes some I/O errors on as text (a segment component's write, for one), so the
    // operating system's error number is looked for in the message too.
    let text = e.to_string();
    let kind = match e {
        tantivy::TantivyError::IoError(io) => Some(io.kind()),
        _ => None,
    };
    let thread_stopped = matches!(e, tantivy::TantivyError::ErrorInThread(m)
        if m.contains("index writer was killed"));
    let cause = if kind == Some(ErrorKind::StorageFull) || text.contains("(os error 28)") {
        "the disk is full"
    } else if kind == Some(ErrorKind::QuotaExceeded) || text.contains("(os error 122)") {
        "the disk quota is used up"
    } else if kind == Some(ErrorKind::FileTooLarge) || text.contains("(os error 27)") {
        "a file reached the size limit (ulimit -f)"
    } else if thread_stopped {
        "tantivy's indexing thread stopped, as it does when a write fails (a full disk, a quota, \
         a file size limit)"
    } else {
        return failure;
    };
    Failure::Message(format!(
        "cannot write to {}: {cause} ({e}); the documents of the index's last commit are safe \
         (a commit is recorded only once all its files are written), those read since were not \
         added: make room (or raise the limit), then rerun the same command, which skips the \
         documents already in the index and continues with the rest",
        dir.display()
    ))
}

/// A tantivy index has one writer at a time (a lock file): say who holds it and what to do.
fn writer_busy(dir: &Path, e: Error) -> Failure {
    use tantivy::directory::error::LockError;
    match e {
        Error::Tantivy(tantivy::TantivyError::LockFailure(LockError::LockBusy, _)) => {
            Failure::Message(format!(
                "another `neardup index` (or another program with a tantivy writer) is writing \
                 to {} right now, and an index has one writer at a time; nothing was indexed by \
                 this run: wait for the other run to finish (or stop it: Ctrl-C or SIGTERM \
                 commit what it read), then rerun this command",
                dir.display()
            ))
        }
        Error::Tantivy(tantivy::TantivyError::LockFailure(LockError::IoError(io), _))
            if matches!(
                io.kind(),
                std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
            ) =>
        {
            Failure::Message(format!(
                "cannot write to {} ({io}): adding documents needs write access to the index \
                 directory, reading it does not (search, similar, pairs, clusters, mirrors and \
                 stats work); nothing was indexed: run as a user who may write there, or copy \
                 the index to a writable place",
                dir.display()
            ))
        }
        other => Failure::from(other),
    }
}

/// The name of an input in messages (`-` is stdin).
fn display_path(path: &Path) -> PathBuf {
    if path.as_os_str() == "-" {
        PathBuf::from("<stdin>")
    } else {
        path.to_path_buf()
    }
}

/// What the reader thread sends: a checked line, or why reading failed.
enum ReadMsg {
    Line {
        /// Index into the file list.
        file: usize,
        /// 1-based line number.
        line: u64,
        parsed: Result<Parsed, String>,
    },
    Failed(Error),
}

/// Reads and checks lines on a thread of its own, so that parsing overlaps indexing and a
/// Ctrl-C is seen even while the input (say, stdin) is silent. It stops when the receiver is
/// dropped.
fn spawn_reader(
    files: Vec<PathBuf>,
    fields: FieldMap,
    max_line_bytes: usize,
    consumed: Arc<AtomicU64>,
) -> Receiver<ReadMsg> {
    let (tx, rx) = sync_channel(4 * BATCH);
    std::thread::spawn(move || {
        for (i, path) in files.iter().enumerate() {
            let mut reader = match JsonlReader::open(path, max_line_bytes, consumed.clone()) {
                Ok(r) => r,
                Err(e) => {
                    let _ = tx.send(ReadMsg::Failed(e));
                    return;
                }
            };
            loop {
                let parsed = match reader.next_line() {
                    Ok(None) => break,
                    Ok(Some(RawLine::TooLong(n))) => Err(format!(
                        "the line has {n} bytes, more than --max-line-bytes ({max_line_bytes}); \
                         raise the limit or split the document"
                    )),
                    Ok(Some(RawLine::Line(bytes))) => parse_line(bytes, &fields),
                    Err(e) => {
                        let _ = tx.send(ReadMsg::Failed(e));
                        return;
                    }
                };
                let msg = ReadMsg::Line {
                    file: i,
                    line: reader.line_number(),
                    parsed,
                };
                if tx.send(msg).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

struct Run {
    ingest: Ingest,
    batch: Vec<InputDoc>,
    summary: Summary,
    commit_every: u64,
    progress: ProgressBar,
    consumed: Arc<AtomicU64>,
    start: Instant,
    /// Stdout was closed by its reader (`| head`): events are no longer written, and the run
    /// stops as on a signal.
    stdout_closed: bool,
}

impl Run {
    /// Opens the writer and starts the thread that reads and parses `files`.
    fn start(
        store: &Store,
        files: &[PathBuf],
        opts: &IndexOptions,
        start: Instant,
    ) -> CliResult<(Run, Receiver<ReadMsg>)> {
        let policy = store.record.policy();
        // Ids already indexed (or replaced by a near-duplicate in an earlier run) are skipped,
        // so a rerun over the same input adds only what is new.
        let ingest = store
            .ingest(
                FrontEnd::CommandLine,
                opts.memory_mb,
                None,
                policy,
                IdPolicy::KeepFirst,
            )
            .map_err(|e| writer_busy(&store.dir, e))?;
        let progress = progress_bar(input_bytes(files), opts.quiet);
        let consumed = Arc::new(AtomicU64::new(0));
        let run = Run {
            ingest,
            batch: Vec::with_capacity(BATCH),
            summary: Summary::default(),
            commit_every: opts.commit_every,
            progress,
            consumed: consumed.clone(),
            start,
            stdout_closed: false,
        };
        let rx = spawn_reader(
            files.to_vec(),
            store.record.fields.clone(),
            opts.max_line_bytes,
            consumed,
        );
        Ok((run, rx))
    }
}

impl Run {
    fn push(&mut self, doc: InputDoc, out: &mut Out) -> CliResult<()> {
        self.batch.push(doc);
        if self.batch.len() >= BATCH {
            self.flush(out)?;
            if self.commit_every > 0 && self.ingest.since_commit() >= self.commit_every {
                self.commit()?;
            }
        }
        Ok(())
    }

    /// Adds the batch under the policy and counts the outcomes.
    fn flush(&mut self, out: &mut Out) -> CliResult<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let outcomes = self.ingest.add(std::mem::take(&mut self.batch))?;
        self.summary.counts = self.ingest.counts();
        for (id, outcome) in &outcomes {
            if !out.is_json() || self.stdout_closed {
                continue;
            }
            if let Some(event) = Event::of(outcome, id) {
                match out.json_line(&event) {
                    // The documents are added; the run stops at the next line, as on Ctrl-C.
                    Err(Failure::BrokenPipe) => self.stdout_closed = true,
                    written => written?,
                }
            }
        }
        self.tick();
        Ok(())
    }

    fn commit(&mut self) -> CliResult<()> {
        Ok(self.ingest.commit()?)
    }

    fn tick(&self) {
        let docs = self.summary.counts.added + self.summary.counts.rejected;
        let secs = self.start.elapsed().as_secs_f64().max(1e-3);
        self.progress
            .set_position(self.consumed.load(Ordering::Relaxed));
        self.progress
            .set_message(format!("{docs} docs, {:.0} docs/s", docs as f64 / secs));
    }

    /// Adds what was read before a failure, commits it, and says so in the error.
    /// A line that is not a document: fails the run (after committing what came before), or
    /// with `skip_bad` counts it and reports the first [`MAX_REPORTED_BAD`].
    fn bad_line(&mut self, err: Error, skip_bad: bool) -> CliResult<()> {
        if !skip_bad {
            let advice = "fix the input and rerun the same command (documents whose id is \
                          already in the index are skipped), or pass --skip-bad to skip bad \
                          lines";
            return Err(self.fail_with_commit(Failure::Error(err), advice));
        }
        self.summary.skipped_bad += 1;
        if self.summary.skipped_bad <= MAX_REPORTED_BAD {
            let p = &self.progress;
            p.suspend(|| eprintln_quiet(&format!("skipped: {err}")));
        } else if self.summary.skipped_bad == MAX_REPORTED_BAD + 1 {
            let p = &self.progress;
            p.suspend(|| eprintln_quiet("skipped: (further bad lines are only counted)"));
        }
        Ok(())
    }

    fn fail_with_commit(&mut self, failure: Failure, advice: &str) -> Failure {
        self.progress.finish_and_clear();
        let saved = self
            .flush_quietly()
            .and_then(|()| self.ingest.commit().map_err(Failure::from));
        let note = match saved {
            Ok(()) => format!(
                "the {} this run added before it {} committed; {advice}",
                count(self.summary.counts.added, "document", "documents"),
                if self.summary.counts.added == 1 {
                    "was"
                } else {
                    "were"
                },
            ),
            Err(e) => format!(
                "committing the documents read before it failed too: {}",
                describe(&e)
            ),
        };
        let message = match failure {
            Failure::Error(e) => format!("{e}\n{note}"),
            Failure::Message(m) | Failure::Usage(m) => format!("{m}\n{note}"),
            Failure::BrokenPipe => return Failure::BrokenPipe,
        };
        Failure::Message(message)
    }

    fn flush_quietly(&mut self) -> CliResult<()> {
        // JSON events of this last batch are dropped: the error is what matters now.
        let mut sink = Out::new(false);
        self.flush(&mut sink)
    }
}

fn describe(f: &Failure) -> String {
    match f {
        Failure::Error(e) => e.to_string(),
        Failure::Message(m) | Failure::Usage(m) => m.clone(),
        Failure::BrokenPipe => "broken pipe".into(),
    }
}

fn progress_bar(total: Option<u64>, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr());
    let template = if total.is_some() {
        "{spinner} {elapsed:>4} [{wide_bar}] {bytes}/{total_bytes}, {msg}"
    } else {
        "{spinner} {elapsed:>4} {bytes} read, {msg}"
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}
