//! The indexes the command line creates: a fixed schema (id, title, text, host and the
//! near-duplicate fields). The library's record of the index ([`IndexRecord`]) holds everything
//! that reopens it: the scheme (whose analyzer names the language), the layout (whose k is the
//! index's), and, as application data, the field mapping and policy of the last `index` run.

use super::input::FieldMap;
use super::{CliResult, DedupPolicy, Failure};
use serde::{Deserialize, Serialize};
use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, STORED, STRING,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, TextAnalyzer,
};
use tantivy::Index;
use tantivy_simhash::RECORD_FILE;
use tantivy_simhash::{
    BlockLayout, HanSegmentation, IndexRecord, NearDupConfig, NearDupIndex, Scheme,
    TokenizationParameters, SIMHASH_TOKENIZER_NAME,
};

/// The format tag of the command line's application data in the record.
const CLI_SETTINGS_FORMAT: &str = "neardup/2";

/// What the command line stores in the library's record beside the scheme and layout.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct SavedSettings {
    format: String,
    fields: FieldMap,
    policy: String,
}

/// The settings of a command-line index, read from the library's record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CliRecord {
    /// The JSON fields the last `index` run read (the default for the next run).
    pub fields: FieldMap,
    /// The tokenisation (part of the scheme: fixed at creation).
    pub language: String,
    /// The largest distance the layout guarantees (fixed at creation).
    pub k: u32,
    /// The dedup policy of the last `index` run (the default for the next run).
    pub policy: String,
}

impl CliRecord {
    pub(crate) fn policy(&self) -> DedupPolicy {
        DedupPolicy::from_name(&self.policy).unwrap_or(DedupPolicy::Tag)
    }
}

/// What an `index` run asks for (`None`: the index's setting, or the default).
#[derive(Clone, Debug, Default)]
pub(crate) struct Requested {
    pub id_field: Option<String>,
    pub text_field: Option<String>,
    pub title_field: Option<String>,
    pub host_field: Option<String>,
    pub language: Option<String>,
    pub k: Option<u32>,
    pub policy: Option<DedupPolicy>,
}

/// The schema fields of a command-line index.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DocFields {
    pub id: Field,
    pub title: Field,
    pub text: Field,
    pub host: Field,
}

/// An open command-line index.
pub(crate) struct Store {
    pub dir: PathBuf,
    pub index: NearDupIndex,
    pub record: CliRecord,
    pub fields: DocFields,
}

impl Store {
    /// `k` (the index's own by default), refused when the index's keys cannot guarantee it.
    pub(crate) fn checked_k(&self, k: Option<u32>) -> CliResult<u32> {
        let max = self.index.layout().max_distance();
        let k = k.unwrap_or(max);
        if k > max {
            let rebuild = if BlockLayout::for_distance(k).is_ok() {
                format!("rebuild the index with `neardup index -k {k}` into a new directory")
            } else {
                format!(
                    "no index can: the largest k neardup supports is {MAX_K} (beyond it 64-bit \
                     fingerprints of unrelated texts match); use -k {max} or less"
                )
            };
            return Err(Failure::Usage(format!(
                "-k {k} is beyond what {} guarantees to find ({max}); {rebuild}",
                self.dir.display()
            )));
        }
        Ok(k)
    }
}

/// The stored fields of a document, as `search`, `similar` and `clusters` show them.
pub(crate) struct StoredDoc {
    pub id: String,
    pub title: String,
    pub host: String,
    pub text: String,
}

impl Store {
    /// Reads the stored id, title, host and text of `addr` (one doc-store block read; a field
    /// the document lacks is empty).
    pub(crate) fn load_doc(
        &self,
        searcher: &tantivy::Searcher,
        addr: tantivy::DocAddress,
    ) -> CliResult<StoredDoc> {
        use tantivy::schema::Value;
        let doc: tantivy::TantivyDocument = searcher.doc(addr)?;
        let f = self.fields;
        let get = |field| {
            doc.get_first(field)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string()
        };
        Ok(StoredDoc {
            id: get(f.id),
            title: get(f.title),
            host: get(f.host),
            text: get(f.text),
        })
    }
}

/// The largest k of an index (the widest layout [`BlockLayout::for_distance`] builds).
pub(crate) const MAX_K: u32 = 9;

/// The file an `index` run creates (exclusively) in an empty directory before it creates the
/// index there, and removes once the index and its record exist: of two runs creating one index
/// at once, the second learns that the first is doing it.
const CREATING_FILE: &str = ".neardup-creating";

const LANGUAGES: &[(&str, Language)] = &[
    ("arabic", Language::Arabic),
    ("danish", Language::Danish),
    ("dutch", Language::Dutch),
    ("english", Language::English),
    ("finnish", Language::Finnish),
    ("french", Language::French),
    ("german", Language::German),
    ("greek", Language::Greek),
    ("hungarian", Language::Hungarian),
    ("italian", Language::Italian),
    ("norwegian", Language::Norwegian),
    ("portuguese", Language::Portuguese),
    ("romanian", Language::Romanian),
    ("russian", Language::Russian),
    ("spanish", Language::Spanish),
    ("swedish", Language::Swedish),
    ("tamil", Language::Tamil),
    ("turkish", Language::Turkish),
];

/// The scheme for a `--language` value, or why there is none.
pub(crate) fn scheme_for(language: &str) -> Result<Scheme, String> {
    let built = match language {
        "auto" => return Ok(Scheme::default()),
        "han-chars" => Scheme::builder()
            .tokenization(tantivy_simhash::Tokenization::Builtin {
                han: HanSegmentation::Chars,
            })
            .build(),
        other => {
            let Some((name, analyzer)) = stemmer_for(other) else {
                let names: Vec<&str> = LANGUAGES.iter().map(|(n, _)| *n).collect();
                return Err(format!(
                    "unknown language `{other}`; expected auto, han-chars or one of {}",
                    names.join(", ")
                ));
            };
            Scheme::builder().analyzer(&name, analyzer).build()
        }
    };
    built.map_err(|e| e.to_string())
}

/// The analyzer of a `--language` value, when it is one of the stemming languages.
fn stemmer_for(language: &str) -> Option<(String, TextAnalyzer)> {
    let &(name, lang) = LANGUAGES.iter().find(|(n, _)| *n == language)?;
    let analyzer = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(Stemmer::new(lang))
        .build();
    Some((format!("stem-{name}"), analyzer))
}

/// The `--language` value of a recorded tokenisation, if neardup made it.
fn language_of(tokenization: &TokenizationParameters) -> Option<String> {
    match tokenization {
        TokenizationParameters::Builtin {
            han: HanSegmentation::Jieba,
        } => Some("auto".into()),
        TokenizationParameters::Builtin {
            han: HanSegmentation::Chars,
        } => Some("han-chars".into()),
        TokenizationParameters::Analyzer { name } => {
            let language = name.strip_prefix("stem-")?;
            stemmer_for(language).map(|_| language.to_string())
        }
    }
}

/// The library configuration for new settings, or why they are invalid.
fn config_for(record: &CliRecord) -> Result<NearDupConfig, String> {
    let scheme = scheme_for(&record.language)?;
    let layout = BlockLayout::for_distance(record.k).map_err(|e| e.to_string())?;
    Ok(NearDupConfig::new("id", ["title", "text"])
        .with_scheme(scheme)
        .with_layout(layout))
}

fn schema_for(config: &NearDupConfig) -> Schema {
    let mut builder = Schema::builder();
    let text = TextOptions::default().set_stored().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(SIMHASH_TOKENIZER_NAME)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    builder.add_text_field("id", STRING | FAST | STORED);
    builder.add_text_field("title", text.clone());
    builder.add_text_field("text", text);
    builder.add_text_field("host", STRING | FAST | STORED);
    config.add_fields(&mut builder);
    builder.build()
}

fn doc_fields(schema: &Schema) -> CliResult<DocFields> {
    let get = |name: &str| {
        schema.get_field(name).map_err(|_| {
            Failure::Message(format!(
                "the index has no field `{name}`: it was not created by `neardup index`"
            ))
        })
    };
    Ok(DocFields {
        id: get("id")?,
        title: get("title")?,
        text: get("text")?,
        host: get("host")?,
    })
}

/// Reads the settings of the index in `dir` from the library's record. `Ok(None)`: `dir` holds
/// no index made by `neardup index`.
fn read_record(dir: &Path) -> CliResult<Option<(Index, IndexRecord, CliRecord)>> {
    if !dir.join("meta.json").exists() {
        return Ok(None);
    }
    let index = Index::open_in_dir(dir).map_err(|e| {
        Failure::Message(format!(
            "{} holds a tantivy index, but tantivy cannot open it: {e}",
            dir.display()
        ))
    })?;
    let record = IndexRecord::read(&index).map_err(|e| match e {
        tantivy_simhash::Error::Json(e) => Failure::Message(format!(
            "{} is damaged ({e}); it records how the index was built: restore it or rebuild \
             the index",
            dir.join(RECORD_FILE).display()
        )),
        other => Failure::Error(other),
    })?;
    let Some(record) = record else {
        return Ok(None);
    };
    let Some(saved) = record.application() else {
        return Ok(None);
    };
    let unusable = |why: String| {
        Failure::Message(format!(
            "{} records settings this version of neardup cannot use ({why}); rebuild the index",
            dir.join(RECORD_FILE).display()
        ))
    };
    let saved: SavedSettings =
        serde_json::from_value(saved.clone()).map_err(|e| unusable(e.to_string()))?;
    if saved.format != CLI_SETTINGS_FORMAT {
        return Err(unusable(format!(
            "format `{}`, expected `{CLI_SETTINGS_FORMAT}`",
            saved.format
        )));
    }
    let (Some(parameters), Some(layout)) = (record.scheme_parameters(), record.layout()) else {
        return Err(unusable("no scheme parameters".into()));
    };
    let language = language_of(&parameters.tokenization)
        .ok_or_else(|| unusable(format!("tokenisation {:?}", parameters.tokenization)))?;
    let settings = CliRecord {
        fields: saved.fields,
        language,
        k: layout.max_distance(),
        policy: saved.policy,
    };
    Ok(Some((index, record, settings)))
}

/// Stores the field mapping and policy in the library's record, as the next run's defaults.
pub(crate) fn write_record(index: &NearDupIndex, record: &CliRecord) -> CliResult<()> {
    let saved = SavedSettings {
        format: CLI_SETTINGS_FORMAT.to_string(),
        fields: record.fields.clone(),
        policy: record.policy.clone(),
    };
    let value = serde_json::to_value(saved).map_err(|e| Failure::Error(e.into()))?;
    index.set_application_data(value)?;
    Ok(())
}

fn not_an_index(dir: &Path) -> Failure {
    let d = dir.display();
    Failure::Message(if dir.join("meta.json").exists() {
        format!(
            "{d} is a tantivy index, but not one made by `neardup index` (its record holds no \
             neardup settings: language, k, fields); neardup reads and adds to only the indexes \
             it made: build one from your JSONL into a new directory with `neardup index FILES \
             --index NEWDIR`"
        )
    } else if dir.exists() {
        format!(
            "{d} is not a neardup index (no meta.json); build one with `neardup index FILES \
             --index {d}` (into a new or empty directory)"
        )
    } else {
        format!("{d} does not exist; build an index there with `neardup index FILES --index {d}`")
    })
}

/// What the creation claim of a directory says.
enum Claim {
    /// No run is creating an index there.
    Free,
    /// A live run holds the claim: it is creating the index now.
    Busy,
    /// The run that claimed the directory died before the index was complete; the claim is
    /// now held by this process (the file, locked).
    Stale(File),
}

/// Looks at the creation claim of `dir` ([`CREATING_FILE`], locked by the run creating the
/// index for as long as it does).
fn inspect_claim(dir: &Path) -> CliResult<Claim> {
    let path = dir.join(CREATING_FILE);
    let file = match File::options().read(true).write(true).open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Claim::Free),
        Err(e) => {
            return Err(Failure::Message(format!(
                "cannot open {}: {e}",
                path.display()
            )))
        }
    };
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Ok(Claim::Busy),
        Err(TryLockError::Error(e)) => {
            return Err(Failure::Message(format!(
                "cannot lock {}: {e}",
                path.display()
            )))
        }
    }
    // The creator removes the claim before it lets the lock go: a claim still there now was
    // left by a run that died.
    Ok(if path.exists() {
        Claim::Stale(file)
    } else {
        Claim::Free
    })
}

/// Whether `dir` holds the claim file of a run that is claiming it this very moment.
fn being_claimed(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().starts_with(CREATING_FILE))
    })
}

/// Removes the per-process claim files (`.neardup-creating.PID`) of runs that died between
/// making one and linking it into place: a live claimer holds its file's lock, so a file whose
/// lock can be taken is left over. Without this a run killed in that window would leave the
/// directory "being created" forever.
fn clear_dead_claimers(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!("{CREATING_FILE}.");
    for entry in entries.filter_map(|e| e.ok()) {
        if !entry.file_name().to_string_lossy().starts_with(&prefix) {
            continue;
        }
        let path = entry.path();
        let Ok(file) = File::options().read(true).write(true).open(&path) else {
            continue;
        };
        if file.try_lock().is_ok() {
            // Best effort: if it cannot be removed, the "being created" message still applies.
            let _ = std::fs::remove_file(&path);
        }
    }
}

fn being_created(dir: &Path) -> Failure {
    Failure::Message(format!(
        "{} is being created by another `neardup index` right now; wait for that run to \
         finish, then rerun this command",
        dir.display()
    ))
}

/// Claims an empty directory for creating an index: the claim file is made and locked under a
/// name of this process's own, then linked to [`CREATING_FILE`], which succeeds for exactly one
/// of several processes, and is locked from the moment it exists.
fn claim(dir: &Path) -> CliResult<File> {
    let own = dir.join(format!("{CREATING_FILE}.{}", std::process::id()));
    let cannot = |e: std::io::Error| {
        Failure::Message(format!(
            "cannot create {}: {e}",
            dir.join(CREATING_FILE).display()
        ))
    };
    // Another run's `clear_dead_claimers` may take our file for a dead run's in the instant
    // between its creation and its lock, and remove it: then the link finds no file, and we
    // make it again.
    let mut attempts = 0;
    let (file, linked) = loop {
        attempts += 1;
        let file = File::create(&own).map_err(cannot)?;
        file.lock().map_err(cannot)?;
        let linked = std::fs::hard_link(&own, dir.join(CREATING_FILE));
        match &linked {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && attempts < 5 => continue,
            _ => {}
        }
        match std::fs::remove_file(&own) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(cannot(e)),
        }
        break (file, linked);
    };
    match linked {
        Ok(()) => Ok(file),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(Failure::Message(format!(
            "{} was created by another process at the same time (another `neardup index` is \
             creating the index there); wait for that run to finish, then rerun this command \
             to add to the index",
            dir.display()
        ))),
        Err(e) => Err(cannot(e)),
    }
}

/// Removes what a run that died while creating an index left in `dir`: the directory was empty
/// when it was claimed, so everything in it but the claim is that run's.
fn clear_stale_creation(dir: &Path) -> CliResult<()> {
    let clear = || -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_name() == CREATING_FILE {
                continue;
            }
            if entry.file_type()?.is_dir() {
                std::fs::remove_dir_all(entry.path())?;
            } else {
                std::fs::remove_file(entry.path())?;
            }
        }
        Ok(())
    };
    clear().map_err(|e| {
        Failure::Message(format!(
            "a run that was creating an index in {} died before it was complete, and what it \
             left cannot be removed ({e}); delete the directory and rerun",
            dir.display()
        ))
    })
}

/// Ends the creation: the claim is removed while still locked, then the lock is let go.
fn release(dir: &Path, claim: File) -> CliResult<()> {
    std::fs::remove_file(dir.join(CREATING_FILE))?;
    drop(claim);
    Ok(())
}

/// An index whose record names another scheme than this version computes for its settings:
/// another version of neardup built it (or its record was edited).
fn built_elsewhere(dir: &Path, record: &CliRecord, found: &str, computed: &str) -> Failure {
    Failure::Message(format!(
        "{} records the scheme `{found}`, but this version of neardup computes `{computed}` for \
         the index's settings (language {}, k {}): another version of neardup built it, or its \
         record was edited; rebuild it with this version (`neardup index FILES --index \
         NEWDIR`), or use the neardup that built it",
        dir.display(),
        record.language,
        record.k
    ))
}

fn open_with(
    dir: &Path,
    index: Index,
    library_record: &IndexRecord,
    record: CliRecord,
) -> CliResult<Store> {
    if let Ok(computed) = scheme_for(&record.language) {
        if computed.id() != library_record.scheme_id() {
            return Err(built_elsewhere(
                dir,
                &record,
                library_record.scheme_id(),
                computed.id(),
            ));
        }
    }
    let analyzer = stemmer_for(&record.language).map(|(_, analyzer)| analyzer);
    let config = library_record.config(analyzer, None).map_err(|e| {
        Failure::Message(format!(
            "{} records settings this version cannot use ({e}); rebuild the index",
            dir.join(RECORD_FILE).display()
        ))
    })?;
    let fields = doc_fields(&index.schema())?;
    let index = NearDupIndex::open(index, config)?;
    Ok(Store {
        dir: dir.to_path_buf(),
        index,
        record,
        fields,
    })
}

/// Opens an index made by `neardup index`, for reading.
///
/// Errors: the directory is not such an index, its record is damaged, or the index records
/// another scheme or layout than the record's settings give (made by another version).
pub(crate) fn open(dir: &Path) -> CliResult<Store> {
    match inspect_claim(dir)? {
        Claim::Free => {}
        Claim::Busy => return Err(being_created(dir)),
        Claim::Stale(_) => {
            return Err(Failure::Message(format!(
                "a run that was creating an index in {} died before the index was complete; \
                 rerun `neardup index FILES --index {}` to create it",
                dir.display(),
                dir.display()
            )))
        }
    }
    match read_record(dir)? {
        Some((index, library_record, record)) => open_with(dir, index, &library_record, record),
        None => Err(not_an_index(dir)),
    }
}

/// Opens the index in `dir` for an `index` run, creating it when `dir` is missing or empty.
/// Returns the store and whether it was created.
///
/// Errors: `dir` is a file or a non-empty directory that is not a neardup index; the run asks
/// for another language or k than the index was built with.
pub(crate) fn open_or_create(dir: &Path, req: &Requested) -> CliResult<(Store, bool)> {
    if dir.is_file() {
        return Err(Failure::Message(format!(
            "{} is a file; --index needs a directory",
            dir.display()
        )));
    }
    clear_dead_claimers(dir);
    let empty = match std::fs::read_dir(dir) {
        Ok(mut entries) => entries.next().is_none(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => {
            return Err(Failure::Message(format!(
                "cannot read {}: {e}",
                dir.display()
            )))
        }
    };
    let defaults = FieldMap::default();
    let mut stale_claim = None;
    if !empty {
        match inspect_claim(dir)? {
            Claim::Free => {}
            Claim::Busy => return Err(being_created(dir)),
            Claim::Stale(file) => {
                clear_stale_creation(dir)?;
                stale_claim = Some(file);
            }
        }
    }
    if stale_claim.is_none() && !empty {
        let Some((index, library_record, mut record)) = read_record(dir)? else {
            if dir.join("meta.json").exists() {
                return Err(not_an_index(dir));
            }
            if being_claimed(dir) {
                return Err(being_created(dir));
            }
            return Err(Failure::Message(format!(
                "{} is not empty and is not a neardup index; neardup writes only into a new or \
                 empty directory or into an index it made: give another --index",
                dir.display()
            )));
        };
        if let Some(lang) = &req.language {
            if *lang != record.language {
                return Err(fixed_setting(dir, "--language", &record.language, lang));
            }
        }
        if let Some(k) = req.k {
            if k != record.k {
                return Err(fixed_setting(
                    dir,
                    "-k",
                    &record.k.to_string(),
                    &k.to_string(),
                ));
            }
        }
        let fields = &mut record.fields;
        for (slot, wanted) in [
            (&mut fields.id, &req.id_field),
            (&mut fields.text, &req.text_field),
            (&mut fields.title, &req.title_field),
            (&mut fields.host, &req.host_field),
        ] {
            if let Some(w) = wanted {
                *slot = w.clone();
            }
        }
        if let Some(p) = req.policy {
            record.policy = p.name().to_string();
        }
        let store = open_with(dir, index, &library_record, record)?;
        return Ok((store, false));
    }
    let record = CliRecord {
        fields: FieldMap {
            id: req.id_field.clone().unwrap_or(defaults.id),
            text: req.text_field.clone().unwrap_or(defaults.text),
            title: req.title_field.clone().unwrap_or(defaults.title),
            host: req.host_field.clone().unwrap_or(defaults.host),
        },
        language: req.language.clone().unwrap_or_else(|| "auto".into()),
        k: req.k.unwrap_or(3),
        policy: req.policy.unwrap_or(DedupPolicy::Tag).name().to_string(),
    };
    // Check the settings before anything is written.
    let config = config_for(&record).map_err(Failure::Usage)?;
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::Message(format!("cannot create {}: {e}", dir.display())))?;
    let claim = match stale_claim {
        Some(file) => file,
        None => claim(dir)?,
    };
    let schema = schema_for(&config);
    let index = Index::create_in_dir(dir, schema)?;
    let fields = doc_fields(&index.schema())?;
    let index = NearDupIndex::create(index, config)?;
    write_record(&index, &record)?;
    // The index and its record exist: other runs may open it now.
    release(dir, claim)?;
    Ok((
        Store {
            dir: dir.to_path_buf(),
            index,
            record,
            fields,
        },
        true,
    ))
}

fn fixed_setting(dir: &Path, flag: &str, built: &str, asked: &str) -> Failure {
    Failure::Message(format!(
        "{} was built with {flag} {built}, but this run asks for {flag} {asked}; the language \
         and k of an index are fixed when it is created (fingerprints or keys of two settings \
         cannot be compared): drop the flag, or index into a new directory",
        dir.display()
    ))
}
