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
}

/// A connected component of the near-duplicate graph: every member is linked to another by a
/// chain of pairs the rule matches (so two members need not match each other).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    /// The cluster id: the smallest user id among the members (deterministic: the same live
    /// documents give the same ids, whatever the segments).
    pub id: String,
    /// The members, sorted by id (then address).
    pub members: Vec<ClusterMember>,
}

impl Cluster {
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
}

impl Clusters {
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
    ) -> Clusters {
        Clusters {
            clusters,
            num_docs,
            searcher,
            stats,
        }
    }
}
