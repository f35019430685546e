//! [`PairJoin`]'s clusters: connected components (a union-find over the join's links) and
//! leader clusters (a walk of the join's items in input order), neither holding a signature.

use super::found::Row;
use super::pair_join::{missing_id, PairJoin};
use crate::batch::clusters::{Cluster, ClusterMember, ClusterMode, Clusters, UnionFind};
use crate::columns::read_strs;
use crate::error::Result;
use crate::fingerprint::Fingerprint;
use tantivy::DocAddress;

/// No leader yet (a side's state) / not yet decided.
const NONE: u32 = u32::MAX;
/// In a membership's side word: the member reads the other side of a pair of sides (a cross).
const CROSS: u32 = 1 << 31;

impl PairJoin {
    /// The clusters of at least two documents by leader ([`ClusterMode::Leader`], the
    /// default): see [`clusters_by`](Self::clusters_by).
    pub fn clusters(&self) -> Result<Clusters> {
        self.clusters_by(ClusterMode::Leader)
    }

    /// The clusters of at least two documents under `mode`, sorted by cluster id: the same
    /// clusters as [`NearDupGraph::clusters_by`](crate::NearDupGraph::clusters_by) (same ids,
    /// members, member order and leaders), without gathering any signature.
    ///
    /// [`ClusterMode::Leader`]: in input order (the index's sequence field, then address), a
    /// document joins the cluster of the earliest leader it matches directly by the rule,
    /// otherwise it leads; the id is the leader's id, members in input order. The join's pairs
    /// are kept in its compact form (a group of one fingerprint or a cross of two such groups
    /// as its rows, not its pairs) and walked in input order: each group side remembers the
    /// first leader among its members. [`ClusterMode::Components`]: a union-find over the join;
    /// id the smallest member id, members by id, leader the member added first.
    ///
    /// Cost: the join ([`for_each_doc_pair`](Self::for_each_doc_pair)); for leaders, 8 bytes
    /// per row of the join's items (a document in `m` items: `m` rows) and about 24 bytes per
    /// document that has a pair; for components, a union-find of 4 bytes per document (deleted
    /// ones included); for either, one batched id read and a sequence read for each clustered
    /// document. Never N x the sketch. Errors: as
    /// [`for_each_id_pair`](Self::for_each_id_pair); [`Error::InvalidConfig`](crate::Error::InvalidConfig)
    /// when the join's items hold more than 2^31 groups.
    ///
    /// ```
    /// use tantivy::doc;
    /// use tantivy_simhash::{ClusterMode, PairJoin};
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
    /// let join = PairJoin::new(index.fields(), &index.searcher()?)?;
    ///
    /// let leaders = join.clusters()?; // a leads {a, b}; c matches no leader: alone
    /// let ids: Vec<Vec<&str>> =
    ///     leaders.iter().map(|c| c.members.iter().map(|m| m.id.as_str()).collect()).collect();
    /// assert_eq!(ids, [["a", "b"]]);
    ///
    /// let components = join.clusters_by(ClusterMode::Components)?; // {a, b, c}
    /// assert_eq!(components.iter().next().map(|c| c.len()), Some(3));
    /// # Ok::<(), tantivy_simhash::Error>(())
    /// ```
    pub fn clusters_by(&self, mode: ClusterMode) -> Result<Clusters> {
        match mode {
            ClusterMode::Leader => self.leader_clusters(),
            ClusterMode::Components => self.components(),
        }
    }

    /// The connected components: [`clusters_by`](Self::clusters_by) with
    /// [`ClusterMode::Components`]. Cost: the join (a duplicate group is linked as a chain, not
    /// expanded into its pairs), a union-find of 4 bytes per document (deleted ones included)
    /// and, for the clustered documents, one batched id read and a sequence read each.
    pub fn components(&self) -> Result<Clusters> {
        let (bases, total) = self.row_bases()?;
        let row = |a: DocAddress| (bases[a.segment_ord as usize] + u64::from(a.doc_id)) as u32;
        let mut uf = UnionFind::new(total as usize);
        let stats = self.join(|found| found.for_each_link(|a, b| uf.union(row(a), row(b))))?;
        let mut size = vec![0u32; total as usize];
        for r in 0..total as u32 {
            let root = uf.find(r);
            size[root as usize] += 1;
        }
        let mut slot: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
        let mut members: Vec<Vec<DocAddress>> = Vec::new();
        for (ord, base) in bases.iter().enumerate() {
            let max_doc = self.segments[ord].max_doc();
            for doc in 0..max_doc {
                let root = uf.find((base + u64::from(doc)) as u32);
                if size[root as usize] < 2 {
                    continue;
                }
                let i = *slot.entry(root).or_insert_with(|| {
                    members.push(Vec::new());
                    members.len() - 1
                });
                members[i].push(DocAddress::new(ord as u32, doc));
            }
        }
        drop(size);
        drop(uf);
        let mut clusters = self.named_members(members)?;
        for cluster in &mut clusters {
            cluster
                .members
                .sort_by(|a, b| a.id.cmp(&b.id).then(a.address.cmp(&b.address)));
            // The leader: the member first in input order; the id: the smallest.
            let m = &cluster.members;
            cluster.leader = (0..m.len())
                .min_by_key(|&i| (m[i].sequence.unwrap_or(u64::MAX), m[i].address))
                .unwrap_or(0);
            cluster.id = m[0].id.clone();
        }
        Ok(self.sorted_clusters(clusters, stats, ClusterMode::Components))
    }

    /// The clusters in id order, with what the join did.
    fn sorted_clusters(
        &self,
        mut clusters: Vec<Cluster>,
        stats: crate::signature::PairStats,
        mode: ClusterMode,
    ) -> Clusters {
        clusters.sort_by(|a, b| a.id.cmp(&b.id));
        Clusters::new(
            clusters,
            self.num_docs(),
            self.searcher.clone(),
            stats,
            mode,
        )
    }

    fn leader_clusters(&self) -> Result<Clusters> {
        let (bases, _) = self.row_bases()?;
        // Each item's rows as memberships (document row, side word): a group of one
        // fingerprint is one side its members read and write; a cross is two sides (an even
        // slot and the next), each member writing its own and reading the other (`CROSS`).
        let mut memberships: Vec<(u32, u32)> = Vec::new();
        let mut sides = 0u32;
        let mut overflow = false;
        let global = |row: Row| (bases[(row >> 32) as usize] + (row & 0xffff_ffff)) as u32;
        let stats = self.join(|found| {
            found.for_each_item(|a, b| {
                if sides >= CROSS - 4 {
                    overflow = true;
                    return;
                }
                match b {
                    None => {
                        memberships.extend(a.iter().map(|&r| (global(r), sides)));
                        sides += 1;
                    }
                    Some(b) => {
                        let s = sides + (sides & 1);
                        memberships.extend(a.iter().map(|&r| (global(r), s | CROSS)));
                        memberships.extend(b.iter().map(|&r| (global(r), (s + 1) | CROSS)));
                        sides = s + 2;
                    }
                }
            })
        })?;
        if overflow {
            return Err(crate::Error::InvalidConfig(format!(
                "the join found more than {} groups of near-duplicates; leader clustering \
                 handles fewer: cluster a part of the index at a time, or use connected \
                 components",
                CROSS - 4
            )));
        }
        // The documents that have a pair, in input order: (sequence, row) sorted; a row's
        // rank is its place there.
        memberships.sort_unstable();
        let mut rows: Vec<u32> = memberships.iter().map(|m| m.0).collect();
        rows.dedup();
        let address = |row: u32| {
            let ord = bases.partition_point(|&b| b <= u64::from(row)) - 1;
            DocAddress::new(ord as u32, (u64::from(row) - bases[ord]) as u32)
        };
        let sequences = self.sequence_columns();
        let sequence = |a: DocAddress| {
            sequences
                .get(a.segment_ord as usize)
                .and_then(|c| c.as_ref())
                .and_then(|c| c.first(a.doc_id))
        };
        let mut by_rank: Vec<(u64, u32)> = rows
            .iter()
            .map(|&r| (sequence(address(r)).unwrap_or(u64::MAX), r))
            .collect();
        by_rank.sort_unstable();
        let mut rank_of_row = vec![0u32; rows.len()];
        for (rank, &(_, r)) in by_rank.iter().enumerate() {
            // `rows` holds every row of `by_rank`: the search finds it.
            rank_of_row[rows.binary_search(&r).unwrap_or(0)] = rank as u32;
        }
        for m in &mut memberships {
            m.0 = rank_of_row[rows.binary_search(&m.0).unwrap_or(0)];
        }
        drop(rank_of_row);
        drop(rows);
        memberships.sort_unstable();
        // In input order: the earliest leader among the sides a document reads (each the
        // first leader among that side's earlier members), else it leads and becomes the
        // first leader of the sides it writes that have none.
        let mut first_leader = vec![NONE; sides as usize];
        let mut leader_of = vec![NONE; by_rank.len()];
        for run in memberships.chunk_by(|x, y| x.0 == y.0) {
            let rank = run[0].0;
            let read = |word: u32| match word & CROSS {
                0 => word,
                _ => (word & !CROSS) ^ 1,
            };
            let earliest = run
                .iter()
                .map(|&(_, w)| first_leader[read(w) as usize])
                .min()
                .unwrap_or(NONE);
            if earliest != NONE {
                leader_of[rank as usize] = earliest;
                continue;
            }
            leader_of[rank as usize] = rank;
            for &(_, w) in run {
                let side = &mut first_leader[(w & !CROSS) as usize];
                if *side == NONE {
                    *side = rank;
                }
            }
        }
        drop(memberships);
        drop(first_leader);
        // Members of each leader of at least two, in input order (rank order).
        let mut size = vec![0u32; by_rank.len()];
        for &l in &leader_of {
            size[l as usize] += 1;
        }
        let mut slot = vec![NONE; by_rank.len()];
        let mut members: Vec<Vec<DocAddress>> = Vec::new();
        for (rank, &l) in leader_of.iter().enumerate() {
            if size[l as usize] < 2 {
                continue;
            }
            if slot[l as usize] == NONE {
                slot[l as usize] = members.len() as u32;
                members.push(Vec::with_capacity(size[l as usize] as usize));
            }
            members[slot[l as usize] as usize].push(address(by_rank[rank].1));
        }
        let mut clusters = self.named_members(members)?;
        for cluster in &mut clusters {
            cluster.id = cluster.members[0].id.clone();
        }
        Ok(self.sorted_clusters(clusters, stats, ClusterMode::Leader))
    }

    /// Each segment's first row in the join's global numbering (rows of all segments, deleted
    /// documents included), and the total. Errors when the rows do not fit `u32`.
    fn row_bases(&self) -> Result<(Vec<u64>, u64)> {
        let bases: Vec<u64> = self
            .segments
            .iter()
            .scan(0u64, |at, s| {
                let base = *at;
                *at += u64::from(s.max_doc());
                Some(base)
            })
            .collect();
        let total: u64 = self.segments.iter().map(|s| u64::from(s.max_doc())).sum();
        if u32::try_from(total).is_err() {
            return Err(crate::batch::too_many(total as usize));
        }
        Ok((bases, total))
    }

    fn sequence_columns(&self) -> Vec<Option<tantivy::columnar::Column<u64>>> {
        match &self.sequence {
            Some(name) => self
                .searcher
                .segment_readers()
                .iter()
                .map(|seg| seg.fast_fields().u64(name).ok())
                .collect(),
            None => Vec::new(),
        }
    }

    /// Clusters of `members` (addresses, in the order kept) with ids (one batched read),
    /// fingerprints and sequence numbers; the cluster id is left empty and the leader 0.
    fn named_members(&self, members: Vec<Vec<DocAddress>>) -> Result<Vec<Cluster>> {
        let all: Vec<DocAddress> = members.iter().flatten().copied().collect();
        let mut ids = read_strs(&self.ids, &all)?.into_iter();
        drop(all);
        let sequences = self.sequence_columns();
        let mut clusters = Vec::with_capacity(members.len());
        for docs in members {
            let mut cluster: Vec<ClusterMember> = Vec::with_capacity(docs.len());
            for address in docs {
                let id = ids.next().flatten().ok_or_else(|| missing_id(address))?;
                let segment = &self.segments[address.segment_ord as usize];
                cluster.push(ClusterMember {
                    id,
                    address,
                    fingerprint: segment
                        .fingerprint(address.doc_id)
                        .unwrap_or(Fingerprint(0)),
                    sequence: sequences
                        .get(address.segment_ord as usize)
                        .and_then(|c| c.as_ref())
                        .and_then(|c| c.first(address.doc_id)),
                });
            }
            clusters.push(Cluster {
                id: String::new(),
                members: cluster,
                leader: 0,
            });
        }
        Ok(clusters)
    }
}
