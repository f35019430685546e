//! [`Clusters`]: the connected components of the near-duplicate graph.

use crate::fingerprint::Fingerprint;
use crate::signature::PairStats;
use tantivy::{DocAddress, Searcher};

/// Union-find with path halving (4 bytes per node; no rank array: path halving alone keeps
/// the trees shallow enough here, and the memory matters more at tens of millions of nodes).
pub(crate) struct UnionFind {
    parent: Vec<u32>,
}

impl UnionFind {
    pub(crate) fn new(n: usize) -> Self {
        UnionFind {
            parent: (0..n as u32).collect(),
        }
    }

    pub(crate) fn find(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let p = self.parent[x as usize];
            self.parent[x as usize] = self.parent[p as usize];
            x = p;
        }
        x
    }

    pub(crate) fn union(&mut self, a: u32, b: u32) {
        let (a, b) = (self.find(a), self.find(b));
        if a != b {
            self.parent[a.max(b) as usize] = a.min(b);
        }
    }
}

/// A document of a cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterMember {
    /// Its user id.
    pub id: String,
    /// Its address in the graph's searcher.
    pub address: DocAddress,
    /// Its fingerprint.
    pub fingerprint: Fingerprint,
    /// Its place in the input order (the index's
    /// [`SEQUENCE_FIELD`](crate::schema::SEQUENCE_FIELD)), `None` when the index has no
    /// sequence field.
    pub sequence: Option<u64>,
}

/// How [`NearDupGraph::clusters_by`](super::NearDupGraph::clusters_by) groups documents.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ClusterMode {
    /// Leader clustering (the default): in input order, a document joins the cluster of the
    /// first earlier leader it matches directly by the rule, otherwise it leads a new
    /// cluster. Every member matches its leader, so keeping the leaders removes only
    /// near-duplicates of a kept document.
    #[default]
    Leader,
    /// Connected components: documents linked by chains of matching pairs (`a~b~c~d` puts
    /// `d` with `a` even when they share little). Their leader is the member first in input
    /// order, which need not match every member.
    Components,
}

impl ClusterMode {
    /// `leader` or `components`, as the command line and Python spell them.
    pub fn name(self) -> &'static str {
        match self {
            ClusterMode::Leader => "leader",
            ClusterMode::Components => "components",
        }
    }
}

impl std::str::FromStr for ClusterMode {
    type Err = crate::Error;
    fn from_str(s: &str) -> crate::Result<ClusterMode> {
        match s {
            "leader" => Ok(ClusterMode::Leader),
            "components" => Ok(ClusterMode::Components),
            other => Err(crate::Error::InvalidConfig(format!(
                "cluster mode {other:?}; expected \"leader\" or \"components\""
            ))),
        }
    }
}

/// A cluster of near-duplicates ([`ClusterMode`]). Under [`ClusterMode::Leader`] every member
/// matches the leader by the rule; under [`ClusterMode::Components`] every member is linked to
/// another by a chain of matching pairs (so two members need not match each other).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    /// The cluster id (deterministic: the same live documents in the same input order give
    /// the same ids, whatever the segments and threads): the leader's user id under
    /// [`ClusterMode::Leader`], the smallest user id among the members under
    /// [`ClusterMode::Components`].
    pub id: String,
    /// The members: in input order (the leader first) under [`ClusterMode::Leader`], sorted
    /// by id (then address) under [`ClusterMode::Components`].
    pub members: Vec<ClusterMember>,
    /// The index in `members` of the leader: the member first in input order.
    pub leader: usize,
}

impl Cluster {
    /// The leader: the member first in input order (under [`ClusterMode::Leader`], the one
    /// every other member matches). `None` only for a cluster built by hand with `leader` out
    /// of range.
    pub fn leader(&self) -> Option<&ClusterMember> {
        self.members.get(self.leader)
    }

    /// The number of documents.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Always false: a cluster has at least two documents.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
}

/// The clusters of at least two documents; every other live document is alone.
#[derive(Clone, Debug)]
pub struct Clusters {
    clusters: Vec<Cluster>,
    num_docs: usize,
    searcher: Searcher,
    stats: PairStats,
    mode: ClusterMode,
}

impl Clusters {
    /// How the clusters were made.
    pub fn mode(&self) -> ClusterMode {
        self.mode
    }

    /// The clusters, sorted by id. This and the other accessors are free and never fail.
    pub fn iter(&self) -> impl Iterator<Item = &Cluster> + '_ {
        self.clusters.iter()
    }

    /// The number of clusters.
    pub fn len(&self) -> usize {
        self.clusters.len()
    }

    /// Whether there is no cluster (the rule matches no two live documents).
    pub fn is_empty(&self) -> bool {
        self.clusters.is_empty()
    }

    /// Live documents in the graph, clustered or alone.
    pub fn num_docs(&self) -> usize {
        self.num_docs
    }

    /// The cluster with id `id`, if any (binary search: O(log clusters) string comparisons).
    pub fn get(&self, id: &str) -> Option<&Cluster> {
        self.clusters
            .binary_search_by(|c| c.id.as_str().cmp(id))
            .ok()
            .map(|i| &self.clusters[i])
    }

    /// What the join behind the clusters did: with [`PairStats::hot_keys`] > 0 a pair that
    /// shares only hot keys may be missing, so two clusters may be one.
    pub fn join_stats(&self) -> PairStats {
        self.stats
    }

    /// The searcher the clusters were computed on (member addresses refer to it).
    pub fn searcher(&self) -> &Searcher {
        &self.searcher
    }

    pub(super) fn new(
        clusters: Vec<Cluster>,
        num_docs: usize,
        searcher: Searcher,
        stats: PairStats,
        mode: ClusterMode,
    ) -> Clusters {
        Clusters {
            clusters,
            num_docs,
            searcher,
            stats,
            mode,
        }
    }
}
