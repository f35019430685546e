//! The on-disk index the `neardup` command line makes, made and opened from Python: the same
//! schema (id, title, text, host and the near-duplicate fields), the library's record of the
//! scheme and layout, and the command line's `.neardup.json` (language, k, field mapping,
//! policy). The tests in `tests/test_cli_interop.py` build indexes with each side and open them
//! with the other, so a drift between this file and the command line's store fails them.

use crate::Failure;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, STORED, STRING,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, TextAnalyzer,
};
use tantivy::Index;
use tantivy_simhash::{
    register_tokenizer, BlockLayout, HanSegmentation, NearDupConfig, NearDupIndex, Policy, Scheme,
    Tokenization, SIMHASH_TOKENIZER_NAME,
};

const RECORD_FILE: &str = ".neardup.json";
const RECORD_FORMAT: &str = "neardup/1";

/// The keys of a document dict (the command line's `--id-field` and friends).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FieldMap {
    pub id: String,
    pub text: String,
    pub title: String,
    pub host: String,
}

impl Default for FieldMap {
    fn default() -> Self {
        FieldMap {
            id: "id".into(),
            text: "text".into(),
            title: "title".into(),
            host: "host".into(),
        }
    }
}

/// The settings recorded beside the index (`.neardup.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Record {
    pub format: String,
    pub fields: FieldMap,
    pub language: String,
    pub k: u32,
    pub policy: String,
}

/// The schema fields of the index.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DocFields {
    pub id: Field,
    pub title: Field,
    pub text: Field,
    pub host: Field,
}

/// An open index.
pub(crate) struct Store {
    pub dir: PathBuf,
    pub index: NearDupIndex,
    /// Changes when a writer commits with another policy or field mapping (the defaults of
    /// the next run, as the command line records them).
    pub record: Mutex<Record>,
    pub fields: DocFields,
}

/// The policy names, in the order messages list them.
pub(crate) const POLICIES: &[(&str, Policy)] = &[
    ("tag", Policy::Tag),
    ("reject", Policy::Reject),
    ("replace", Policy::Replace),
    ("off", Policy::Off),
];

/// The policy called `name`, or a message listing the names.
pub(crate) fn policy_named(name: &str) -> Result<Policy, Failure> {
    POLICIES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, p)| p)
        .ok_or_else(|| {
            Failure::Value(format!(
                "unknown policy `{name}`; expected one of tag, reject, replace, off"
            ))
        })
}

impl Store {
    /// `k` (the index's own by default), refused when the index's keys cannot guarantee it.
    pub(crate) fn checked_k(&self, k: Option<u32>) -> Result<u32, Failure> {
        let max = self.index.layout().max_distance();
        let k = k.unwrap_or(max);
        if k > max {
            return Err(Failure::Value(format!(
                "k={k} is beyond what {} guarantees to find ({max}); create a new index with \
                 Index.create(path, k={k})",
                self.dir.display()
            )));
        }
        Ok(k)
    }

    pub(crate) fn record(&self) -> Record {
        self.record
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Records `policy` and `fields` as the defaults of the next run when they changed.
    pub(crate) fn remember(&self, policy: &str, fields: &FieldMap) -> Result<(), Failure> {
        let mut record = self
            .record
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if record.policy == policy && record.fields == *fields {
            return Ok(());
        }
        record.policy = policy.to_string();
        record.fields = fields.clone();
        write_record(&self.dir, &record)
    }
}

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

/// The scheme for a language name (the command line's `--language`), or why there is none.
pub(crate) fn scheme_for(language: &str) -> Result<Scheme, Failure> {
    let built = match language {
        "auto" => return Ok(Scheme::default()),
        "han-chars" => Scheme::builder()
            .tokenization(Tokenization::Builtin {
                han: HanSegmentation::Chars,
            })
            .build(),
        other => {
            let Some(&(name, lang)) = LANGUAGES.iter().find(|(n, _)| *n == other) else {
                let names: Vec<&str> = LANGUAGES.iter().map(|(n, _)| *n).collect();
                return Err(Failure::Value(format!(
                    "unknown language `{other}`; expected auto, han-chars or one of {}",
                    names.join(", ")
                )));
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
    Ok(built?)
}

fn config_for(record: &Record) -> Result<NearDupConfig, Failure> {
    let scheme = scheme_for(&record.language)?;
    let layout = BlockLayout::for_distance(record.k)?;
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

fn doc_fields(schema: &Schema) -> Result<DocFields, Failure> {
    let get = |name: &str| {
        schema.get_field(name).map_err(|_| {
            Failure::Index(format!(
                "the index has no field `{name}`: it was not created by Index.create or \
                 `neardup index`"
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

fn read_record(dir: &Path) -> Result<Option<Record>, Failure> {
    let path = dir.join(RECORD_FILE);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Failure::Index(format!(
                "cannot read {}: {e}",
                path.display()
            )))
        }
    };
    let record: Record = serde_json::from_slice(&bytes).map_err(|e| {
        Failure::Index(format!(
            "{} is damaged ({e}); it records how the index was built: restore it or rebuild \
             the index",
            path.display()
        ))
    })?;
    if record.format != RECORD_FORMAT {
        return Err(Failure::Index(format!(
            "{} has format `{}`, expected `{RECORD_FORMAT}`: the index was made by another \
             version; rebuild it",
            path.display(),
            record.format
        )));
    }
    Ok(Some(record))
}

/// Writes the record next to the index: to a temporary file, then renamed over the old one.
fn write_record(dir: &Path, record: &Record) -> Result<(), Failure> {
    let json = serde_json::to_vec_pretty(record)
        .map_err(|e| Failure::Index(format!("cannot encode the record: {e}")))?;
    let tmp = dir.join(".neardup.json.tmp");
    std::fs::write(&tmp, json)?;
    std::fs::rename(&tmp, dir.join(RECORD_FILE))?;
    Ok(())
}

fn not_an_index(dir: &Path) -> Failure {
    let what = if dir.join("meta.json").exists() {
        "is a tantivy index, but not one made by Index.create or `neardup index` (it has no \
         .neardup.json)"
    } else if dir.exists() {
        "is not a neardup index (no .neardup.json, no meta.json)"
    } else {
        "does not exist"
    };
    Failure::Index(format!(
        "{} {what}; create one with Index.create(path) or `neardup index FILES --index {}`",
        dir.display(),
        dir.display()
    ))
}

fn open_with(dir: &Path, record: Record) -> Result<Store, Failure> {
    let config = config_for(&record).map_err(|e| {
        Failure::Index(format!(
            "{} records settings this version cannot use ({}); rebuild the index",
            dir.join(RECORD_FILE).display(),
            e.message()
        ))
    })?;
    let index = Index::open_in_dir(dir).map_err(|e| {
        Failure::Index(format!(
            "{} records a neardup index, but tantivy cannot open it: {e}",
            dir.display()
        ))
    })?;
    let fields = doc_fields(&index.schema())?;
    let scheme = config.get_scheme().clone();
    let index = NearDupIndex::open(index, config)?;
    register_tokenizer(index.index(), &scheme);
    Ok(Store {
        dir: dir.to_path_buf(),
        index,
        record: Mutex::new(record),
        fields,
    })
}

/// Opens an index made by [`create`] or by `neardup index`.
///
/// Errors: the directory is not such an index, its record is damaged, or the index records
/// another scheme or layout than the record's settings give.
pub(crate) fn open(dir: &Path) -> Result<Store, Failure> {
    match read_record(dir)? {
        Some(record) => open_with(dir, record),
        None => Err(not_an_index(dir)),
    }
}

/// Creates an index in `dir` (missing or empty), with the command line's defaults for the
/// field mapping.
///
/// Errors: `dir` is a file or a non-empty directory; an unknown language or policy; a k no
/// layout supports.
pub(crate) fn create(dir: &Path, language: &str, k: u32, policy: &str) -> Result<Store, Failure> {
    if dir.is_file() {
        return Err(Failure::Value(format!(
            "{} is a file; an index needs a directory",
            dir.display()
        )));
    }
    let empty = match std::fs::read_dir(dir) {
        Ok(mut entries) => entries.next().is_none(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => {
            return Err(Failure::Index(format!(
                "cannot read {}: {e}",
                dir.display()
            )))
        }
    };
    if !empty {
        let what = if read_record(dir).ok().flatten().is_some() {
            "already holds an index: open it with Index.open(path)"
        } else {
            "is not empty; create an index in a new or empty directory"
        };
        return Err(Failure::Value(format!("{} {what}", dir.display())));
    }
    policy_named(policy)?;
    let record = Record {
        format: RECORD_FORMAT.to_string(),
        fields: FieldMap::default(),
        language: language.to_string(),
        k,
        policy: policy.to_string(),
    };
    // Check the settings before anything is written.
    let config = match config_for(&record) {
        Ok(c) => c,
        Err(Failure::Crate(e)) => return Err(Failure::Value(e.to_string())),
        Err(other) => return Err(other),
    };
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::Index(format!("cannot create {}: {e}", dir.display())))?;
    let schema = schema_for(&config);
    let index = Index::create_in_dir(dir, schema)?;
    let fields = doc_fields(&index.schema())?;
    let scheme = config.get_scheme().clone();
    let index = NearDupIndex::create(index, config)?;
    register_tokenizer(index.index(), &scheme);
    write_record(dir, &record)?;
    Ok(Store {
        dir: dir.to_path_buf(),
        index,
        record: Mutex::new(record),
        fields,
    })
}
