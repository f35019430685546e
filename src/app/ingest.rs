//! Adding documents to a store, the one way `neardup index` and Python's `Writer` do it: the
//! records they read checked and mapped to documents ([`InputDoc::from_record`]), the writer
//! opened with its memory budget checked and ids already indexed skipped ([`Store::ingest`]),
//! batches added under the policy and their outcomes counted ([`Ingest`], [`IngestCounts`]) and
//! named ([`outcome_name`]). The front ends keep reading their input (JSON lines, Python
//! mappings) into [`FieldValue`]s and printing.

use super::{DocFields, FieldMap, Store};
use crate::error::{Error, Result};
use crate::writer::{DedupWriter, IdPolicy, Outcome, Policy, MAX_ID_BYTES};
use serde::Serialize;

/// Counts of the outcomes of added documents.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IngestCounts {
    /// Documents stored (tagged and replacing ones included).
    pub added: u64,
    /// Stored documents with a near-duplicate already indexed (`Policy::Tag`).
    pub tagged: u64,
    /// Stored documents that replaced near-duplicates (`Policy::Replace`).
    pub replacing: u64,
    /// Documents deleted because a newer near-duplicate replaced them (`Policy::Replace`).
    pub replaced: u64,
    /// Documents not stored: near-duplicates of documents already indexed (`Policy::Reject`).
    pub rejected: u64,
    /// Documents not stored because their id is already in the index (or was added earlier in
    /// the same run): `IdPolicy::KeepFirst`.
    pub skipped_existing_id: u64,
    /// Documents not stored because a newer near-duplicate replaced their id (`Policy::Replace`
    /// in an earlier run over the same input): adding them again would bring the old copy back.
    pub skipped_replaced_id: u64,
}

impl IngestCounts {
    /// Counts one document's outcome. Free.
    pub fn tally(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Added { .. } | Outcome::Queued => self.added += 1,
            Outcome::Duplicate { .. } => self.rejected += 1,
            Outcome::IdTaken { replaced: true, .. } => self.skipped_replaced_id += 1,
            Outcome::IdTaken { .. } => self.skipped_existing_id += 1,
            Outcome::Tagged { .. } => {
                self.added += 1;
                self.tagged += 1;
            }
            Outcome::Replaced { replaced, .. } => {
                self.added += 1;
                self.replacing += 1;
                self.replaced += replaced.len() as u64;
            }
        }
    }

    /// Documents counted.
    pub fn documents(&self) -> u64 {
        self.added + self.rejected + self.skipped_existing_id + self.skipped_replaced_id
    }

    /// What was counted since `earlier` (a copy of these counts taken before). Free.
    pub fn since(&self, earlier: &IngestCounts) -> IngestCounts {
        IngestCounts {
            added: self.added - earlier.added,
            tagged: self.tagged - earlier.tagged,
            replacing: self.replacing - earlier.replacing,
            replaced: self.replaced - earlier.replaced,
            rejected: self.rejected - earlier.rejected,
            skipped_existing_id: self.skipped_existing_id - earlier.skipped_existing_id,
            skipped_replaced_id: self.skipped_replaced_id - earlier.skipped_replaced_id,
        }
    }
}

/// The name of an outcome: `added`, `tagged` (added in the group of a near-duplicate),
/// `replaced` (added; its near-duplicates were deleted), `rejected` (not added: a
/// near-duplicate is indexed) or `skipped` (not added: its id is taken).
pub fn outcome_name(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Added { .. } | Outcome::Queued => "added",
        Outcome::Tagged { .. } => "tagged",
        Outcome::Replaced { .. } => "replaced",
        Outcome::Duplicate { .. } => "rejected",
        Outcome::IdTaken { .. } => "skipped",
    }
}

/// A document as a front end read it (a JSON line, a Python mapping), checked by
/// [`InputDoc::from_record`]: what [`DocFields::document`](super::DocFields::document) stores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputDoc {
    /// The id: a non-empty string of at most [`MAX_ID_BYTES`] bytes.
    pub id: String,
    /// The title (maybe empty).
    pub title: String,
    /// The text (maybe empty when the title is not).
    pub text: String,
    /// The host (maybe empty).
    pub host: String,
}

/// A value of a record as its front end found it, in the front end's own terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldValue {
    /// The record has no such key.
    Absent,
    /// JSON `null`, Python `None`.
    Null,
    /// A string.
    Str(String),
    /// An integer, as its decimal text (exactly, whatever its size).
    Integer(String),
    /// Anything else, described for a message: `a boolean`, `float`, `the number 1e3, which
    /// is not an integer`.
    Other(String),
}

/// The front end whose vocabulary a message uses (flags or keyword arguments).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrontEnd {
    /// `neardup`: a record is a line, keys are named with `--id-field` and the like.
    CommandLine,
    /// The Python package: a record is a mapping, keys are named with `fields={...}`.
    Python,
}

impl FrontEnd {
    /// How the key of `what` (`id`, `text`) is named.
    fn key_option(self, what: &str) -> String {
        match self {
            FrontEnd::CommandLine => format!("--{what}-field"),
            FrontEnd::Python => format!("fields={{\"{what}\": ...}}"),
        }
    }

    /// How a setting is named: `--memory-mb 10`, `memory_mb=10`.
    fn setting(self, flag: &str, keyword: &str, value: usize) -> String {
        match self {
            FrontEnd::CommandLine => format!("--{flag} {value}"),
            FrontEnd::Python => format!("{keyword}={value}"),
        }
    }

    fn record(self) -> &'static str {
        match self {
            FrontEnd::CommandLine => "the line",
            FrontEnd::Python => "the document",
        }
    }
}

/// Why a record is not a document: the message says what was found and what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadRecord {
    /// A value of the wrong type (Python's `TypeError`), or a missing or wrong value.
    pub wrong_type: bool,
    /// The whole message.
    pub message: String,
}

impl std::fmt::Display for BadRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

fn bad(message: String) -> BadRecord {
    BadRecord {
        wrong_type: false,
        message,
    }
}

fn wrong_type(message: String) -> BadRecord {
    BadRecord {
        wrong_type: true,
        message,
    }
}

impl InputDoc {
    /// Checks a record and maps it to a document, by the keys of `fields`: the id is a
    /// non-empty string or an integer of at most [`MAX_ID_BYTES`] bytes; the text a string,
    /// which every document needs; title and host optional strings; text or title must hold
    /// something to fingerprint. `value` gives the record's value of a key; `keys` lists the
    /// record's keys for messages (the first few). Free but for the copies.
    pub fn from_record(
        fields: &FieldMap,
        front_end: FrontEnd,
        mut value: impl FnMut(&str) -> FieldValue,
        keys: impl Fn() -> Vec<String>,
    ) -> std::result::Result<InputDoc, BadRecord> {
        let id = Self::id(fields, front_end, value(&fields.id), &keys)?;
        let text = match value(&fields.text) {
            FieldValue::Str(s) => s,
            FieldValue::Absent => {
                return Err(bad(format!(
                    "document `{id}` has no text field `{}` ({}'s fields: {}); name the field \
                     that holds the text with {}",
                    fields.text,
                    front_end.record(),
                    key_list(keys()),
                    front_end.key_option("text")
                )))
            }
            FieldValue::Null => {
                return Err(bad(format!(
                    "document `{id}`: the text field `{}` is null; expected a string",
                    fields.text
                )))
            }
            other => {
                return Err(wrong_type(format!(
                    "document `{id}`: the text field `{}` is {}; expected a string",
                    fields.text,
                    describe(&other)
                )))
            }
        };
        let title = optional_string(&fields.title, value(&fields.title), &id)?;
        let host = optional_string(&fields.host, value(&fields.host), &id)?;
        if text.trim().is_empty() && title.trim().is_empty() {
            return Err(bad(format!(
                "document `{id}` has an empty text and no title: nothing to fingerprint"
            )));
        }
        Ok(InputDoc {
            id,
            title,
            text,
            host,
        })
    }

    fn id(
        fields: &FieldMap,
        front_end: FrontEnd,
        value: FieldValue,
        keys: &impl Fn() -> Vec<String>,
    ) -> std::result::Result<String, BadRecord> {
        let key = &fields.id;
        let id = match value {
            FieldValue::Str(s) if !s.trim().is_empty() => s,
            FieldValue::Integer(digits) => digits,
            FieldValue::Str(_) => return Err(bad(format!("the id field `{key}` is empty"))),
            FieldValue::Absent => {
                return Err(bad(format!(
                    "no id field `{key}` ({}'s fields: {}); every document needs one: name the \
                     field that holds the id with {}",
                    front_end.record(),
                    key_list(keys()),
                    front_end.key_option("id")
                )))
            }
            FieldValue::Null => {
                return Err(bad(format!(
                    "the id field `{key}` is null; every document needs an id (a string or an \
                     integer)"
                )))
            }
            FieldValue::Other(kind) => {
                return Err(wrong_type(format!(
                    "the id field `{key}` is {kind}; expected a string or an integer"
                )))
            }
        };
        if id.len() > MAX_ID_BYTES {
            return Err(bad(format!(
                "the id field `{key}` holds {} bytes, more than the {MAX_ID_BYTES} an id can have \
                 (an index cannot look a longer id up, so reruns could not skip it); shorten the \
                 ids, or use a hash of them",
                id.len()
            )));
        }
        Ok(id)
    }
}

fn optional_string(
    key: &str,
    value: FieldValue,
    id: &str,
) -> std::result::Result<String, BadRecord> {
    match value {
        FieldValue::Absent | FieldValue::Null => Ok(String::new()),
        FieldValue::Str(s) => Ok(s),
        other => Err(wrong_type(format!(
            "document `{id}`: the field `{key}` is {}; expected a string",
            describe(&other)
        ))),
    }
}

fn describe(value: &FieldValue) -> String {
    match value {
        FieldValue::Absent => "missing".into(),
        FieldValue::Null => "null".into(),
        FieldValue::Str(_) => "a string".into(),
        FieldValue::Integer(_) => "a number".into(),
        FieldValue::Other(kind) => kind.clone(),
    }
}

/// Keys for messages: the first few, in the order given.
fn key_list(keys: Vec<String>) -> String {
    const SHOWN: usize = 8;
    if keys.is_empty() {
        return "none".into();
    }
    let mut names: Vec<String> = keys.iter().take(SHOWN).map(|k| format!("`{k}`")).collect();
    if keys.len() > SHOWN {
        names.push(format!("and {} more", keys.len() - SHOWN));
    }
    names.join(", ")
}

/// The smallest memory budget tantivy takes per indexing thread, in MB.
const MIN_MB_PER_THREAD: usize = 15;
/// The largest: tantivy takes at most 4 GiB less a 1 MB margin per indexing thread (its
/// `MEMORY_BUDGET_NUM_BYTES_MAX`, not exported).
const MAX_MB_PER_THREAD: usize = ((u32::MAX as usize) - 1_000_000) >> 20;

/// Checks a writer's memory budget of `memory_mb` MB over `threads` indexing threads
/// (tantivy's choice, at most 8, when `None`), so a front end can refuse it before it creates
/// anything. Errors: [`Error::Setting`] when the budget is below 15 MB per thread or above what
/// tantivy takes (about 4 GB per thread), or `threads` is 0, named as `front_end` names them.
pub fn check_memory(front_end: FrontEnd, memory_mb: usize, threads: Option<usize>) -> Result<()> {
    let memory = front_end.setting("memory-mb", "memory_mb", memory_mb);
    let counted = match threads {
        Some(0) => {
            return Err(Error::Setting(format!(
                "{} must be at least 1",
                front_end.setting("threads", "threads", 0)
            )))
        }
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get().min(8)),
    };
    if memory_mb < MIN_MB_PER_THREAD {
        return Err(Error::Setting(format!(
            "{memory} is too small: tantivy needs at least {MIN_MB_PER_THREAD} MB per indexing \
             thread"
        )));
    }
    let max_mb = MAX_MB_PER_THREAD * counted;
    if memory_mb > max_mb {
        return Err(Error::Setting(format!(
            "{memory} is more than tantivy can use here: at most {MAX_MB_PER_THREAD} MB per \
             indexing thread and {counted} threads, so at most {max_mb}"
        )));
    }
    Ok(())
}

/// A writer adding documents to a store: batches under the store's policy, outcomes counted.
pub struct Ingest {
    writer: DedupWriter,
    fields: DocFields,
    counts: IngestCounts,
    /// Documents added to the writer since the last commit (skipped ids aside).
    since_commit: u64,
}

impl Store {
    /// Opens the store's writer under `policy` and `ids` with a budget of `memory_mb` MB (over
    /// `threads` indexing threads; tantivy's choice, at most 8, when `None`). The command line
    /// skips ids already indexed (`IdPolicy::KeepFirst`), so a rerun over the same input adds
    /// only what is new.
    ///
    /// Errors: those of [`check_memory`]; the writer's (another writer holds the index's
    /// lock).
    pub fn ingest(
        &self,
        front_end: FrontEnd,
        memory_mb: usize,
        threads: Option<usize>,
        policy: Policy,
        ids: IdPolicy,
    ) -> Result<Ingest> {
        check_memory(front_end, memory_mb, threads)?;
        let budget = memory_mb << 20;
        let writer = match threads {
            Some(n) => self.index.writer_with_num_threads(n, budget, policy)?,
            None => self.index.writer(budget, policy)?,
        }
        .with_id_policy(ids);
        Ok(Ingest {
            writer,
            fields: self.fields,
            counts: IngestCounts::default(),
            since_commit: 0,
        })
    }
}

impl Ingest {
    /// Adds `docs` in order (fingerprinted in parallel when there are several) under the
    /// writer's policies, counts their outcomes and returns them with the ids. Errors: the
    /// writer's ([`DedupWriter::add_documents`]).
    pub fn add(&mut self, docs: Vec<InputDoc>) -> Result<Vec<(String, Outcome)>> {
        let (batch, ids): (Vec<_>, Vec<_>) = docs
            .into_iter()
            .map(|d| {
                let doc = self.fields.document(&d.id, &d.title, &d.text, &d.host);
                (doc, d.id)
            })
            .unzip();
        let outcomes = match <[_; 1]>::try_from(batch) {
            Ok([d]) => vec![self.writer.add_document(d)?],
            Err(batch) => self.writer.add_documents(batch)?,
        };
        for outcome in &outcomes {
            self.counts.tally(outcome);
            if !matches!(outcome, Outcome::IdTaken { .. }) {
                self.since_commit += 1;
            }
        }
        Ok(ids.into_iter().zip(outcomes).collect())
    }

    /// The outcomes counted so far.
    pub fn counts(&self) -> IngestCounts {
        self.counts
    }

    /// Documents added since the last commit (skipped ids aside).
    pub fn since_commit(&self) -> u64 {
        self.since_commit
    }

    /// Makes what was added durable and visible ([`DedupWriter::commit`]).
    pub fn commit(&mut self) -> Result<()> {
        self.writer.commit()?;
        self.since_commit = 0;
        Ok(())
    }

    /// Discards what was added since the last commit ([`DedupWriter::rollback`]).
    pub fn rollback(&mut self) -> Result<()> {
        self.writer.rollback()?;
        self.since_commit = 0;
        Ok(())
    }

    /// The writer (for what it reports, such as [`DedupWriter::ids_replaced`]).
    pub fn writer(&self) -> &DedupWriter {
        &self.writer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A record of `(key, value)`s checked as the command line and as Python would.
    fn check(
        record: &[(&str, FieldValue)],
        front_end: FrontEnd,
    ) -> std::result::Result<InputDoc, BadRecord> {
        let map: BTreeMap<String, FieldValue> = record
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        InputDoc::from_record(
            &FieldMap::default(),
            front_end,
            |key| map.get(key).cloned().unwrap_or(FieldValue::Absent),
            || map.keys().cloned().collect(),
        )
    }

    type Record<'a> = Vec<(&'a str, FieldValue)>;

    fn s(text: &str) -> FieldValue {
        FieldValue::Str(text.into())
    }

    fn error(record: &[(&str, FieldValue)]) -> BadRecord {
        match check(record, FrontEnd::CommandLine) {
            Ok(doc) => panic!("{doc:?} was accepted"),
            Err(e) => e,
        }
    }

    #[test]
    fn records_become_documents() {
        let doc = check(
            &[
                ("id", FieldValue::Integer("-98765432109876543210".into())),
                ("text", s("hello world")),
                ("title", FieldValue::Null),
                ("host", s("example.org")),
                ("other", FieldValue::Other("an array".into())),
            ],
            FrontEnd::Python,
        );
        assert_eq!(
            doc,
            Ok(InputDoc {
                id: "-98765432109876543210".into(),
                title: String::new(),
                text: "hello world".into(),
                host: "example.org".into(),
            })
        );
        // A title alone is enough to fingerprint.
        let doc = check(
            &[("id", s("a")), ("text", s(" ")), ("title", s("T"))],
            FrontEnd::Python,
        );
        assert_eq!(doc.map(|d| d.title), Ok("T".to_string()));
    }

    #[test]
    fn bad_records_say_what_is_wrong_and_whether_it_is_a_type() {
        // (record, wrong type, message)
        let cases: Vec<(Record, bool, &str)> = vec![
            (
                vec![("text", s("x")), ("body", s("y"))],
                false,
                "no id field `id` (the line's fields: `body`, `text`); every document needs \
                 one: name the field that holds the id with --id-field",
            ),
            (
                vec![("id", FieldValue::Null), ("text", s("x"))],
                false,
                "the id field `id` is null",
            ),
            (
                vec![("id", s(" ")), ("text", s("x"))],
                false,
                "the id field `id` is empty",
            ),
            (
                vec![
                    ("id", FieldValue::Other("a boolean".into())),
                    ("text", s("x")),
                ],
                true,
                "the id field `id` is a boolean; expected a string or an integer",
            ),
            (
                vec![("id", s(&"i".repeat(MAX_ID_BYTES + 1))), ("text", s("x"))],
                false,
                "more than the 65530 an id can have",
            ),
            (
                vec![("id", s("a"))],
                false,
                "document `a` has no text field `text`",
            ),
            (
                vec![("id", s("a")), ("text", FieldValue::Null)],
                false,
                "document `a`: the text field `text` is null; expected a string",
            ),
            (
                vec![("id", s("a")), ("text", FieldValue::Integer("3".into()))],
                true,
                "document `a`: the text field `text` is a number; expected a string",
            ),
            (
                vec![
                    ("id", s("a")),
                    ("text", s("x")),
                    ("title", FieldValue::Other("int".into())),
                ],
                true,
                "document `a`: the field `title` is int; expected a string",
            ),
            (
                vec![("id", s("a")), ("text", s(" ")), ("title", s(""))],
                false,
                "document `a` has an empty text and no title: nothing to fingerprint",
            ),
        ];
        for (record, wrong_type, message) in cases {
            let e = error(&record);
            assert!(e.message.contains(message), "{:?} -> {}", record, e.message);
            assert_eq!(e.wrong_type, wrong_type, "{}", e.message);
        }
        // Python names its keyword argument, not a flag, and its record a document.
        let e = check(&[("id", s("a"))], FrontEnd::Python).unwrap_err();
        assert!(
            e.message.contains("(the document's fields: `id`)")
                && e.message.contains("fields={\"text\": ...}"),
            "{}",
            e.message
        );
    }

    #[test]
    fn memory_budgets_are_checked_in_the_front_end_s_words() {
        let small = check_memory(FrontEnd::CommandLine, 10, None).unwrap_err();
        assert!(
            small.to_string().starts_with("--memory-mb 10 is too small"),
            "{small}"
        );
        let small = check_memory(FrontEnd::Python, 10, Some(1)).unwrap_err();
        assert!(
            small.to_string().starts_with("memory_mb=10 is too small"),
            "{small}"
        );
        let large = check_memory(FrontEnd::Python, 4096 * 3, Some(2)).unwrap_err();
        assert!(
            large.to_string().contains("more than tantivy can use here"),
            "{large}"
        );
        assert!(check_memory(FrontEnd::Python, 4000, Some(2)).is_ok());
        assert!(matches!(
            check_memory(FrontEnd::Python, 100, Some(0)),
            Err(Error::Setting(m)) if m == "threads=0 must be at least 1"
        ));
    }
}
