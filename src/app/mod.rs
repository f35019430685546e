//! Ready-made indexes in a directory, as the `neardup` command line and the Python package make
//! and open them: a fixed schema (id, title, text, host and the near-duplicate fields), a
//! language and a `k` fixed at creation, and the field mapping and policy of the last run kept
//! as the next run's defaults (the field mapping once a document was committed with it). Both front ends use this one implementation, so an index made by
//! one opens in the other.
//!
//! The library's record of the index ([`IndexRecord`]) holds everything that reopens it: the
//! scheme (whose analyzer names the language), the layout (whose `k` is the index's), and, as
//! application data ([`NearDupIndex::set_application_data`]), the field mapping and policy.
//! Creating an index is claimed with a locked file, so of two processes creating one index at
//! once exactly one does, and a run killed half-way is cleaned up by the next.
//!
//! Errors are [`Error::Setting`] for a setting the caller gave (an unknown language, a `k` no
//! layout supports: a usage error), [`Error::Store`] for the directory or its record (not such an
//! index, being created, a fixed setting asked to change), and the library's other errors.

mod claim;
mod directory;
mod ingest;
mod reports;
mod search;

pub use ingest::{
    check_memory, outcome_name, BadRecord, FieldValue, FrontEnd, Ingest, IngestCounts, InputDoc,
};
pub use reports::{clusters, largest_clusters, mirrors, pair_join, GroupSize, Mirrors, ReportCaps};
pub use search::{
    similar, Collapse, LeaderChoice, Search, SearchHit, SearchSettings, Similar, SimilarTo,
    WIDE_WINDOW,
};

use crate::error::{Error, Result};
use crate::writer::Policy;
use claim::{
    being_claimed, being_created, claim, clear_dead_claimers, clear_stale_creation, inspect_claim,
    release, Claim,
};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, STORED, STRING,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, TextAnalyzer,
};
use tantivy::Index;

use crate::fingerprint::{
    HanSegmentation, Normalization, Scheme, Tokenization, TokenizationParameters,
    SIMHASH_TOKENIZER_NAME,
};
use crate::layout::BlockLayout;
use crate::schema::{IndexRecord, NearDupConfig, NearDupIndex, RECORD_FILE};

/// The format tag of the command line's application data in the record.
const CLI_SETTINGS_FORMAT: &str = "neardup/2";

/// Which keys of an input document (a JSON object, a Python dict) hold what.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldMap {
    /// The key of the document's id.
    pub id: String,
    /// The key of its text.
    pub text: String,
    /// The key of its title.
    pub title: String,
    /// The key of its host (for mirror detection).
    pub host: String,
}

impl Default for FieldMap {
    /// `id`, `text`, `title`, `host`.
    fn default() -> Self {
        FieldMap {
            id: "id".into(),
            text: "text".into(),
            title: "title".into(),
            host: "host".into(),
        }
    }
}

/// What the command line stores in the library's record beside the scheme and layout.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct SavedSettings {
    format: String,
    fields: FieldMap,
    policy: String,
}

/// The settings of a store, read from the library's record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreSettings {
    /// The JSON fields the last `index` run read (the default for the next run).
    pub fields: FieldMap,
    /// The tokenisation (part of the scheme: fixed at creation).
    pub language: String,
    /// The largest distance the layout guarantees (fixed at creation).
    pub k: u32,
    /// The dedup policy of the last `index` run (the default for the next run).
    pub policy: String,
}

impl StoreSettings {
    /// The recorded policy ([`Policy::Tag`] when the name is unknown). Free; never fails.
    pub fn policy(&self) -> Policy {
        Policy::from_name(&self.policy).unwrap_or(Policy::Tag)
    }
}

/// What a run asks of [`open_or_create`] (`None`: the index's setting, or the default).
#[derive(Clone, Debug, Default)]
pub struct Requested {
    /// The input key of the id.
    pub id_field: Option<String>,
    /// The input key of the text.
    pub text_field: Option<String>,
    /// The input key of the title.
    pub title_field: Option<String>,
    /// The input key of the host.
    pub host_field: Option<String>,
    /// The language ([`scheme_for`]); fixed at creation.
    pub language: Option<String>,
    /// The largest distance the keys guarantee; fixed at creation.
    pub k: Option<u32>,
    /// The dedup policy.
    pub policy: Option<Policy>,
}

/// The schema fields of a store.
#[derive(Clone, Copy, Debug)]
pub struct DocFields {
    /// `id` (`STRING | FAST | STORED`).
    pub id: Field,
    /// `title` (text, stored, analysed by the scheme).
    pub title: Field,
    /// `text` (text, stored, analysed by the scheme).
    pub text: Field,
    /// `host` (`STRING | FAST | STORED`).
    pub host: Field,
}

impl DocFields {
    /// A document of this store: `id` and `text` always, `title` and `host` only when not
    /// empty (an empty host must not count as a host). Cost: four field values, no analysis.
    pub fn document(
        &self,
        id: &str,
        title: &str,
        text: &str,
        host: &str,
    ) -> tantivy::TantivyDocument {
        let mut d = tantivy::TantivyDocument::default();
        d.add_text(self.id, id);
        if !title.is_empty() {
            d.add_text(self.title, title);
        }
        d.add_text(self.text, text);
        if !host.is_empty() {
            d.add_text(self.host, host);
        }
        d
    }
}

/// An open store: the directory, the index and its settings.
pub struct Store {
    /// The directory.
    pub dir: PathBuf,
    /// The index.
    pub index: NearDupIndex,
    /// The settings (language and `k` as built; field mapping and policy of the last run, or
    /// those this run asked for).
    pub record: StoreSettings,
    /// The schema fields.
    pub fields: DocFields,
}

impl Store {
    /// `k` (the index's own by default). Errors with [`Error::Setting`] when the index's keys
    /// cannot guarantee it. Free (no I/O).
    pub fn checked_k(&self, k: Option<u32>) -> Result<u32> {
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
            return Err(Error::Setting(format!(
                "-k {k} is beyond what {} guarantees to find ({max}); {rebuild}",
                self.dir.display()
            )));
        }
        Ok(k)
    }
}

/// The stored fields of a document, as `search`, `similar` and `clusters` show them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredDoc {
    /// The id.
    pub id: String,
    /// The title.
    pub title: String,
    /// The host.
    pub host: String,
    /// The text.
    pub text: String,
}

impl Store {
    /// Reads the stored id, title, host and text of `addr` (one doc-store block read; a field
    /// the document lacks is empty). Errors: [`Error::Tantivy`] when
    /// reading the doc store fails.
    pub fn load_doc(
        &self,
        searcher: &tantivy::Searcher,
        addr: tantivy::DocAddress,
    ) -> Result<StoredDoc> {
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
pub const MAX_K: u32 = 9;

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

/// The scheme for a language name: `auto` (the default scheme), `han-chars` (Han text by
/// character), or a stemming language (`english`, `french`, ...). Errors with
/// [`Error::Setting`] naming the languages when there is none.
pub fn scheme_for(language: &str) -> Result<Scheme> {
    scheme_with(language, Normalization::default())
}

/// [`scheme_for`] with `normalization` instead of the default one (for a caller who does not
/// count Traditional and Simplified Chinese copies of a text as near-duplicates, say). Errors
/// as [`scheme_for`].
pub fn scheme_with(language: &str, normalization: Normalization) -> Result<Scheme> {
    let builder = Scheme::builder().normalization(normalization);
    let built = match language {
        "auto" => builder.build(),
        "han-chars" => builder
            .tokenization(Tokenization::Builtin {
                han: HanSegmentation::Chars,
            })
            .build(),
        other => {
            let Some((name, analyzer)) = stemmer_for(other) else {
                let names: Vec<&str> = LANGUAGES.iter().map(|(n, _)| *n).collect();
                return Err(Error::Setting(format!(
                    "unknown language `{other}`; expected auto, han-chars or one of {}",
                    names.join(", ")
                )));
            };
            builder.analyzer(&name, analyzer).build()
        }
    };
    built.map_err(|e| Error::Setting(e.to_string()))
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
fn config_for(record: &StoreSettings) -> Result<NearDupConfig> {
    let scheme = scheme_for(&record.language)?;
    let layout = BlockLayout::for_distance(record.k).map_err(|e| Error::Setting(e.to_string()))?;
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

fn doc_fields(schema: &Schema) -> Result<DocFields> {
    let get = |name: &str| {
        schema.get_field(name).map_err(|_| {
            Error::Store(format!(
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
fn read_record(dir: &Path) -> Result<Option<(Index, IndexRecord, StoreSettings)>> {
    if !dir.join("meta.json").exists() {
        return Ok(None);
    }
    let opened = directory::IndexDirectory::open(dir)
        .map_err(tantivy::TantivyError::from)
        .and_then(Index::open);
    let index = opened.map_err(|e| {
        Error::Store(format!(
            "{} holds a tantivy index, but tantivy cannot open it: {e}",
            dir.display()
        ))
    })?;
    let record = IndexRecord::read(&index).map_err(|e| match e {
        Error::Json(e) => Error::Store(format!(
            "{} is damaged ({e}); it records how the index was built: restore it or rebuild \
             the index",
            dir.join(RECORD_FILE).display()
        )),
        other => other,
    })?;
    let Some(record) = record else {
        return Ok(None);
    };
    let Some(saved) = record.application() else {
        return Ok(None);
    };
    let unusable = |why: String| {
        Error::Store(format!(
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
    let settings = StoreSettings {
        fields: saved.fields,
        language,
        k: layout.max_distance(),
        policy: saved.policy,
    };
    Ok(Some((index, record, settings)))
}

/// Stores the field mapping and policy in the library's record, as the next run's defaults
/// (the record file is rewritten atomically). Cost: one small JSON file written. Errors as
/// [`NearDupIndex::set_application_data`] ([`Error::Io`] when writing the
/// file fails).
pub fn write_record(index: &NearDupIndex, record: &StoreSettings) -> Result<()> {
    let saved = SavedSettings {
        format: CLI_SETTINGS_FORMAT.to_string(),
        fields: record.fields.clone(),
        policy: record.policy.clone(),
    };
    let value = serde_json::to_value(saved)?;
    index.set_application_data(value)?;
    Ok(())
}

fn not_an_index(dir: &Path) -> Error {
    let d = dir.display();
    Error::Store(if dir.join("meta.json").exists() {
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

/// An index whose record names another scheme than this version computes for its settings:
/// another version of neardup built it (or its record was edited).
fn built_elsewhere(dir: &Path, record: &StoreSettings, found: &str, computed: &str) -> Error {
    Error::Store(format!(
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
    record: StoreSettings,
) -> Result<Store> {
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
        Error::Store(format!(
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

/// Opens a store made by [`open_or_create`] (`neardup index`, Python's `Index.create`).
///
/// Errors: [`Error::Store`] when the directory is not such an index, is being created, its record
/// is damaged, or the index records another scheme or layout than the record's settings give (made
/// by another version); [`Error::Tantivy`] and [`Error::Io`] when opening the index fails.
///
/// Cost: reads the record and opens the tantivy index (its meta file and segment footers); no
/// document is read.
pub fn open(dir: &Path) -> Result<Store> {
    if dir.is_file() {
        return Err(Error::Store(format!(
            "{} is a file, not an index; give the directory that `neardup index --index DIR` \
             (or Python's Index.create) made",
            dir.display()
        )));
    }
    match inspect_claim(dir)? {
        Claim::Free => {}
        Claim::Busy => return Err(being_created(dir)),
        Claim::Stale(_) => {
            return Err(Error::Store(format!(
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

/// Opens the store in `dir` for a run that adds documents, creating it when `dir` is missing or
/// empty. Returns the store and whether it was created.
///
/// Errors: [`Error::Setting`] for an unknown language or a `k` no layout supports;
/// [`Error::Store`] when `dir` is a file, a non-empty directory that is not a store, being
/// created by another process, or the run asks for another language or `k` than the index was
/// built with; [`Error::Tantivy`] and [`Error::Io`] when creating or opening the index fails.
///
/// Cost: as [`open`]; creating writes an empty index, its record and, while it runs, a claim
/// file that tells other runs the directory is being created.
pub fn open_or_create(dir: &Path, req: &Requested) -> Result<(Store, bool)> {
    if dir.is_file() {
        return Err(Error::Store(format!(
            "{} is a file; --index needs a directory",
            dir.display()
        )));
    }
    clear_dead_claimers(dir);
    if is_empty_dir(dir)? {
        return Ok((create(dir, req, None)?, true));
    }
    match inspect_claim(dir)? {
        Claim::Free => Ok((open_existing(dir, req)?, false)),
        Claim::Busy => Err(being_created(dir)),
        Claim::Stale(file) => {
            clear_stale_creation(dir)?;
            Ok((create(dir, req, Some(file))?, true))
        }
    }
}

/// `dir` is missing or has no entries.
fn is_empty_dir(dir: &Path) -> Result<bool> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => Ok(entries.next().is_none()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(Error::Store(format!("cannot read {}: {e}", dir.display()))),
    }
}

/// Opens the store a non-empty, unclaimed `dir` holds, with the run's field names and policy;
/// its language and `k` must be the ones asked for, if any.
fn open_existing(dir: &Path, req: &Requested) -> Result<Store> {
    let Some((index, library_record, mut record)) = read_record(dir)? else {
        if dir.join("meta.json").exists() {
            return Err(not_an_index(dir));
        }
        if being_claimed(dir) {
            return Err(being_created(dir));
        }
        return Err(Error::Store(format!(
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
    if holds_no_document(&index)? {
        // No document was committed with the recorded mapping (say, a first run with a
        // mistyped --text-field failed on line 1): it is not the index's yet, and a rerun
        // without the flag must not inherit the typo.
        record.fields = FieldMap::default();
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
    open_with(dir, index, &library_record, record)
}

/// Whether no document was ever committed to `index` (deleted ones count until merged away).
/// Cost: reads the meta file.
fn holds_no_document(index: &Index) -> Result<bool> {
    let metas = index.load_metas()?;
    Ok(metas.segments.iter().all(|s| s.max_doc() == 0))
}

/// Creates the store in `dir` (missing, empty, or left by a dead run whose claim file is
/// `stale_claim`) with the run's settings and the defaults for the rest.
fn create(dir: &Path, req: &Requested, stale_claim: Option<std::fs::File>) -> Result<Store> {
    let defaults = FieldMap::default();
    let record = StoreSettings {
        fields: FieldMap {
            id: req.id_field.clone().unwrap_or(defaults.id),
            text: req.text_field.clone().unwrap_or(defaults.text),
            title: req.title_field.clone().unwrap_or(defaults.title),
            host: req.host_field.clone().unwrap_or(defaults.host),
        },
        language: req.language.clone().unwrap_or_else(|| "auto".into()),
        k: req.k.unwrap_or(3),
        policy: req.policy.unwrap_or(Policy::Tag).name().to_string(),
    };
    // Check the settings before anything is written.
    let config = config_for(&record)?;
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::Store(format!("cannot create {}: {e}", dir.display())))?;
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
    Ok(Store {
        dir: dir.to_path_buf(),
        index,
        record,
        fields,
    })
}

fn fixed_setting(dir: &Path, flag: &str, built: &str, asked: &str) -> Error {
    Error::Store(format!(
        "{} was built with {flag} {built}, but this run asks for {flag} {asked}; the language, \
         k and key storage of an index are fixed when it is created (fingerprints or keys of \
         two settings cannot be compared): drop the flag, or index into a new directory",
        dir.display()
    ))
}
