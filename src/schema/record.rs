//! [`IndexRecord`]: what an index records about how it was built (a file in its directory and
//! every commit's payload), and the checks against what a caller asks for.

use super::NearDupConfig;
use crate::error::{Error, Result};
use crate::fingerprint::{IdfTable, SchemeParameters};
use crate::layout::BlockLayout;
use crate::signature::RuleSpec;
use serde::{Deserialize, Serialize};
use std::path::Path;
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{Directory, Index};

/// The name of the file that records the scheme and layout of an index. Internal: the record is
/// read and written through [`IndexRecord`] and [`NearDupIndex::set_application_data`](crate::NearDupIndex::set_application_data).
pub(crate) const RECORD_FILE: &str = ".tantivy-simhash.json";

/// The format tag of the record (file and commit payload).
/// Version 4: signatures in the segment component; band keys hashed from full bin values.
pub(super) const RECORD_FORMAT: &str = "tantivy-simhash/4";

/// Formats this version refuses, with a message to rebuild.
pub(super) const OLD_RECORD_FORMATS: [&str; 3] = [
    "tantivy-simhash/1",
    "tantivy-simhash/2",
    "tantivy-simhash/3",
];

/// What an index records about how it was built: the scheme and layout (their ids, to check,
/// and their parameters, to rebuild them), the field names, and data an application stores
/// beside them ([`NearDupIndex::set_application_data`](crate::NearDupIndex::set_application_data)).
///
/// It lives in a small file (`.tantivy-simhash.json` in the index directory) written by [`NearDupIndex::create`](crate::NearDupIndex::create) and in the
/// payload of every commit made through [`DedupWriter::commit`](crate::DedupWriter::commit).
///
/// Indexes of this format made before the keys field was dropped record it too
/// (`keys_field`, `key_postings: false`) and have that field, which never held a value, in
/// their schema: they open and write as any other, those entries and that field ignored.
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
    pub(super) format: String,
    pub(super) scheme: String,
    pub(super) layout: String,
    pub(super) fingerprint_field: String,
    /// The match rule's id ([`MatchRule::id`]); empty in records of format 1.
    #[serde(default)]
    pub(super) rule: String,
    /// Absent in records written before parameters were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) settings: Option<RecordedSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) application: Option<serde_json::Value>,
}

pub(super) type Record = IndexRecord;

/// The parameters that rebuild a [`NearDupConfig`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct RecordedSettings {
    pub(super) scheme: SchemeParameters,
    pub(super) layout: BlockLayout,
    pub(super) id_field: String,
    pub(super) text_fields: Vec<String>,
    pub(super) group_field: Option<String>,
    /// The match rule's parameters (absent in records of format 1).
    #[serde(default)]
    pub(super) rule: Option<RuleSpec>,
}

impl IndexRecord {
    /// Reads the record of `index`: the record file, else the last commit's payload; `None`
    /// when the index has neither (it was not built by [`NearDupIndex::create`](crate::NearDupIndex::create)).
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

    /// What the application stored with [`NearDupIndex::set_application_data`](crate::NearDupIndex::set_application_data).
    pub fn application(&self) -> Option<&serde_json::Value> {
        self.application.as_ref()
    }

    /// The configuration that built the index. `analyzer` and `idf` are needed only for a
    /// scheme that used a user analyzer or an IDF table (see [`SchemeParameters::to_builder`]).
    ///
    /// Errors: [`Error::InvalidConfig`] when the record has no parameters (written by an older
    /// release: open with [`NearDupIndex::open`](crate::NearDupIndex::open) and the configuration), when an analyzer or
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
        let mut rule = settings.rule.unwrap_or_default();
        rule.layout = settings.layout;
        Ok(NearDupConfig {
            scheme,
            layout: settings.layout,
            rule,
            id_field: settings.id_field.clone(),
            text_fields: settings.text_fields.clone(),
            fingerprint_field: self.fingerprint_field.clone(),
            group_field: settings.group_field.clone(),
        })
    }

    pub(crate) fn to_json(&self) -> Result<String> {
        Ok(serde_json::to_string(self)?)
    }

    /// Compares what the index records (`self`) with what the caller asks for.
    pub(super) fn check(&self, expected: &Record) -> Result<()> {
        let pairs: [(&'static str, &String, &String); 4] = [
            ("scheme", &self.scheme, &expected.scheme),
            ("layout", &self.layout, &expected.layout),
            (
                "fingerprint field",
                &self.fingerprint_field,
                &expected.fingerprint_field,
            ),
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

/// An index written by an older version has no signatures: say so, and how to fix it.
pub(super) fn refuse_old_format(format: &str) -> Result<()> {
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

pub(super) fn payload_record(index: &Index) -> Result<Option<Record>> {
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

pub(super) fn no_record(expected_scheme: &str) -> Error {
    Error::IndexMismatch {
        what: "scheme",
        found: format!(
            "nothing (no {RECORD_FILE}, no commit payload from this crate: the index was not \
             built by NearDupIndex::create)"
        ),
        expected: expected_scheme.to_string(),
    }
}
