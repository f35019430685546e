//! The `neardup` binary's store module (`src/bin/neardup/store.rs`), compiled into the binding
//! so that Python creates and opens exactly the command line's indexes: one definition of the
//! schema, the languages and the settings kept in the library's record, not a copy that could
//! drift. Below are the four command-line types that module names, as small as it needs them.
#![allow(dead_code)]

use tantivy_simhash::Error;

/// Which document keys hold what (the command line's `--id-field` and friends).
pub(crate) mod input {
    #[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
}

/// The dedup policies by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DedupPolicy {
    Off,
    Reject,
    Tag,
    Replace,
}

const POLICIES: [DedupPolicy; 4] = [
    DedupPolicy::Tag,
    DedupPolicy::Reject,
    DedupPolicy::Replace,
    DedupPolicy::Off,
];

impl DedupPolicy {
    pub(crate) fn to_policy(self) -> tantivy_simhash::Policy {
        match self {
            DedupPolicy::Off => tantivy_simhash::Policy::Off,
            DedupPolicy::Reject => tantivy_simhash::Policy::Reject,
            DedupPolicy::Tag => tantivy_simhash::Policy::Tag,
            DedupPolicy::Replace => tantivy_simhash::Policy::Replace,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            DedupPolicy::Off => "off",
            DedupPolicy::Reject => "reject",
            DedupPolicy::Tag => "tag",
            DedupPolicy::Replace => "replace",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<Self> {
        POLICIES.into_iter().find(|p| p.name() == name)
    }
}

/// Why a store operation failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// A bad setting (unknown language, k no layout supports): `ValueError`.
    Usage(String),
    /// A library error: `tantivy_simhash.Error`.
    Error(Error),
    /// A problem of the directory or its record: `tantivy_simhash.Error`.
    Message(String),
    /// Not produced by the store; kept for the module's matches.
    BrokenPipe,
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Error(e)
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Error(Error::Io(e))
    }
}

impl From<tantivy::TantivyError> for Failure {
    fn from(e: tantivy::TantivyError) -> Self {
        Failure::Error(Error::Tantivy(e))
    }
}

pub(crate) type CliResult<T> = std::result::Result<T, Failure>;

#[path = "../../src/bin/neardup/store.rs"]
pub(crate) mod store;
