//! What `Index`'s reads return to Python: search hits and their folded members, lookup
//! matches and clusters.

use pyo3::prelude::*;
use tantivy_simhash::app::SearchHit;

/// A near-duplicate folded into a search result.
#[pyclass(module = "tantivy_simhash", frozen, get_all)]
#[derive(Clone)]
pub(crate) struct Member {
    pub(crate) id: String,
    pub(crate) score: f32,
    /// The simhash distance to the result's document (None when a fingerprint is missing).
    pub(crate) distance: Option<u32>,
    /// The resemblance estimate with the result's document when the match rule's resemblance
    /// branch folded it (None for a fold within the simhash distance).
    pub(crate) resemblance: Option<f32>,
}

#[pymethods]
impl Member {
    fn __repr__(&self) -> String {
        format!(
            "Member(id={:?}, score={}, distance={:?}, resemblance={:?})",
            self.id, self.score, self.distance, self.resemblance
        )
    }
}

/// A search result: a document and, when collapsed, the near-duplicates folded into it.
#[pyclass(module = "tantivy_simhash", frozen, get_all)]
#[derive(Clone)]
pub(crate) struct Hit {
    pub(crate) rank: usize,
    pub(crate) score: f32,
    pub(crate) id: String,
    pub(crate) title: String,
    pub(crate) host: String,
    pub(crate) text: String,
    /// The document and its near-duplicates among the matching documents (1 without collapse).
    pub(crate) group_size: usize,
    /// Whether ``group_size`` counts every matching document (else: at least).
    pub(crate) group_size_exact: bool,
    /// The near-duplicates found among the top hits, in rank order.
    pub(crate) members: Vec<Member>,
    /// With ``derank``: whether the hit was moved behind the leaders (False for a leader, and
    /// without ``derank``).
    pub(crate) moved: bool,
    /// With ``derank``, for a moved hit: the id of its group's leader.
    pub(crate) leader_id: Option<String>,
}

impl From<SearchHit> for Hit {
    fn from(h: SearchHit) -> Hit {
        Hit {
            rank: h.rank,
            score: h.score,
            id: h.doc.id,
            title: h.doc.title,
            host: h.doc.host,
            text: h.doc.text,
            group_size: h.group_size,
            group_size_exact: h.group_size_exact,
            members: h
                .members
                .into_iter()
                .map(|m| Member {
                    id: m.id,
                    score: m.key,
                    distance: m.distance,
                    resemblance: m.resemblance,
                })
                .collect(),
            moved: h.moved,
            leader_id: h.leader_id,
        }
    }
}

#[pymethods]
impl Hit {
    fn __repr__(&self) -> String {
        format!(
            "Hit(rank={}, score={:.3}, id={:?}, title={:?}, group_size={}, moved={})",
            self.rank,
            self.score,
            self.id,
            self.title,
            self.group_size,
            if self.moved { "True" } else { "False" }
        )
    }
}

/// A near-duplicate found by ``Index.similar``.
#[pyclass(module = "tantivy_simhash", frozen, get_all)]
#[derive(Clone)]
pub(crate) struct Match {
    pub(crate) id: String,
    pub(crate) distance: u32,
    pub(crate) resemblance: Option<f32>,
    pub(crate) fingerprint: u64,
    pub(crate) title: String,
    pub(crate) host: String,
}

#[pymethods]
impl Match {
    fn __repr__(&self) -> String {
        format!(
            "Match(id={:?}, distance={}, title={:?})",
            self.id, self.distance, self.title
        )
    }
}

/// A cluster of near-duplicates. By leader (the default): ``leader`` is the first added, every
/// member matches it, ``id`` is its id and ``members`` are in input order (the leader first).
/// As connected components: documents linked by chains of pairs; ``id`` is the smallest member
/// id, ``members`` are sorted and ``leader`` is the member added first.
#[pyclass(module = "tantivy_simhash", frozen, get_all)]
#[derive(Clone)]
pub(crate) struct Cluster {
    pub(crate) id: String,
    /// Member ids.
    pub(crate) members: Vec<String>,
    /// The member added first.
    pub(crate) leader: String,
}

#[pymethods]
impl Cluster {
    fn __len__(&self) -> usize {
        self.members.len()
    }

    fn __repr__(&self) -> String {
        format!("Cluster(id={:?}, size={})", self.id, self.members.len())
    }
}
