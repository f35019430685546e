//! Creating and opening the command line's indexes from Python, over the library's application
//! layer ([`tantivy_simhash::app`], the one the command line uses), and the settings a writer
//! records as the next run's defaults (field mapping and policy, in the library's record, as
//! `neardup index` does).

use crate::Failure;
use std::path::Path;
use std::sync::Mutex;
use tantivy_simhash::app::{self, FieldMap, Requested, StoreSettings};
use tantivy_simhash::Policy;

/// An open index: the command line's store and its current settings.
pub(crate) struct Store {
    inner: app::Store,
    /// Changes when a writer commits with another policy or field mapping.
    settings: Mutex<StoreSettings>,
}

impl std::ops::Deref for Store {
    type Target = app::Store;

    fn deref(&self) -> &app::Store {
        &self.inner
    }
}

impl From<app::Store> for Store {
    fn from(inner: app::Store) -> Self {
        let settings = Mutex::new(inner.record.clone());
        Store { inner, settings }
    }
}

/// The policy called `name`, or a message listing the names.
pub(crate) fn policy_named(name: &str) -> Result<Policy, Failure> {
    Policy::from_name(name).ok_or_else(|| {
        Failure::Value(format!(
            "unknown policy `{name}`; expected one of tag, reject, replace, off"
        ))
    })
}

impl Store {
    /// The current settings (language, k, field mapping, policy).
    pub(crate) fn settings(&self) -> StoreSettings {
        self.settings
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Records `policy` and `fields` as the defaults of the next run when they changed.
    pub(crate) fn remember(&self, policy: &str, fields: &FieldMap) -> Result<(), Failure> {
        let mut settings = self
            .settings
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if settings.policy == policy && settings.fields == *fields {
            return Ok(());
        }
        settings.policy = policy.to_string();
        settings.fields = fields.clone();
        Ok(app::write_record(&self.inner.index, &settings)?)
    }
}

/// The scheme for a language name (the command line's `--language`), or why there is none.
pub(crate) fn scheme_for(language: &str) -> Result<tantivy_simhash::Scheme, Failure> {
    Ok(app::scheme_for(language)?)
}

/// Opens an index made by [`create`] or by `neardup index`.
pub(crate) fn open(dir: &Path) -> Result<Store, Failure> {
    Ok(app::open(dir)?.into())
}

/// Creates an index in `dir`, which must be missing or empty.
///
/// Errors: `dir` is a file or a non-empty directory; an unknown language or policy; a k no
/// layout supports.
pub(crate) fn create(dir: &Path, language: &str, k: u32, policy: &str) -> Result<Store, Failure> {
    let policy = policy_named(policy)?;
    if dir.is_file() {
        return Err(Failure::Value(format!(
            "{} is a file; an index needs a directory",
            dir.display()
        )));
    }
    let not_empty = std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some());
    if not_empty {
        let what = if dir.join("meta.json").exists() {
            "already holds an index: open it with Index.open(path)"
        } else {
            "is not empty; create an index in a new or empty directory"
        };
        return Err(Failure::Value(format!("{} {what}", dir.display())));
    }
    let requested = Requested {
        language: Some(language.to_string()),
        k: Some(k),
        policy: Some(policy),
        ..Requested::default()
    };
    let (store, _created) = app::open_or_create(dir, &requested)?;
    Ok(store.into())
}
