//! The near-duplicate index: schema fields, the scheme record, lookups and [`DedupWriter`].
//!
//! Every document carries three things next to the user's own fields:
//!
//! - its [`Fingerprint`] as a single-valued `u64` **fast** field (not stored: the column is
//!   enough), 8 bytes per document before compression;
//! - the keys of its [`BlockLayout`] as a multi-valued `u64` **indexed** field without
//!   fieldnorms, so a lookup reads a few short postings lists;
//! - optionally, under [`Policy::Tag`], the id of the first document of its near-duplicate group
//!   in a string fast field, so results can be collapsed exactly.
//!
//! The user's **id field** must be a text field indexed with the `raw` tokenizer and fast:
//! `STRING | FAST` (add `STORED` if you want it back from the doc store). Lookups return ids read
//! from its column, [`Policy::Replace`] deletes by it, and [`NearDupQuery::from_id`] finds a
//! document by it.
//!
//! Which [`Scheme`] and [`BlockLayout`] built an index ([`IndexRecord`]: their ids and
//! parameters, and the field names, so [`NearDupIndex::open_recorded`] needs nothing else) is
//! recorded twice: in a small file
//! (`.tantivy-simhash.json`; tantivy's garbage collection never deletes names starting with a dot)
//! written by [`NearDupIndex::create`], and in the payload of every commit made through
//! [`DedupWriter::commit`]. [`NearDupIndex::open`] checks the record against what the caller
//! asks for: fingerprints of two schemes cannot be compared, so a mismatch is an error
//! ([`Error::IndexMismatch`]), and so is a missing or mistyped field ([`Error::Schema`]).
//!
//! ```
//! use tantivy::schema::{Schema, FAST, STORED, STRING, TEXT};
//! use tantivy::{doc, Index};
//! use tantivy_simhash::{DedupWriter, NearDupConfig, NearDupIndex, Outcome, Policy};
//!
//! let config = NearDupConfig::new("id", ["body"]);
//! let mut builder = Schema::builder();
//! let id = builder.add_text_field("id", STRING | FAST | STORED);
//! let body = builder.add_text_field("body", TEXT);
//! config.add_fields(&mut builder);
//! let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config)?;
//!
//! let mut writer = index.writer(50_000_000, Policy::Reject)?;
//! let text = "Simhash maps a weighted feature set to 64 bits, so that near-duplicate \
//!             documents get fingerprints that differ in only a few bits.";
//! assert!(matches!(writer.add_document(doc!(id => "a", body => text))?, Outcome::Added { .. }));
//! // The writer sees its own uncommitted documents:
//! let again = writer.add_document(doc!(id => "b", body => text))?;
//! assert!(matches!(again, Outcome::Duplicate { ref of, distance: 0, .. } if of == "a"));
//! writer.commit()?;
//!
//! let searcher = index.searcher()?;
//! // Formatting-only changes give the same fingerprint:
//! let hits = searcher.lookup_text(&text.to_uppercase())?;
//! assert_eq!(hits[0].id, "a");
//! # Ok::<(), tantivy_simhash::Error>(())
//! ```

use crate::error::{Error, Result};
use crate::fingerprint::{
    register_tokenizer, Fingerprint, Fingerprinter, IdfTable, Scheme, SchemeParameters,
    SIMHASH_TOKENIZER_NAME,
};
use crate::layout::BlockLayout;
use crate::query::NearDupQuery;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use tantivy::columnar::{Column, StrColumn};
use tantivy::schema::{
    Field, FieldType, IndexRecordOption, NumericOptions, SchemaBuilder, Value, FAST, STRING,
};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{
    Directory, DocAddress, DocId, DocSet, Index, IndexReader, IndexWriter, Opstamp, ReloadPolicy,
    Searcher, SegmentReader, TantivyDocument, Term, TERMINATED,
};

/// The name of the file that records the scheme and layout of an index.
pub const RECORD_FILE: &str = ".tantivy-simhash.json";

/// The field [`NearDupConfig::add_fields`] adds for each document's place in the order the
/// writer added documents (a `u64` fast field). Near-duplicates at the same distance are ranked
/// by it, so "the first" means the first added, whatever tantivy's threads and segments do.
/// Indexes made without it still work; their ties follow segment order.
pub const SEQUENCE_FIELD: &str = "simhash_seq";

/// The field [`NearDupConfig::add_fields`] adds for the ids a document replaced under
/// [`Policy::Replace`] (directly, or through the documents it replaced), a multi-valued
/// `STRING | FAST` field: [`NearDupSearcher::is_replaced`] reads it, so a rerun over the same
/// input can skip the ids that were replaced. Indexes made without it do not record them.
pub const REPLACED_FIELD: &str = "simhash_replaced";

/// The format tag of the record (file and commit payload).
const RECORD_FORMAT: &str = "tantivy-simhash/1";

/// How an index uses fingerprints: the scheme, the layout and the field names.
///
/// Defaults: [`Scheme::default`], [`BlockLayout::default`] (4 x 16, k <= 3), fields `simhash`
/// (fingerprint), `simhash_keys` (keys) and `simhash_group` (group, for [`Policy::Tag`]).
#[derive(Clone, Debug)]
pub struct NearDupConfig {
    scheme: Scheme,
    layout: BlockLayout,
    id_field: String,
    text_fields: Vec<String>,
    fingerprint_field: String,
    keys_field: String,
    group_field: Option<String>,
}

impl NearDupConfig {
    /// A configuration whose documents are identified by `id_field` (a `STRING | FAST` text
    /// field) and fingerprinted from `text_fields` (their values joined by a line break, in the
    /// order given).
    pub fn new<S: Into<String>>(
        id_field: impl Into<String>,
        text_fields: impl IntoIterator<Item = S>,
    ) -> Self {
        NearDupConfig {
            scheme: Scheme::default(),
            layout: BlockLayout::default(),
            id_field: id_field.into(),
            text_fields: text_fields.into_iter().map(Into::into).collect(),
            fingerprint_field: "simhash".into(),
            keys_field: "simhash_keys".into(),
            group_field: Some("simhash_group".into()),
        }
    }

    /// Uses `scheme` to fingerprint text.
    pub fn scheme(mut self, scheme: Scheme) -> Self {
        self.scheme = scheme;
        self
    }

    /// Uses `layout` for the keys; its [`BlockLayout::max_distance`] is the default `k` of
    /// lookups and of [`DedupWriter`].
    pub fn layout(mut self, layout: BlockLayout) -> Self {
        self.layout = layout;
        self
    }

    /// Renames the fingerprint and key fields.
    pub fn field_names(mut self, fingerprint: impl Into<String>, keys: impl Into<String>) -> Self {
        self.fingerprint_field = fingerprint.into();
        self.keys_field = keys.into();
        self
    }

    /// Renames the group field, or (with `None`) leaves it out; [`Policy::Tag`] needs it.
    pub fn group_field(mut self, name: Option<&str>) -> Self {
        self.group_field = name.map(str::to_string);
        self
    }

    /// The scheme.
    pub fn get_scheme(&self) -> &Scheme {
        &self.scheme
    }

    /// The layout.
    pub fn get_layout(&self) -> &BlockLayout {
        &self.layout
    }

    /// The names of the text fields that are fingerprinted, in order.
    pub fn text_field_names(&self) -> &[String] {
        &self.text_fields
    }

    /// Adds the fingerprint, key and (if configured) group fields to `builder`. The id and text
    /// fields are the caller's: add them yourself (the id as `STRING | FAST`).
    ///
    /// The fingerprint is a `u64` fast field, the keys a multi-valued `u64` field indexed without
    /// fieldnorms (the `INDEXED` flag would turn them on), the group a `STRING | FAST` text field
    /// (so `TermQuery` can fetch a whole group and its column collapses results).
    ///
    /// It also adds [`SEQUENCE_FIELD`] (the order documents were added in, to break ties between
    /// equally near near-duplicates by it) and [`REPLACED_FIELD`] (the ids each document
    /// replaced, so reruns can skip them): 8 bytes per document, and the replaced ids.
    pub fn add_fields(&self, builder: &mut SchemaBuilder) {
        builder.add_u64_field(&self.fingerprint_field, FAST);
        builder.add_u64_field(&self.keys_field, NumericOptions::default().set_indexed());
        if let Some(group) = &self.group_field {
            builder.add_text_field(group, STRING | FAST);
        }
        builder.add_u64_field(SEQUENCE_FIELD, FAST);
        builder.add_text_field(REPLACED_FIELD, STRING | FAST);
    }

    fn record(&self) -> Record {
        Record {
            format: RECORD_FORMAT.to_string(),
            scheme: self.scheme.id().to_string(),
            layout: self.layout.id(),
            fingerprint_field: self.fingerprint_field.clone(),
            keys_field: self.keys_field.clone(),
            settings: Some(RecordedSettings {
                scheme: self.scheme.parameters(),
                layout: self.layout.clone(),
                id_field: self.id_field.clone(),
                text_fields: self.text_fields.clone(),
                group_field: self.group_field.clone(),
            }),
            application: None,
        }
    }
}

/// What an index records about how it was built: the scheme and layout (their ids, to check,
/// and their parameters, to rebuild them), the field names, and data an application stores
/// beside them ([`NearDupIndex::set_application_data`]).
///
/// It lives in a small file ([`RECORD_FILE`]) written by [`NearDupIndex::create`] and in the
/// payload of every commit made through [`DedupWriter::commit`].
///
/// ```
/// # use tantivy::schema::{Schema, FAST, STRING, TEXT};
/// # use tantivy::Index;
/// use tantivy_simhash::{IndexRecord, NearDupConfig, NearDupIndex};
/// # let config = NearDupConfig::new("id", ["body"]);
/// # let mut builder = Schema::builder();
/// # builder.add_text_field("id", STRING | FAST);
/// # builder.add_text_field("body", TEXT);
/// # config.add_fields(&mut builder);
/// # let tantivy_index = Index::create_in_ram(builder.build());
/// NearDupIndex::create(tantivy_index.clone(), config)?;
/// // Later, with nothing but the index: the record rebuilds the configuration.
/// let index = NearDupIndex::open_recorded(tantivy_index.clone())?;
/// index.set_application_data(serde_json::json!({"owner": "crawler"}))?;
/// let record = IndexRecord::read(&tantivy_index)?.expect("a record");
/// assert_eq!(record.application().unwrap()["owner"], "crawler");
/// assert_eq!(record.layout().unwrap().max_distance(), 3);
/// # Ok::<(), tantivy_simhash::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexRecord {
    format: String,
    scheme: String,
    layout: String,
    fingerprint_field: String,
    keys_field: String,
    /// Absent in records written before parameters were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    settings: Option<RecordedSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    application: Option<serde_json::Value>,
}

type Record = IndexRecord;

/// The parameters that rebuild a [`NearDupConfig`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct RecordedSettings {
    scheme: SchemeParameters,
    layout: BlockLayout,
    id_field: String,
    text_fields: Vec<String>,
    group_field: Option<String>,
}

impl IndexRecord {
    /// Reads the record of `index`: the record file, else the last commit's payload; `None`
    /// when the index has neither (it was not built by [`NearDupIndex::create`]).
    ///
    /// Errors: [`Error::Json`] when the file is damaged; [`Error::RecordConflict`] when the file
    /// and the payload disagree (one of them was rewritten); I/O errors. Cost: one small file
    /// read and tantivy's `meta.json`.
    pub fn read(index: &Index) -> Result<Option<IndexRecord>> {
        let dir = index.directory();
        let path = Path::new(RECORD_FILE);
        if dir.exists(path).map_err(tantivy::TantivyError::from)? {
            let bytes = dir.atomic_read(path).map_err(tantivy::TantivyError::from)?;
            let record: Record = serde_json::from_slice(&bytes)?;
            if let Some(p) = payload_record(index)? {
                // Both exist: they must agree, or someone rewrote one of them.
                if let Err(Error::IndexMismatch {
                    what,
                    found,
                    expected,
                }) = p.check(&record)
                {
                    return Err(Error::RecordConflict {
                        what,
                        file: expected,
                        payload: found,
                    });
                }
            }
            return Ok(Some(record));
        }
        payload_record(index)
    }

    /// The scheme's id.
    pub fn scheme_id(&self) -> &str {
        &self.scheme
    }

    /// The scheme's parameters; `None` in records written before they were recorded.
    pub fn scheme_parameters(&self) -> Option<&SchemeParameters> {
        self.settings.as_ref().map(|s| &s.scheme)
    }

    /// The layout; `None` in records written before it was recorded.
    pub fn layout(&self) -> Option<&BlockLayout> {
        self.settings.as_ref().map(|s| &s.layout)
    }

    /// What the application stored with [`NearDupIndex::set_application_data`].
    pub fn application(&self) -> Option<&serde_json::Value> {
        self.application.as_ref()
    }

    /// The configuration that built the index. `analyzer` and `idf` are needed only for a
    /// scheme that used a user analyzer or an IDF table (see [`SchemeParameters::to_builder`]).
    ///
    /// Errors: [`Error::InvalidConfig`] when the record has no parameters (written by an older
    /// release: open with [`NearDupIndex::open`] and the configuration), when an analyzer or
    /// table is missing, or when the rebuilt scheme's id differs from the recorded one.
    pub fn config(
        &self,
        analyzer: Option<TextAnalyzer>,
        idf: Option<IdfTable>,
    ) -> Result<NearDupConfig> {
        let settings = self.settings.as_ref().ok_or_else(|| {
            Error::InvalidConfig(format!(
                "the index records scheme `{}` but not its parameters (an older release wrote \
                 the record); open it with NearDupIndex::open and the configuration it was \
                 built with",
                self.scheme
            ))
        })?;
        let scheme = settings.scheme.to_builder(analyzer, idf)?.build()?;
        if scheme.id() != self.scheme {
            return Err(Error::InvalidConfig(format!(
                "the recorded parameters rebuild scheme `{}`, but the index records `{}`; \
                 pass the analyzer the index was built with",
                scheme.id(),
                self.scheme
            )));
        }
        Ok(NearDupConfig {
            scheme,
            layout: settings.layout.clone(),
            id_field: settings.id_field.clone(),
            text_fields: settings.text_fields.clone(),
            fingerprint_field: self.fingerprint_field.clone(),
            keys_field: self.keys_field.clone(),
            group_field: settings.group_field.clone(),
        })
    }

    fn to_json(&self) -> Result<String> {
        Ok(serde_json::to_string(self)?)
    }

    /// Compares what the index records (`self`) with what the caller asks for.
    fn check(&self, expected: &Record) -> Result<()> {
        let pairs: [(&'static str, &String, &String); 4] = [
            ("scheme", &self.scheme, &expected.scheme),
            ("layout", &self.layout, &expected.layout),
            (
                "fingerprint field",
                &self.fingerprint_field,
                &expected.fingerprint_field,
            ),
            ("keys field", &self.keys_field, &expected.keys_field),
        ];
        for (what, found, wanted) in pairs {
            if found != wanted {
                return Err(Error::IndexMismatch {
                    what,
                    found: found.clone(),
                    expected: wanted.clone(),
                });
            }
        }
        Ok(())
    }
}

fn payload_record(index: &Index) -> Result<Option<Record>> {
    let metas = index.load_metas()?;
    Ok(metas
        .payload
        .as_deref()
        .and_then(|p| serde_json::from_str::<Record>(p).ok())
        .filter(|r| r.format == RECORD_FORMAT))
}

/// The resolved fields of a near-duplicate index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NearDupFields {
    /// The user's id field (`STRING | FAST`).
    pub id: Field,
    /// The fingerprint (`u64`, fast).
    pub fingerprint: Field,
    /// The keys (`u64`, indexed, multi-valued).
    pub keys: Field,
    /// The group id (string, fast), if configured.
    pub group: Option<Field>,
    /// [`SEQUENCE_FIELD`] (`u64`, fast), if the schema has it.
    pub sequence: Option<Field>,
    /// [`REPLACED_FIELD`] (string, indexed and fast, multi-valued), if the schema has it.
    pub replaced: Option<Field>,
}

/// A tantivy [`Index`] with a checked record of the scheme and layout that built it.
///
/// Cheap to clone (the index and scheme are shared).
#[derive(Clone)]
pub struct NearDupIndex {
    index: Index,
    config: Arc<NearDupConfig>,
    fields: NearDupFields,
    text_fields: Arc<Vec<Field>>,
    reader: Arc<Mutex<Option<IndexReader>>>,
}

impl std::fmt::Debug for NearDupIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NearDupIndex")
            .field("scheme", &self.config.scheme.id())
            .field("layout", &self.config.layout.id())
            .field("fields", &self.fields)
            .finish_non_exhaustive()
    }
}

impl NearDupIndex {
    /// Starts using `index` with `config`: checks the schema, then records the scheme, layout and
    /// field names (the record file, [`IndexRecord`]), or checks them if the index already has
    /// a record. Registers the scheme's analysis under [`SIMHASH_TOKENIZER_NAME`] unless a
    /// tokenizer is already registered under that name (as [`NearDupIndex::open`] does).
    ///
    /// Errors: [`Error::Schema`] when a field is missing or has the wrong type or options;
    /// [`Error::IndexMismatch`] when the index already records another scheme or layout, or has
    /// documents but no record (it was not built by this crate: rebuild it).
    pub fn create(index: Index, config: NearDupConfig) -> Result<Self> {
        let this = NearDupIndex::resolve(index, config)?;
        let wanted = this.config.record();
        match IndexRecord::read(&this.index)? {
            Some(found) => found.check(&wanted)?,
            None => {
                let has_docs = !this.index.searchable_segment_metas()?.is_empty();
                if has_docs {
                    return Err(no_record(&wanted.scheme));
                }
                let json = wanted.to_json()?;
                this.index
                    .directory()
                    .atomic_write(Path::new(RECORD_FILE), json.as_bytes())?;
            }
        }
        Ok(this)
    }

    /// Opens an index built by [`NearDupIndex::create`], checking that it records the scheme and
    /// layout of `config` and that its schema has the fields `config` names.
    ///
    /// Errors: [`Error::IndexMismatch`] when the index records another scheme, layout or field
    /// names, or records nothing; [`Error::Schema`] when a field is missing or mistyped.
    ///
    /// ```
    /// # use tantivy::schema::{Schema, FAST, STRING, TEXT};
    /// # use tantivy::Index;
    /// use tantivy_simhash::{BlockLayout, Error, NearDupConfig, NearDupIndex};
    /// # let config = NearDupConfig::new("id", ["body"]);
    /// # let mut builder = Schema::builder();
    /// # builder.add_text_field("id", STRING | FAST);
    /// # builder.add_text_field("body", TEXT);
    /// # config.add_fields(&mut builder);
    /// # let tantivy_index = Index::create_in_ram(builder.build());
    /// NearDupIndex::create(tantivy_index.clone(), config.clone())?;
    /// let wider = config.layout(BlockLayout::for_distance(6)?);
    /// let err = NearDupIndex::open(tantivy_index, wider).unwrap_err();
    /// assert!(matches!(err, Error::IndexMismatch { what: "layout", .. }));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn open(index: Index, config: NearDupConfig) -> Result<Self> {
        let this = NearDupIndex::resolve(index, config)?;
        let wanted = this.config.record();
        match IndexRecord::read(&this.index)? {
            Some(found) => found.check(&wanted)?,
            None => return Err(no_record(&wanted.scheme)),
        }
        Ok(this)
    }

    /// Opens an index with the configuration its record holds ([`IndexRecord::config`]): no
    /// need to know how it was built. For a scheme with a user analyzer or an IDF table, read
    /// the record and pass them to [`IndexRecord::config`], then [`NearDupIndex::open`].
    ///
    /// Errors: [`Error::IndexMismatch`] when the index has no record; the errors of
    /// [`IndexRecord::config`] and [`NearDupIndex::open`].
    pub fn open_recorded(index: Index) -> Result<Self> {
        let Some(record) = IndexRecord::read(&index)? else {
            return Err(no_record("(unknown: opened from its record)"));
        };
        let config = record.config(None, None)?;
        NearDupIndex::open(index, config)
    }

    /// Stores `data` in the record file beside the scheme and layout (replacing what was stored
    /// before), for settings an application wants to find again with the index
    /// ([`IndexRecord::application`]). The file is rewritten atomically.
    ///
    /// Errors: I/O errors; the errors of [`IndexRecord::read`].
    pub fn set_application_data(&self, data: serde_json::Value) -> Result<()> {
        let mut record = match IndexRecord::read(&self.index)? {
            Some(r) => r,
            None => self.config.record(),
        };
        record.application = Some(data);
        self.index
            .directory()
            .atomic_write(Path::new(RECORD_FILE), record.to_json()?.as_bytes())?;
        Ok(())
    }

    fn resolve(index: Index, config: NearDupConfig) -> Result<Self> {
        let schema = index.schema();
        let lookup = |name: &str| {
            schema.get_field(name).map_err(|_| Error::Schema {
                field: name.to_string(),
                problem: "not in the schema; add it (NearDupConfig::add_fields adds the \
                          fingerprint, key and group fields; the id field is yours, as \
                          STRING | FAST)"
                    .into(),
            })
        };
        let schema_err = |name: &str, problem: &str| Error::Schema {
            field: name.to_string(),
            problem: problem.to_string(),
        };

        let id = lookup(&config.id_field)?;
        match schema.get_field_entry(id).field_type() {
            FieldType::Str(o)
                if o.is_fast()
                    && o.get_indexing_options()
                        .is_some_and(|i| i.tokenizer() == "raw") => {}
            _ => {
                return Err(schema_err(
                    &config.id_field,
                    "the id field must be a text field indexed with the `raw` tokenizer and \
                     fast: declare it as STRING | FAST (and STORED if you want it back)",
                ))
            }
        }
        let fingerprint = lookup(&config.fingerprint_field)?;
        match schema.get_field_entry(fingerprint).field_type() {
            FieldType::U64(o) if o.is_fast() => {}
            _ => {
                return Err(schema_err(
                    &config.fingerprint_field,
                    "the fingerprint field must be a u64 fast field; use NearDupConfig::add_fields",
                ))
            }
        }
        let keys = lookup(&config.keys_field)?;
        match schema.get_field_entry(keys).field_type() {
            FieldType::U64(o) if o.is_indexed() => {}
            _ => {
                return Err(schema_err(
                    &config.keys_field,
                    "the keys field must be an indexed u64 field; use NearDupConfig::add_fields",
                ))
            }
        }
        let group = match &config.group_field {
            None => None,
            Some(name) => {
                let f = lookup(name)?;
                match schema.get_field_entry(f).field_type() {
                    FieldType::Str(o) if o.is_fast() => Some(f),
                    _ => {
                        return Err(schema_err(
                            name,
                            "the group field must be a fast text field; use \
                             NearDupConfig::add_fields",
                        ))
                    }
                }
            }
        };
        // Optional: indexes made before these fields existed open without them.
        let sequence = match schema.get_field(SEQUENCE_FIELD) {
            Err(_) => None,
            Ok(f) => match schema.get_field_entry(f).field_type() {
                FieldType::U64(o) if o.is_fast() => Some(f),
                _ => {
                    return Err(schema_err(
                        SEQUENCE_FIELD,
                        "this crate's sequence field must be a u64 fast field; use \
                         NearDupConfig::add_fields",
                    ))
                }
            },
        };
        let replaced = match schema.get_field(REPLACED_FIELD) {
            Err(_) => None,
            Ok(f) => match schema.get_field_entry(f).field_type() {
                FieldType::Str(o)
                    if o.is_fast()
                        && o.get_indexing_options()
                            .is_some_and(|i| i.tokenizer() == "raw") =>
                {
                    Some(f)
                }
                _ => {
                    return Err(schema_err(
                        REPLACED_FIELD,
                        "this crate's replaced-ids field must be STRING | FAST; use \
                         NearDupConfig::add_fields",
                    ))
                }
            },
        };
        let mut text_fields = Vec::with_capacity(config.text_fields.len());
        for name in &config.text_fields {
            let f = lookup(name)?;
            if !matches!(schema.get_field_entry(f).field_type(), FieldType::Str(_)) {
                return Err(schema_err(
                    name,
                    "text fields to fingerprint must be text fields",
                ));
            }
            text_fields.push(f);
        }
        // Text fields that name the tokenizer must be analysed by this very scheme, or search
        // and fingerprints would disagree on what a word is; a tokenizer the user registered
        // under that name is theirs and stays.
        if index.tokenizers().get(SIMHASH_TOKENIZER_NAME).is_none() {
            register_tokenizer(&index, &config.scheme);
        }
        Ok(NearDupIndex {
            index,
            config: Arc::new(config),
            fields: NearDupFields {
                id,
                fingerprint,
                keys,
                group,
                sequence,
                replaced,
            },
            text_fields: Arc::new(text_fields),
            reader: Arc::new(Mutex::new(None)),
        })
    }

    /// The tantivy index.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// The scheme.
    pub fn scheme(&self) -> &Scheme {
        &self.config.scheme
    }

    /// The layout.
    pub fn layout(&self) -> &BlockLayout {
        &self.config.layout
    }

    /// The resolved fields.
    pub fn fields(&self) -> NearDupFields {
        self.fields
    }

    /// The configuration.
    pub fn config(&self) -> &NearDupConfig {
        &self.config
    }

    pub(crate) fn config_fingerprint_field(&self) -> &str {
        &self.config.fingerprint_field
    }

    /// The fingerprint of a document: the values of the configured text fields joined by line
    /// breaks, through the scheme. Cost: one analysis of the text.
    pub fn fingerprint_document(&self, doc: &TantivyDocument) -> Fingerprint {
        let text = document_text(doc, &self.text_fields);
        self.config.scheme.fingerprint(&text)
    }

    /// Adds the fingerprint field and the keys of `fp` to `doc`.
    pub fn add_fingerprint_to(&self, doc: &mut TantivyDocument, fp: Fingerprint) {
        doc.add_u64(self.fields.fingerprint, fp.0);
        for key in self.config.layout.keys(fp) {
            doc.add_u64(self.fields.keys, key);
        }
    }

    /// A [`DedupWriter`] with `memory_budget` bytes in total for tantivy's indexing threads
    /// (at least 15 MB per thread; see `Index::writer`).
    pub fn writer(&self, memory_budget: usize, policy: Policy) -> Result<DedupWriter> {
        let writer: IndexWriter = self.index.writer(memory_budget)?;
        DedupWriter::wrap(self.clone(), writer, policy)
    }

    /// A [`DedupWriter`] with `num_threads` indexing threads sharing `memory_budget` bytes.
    pub fn writer_with_num_threads(
        &self,
        num_threads: usize,
        memory_budget: usize,
        policy: Policy,
    ) -> Result<DedupWriter> {
        let writer: IndexWriter = self
            .index
            .writer_with_num_threads(num_threads, memory_budget)?;
        DedupWriter::wrap(self.clone(), writer, policy)
    }

    /// A searcher over the last commit, from a reader this index keeps (manual reload: each
    /// call reloads it, so the result reflects every commit made so far). Cost: a reload and
    /// opening each segment's columns; keep the searcher for many lookups.
    pub fn searcher(&self) -> Result<NearDupSearcher> {
        let mut guard = lock(&self.reader);
        let reader = match guard.as_ref() {
            Some(r) => {
                r.reload()?;
                r.clone()
            }
            None => {
                let r: IndexReader = self
                    .index
                    .reader_builder()
                    .reload_policy(ReloadPolicy::Manual)
                    .try_into()?;
                *guard = Some(r.clone());
                r
            }
        };
        drop(guard);
        NearDupSearcher::new(self, reader.searcher())
    }
}

fn no_record(expected_scheme: &str) -> Error {
    Error::IndexMismatch {
        what: "scheme",
        found: format!(
            "nothing (no {RECORD_FILE}, no commit payload from this crate: the index was not \
             built by NearDupIndex::create)"
        ),
        expected: expected_scheme.to_string(),
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave the protected data half-updated in a way
    // that matters more than losing the lock altogether: recover the guard.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn document_text(doc: &TantivyDocument, fields: &[Field]) -> String {
    let mut text = String::new();
    for &f in fields {
        for v in doc.get_all(f) {
            if let Some(s) = v.as_str() {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(s);
            }
        }
    }
    text
}

/// A near-duplicate found by a lookup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NearDup {
    /// The document's id (the id field's value).
    pub id: String,
    /// The Hamming distance to the query fingerprint.
    pub distance: u32,
    /// The document's fingerprint.
    pub fingerprint: Fingerprint,
    /// Where the document is in the searcher it was found with.
    pub address: DocAddress,
}

/// One segment's columns, opened once per searcher.
struct SegmentColumns {
    fingerprints: Column<u64>,
    ids: Option<StrColumn>,
    groups: Option<StrColumn>,
    sequences: Option<Column<u64>>,
    replaced: Option<StrColumn>,
    replaced_index: Option<Arc<tantivy::InvertedIndexReader>>,
    keys: Arc<tantivy::InvertedIndexReader>,
    ids_index: Arc<tantivy::InvertedIndexReader>,
}

/// A tantivy [`Searcher`] with each segment's fingerprint column and key postings opened, for
/// fast lookups. Make one per reload and reuse it.
pub struct NearDupSearcher {
    index: NearDupIndex,
    searcher: Searcher,
    segments: Vec<SegmentColumns>,
}

impl NearDupSearcher {
    /// Opens the columns of every segment of `searcher`. Cost: a few microseconds per segment.
    pub fn new(index: &NearDupIndex, searcher: Searcher) -> Result<Self> {
        let f = index.fields;
        let cfg = &index.config;
        let mut segments = Vec::with_capacity(searcher.segment_readers().len());
        for seg in searcher.segment_readers() {
            let ff = seg.fast_fields();
            segments.push(SegmentColumns {
                fingerprints: ff.u64(&cfg.fingerprint_field)?,
                ids: ff.str(&cfg.id_field)?,
                groups: match &cfg.group_field {
                    Some(g) => ff.str(g)?,
                    None => None,
                },
                sequences: match f.sequence {
                    Some(_) => Some(ff.u64(SEQUENCE_FIELD)?),
                    None => None,
                },
                replaced: match f.replaced {
                    Some(_) => ff.str(REPLACED_FIELD)?,
                    None => None,
                },
                replaced_index: match f.replaced {
                    Some(field) => Some(seg.inverted_index(field)?),
                    None => None,
                },
                keys: seg.inverted_index(f.keys)?,
                ids_index: seg.inverted_index(f.id)?,
            });
        }
        Ok(NearDupSearcher {
            index: index.clone(),
            searcher,
            segments,
        })
    }

    /// The tantivy searcher.
    pub fn searcher(&self) -> &Searcher {
        &self.searcher
    }

    /// The index.
    pub fn index(&self) -> &NearDupIndex {
        &self.index
    }

    /// Every live document within the layout's `k` of `fp` (inclusive), nearest first (ties by
    /// id). Cost: per segment, one term look-up and postings read per key, one column read per
    /// candidate; then one id read per match, which decompresses a block of the id column's
    /// dictionary (see [`lookup_addresses`](Self::lookup_addresses) to skip it). Measured in
    /// docs/PERFORMANCE.md.
    pub fn lookup(&self, fp: Fingerprint) -> Result<Vec<NearDup>> {
        self.lookup_within(fp, self.index.layout().max_distance())
    }

    /// Like [`lookup`](Self::lookup) with `max_distance` instead of the layout's `k`.
    ///
    /// Errors with [`Error::InvalidConfig`] when `max_distance` exceeds the layout's `k`: the
    /// keys could not guarantee to find every match.
    pub fn lookup_within(&self, fp: Fingerprint, max_distance: u32) -> Result<Vec<NearDup>> {
        let mut out = Vec::new();
        self.for_each_match(fp, max_distance, |ord, doc, distance, fingerprint| {
            out.push((ord, doc, distance, fingerprint));
        })?;
        let mut hits = Vec::with_capacity(out.len());
        for (ord, doc, distance, fingerprint) in out {
            hits.push(NearDup {
                id: self.id_of(ord, doc)?.unwrap_or_default(),
                distance,
                fingerprint,
                address: DocAddress::new(ord, doc),
            });
        }
        hits.sort_by(|a, b| a.distance.cmp(&b.distance).then_with(|| a.id.cmp(&b.id)));
        Ok(hits)
    }

    /// Like [`lookup_within`](Self::lookup_within) without reading ids: `(address, distance)`,
    /// nearest first (ties by address). Reading an id decompresses a block of the id column's
    /// dictionary (zstd, tens to hundreds of microseconds); this skips it, for callers that
    /// need only addresses, counts or a few ids ([`NearDupSearcher::id_of`]).
    pub fn lookup_addresses(
        &self,
        fp: Fingerprint,
        max_distance: u32,
    ) -> Result<Vec<(DocAddress, u32)>> {
        let mut out = Vec::new();
        self.for_each_match(fp, max_distance, |ord, doc, distance, _| {
            out.push((DocAddress::new(ord, doc), distance));
        })?;
        out.sort_unstable_by_key(|&(a, d)| (d, a));
        Ok(out)
    }

    /// Near-duplicates of `text`, fingerprinted with the index's scheme.
    pub fn lookup_text(&self, text: &str) -> Result<Vec<NearDup>> {
        self.lookup(self.index.scheme().fingerprint(text))
    }

    /// Near-duplicates of the live document with id `id` (itself included, at distance 0).
    /// Errors with [`Error::Document`] when no live document has that id.
    pub fn lookup_id(&self, id: &str) -> Result<Vec<NearDup>> {
        let fp = self.fingerprint_of_id(id)?.ok_or_else(|| {
            Error::Document(format!("no live document has id `{id}` in this searcher"))
        })?;
        self.lookup(fp)
    }

    /// The fingerprint of the first live document with id `id`, if any.
    pub fn fingerprint_of_id(&self, id: &str) -> Result<Option<Fingerprint>> {
        let term = Term::from_field_text(self.index.fields.id, id);
        for (ord, cols) in self.segments.iter().enumerate() {
            let seg = self.searcher.segment_reader(ord as u32);
            if let Some(mut postings) = cols
                .ids_index
                .read_postings(&term, IndexRecordOption::Basic)?
            {
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    if !seg.is_deleted(doc) {
                        if let Some(v) = cols.fingerprints.first(doc) {
                            return Ok(Some(Fingerprint(v)));
                        }
                    }
                    doc = postings.advance();
                }
            }
        }
        Ok(None)
    }

    /// A [`NearDupQuery`] for `fp` on this index.
    pub fn query(&self, fp: Fingerprint) -> NearDupQuery {
        NearDupQuery::new(&self.index, fp)
    }

    /// The id of a document, read from the id column.
    pub fn id_of(&self, segment_ord: u32, doc: DocId) -> Result<Option<String>> {
        let Some(cols) = self.segments.get(segment_ord as usize) else {
            return Ok(None);
        };
        read_str(cols.ids.as_ref(), doc)
    }

    /// Where a document was in the order its writer added documents ([`SEQUENCE_FIELD`]), or
    /// `None` when the index has no sequence field.
    pub fn sequence_of(&self, segment_ord: u32, doc: DocId) -> Option<u64> {
        self.segments
            .get(segment_ord as usize)?
            .sequences
            .as_ref()?
            .first(doc)
    }

    /// Whether a live document records that it replaced `id` under [`Policy::Replace`]
    /// (directly, or through a document it replaced): an input with this id was already
    /// handled, and adding it again would bring back a copy a newer document replaced. Always
    /// `false` on indexes without [`REPLACED_FIELD`]. Cost: one term lookup per segment.
    pub fn is_replaced(&self, id: &str) -> Result<bool> {
        let Some(field) = self.index.fields.replaced else {
            return Ok(false);
        };
        let term = Term::from_field_text(field, id);
        for (ord, cols) in self.segments.iter().enumerate() {
            let Some(index) = &cols.replaced_index else {
                continue;
            };
            let seg = self.searcher.segment_reader(ord as u32);
            if let Some(mut postings) = index.read_postings(&term, IndexRecordOption::Basic)? {
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    if !seg.is_deleted(doc) {
                        return Ok(true);
                    }
                    doc = postings.advance();
                }
            }
        }
        Ok(false)
    }

    /// The ids a document records as replaced ([`REPLACED_FIELD`]).
    pub(crate) fn replaced_ids_of(&self, segment_ord: u32, doc: DocId) -> Result<Vec<String>> {
        let Some(col) = self
            .segments
            .get(segment_ord as usize)
            .and_then(|c| c.replaced.as_ref())
        else {
            return Ok(Vec::new());
        };
        let mut ids = Vec::new();
        for ord in col.ords().values_for_doc(doc) {
            let mut s = String::new();
            if col.ord_to_str(ord, &mut s)? {
                ids.push(s);
            }
        }
        Ok(ids)
    }

    /// The largest sequence number of the searcher's documents, deleted ones included.
    fn max_sequence(&self) -> Option<u64> {
        self.segments
            .iter()
            .filter_map(|c| c.sequences.as_ref())
            .filter(|c| c.num_docs() > 0)
            .map(|c| c.max_value())
            .max()
    }

    /// The group of a document (under [`Policy::Tag`]), read from the group column.
    pub fn group_of(&self, segment_ord: u32, doc: DocId) -> Result<Option<String>> {
        let Some(cols) = self.segments.get(segment_ord as usize) else {
            return Ok(None);
        };
        read_str(cols.groups.as_ref(), doc)
    }

    /// Calls `f(segment_ord, doc, distance, fingerprint)` once for every live document within
    /// `max_distance` of `fp`, segment by segment, in no particular order within a segment.
    pub fn for_each_match(
        &self,
        fp: Fingerprint,
        max_distance: u32,
        mut f: impl FnMut(u32, DocId, u32, Fingerprint),
    ) -> Result<()> {
        let layout = self.index.layout();
        if max_distance > layout.max_distance() {
            return Err(Error::InvalidConfig(format!(
                "distance {max_distance} is beyond what the index layout guarantees ({}); \
                 rebuild the index with BlockLayout::for_distance({max_distance})",
                layout.max_distance()
            )));
        }
        let keys_field = self.index.fields.keys;
        let terms: Vec<Term> = layout
            .keys(fp)
            .into_iter()
            .map(|key| Term::from_field_u64(keys_field, key))
            .collect();
        for (ord, cols) in self.segments.iter().enumerate() {
            let seg = self.searcher.segment_reader(ord as u32);
            for (combo, term) in terms.iter().enumerate() {
                let Some(mut postings) = cols.keys.read_postings(term, IndexRecordOption::Basic)?
                else {
                    continue;
                };
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    if let Some(v) = cols.fingerprints.first(doc) {
                        let other = Fingerprint(v);
                        let d = fp.distance(other);
                        // A document sharing several keys is reported under the first only.
                        if d <= max_distance
                            && layout.first_shared_key(fp, other) == Some(combo)
                            && !seg.is_deleted(doc)
                        {
                            f(ord as u32, doc, d, other);
                        }
                    }
                    doc = postings.advance();
                }
            }
        }
        Ok(())
    }
}

fn read_str(col: Option<&StrColumn>, doc: DocId) -> Result<Option<String>> {
    let Some(col) = col else { return Ok(None) };
    let Some(ord) = col.ords().first(doc) else {
        return Ok(None);
    };
    let mut s = String::new();
    if col.ord_to_str(ord, &mut s)? {
        Ok(Some(s))
    } else {
        Ok(None)
    }
}

/// What [`DedupWriter`] does with a document that has a near-duplicate (within the layout's
/// `k`, inclusive) among the committed documents or its own uncommitted ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Policy {
    /// Only store fingerprints and keys; no lookup. The fastest.
    Off,
    /// Skip the document: it is not added.
    #[default]
    Reject,
    /// Add it, and store in the group field the group of its nearest near-duplicate (of
    /// equally near ones, the one added first; a document without near-duplicates starts a
    /// group named by its own id). Adding the same documents in the same order gives the same
    /// groups, whatever the number of indexing threads and however they split the segments.
    Tag,
    /// Add it and delete every near-duplicate (by id): the newer document replaces the older.
    /// It records the ids it replaced (with those its victims had replaced) in
    /// [`REPLACED_FIELD`], so a rerun over the same input can skip them
    /// ([`NearDupSearcher::is_replaced`]) instead of bringing the old copies back.
    Replace,
}

/// What happened to a document given to [`DedupWriter`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Added; no near-duplicate (or [`Policy::Off`]).
    Added {
        /// Its fingerprint.
        fingerprint: Fingerprint,
    },
    /// Not added ([`Policy::Reject`]): `of` is its nearest near-duplicate.
    Duplicate {
        /// The id of the nearest near-duplicate.
        of: String,
        /// The distance to it.
        distance: u32,
        /// The rejected document's fingerprint.
        fingerprint: Fingerprint,
    },
    /// Added in an existing group ([`Policy::Tag`]).
    Tagged {
        /// The group: the id of the first document of the group.
        group: String,
        /// The id of the nearest near-duplicate.
        of: String,
        /// The distance to it.
        distance: u32,
        /// The document's fingerprint.
        fingerprint: Fingerprint,
    },
    /// Added, and its near-duplicates deleted ([`Policy::Replace`]).
    Replaced {
        /// The ids of the deleted documents, nearest first.
        replaced: Vec<String>,
        /// The distance to the nearest.
        distance: u32,
        /// The document's fingerprint.
        fingerprint: Fingerprint,
    },
}

impl Outcome {
    /// The document's fingerprint.
    pub fn fingerprint(&self) -> Fingerprint {
        match self {
            Outcome::Added { fingerprint }
            | Outcome::Duplicate { fingerprint, .. }
            | Outcome::Tagged { fingerprint, .. }
            | Outcome::Replaced { fingerprint, .. } => *fingerprint,
        }
    }

    /// Whether the document was added to the index.
    pub fn is_added(&self) -> bool {
        !matches!(self, Outcome::Duplicate { .. })
    }
}

/// An uncommitted document, as the writer remembers it.
struct PendingDoc {
    fingerprint: Fingerprint,
    id: String,
    group: Option<String>,
    /// The ids it replaced, directly or through the documents it replaced.
    replaced: Vec<String>,
    alive: bool,
}

/// What the writer knows that the last commit does not.
struct Pending {
    searcher: NearDupSearcher,
    docs: Vec<PendingDoc>,
    by_key: HashMap<u64, Vec<u32>>,
    /// Ids deleted since the last commit: committed documents with these ids are ignored.
    deleted: HashSet<String>,
    keys: Vec<u64>,
    /// The sequence number of the next document added ([`SEQUENCE_FIELD`]); it survives
    /// commits, so it grows over the writer's life.
    next_sequence: u64,
}

/// A match among committed or pending documents.
struct Found {
    id: String,
    group: Option<String>,
    distance: u32,
    /// What it replaced (read only for [`Policy::Replace`]).
    replaced: Vec<String>,
}

impl Pending {
    fn clear(&mut self) {
        self.docs.clear();
        self.by_key.clear();
        self.deleted.clear();
    }

    /// Live matches within `k`, committed and pending, nearest first; among equally near ones
    /// the first added first (committed documents by their sequence number, then pending ones
    /// in the order they were added), so the result does not depend on how tantivy's threads
    /// split documents into segments. With `all == false` only the nearest is guaranteed:
    /// reading a committed id decompresses a dictionary block, so ids of farther committed
    /// matches are not read. Groups are read only when `groups` is set; what each match
    /// replaced only when `all` is.
    fn matches(
        &mut self,
        layout: &BlockLayout,
        fp: Fingerprint,
        k: u32,
        all: bool,
        groups: bool,
    ) -> Result<Vec<Found>> {
        let mut pending = Vec::new();
        self.keys.clear();
        layout.keys_into(fp, &mut self.keys);
        for (combo, key) in self.keys.iter().enumerate() {
            let Some(list) = self.by_key.get(key) else {
                continue;
            };
            for &i in list {
                let p = &self.docs[i as usize];
                let d = fp.distance(p.fingerprint);
                if p.alive && d <= k && layout.first_shared_key(fp, p.fingerprint) == Some(combo) {
                    pending.push((d, i));
                }
            }
        }
        pending.sort_unstable();
        let best_pending = pending.first().map(|&(d, _)| d);

        let mut committed = Vec::new();
        let searcher = &self.searcher;
        searcher.for_each_match(fp, k, |ord, doc, d, _| {
            // Without a sequence field (an older index), ties follow segment order.
            let sequence = searcher.sequence_of(ord, doc).unwrap_or(u64::MAX);
            committed.push((d, sequence, ord, doc));
        })?;
        committed.sort_unstable();
        let mut found = Vec::new();
        for (distance, _, ord, doc) in committed {
            if !all && (!found.is_empty() || best_pending.is_some_and(|b| distance > b)) {
                break;
            }
            let Some(id) = self.searcher.id_of(ord, doc)? else {
                continue;
            };
            if self.deleted.contains(&id) {
                continue;
            }
            let group = if groups {
                self.searcher.group_of(ord, doc)?
            } else {
                None
            };
            let replaced = if all {
                self.searcher.replaced_ids_of(ord, doc)?
            } else {
                Vec::new()
            };
            found.push(Found {
                id,
                group,
                distance,
                replaced,
            });
        }
        found.extend(pending.into_iter().map(|(distance, i)| {
            let p = &self.docs[i as usize];
            Found {
                id: p.id.clone(),
                group: p.group.clone(),
                distance,
                replaced: if all { p.replaced.clone() } else { Vec::new() },
            }
        }));
        // Stable: committed documents (added earlier) stay before pending ones at one distance.
        found.sort_by_key(|f| f.distance);
        Ok(found)
    }

    fn insert(&mut self, layout: &BlockLayout, doc: PendingDoc) {
        let i = self.docs.len() as u32;
        self.keys.clear();
        layout.keys_into(doc.fingerprint, &mut self.keys);
        for &key in &self.keys {
            self.by_key.entry(key).or_default().push(i);
        }
        self.docs.push(doc);
    }

    fn delete_id(&mut self, id: &str) {
        self.deleted.insert(id.to_string());
        for p in &mut self.docs {
            if p.id == id {
                p.alive = false;
            }
        }
    }
}

/// Wraps tantivy's [`IndexWriter`]: fingerprints each document, adds its fingerprint and keys,
/// and applies a [`Policy`] to near-duplicates, with tantivy's method names.
///
/// It sees the committed index (as of its last commit) and its own uncommitted documents (a
/// pending table), so a near-duplicate of a document added a moment ago is caught before any
/// commit. The check and the insertion are one atomic step under a lock: with several threads
/// adding at once under [`Policy::Reject`], no two stored documents are within `k`. The
/// fingerprinting itself (the expensive part) runs outside the lock.
///
/// Documents deleted through [`DedupWriter::delete_term`] on the id field stop matching at
/// once; deletes on other fields (or through the inner writer) are seen after the next commit.
/// Dropping the writer without committing loses the uncommitted documents (tantivy's contract);
/// the committed index stays readable and correct.
pub struct DedupWriter {
    index: NearDupIndex,
    writer: IndexWriter,
    policy: Policy,
    max_distance: u32,
    reader: IndexReader,
    pending: Mutex<Pending>,
    fingerprinters: Mutex<Vec<Fingerprinter>>,
    payload: String,
}

impl DedupWriter {
    /// Wraps an existing tantivy writer of `index`.
    pub fn wrap(index: NearDupIndex, writer: IndexWriter, policy: Policy) -> Result<Self> {
        if policy == Policy::Tag && index.fields.group.is_none() {
            return Err(Error::Schema {
                field: "group".into(),
                problem: "Policy::Tag stores each document's group in the group field, but the \
                          configuration has none; keep NearDupConfig's group field"
                    .into(),
            });
        }
        let reader: IndexReader = index
            .index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let searcher = NearDupSearcher::new(&index, reader.searcher())?;
        let next_sequence = searcher.max_sequence().map_or(0, |m| m.saturating_add(1));
        let payload = index.config.record().to_json()?;
        Ok(DedupWriter {
            max_distance: index.layout().max_distance(),
            index,
            writer,
            policy,
            reader,
            pending: Mutex::new(Pending {
                searcher,
                docs: Vec::new(),
                by_key: HashMap::new(),
                deleted: HashSet::new(),
                keys: Vec::new(),
                next_sequence,
            }),
            fingerprinters: Mutex::new(Vec::new()),
            payload,
        })
    }

    /// The policy.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Changes the policy for the documents added from now on.
    pub fn set_policy(&mut self, policy: Policy) -> Result<()> {
        if policy == Policy::Tag && self.index.fields.group.is_none() {
            return Err(Error::Schema {
                field: "group".into(),
                problem: "Policy::Tag needs the group field; keep NearDupConfig's group field"
                    .into(),
            });
        }
        self.policy = policy;
        Ok(())
    }

    /// The distance up to which documents count as near-duplicates (inclusive); defaults to the
    /// layout's `k`.
    pub fn max_distance(&self) -> u32 {
        self.max_distance
    }

    /// Sets the distance up to which documents count as near-duplicates (inclusive). Errors if
    /// it exceeds the layout's `k`.
    pub fn set_max_distance(&mut self, max_distance: u32) -> Result<()> {
        let k = self.index.layout().max_distance();
        if max_distance > k {
            return Err(Error::InvalidConfig(format!(
                "distance {max_distance} is beyond what the index layout guarantees ({k})"
            )));
        }
        self.max_distance = max_distance;
        Ok(())
    }

    /// The near-duplicate index.
    pub fn index(&self) -> &NearDupIndex {
        &self.index
    }

    /// The inner tantivy writer. Documents added through it directly get no fingerprint and are
    /// not checked; a commit through it records no payload (the record file remains).
    pub fn index_writer(&self) -> &IndexWriter {
        &self.writer
    }

    /// The inner tantivy writer, mutably (for example to set a merge policy).
    pub fn index_writer_mut(&mut self) -> &mut IndexWriter {
        &mut self.writer
    }

    /// Fingerprints `doc` from the configured text fields, then adds it under the policy.
    ///
    /// Errors: [`Error::Document`] when the document has no id or already carries fingerprint
    /// or key values; tantivy errors from the lookup or the writer.
    ///
    /// The text is analysed twice: here for the fingerprint, and by tantivy for the text fields
    /// (docs/PERFORMANCE.md measures the cost, and why tantivy's pre-tokenized text does not
    /// avoid it).
    pub fn add_document(&self, doc: TantivyDocument) -> Result<Outcome> {
        let fp = self.fingerprint(&doc);
        self.add_document_with_fingerprint(doc, fp)
    }

    /// Adds `doc` with a fingerprint computed elsewhere (for example by a batch job with the
    /// same scheme). See [`add_document`](Self::add_document).
    pub fn add_document_with_fingerprint(
        &self,
        mut doc: TantivyDocument,
        fp: Fingerprint,
    ) -> Result<Outcome> {
        let id = self.prepare(&doc)?;
        let layout = self.index.layout();
        let fields = self.index.fields;
        self.index.add_fingerprint_to(&mut doc, fp);
        let mut pending = lock(&self.pending);
        // Numbered under the lock, so the numbers follow the order of the checks below.
        if let Some(field) = fields.sequence {
            doc.add_u64(field, pending.next_sequence);
        }
        pending.next_sequence += 1;
        if self.policy == Policy::Off {
            drop(pending);
            self.writer.add_document(doc)?;
            return Ok(Outcome::Added { fingerprint: fp });
        }
        let found = pending.matches(
            layout,
            fp,
            self.max_distance,
            self.policy == Policy::Replace,
            self.policy == Policy::Tag,
        )?;
        let outcome = match (self.policy, found.first()) {
            (_, None) => {
                let group = (self.policy == Policy::Tag).then(|| id.clone());
                if let (Some(g), Some(field)) = (&group, fields.group) {
                    doc.add_text(field, g);
                }
                Outcome::Added { fingerprint: fp }.with_pending(
                    &mut pending,
                    layout,
                    fp,
                    id,
                    group,
                    Vec::new(),
                )
            }
            (Policy::Reject, Some(best)) => {
                return Ok(Outcome::Duplicate {
                    of: best.id.clone(),
                    distance: best.distance,
                    fingerprint: fp,
                });
            }
            (Policy::Tag, Some(best)) => {
                let group = best.group.clone().unwrap_or_else(|| best.id.clone());
                if let Some(field) = fields.group {
                    doc.add_text(field, &group);
                }
                let outcome = Outcome::Tagged {
                    group: group.clone(),
                    of: best.id.clone(),
                    distance: best.distance,
                    fingerprint: fp,
                };
                outcome.with_pending(&mut pending, layout, fp, id, Some(group), Vec::new())
            }
            (_, Some(best)) => {
                // Replace: delete first, so the delete cannot touch the new document even if
                // it has the same id (a delete applies to documents added before it).
                let distance = best.distance;
                let mut replaced: Vec<String> = Vec::with_capacity(found.len());
                for f in &found {
                    if !replaced.contains(&f.id) {
                        replaced.push(f.id.clone());
                    }
                }
                for old in &replaced {
                    self.writer
                        .delete_term(Term::from_field_text(fields.id, old));
                    pending.delete_id(old);
                }
                // What the deleted documents had replaced is now this document's to remember,
                // so a rerun skips every id of the chain, not only the last one.
                let mut carried = replaced.clone();
                for f in &found {
                    for r in &f.replaced {
                        if !carried.contains(r) {
                            carried.push(r.clone());
                        }
                    }
                }
                carried.retain(|r| *r != id);
                if let Some(field) = fields.replaced {
                    for r in &carried {
                        doc.add_text(field, r);
                    }
                }
                Outcome::Replaced {
                    replaced,
                    distance,
                    fingerprint: fp,
                }
                .with_pending(&mut pending, layout, fp, id, None, carried)
            }
        };
        self.writer.add_document(doc)?;
        drop(pending);
        Ok(outcome)
    }

    /// Adds many documents: fingerprints them in parallel (rayon, one fingerprinter per worker),
    /// then adds them in the given order under the policy (so within a batch the earlier
    /// document wins). Stops at the first error; documents before it are added.
    pub fn add_documents(&self, docs: Vec<TantivyDocument>) -> Result<Vec<Outcome>> {
        let scheme = self.index.scheme();
        let text_fields = &self.index.text_fields;
        let fps: Vec<Fingerprint> = docs
            .par_iter()
            .map_init(
                || scheme.fingerprinter(),
                |fpr, doc| fpr.fingerprint(&document_text(doc, text_fields)),
            )
            .collect();
        docs.into_iter()
            .zip(fps)
            .map(|(doc, fp)| self.add_document_with_fingerprint(doc, fp))
            .collect()
    }

    /// Deletes the documents matching `term`, like [`IndexWriter::delete_term`]. On the id field
    /// the deletion is seen by the near-duplicate check at once; on other fields, after the
    /// next commit.
    pub fn delete_term(&self, term: Term) -> Opstamp {
        let mut pending = lock(&self.pending);
        if term.field() == self.index.fields.id {
            if let Some(id) = term.value().as_str() {
                pending.delete_id(id);
            }
        }
        let op = self.writer.delete_term(term);
        drop(pending);
        op
    }

    /// Commits, recording the scheme and layout in the commit payload, and makes the committed
    /// documents visible to the near-duplicate check (the pending table is emptied).
    pub fn commit(&mut self) -> Result<Opstamp> {
        let mut prepared = self.writer.prepare_commit()?;
        prepared.set_payload(&self.payload);
        let opstamp = prepared.commit()?;
        self.reader.reload()?;
        let searcher = NearDupSearcher::new(&self.index, self.reader.searcher())?;
        let pending = self
            .pending
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        pending.searcher = searcher;
        pending.clear();
        Ok(opstamp)
    }

    /// Drops every change since the last commit, like [`IndexWriter::rollback`].
    pub fn rollback(&mut self) -> Result<Opstamp> {
        let opstamp = self.writer.rollback()?;
        let pending = self
            .pending
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        pending.clear();
        Ok(opstamp)
    }

    /// Waits for merges to finish and drops the writer, like
    /// [`IndexWriter::wait_merging_threads`]. Uncommitted documents are lost: commit first.
    pub fn wait_merging_threads(self) -> Result<()> {
        self.writer.wait_merging_threads()?;
        Ok(())
    }

    /// Uncommitted documents the writer remembers (added, not yet committed).
    pub fn num_pending(&self) -> usize {
        lock(&self.pending).docs.len()
    }

    /// The fingerprint of `doc` from the configured text fields, with a pooled fingerprinter.
    pub fn fingerprint(&self, doc: &TantivyDocument) -> Fingerprint {
        let text = document_text(doc, &self.index.text_fields);
        let pooled = lock(&self.fingerprinters).pop();
        let mut fpr = pooled.unwrap_or_else(|| self.index.scheme().fingerprinter());
        let fp = fpr.fingerprint(&text);
        lock(&self.fingerprinters).push(fpr);
        fp
    }

    /// Checks that `doc` can be added; returns its id.
    fn prepare(&self, doc: &TantivyDocument) -> Result<String> {
        let fields = self.index.fields;
        let id = doc
            .get_first(fields.id)
            .and_then(|v| v.as_str())
            .ok_or_else(|| {
                Error::Document(format!(
                    "the document has no value in the id field `{}`; every document needs one",
                    self.index.config.id_field
                ))
            })?
            .to_string();
        let reserved = [
            Some(fields.fingerprint),
            Some(fields.keys),
            fields.group,
            fields.sequence,
            fields.replaced,
        ];
        for f in reserved.into_iter().flatten() {
            if doc.get_first(f).is_some() {
                return Err(Error::Document(format!(
                    "document `{id}` already has a value in `{}`, a field the writer fills; \
                     remove it",
                    self.index.index.schema().get_field_name(f)
                )));
            }
        }
        Ok(id)
    }
}

impl Outcome {
    fn with_pending(
        self,
        pending: &mut Pending,
        layout: &BlockLayout,
        fp: Fingerprint,
        id: String,
        group: Option<String>,
        replaced: Vec<String>,
    ) -> Self {
        pending.insert(
            layout,
            PendingDoc {
                fingerprint: fp,
                id,
                group,
                replaced,
                alive: true,
            },
        );
        self
    }
}

/// The segment reader's view used by [`crate::query`]: the fingerprint column of a segment.
pub(crate) fn fingerprint_column(seg: &SegmentReader, field: &str) -> tantivy::Result<Column<u64>> {
    seg.fast_fields().u64(field)
}
