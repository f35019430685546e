//! `Writer`: documents from Python dicts into the index through the library's `DedupWriter`,
//! with the command line's rules (by default an id already in the index is skipped: the
//! library's `IdPolicy::KeepFirst`; a document needs an id and a text or title).

use crate::store::Store;
use crate::Failure;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyMapping, PyString};
use std::sync::{Arc, Mutex, MutexGuard};
use tantivy_simhash::app::{
    outcome_name, FieldMap, FieldValue, FrontEnd, Ingest, IngestCounts, InputDoc,
};
use tantivy_simhash::{IdPolicy, Outcome as LibOutcome, Policy};

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "an unknown type".into())
}

/// The value of `key` in a dict or any mapping (`None` when missing).
fn get<'py>(doc: &Bound<'py, PyAny>, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    if let Ok(dict) = doc.cast::<PyDict>() {
        return dict.get_item(key);
    }
    match doc.cast::<PyMapping>()?.get_item(key) {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyKeyError>(doc.py()) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The value of `key` in the application layer's terms: a str, an int (not a bool) as its
/// decimal text, or the name of another type.
fn field_value(doc: &Bound<'_, PyAny>, key: &str) -> PyResult<FieldValue> {
    let Some(v) = get(doc, key)? else {
        return Ok(FieldValue::Absent);
    };
    Ok(if v.is_none() {
        FieldValue::Null
    } else if let Ok(s) = v.cast::<PyString>() {
        FieldValue::Str(s.to_cow()?.into_owned())
    } else if v.is_instance_of::<pyo3::types::PyInt>() && !v.is_instance_of::<pyo3::types::PyBool>()
    {
        FieldValue::Integer(v.str()?.to_cow()?.into_owned())
    } else {
        FieldValue::Other(type_name(&v))
    })
}

/// Reads a document the way the command line reads a JSON line ([`InputDoc::from_record`]):
/// a wrong type raises `TypeError`, a missing or bad value `ValueError`.
pub(crate) fn read_doc(doc: &Bound<'_, PyAny>, fields: &FieldMap) -> PyResult<InputDoc> {
    if doc.cast::<PyDict>().is_err() && doc.cast::<PyMapping>().is_err() {
        return Err(PyTypeError::new_err(format!(
            "a document must be a dict (or another mapping) with the keys id and text, found {}",
            type_name(doc)
        )));
    }
    // A mapping whose lookup raises: the first such error, raised after the check.
    let mut raised: Option<PyErr> = None;
    let checked = InputDoc::from_record(
        fields,
        FrontEnd::Python,
        |key| {
            field_value(doc, key).unwrap_or_else(|e| {
                raised.get_or_insert(e);
                FieldValue::Absent
            })
        },
        || {
            let keys = doc.call_method0("keys").and_then(|k| {
                k.try_iter()?
                    .map(|key| key.and_then(|key| Ok(key.str()?.to_cow()?.into_owned())))
                    .collect::<PyResult<Vec<String>>>()
            });
            keys.unwrap_or_default()
        },
    );
    if let Some(e) = raised {
        return Err(e);
    }
    checked.map_err(|e| {
        if e.wrong_type {
            PyTypeError::new_err(e.message)
        } else {
            PyValueError::new_err(e.message)
        }
    })
}

/// What happened to a document given to ``Writer.add``.
///
/// ``status`` is ``"added"``, ``"tagged"`` (added in the group of a near-duplicate),
/// ``"replaced"`` (added; its near-duplicates, listed in ``replaced``, were deleted),
/// ``"rejected"`` (not added: ``of`` is its nearest near-duplicate) or ``"skipped"`` (not
/// added, ``ids="keep"``: its id is already in the index, or a document that replaced it is).
/// ``fingerprint`` is the document's, or ``None`` for a skipped document and under
/// ``policy="off"``, where tantivy's indexing thread signs the document as it indexes its text
/// (``Index.fingerprint_of`` reads it after the commit).
#[pyclass(module = "tantivy_simhash", frozen, get_all)]
#[derive(Clone)]
pub(crate) struct Outcome {
    status: &'static str,
    id: String,
    fingerprint: Option<u64>,
    of: Option<String>,
    distance: Option<u32>,
    resemblance: Option<f32>,
    group: Option<String>,
    replaced: Vec<String>,
}

#[pymethods]
impl Outcome {
    /// Whether the document is now in the index.
    #[getter]
    fn added(&self) -> bool {
        matches!(self.status, "added" | "tagged" | "replaced")
    }

    fn __repr__(&self) -> String {
        let mut s = format!("Outcome(status={:?}, id={:?}", self.status, self.id);
        if let Some(of) = &self.of {
            s.push_str(&format!(", of={of:?}"));
        }
        if let Some(d) = self.distance {
            s.push_str(&format!(", distance={d}"));
        }
        if let Some(r) = self.resemblance {
            s.push_str(&format!(", resemblance={r:.2}"));
        }
        if let Some(g) = &self.group {
            s.push_str(&format!(", group={g:?}"));
        }
        if !self.replaced.is_empty() {
            s.push_str(&format!(", replaced={:?}", self.replaced));
        }
        s.push(')');
        s
    }
}

impl Outcome {
    fn from_lib(id: String, outcome: LibOutcome) -> Self {
        let fingerprint = outcome.fingerprint().map(|f| f.0);
        let mut o = Outcome {
            status: outcome_name(&outcome),
            id,
            fingerprint,
            of: None,
            distance: outcome.evidence().map(|e| e.distance()),
            resemblance: outcome.evidence().and_then(|e| e.resemblance()),
            group: None,
            replaced: Vec::new(),
        };
        match outcome {
            LibOutcome::Added { .. } | LibOutcome::Queued | LibOutcome::IdTaken { .. } => {}
            LibOutcome::Duplicate { of, .. } => o.of = Some(of),
            LibOutcome::Tagged { group, of, .. } => {
                o.group = Some(group);
                o.of = Some(of);
            }
            LibOutcome::Replaced { replaced, .. } => {
                o.of = replaced.first().cloned();
                o.replaced = replaced;
            }
        }
        o
    }
}

/// Counts of what ``Writer.add_many`` did.
#[pyclass(module = "tantivy_simhash", frozen, get_all)]
#[derive(Clone, Default)]
pub(crate) struct Summary {
    /// Documents read.
    documents: u64,
    /// Documents stored (tagged and replacing ones included).
    added: u64,
    /// Stored documents with a near-duplicate already indexed (policy "tag").
    tagged: u64,
    /// Stored documents that replaced near-duplicates (policy "replace").
    replacing: u64,
    /// Documents deleted because a newer near-duplicate replaced them.
    replaced: u64,
    /// Documents not stored: near-duplicates of documents already indexed (policy "reject").
    rejected: u64,
    /// Documents not stored because their id is already in the index (``ids="keep"``).
    skipped_existing_id: u64,
    /// Documents not stored because a newer near-duplicate replaced their id (``policy="replace"``
    /// in an earlier run over the same input): adding them again would bring the old copy back.
    skipped_replaced_id: u64,
    /// Bad documents skipped (``skip_bad=True``).
    skipped_bad: u64,
}

#[pymethods]
impl Summary {
    fn __repr__(&self) -> String {
        format!(
            "Summary(documents={}, added={}, tagged={}, replacing={}, replaced={}, rejected={}, \
             skipped_existing_id={}, skipped_replaced_id={}, skipped_bad={})",
            self.documents,
            self.added,
            self.tagged,
            self.replacing,
            self.replaced,
            self.rejected,
            self.skipped_existing_id,
            self.skipped_replaced_id,
            self.skipped_bad
        )
    }
}

impl Summary {
    /// The library's counts, with the bad documents skipped.
    fn new(counts: IngestCounts, skipped_bad: u64) -> Self {
        Summary {
            documents: counts.documents(),
            added: counts.added,
            tagged: counts.tagged,
            replacing: counts.replacing,
            replaced: counts.replaced,
            rejected: counts.rejected,
            skipped_existing_id: counts.skipped_existing_id,
            skipped_replaced_id: counts.skipped_replaced_id,
            skipped_bad,
        }
    }
}

/// Adds documents to an index under a dedup policy; made by ``Index.writer``.
///
/// Use it as a context manager: the ``with`` block commits when it ends normally and rolls back
/// (discards the uncommitted documents) when it ends with an exception. Only one writer can be
/// open on an index at a time (across processes too).
#[pyclass(module = "tantivy_simhash", frozen)]
pub(crate) struct Writer {
    store: Arc<Store>,
    policy: String,
    id_policy: IdPolicy,
    fields: FieldMap,
    state: Mutex<Option<Ingest>>,
}

impl Writer {
    pub(crate) fn open(
        store: Arc<Store>,
        policy_name: &str,
        policy: Policy,
        id_policy: IdPolicy,
        fields: FieldMap,
        memory_mb: usize,
        threads: Option<usize>,
    ) -> Result<Writer, Failure> {
        let ingest = store.ingest(FrontEnd::Python, memory_mb, threads, policy, id_policy)?;
        Ok(Writer {
            store,
            policy: policy_name.to_string(),
            id_policy,
            fields,
            state: Mutex::new(Some(ingest)),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Option<Ingest>> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs `f` on the open writer state, with the GIL released.
    fn with_state<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Ingest) -> Result<T, Failure> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let mut guard = self.lock();
            let ingest = guard.as_mut().ok_or_else(closed)?;
            f(ingest)
        })
        .map_err(PyErr::from)
    }

    fn add_batch(
        &self,
        py: Python<'_>,
        docs: Vec<InputDoc>,
    ) -> PyResult<Vec<(String, LibOutcome)>> {
        self.with_state(py, |ingest| Ok(ingest.add(docs)?))
    }

    fn counts(&self, py: Python<'_>) -> PyResult<IngestCounts> {
        self.with_state(py, |ingest| Ok(ingest.counts()))
    }
}

fn closed() -> Failure {
    Failure::Value("the writer is closed; open another with index.writer()".into())
}

/// Calls `f` on each row of `docs`: the rows of a pyarrow Table or RecordBatch (as dicts),
/// else the items of any iterable.
fn for_each_row<'py>(
    docs: &Bound<'py, PyAny>,
    mut f: impl FnMut(Bound<'py, PyAny>) -> PyResult<()>,
) -> PyResult<()> {
    if docs.hasattr("to_batches")? && docs.hasattr("schema")? {
        for batch in docs.call_method0("to_batches")?.try_iter()? {
            for row in batch?.call_method0("to_pylist")?.try_iter()? {
                f(row?)?;
            }
        }
        return Ok(());
    }
    if docs.hasattr("to_pylist")? && docs.hasattr("schema")? {
        for row in docs.call_method0("to_pylist")?.try_iter()? {
            f(row?)?;
        }
        return Ok(());
    }
    if docs.cast::<PyDict>().is_ok() || docs.cast::<PyString>().is_ok() {
        return Err(PyTypeError::new_err(format!(
            "add_many takes an iterable of documents (dicts), found a {}; use add() for one \
             document",
            type_name(docs)
        )));
    }
    for row in docs.try_iter()? {
        f(row?)?;
    }
    Ok(())
}

/// Progress reporting for `add_many`: nothing, a callable, or a tqdm bar.
enum Progress {
    None,
    Callback(Py<PyAny>),
    Bar(Py<PyAny>),
}

impl Progress {
    fn new(
        py: Python<'_>,
        progress: Option<&Bound<'_, PyAny>>,
        total: Option<usize>,
    ) -> PyResult<Self> {
        let Some(p) = progress else {
            return Ok(Progress::None);
        };
        if p.is_none() {
            return Ok(Progress::None);
        }
        if p.is_instance_of::<pyo3::types::PyBool>() {
            if !p.is_truthy()? {
                return Ok(Progress::None);
            }
            let tqdm = py.import("tqdm").map_err(|_| {
                pyo3::exceptions::PyImportError::new_err(
                    "progress=True shows a tqdm bar, and tqdm is not installed: pip install \
                     tqdm, or pass a callable progress(done, total)",
                )
            })?;
            let kwargs = PyDict::new(py);
            kwargs.set_item("total", total)?;
            kwargs.set_item("unit", "doc")?;
            let bar = tqdm.getattr("tqdm")?.call((), Some(&kwargs))?;
            return Ok(Progress::Bar(bar.unbind()));
        }
        if p.is_callable() {
            return Ok(Progress::Callback(p.clone().unbind()));
        }
        Err(PyTypeError::new_err(format!(
            "progress must be None, True (a tqdm bar) or a callable progress(done, total), \
             found {}",
            type_name(p)
        )))
    }

    fn update(&self, py: Python<'_>, done: u64, step: u64, total: Option<usize>) -> PyResult<()> {
        match self {
            Progress::None => Ok(()),
            Progress::Callback(f) => f.call1(py, (done, total)).map(|_| ()),
            Progress::Bar(bar) => bar.call_method1(py, "update", (step,)).map(|_| ()),
        }
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if let Progress::Bar(bar) = self {
            bar.call_method0(py, "close")?;
        }
        Ok(())
    }
}

#[pymethods]
impl Writer {
    /// Adds one document (a dict with ``id``, ``text`` and optionally ``title`` and ``host``)
    /// and returns what happened to it. Visible to searches after ``commit()``; near-duplicate
    /// checks see it at once.
    fn add(&self, py: Python<'_>, doc: &Bound<'_, PyAny>) -> PyResult<Outcome> {
        let doc = read_doc(doc, &self.fields)?;
        let mut outcomes = self.add_batch(py, vec![doc])?;
        let (id, outcome) = outcomes
            .pop()
            .ok_or_else(|| Failure::Index("the writer returned no outcome".into()))?;
        Ok(Outcome::from_lib(id, outcome))
    }

    /// Adds every document of ``docs`` (any iterable of dicts, or a pyarrow Table or
    /// RecordBatch), ``batch_size`` at a time fingerprinted in parallel, and returns the counts.
    ///
    /// ``progress``: ``True`` for a tqdm bar, or a callable ``progress(done, total)`` called
    /// after each batch (``total`` is None when ``docs`` has no length). A bad document raises
    /// (the documents before it stay added, uncommitted) unless ``skip_bad`` is true, which
    /// counts it in ``skipped_bad`` instead.
    #[pyo3(signature = (docs, *, batch_size = 256, progress = None, skip_bad = false))]
    fn add_many(
        &self,
        py: Python<'_>,
        docs: &Bound<'_, PyAny>,
        batch_size: usize,
        progress: Option<&Bound<'_, PyAny>>,
        skip_bad: bool,
    ) -> PyResult<Summary> {
        if batch_size == 0 {
            return Err(PyValueError::new_err("batch_size must be at least 1"));
        }
        let total = docs.len().ok();
        let progress = Progress::new(py, progress, total)?;
        let before = self.counts(py)?;
        let mut done = 0u64;
        let mut skipped_bad = 0u64;
        let mut batch = Vec::with_capacity(batch_size);
        let mut flush = |batch: &mut Vec<InputDoc>, bad: u64| {
            let n = batch.len() as u64;
            self.add_batch(py, std::mem::take(batch))?;
            done += n;
            progress.update(py, done + bad, n, total)
        };
        let result = for_each_row(docs, |row| {
            match read_doc(&row, &self.fields) {
                Ok(doc) => batch.push(doc),
                Err(e)
                    if skip_bad
                        && (e.is_instance_of::<PyTypeError>(py)
                            || e.is_instance_of::<PyValueError>(py)) =>
                {
                    skipped_bad += 1;
                }
                Err(e) => return Err(e),
            }
            if batch.len() >= batch_size {
                flush(&mut batch, skipped_bad)?;
            }
            Ok(())
        });
        // What was read before a failure is added too, so the error leaves no half batch.
        let flushed = flush(&mut batch, skipped_bad);
        progress.close(py)?;
        result?;
        flushed?;
        let counts = self.counts(py)?.since(&before);
        Ok(Summary::new(counts, skipped_bad))
    }

    /// Makes every document added so far durable and visible to searches.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        self.with_state(py, |ingest| Ok(ingest.commit()?))?;
        self.store.remember(&self.policy, &self.fields)?;
        Ok(())
    }

    /// Discards every document added since the last commit.
    fn rollback(&self, py: Python<'_>) -> PyResult<()> {
        self.with_state(py, |ingest| Ok(ingest.rollback()?))
    }

    /// Closes the writer without committing (uncommitted documents are lost, as with
    /// tantivy); closing twice is allowed.
    fn close(&self, py: Python<'_>) {
        let state = py.detach(|| self.lock().take());
        // Dropping the tantivy writer waits for its threads: without the GIL.
        py.detach(move || drop(state));
    }

    /// The policy this writer applies: "tag", "reject", "replace" or "off".
    #[getter]
    fn policy(&self) -> String {
        self.policy.clone()
    }

    /// What the writer does with a document whose id is taken: "keep", "replace", "report" or
    /// "off".
    #[getter]
    fn ids(&self) -> &'static str {
        self.id_policy.name()
    }

    /// The old versions deleted so far because a document with their id was added
    /// (``ids="replace"``).
    #[getter]
    fn ids_replaced(&self, py: Python<'_>) -> PyResult<u64> {
        self.with_state(py, |ingest| Ok(ingest.writer().ids_replaced()))
    }

    /// Whether the writer is closed.
    #[getter]
    fn closed(&self, py: Python<'_>) -> bool {
        py.detach(|| self.lock().is_none())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (exc_type, _exc_value = None, _traceback = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc_value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let failed = exc_type.is_some_and(|t| !t.is_none());
        let is_open = !self.closed(py);
        let result = if !is_open {
            Ok(())
        } else if failed {
            self.rollback(py)
        } else {
            self.commit(py)
        };
        self.close(py);
        result.map(|()| false)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Writer(index={:?}, policy={:?}{})",
            self.store.dir.display().to_string(),
            self.policy,
            if self.closed(py) { ", closed" } else { "" }
        )
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Writer>()?;
    m.add_class::<Outcome>()?;
    m.add_class::<Summary>()?;
    Ok(())
}
