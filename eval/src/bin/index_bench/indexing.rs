//! Section 4: indexing the natural corpora, plain tantivy against every mode of `DedupWriter`, with
//! wall-clock and CPU time.

use super::*;

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Mode {
    Plain,
    /// `Off`, signatures computed before the clock starts: the cost of storing them.
    Stored,
    /// `Off`, `signature` then `add_document_with_signature`: the text analysed twice.
    TwoAnalyses,
    Batch(Policy),
    OneByOne(Policy),
}

impl Mode {
    /// The mode's name for `--modes`.
    pub(crate) fn key(self) -> String {
        let policy = |p: Policy| format!("{p:?}").to_lowercase();
        match self {
            Mode::Plain => "plain".into(),
            Mode::Stored => "stored".into(),
            Mode::TwoAnalyses => "two".into(),
            Mode::OneByOne(p) => policy(p),
            Mode::Batch(p) => format!("batch-{}", policy(p)),
        }
    }

    pub(crate) fn name(self) -> String {
        match self {
            Mode::Plain => "plain tantivy (same analyzer, no fingerprint)".into(),
            Mode::Stored => "DedupWriter Off, signatures given (storing them only)".into(),
            Mode::TwoAnalyses => {
                "DedupWriter Off, sign then add_document_with_signature (two analyses)".into()
            }
            Mode::Batch(p) => format!("DedupWriter {p:?}, add_documents (batches of 1000)"),
            Mode::OneByOne(p) => format!("DedupWriter {p:?}, add_document one by one"),
        }
    }
}

/// CPU time of this process so far (every thread, user + system), from /proc/self/stat;
/// zero where it cannot be read. Unlike wall time it does not grow when other processes
/// take the cores, so its ratios hold on a loaded machine.
pub(crate) fn cpu_time() -> Duration {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return Duration::ZERO;
    };
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of stat(5): 12 and 13 after the name; 100 ticks/s
    // on Linux (USER_HZ).
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

pub(crate) struct Run {
    pub(crate) elapsed: Duration,
    pub(crate) cpu: Duration,
    pub(crate) fields_bytes_per_doc: f64,
    pub(crate) index_bytes_per_doc: f64,
    pub(crate) stored: u64,
    /// Candidates the writer's near-duplicate checks verified, per document given.
    pub(crate) verified_per_doc: f64,
    /// CPU time of the thread that adds the documents (signing one by one, the writer's checks
    /// and its own per-document work; not tantivy's indexing threads).
    pub(crate) adding_cpu: Duration,
    /// A digest of every stored document's id, group and replaced ids: equal digests, equal
    /// outcomes.
    pub(crate) digest: u64,
}

/// A fresh on-disk index for `mode`: id, title and text (the scheme's analyzer), plus the
/// near-duplicate fields unless plain; returns its directory, the index, the config and a
/// document maker.
#[allow(clippy::type_complexity)]
pub(crate) fn indexing_index(
    mode: Mode,
    key_postings: bool,
) -> Res<(
    tempfile::TempDir,
    Index,
    NearDupConfig,
    impl Fn(&Doc) -> TantivyDocument,
)> {
    let dir = tempfile::tempdir()?;
    // Keys live in the component's tables whatever `key_postings` says (always false now).
    debug_assert!(!key_postings);
    let config = NearDupConfig::new("id", ["title", "text"]);
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING | FAST | STORED);
    let indexing = TextFieldIndexing::default()
        .set_tokenizer(SIMHASH_TOKENIZER_NAME)
        .set_index_option(IndexRecordOption::WithFreqsAndPositions);
    let text_options = TextOptions::default().set_indexing_options(indexing);
    let title = builder.add_text_field("title", text_options.clone());
    let text = builder.add_text_field("text", text_options);
    if mode != Mode::Plain {
        config.add_fields(&mut builder);
    }
    let index = Index::create_in_dir(dir.path(), builder.build())?;
    register_tokenizer(&index, config.scheme());
    let make = move |d: &Doc| -> TantivyDocument {
        doc!(id => d.id.as_str(), title => d.title.as_str(), text => d.text.as_str())
    };
    Ok((dir, index, config, make))
}

/// `add_documents` in batches of 1,000 (never spanning a periodic commit), committing once a
/// batch reaches or crosses a multiple of `commit_every`.
pub(crate) fn add_in_batches(
    w: &mut tantivy_simhash::DedupWriter,
    docs: &[Doc],
    make: impl Fn(&Doc) -> TantivyDocument,
    commit_every: Option<usize>,
) -> Res<()> {
    let batch = commit_every.map_or(1000, |n| n.min(1000));
    let mut done = 0;
    for chunk in docs.chunks(batch) {
        w.add_documents(chunk.iter().map(&make).collect())?;
        let before = done;
        done += chunk.len();
        // Commit once a batch reaches or crosses a multiple of N.
        if commit_every.is_some_and(|n| done / n > before / n) {
            w.commit()?;
        }
    }
    Ok(())
}

/// Writes `docs` into `index` the way `mode` says, with a commit every `commit_every`
/// documents (and at the end); returns the candidates the writer verified.
pub(crate) fn write_docs(
    mode: Mode,
    index: &Index,
    config: NearDupConfig,
    make: impl Fn(&Doc) -> TantivyDocument,
    docs: &[Doc],
    signatures: &[Signature],
    commit_every: Option<usize>,
) -> Res<u64> {
    let budget = 200_000_000;
    let mut verified = 0;
    // Whether to commit after the document at position `i` (counting from 0).
    let commit_after = |i: usize| commit_every.is_some_and(|n| (i + 1).is_multiple_of(n));
    match mode {
        Mode::Plain => {
            let mut w: IndexWriter = index.writer(budget)?;
            for (i, d) in docs.iter().enumerate() {
                w.add_document(make(d))?;
                if commit_after(i) {
                    w.commit()?;
                }
            }
            w.commit()?;
            w.wait_merging_threads()?;
        }
        Mode::Stored | Mode::TwoAnalyses => {
            let nd = NearDupIndex::create(index.clone(), config)?;
            let mut w = nd.writer(budget, Policy::Off)?;
            for (i, (d, sig)) in docs.iter().zip(signatures).enumerate() {
                let doc = make(d);
                let sig = if mode == Mode::Stored {
                    sig.clone()
                } else {
                    w.signature(&doc)
                };
                w.add_document_with_signature(doc, sig)?;
                if commit_after(i) {
                    w.commit()?;
                }
            }
            w.commit()?;
            w.wait_merging_threads()?;
        }
        Mode::Batch(policy) | Mode::OneByOne(policy) => {
            let nd = NearDupIndex::create(index.clone(), config)?;
            let mut w = nd.writer(budget, policy)?;
            if let Mode::Batch(_) = mode {
                add_in_batches(&mut w, docs, &make, commit_every)?;
            } else {
                for (i, d) in docs.iter().enumerate() {
                    w.add_document(make(d))?;
                    if commit_after(i) {
                        w.commit()?;
                    }
                }
            }
            verified = w.candidates_verified();
            w.commit()?;
            w.wait_merging_threads()?;
        }
    }
    Ok(verified)
}

/// The documents stored, the bytes of the near-duplicate data (the segment component's files),
/// and of the whole index.
pub(crate) fn index_space(index: &Index) -> Res<(u64, u64, u64)> {
    let reader = index.reader()?;
    let searcher = reader.searcher();
    let stored = searcher.num_docs();
    let usage = searcher.space_usage()?;
    let has_component = index
        .load_metas()?
        .persisted_custom_extensions
        .iter()
        .any(|e| e == tantivy_simhash::COMPONENT_EXTENSION);
    let component = if has_component {
        component_bytes(&searcher)?.0
    } else {
        0
    };
    Ok((stored, component, usage.total().get_bytes()))
}

pub(crate) fn index_once(
    docs: &[Doc],
    (mode, key_postings): (Mode, bool),
    signatures: &[Signature],
    commit_every: Option<usize>,
) -> Res<Run> {
    let (_dir, index, config, make) = indexing_index(mode, key_postings)?;
    let start = Instant::now();
    let cpu_start = cpu_time();
    let thread_start = thread_cpu_time();
    let verified = write_docs(mode, &index, config, make, docs, signatures, commit_every)?;
    let elapsed = start.elapsed();
    let cpu = cpu_time().saturating_sub(cpu_start);
    let adding_cpu = thread_cpu_time().saturating_sub(thread_start);
    let (stored, fields, total) = index_space(&index)?;
    let digest = outcome_digest(&index)?;
    Ok(Run {
        elapsed,
        cpu,
        fields_bytes_per_doc: fields as f64 / stored.max(1) as f64,
        index_bytes_per_doc: total as f64 / stored.max(1) as f64,
        stored,
        verified_per_doc: verified as f64 / docs.len().max(1) as f64,
        adding_cpu,
        digest,
    })
}

/// A digest of the outcome: per stored document its id, group and replaced ids (read from
/// their columns), sorted, hashed. Two builds that store, tag and replace alike give the same.
pub(crate) fn outcome_digest(index: &Index) -> Res<u64> {
    let searcher = index.reader()?.searcher();
    let mut rows = Vec::with_capacity(searcher.num_docs() as usize);
    let mut value = String::new();
    for segment in searcher.segment_readers() {
        let ff = segment.fast_fields();
        let columns = [
            ff.str("id")?,
            ff.str("simhash_group")?,
            ff.str(tantivy_simhash::REPLACED_FIELD)?,
        ];
        for doc in segment.doc_ids_alive() {
            let mut row = String::new();
            for column in columns.iter().flatten() {
                for ord in column.term_ords(doc) {
                    column.ord_to_str(ord, &mut value)?;
                    row.push_str(&value);
                    row.push('\u{1f}');
                }
                row.push('\u{1e}');
            }
            rows.push(row);
        }
    }
    rows.sort_unstable();
    Ok(xxhash_rust::xxh3::xxh3_64(rows.concat().as_bytes()))
}

/// CPU time of the calling thread (`/proc/thread-self/schedstat`: nanoseconds on a CPU); zero
/// where it cannot be read.
pub(crate) fn thread_cpu_time() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}

/// Fingerprinting alone, one thread, for scale.
pub(crate) fn time_fingerprinting(docs: &[Doc], bytes: usize) {
    let scheme = tantivy_simhash::Scheme::default();
    let mut fpr = scheme.fingerprinter();
    let t = Instant::now();
    for d in docs {
        std::hint::black_box(fpr.fingerprint(&format!("{}\n{}", d.title, d.text)));
    }
    let fp_secs = t.elapsed().as_secs_f64();
    println!(
        "fingerprinting alone, 1 thread: {:.0} docs/s, {:.1} MB/s",
        docs.len() as f64 / fp_secs,
        bytes as f64 / 1e6 / fp_secs
    );
}

/// Signing alone (what DedupWriter computes per document), one thread; returns the signatures.
pub(crate) fn sign_all(docs: &[Doc], bytes: usize) -> Res<Vec<Signature>> {
    let config = NearDupConfig::new("id", ["title", "text"]);
    let mut signer = config.rule()?.signer(config.scheme());
    let t = Instant::now();
    let signatures: Vec<Signature> = docs
        .iter()
        .map(|d| signer.sign(&format!("{}\n{}", d.title, d.text)))
        .collect();
    let sign_secs = t.elapsed().as_secs_f64();
    println!(
        "signing alone (fingerprint + sketch), 1 thread: {:.0} docs/s, {:.1} MB/s",
        docs.len() as f64 / sign_secs,
        bytes as f64 / 1e6 / sign_secs
    );
    Ok(signatures)
}

/// The modes `--modes` selects (plain always).
pub(crate) fn selected_modes(args: &Args) -> Res<Vec<(Mode, bool)>> {
    let modes = [
        Mode::Plain,
        Mode::Stored,
        Mode::TwoAnalyses,
        Mode::OneByOne(Policy::Off),
        Mode::OneByOne(Policy::Reject),
        Mode::OneByOne(Policy::Tag),
        Mode::OneByOne(Policy::Replace),
        Mode::Batch(Policy::Off),
        Mode::Batch(Policy::Reject),
        Mode::Batch(Policy::Tag),
        Mode::Batch(Policy::Replace),
    ];
    let modes: Vec<Mode> = match &args.modes {
        None => modes.to_vec(),
        Some(wanted) => {
            for w in wanted {
                if !modes.iter().any(|m| m.key() == *w) {
                    return Err(format!(
                        "unknown mode `{w}`; expected one of: {}",
                        modes.iter().map(|m| m.key()).collect::<Vec<_>>().join(", ")
                    )
                    .into());
                }
            }
            modes
                .into_iter()
                .filter(|m| *m == Mode::Plain || wanted.contains(&m.key()))
                .collect()
        }
    };
    Ok(modes
        .into_iter()
        .flat_map(|m| std::iter::once((m, false)))
        .collect())
}

/// The indexing table: rates and CPU against plain tantivy (the first row), sizes, checks.
pub(crate) fn print_indexing_rows(modes: Vec<(Mode, bool)>, best: Vec<Option<Run>>, n_docs: usize) {
    let mut plain_rate = 0.0;
    let mut plain_cpu = 0.0;
    for ((mode, key_postings), r) in modes.into_iter().zip(best) {
        let Some(r) = r else { continue };
        let rate = n_docs as f64 / r.elapsed.as_secs_f64();
        let cpu = r.cpu.as_secs_f64();
        if mode == Mode::Plain {
            plain_rate = rate;
            plain_cpu = cpu;
        }
        println!(
            "| {} | {} | {:.0} | {:.2}x | {:.2} | {:.2}x | {:.2} | {} | {:.1} | {:.0} | {:.1} | {:016x} |",
            mode.name(),
            match (mode, key_postings) {
                (Mode::Plain, _) => "-",
                (_, true) => "postings",
                (_, false) => "columns",
            },
            rate,
            rate / plain_rate,
            cpu,
            plain_cpu / cpu.max(1e-9),
            r.adding_cpu.as_secs_f64(),
            r.stored,
            r.fields_bytes_per_doc,
            r.index_bytes_per_doc,
            r.verified_per_doc,
            r.digest
        );
    }
}

pub(crate) fn indexing_bench(path: &Path, lang: &str, args: &Args) -> Res<()> {
    let runs = args.runs;
    let mut docs: Vec<Doc> = read_jsonl(path, usize::MAX)?;
    if let Some(n) = args.sample {
        docs.truncate(n);
    }
    let bytes: usize = docs.iter().map(|d| d.title.len() + d.text.len()).sum();
    println!(
        "\n## Indexing natural-{lang}: {} documents, {:.1} MB of title + text; best of {runs} run(s); {}",
        docs.len(),
        bytes as f64 / 1e6,
        args.commit_every
            .map_or("one commit at the end".to_string(), |n| format!("a commit every {n} documents"))
    );
    time_fingerprinting(&docs, bytes);
    let signatures = sign_all(&docs, bytes)?;
    let modes = selected_modes(args)?;
    println!(
        "| writer | keys | docs/s | vs plain | CPU s | vs plain (CPU) | adding thread CPU s | docs stored | fingerprint+keys B/doc | index B/doc | verified/doc | outcome digest |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    // Round-robin over the modes, so a load change on a shared machine hits every mode alike.
    let mut best: Vec<Option<Run>> = modes.iter().map(|_| None).collect();
    for _ in 0..runs {
        for (mode, slot) in modes.iter().zip(best.iter_mut()) {
            let r = index_once(&docs, *mode, &signatures, args.commit_every)?;
            if slot.as_ref().is_none_or(|b| r.elapsed < b.elapsed) {
                *slot = Some(r);
            }
        }
    }
    print_indexing_rows(modes, best, docs.len());
    Ok(())
}
