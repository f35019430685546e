//! [`NearDupGraph`]: the live documents of a searcher, grouped by identical signature, and the
//! pairs the match rule finds between the groups.

use super::clusters::{Cluster, ClusterMember, ClusterMode, Clusters, UnionFind};
use super::too_many;
use super::{DEFAULT_JOIN_MAX_POSTINGS_PER_KEY, ID_BATCH_DOCS, ID_BATCH_PAIRS};
use crate::columns::{field_name, read_strs};
use crate::component::reader::SegmentSignatures;
use crate::error::{Error, Result};
use crate::schema::NearDupFields;
use crate::signature::{pairs_in_memory, Evidence, MatchRule, PairStats, Signature};
use rayon::prelude::*;
use std::collections::HashMap;
use tantivy::columnar::StrColumn;
use tantivy::{DocAddress, Searcher};

/// Documents sharing one signature (fingerprint and sketch): the rule matches each with each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignatureGroup<'a> {
    /// The signature.
    pub signature: &'a Signature,
    /// The live documents with this signature, in address order.
    pub docs: &'a [DocAddress],
}

/// Two signature groups the rule matches: every document of `a` is a near-duplicate of every
/// document of `b`, for the same reason (`evidence`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GroupPair<'a> {
    /// One side.
    pub a: SignatureGroup<'a>,
    /// The other side.
    pub b: SignatureGroup<'a>,
    /// Why the rule matches them.
    pub evidence: Evidence,
}

impl GroupPair<'_> {
    /// Calls `f(doc_a, doc_b)` for each of the `a.docs.len() * b.docs.len()` document pairs
    /// (no reads, no allocation).
    pub fn for_each_doc_pair(&self, mut f: impl FnMut(DocAddress, DocAddress)) {
        for &x in self.a.docs {
            for &y in self.b.docs {
                f(x, y);
            }
        }
    }
}

/// Two documents the rule matches, by address in the graph's searcher.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DocPair {
    /// One document.
    pub a: DocAddress,
    /// The other.
    pub b: DocAddress,
    /// Why the rule matches them (`Simhash { distance: 0 }` for identical signatures).
    pub evidence: Evidence,
}

/// Two documents the rule matches, by user id.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IdPair<'a> {
    /// One document's id.
    pub a: &'a str,
    /// The other's.
    pub b: &'a str,
    /// Why the rule matches them (`Simhash { distance: 0 }` for identical signatures).
    pub evidence: Evidence,
}

/// The near-duplicate graph of a searcher's live documents under the index's
/// [`MatchRule`].
///
/// Holds a clone of the tantivy searcher (the segments it read stay alive while it lives), the
/// distinct signatures (8 bytes of fingerprint and the sketch, 256 bytes by default, each) and
/// the address of every live document.
///
/// A `NearDupGraph` gathers the signature (fingerprint and MinHash sketch) of every live
/// document of a searcher (all segments, no force-merge needed; deleted documents and documents
/// without a fingerprint are skipped) and groups documents with identical signatures. Its nodes
/// are these **signature groups**; its edges are the pairs of distinct signatures that the
/// index's [`MatchRule`](crate::MatchRule) matches ("simhash within k, or a shared MinHash band
/// and enough estimated resemblance"), each with its [`Evidence`](crate::Evidence):
///
/// - [`NearDupGraph::duplicate_groups`]: documents sharing one signature, as groups: a
///   boilerplate page copied 10,000 times is one group, not 50 million pairs;
/// - [`NearDupGraph::for_each_group_pair`]: pairs of distinct signatures the rule matches, each
///   once, with the documents of both sides ([`GroupPair::for_each_doc_pair`] expands them);
/// - [`NearDupGraph::for_each_doc_pair`] and [`NearDupGraph::for_each_id_pair`]: every pair of
///   documents (duplicates included), expanded, with addresses ([`DocPair`]) or user ids
///   ([`IdPair`]);
/// - [`NearDupGraph::clusters`]: leader clusters (in input order, a document joins the first
///   earlier leader it matches directly, else leads: every member matches its leader), or with
///   [`NearDupGraph::clusters_by`] and [`ClusterMode::Components`] connected components
///   (union-find, which chain); either has a deterministic id, which
///   [`DedupWriter::retag`](crate::DedupWriter::retag) stores in the group field so that
///   results can be collapsed exactly afterwards.
///
/// The join is [`signature::pairs_in_memory`](crate::signature::pairs_in_memory) over the
/// distinct signatures: every key of the rule (simhash blocks and MinHash bands) is a bucket,
/// candidates in a bucket are verified with [`MatchRule::matches`](crate::MatchRule::matches),
/// and a pair is reported only under one shared key, so no set of seen pairs is kept. Every pair
/// the rule matches shares a key, so without a hot key the pairs are exactly those of a
/// brute-force scan. The keys stored in the index are not read: they are a function of the
/// signature, and reading the columns is cheaper than streaming the term dictionary.
///
/// **Hot keys.** A key shared by more than
/// [`max_postings_per_key`](NearDupGraph::max_postings_per_key) distinct signatures (default
/// [`DEFAULT_JOIN_MAX_POSTINGS_PER_KEY`]; a template sentence that fixes a MinHash band on 100,000
/// pages) compares each signature only with the next `max_postings_per_key` in its postings:
/// work per key is at most postings x bound, not quadratic. What it costs in recall: a pair is
/// missed only when every key it shares is that hot and the two lie further apart than the bound
/// in the postings of their first shared key; every join returns
/// [`PairStats`](crate::signature::PairStats) whose `hot_keys` says whether a key was cut.
/// The hottest key of the natural evaluation corpora holds 519 documents (en): below the
/// default, so the result there is exact.
///
/// Limits: everything is in memory on one machine (the signatures, about 170 bytes per live
/// document, plus about 450 bytes per distinct signature during the join; at most `u32::MAX`
/// documents); the join runs on one thread.
///
/// [`PairJoin`](crate::PairJoin) finds the same pairs and clusters without holding any
/// signature: a streaming join over the segment component's sorted key tables, read in place, on
/// all of rayon's threads, with hot block keys split exactly (Manku's sub-blocks) before the
/// bound applies. `neardup pairs`, `clusters` and `stats`, the Python package's `pairs` and
/// `clusters` and [`app::clusters`](crate::app::clusters) use it; prefer it for all pairs and
/// clusters of a large index (memory: a merge step per thread, a window of pairs; for leader
/// clusters the join's compact pairs, for components a union-find). The graph remains for its
/// signature groups and group pairs (the review report reads them) and as the in-memory
/// reference the tests compare the join with. Across machines the same join partitions by key (each key's bucket is independent):
/// the Python package's `tantivy_simhash.dask` runs it on Dask (docs/DISTRIBUTED.md).
///
/// ```
/// use tantivy::doc;
/// use tantivy_simhash::NearDupGraph;
/// use tantivy_simhash::{Evidence, Fingerprint, NearDupConfig, NearDupIndex, Policy};
///
/// let index = NearDupIndex::create_in_ram(NearDupConfig::new("id", ["body"]))?;
/// let id = index.field("id")?;
/// let mut writer = index.writer(50_000_000, Policy::Off)?;
/// for (name, fp) in [("a", 0xff00u64), ("b", 0xff01), ("c", 0xff00), ("d", 0x1234_5678_9abc)] {
///     writer.add_document_with_fingerprint(doc!(id => name), Fingerprint(fp))?;
/// }
/// writer.commit()?;
///
/// let graph = NearDupGraph::new(index.fields(), &index.searcher()?)?;
/// let mut pairs = Vec::new();
/// graph.for_each_id_pair(|p| {
///     // No sketches here (fingerprints only), so every match is by simhash distance.
///     assert!(matches!(p.evidence, Evidence::Simhash { .. }));
///     pairs.push((p.a.min(p.b).to_string(), p.a.max(p.b).to_string(), p.evidence.distance()));
/// })?;
/// pairs.sort();
/// assert_eq!(pairs, [("a".into(), "b".into(), 1), ("a".into(), "c".into(), 0), ("b".into(), "c".into(), 1)]);
///
/// let clusters = graph.clusters()?;
/// assert_eq!(clusters.len(), 1);
/// assert_eq!(clusters.iter().next().unwrap().id, "a"); // the leader (added first) names it
/// # Ok::<(), tantivy_simhash::Error>(())
/// ```
pub struct NearDupGraph {
    searcher: Searcher,
    rule: MatchRule,
    max_distance: u32,
    max_postings_per_key: usize,
    ids: Vec<Option<StrColumn>>,
    /// Distinct signatures, sorted by (fingerprint, sketch).
    signatures: Vec<Signature>,
    /// Where each distinct signature's documents start in `docs` (one more entry at the end).
    starts: Vec<u32>,
    /// Live documents with a signature, grouped like `signatures`, in address order per group.
    docs: Vec<DocAddress>,
    /// The name of the sequence field (the order documents were added), if the index has one.
    sequence: Option<String>,
}

impl std::fmt::Debug for NearDupGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NearDupGraph")
            .field("docs", &self.docs.len())
            .field("signatures", &self.signatures.len())
            .field("max_distance", &self.max_distance)
            .field("max_postings_per_key", &self.max_postings_per_key)
            .finish_non_exhaustive()
    }
}

impl NearDupGraph {
    /// Gathers the live documents of `searcher`, to be joined by the index's rule.
    ///
    /// Cost: one pass over each segment's signature columns (fingerprint and sketch words, in
    /// parallel) and a parallel sort of the signatures; no pair is computed yet. Errors:
    /// [`Error::Tantivy`](crate::Error::Tantivy) when opening the columns fails;
    /// [`Error::InvalidConfig`] beyond `u32::MAX` live documents.
    pub fn new(fields: NearDupFields, searcher: &Searcher) -> Result<Self> {
        NearDupGraph::with_max_distance(fields, searcher, fields.layout().max_distance())
    }

    /// Like [`new`](Self::new), with the rule's simhash branch narrowed to `max_distance`
    /// (inclusive; [`MatchRule::matches_within`]); the resemblance branch is unchanged.
    /// Errors with [`Error::InvalidConfig`] when it exceeds the layout's `k` (pairs beyond it
    /// need not share a key), and as [`new`](Self::new). Cost: as [`new`](Self::new).
    pub fn with_max_distance(
        fields: NearDupFields,
        searcher: &Searcher,
        max_distance: u32,
    ) -> Result<Self> {
        crate::layout::check_distance(fields.layout().max_distance(), max_distance)?;
        let schema = searcher.schema();
        let rule = fields.rule();
        let id_name = field_name(schema, fields.id)?.to_string();
        let sequence = fields
            .sequence
            .map(|f| schema.get_field_name(f).to_string());
        let tantivy_searcher = searcher.clone();
        let segments = tantivy_searcher.segment_readers();
        let total: usize = segments.iter().map(|s| s.num_docs() as usize).sum();
        if u32::try_from(total).is_err() {
            return Err(too_many(total));
        }
        let per_segment: Vec<Vec<(Signature, DocAddress)>> = segments
            .par_iter()
            .enumerate()
            .map(|(ord, seg)| -> Result<Vec<(Signature, DocAddress)>> {
                let columns = SegmentSignatures::open(seg, rule)?;
                // Documents added around the writer have no fingerprint: skipped.
                Ok(seg
                    .doc_ids_alive()
                    .filter_map(|doc| {
                        let sig = columns.get(doc)?;
                        Some((sig, DocAddress::new(ord as u32, doc)))
                    })
                    .collect())
            })
            .collect::<Result<_>>()?;
        let mut rows: Vec<(Signature, DocAddress)> = per_segment.into_iter().flatten().collect();
        rows.par_sort_unstable_by(|(x, a), (y, b)| {
            (x.fingerprint, &x.sketch.words, a).cmp(&(y.fingerprint, &y.sketch.words, b))
        });
        let mut signatures: Vec<Signature> = Vec::new();
        let mut starts: Vec<u32> = Vec::new();
        let mut docs: Vec<DocAddress> = Vec::with_capacity(rows.len());
        for (sig, address) in rows {
            if signatures.last() != Some(&sig) {
                starts.push(docs.len() as u32);
                signatures.push(sig);
            }
            docs.push(address);
        }
        starts.push(docs.len() as u32);
        let ids = segments
            .iter()
            .map(|seg| seg.fast_fields().str(&id_name))
            .collect::<tantivy::Result<_>>()?;
        Ok(NearDupGraph {
            searcher: tantivy_searcher,
            rule: *fields.rule(),
            max_distance,
            max_postings_per_key: DEFAULT_JOIN_MAX_POSTINGS_PER_KEY,
            ids,
            signatures,
            starts,
            docs,
            sequence,
        })
    }

    /// Bounds the work per key of the join (the hot-key bound of [`pairs_in_memory`]): a key
    /// shared by more than `max_postings_per_key` distinct signatures compares each with only
    /// the next `max_postings_per_key` of them, so a template shared by 100,000 pages costs
    /// 100,000 x `max_postings_per_key` comparisons instead of 5 billion. **Cost in recall**: a
    /// matching pair is missed only when every key it shares is that hot and the two lie
    /// further apart than the bound in the postings of their first shared key; the
    /// [`PairStats::hot_keys`] every join returns says whether a key was cut. Default
    /// [`DEFAULT_JOIN_MAX_POSTINGS_PER_KEY`]; `usize::MAX` is exact (and quadratic on hot keys).
    pub fn max_postings_per_key(mut self, max_postings_per_key: usize) -> Self {
        self.max_postings_per_key = max_postings_per_key.max(1);
        self
    }

    /// The distance up to which the simhash branch pairs documents (inclusive).
    pub fn max_distance(&self) -> u32 {
        self.max_distance
    }

    /// The rule the pairs satisfy.
    pub fn rule(&self) -> &MatchRule {
        &self.rule
    }

    /// The live documents with a signature.
    pub fn num_docs(&self) -> usize {
        self.docs.len()
    }

    /// The distinct signatures among them.
    pub fn num_signatures(&self) -> usize {
        self.signatures.len()
    }

    /// The tantivy searcher the graph was gathered from (addresses refer to it).
    pub fn searcher(&self) -> &Searcher {
        &self.searcher
    }

    /// The address of document `d` (an index into the graph's documents).
    pub(super) fn doc_address(&self, d: usize) -> DocAddress {
        self.docs[d]
    }

    pub(super) fn range(&self, g: usize) -> std::ops::Range<usize> {
        self.starts[g] as usize..self.starts[g + 1] as usize
    }

    fn group(&self, g: usize) -> SignatureGroup<'_> {
        SignatureGroup {
            signature: &self.signatures[g],
            docs: &self.docs[self.range(g)],
        }
    }

    /// Every signature group (singletons included), by increasing (fingerprint, sketch).
    /// Lazy and free per group (slices of the graph); never fails.
    pub fn groups(&self) -> impl Iterator<Item = SignatureGroup<'_>> + '_ {
        (0..self.signatures.len()).map(|g| self.group(g))
    }

    /// The groups of at least two documents: identical signatures, which the rule always
    /// matches (distance 0). Cost: one walk over the graph's groups, lazily; no reads.
    pub fn duplicate_groups(&self) -> impl Iterator<Item = SignatureGroup<'_>> + '_ {
        self.groups().filter(|g| g.docs.len() >= 2)
    }

    /// The join: `f(group a, group b, evidence)` for every pair of distinct signatures the rule
    /// (narrowed to `max_distance`) matches, each once, `a < b`.
    pub(super) fn join(&self, mut f: impl FnMut(u32, u32, Evidence)) -> PairStats {
        let full = self.max_distance >= self.rule.layout().max_distance();
        let sigs = &self.signatures;
        let mut reported = 0;
        let mut stats = pairs_in_memory(&self.rule, sigs, self.max_postings_per_key, |i, j, e| {
            let evidence = match e {
                Evidence::Simhash { distance } if !full && distance > self.max_distance => {
                    match self
                        .rule
                        .matches_within(&sigs[i], &sigs[j], self.max_distance)
                    {
                        Some(e) => e,
                        None => return,
                    }
                }
                e => e,
            };
            reported += 1;
            f(i as u32, j as u32, evidence);
        });
        stats.pairs = reported;
        stats
    }

    /// Calls `f` once for every pair of distinct signature groups the rule matches, with the
    /// documents of both sides. Together with [`duplicate_groups`](Self::duplicate_groups)
    /// this is every near-duplicate pair, without the quadratic expansion of large groups.
    ///
    /// Cost: the join of the distinct signatures by the rule's keys
    /// ([`pairs_in_memory`]: a sort of 16 keys per signature by default, then the
    /// comparisons within each key's postings, bounded per key by
    /// [`max_postings_per_key`](Self::max_postings_per_key)), on the calling thread; memory at
    /// the peak about 450 bytes per distinct signature besides the graph. Returns what the join
    /// did ([`PairStats::hot_keys`] > 0: a pair sharing only hot keys may be missing).
    /// Errors: none today (everything it reads is in memory); the `Result` leaves room for a
    /// disk-backed join without an API change.
    pub fn for_each_group_pair(&self, mut f: impl FnMut(GroupPair<'_>)) -> Result<PairStats> {
        Ok(self.join(|a, b, evidence| {
            f(GroupPair {
                a: self.group(a as usize),
                b: self.group(b as usize),
                evidence,
            })
        }))
    }

    /// Calls `f` once for every pair of live documents the rule matches, identical signatures
    /// included: the pairs inside each duplicate group first, then the expansion of every
    /// [`GroupPair`]. The number of calls is the number of document pairs, quadratic in the
    /// size of a duplicate group: prefer [`for_each_group_pair`](Self::for_each_group_pair)
    /// when large groups are expected. Returns and errors as that.
    pub fn for_each_doc_pair(&self, mut f: impl FnMut(DocPair)) -> Result<PairStats> {
        let same = Evidence::Simhash { distance: 0 };
        for g in self.duplicate_groups() {
            for (x, &a) in g.docs.iter().enumerate() {
                for &b in &g.docs[x + 1..] {
                    f(DocPair {
                        a,
                        b,
                        evidence: same,
                    });
                }
            }
        }
        self.for_each_group_pair(|p| {
            p.for_each_doc_pair(|a, b| {
                f(DocPair {
                    a,
                    b,
                    evidence: p.evidence,
                })
            })
        })
    }

    /// Like [`for_each_doc_pair`](Self::for_each_doc_pair), with the user ids of both
    /// documents. Ids are read in batches (per segment, in term order, so each block of the id
    /// column's dictionary is decompressed once per batch rather than once per id): the group
    /// pairs of the join are held (about 24 bytes each), and up to about a million of them are
    /// expanded at a time with the ids of their documents (tens of MB).
    ///
    /// Errors: [`Error::Document`] when a document has no id; [`Error::Io`](crate::Error::Io) when
    /// reading an id dictionary fails.
    pub fn for_each_id_pair(&self, mut f: impl FnMut(IdPair<'_>)) -> Result<PairStats> {
        self.emit_duplicate_id_pairs(&mut f)?;
        let mut pending: Vec<(u32, u32, Evidence)> = Vec::new();
        let stats = self.join(|a, b, e| pending.push((a, b, e)));
        for batch in pending.chunks(ID_BATCH_PAIRS) {
            self.emit_id_pairs(batch, &mut f)?;
        }
        Ok(stats)
    }

    /// The id pairs inside each duplicate group, in batches of about [`ID_BATCH_DOCS`] ids.
    fn emit_duplicate_id_pairs(&self, f: &mut dyn FnMut(IdPair<'_>)) -> Result<()> {
        let duplicated: Vec<usize> = (0..self.signatures.len())
            .filter(|&g| self.range(g).len() >= 2)
            .collect();
        let same = Evidence::Simhash { distance: 0 };
        let mut start = 0;
        while start < duplicated.len() {
            let mut end = start;
            let mut docs = 0;
            while end < duplicated.len() && docs < ID_BATCH_DOCS {
                docs += self.range(duplicated[end]).len();
                end += 1;
            }
            let batch = &duplicated[start..end];
            let addresses: Vec<DocAddress> = batch
                .iter()
                .flat_map(|&g| self.docs[self.range(g)].iter().copied())
                .collect();
            let ids = self.read_required_ids(&addresses)?;
            let mut at = 0;
            for &g in batch {
                let n = self.range(g).len();
                let m = &ids[at..at + n];
                for (x, a) in m.iter().enumerate() {
                    for b in &m[x + 1..] {
                        f(IdPair {
                            a,
                            b,
                            evidence: same,
                        });
                    }
                }
                at += n;
            }
            start = end;
        }
        Ok(())
    }

    /// Reads the ids of the documents of `pairs` (group pairs) in one batch, then expands.
    fn emit_id_pairs(
        &self,
        pairs: &[(u32, u32, Evidence)],
        f: &mut dyn FnMut(IdPair<'_>),
    ) -> Result<()> {
        let mut involved: Vec<u32> = pairs.iter().flat_map(|&(a, b, _)| [a, b]).collect();
        involved.sort_unstable();
        involved.dedup();
        let docs: Vec<DocAddress> = involved
            .iter()
            .flat_map(|&g| self.docs[self.range(g as usize)].iter().copied())
            .collect();
        let ids = self.read_required_ids(&docs)?;
        // Where each involved group's ids start.
        let mut starts = Vec::with_capacity(involved.len() + 1);
        let mut at = 0;
        for &g in &involved {
            starts.push(at);
            at += self.range(g as usize).len();
        }
        starts.push(at);
        let ids_of = |g: u32| {
            let i = involved.partition_point(|&x| x < g);
            &ids[starts[i]..starts[i + 1]]
        };
        for &(a, b, evidence) in pairs {
            for x in ids_of(a) {
                for y in ids_of(b) {
                    f(IdPair {
                        a: x,
                        b: y,
                        evidence,
                    });
                }
            }
        }
        Ok(())
    }

    /// The user ids of `docs` (addresses of this graph's searcher), in the same order; `None` for a
    /// document without an id. Reads each segment's id dictionary once, in term order, for the
    /// whole slice: far cheaper than one [`NearDupLookup::id_of`](crate::NearDupLookup::id_of)
    /// per document for large slices, and about the same for a handful. Errors:
    /// [`Error::Io`](crate::Error::Io) when reading an id dictionary fails.
    pub fn read_ids(&self, docs: &[DocAddress]) -> Result<Vec<Option<String>>> {
        read_strs(&self.ids, docs)
    }

    pub(super) fn read_required_ids(&self, docs: &[DocAddress]) -> Result<Vec<String>> {
        self.read_ids(docs)?
            .into_iter()
            .zip(docs)
            .map(|(id, a)| id.ok_or_else(|| missing_id(*a)))
            .collect()
    }

    /// The connected components with at least two documents ([`ClusterMode::Components`]).
    /// Cost: the join, 4 bytes per distinct signature for the union-find, the input order
    /// of the members and one batched id read for them.
    pub(super) fn component_clusters(&self) -> Result<Clusters> {
        let n = self.signatures.len();
        let mut uf = UnionFind::new(n);
        let stats = self.join(|a, b, _| uf.union(a, b));
        let order = self.input_order()?;
        // Members of each root, for roots with at least two documents.
        let mut size = vec![0u32; n];
        for g in 0..n {
            let r = uf.find(g as u32) as usize;
            size[r] += self.range(g).len() as u32;
        }
        let mut slot: HashMap<u32, usize> = HashMap::new();
        let mut members: Vec<Vec<usize>> = Vec::new();
        for g in 0..n {
            let r = uf.find(g as u32);
            if size[r as usize] < 2 {
                continue;
            }
            let i = *slot.entry(r).or_insert_with(|| {
                members.push(Vec::with_capacity(size[r as usize] as usize));
                members.len() - 1
            });
            members[i].extend(self.range(g));
        }
        drop(size);
        let mut clusters = self.named_clusters(members, &order, |members| {
            members.sort_by(|a, b| a.id.cmp(&b.id).then(a.address.cmp(&b.address)));
            // The leader: the member first in input order; the id: the smallest.
            let leader = (0..members.len())
                .min_by_key(|&i| (members[i].sequence.unwrap_or(u64::MAX), members[i].address))
                .unwrap_or(0);
            (members[0].id.clone(), leader)
        })?;
        clusters.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(Clusters::new(
            clusters,
            self.docs.len(),
            self.searcher.clone(),
            stats,
            ClusterMode::Components,
        ))
    }

    /// Reads the ids of the documents (indexes into `docs`) of each cluster in one batch and
    /// makes the clusters; `finish` orders a cluster's members and returns its id and the
    /// index of its leader among them.
    pub(super) fn named_clusters(
        &self,
        members: Vec<Vec<usize>>,
        order: &[u64],
        mut finish: impl FnMut(&mut Vec<ClusterMember>) -> (String, usize),
    ) -> Result<Vec<Cluster>> {
        let all: Vec<DocAddress> = members.iter().flatten().map(|&d| self.docs[d]).collect();
        let mut ids = self.read_required_ids(&all)?.into_iter();
        Ok(members
            .into_iter()
            .map(|m| {
                let mut members: Vec<ClusterMember> = m
                    .into_iter()
                    .map(|d| ClusterMember {
                        id: ids.next().unwrap_or_default(),
                        address: self.docs[d],
                        fingerprint: self.signatures[self.group_of_doc(d)].fingerprint,
                        sequence: (order[d] != u64::MAX).then_some(order[d]),
                    })
                    .collect();
                let (id, leader) = finish(&mut members);
                Cluster {
                    id,
                    members,
                    leader,
                }
            })
            .collect())
    }

    /// The signature group of document `d` (an index into `docs`). Cost: a binary search.
    pub(super) fn group_of_doc(&self, d: usize) -> usize {
        self.starts.partition_point(|&s| s as usize <= d) - 1
    }

    /// Every document's place in the input order (indexes into `docs`): its sequence number
    /// ([`SEQUENCE_FIELD`](crate::schema::SEQUENCE_FIELD)), or `u64::MAX` without one (an
    /// index made without the field, a document added around the writer): such documents
    /// come last, by address. Cost: one column read per document. Errors:
    /// [`Error::Tantivy`](crate::Error::Tantivy) when a segment's column cannot be opened.
    pub(super) fn input_order(&self) -> Result<Vec<u64>> {
        let Some(name) = &self.sequence else {
            return Ok(vec![u64::MAX; self.docs.len()]);
        };
        let columns = self
            .searcher
            .segment_readers()
            .iter()
            .map(|seg| seg.fast_fields().u64(name).ok())
            .collect::<Vec<_>>();
        Ok(self
            .docs
            .iter()
            .map(|a| {
                columns[a.segment_ord as usize]
                    .as_ref()
                    .and_then(|c| c.first(a.doc_id))
                    .unwrap_or(u64::MAX)
            })
            .collect())
    }
}

fn missing_id(a: DocAddress) -> Error {
    Error::Document(format!(
        "the document at segment {} doc {} has no id; every document needs one (add documents \
         through DedupWriter)",
        a.segment_ord, a.doc_id
    ))
}
