//! `Writer`: documents from Python dicts into the index through the library's `DedupWriter`,
//! with the command line's rules (by default an id already in the index is skipped: the
//! library's `IdPolicy::KeepFirst`; a document needs an id and a text or title).

use crate::store::Store;
use crate::Failure;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyMapping, PyString};
use std::sync::{Arc, Mutex, MutexGuard};
use tantivy_simhash::store::{outcome_name, FieldMap, IngestCounts};
use tantivy_simhash::{DedupWriter, IdPolicy, Outcome as LibOutcome, Policy};

/// A document read from a dict.
pub(crate) struct InputDoc {
    id: String,
    title: String,
    text: String,
    host: String,
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "an unknown type".into())
}

/// The value of `key` in a dict or any mapping (`None` when missing or None).
fn get<'py>(doc: &Bound<'py, PyAny>, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    let value = if let Ok(dict) = doc.cast::<PyDict>() {
        dict.get_item(key)?
    } else if let Ok(mapping) = doc.cast::<PyMapping>() {
        match mapping.get_item(key) {
            Ok(v) => Some(v),
            Err(e) if e.is_instance_of::<pyo3::exceptions::PyKeyError>(doc.py()) => None,
            Err(e) => return Err(e),
        }
    } else {
        return Err(PyTypeError::new_err(format!(
            "a document must be a dict (or another mapping) with the keys id and text, found {}",
            type_name(doc)
        )));
    };
    Ok(value.filter(|v| !v.is_none()))
}

fn optional_str(doc: &Bound<'_, PyAny>, key: &str, id: &str) -> PyResult<String> {
    match get(doc, key)? {
        None => Ok(String::new()),
        Some(v) => match v.cast::<PyString>() {
            Ok(s) => Ok(s.to_cow()?.into_owned()),
            Err(_) => Err(PyTypeError::new_err(format!(
                "document `{id}`: `{key}` is {}; expected a str",
                type_name(&v)
            ))),
        },
    }
}

/// Reads a document the way the command line reads a JSON line: the id is a non-empty str or
/// an int; the text a str; title and host optional strs; text or title must hold something.
pub(crate) fn read_doc(doc: &Bound<'_, PyAny>, fields: &FieldMap) -> PyResult<InputDoc> {
    let id = read_id(doc, &fields.id)?;
    let text = read_text(doc, &fields.text, &id)?;
    let title = optional_str(doc, &fields.title, &id)?;
    let host = optional_str(doc, &fields.host, &id)?;
    if text.trim().is_empty() && title.trim().is_empty() {
        return Err(PyValueError::new_err(format!(
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

/// The id under `key`: a non-empty str, or an int's decimal text (not a bool).
fn read_id(doc: &Bound<'_, PyAny>, key: &str) -> PyResult<String> {
    let Some(v) = get(doc, key)? else {
        return Err(PyValueError::new_err(format!(
            "the document has no `{key}`; every document needs an id (a str or an int)"
        )));
    };
    if let Ok(s) = v.cast::<PyString>() {
        let s = s.to_cow()?;
        if s.trim().is_empty() {
            return Err(PyValueError::new_err(format!(
                "the document's `{key}` is empty"
            )));
        }
        Ok(s.to_string())
    } else if v.is_instance_of::<pyo3::types::PyInt>() && !v.is_instance_of::<pyo3::types::PyBool>()
    {
        Ok(v.str()?.to_cow()?.into_owned())
    } else {
        Err(PyTypeError::new_err(format!(
            "the document's `{key}` is {}; expected a str or an int",
            type_name(&v)
        )))
    }
}

/// The text of document `id` under `key`: a str, which every document needs.
fn read_text(doc: &Bound<'_, PyAny>, key: &str, id: &str) -> PyResult<String> {
    let Some(v) = get(doc, key)? else {
        return Err(PyValueError::new_err(format!(
            "document `{id}` has no `{key}`"
        )));
    };
    match v.cast::<PyString>() {
        Ok(s) => Ok(s.to_cow()?.into_owned()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "document `{id}`: `{key}` is {}; expected a str",
            type_name(&v)
        ))),
    }
}

/// What happened to a document given to ``Writer.add``.
///
/// ``status`` is ``"added"``, ``"tagged"`` (added in the group of a near-duplicate),
/// ``"replaced"`` (added; its near-duplicates, listed in ``replaced``, were deleted),
/// ``"rejected"`` (not added: ``of`` is its nearest near-duplicate) or ``"skipped"`` (not
/// added, ``ids="keep"``: its id is already in the index, or a document that replaced it is).
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
            LibOutcome::Added { .. } | LibOutcome::IdTaken { .. } => {}
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

struct WriterState {
    writer: DedupWriter,
}

impl WriterState {
    /// Adds `docs` in order (fingerprinted in parallel) under the writer's policies.
    fn add(
        &mut self,
        store: &Store,
        docs: Vec<InputDoc>,
    ) -> Result<Vec<(String, LibOutcome)>, Failure> {
        let (batch, ids): (Vec<_>, Vec<_>) = docs
            .into_iter()
            .map(|doc| {
                let d = store
                    .fields
                    .document(&doc.id, &doc.title, &doc.text, &doc.host);
                (d, doc.id)
            })
            .unzip();
        let added = match <[_; 1]>::try_from(batch) {
            Ok([d]) => vec![self.writer.add_document(d)?],
            Err(batch) => self.writer.add_documents(batch)?,
        };
        Ok(ids.into_iter().zip(added).collect())
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
    state: Mutex<Option<WriterState>>,
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
        if memory_mb < 15 {
            return Err(Failure::Value(format!(
                "memory_mb={memory_mb} is too small: tantivy needs at least 15 MB per indexing \
                 thread"
            )));
        }
        let budget = memory_mb << 20;
        let writer = match threads {
            Some(0) => return Err(Failure::Value("threads must be at least 1".into())),
            Some(n) => store.index.writer_with_num_threads(n, budget, policy)?,
            None => store.index.writer(budget, policy)?,
        }
        .with_id_policy(id_policy);
        Ok(Writer {
            store,
            policy: policy_name.to_string(),
            id_policy,
            fields,
            state: Mutex::new(Some(WriterState { writer })),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Option<WriterState>> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs `f` on the open writer state, with the GIL released.
    fn with_state<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut WriterState, &Store) -> Result<T, Failure> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let mut guard = self.lock();
            let state = guard.as_mut().ok_or_else(closed)?;
            f(state, &self.store)
        })
        .map_err(PyErr::from)
    }

    fn add_batch(
        &self,
        py: Python<'_>,
        docs: Vec<InputDoc>,
    ) -> PyResult<Vec<(String, LibOutcome)>> {
        self.with_state(py, |state, store| state.add(store, docs))
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
        let mut counts = IngestCounts::default();
        let mut skipped_bad = 0u64;
        let mut batch = Vec::with_capacity(batch_size);
        let flush = |batch: &mut Vec<InputDoc>, counts: &mut IngestCounts, bad: u64| {
            let n = batch.len() as u64;
            for (_, outcome) in self.add_batch(py, std::mem::take(batch))? {
                counts.tally(&outcome);
            }
            progress.update(py, counts.documents() + bad, n, total)
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
                flush(&mut batch, &mut counts, skipped_bad)?;
            }
            Ok(())
        });
        // What was read before a failure is added too, so the error leaves no half batch.
        let flushed = flush(&mut batch, &mut counts, skipped_bad);
        progress.close(py)?;
        result?;
        flushed?;
        Ok(Summary::new(counts, skipped_bad))
    }

    /// Makes every document added so far durable and visible to searches.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        self.with_state(py, |state, _| Ok(state.writer.commit().map(|_| ())?))?;
        self.store.remember(&self.policy, &self.fields)?;
        Ok(())
    }

    /// Discards every document added since the last commit.
    fn rollback(&self, py: Python<'_>) -> PyResult<()> {
        self.with_state(py, |state, _| Ok(state.writer.rollback().map(|_| ())?))
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
        self.with_state(py, |state, _| Ok(state.writer.ids_replaced()))
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
