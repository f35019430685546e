//! `Index`: an on-disk index, opened or created from Python, and its read operations
//! (search, similar, pairs, clusters, mirrors) over the library's public API.

use crate::results::{Cluster, Hit, Match, Member};
use crate::store::{self, Store};
use crate::writer::Writer;
use crate::{Failure, Scheme};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex, RwLock};
use tantivy_simhash::app::{Collapse, FieldMap, LeaderChoice, Search, SearchSettings, SimilarTo};
use tantivy_simhash::ClusterMode;
use tantivy_simhash::IdPolicy;

/// An index directory in the format of the ``neardup`` command line: documents with an id, a
/// text and optionally a title and a host, fingerprinted with a scheme fixed at creation.
///
/// ``Index.create(path, ...)`` makes one, ``Index.open(path)`` opens one (also one built by
/// ``neardup index``). A document's fingerprint is taken from its title and text, joined by a
/// line break. Use it as a context manager, or call ``close()``: a closed index raises
/// ``ValueError`` on use.
#[pyclass(module = "tantivy_simhash", frozen)]
pub(crate) struct Index {
    store: RwLock<Option<Arc<Store>>>,
    /// The searches of recent settings, reused so that they keep their columns open.
    searches: Searches,
}

impl Index {
    fn store(&self) -> PyResult<Arc<Store>> {
        let guard = self
            .store
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        guard.clone().ok_or_else(|| {
            PyValueError::new_err("the index is closed; open it again with Index.open(path)")
        })
    }

    fn wrap(store: Store) -> Index {
        Index {
            store: RwLock::new(Some(Arc::new(store))),
            searches: Searches::default(),
        }
    }
}

/// A pair (id_a, id_b, distance, resemblance estimate or None), or the message of the error
/// that stopped the pairs.
type PairMessage = Result<PairTuple, String>;
type PairTuple = (String, String, u32, Option<f32>);

/// An iterator over the pairs the match rule finds, computed on a thread of their own.
#[pyclass(module = "tantivy_simhash", frozen)]
pub(crate) struct PairIterator {
    rx: Mutex<Receiver<PairMessage>>,
}

#[pymethods]
impl PairIterator {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<PairTuple>> {
        let next = py.detach(|| {
            let rx = self.rx.lock().unwrap_or_else(|p| p.into_inner());
            rx.recv().ok()
        });
        match next {
            None => Ok(None),
            Some(Ok(pair)) => Ok(Some(pair)),
            Some(Err(message)) => Err(crate::Error::new_err(message)),
        }
    }
}

#[pymethods]
impl Index {
    /// Creates an index in ``path`` (a new or empty directory).
    ///
    /// ``language``: ``"auto"`` (words; Chinese segmented by jieba), ``"han-chars"`` or a
    /// stemming language (``"english"``, ``"french"``, ...). ``k``: the largest distance the
    /// index guarantees to find (0 to 9; 3 by default). ``policy``: the default of
    /// ``writer()``. Language and k are fixed for the life of the index.
    #[staticmethod]
    #[pyo3(signature = (path, *, language = "auto", k = 3, policy = "tag"))]
    fn create(
        py: Python<'_>,
        path: PathBuf,
        language: &str,
        k: u32,
        policy: &str,
    ) -> PyResult<Index> {
        let language = language.to_string();
        let policy = policy.to_string();
        let store = py.detach(|| store::create(&path, &language, k, &policy))?;
        Ok(Index::wrap(store))
    }

    /// Opens an index made by ``Index.create`` or ``neardup index``.
    #[staticmethod]
    fn open(py: Python<'_>, path: PathBuf) -> PyResult<Index> {
        let store = py.detach(|| store::open(&path))?;
        Ok(Index::wrap(store))
    }

    /// A writer that adds documents under ``policy`` (``"tag"``, ``"reject"``, ``"replace"``
    /// or ``"off"``; the index's recorded policy by default). ``fields`` maps the document keys
    /// (``{"id": "url", "text": "body"}``: defaults are the recorded mapping, ``id``, ``text``,
    /// ``title``, ``host`` for a new index). ``ids`` says what to do with a document whose id
    /// is taken (tantivy has no primary key): ``"keep"`` skips it (outcome ``"skipped"``; an id
    /// a newer near-duplicate replaced counts as taken, so re-adding the same input adds
    /// nothing), ``"replace"`` deletes the old version and adds the new one, ``"report"`` raises
    /// ``tantivy_simhash.Error`` (nothing written), ``"off"`` adds it again. ``memory_mb`` is
    /// tantivy's indexing memory (at least 15 per thread), ``threads`` its indexing threads.
    #[pyo3(signature = (policy = None, *, ids = "keep", fields = None, memory_mb = 256, threads = None))]
    fn writer(
        &self,
        py: Python<'_>,
        policy: Option<&str>,
        ids: &str,
        fields: Option<&Bound<'_, PyDict>>,
        memory_mb: usize,
        threads: Option<usize>,
    ) -> PyResult<Writer> {
        let id_policy = IdPolicy::from_name(ids).ok_or_else(|| {
            PyValueError::new_err(format!(
                "unknown ids={ids:?}; expected \"keep\" (skip a document whose id is taken), \
                 \"replace\" (the new version replaces the old), \"report\" (raise) or \"off\" \
                 (no id checks)"
            ))
        })?;
        let store = self.store()?;
        let record = store.settings();
        let parsed = store::policy_named(policy.unwrap_or(&record.policy))?;
        let policy_name = parsed.name();
        let mut map: FieldMap = record.fields;
        if let Some(fields) = fields {
            for (key, value) in fields.iter() {
                let key: String = key.extract()?;
                let value: String = value.extract()?;
                let slot = match key.as_str() {
                    "id" => &mut map.id,
                    "text" => &mut map.text,
                    "title" => &mut map.title,
                    "host" => &mut map.host,
                    other => {
                        return Err(PyValueError::new_err(format!(
                            "unknown field `{other}` in fields; expected id, text, title or host"
                        )))
                    }
                };
                *slot = value;
            }
        }
        let writer = py.detach(|| {
            Writer::open(
                store,
                policy_name,
                parsed,
                id_policy,
                map,
                memory_mb,
                threads,
            )
        })?;
        Ok(writer)
    }

    /// The best ``limit`` results for ``query`` (tantivy's query syntax over title and text):
    /// one result per group of near-duplicates when ``collapse``, with the group's size
    /// (exact: one more pass over the matching documents), else single documents. With
    /// ``collapse_field`` (a fast field: ``"host"``, or ``"group"`` for the tags of
    /// ``policy="tag"``), one result per value of that field instead (the best-ranked hit of
    /// each; a document without a value stands alone).
    ///
    /// ``leader`` chooses the hit shown for a group among its hits in the top 64 x ``limit``:
    /// ``"newest"`` (the copy added to the index last) or ``"oldest"`` (added first); None:
    /// the best-ranked one. The group still ranks where its best hit ranks. ``derank=True``
    /// returns one flat list instead: the ``limit`` groups' leaders, then the other hits of
    /// those groups in the top 64 x ``limit`` in rank order (``moved=True``, ``leader_id``
    /// naming their leader; ``group_size`` 1, no members).
    /// Both need ``collapse``; ValueError otherwise, and for a ``leader`` not in the list.
    #[pyo3(signature = (
        query, limit = 10, collapse = true, collapse_field = None, leader = None, derank = false
    ))]
    #[allow(clippy::too_many_arguments)]
    fn search(
        &self,
        py: Python<'_>,
        query: &str,
        limit: usize,
        collapse: bool,
        collapse_field: Option<String>,
        leader: Option<String>,
        derank: bool,
    ) -> PyResult<Vec<Hit>> {
        if limit == 0 {
            return Err(PyValueError::new_err("limit must be at least 1"));
        }
        let leader = match leader.as_deref() {
            None => None,
            Some(name) if LeaderChoice::from_name(name).is_some() => LeaderChoice::from_name(name),
            Some(other) => {
                return Err(PyValueError::new_err(format!(
                    "leader={other:?} is not a leader choice; use \"newest\" (the copy added \
                     last), \"oldest\" (added first) or None (the best-ranked hit)"
                )))
            }
        };
        let needs_collapse = [
            (
                collapse_field.is_some(),
                "collapse_field collapses by a field",
            ),
            (leader.is_some(), "leader chooses the hit shown for a group"),
            (
                derank,
                "derank moves the hits of groups behind their leaders",
            ),
        ];
        if let Some((_, what)) = needs_collapse.iter().find(|(set, _)| *set && !collapse) {
            return Err(PyValueError::new_err(format!(
                "{what}, but collapse=False asks for every document, ungrouped; drop one of them"
            )));
        }
        let store = self.store()?;
        let query = query.to_string();
        let settings = SearchSettings {
            limit,
            collapse: match (collapse, collapse_field) {
                (false, _) => Collapse::Off,
                (true, None) => Collapse::NearDuplicates,
                (true, Some(field)) => Collapse::Field(field),
            },
            leader,
            derank,
        };
        let searches = &self.searches;
        Ok(py.detach(|| search(&store, searches, &query, settings))?)
    }

    /// The documents the index's match rule matches with the document ``id`` (itself left out)
    /// or with ``text``, strongest evidence first (simhash matches nearest first, then
    /// resemblance matches most resembling first); with ``k``, simhash-only: those within ``k``
    /// (at most the index's k), nearest first. ``limit`` > 0 keeps the first ones.
    #[pyo3(signature = (*, id = None, text = None, k = None, limit = 0))]
    fn similar(
        &self,
        py: Python<'_>,
        id: Option<&Bound<'_, PyAny>>,
        text: Option<&str>,
        k: Option<u32>,
        limit: usize,
    ) -> PyResult<Vec<Match>> {
        let id = match id {
            None => None,
            Some(v)
                if v.is_instance_of::<pyo3::types::PyInt>()
                    && !v.is_instance_of::<pyo3::types::PyBool>() =>
            {
                Some(v.str()?.to_string())
            }
            Some(v) => Some(v.extract::<String>()?),
        };
        let store = self.store()?;
        let text = text.map(str::to_string);
        Ok(py.detach(|| similar(&store, id.as_deref(), text.as_deref(), k, limit))?)
    }

    /// Every pair of documents the index's match rule matches ("simhash within k, or a shared
    /// MinHash band and an estimated resemblance of at least the rule's threshold"; ``k``
    /// narrows the simhash branch, the index's k by default), as
    /// ``(id_a, id_b, distance, resemblance)`` with ``id_a < id_b``, in no particular order:
    /// ``distance`` is the simhash distance, ``resemblance`` the sketches' estimate for a pair
    /// matched by resemblance (``None`` for a simhash match). The pairs are computed on a
    /// thread of their own as you iterate (one pass over the index; the GIL is free
    /// meanwhile). ``min_resemblance`` (opt-in, 0 to 1): only the pairs whose sketches
    /// estimate at least that resemblance, whichever branch matched them (a pair with an empty
    /// sketch stays); 0.67 keeps what a reader at resemblance 0.8 counts. Raises
    /// ``ValueError`` for a ``k`` beyond the index's or a ``min_resemblance`` outside 0..1.
    #[pyo3(signature = (k = None, *, min_resemblance = None))]
    fn pairs(&self, k: Option<u32>, min_resemblance: Option<f32>) -> PyResult<PairIterator> {
        let store = self.store()?;
        // Made here, so that a bad argument raises at the call, not at the first pair.
        let join =
            tantivy_simhash::app::pair_join(&store, k, min_resemblance).map_err(Failure::from)?;
        let (tx, rx) = sync_channel(4096);
        std::thread::spawn(move || {
            let run = || -> Result<(), Failure> {
                let mut receiver_gone = false;
                join.for_each_id_pair(|p| {
                    if receiver_gone {
                        return;
                    }
                    let (a, b) = if p.a <= p.b { (p.a, p.b) } else { (p.b, p.a) };
                    let e = p.evidence;
                    let pair = (a.to_string(), b.to_string(), e.distance(), e.resemblance());
                    receiver_gone = tx.send(Ok(pair)).is_err();
                })?;
                Ok(())
            };
            if let Err(e) = run() {
                let _ = tx.send(Err(e.message()));
            }
        });
        Ok(PairIterator { rx: Mutex::new(rx) })
    }

    /// The clusters of at least ``min_size`` documents, largest first (then by id).
    /// ``mode="leader"`` (the default): in input order, a document joins the cluster of the
    /// first earlier leader it matches directly by the rule, else leads one, so every member
    /// matches its leader. ``mode="components"``: connected components of the pairs of
    /// :meth:`pairs` (chains: two members may share little). Cost: the streaming all-pairs
    /// join over the index's key tables (no signature held in memory) and the clusters.
    /// ``min_resemblance``: clusters of :meth:`pairs` with that opt-in. Raises ``ValueError``
    /// for another mode or a ``min_resemblance`` outside 0..1.
    #[pyo3(signature = (k = None, *, min_size = 2, mode = "leader", min_resemblance = None))]
    fn clusters(
        &self,
        py: Python<'_>,
        k: Option<u32>,
        min_size: usize,
        mode: &str,
        min_resemblance: Option<f32>,
    ) -> PyResult<Vec<Cluster>> {
        let mode: ClusterMode = mode.parse().map_err(|_| {
            Failure::Value(format!(
                "mode={mode:?}; expected \"leader\" or \"components\""
            ))
        })?;
        let store = self.store()?;
        Ok(py.detach(|| clusters(&store, k, min_resemblance, min_size, mode))?)
    }

    /// Why documents ``a`` and ``b`` (ids) are near-duplicates, or why not, as a dict (the
    /// object ``neardup explain --json`` prints): ``verdict`` (``None`` or ``{"match",
    /// "distance", ...}``), ``summary``, ``branches`` (each branch's reason, by how much it
    /// failed), ``simhash`` (distance, block keys shared), ``minhash`` (bands shared, the
    /// sketch's estimate), ``shingles`` (exact resemblance of the rule's shingles), ``words``
    /// (the evaluation's word 3-shingle resemblance), ``chrome`` (lines left out) and
    /// ``alignment`` (word byte ranges and runs: equal, delete, insert, movefrom, moveto).
    /// Raises ``ValueError`` for an unknown id.
    fn explain(&self, py: Python<'_>, a: &str, b: &str) -> PyResult<Py<PyAny>> {
        let store = self.store()?;
        let json = py.detach(|| -> Result<String, Failure> {
            let searcher = store.index.lookups()?;
            let e = store
                .index
                .explain_ids(&searcher, a, b)
                .map_err(|e| match e {
                    tantivy_simhash::Error::Document(m) => Failure::Value(m),
                    e => e.into(),
                })?;
            Ok(e.to_json().to_string())
        })?;
        Ok(py.import("json")?.call_method1("loads", (json,))?.unbind())
    }

    /// Writes the review report (the ``neardup report`` file) to ``path``: one self-contained
    /// HTML file with the summary, histograms, the leader clusters largest first (paged,
    /// filterable) and each carried member beside its leader with the differences
    /// highlighted and the rule's evidence; mirror host pairs when documents have hosts.
    /// ``max_clusters``, ``detailed``, ``members`` and ``max_text_bytes`` cap what it carries.
    /// Returns a dict of what it wrote (``documents``, ``clusters``, ``clusters_listed``,
    /// ``clusters_detailed``, ``pairs_shown``, ``mirror_pairs``, ``bytes``).
    #[pyo3(signature = (path, *, max_clusters = 20_000, detailed = 300, members = 20, max_text_bytes = 20_000))]
    fn report(
        &self,
        py: Python<'_>,
        path: PathBuf,
        max_clusters: usize,
        detailed: usize,
        members: usize,
        max_text_bytes: usize,
    ) -> PyResult<Py<PyAny>> {
        let store = self.store()?;
        let caps = tantivy_simhash::app::ReportCaps {
            max_clusters_listed: max_clusters,
            detailed_clusters: detailed,
            members_per_cluster: members,
            max_text_bytes,
        };
        let stats = py
            .detach(|| store.write_report_file(&path, caps))
            .map_err(Failure::from)?;
        let d = PyDict::new(py);
        d.set_item("documents", stats.documents)?;
        d.set_item("clusters", stats.clusters)?;
        d.set_item("clusters_listed", stats.clusters_listed)?;
        d.set_item("clusters_detailed", stats.clusters_detailed)?;
        d.set_item("pairs_shown", stats.pairs_shown)?;
        d.set_item("mirror_pairs", stats.mirror_pairs)?;
        d.set_item("bytes", stats.bytes)?;
        Ok(d.into_any().unbind())
    }

    /// :meth:`explain` for two texts, signed with the index's scheme and rule.
    fn explain_texts(&self, py: Python<'_>, a: &str, b: &str) -> PyResult<Py<PyAny>> {
        let store = self.store()?;
        let json = py.detach(|| {
            tantivy_simhash::Explanation::of_texts(store.index.rule(), store.index.scheme(), a, b)
                .to_json()
                .to_string()
        });
        Ok(py.import("json")?.call_method1("loads", (json,))?.unbind())
    }

    /// Host pairs that copy each other's pages (the ``neardup mirrors`` report), best first,
    /// each a dict like a line of ``neardup mirrors --json``. ``host``: only the hosts that
    /// copy this one; ``all``: every host pair sharing a page, mirror or not.
    #[pyo3(signature = (*, host = None, all = false))]
    fn mirrors(&self, py: Python<'_>, host: Option<&str>, all: bool) -> PyResult<Vec<Py<PyAny>>> {
        let store = self.store()?;
        let host = host.map(str::to_string);
        let lines = py.detach(|| mirrors(&store, host.as_deref(), all))?;
        let json = py.import("json")?;
        lines
            .into_iter()
            .map(|l| Ok(json.call_method1("loads", (l,))?.unbind()))
            .collect()
    }

    /// The fingerprint of the document ``id``, or None when no document has it.
    fn fingerprint_of(&self, py: Python<'_>, id: &str) -> PyResult<Option<u64>> {
        let store = self.store()?;
        let id = id.to_string();
        let found = py.detach(|| -> Result<_, Failure> {
            Ok(store.index.lookups()?.fingerprint_of_id(&id)?)
        })?;
        Ok(found.map(|f| f.0))
    }

    /// The number of documents as of the last commit.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let store = self.store()?;
        let n = py.detach(|| -> Result<u64, Failure> { Ok(store.index.searcher()?.num_docs()) })?;
        Ok(n as usize)
    }

    /// The directory.
    #[getter]
    fn path(&self) -> PyResult<PathBuf> {
        Ok(self.store()?.dir.clone())
    }

    /// The language the index was created with.
    #[getter]
    fn language(&self) -> PyResult<String> {
        Ok(self.store()?.settings().language)
    }

    /// The largest distance the index guarantees to find.
    #[getter]
    fn k(&self) -> PyResult<u32> {
        Ok(self.store()?.index.layout().max_distance())
    }

    /// The recorded dedup policy (the default of ``writer()``).
    #[getter]
    fn policy(&self) -> PyResult<String> {
        Ok(self.store()?.settings().policy)
    }

    /// The index's scheme (fingerprints computed with it compare with the index's).
    #[getter]
    fn scheme(&self) -> PyResult<Scheme> {
        let store = self.store()?;
        Ok(Scheme {
            scheme: store.index.scheme().clone(),
            language: store.settings().language,
        })
    }

    /// Whether the index is closed.
    #[getter]
    fn closed(&self) -> bool {
        self.store
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .is_none()
    }

    /// Closes the index (a writer made from it stays usable until it is closed).
    fn close(&self) {
        let mut guard = self
            .store
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *guard = None;
        self.searches.clear();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (_exc_type = None, _exc_value = None, _traceback = None))]
    fn __exit__(
        &self,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc_value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        match self.store() {
            Ok(s) => format!(
                "Index({:?}, language={:?}, k={})",
                s.dir.display().to_string(),
                s.settings().language,
                s.index.layout().max_distance()
            ),
            Err(_) => "Index(closed)".to_string(),
        }
    }
}

/// The results of `query` by the kept search of `settings`.
fn search(
    store: &Store,
    searches: &Searches,
    query: &str,
    settings: SearchSettings,
) -> Result<Vec<Hit>, Failure> {
    let search = searches.get_or_make(settings, |settings| Search::new(store, settings))?;
    let hits = search.run(store, query).map_err(|e| match e {
        // A field that cannot group is the caller's argument.
        e @ tantivy_simhash::Error::Schema { .. } => Failure::Value(e.to_string()),
        e => e.into(),
    })?;
    Ok(hits.into_iter().map(Hit::from).collect())
}

/// How many search settings an index keeps (the oldest used is dropped beyond).
const SEARCHES_KEPT: usize = 8;

/// The searches of an index's recent settings. A search's collapse keeps the columns it
/// opened in each segment (19 at most; opening them per search costs more than the fold on
/// many segments) and the segments' id tables, so repeated searches only read values.
/// Segments added by later commits are opened on first use, and one no search reads any more
/// is released after 64 searches: results never come from a stale searcher (each search takes
/// the index's current one).
#[derive(Default)]
struct Searches {
    recent: Mutex<Vec<Arc<Search>>>,
}

impl Searches {
    /// The kept search of `settings`, made by `make` when none is kept.
    fn get_or_make(
        &self,
        settings: SearchSettings,
        make: impl FnOnce(SearchSettings) -> tantivy_simhash::Result<Search>,
    ) -> Result<Arc<Search>, Failure> {
        let mut recent = self
            .recent
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(position) = recent.iter().position(|s| *s.settings() == settings) {
            // Most recently used last: the first is the one dropped.
            let found = recent.remove(position);
            recent.push(Arc::clone(&found));
            return Ok(found);
        }
        let made = Arc::new(make(settings)?);
        if recent.len() >= SEARCHES_KEPT {
            recent.remove(0);
        }
        recent.push(Arc::clone(&made));
        Ok(made)
    }

    /// Drops every kept search (and the columns they hold open).
    fn clear(&self) {
        self.recent
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clear();
    }
}

fn similar(
    store: &Store,
    id: Option<&str>,
    text: Option<&str>,
    k: Option<u32>,
    limit: usize,
) -> Result<Vec<Match>, Failure> {
    let to = match (id, text) {
        (Some(id), None) => SimilarTo::Id(id),
        (None, Some(text)) => SimilarTo::Text(text),
        _ => {
            return Err(Failure::Value(
                "give exactly one of id= and text=".to_string(),
            ))
        }
    };
    let found = tantivy_simhash::app::similar(store, to, k, limit)?;
    Ok(found
        .hits
        .into_iter()
        .map(|(h, shown)| Match {
            id: h.id,
            distance: h.distance,
            resemblance: h.evidence.resemblance(),
            fingerprint: h.fingerprint.0,
            title: shown.title,
            host: shown.host,
        })
        .collect())
}

fn clusters(
    store: &Store,
    k: Option<u32>,
    min_resemblance: Option<f32>,
    min_size: usize,
    mode: ClusterMode,
) -> Result<Vec<Cluster>, Failure> {
    let all = tantivy_simhash::app::clusters(store, k, min_resemblance, mode)?;
    let (sorted, _) = tantivy_simhash::app::largest_clusters(&all, min_size, 0);
    Ok(sorted
        .into_iter()
        .map(|c| Cluster {
            id: c.id.clone(),
            members: c.members.iter().map(|m| m.id.clone()).collect(),
            leader: c.leader().map_or_else(String::new, |m| m.id.clone()),
        })
        .collect())
}

/// The mirror report's host pairs as JSON lines (the command line's `--json` lines).
fn mirrors(store: &Store, host: Option<&str>, all: bool) -> Result<Vec<String>, Failure> {
    let found = tantivy_simhash::app::mirrors(store, host, all)?;
    found
        .pairs
        .iter()
        .map(|p| {
            serde_json::to_string(p)
                .map_err(|e| Failure::Index(format!("cannot encode a host pair: {e}")))
        })
        .collect()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Index>()?;
    m.add_class::<Hit>()?;
    m.add_class::<Member>()?;
    m.add_class::<Match>()?;
    m.add_class::<Cluster>()?;
    m.add_class::<PairIterator>()?;
    Ok(())
}
