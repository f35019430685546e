//! The crate's one error type.

use std::path::PathBuf;

/// Everything that can go wrong in this crate.
///
/// Each message says what was found, what was expected and what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A [`BlockLayout`](crate::BlockLayout) or [`Scheme`](crate::Scheme) parameter is out of range.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),

    /// An index was built with another scheme, layout, match rule or key storage than the one it
    /// is opened with.
    #[error(
        "index mismatch: the index records {what} `{found}`, but `{expected}` was requested; \
         open it with NearDupIndex::open_recorded (the configuration it records) or with the \
         settings it was built with, or rebuild it"
    )]
    IndexMismatch {
        /// Which setting differs ("scheme", "layout", ...).
        what: &'static str,
        /// What the index records.
        found: String,
        /// What the caller asked for.
        expected: String,
    },

    /// The index's two records of how it was built (the record file and the last commit's
    /// payload) disagree: one was edited or copied from another index.
    #[error(
        "the index's two records of its {what} disagree: the record file says `{file}`, the \
         last commit's payload says `{payload}`; one was edited or copied from another index: \
         restore the record file (the payload is written by every commit), or rebuild the index"
    )]
    RecordConflict {
        /// Which setting differs ("scheme", "layout", ...).
        what: &'static str,
        /// What the record file says.
        file: String,
        /// What the last commit's payload says.
        payload: String,
    },

    /// A segment's near-duplicate file (the segment component) is truncated or damaged.
    #[error(
        "the near-duplicate data of segment file {file} is damaged: {problem}; restore the \
         index from a backup, or rebuild it (`neardup index` into a new directory, or re-add \
         the documents with a DedupWriter)"
    )]
    DamagedFile {
        /// The file.
        file: String,
        /// What is wrong with it.
        problem: String,
    },

    /// The index was written by an older version of this crate, in a format this version no
    /// longer reads.
    #[error(
        "{0}: the index was built by an older tantivy-simhash; rebuild it with this version \
         (`neardup index` into a new directory, or re-add the documents with a DedupWriter)"
    )]
    OldFormat(String),

    /// The schema lacks a field this crate needs, or the field has the wrong type or options.
    #[error("schema field `{field}`: {problem}")]
    Schema {
        /// The field's name.
        field: String,
        /// What is wrong and how to fix it.
        problem: String,
    },

    /// A document is missing a value the operation needs (for example the user id).
    #[error("document: {0}")]
    Document(String),

    /// A document's id is taken and the writer's [`IdPolicy`](crate::IdPolicy) is `Report`:
    /// nothing was written.
    #[error(
        "document id `{id}` is already in the index{}; nothing was written (the writer's id \
         policy is `report`): give the document another id, delete the old one first, or use \
         the id policy `replace` (the new version replaces the old) or `keep` (skip it)",
        if *replaced { " (a document that replaced it under Policy::Replace is)" } else { "" }
    )]
    IdTaken {
        /// The id.
        id: String,
        /// Whether the id is taken as one a live document replaced under
        /// [`Policy::Replace`](crate::Policy::Replace).
        replaced: bool,
    },

    /// Malformed input data (a JSON line, a table file), with where it was found.
    #[error("{path}:{line}: {message}")]
    Input {
        /// The file.
        path: PathBuf,
        /// The 1-based line number.
        line: u64,
        /// What is wrong.
        message: String,
    },

    /// A setting given to a [`store`](crate::app) is invalid (an unknown language, a `k` no
    /// layout supports): the caller's mistake, to fix in what was asked. The message is the
    /// whole text.
    #[error("{0}")]
    Setting(String),

    /// A [`store`](crate::app)'s directory or record cannot be used as asked (not such an
    /// index, being created by another process, a fixed setting asked to change, a damaged
    /// record). The message is the whole text.
    #[error("{0}")]
    Store(String),

    /// A request to a [`store`](crate::app) that cannot be answered as asked: a query that
    /// does not parse, an id no document has. The caller's to change; the message is the whole
    /// text.
    #[error("{0}")]
    Request(String),

    /// An error from tantivy.
    #[error("tantivy: {0}")]
    Tantivy(#[from] tantivy::TantivyError),

    /// An I/O error.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),

    /// A JSON (de)serialisation error.
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;

/// A crate error met inside one of tantivy's traits (a collector, a query, the segment
/// component) travels as tantivy's: tantivy's own errors unchanged, a wrong argument or schema
/// as `InvalidArgument`, anything else (a damaged or old file, I/O) as `InternalError`, each
/// with this crate's message.
impl From<Error> for tantivy::TantivyError {
    fn from(err: Error) -> Self {
        match err {
            Error::Tantivy(e) => e,
            e @ (Error::Schema { .. }
            | Error::InvalidConfig(_)
            | Error::Setting(_)
            | Error::Request(_)) => tantivy::TantivyError::InvalidArgument(e.to_string()),
            other => tantivy::TantivyError::InternalError(other.to_string()),
        }
    }
}
