//! The indexes the command line creates: a fixed schema (id, title, text, host and the
//! near-duplicate fields), and a small record (`.neardup.json`) of the settings that reopen it,
//! beside the library's own record of the scheme and layout.

use super::input::FieldMap;
use super::{CliResult, DedupPolicy, Failure};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, STORED, STRING,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, TextAnalyzer,
};
use tantivy::Index;
use tantivy_simhash::{
    register_tokenizer, BlockLayout, Error, HanSegmentation, NearDupConfig, NearDupIndex, Scheme,
    SIMHASH_TOKENIZER_NAME,
};

/// The command line's record in an index directory (a dot-file: tantivy never deletes it).
pub(crate) const CLI_RECORD_FILE: &str = ".neardup.json";
const CLI_RECORD_FORMAT: &str = "neardup/1";

/// The settings of a command-line index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CliRecord {
    pub format: String,
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

/// The largest k of an index (the widest layout [`BlockLayout::for_distance`] builds).
pub(crate) const MAX_K: u32 = 9;

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
            let Some(&(name, lang)) = LANGUAGES.iter().find(|(n, _)| *n == other) else {
                let names: Vec<&str> = LANGUAGES.iter().map(|(n, _)| *n).collect();
                return Err(format!(
                    "unknown language `{other}`; expected auto, han-chars or one of {}",
                    names.join(", ")
                ));
            };
            let analyzer = TextAnalyzer::builder(SimpleTokenizer::default())
                .filter(RemoveLongFilter::limit(40))
                .filter(LowerCaser)
                .filter(Stemmer::new(lang))
                .build();
            Scheme::builder()
                .analyzer(&format!("stem-{name}"), analyzer)
                .build()
        }
    };
    built.map_err(|e| e.to_string())
}

/// The library configuration for the record's settings, or why they are invalid.
fn config_for(record: &CliRecord) -> Result<NearDupConfig, String> {
    let scheme = scheme_for(&record.language)?;
    let layout = BlockLayout::for_distance(record.k).map_err(|e| e.to_string())?;
    Ok(NearDupConfig::new("id", ["title", "text"])
        .scheme(scheme)
        .layout(layout))
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

fn read_record(dir: &Path) -> CliResult<Option<CliRecord>> {
    let path = dir.join(CLI_RECORD_FILE);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Failure::Message(format!(
                "cannot read {}: {e}",
                path.display()
            )))
        }
    };
    if bytes.is_empty() {
        // The claim of an `index` run that is creating the index (see `open_or_create`).
        return Err(Failure::Message(format!(
            "{} is being created by another `neardup index` right now (its {CLI_RECORD_FILE} \
             is still empty); wait for that run to finish, then rerun this command. If no \
             such run is left (it was killed while creating the index), delete {} and rerun",
            dir.display(),
            dir.display()
        )));
    }
    let record: CliRecord = serde_json::from_slice(&bytes).map_err(|e| {
        Failure::Message(format!(
            "{} is damaged ({e}); it records how the index was built: restore it or rebuild \
             the index",
            path.display()
        ))
    })?;
    if record.format != CLI_RECORD_FORMAT {
        return Err(Failure::Message(format!(
            "{} has format `{}`, expected `{CLI_RECORD_FORMAT}`: the index was made by another \
             version of neardup; rebuild it",
            path.display(),
            record.format
        )));
    }
    Ok(Some(record))
}

/// Writes the record next to the index: to a temporary file, then renamed over the old one.
pub(crate) fn write_record(dir: &Path, record: &CliRecord) -> CliResult<()> {
    let json = serde_json::to_vec_pretty(record).map_err(|e| Failure::Error(e.into()))?;
    let tmp = dir.join(".neardup.json.tmp");
    std::fs::write(&tmp, json)?;
    std::fs::rename(&tmp, dir.join(CLI_RECORD_FILE))?;
    Ok(())
}

fn not_an_index(dir: &Path) -> Failure {
    let d = dir.display();
    Failure::Message(if dir.join("meta.json").exists() {
        format!(
            "{d} is a tantivy index, but not one made by `neardup index` (it has no \
             {CLI_RECORD_FILE}, which records the language, k and fields neardup needs); neardup \
             reads and adds to only the indexes it made: build one from your JSONL into a new \
             directory with `neardup index FILES --index NEWDIR`"
        )
    } else if dir.exists() {
        format!(
            "{d} is not a neardup index (no {CLI_RECORD_FILE}, no meta.json); build one with \
             `neardup index FILES --index {d}` (into a new or empty directory)"
        )
    } else {
        format!("{d} does not exist; build an index there with `neardup index FILES --index {d}`")
    })
}

/// What a scheme or layout mismatch means for a command-line index: the settings in its
/// record give another scheme or layout than the index records, so another version of
/// neardup built it (or a record was edited).
fn built_elsewhere(dir: &Path, record: &CliRecord, e: Error) -> Failure {
    match e {
        Error::IndexMismatch {
            what,
            found,
            expected,
        } => Failure::Message(format!(
            "{} records the {what} `{found}`, but this version of neardup computes `{expected}` \
             for the index's settings (language {}, k {}): it was built by another version of \
             neardup, or a record was edited; rebuild it with this version (`neardup index \
             FILES --index NEWDIR`), or use the neardup that built it",
            dir.display(),
            record.language,
            record.k
        )),
        other => Failure::Error(other),
    }
}

fn open_with(dir: &Path, record: CliRecord) -> CliResult<Store> {
    let config = config_for(&record).map_err(|e| {
        Failure::Message(format!(
            "{} records settings this version cannot use ({e}); rebuild the index",
            dir.join(CLI_RECORD_FILE).display()
        ))
    })?;
    let index = Index::open_in_dir(dir).map_err(|e| {
        Failure::Message(format!(
            "{} records a neardup index, but tantivy cannot open it: {e}",
            dir.display()
        ))
    })?;
    let fields = doc_fields(&index.schema())?;
    let scheme = config.get_scheme().clone();
    let index = NearDupIndex::open(index, config).map_err(|e| built_elsewhere(dir, &record, e))?;
    register_tokenizer(index.index(), &scheme);
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
    match read_record(dir)? {
        Some(record) => open_with(dir, record),
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
    if !empty {
        let Some(mut record) = read_record(dir)? else {
            if dir.join("meta.json").exists() {
                return Err(not_an_index(dir));
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
        return Ok((open_with(dir, record)?, false));
    }
    let record = CliRecord {
        format: CLI_RECORD_FORMAT.to_string(),
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
    claim(dir)?;
    let schema = schema_for(&config);
    let index = Index::create_in_dir(dir, schema)?;
    let fields = doc_fields(&index.schema())?;
    let scheme = config.get_scheme().clone();
    let index = NearDupIndex::create(index, config)?;
    register_tokenizer(index.index(), &scheme);
    write_record(dir, &record)?;
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

/// Claims an empty directory for creating an index: exactly one process can create the
/// (empty) record file, so of two runs creating one index at once, the second learns that the
/// first is doing it. The record's content is written once the index exists.
fn claim(dir: &Path) -> CliResult<()> {
    match std::fs::File::create_new(dir.join(CLI_RECORD_FILE)) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(Failure::Message(format!(
            "{} was created by another process at the same time (another `neardup index` is \
             creating the index there); wait for that run to finish, then rerun this command \
             to add to the index",
            dir.display()
        ))),
        Err(e) => Err(Failure::Message(format!(
            "cannot create {}: {e}",
            dir.join(CLI_RECORD_FILE).display()
        ))),
    }
}

fn fixed_setting(dir: &Path, flag: &str, built: &str, asked: &str) -> Failure {
    Failure::Message(format!(
        "{} was built with {flag} {built}, but this run asks for {flag} {asked}; the language \
         and k of an index are fixed when it is created (fingerprints or keys of two settings \
         cannot be compared): drop the flag, or index into a new directory",
        dir.display()
    ))
}
