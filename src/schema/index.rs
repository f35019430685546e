//! [`NearDupIndex`]: a tantivy index with a checked record, its segment component and the
//! scheme's tokenizer.

use super::fields::{
    is_raw_fast_text, replay_fields, required_field, resolve_crate_fields,
    resolve_signature_fields, resolve_text_fields,
};
use super::record::{no_record, RECORD_FILE};
use super::{IndexRecord, NearDupConfig, NearDupFields};
use crate::component::reader::ResolvedSignatureFields;
use crate::component::COMPONENT_EXTENSION;
use crate::error::{Error, Result};
use crate::fingerprint::{Fingerprint, Scheme, SIMHASH_TOKENIZER_NAME};
use crate::layout::BlockLayout;
use crate::replay::{document_text, AnalysisCounts, ReplayCounters};
use crate::signature::{MatchRule, Signature};
use std::path::Path;
use std::sync::{Arc, Mutex};
use tantivy::schema::{Field, FieldType};
use tantivy::{Directory, Index, TantivyDocument};

/// A tantivy [`Index`] with a checked record of the scheme and layout that built it.
///
/// Cheap to clone (the index and scheme are shared).
#[derive(Clone)]
pub struct NearDupIndex {
    pub(crate) index: Index,
    pub(crate) config: Arc<NearDupConfig>,
    pub(crate) fields: NearDupFields,
    pub(crate) text_fields: Arc<Vec<Field>>,
    /// The text fields whose tokens the writer hands to tantivy ([`crate::replay`]).
    pub(crate) replay_fields: Arc<Vec<Field>>,
    /// The counters of the replaying tokenizer, when this handle registered it.
    pub(crate) analysis_counters: Option<Arc<ReplayCounters>>,
    /// Where signatures are stored.
    pub(crate) signature_fields: Arc<ResolvedSignatureFields>,
    /// The reader [`NearDupIndex::searcher`] reloads (opened on first use).
    pub(crate) reader: Arc<Mutex<Option<crate::component::NearDupReader>>>,
    /// Keeps the component files of the segments of live searchers of this handle's readers
    /// (tantivy readers hold warmers weakly).
    pub(crate) warmer: Arc<crate::component::ComponentWarmer>,
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
        // An index with documents and no record was not built by this crate: say so before
        // anything about components.
        if IndexRecord::read(&index)?.is_none() && !index.searchable_segment_metas()?.is_empty() {
            return Err(no_record(&config.record().scheme));
        }
        adopt_component(&index)?;
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

    /// Creates an index in memory with the schema of [`NearDupConfig::schema`] (the id, the text
    /// fields stored, and the near-duplicate fields): the one call a test, an example or a
    /// short-lived job needs. [`field`](Self::field) gives the fields to build documents with.
    ///
    /// Errors: those of [`NearDupConfig::schema`] and [`NearDupIndex::create`].
    ///
    /// ```
    /// use tantivy::doc;
    /// use tantivy_simhash::{NearDupConfig, NearDupIndex, Outcome, Policy};
    ///
    /// let index = NearDupIndex::create_in_ram(NearDupConfig::new("id", ["body"]))?;
    /// let (id, body) = (index.field("id")?, index.field("body")?);
    /// let mut writer = index.writer(15_000_000, Policy::Reject)?;
    /// writer.add_document(doc!(id => "a", body => "Permission is hereby granted, free of charge."))?;
    /// let again = writer.add_document(doc!(id => "b", body => "PERMISSION is hereby granted, free of charge!"))?;
    /// assert!(matches!(again, Outcome::Duplicate { ref of, .. } if of == "a"));
    /// # Ok::<(), tantivy_simhash::Error>(())
    /// ```
    pub fn create_in_ram(config: NearDupConfig) -> Result<Self> {
        let schema = config.schema()?;
        NearDupIndex::create(Index::create_in_ram(schema), config)
    }

    /// Creates an index in the directory `dir` (made when missing) with the schema of
    /// [`NearDupConfig::schema`]; reopen it with [`NearDupIndex::open_in_dir`].
    ///
    /// Errors: [`Error::InvalidConfig`] when `dir` already holds an index (open it instead, or
    /// pick an empty directory); [`Error::Io`] when the directory cannot be made; those of
    /// [`NearDupConfig::schema`] and [`NearDupIndex::create`].
    ///
    /// ```
    /// use tantivy_simhash::{NearDupConfig, NearDupIndex, Policy};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("pages");
    /// let index = NearDupIndex::create_in_dir(&path, NearDupConfig::new("id", ["body"]))?;
    /// index.writer(15_000_000, Policy::Tag)?.commit()?;
    /// // Later, with nothing but the directory: the index records its configuration.
    /// let again = NearDupIndex::open_in_dir(&path)?;
    /// assert_eq!(again.config().text_fields(), ["body"]);
    /// assert!(NearDupIndex::create_in_dir(&path, NearDupConfig::new("id", ["body"])).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_in_dir(dir: impl AsRef<Path>, config: NearDupConfig) -> Result<Self> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir)?;
        let schema = config.schema()?;
        let index = match Index::create_in_dir(dir, schema) {
            Err(tantivy::TantivyError::IndexAlreadyExists) => {
                return Err(Error::InvalidConfig(format!(
                    "{} already holds an index; open it with NearDupIndex::open_in_dir, or \
                     create the new one in an empty directory",
                    dir.display()
                )))
            }
            other => other?,
        };
        NearDupIndex::create(index, config)
    }

    /// Opens the index in the directory `dir` with the configuration it records
    /// ([`NearDupIndex::open_recorded`] of tantivy's `Index::open_in_dir`).
    ///
    /// Errors: [`Error::Tantivy`] when `dir` holds no tantivy index; those of
    /// [`NearDupIndex::open_recorded`].
    pub fn open_in_dir(dir: impl AsRef<Path>) -> Result<Self> {
        NearDupIndex::open_recorded(Index::open_in_dir(dir)?)
    }

    /// The field named `name` in the index's schema, to build documents with (tantivy's `doc!`).
    ///
    /// Errors: [`Error::Schema`] when the schema has no such field, with the names it has.
    /// Cost: a hash lookup.
    pub fn field(&self, name: &str) -> Result<Field> {
        let schema = self.index.schema();
        schema.get_field(name).map_err(|_| Error::Schema {
            field: name.to_string(),
            problem: format!(
                "not in the index's schema; its fields are: {}",
                schema
                    .fields()
                    .map(|(_, entry)| entry.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
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
    /// let wider = config.with_layout(BlockLayout::for_distance(6)?);
    /// let err = NearDupIndex::open(tantivy_index, wider).unwrap_err();
    /// assert!(matches!(err, Error::IndexMismatch { what: "layout", .. }));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn open(index: Index, config: NearDupConfig) -> Result<Self> {
        // Parameters first: an index of another rule (say, 128 sketch bins) has other sketch
        // fields, and "the rule differs" says what to do where "a field is missing" does not.
        let found = IndexRecord::read(&index)?;
        match &found {
            Some(found) => found.check(&config.record())?,
            None => return Err(no_record(&config.record().scheme)),
        }
        let this = NearDupIndex::resolve(index, config)?;
        let wanted = this.config.record();
        match found {
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
    /// Errors: [`Error::Io`] when writing the file fails; the errors of [`IndexRecord::read`].
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

    /// Finds and checks every field `config` names in the index's schema, registers the
    /// scheme's tokenizer when the index has none under its name, and interns the rule.
    fn resolve(index: Index, config: NearDupConfig) -> Result<Self> {
        let mut index = index;
        require_component(&index)?;
        let registered = index
            .custom_plugins()
            .iter()
            .any(|p| p.extensions().contains(&COMPONENT_EXTENSION));
        if !registered {
            index.register_plugin(config.segment_component()?);
        }
        let schema = index.schema();
        let id = required_field(
            &schema,
            &config.id_field,
            is_raw_fast_text,
            "the id field must be a text field indexed with the `raw` tokenizer and \
             fast: declare it as STRING | FAST (and STORED if you want it back)",
        )?;
        if index.settings().sort_by_field.is_some() {
            return Err(Error::InvalidConfig(
                "the index is sorted by a field (IndexSettings::sort_by_field), which shuffles \
                 doc ids; the near-duplicate segment component keeps doc id order: create the \
                 index without sorting"
                    .into(),
            ));
        }
        let fingerprint = required_field(
            &schema,
            &config.fingerprint_field,
            |t| matches!(t, FieldType::U64(_)),
            "the fingerprint field must be a u64 field; use NearDupConfig::add_fields",
        )?;
        let group = config
            .group_field
            .as_deref()
            .map(|name| {
                required_field(
                    &schema,
                    name,
                    |t| matches!(t, FieldType::Str(o) if o.is_fast()),
                    "the group field must be a fast text field; use NearDupConfig::add_fields",
                )
            })
            .transpose()?;
        let (sequence, replaced) = resolve_crate_fields(&schema)?;
        let text_fields = resolve_text_fields(&schema, &config)?;
        // Text fields that name the tokenizer must be analysed by this very scheme, or search
        // and fingerprints would disagree on what a word is; a tokenizer the user registered
        // under that name is theirs and stays.
        let analysis_counters = register_scheme_tokenizer(&index, &config.scheme);
        let replay_fields = replay_fields(&schema, &config.scheme, &text_fields);
        let rule = config.rule()?;
        let (signature_fields, first_sketch) =
            resolve_signature_fields(&schema, &config, fingerprint)?;
        Ok(NearDupIndex {
            index,
            fields: NearDupFields {
                id,
                fingerprint,
                group,
                sequence,
                replaced,
                first_sketch,
                sketch_words: signature_fields.sketch_fields().len() as u32,
                rule,
            },
            signature_fields: Arc::new(signature_fields),
            config: Arc::new(config),
            text_fields: Arc::new(text_fields),
            replay_fields: Arc::new(replay_fields),
            analysis_counters,
            reader: Arc::new(Mutex::new(None)),
            warmer: Arc::new(crate::component::ComponentWarmer::new(rule)),
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

    /// The signature of `text` under the index's scheme and rule (fingerprint and sketch, one
    /// analysis), to look up with
    /// [`NearDupLookup::lookup_signature`](crate::NearDupLookup::lookup_signature). Cost:
    /// making a [`Signer`](crate::Signer) (keep one with [`MatchRule::signer`] for many texts)
    /// and one analysis.
    pub fn sign(&self, text: &str) -> Signature {
        self.fields.rule.signer(&self.config.scheme).sign(text)
    }

    /// How many text values tantivy indexed from the tokens [`DedupWriter`](crate::DedupWriter) made when signing
    /// (one analysis per document) and how many it analysed itself, since this handle was made.
    /// `None` when the scheme's analyzer was registered before this handle (by another handle
    /// on the same tantivy `Index`, or by the caller): that handle counts. Cost: two atomic
    /// loads.
    ///
    /// Values are replayed only for fingerprinted text fields indexed with
    /// [`SIMHASH_TOKENIZER_NAME`] under a built-in tokenisation; fields indexed with another
    /// analyzer are analysed by tantivy as usual (and by the writer, for the signature).
    pub fn analysis_counts(&self) -> Option<AnalysisCounts> {
        self.analysis_counters.as_ref().map(|c| c.get())
    }

    /// The fingerprinted text fields whose tokens the writer hands to tantivy.
    pub fn replayed_fields(&self) -> &[Field] {
        &self.replay_fields
    }

    /// The fingerprint of a document: the values of the configured text fields joined by line
    /// breaks, through the scheme. Cost: one analysis of the text.
    pub fn fingerprint_document(&self, doc: &TantivyDocument) -> Fingerprint {
        let text = document_text(doc, &self.text_fields);
        self.config.scheme.fingerprint(&text)
    }

    /// The match rule.
    pub fn rule(&self) -> &MatchRule {
        &self.fields.rule
    }

    /// Where signatures are stored.
    pub(crate) fn signature_fields(&self) -> &ResolvedSignatureFields {
        &self.signature_fields
    }

    /// Adds `signature` (fingerprint, sketch words, and the rule's keys when the index has key
    /// postings) to `doc`. Cost: one value per field (33 by default), plus the rule's keys
    /// (16 by default) with key postings; cannot fail.
    pub fn add_signature_to(&self, doc: &mut TantivyDocument, signature: &Signature) {
        self.signature_fields
            .add_to_document(&self.fields.rule, signature, doc);
    }

    /// Adds the fingerprint (and its block keys, when the index has key postings) to `doc`,
    /// without a sketch: such a document
    /// matches others only through the rule's simhash branch (its sketch reads as empty).
    /// Cost: one value, plus the layout's keys with key postings; cannot fail.
    pub fn add_fingerprint_to(&self, doc: &mut TantivyDocument, fp: Fingerprint) {
        doc.add_u64(self.fields.fingerprint, fp.0);
    }
}

/// Registers `scheme`'s tokenizer under [`SIMHASH_TOKENIZER_NAME`] when the index has none
/// under that name (a tokenizer the user registered there is theirs and stays), and returns
/// the counters of the analyses it replays; `None` when the user's tokenizer stays.
pub(super) fn register_scheme_tokenizer(
    index: &Index,
    scheme: &Scheme,
) -> Option<Arc<ReplayCounters>> {
    if index.tokenizers().get(SIMHASH_TOKENIZER_NAME).is_none() {
        Some(crate::replay::register(index, scheme))
    } else {
        None
    }
}

/// tantivy's index metadata file, whose list of custom segment components is fixed when an
/// index is created.
pub(super) const META_FILE: &str = "meta.json";

/// Adds the segment component to the component list of `index` when the index was created
/// without it and holds no document yet (its list is fixed at creation, and only an empty
/// index can take one), so that `NearDupIndex::create(Index::create_in_dir(..)?, config)`
/// works. Errors with [`Error::InvalidConfig`] for an index that has documents but no
/// component.
pub(super) fn adopt_component(index: &Index) -> Result<()> {
    let metas = index.load_metas()?;
    if metas
        .persisted_custom_extensions
        .iter()
        .any(|e| e == COMPONENT_EXTENSION)
    {
        return Ok(());
    }
    if !metas.segments.is_empty() {
        return Err(missing_component());
    }
    let path = Path::new(META_FILE);
    let bytes = index
        .directory()
        .atomic_read(path)
        .map_err(|e| Error::Tantivy(e.into()))?;
    let mut meta: serde_json::Value = serde_json::from_slice(&bytes)?;
    let Some(object) = meta.as_object_mut() else {
        return Err(Error::InvalidConfig(format!(
            "the index's {META_FILE} is not a JSON object; create the index again"
        )));
    };
    let extensions = object
        .entry("persisted_custom_extensions")
        .or_insert_with(|| serde_json::Value::Array(Vec::new()));
    if let Some(list) = extensions.as_array_mut() {
        list.push(serde_json::Value::String(COMPONENT_EXTENSION.into()));
    }
    let json = serde_json::to_vec_pretty(&meta)?;
    index.directory().atomic_write(path, &json)?;
    Ok(())
}

/// Errors unless `index` was created with the segment component.
pub(super) fn require_component(index: &Index) -> Result<()> {
    let metas = index.load_metas()?;
    if metas
        .persisted_custom_extensions
        .iter()
        .any(|e| e == COMPONENT_EXTENSION)
    {
        Ok(())
    } else if metas.segments.is_empty() {
        Err(Error::InvalidConfig(format!(
            "the index was created without the near-duplicate segment component (`{COMPONENT_EXTENSION}`); \
             make it with NearDupIndex::create, or create the tantivy index with \
             Index::builder().register_plugin(config.segment_component()?)"
        )))
    } else {
        Err(missing_component())
    }
}

pub(super) fn missing_component() -> Error {
    Error::OldFormat(format!(
        "the index holds documents but no near-duplicate segment component          (`{COMPONENT_EXTENSION}` is not among the segment components its meta.json lists)"
    ))
}
