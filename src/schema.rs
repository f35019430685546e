//! The near-duplicate index: its configuration, the fields it adds to a schema, the record of
//! how it was built, and [`NearDupIndex`], the handle the other modules take.
//!
//! Every document carries, next to the user's own fields:
//!
//! - its [`Signature`](crate::Signature) (the [`Fingerprint`] and the MinHash sketch) in plain
//!   `u64` fields that tantivy neither indexes nor stores: they carry it to the index's
//!   **segment component** ([`crate::component`]), which writes every segment's signatures
//!   and the match rule's keys, in sorted tables, to a file of the segment;
//! - optionally, under [`Policy::Tag`](crate::Policy::Tag), the id of the first document of its near-duplicate group
//!   in a string fast field, so results can be collapsed exactly.
//!
//! The user's **id field** must be a text field indexed with the `raw` tokenizer and fast:
//! `STRING | FAST` (add `STORED` if you want it back from the doc store). Lookups return ids read
//! from its column, [`Policy::Replace`](crate::Policy::Replace) deletes by it, and [`NearDupQuery::from_id`](crate::NearDupQuery::from_id) finds a
//! document by it.
//!
//! Which [`Scheme`] and [`BlockLayout`] built an index ([`IndexRecord`]: their ids and
//! parameters, and the field names, so [`NearDupIndex::open_recorded`] needs nothing else) is
//! recorded twice: in a small file
//! (`.tantivy-simhash.json`; tantivy's garbage collection never deletes names starting with a dot)
//! written by [`NearDupIndex::create`], and in the payload of every commit made through
//! [`DedupWriter::commit`](crate::DedupWriter::commit). [`NearDupIndex::open`] checks the record against what the caller
//! asks for: fingerprints of two schemes cannot be compared, so a mismatch is an error
//! ([`Error::IndexMismatch`]), and so is a missing or mistyped field ([`Error::Schema`]).
//!
//! ```
//! use tantivy::schema::{Schema, FAST, STORED, STRING, TEXT};
//! use tantivy::{doc, Index};
//! use tantivy_simhash::{NearDupConfig, NearDupIndex, NearDupLookup, Outcome, Policy};
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
//! assert!(matches!(again, Outcome::Duplicate { ref of, .. } if of == "a"));
//! assert_eq!(again.evidence().map(|e| e.distance()), Some(0));
//! writer.commit()?;
//!
//! let searcher = NearDupLookup::new(index.fields(), &index.searcher()?)?;
//! // Formatting-only changes give the same fingerprint:
//! let hits = searcher.lookup(index.scheme().fingerprint(&text.to_uppercase()))?;
//! assert_eq!(hits[0].id, "a");
//! # Ok::<(), tantivy_simhash::Error>(())
//! ```

use crate::component::reader::{ResolvedSignatureFields, SignatureFields};
use crate::component::{NearDupComponent, COMPONENT_EXTENSION};
use crate::error::{Error, Result};
use crate::fingerprint::{Fingerprint, IdfTable, Scheme, SchemeParameters, SIMHASH_TOKENIZER_NAME};
use crate::layout::BlockLayout;
use crate::replay::{document_text, AnalysisCounts, ReplayCounters};
use crate::signature::{MatchRule, RuleSpec, Signature};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::{Arc, Mutex};
use tantivy::schema::{Field, FieldType, Schema, SchemaBuilder, FAST, STRING};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{Directory, Index, IndexReader, SegmentPlugin, TantivyDocument};

/// The name of the file that records the scheme and layout of an index. Internal: the record is
/// read and written through [`IndexRecord`] and [`NearDupIndex::set_application_data`].
pub(crate) const RECORD_FILE: &str = ".tantivy-simhash.json";

/// The field [`NearDupConfig::add_fields`] adds for each document's place in the order the
/// writer added documents (a `u64` fast field). Near-duplicates at the same distance are ranked
/// by it, so "the first" means the first added, whatever tantivy's threads and segments do.
/// Indexes made without it still work; their ties follow segment order.
pub const SEQUENCE_FIELD: &str = "simhash_seq";

/// The field [`NearDupConfig::add_fields`] adds for the ids a document replaced under
/// [`Policy::Replace`](crate::Policy::Replace) (directly, or through the documents it replaced), a multi-valued
/// `STRING | FAST` field: [`NearDupLookup::is_replaced`](crate::NearDupLookup::is_replaced) reads it, so a rerun over the same
/// input can skip the ids that were replaced. Indexes made without it do not record them.
pub const REPLACED_FIELD: &str = "simhash_replaced";

/// The format tag of the record (file and commit payload).
/// Version 4: signatures in the segment component; band keys hashed from full bin values.
const RECORD_FORMAT: &str = "tantivy-simhash/4";
/// Formats this version refuses, with a message to rebuild.
const OLD_RECORD_FORMATS: [&str; 3] = [
    "tantivy-simhash/1",
    "tantivy-simhash/2",
    "tantivy-simhash/3",
];

/// How an index uses fingerprints: the scheme, the layout and the field names.
///
/// Defaults: [`Scheme::default`], [`BlockLayout::default`] (4 x 16, k <= 3), fields `simhash`
/// (fingerprint), `simhash_keys` (keys) and `simhash_group` (group, for [`Policy::Tag`](crate::Policy::Tag)).
#[derive(Clone, Debug)]
pub struct NearDupConfig {
    scheme: Scheme,
    layout: BlockLayout,
    /// The match rule's parameters; its layout is kept equal to `layout`.
    rule: RuleSpec,
    id_field: String,
    text_fields: Vec<String>,
    fingerprint_field: String,
    keys_field: String,
    group_field: Option<String>,
    /// `Some(true)` asks for keys in postings, a storage this version no longer has (refused
    /// when the index is created or opened).
    key_postings: Option<bool>,
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
            rule: RuleSpec::default(),
            id_field: id_field.into(),
            text_fields: text_fields.into_iter().map(Into::into).collect(),
            fingerprint_field: "simhash".into(),
            keys_field: "simhash_keys".into(),
            group_field: Some("simhash_group".into()),
            key_postings: None,
        }
    }

    /// Kept so that code written for earlier versions fails with a message rather than a
    /// compile error: the rule's keys now always live in the segment component's sorted tables
    /// ([`crate::component`]). `true` makes [`NearDupIndex::create`] and
    /// [`NearDupIndex::open`] fail with [`Error::InvalidConfig`]; `false` changes nothing.
    pub fn with_key_postings(mut self, key_postings: bool) -> Self {
        self.key_postings = Some(key_postings);
        self
    }

    /// Always `false`: the keys live in the segment component's tables, never in postings.
    pub fn key_postings(&self) -> bool {
        false
    }

    /// The tantivy segment plugin ([`crate::component`]) an index of this configuration needs
    /// registered: pass it to `tantivy::IndexBuilder::register_plugin` when creating an index
    /// yourself, or to `Index::register_plugin` after `Index::open` before writing.
    /// [`NearDupIndex::create`] and [`NearDupIndex::open`] register it themselves. Cost: a copy
    /// of the rule. Errors: [`Error::InvalidConfig`] when the rule's parameters are unusable.
    pub fn segment_component(&self) -> Result<Arc<dyn SegmentPlugin>> {
        Ok(Arc::new(self.component()?))
    }

    fn component(&self) -> Result<NearDupComponent> {
        let names = self.signature_fields();
        Ok(NearDupComponent::new(
            self.rule()?,
            names.fingerprint,
            names.sketch,
        ))
    }

    /// Uses `scheme` to fingerprint text.
    pub fn with_scheme(mut self, scheme: Scheme) -> Self {
        self.scheme = scheme;
        self
    }

    /// Uses `layout` for the keys; its [`BlockLayout::max_distance`] is the default `k` of
    /// lookups and of [`DedupWriter`](crate::DedupWriter).
    pub fn with_layout(mut self, layout: BlockLayout) -> Self {
        self.rule.layout = layout.clone();
        self.layout = layout;
        self
    }

    /// Uses `rule` to match documents (its layout becomes the layout). The writer stores every
    /// document's [`Signature`] (fingerprint, sketch, the rule's keys), and
    /// [`NearDupLookup::lookup_signature`](crate::NearDupLookup::lookup_signature) finds
    /// the documents the rule matches.
    pub fn with_rule(mut self, rule: MatchRule) -> Self {
        self.layout = rule.layout().clone();
        self.rule = rule.spec().clone();
        self
    }

    /// The match rule. Errors with [`Error::InvalidConfig`] when its parameters are invalid
    /// (they come from [`MatchRule`], so only a hand-edited record can make them so).
    pub fn rule(&self) -> Result<MatchRule> {
        MatchRule::new(self.rule.clone())
    }

    /// The names of the signature fields (fingerprint, keys, sketch words).
    pub fn signature_fields(&self) -> SignatureFields {
        SignatureFields::new(
            &self.fingerprint_field,
            &self.keys_field,
            &MatchRule::default(),
        )
        .with_sketch_words(self.rule.minhash.sketch_words())
    }

    /// Renames the fingerprint and key fields.
    pub fn with_field_names(
        mut self,
        fingerprint: impl Into<String>,
        keys: impl Into<String>,
    ) -> Self {
        self.fingerprint_field = fingerprint.into();
        self.keys_field = keys.into();
        self
    }

    /// Renames the group field, or (with `None`) leaves it out;
    /// [`Policy::Tag`](crate::Policy::Tag) needs it.
    pub fn with_group_field(mut self, name: Option<&str>) -> Self {
        self.group_field = name.map(str::to_string);
        self
    }

    /// The scheme.
    pub fn scheme(&self) -> &Scheme {
        &self.scheme
    }

    /// The layout.
    pub fn layout(&self) -> &BlockLayout {
        &self.layout
    }

    /// The name of the id field.
    pub fn id_field(&self) -> &str {
        &self.id_field
    }

    /// The names of the text fields that are fingerprinted, in order.
    pub fn text_fields(&self) -> &[String] {
        &self.text_fields
    }

    /// The name of the fingerprint field.
    pub fn fingerprint_field(&self) -> &str {
        &self.fingerprint_field
    }

    /// The name of the keys field.
    pub fn keys_field(&self) -> &str {
        &self.keys_field
    }

    /// The name of the group field, if there is one.
    pub fn group_field(&self) -> Option<&str> {
        self.group_field.as_deref()
    }

    /// Adds the fingerprint, key and (if configured) group fields to `builder`. The id and text
    /// fields are the caller's: add them yourself (the id as `STRING | FAST`).
    ///
    /// The fingerprint, the keys and the sketch words are plain `u64` fields that tantivy
    /// neither indexes nor stores (the segment component keeps the signatures and the keys);
    /// the group a `STRING | FAST` text field (so `TermQuery` can fetch a whole group and its
    /// column collapses results).
    ///
    /// It also adds [`SEQUENCE_FIELD`] (the order documents were added in, to break ties between
    /// equally near near-duplicates by it) and [`REPLACED_FIELD`] (the ids each document
    /// replaced, so reruns can skip them): 8 bytes per document, and the replaced ids.
    pub fn add_fields(&self, builder: &mut SchemaBuilder) {
        self.signature_fields().add_to_schema(builder);
        if let Some(group) = &self.group_field {
            builder.add_text_field(group, STRING | FAST);
        }
        builder.add_u64_field(SEQUENCE_FIELD, FAST);
        builder.add_text_field(REPLACED_FIELD, STRING | FAST);
    }

    pub(crate) fn record(&self) -> Record {
        Record {
            format: RECORD_FORMAT.to_string(),
            scheme: self.scheme.id().to_string(),
            layout: self.layout.id(),
            fingerprint_field: self.fingerprint_field.clone(),
            keys_field: self.keys_field.clone(),
            key_postings: self.key_postings(),
            rule: self.rule().map(|r| r.id()).unwrap_or_default(),
            settings: Some(RecordedSettings {
                scheme: self.scheme.parameters(),
                layout: self.layout.clone(),
                id_field: self.id_field.clone(),
                text_fields: self.text_fields.clone(),
                group_field: self.group_field.clone(),
                rule: Some(self.rule.clone()),
            }),
            application: None,
        }
    }
}

/// What an index records about how it was built: the scheme and layout (their ids, to check,
/// and their parameters, to rebuild them), the field names, and data an application stores
/// beside them ([`NearDupIndex::set_application_data`]).
///
/// It lives in a small file (`.tantivy-simhash.json` in the index directory) written by [`NearDupIndex::create`] and in the
/// payload of every commit made through [`DedupWriter::commit`](crate::DedupWriter::commit).
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
    /// Whether the keys are indexed as postings ([`NearDupConfig::with_key_postings`]); records
    /// written before the option existed have postings.
    #[serde(default = "postings_by_default")]
    key_postings: bool,
    /// The match rule's id ([`MatchRule::id`]); empty in records of format 1.
    #[serde(default)]
    rule: String,
    /// Absent in records written before parameters were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    settings: Option<RecordedSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    application: Option<serde_json::Value>,
}

type Record = IndexRecord;

/// Records without `key_postings` were written when every index had key postings.
fn postings_by_default() -> bool {
    true
}

/// The parameters that rebuild a [`NearDupConfig`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct RecordedSettings {
    scheme: SchemeParameters,
    layout: BlockLayout,
    id_field: String,
    text_fields: Vec<String>,
    group_field: Option<String>,
    /// The match rule's parameters (absent in records of format 1).
    #[serde(default)]
    rule: Option<RuleSpec>,
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
            refuse_old_format(&record.format)?;
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

    /// Whether the index's keys are indexed as postings
    /// ([`NearDupConfig::with_key_postings`]; `true` for records written before the option
    /// existed).
    pub fn key_postings(&self) -> bool {
        self.key_postings
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
        let mut rule = settings.rule.clone().unwrap_or_default();
        rule.layout = settings.layout.clone();
        Ok(NearDupConfig {
            scheme,
            layout: settings.layout.clone(),
            rule,
            id_field: settings.id_field.clone(),
            text_fields: settings.text_fields.clone(),
            fingerprint_field: self.fingerprint_field.clone(),
            keys_field: self.keys_field.clone(),
            group_field: settings.group_field.clone(),
            key_postings: Some(self.key_postings),
        })
    }

    pub(crate) fn to_json(&self) -> Result<String> {
        Ok(serde_json::to_string(self)?)
    }

    /// Compares what the index records (`self`) with what the caller asks for.
    fn check(&self, expected: &Record) -> Result<()> {
        self.check_parameters(expected)?;
        if self.key_postings != expected.key_postings {
            return Err(Error::IndexMismatch {
                what: "key storage",
                found: key_storage(self.key_postings).into(),
                expected: key_storage(expected.key_postings).into(),
            });
        }
        Ok(())
    }

    /// [`check`](Self::check) without the key storage, which only the schema settles.
    fn check_parameters(&self, expected: &Record) -> Result<()> {
        let pairs: [(&'static str, &String, &String); 5] = [
            ("scheme", &self.scheme, &expected.scheme),
            ("layout", &self.layout, &expected.layout),
            (
                "fingerprint field",
                &self.fingerprint_field,
                &expected.fingerprint_field,
            ),
            ("keys field", &self.keys_field, &expected.keys_field),
            ("match rule", &self.rule, &expected.rule),
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

/// How a record's key storage reads in an error.
/// Registers `scheme`'s tokenizer under [`SIMHASH_TOKENIZER_NAME`] when the index has none
/// under that name (a tokenizer the user registered there is theirs and stays), and returns
/// the counters of the analyses it replays; `None` when the user's tokenizer stays.
fn register_scheme_tokenizer(index: &Index, scheme: &Scheme) -> Option<Arc<ReplayCounters>> {
    if index.tokenizers().get(SIMHASH_TOKENIZER_NAME).is_none() {
        Some(crate::replay::register(index, scheme))
    } else {
        None
    }
}

/// The text fields to fingerprint; an error naming the first that is missing or not text.
fn resolve_text_fields(schema: &Schema, config: &NearDupConfig) -> Result<Vec<Field>> {
    config
        .text_fields
        .iter()
        .map(|name| {
            required_field(
                schema,
                name,
                |t| matches!(t, FieldType::Str(_)),
                "text fields to fingerprint must be text fields",
            )
        })
        .collect()
}

/// This crate's own fields ([`SEQUENCE_FIELD`], [`REPLACED_FIELD`]), optional: indexes made
/// before they existed open without them; an error when one has the wrong type.
fn resolve_crate_fields(schema: &Schema) -> Result<(Option<Field>, Option<Field>)> {
    let sequence = optional_field(
        schema,
        SEQUENCE_FIELD,
        |t| matches!(t, FieldType::U64(o) if o.is_fast()),
        "this crate's sequence field must be a u64 fast field; use NearDupConfig::add_fields",
    )?;
    let replaced = optional_field(
        schema,
        REPLACED_FIELD,
        is_raw_fast_text,
        "this crate's replaced-ids field must be STRING | FAST; use NearDupConfig::add_fields",
    )?;
    Ok((sequence, replaced))
}

fn key_storage(key_postings: bool) -> &'static str {
    if key_postings {
        "keys in postings (NearDupConfig::with_key_postings(true))"
    } else {
        "keys in columns only (NearDupConfig::with_key_postings(false))"
    }
}

/// An index written by an older version has no signatures: say so, and how to fix it.
fn refuse_old_format(format: &str) -> Result<()> {
    if OLD_RECORD_FORMATS.contains(&format) {
        return Err(Error::OldFormat(format!(
            "the index records format `{format}` ({}), this version reads `{RECORD_FORMAT}` \
             (signatures and key tables in a segment component, band keys hashed from the \
             MinHash bins' full values)",
            if format.ends_with("/1") {
                "no signatures"
            } else if format.ends_with("/2") {
                "signatures in fast columns"
            } else {
                "band keys read from 8-bit sketch bins"
            }
        )));
    }
    Ok(())
}

fn payload_record(index: &Index) -> Result<Option<Record>> {
    let metas = index.load_metas()?;
    let Some(record) = metas
        .payload
        .as_deref()
        .and_then(|p| serde_json::from_str::<Record>(p).ok())
    else {
        return Ok(None);
    };
    refuse_old_format(&record.format)?;
    Ok((record.format == RECORD_FORMAT).then_some(record))
}

/// The handle every feature takes: the resolved fields of a near-duplicate index and its match
/// rule. Small and `Copy` (about 64 bytes), so collectors, queries and lookups hold it by value.
///
/// Get it from [`NearDupIndex::fields`]. It holds everything reading an index needs (which
/// columns and postings to open, the rule that decides a match, the layout of its keys); the
/// [`Scheme`] is not in it: a scheme may hold a user analyzer and an IDF table, which cannot be
/// `Copy`, and only turning text into a fingerprint needs it (the entry points that take text,
/// such as [`NearDupQuery::from_text`](crate::NearDupQuery::from_text), take the
/// [`NearDupIndex`]). The rule is kept for the life of the process (one copy per distinct rule,
/// a few hundred bytes), which is what makes the handle `Copy`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NearDupFields {
    /// The user's id field (`STRING | FAST`).
    pub id: Field,
    /// The fingerprint (`u64`, fast).
    pub fingerprint: Field,
    /// The keys field: the layout's block keys and the rule's band keys (`u64`, indexed,
    /// multi-valued) when [`key_postings`](Self::key_postings), else a field that holds no
    /// value (the keys live in the signature columns only).
    pub keys: Field,
    /// The group id (string, fast), if configured.
    pub group: Option<Field>,
    /// [`SEQUENCE_FIELD`] (`u64`, fast), if the schema has it.
    pub sequence: Option<Field>,
    /// [`REPLACED_FIELD`] (string, indexed and fast, multi-valued), if the schema has it.
    pub replaced: Option<Field>,
    /// The sketch words: `sketch_words` consecutive fields from `first_sketch`
    /// ([`NearDupConfig::add_fields`] adds them together; resolving checks it).
    first_sketch: Field,
    sketch_words: u32,
    rule: &'static MatchRule,
    key_postings: bool,
}

impl NearDupFields {
    /// Whether the keys are indexed as postings ([`NearDupConfig::with_key_postings`]); `false`
    /// when they live in the signature columns only (read through key tables).
    pub fn key_postings(&self) -> bool {
        self.key_postings
    }

    /// The match rule of the index.
    pub fn rule(&self) -> &'static MatchRule {
        self.rule
    }

    /// The layout of the block keys (the rule's simhash branch); its
    /// [`max_distance`](BlockLayout::max_distance) is the default `k` of lookups, queries and
    /// collapses.
    pub fn layout(&self) -> &'static BlockLayout {
        self.rule.layout()
    }

    /// The sketch fields (`u64`, fast), one per 64-bit word of the sketch, in word order.
    /// Cost: none (computed from the first field's number; the fields are numbered in a row).
    pub fn sketch_fields(&self) -> impl ExactSizeIterator<Item = Field> + Clone {
        let first = self.first_sketch.field_id();
        (first..first + self.sketch_words).map(Field::from_field_id)
    }

    /// The group field, or the one error every feature that needs it gives: `needs` says what
    /// needs it ("Policy::Tag stores each document's group in", ...).
    pub(crate) fn require_group(&self, needs: &str) -> Result<Field> {
        self.group.ok_or_else(|| Error::Schema {
            field: "group".into(),
            problem: format!(
                "{needs} the group field, but the configuration has none; keep NearDupConfig's \
                 group field (NearDupConfig::with_group_field(Some(..)))"
            ),
        })
    }
}

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
    pub(crate) reader: Arc<Mutex<Option<IndexReader>>>,
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
            Some(found) => found.check_parameters(&config.record())?,
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
        if config.key_postings == Some(true) {
            return Err(Error::InvalidConfig(
                "keys in postings (NearDupConfig::with_key_postings(true)) are no longer \
                 supported: the keys live in the segment component's sorted tables; remove the \
                 setting"
                    .into(),
            ));
        }
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
        let keys = required_field(
            &schema,
            &config.keys_field,
            |t| matches!(t, FieldType::U64(_)),
            "the keys field must be a u64 field; use NearDupConfig::add_fields",
        )?;
        let key_postings = false;
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
        let rule = config.rule()?.interned();
        let (signature_fields, first_sketch) =
            resolve_signature_fields(&schema, &config, fingerprint)?;
        Ok(NearDupIndex {
            index,
            fields: NearDupFields {
                id,
                fingerprint,
                keys,
                group,
                sequence,
                replaced,
                first_sketch,
                sketch_words: signature_fields.sketch_fields().len() as u32,
                rule,
                key_postings,
            },
            signature_fields: Arc::new(signature_fields),
            config: Arc::new(config),
            text_fields: Arc::new(text_fields),
            replay_fields: Arc::new(replay_fields),
            analysis_counters,
            reader: Arc::new(Mutex::new(None)),
            warmer: Arc::new(crate::component::ComponentWarmer::new(rule.clone())),
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
    pub fn rule(&self) -> &'static MatchRule {
        self.fields.rule
    }

    /// Where signatures are stored.
    pub fn signature_fields(&self) -> &ResolvedSignatureFields {
        &self.signature_fields
    }

    /// Adds `signature` (fingerprint, sketch words, and the rule's keys when the index has key
    /// postings) to `doc`. Cost: one value per field (33 by default), plus the rule's keys
    /// (16 by default) with key postings; cannot fail.
    pub fn add_signature_to(&self, doc: &mut TantivyDocument, signature: &Signature) {
        self.signature_fields
            .add_to_document(self.fields.rule, signature, doc);
    }

    /// Adds the fingerprint (and its block keys, when the index has key postings) to `doc`,
    /// without a sketch: such a document
    /// matches others only through the rule's simhash branch (its sketch reads as empty).
    /// Cost: one value, plus the layout's keys with key postings; cannot fail.
    pub fn add_fingerprint_to(&self, doc: &mut TantivyDocument, fp: Fingerprint) {
        doc.add_u64(self.fields.fingerprint, fp.0);
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

/// The field `name` of `schema`, if its type is `wanted`: [`Error::Schema`] with `problem`
/// otherwise, and a message saying how to add it when it is missing.
fn required_field(
    schema: &Schema,
    name: &str,
    wanted: impl Fn(&FieldType) -> bool,
    problem: &str,
) -> Result<Field> {
    let field = schema.get_field(name).map_err(|_| Error::Schema {
        field: name.to_string(),
        problem: "not in the schema; add it (NearDupConfig::add_fields adds the \
                  fingerprint, key and group fields; the id field is yours, as \
                  STRING | FAST)"
            .into(),
    })?;
    check_field_type(schema, name, field, wanted, problem)
}

/// The field `name` of `schema` if the schema has it (checked as [`required_field`] does).
fn optional_field(
    schema: &Schema,
    name: &str,
    wanted: impl Fn(&FieldType) -> bool,
    problem: &str,
) -> Result<Option<Field>> {
    match schema.get_field(name) {
        Err(_) => Ok(None),
        Ok(field) => check_field_type(schema, name, field, wanted, problem).map(Some),
    }
}

fn check_field_type(
    schema: &Schema,
    name: &str,
    field: Field,
    wanted: impl Fn(&FieldType) -> bool,
    problem: &str,
) -> Result<Field> {
    if wanted(schema.get_field_entry(field).field_type()) {
        Ok(field)
    } else {
        Err(Error::Schema {
            field: name.to_string(),
            problem: problem.to_string(),
        })
    }
}

/// A fast text field indexed whole (`STRING | FAST`): what ids and replaced ids need.
fn is_raw_fast_text(field_type: &FieldType) -> bool {
    matches!(field_type, FieldType::Str(o)
        if o.is_fast() && o.get_indexing_options().is_some_and(|i| i.tokenizer() == "raw"))
}

/// The fingerprinted fields tantivy indexes with the scheme's analyzer: the writer hands it
/// their tokens (one analysis per document). None when the scheme's tokens cannot be replayed.
fn replay_fields(schema: &Schema, scheme: &Scheme, text_fields: &[Field]) -> Vec<Field> {
    if !scheme.tokens_replayable() {
        return Vec::new();
    }
    text_fields
        .iter()
        .copied()
        .filter(|&f| match schema.get_field_entry(f).field_type() {
            FieldType::Str(o) => o
                .get_indexing_options()
                .is_some_and(|i| i.tokenizer() == SIMHASH_TOKENIZER_NAME),
            _ => false,
        })
        .collect()
}

/// The signature's fast fields (fingerprint and sketch words), and the first sketch field
/// (`fingerprint` when the rule has no sketch); the sketch fields must be consecutive.
fn resolve_signature_fields(
    schema: &Schema,
    config: &NearDupConfig,
    fingerprint: Field,
) -> Result<(ResolvedSignatureFields, Field)> {
    let schema_err = |name: &str, problem: String| Error::Schema {
        field: name.to_string(),
        problem,
    };
    let signature_fields = config.signature_fields().resolve(schema).map_err(|e| {
        schema_err(
            &format!("{}_sketch0", config.fingerprint_field),
            format!(
                "{e}; an index made by an older version has no signature fields: \
                     rebuild it, with NearDupConfig::add_fields"
            ),
        )
    })?;
    let sketch = signature_fields.sketch_fields();
    let first_sketch = sketch.first().copied().unwrap_or(fingerprint);
    let consecutive = sketch
        .iter()
        .enumerate()
        .all(|(i, f)| f.field_id() == first_sketch.field_id() + i as u32);
    if !consecutive {
        return Err(schema_err(
            schema.get_field_name(first_sketch),
            "the sketch fields must be added together, in order (NearDupConfig::add_fields \
             does so)"
                .into(),
        ));
    }
    Ok((signature_fields, first_sketch))
}

/// tantivy's index metadata file, whose list of custom segment components is fixed when an
/// index is created.
const META_FILE: &str = "meta.json";

/// Adds the segment component to the component list of `index` when the index was created
/// without it and holds no document yet (its list is fixed at creation, and only an empty
/// index can take one), so that `NearDupIndex::create(Index::create_in_dir(..)?, config)`
/// works. Errors with [`Error::InvalidConfig`] for an index that has documents but no
/// component.
fn adopt_component(index: &Index) -> Result<()> {
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
fn require_component(index: &Index) -> Result<()> {
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

fn missing_component() -> Error {
    Error::OldFormat(format!(
        "the index holds documents but no near-duplicate segment component          (`{COMPONENT_EXTENSION}` is not among the segment components its meta.json lists)"
    ))
}
