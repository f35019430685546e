//! Leader clustering: [`NearDupGraph::clusters`] in [`ClusterMode::Leader`].
//!
//! In input order, a document joins the cluster of the first earlier leader it matches
//! directly by the rule, otherwise it leads a new cluster. Connected components chain:
//! `a~b~c~d` puts `d` with `a` even when the two share little (on Debian's licence texts the
//! largest component holds every GPL and LGPL notice, docs/QUALITY.md). A leader cluster
//! never chains: every member matches its leader.
//!
//! The graph's nodes are signature groups, and every document of a group matches every
//! document its group matches, so the decision is made once per group: the first document of
//! a group (in input order) picks the earliest leader among the groups it is joined to, or
//! leads; the group's later documents match that same leader (their matches are the same,
//! and any leader that came between is later than it) or, when it leads, match it (identical
//! signatures).

use super::clusters::{ClusterMode, Clusters};
use super::graph::NearDupGraph;
use crate::error::Result;

impl NearDupGraph {
    /// The clusters of at least two documents, by leader ([`ClusterMode::Leader`], the
    /// default): see [`clusters_by`](Self::clusters_by).
    pub fn clusters(&self) -> Result<Clusters> {
        self.clusters_by(ClusterMode::Leader)
    }

    /// The clusters of at least two documents under `mode`, sorted by cluster id.
    ///
    /// **Input order** is the order documents were added: the index's sequence field
    /// ([`SEQUENCE_FIELD`](crate::schema::SEQUENCE_FIELD), which
    /// [`DedupWriter`](crate::DedupWriter) fills under every policy and keeps through
    /// [`retag`](crate::DedupWriter::retag)); documents without one come after, by address.
    /// The result does not depend on threads or segments, only on the live documents and
    /// their order.
    ///
    /// [`ClusterMode::Leader`]: every member matches its cluster's leader by the rule (narrowed
    /// to [`max_distance`](Self::max_distance)); the cluster id is the leader's id.
    /// [`ClusterMode::Components`]: connected components (union-find), named by their smallest
    /// id. Under the hot-key bound ([`Clusters::join_stats`] with `hot_keys > 0`) a pair that
    /// shares only hot keys may be missing: a leader cluster may then be split in two (its
    /// members still match their leader), a component too.
    ///
    /// Cost: the join (as [`for_each_group_pair`](Self::for_each_group_pair)), one read of
    /// each document's sequence number, one batched id read for the clustered documents; the
    /// leader mode also holds the matching group pairs (8 bytes each, twice) to walk them in
    /// input order. Errors: [`Error::Document`](crate::Error::Document) when a member has no
    /// id; [`Error::Tantivy`](crate::Error::Tantivy) when reading a column fails.
    ///
    /// ```
    /// use tantivy::doc;
    /// use tantivy_simhash::{ClusterMode, NearDupGraph};
    /// use tantivy_simhash::{Fingerprint, NearDupConfig, NearDupIndex, Policy};
    ///
    /// let index = NearDupIndex::create_in_ram(NearDupConfig::new("id", ["body"]))?;
    /// let id = index.field("id")?;
    /// let mut writer = index.writer(50_000_000, Policy::Off)?;
    /// // A chain: a~b (3 bits), b~c (3 bits), but a and c are 6 bits apart.
    /// for (name, fp) in [("a", 0b000_000u64), ("b", 0b000_111), ("c", 0b111_111)] {
    ///     writer.add_document_with_fingerprint(doc!(id => name), Fingerprint(fp))?;
    /// }
    /// writer.commit()?;
    /// let graph = NearDupGraph::new(index.fields(), &index.searcher()?)?;
    ///
    /// let leaders = graph.clusters()?; // a leads {a, b}; c matches no leader: alone
    /// let ids: Vec<Vec<&str>> =
    ///     leaders.iter().map(|c| c.members.iter().map(|m| m.id.as_str()).collect()).collect();
    /// assert_eq!(ids, [["a", "b"]]);
    ///
    /// let components = graph.clusters_by(ClusterMode::Components)?; // {a, b, c}
    /// assert_eq!(components.iter().next().map(|c| c.len()), Some(3));
    /// # Ok::<(), tantivy_simhash::Error>(())
    /// ```
    pub fn clusters_by(&self, mode: ClusterMode) -> Result<Clusters> {
        match mode {
            ClusterMode::Leader => self.leader_clusters(),
            ClusterMode::Components => self.component_clusters(),
        }
    }

    fn leader_clusters(&self) -> Result<Clusters> {
        let n = self.num_signatures();
        let mut edges: Vec<(u32, u32)> = Vec::new();
        let stats = self.join(|a, b, _| edges.push((a, b)));
        let order = self.input_order()?;
        // A group's place: that of its first document in input order (ties by address, which
        // is the order of `docs` within a group).
        let first_doc: Vec<usize> = (0..n)
            .map(|g| {
                self.range(g)
                    .min_by_key(|&d| order[d])
                    .unwrap_or(self.range(g).start)
            })
            .collect();
        let rank_key = |g: usize| (order[first_doc[g]], self.doc_address(first_doc[g]));
        let mut by_rank: Vec<u32> = (0..n as u32).collect();
        by_rank.sort_unstable_by_key(|&g| rank_key(g as usize));
        let mut rank = vec![0u32; n];
        for (r, &g) in by_rank.iter().enumerate() {
            rank[g as usize] = r as u32;
        }
        // Adjacency by rank, in compressed rows: each group's matching groups.
        let mut degree = vec![0u32; n + 1];
        for &(a, b) in &edges {
            degree[rank[a as usize] as usize] += 1;
            degree[rank[b as usize] as usize] += 1;
        }
        let mut starts = Vec::with_capacity(n + 1);
        let mut total = 0u32;
        for d in &degree[..n] {
            starts.push(total);
            total += d;
        }
        starts.push(total);
        let mut fill = starts.clone();
        let mut adjacent = vec![0u32; total as usize];
        for (a, b) in edges {
            let (ra, rb) = (rank[a as usize], rank[b as usize]);
            adjacent[fill[ra as usize] as usize] = rb;
            fill[ra as usize] += 1;
            adjacent[fill[rb as usize] as usize] = ra;
            fill[rb as usize] += 1;
        }
        drop(fill);
        drop(degree);
        // In rank order: the earliest leader among the earlier matching groups, else lead.
        const NONE: u32 = u32::MAX;
        let mut leader_of = vec![NONE; n];
        for r in 0..n {
            let row = &adjacent[starts[r] as usize..starts[r + 1] as usize];
            let leader = row
                .iter()
                .filter(|&&h| h < r as u32 && leader_of[h as usize] == h)
                .min()
                .copied();
            leader_of[r] = leader.unwrap_or(r as u32);
        }
        // Members of each leader group: its documents, then those of the groups that joined
        // it, then ordered by input order.
        let mut size = vec![0u32; n];
        for r in 0..n {
            size[leader_of[r] as usize] += self.range(by_rank[r] as usize).len() as u32;
        }
        let mut slot = vec![NONE; n];
        let mut members: Vec<Vec<usize>> = Vec::new();
        for r in 0..n {
            let l = leader_of[r] as usize;
            if size[l] < 2 {
                continue;
            }
            if slot[l] == NONE {
                slot[l] = members.len() as u32;
                members.push(Vec::with_capacity(size[l] as usize));
            }
            members[slot[l] as usize].extend(self.range(by_rank[r] as usize));
        }
        for m in &mut members {
            m.sort_unstable_by_key(|&d| (order[d], self.doc_address(d)));
        }
        let mut clusters =
            self.named_clusters(members, &order, |members| (members[0].id.clone(), 0))?;
        clusters.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(Clusters::new(
            clusters,
            self.num_docs(),
            self.searcher().clone(),
            stats,
            ClusterMode::Leader,
        ))
    }
}

/// Leader clustering of the graph whose edges are `(a[i], b[i])`, for pairs found elsewhere
/// (the Python package's Dask pipeline): the nodes' numeric order is the input order, and in
/// it a node joins the cluster of the smallest earlier leader it has an edge to, otherwise it
/// leads (as [`NearDupGraph::clusters`] does with documents). Returns `(nodes, labels)`: every
/// node of a cluster of at least two, ascending, and its leader (a leader is its own label).
/// A node whose edges all go to later nodes that joined earlier leaders is alone, so left out.
/// Self-loops are ignored. Cost: a sort of the nodes and one of the edges by their later end
/// (16 bytes per edge and 12 per node besides the input).
///
/// Errors with [`Error::InvalidConfig`](crate::Error::InvalidConfig) when `a` and `b` differ in length or hold more than
/// `u32::MAX` distinct nodes.
///
/// ```
/// use tantivy_simhash::edge_leaders;
/// // A chain 1~2~3: 1 leads {1, 2}; 3 matches only 2, no leader, and is alone.
/// let (nodes, labels) = edge_leaders(&[1, 2, 7], &[2, 3, 1])?;
/// assert_eq!(nodes, [1, 2, 7]);
/// assert_eq!(labels, [1, 1, 1]);
/// # Ok::<(), tantivy_simhash::Error>(())
/// ```
pub fn edge_leaders(a: &[u64], b: &[u64]) -> Result<(Vec<u64>, Vec<u64>)> {
    let nodes = super::components::distinct_nodes(a, b)?;
    // Every end is in `nodes`, so the search finds it; positions fit u32 (checked above).
    let index = |x: u64| nodes.binary_search(&x).unwrap_or(0) as u32;
    // Each edge as (later end, earlier end), by position: sorted, the earlier neighbours of
    // every node come together, after those of every earlier node.
    let mut earlier: Vec<(u32, u32)> = a
        .iter()
        .zip(b)
        .filter(|(x, y)| x != y)
        .map(|(&x, &y)| {
            let (i, j) = (index(x), index(y));
            (i.max(j), i.min(j))
        })
        .collect();
    earlier.sort_unstable();
    let mut leader_of: Vec<u32> = (0..nodes.len() as u32).collect();
    for run in earlier.chunk_by(|x, y| x.0 == y.0) {
        let node = run[0].0;
        if let Some(&(_, l)) = run.iter().find(|&&(_, h)| leader_of[h as usize] == h) {
            leader_of[node as usize] = l;
        }
    }
    let mut size = vec![0u32; nodes.len()];
    for &l in &leader_of {
        size[l as usize] += 1;
    }
    Ok(nodes
        .iter()
        .zip(&leader_of)
        .filter(|&(_, &l)| size[l as usize] >= 2)
        .map(|(&n, &l)| (n, nodes[l as usize]))
        .unzip())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use std::collections::BTreeMap;

    /// Leader clustering by its definition: for each node in order, the earlier nodes that
    /// lead and share an edge with it; the smallest one, else itself.
    fn reference(a: &[u64], b: &[u64]) -> BTreeMap<u64, u64> {
        let nodes: std::collections::BTreeSet<u64> = a.iter().chain(b).copied().collect();
        let mut leader: BTreeMap<u64, u64> = BTreeMap::new();
        for &n in &nodes {
            let l = nodes
                .iter()
                .filter(|&&m| m < n && leader[&m] == m)
                .find(|&&m| {
                    a.iter()
                        .zip(b)
                        .any(|(&x, &y)| (x, y) == (m, n) || (x, y) == (n, m))
                })
                .copied()
                .unwrap_or(n);
            leader.insert(n, l);
        }
        let mut size: BTreeMap<u64, usize> = BTreeMap::new();
        for &l in leader.values() {
            *size.entry(l).or_default() += 1;
        }
        leader.retain(|_, l| size[l] >= 2);
        leader
    }

    #[test]
    fn leaders_match_the_definition() {
        let mut rng = crate::test_rng::Rng(5);
        for _ in 0..300 {
            let n = 1 + rng.below(30);
            let edges = rng.below(50) as usize;
            let a: Vec<u64> = (0..edges).map(|_| rng.below(n) * 1000 + 7).collect();
            let b: Vec<u64> = (0..edges).map(|_| rng.below(n) * 1000 + 7).collect();
            let (nodes, labels) = edge_leaders(&a, &b).unwrap();
            let want = reference(&a, &b);
            assert_eq!(nodes, want.keys().copied().collect::<Vec<_>>());
            assert_eq!(labels, want.values().copied().collect::<Vec<_>>());
        }
        assert!(matches!(
            edge_leaders(&[1, 2], &[3]),
            Err(Error::InvalidConfig(_))
        ));
    }
}
