//! The streaming join: every pair the match rule matches, read from the segment component's
//! sorted key tables in place, with no gather of the signatures.
//!
//! Per key position of the rule, the segments' tables are merged in ranges of key values (all
//! segments' entries whose value has the same low bits, read from the memory-mapped files and
//! sorted: a few hundred entries), so that one key's documents across all segments form one
//! run; the pairs of a run are verified with the rule on signatures read from the files.
//! A pair is reported once, where its evidence puts it, with no set of seen pairs:
//!
//! - a pair within the simhash radius under its **first shared block key** (pigeonhole: it has
//!   one), identical fingerprints under the first key position;
//! - any other match under the key of the **first band its sketches share** (the band that
//!   [`Evidence::Resemblance`] names).
//!
//! **Hot keys.** A block key's run of more than `max_postings_per_key` distinct fingerprints
//! is split further, as Manku et al.'s tables do: within a run sharing one key, a pair within
//! `k` differs in at most `k` of the other bits, so it agrees on one of `k + 1` sub-blocks of
//! them; the run is joined per sub-block (the pair under its first shared sub-block), which is
//! exact. Identical fingerprints are grouped first (their pairs are output, not comparisons).
//! Only a sub-block run, or a band key's run, that still holds more than
//! `max_postings_per_key` distinct fingerprints compares each with the next
//! `max_postings_per_key` only: counted in [`PairStats::hot_keys`], a last resort.

use super::clusters::{Cluster, ClusterMember, ClusterMode, Clusters, UnionFind};
use super::{DocPair, IdPair, ID_BATCH_PAIRS};
use crate::columns::{field_name, read_strs};
use crate::component::reader::SegmentSignatures;
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use crate::schema::NearDupFields;
use crate::signature::{Evidence, MatchRule, PairStats, Signature};
use rayon::prelude::*;
use tantivy::columnar::StrColumn;
use tantivy::{DocAddress, Searcher};

/// Entries of one residue (one merge step) the planner aims at.
const ENTRIES_PER_RESIDUE: u64 = 64;
/// Residues per task (a unit of parallel work).
const RESIDUES_PER_TASK: u64 = 1024;
/// The widest partition of a table (2^20 residues).
const MAX_PARTITION_BITS: u32 = 20;

/// Every pair of a searcher's live documents that the index's match rule matches, streamed
/// from the segments' key tables (see the [module docs](self)), with user ids or addresses.
///
/// Unlike [`NearDupGraph`](super::NearDupGraph) it holds no signature: memory is one merge step
/// per thread, the pairs of a window of tasks, and what the caller keeps. The output order is
/// a function of the index (its segments and their documents): pairs come by key position,
/// then by key value within it; two indexes of the same documents in other segments list the
/// same pairs in another order (sort them for bytes that do not depend on it).
///
/// ```
/// use tantivy::schema::{Schema, FAST, STORED, STRING};
/// use tantivy::{doc, Index};
/// use tantivy_simhash::PairJoin;
/// use tantivy_simhash::{Fingerprint, NearDupConfig, NearDupIndex, Policy};
///
/// let config = NearDupConfig::new("id", Vec::<String>::new());
/// let mut builder = Schema::builder();
/// let id = builder.add_text_field("id", STRING | FAST | STORED);
/// config.add_fields(&mut builder);
/// let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config)?;
/// let mut writer = index.writer(50_000_000, Policy::Off)?;
/// for (name, fp) in [("a", 0xff00u64), ("b", 0xff01), ("c", 0xff00), ("d", 0x1234_5678_9abc)] {
///     writer.add_document_with_fingerprint(doc!(id => name), Fingerprint(fp))?;
/// }
/// writer.commit()?;
///
/// let join = PairJoin::new(index.fields(), &index.searcher()?)?;
/// let mut pairs = Vec::new();
/// let stats = join.for_each_id_pair(|p| {
///     pairs.push((p.a.min(p.b).to_string(), p.a.max(p.b).to_string(), p.evidence.distance()))
/// })?;
/// pairs.sort();
/// assert_eq!(pairs, [("a".into(), "b".into(), 1), ("a".into(), "c".into(), 0), ("b".into(), "c".into(), 1)]);
/// assert_eq!(stats.hot_keys, 0);
/// # Ok::<(), tantivy_simhash::Error>(())
/// ```
pub struct PairJoin {
    searcher: Searcher,
    rule: MatchRule,
    max_distance: u32,
    max_postings_per_key: usize,
    segments: Vec<SegmentSignatures>,
    ids: Vec<Option<StrColumn>>,
    /// The name of the sequence field (the order documents were added), if the index has one.
    sequence: Option<String>,
}

impl std::fmt::Debug for PairJoin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PairJoin")
            .field("segments", &self.segments.len())
            .field("max_distance", &self.max_distance)
            .field("max_postings_per_key", &self.max_postings_per_key)
            .finish_non_exhaustive()
    }
}

impl PairJoin {
    /// The join of `searcher`'s live documents by the index's rule. Cost: opening each
    /// segment's component file (a structure check, no document read) and its id column.
    /// Errors: those of [`SegmentSignatures::open`]; [`Error::Tantivy`](crate::Error::Tantivy)
    /// when an id column cannot be opened.
    pub fn new(fields: NearDupFields, searcher: &Searcher) -> Result<PairJoin> {
        PairJoin::with_max_distance(fields, searcher, fields.layout().max_distance())
    }

    /// Like [`new`](Self::new), with the rule's simhash branch narrowed to `max_distance`
    /// ([`MatchRule::matches_within`]). Errors with [`Error::InvalidConfig`] beyond the
    /// layout's `k`, and as [`new`](Self::new).
    pub fn with_max_distance(
        fields: NearDupFields,
        searcher: &Searcher,
        max_distance: u32,
    ) -> Result<PairJoin> {
        crate::layout::check_distance(fields.layout().max_distance(), max_distance)?;
        let rule = fields.rule();
        let id_name = field_name(searcher.schema(), fields.id)?.to_string();
        let segments = searcher
            .segment_readers()
            .iter()
            .map(|s| SegmentSignatures::open(s, rule))
            .collect::<Result<Vec<_>>>()?;
        let ids = searcher
            .segment_readers()
            .iter()
            .map(|seg| seg.fast_fields().str(&id_name))
            .collect::<tantivy::Result<_>>()?;
        let sequence = fields
            .sequence
            .map(|f| searcher.schema().get_field_name(f).to_string());
        Ok(PairJoin {
            searcher: searcher.clone(),
            rule: rule.clone(),
            max_distance,
            max_postings_per_key: super::DEFAULT_JOIN_MAX_POSTINGS_PER_KEY,
            segments,
            ids,
            sequence,
        })
    }

    /// The hot-key bound (see the [module docs](self)); default
    /// [`DEFAULT_JOIN_MAX_POSTINGS_PER_KEY`](super::DEFAULT_JOIN_MAX_POSTINGS_PER_KEY), `usize::MAX`
    /// exact (and quadratic on a run that splitting does not break).
    pub fn max_postings_per_key(mut self, max_postings_per_key: usize) -> Self {
        self.max_postings_per_key = max_postings_per_key.max(1);
        self
    }

    /// The rule the pairs satisfy.
    pub fn rule(&self) -> &MatchRule {
        &self.rule
    }

    /// The distance up to which the simhash branch pairs documents (inclusive).
    pub fn max_distance(&self) -> u32 {
        self.max_distance
    }

    /// The live documents with a signature. Cost: a pass over each segment's presence bits.
    pub fn num_docs(&self) -> usize {
        let mut n = 0;
        for (ord, seg) in self.searcher.segment_readers().iter().enumerate() {
            if let Some(s) = self.segments.get(ord) {
                n += seg
                    .doc_ids_alive()
                    .filter(|&d| s.file().has_signature(d))
                    .count();
            }
        }
        n
    }

    /// Calls `f` once for every pair of live documents the rule matches, `a < b` by address,
    /// in the order of the [type docs](Self). Cost: one sequential read of every fingerprint
    /// (held, 8 bytes a document); per key position a read of every table entry and a sort of
    /// a few hundred at a time; per run of a shared key, comparisons of distinct fingerprints,
    /// and a whole signature read only for the candidates that share a band; on all of
    /// rayon's threads. Returns what the join did ([`PairStats::hot_keys`] > 0: a pair sharing
    /// only cut keys may be missing). Errors: [`Error::DamagedFile`] when a table is
    /// inconsistent.
    pub fn for_each_doc_pair(&self, mut f: impl FnMut(DocPair)) -> Result<PairStats> {
        join(
            &self.segments,
            &self.searcher,
            &self.rule,
            self.max_distance,
            self.max_postings_per_key,
            |found| found.for_each_pair(|a, b, evidence| f(DocPair { a, b, evidence })),
        )
    }

    /// Like [`for_each_doc_pair`](Self::for_each_doc_pair), with the user ids of both
    /// documents (in the same order). Ids are read in batches of about a million pairs (per
    /// segment in term order). Errors: as `for_each_doc_pair`; [`Error::Document`] when a
    /// document has no id; [`Error::Io`](crate::Error::Io) when reading ids fails.
    pub fn for_each_id_pair(&self, mut f: impl FnMut(IdPair<'_>)) -> Result<PairStats> {
        let mut pending: Vec<DocPair> = Vec::new();
        let mut failed: Option<Error> = None;
        let stats = self.for_each_doc_pair(|p| {
            if failed.is_some() {
                return;
            }
            pending.push(p);
            if pending.len() >= ID_BATCH_PAIRS {
                if let Err(e) = self.emit_ids(&pending, &mut f) {
                    failed = Some(e);
                }
                pending.clear();
            }
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        self.emit_ids(&pending, &mut f)?;
        Ok(stats)
    }

    /// The connected components of the pairs with at least two documents: the same clusters as
    /// [`NearDupGraph::clusters_by`](super::NearDupGraph::clusters_by) with
    /// [`ClusterMode::Components`] (id: the smallest member id; leader: the member added first;
    /// members by id, clusters by id), without gathering any signature. Cost: the join (a
    /// duplicate group is linked as a chain, not expanded into its pairs), a union-find of 4
    /// bytes per document (deleted ones included) and, for the clustered documents, one
    /// batched id read and a sequence read each. Errors: as
    /// [`for_each_id_pair`](Self::for_each_id_pair).
    pub fn components(&self) -> Result<Clusters> {
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
            return Err(super::too_many(total as usize));
        }
        let row = |a: DocAddress| (bases[a.segment_ord as usize] + u64::from(a.doc_id)) as u32;
        let mut uf = UnionFind::new(total as usize);
        let stats = join(
            &self.segments,
            &self.searcher,
            &self.rule,
            self.max_distance,
            self.max_postings_per_key,
            |found| found.for_each_link(|a, b| uf.union(row(a), row(b))),
        )?;
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
        let all: Vec<DocAddress> = members.iter().flatten().copied().collect();
        let mut ids = read_strs(&self.ids, &all)?.into_iter();
        let sequences: Vec<Option<tantivy::columnar::Column<u64>>> = match &self.sequence {
            Some(name) => self
                .searcher
                .segment_readers()
                .iter()
                .map(|seg| seg.fast_fields().u64(name).ok())
                .collect(),
            None => Vec::new(),
        };
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
            cluster.sort_by(|a, b| a.id.cmp(&b.id).then(a.address.cmp(&b.address)));
            // The leader: the member first in input order; the id: the smallest.
            let leader = (0..cluster.len())
                .min_by_key(|&i| (cluster[i].sequence.unwrap_or(u64::MAX), cluster[i].address))
                .unwrap_or(0);
            clusters.push(Cluster {
                id: cluster[0].id.clone(),
                members: cluster,
                leader,
            });
        }
        clusters.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(Clusters::new(
            clusters,
            self.num_docs(),
            self.searcher.clone(),
            stats,
            ClusterMode::Components,
        ))
    }

    /// The tantivy searcher the join reads (addresses refer to it).
    pub fn searcher(&self) -> &Searcher {
        &self.searcher
    }

    /// Reads the ids of the documents of `pairs` in one batch and calls `f` for each pair.
    fn emit_ids(&self, pairs: &[DocPair], f: &mut impl FnMut(IdPair<'_>)) -> Result<()> {
        let mut docs: Vec<DocAddress> = pairs.iter().flat_map(|p| [p.a, p.b]).collect();
        docs.sort_unstable();
        docs.dedup();
        let ids = read_strs(&self.ids, &docs)?;
        let id_of = |a: DocAddress| -> Result<&str> {
            let i = docs.partition_point(|&d| d < a);
            ids.get(i)
                .and_then(|id| id.as_deref())
                .ok_or_else(|| missing_id(a))
        };
        for p in pairs {
            f(IdPair {
                a: id_of(p.a)?,
                b: id_of(p.b)?,
                evidence: p.evidence,
            });
        }
        Ok(())
    }
}

fn missing_id(a: DocAddress) -> Error {
    Error::Document(format!(
        "the document at segment {} doc {} has no id; every document needs one (add documents \
         through DedupWriter)",
        a.segment_ord, a.doc_id
    ))
}

/// A document in the join: `segment << 32 | doc`, so the order is the address order.
type Row = u64;

fn address(row: Row) -> DocAddress {
    DocAddress::new((row >> 32) as u32, row as u32)
}

/// Pairs found by one task, compactly: a duplicate group is one item, not its pairs.
#[derive(Default)]
pub(crate) struct Found {
    rows: Vec<Row>,
    items: Vec<Item>,
    stats: PairStats,
}

/// Ranges of [`Found::rows`] (each ascending).
enum Item {
    /// Documents with one fingerprint: every pair, distance 0.
    Clique(u32, u32),
    /// Every document of one range with every document of the other.
    Cross((u32, u32), (u32, u32), Evidence),
}

impl Found {
    fn push_rows(&mut self, rows: impl Iterator<Item = Row>) -> (u32, u32) {
        let start = self.rows.len() as u32;
        self.rows.extend(rows);
        (start, self.rows.len() as u32 - start)
    }

    fn range(&self, (start, len): (u32, u32)) -> &[Row] {
        &self.rows[start as usize..(start + len) as usize]
    }

    /// Calls `f(a, b)` with pairs that connect the same documents as
    /// [`for_each_pair`](Self::for_each_pair) (a duplicate group as a chain): what a
    /// union-find needs, linear in the groups' sizes.
    fn for_each_link(&self, mut f: impl FnMut(DocAddress, DocAddress)) {
        for item in &self.items {
            match *item {
                Item::Clique(start, len) => {
                    for w in self.range((start, len)).windows(2) {
                        f(address(w[0]), address(w[1]));
                    }
                }
                Item::Cross(a, b, _) => {
                    let (a, b) = (self.range(a), self.range(b));
                    for &x in a {
                        f(address(x), address(b[0]));
                    }
                    for &y in &b[1..] {
                        f(address(a[0]), address(y));
                    }
                }
            }
        }
    }

    /// Calls `f(a, b, evidence)` for every pair, `a < b`, in item order.
    pub(crate) fn for_each_pair(&self, mut f: impl FnMut(DocAddress, DocAddress, Evidence)) {
        for item in &self.items {
            match *item {
                Item::Clique(start, len) => {
                    let rows = self.range((start, len));
                    let same = Evidence::Simhash { distance: 0 };
                    for (i, &x) in rows.iter().enumerate() {
                        for &y in &rows[i + 1..] {
                            f(address(x), address(y), same);
                        }
                    }
                }
                Item::Cross(a, b, evidence) => {
                    for &x in self.range(a) {
                        for &y in self.range(b) {
                            f(address(x.min(y)), address(x.max(y)), evidence);
                        }
                    }
                }
            }
        }
    }
}

/// One unit of parallel work: residues `residues` of key position `position`'s table,
/// partitioned by the low `bits` bits of the key value.
struct Task {
    position: usize,
    bits: u32,
    residues: std::ops::Range<u64>,
}

/// The join (see the [module docs](self)) over `segments` (those of `searcher`, in order):
/// `emit` gets each task's pairs, tasks in order. Returns the stats, `pairs` counting
/// document pairs. Errors: [`Error::DamagedFile`] when a table is inconsistent.
pub(crate) fn join(
    segments: &[SegmentSignatures],
    searcher: &Searcher,
    rule: &MatchRule,
    max_distance: u32,
    max_postings_per_key: usize,
    mut emit: impl FnMut(&Found),
) -> Result<PairStats> {
    let ctx = Context::new(segments, searcher, rule, max_distance, max_postings_per_key);
    let tasks = ctx.plan();
    let mut stats = PairStats::default();
    // A window of tasks at a time: memory is the window's pairs, the order the tasks'.
    let window = 4 * rayon::current_num_threads().max(1);
    for position_tasks in tasks.chunk_by(|a, b| a.position == b.position) {
        for chunk in position_tasks.chunks(window) {
            let found: Vec<Result<Found>> = chunk.par_iter().map(|t| ctx.run(t)).collect();
            for found in found {
                let found = found?;
                stats.add(found.stats);
                emit(&found);
            }
        }
    }
    Ok(stats)
}

/// What every task reads.
struct Context<'a> {
    segments: &'a [SegmentSignatures],
    searcher: &'a Searcher,
    rule: &'a MatchRule,
    max_distance: u32,
    cap: usize,
    /// Bits of each block key position's key in the fingerprint.
    block_masks: Vec<u64>,
    /// Every document's fingerprint, per segment (0 without a signature): 8 bytes a document,
    /// read in one sequential pass, so that runs compare fingerprints from memory instead of
    /// a random read of the file per run member.
    fingerprints: Vec<Vec<u64>>,
}

impl<'a> Context<'a> {
    fn new(
        segments: &'a [SegmentSignatures],
        searcher: &'a Searcher,
        rule: &'a MatchRule,
        max_distance: u32,
        cap: usize,
    ) -> Self {
        let layout = rule.layout();
        let block_masks = (0..layout.num_keys())
            .map(|c| {
                let zero = layout.combo_key(c, Fingerprint(0));
                (0..64)
                    .filter(|&b| layout.combo_key(c, Fingerprint(1 << b)) != zero)
                    .fold(0u64, |m, b| m | (1 << b))
            })
            .collect();
        let mut ctx = Context {
            segments,
            searcher,
            rule,
            max_distance,
            cap: cap.max(1),
            block_masks,
            fingerprints: Vec::new(),
        };
        ctx.fingerprints = ctx.per_document(|segment, doc| segment.file().word(doc, 0));
        ctx
    }

    /// `read(segment, doc)` for every document of every segment, in parallel over segments.
    fn per_document(&self, read: impl Fn(&SegmentSignatures, u32) -> u64 + Sync) -> Vec<Vec<u64>> {
        self.segments
            .par_iter()
            .map(|segment| {
                (0..segment.max_doc())
                    .map(|doc| read(segment, doc))
                    .collect()
            })
            .collect()
    }

    fn fingerprint(&self, row: Row) -> u64 {
        self.fingerprints[(row >> 32) as usize]
            .get(row as u32 as usize)
            .copied()
            .unwrap_or(0)
    }

    /// The tasks: per key position, enough low bits of the key value that a residue holds
    /// about [`ENTRIES_PER_RESIDUE`] entries over all segments (at most the key's width).
    fn plan(&self) -> Vec<Task> {
        let blocks = self.rule.layout().num_keys();
        let mut tasks = Vec::new();
        for position in 0..self.rule.keys_per_document() {
            let entries: u64 = self
                .segments
                .iter()
                .map(|s| s.file().table_len(position) as u64)
                .sum();
            if entries < 2 {
                continue;
            }
            let width = if position < blocks {
                self.block_masks[position].count_ones()
            } else {
                self.rule.minhash().key_bits
            };
            let wanted = (entries / ENTRIES_PER_RESIDUE).max(1);
            let bits = (64 - wanted.leading_zeros() - 1)
                .min(width)
                .min(MAX_PARTITION_BITS);
            let residues = 1u64 << bits;
            let mut start = 0;
            while start < residues {
                let end = (start + RESIDUES_PER_TASK).min(residues);
                tasks.push(Task {
                    position,
                    bits,
                    residues: start..end,
                });
                start = end;
            }
        }
        tasks
    }

    fn run(&self, task: &Task) -> Result<Found> {
        let mut found = Found::default();
        let mut entries: Vec<(u64, Row)> = Vec::new();
        let mut scratch = Scratch::default();
        let alive: Vec<_> = self
            .searcher
            .segment_readers()
            .iter()
            .map(|s| s.alive_bitset())
            .collect();
        for residue in task.residues.clone() {
            entries.clear();
            for (ord, segment) in self.segments.iter().enumerate() {
                let alive = alive.get(ord).copied().flatten();
                let max_doc = segment.max_doc();
                segment.file().for_each_table_entry(
                    task.position,
                    task.bits,
                    residue,
                    |value, doc| {
                        if doc < max_doc && alive.is_none_or(|a| a.is_alive(doc)) {
                            entries.push((value, (ord as u64) << 32 | u64::from(doc)));
                        }
                    },
                )?;
            }
            if entries.len() < 2 {
                continue;
            }
            entries.sort_unstable();
            for run in entries.chunk_by(|x, y| x.0 == y.0) {
                if run.len() < 2 {
                    continue;
                }
                if task.position < self.block_masks.len() {
                    self.block_run(task.position, run, &mut scratch, &mut found);
                } else {
                    self.band_run(task.position, run, &mut scratch, &mut found);
                }
            }
        }
        Ok(found)
    }

    fn segment(&self, row: Row) -> &SegmentSignatures {
        &self.segments[(row >> 32) as usize]
    }

    /// A run of documents sharing block key `position`: pairs within the simhash radius whose
    /// first shared block key is this one (identical fingerprints under the first position).
    fn block_run(&self, position: usize, run: &[(u64, Row)], s: &mut Scratch, found: &mut Found) {
        s.members.clear();
        // Entries come from the tables, which hold documents with a signature only.
        s.members
            .extend(run.iter().map(|&(_, row)| (self.fingerprint(row), row)));
        s.members.sort_unstable();
        // Distinct fingerprints: (fingerprint, start, len) in `members`.
        s.groups.clear();
        for g in s.members.chunk_by(|x, y| x.0 == y.0) {
            let start = g.as_ptr() as usize - s.members.as_ptr() as usize;
            let start = start / std::mem::size_of::<(u64, Row)>();
            s.groups.push((g[0].0, start as u32, g.len() as u32));
        }
        s.placed.clear();
        s.placed.resize(s.groups.len(), None);
        if position == 0 {
            for g in 0..s.groups.len() {
                let len = s.groups[g].2;
                if len >= 2 {
                    let range = place(s, found, g);
                    found.items.push(Item::Clique(range.0, range.1));
                    found.stats.pairs += u64::from(len) * u64::from(len - 1) / 2;
                }
            }
        }
        let n = s.groups.len();
        if n <= self.cap {
            for a in 0..n {
                for b in a + 1..n {
                    self.compare_blocks(position, None, a, b, s, found);
                }
            }
            return;
        }
        // Manku's split: the run shares this key's bits; a pair within the radius agrees on
        // one of `max_distance + 1` sub-blocks of the other bits.
        let sub_masks = split_bits(!self.block_masks[position], self.max_distance + 1);
        let mut order: Vec<u32> = Vec::with_capacity(n);
        for (j, &mask) in sub_masks.iter().enumerate() {
            order.clear();
            order.extend(0..n as u32);
            order.sort_unstable_by_key(|&g| (s.groups[g as usize].0 & mask, g));
            let mut at = 0;
            while at < n {
                let key = s.groups[order[at] as usize].0 & mask;
                let mut end = at + 1;
                while end < n && s.groups[order[end] as usize].0 & mask == key {
                    end += 1;
                }
                let hot = end - at > self.cap;
                found.stats.hot_keys += u64::from(hot);
                for x in at..end {
                    let last = if hot {
                        (x + 1 + self.cap).min(end)
                    } else {
                        end
                    };
                    for y in x + 1..last {
                        let (a, b) = (order[x] as usize, order[y] as usize);
                        self.compare_blocks(position, Some((j, &sub_masks)), a, b, s, found);
                    }
                }
                at = end;
            }
        }
    }

    /// Compares distinct fingerprints `a` and `b` of a block run (indexes into `s.groups`);
    /// reports their documents' pairs when within the radius and owned here.
    fn compare_blocks(
        &self,
        position: usize,
        sub: Option<(usize, &[u64])>,
        a: usize,
        b: usize,
        s: &mut Scratch,
        found: &mut Found,
    ) {
        let (fa, fb) = (s.groups[a].0, s.groups[b].0);
        found.stats.comparisons += 1;
        let diff = fa ^ fb;
        let distance = diff.count_ones();
        if distance > self.max_distance {
            return;
        }
        let layout = self.rule.layout();
        if layout.first_shared_key(Fingerprint(fa), Fingerprint(fb)) != Some(position) {
            return;
        }
        if let Some((j, masks)) = sub {
            if masks.iter().position(|&m| diff & m == 0) != Some(j) {
                return;
            }
        }
        let ra = place(s, found, a);
        let rb = place(s, found, b);
        found.stats.pairs += u64::from(ra.1) * u64::from(rb.1);
        found
            .items
            .push(Item::Cross(ra, rb, Evidence::Simhash { distance }));
    }

    /// A run of documents sharing the key of band `position - blocks`: the pairs beyond the
    /// simhash radius whose first shared band is this one and whose resemblance the rule
    /// accepts.
    fn band_run(&self, position: usize, run: &[(u64, Row)], s: &mut Scratch, found: &mut Found) {
        let band = (position - self.block_masks.len()) as u32;
        // (band key, fingerprint, row): a band's key is what `Sketch::band` compares, so the
        // run's documents share the band.
        s.band_members.clear();
        for &(value, row) in run {
            s.band_members.push((value, self.fingerprint(row), row));
        }
        s.band_members.sort_unstable();
        let members = std::mem::take(&mut s.band_members);
        for shared in members.chunk_by(|x, y| x.0 == y.0) {
            if shared.len() < 2 {
                continue;
            }
            // Distinct fingerprints in the shared band: (start, end) in `shared`.
            let groups: Vec<(usize, usize)> = {
                let mut out = Vec::new();
                let mut at = 0;
                for g in shared.chunk_by(|x, y| x.1 == y.1) {
                    out.push((at, at + g.len()));
                    at += g.len();
                }
                out
            };
            if groups.len() < 2 {
                continue;
            }
            let hot = groups.len() > self.cap;
            found.stats.hot_keys += u64::from(hot);
            s.signatures.clear();
            s.signatures.resize_with(shared.len(), || None);
            for ga in 0..groups.len() {
                let last = if hot {
                    (ga + 1 + self.cap).min(groups.len())
                } else {
                    groups.len()
                };
                for gb in ga + 1..last {
                    let (fa, fb) = (shared[groups[ga].0].1, shared[groups[gb].0].1);
                    if (fa ^ fb).count_ones() <= self.max_distance {
                        continue; // a simhash match: reported under its block key
                    }
                    for x in groups[ga].0..groups[ga].1 {
                        for y in groups[gb].0..groups[gb].1 {
                            found.stats.comparisons += 1;
                            self.read_signature(s, shared, x);
                            self.read_signature(s, shared, y);
                            let (Some(sx), Some(sy)) = (&s.signatures[x], &s.signatures[y]) else {
                                continue;
                            };
                            let e = self.rule.matches_within(sx, sy, self.max_distance);
                            if let Some(e @ Evidence::Resemblance { band: first, .. }) = e {
                                if first == band {
                                    let (rx, ry) = (shared[x].2, shared[y].2);
                                    let a = found.push_rows(std::iter::once(rx.min(ry)));
                                    let b = found.push_rows(std::iter::once(rx.max(ry)));
                                    found.stats.pairs += 1;
                                    found.items.push(Item::Cross(a, b, e));
                                }
                            }
                        }
                    }
                }
            }
        }
        s.band_members = members;
    }

    /// Reads the signature of member `i` of a shared band into `s.signatures`, once per run.
    fn read_signature(&self, s: &mut Scratch, shared: &[(u64, u64, Row)], i: usize) {
        if s.signatures[i].is_none() {
            let row = shared[i].2;
            s.signatures[i] = self.segment(row).get(row as u32);
        }
    }
}

/// Reusable buffers of one task.
#[derive(Default)]
struct Scratch {
    /// A block run's documents: (fingerprint, row), sorted.
    members: Vec<(u64, Row)>,
    /// Distinct fingerprints of `members`: (fingerprint, start, len).
    groups: Vec<(u64, u32, u32)>,
    /// Where a group's rows are in the task's output, once placed.
    placed: Vec<Option<(u32, u32)>>,
    /// A band run's documents: (band key, fingerprint, row), sorted.
    band_members: Vec<(u64, u64, Row)>,
    /// Signatures of a shared band's members, read when first compared.
    signatures: Vec<Option<Signature>>,
}

/// The rows of group `g` of a block run in `found`, copied there when first needed.
fn place(s: &mut Scratch, found: &mut Found, g: usize) -> (u32, u32) {
    if let Some(range) = s.placed[g] {
        return range;
    }
    let (_, start, len) = s.groups[g];
    let rows = s.members[start as usize..(start + len) as usize]
        .iter()
        .map(|m| m.1);
    let range = found.push_rows(rows);
    s.placed[g] = Some(range);
    range
}

/// `parts` masks that split the set bits of `bits` (in bit order) into runs of nearly equal
/// size; pigeonhole: two values that differ in fewer than `parts` of those bits agree on one.
fn split_bits(bits: u64, parts: u32) -> Vec<u64> {
    let total = bits.count_ones();
    let parts = parts.clamp(1, total.max(1));
    let mut masks = vec![0u64; parts as usize];
    let mut seen = 0;
    for b in 0..64 {
        if bits >> b & 1 == 1 {
            let part = (seen * parts / total.max(1)) as usize;
            masks[part] |= 1 << b;
            seen += 1;
        }
    }
    masks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::component::reader::SignatureReader;
    use crate::signature::tests::signature_index;
    use crate::signature::Sketch;
    use crate::test_rng::Rng;
    use std::collections::BTreeMap;

    /// Signatures around random bases: simhash neighbours (1-3 bits flipped), resemblance
    /// neighbours (far fingerprint, a few sketch words changed), band-sharing strangers (far
    /// fingerprint, band words kept, the rest changed: met under every band key, no match),
    /// exact copies; then a hot block key (`hot_block` distinct fingerprints sharing the low
    /// 16 bits, some of them within 3 of each other) and a hot band (`hot_band` far
    /// fingerprints with the same band words).
    fn corpus(
        seed: u64,
        rule: &MatchRule,
        n: usize,
        hot_block: usize,
        hot_band: usize,
    ) -> Vec<Signature> {
        let mut rng = Rng(seed);
        let words = rule.minhash().sketch_words();
        let random = |rng: &mut Rng| Signature {
            fingerprint: Fingerprint(rng.next()),
            sketch: Sketch {
                words: (0..words).map(|_| rng.next()).collect(),
            },
        };
        let mut sigs: Vec<Signature> = Vec::new();
        while sigs.len() < n {
            let base = random(&mut rng);
            for kind in 0..5 {
                let mut s = base.clone();
                match kind {
                    0 => s.fingerprint.0 ^= 1 << rng.below(64) | 1 << rng.below(64),
                    1 => {
                        s.fingerprint = Fingerprint(rng.next());
                        for _ in 0..3 {
                            let w = 5 + rng.index(words - 5);
                            s.sketch.words[w] = rng.next();
                        }
                    }
                    2 => {
                        s.fingerprint = Fingerprint(rng.next());
                        for w in &mut s.sketch.words[5..] {
                            *w = rng.next();
                        }
                    }
                    _ => {}
                }
                sigs.push(s);
            }
            sigs.push(base);
        }
        let block = rng.next() & 0xffff;
        for i in 0..hot_block {
            let mut s = random(&mut rng);
            s.fingerprint.0 = if i % 4 == 3 {
                let near = sigs[sigs.len() - 1].fingerprint.0;
                near ^ 1 << (16 + rng.below(48)) ^ 1 << (16 + rng.below(48))
            } else {
                (s.fingerprint.0 & !0xffff) | block
            };
            sigs.push(s);
        }
        let template = random(&mut rng);
        for _ in 0..hot_band {
            let mut s = random(&mut rng);
            s.sketch.words[..5].copy_from_slice(&template.sketch.words[..5]);
            if rng.below(3) == 0 {
                // A resemblance neighbour of the template.
                s.sketch.words = template.sketch.words.clone();
                s.sketch.words[words - 1] = rng.next();
            }
            sigs.push(s);
        }
        sigs
    }

    /// The join over the index of `sigs` (numbers by position), in join order, with stats.
    fn joined(
        index: &tantivy::Index,
        rule: &MatchRule,
        max_distance: u32,
        cap: usize,
        threads: usize,
    ) -> (Vec<(u64, u64, Evidence)>, PairStats) {
        let searcher = index.reader().unwrap().searcher();
        let reader = SignatureReader::new(&searcher, rule).unwrap();
        let numbers: Vec<_> = searcher
            .segment_readers()
            .iter()
            .map(|s| s.fast_fields().u64("n").unwrap())
            .collect();
        let number = |a: DocAddress| numbers[a.segment_ord as usize].first(a.doc_id).unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut out = Vec::new();
            let stats = join(reader.segments(), &searcher, rule, max_distance, cap, |f| {
                f.for_each_pair(|a, b, e| {
                    assert!(a < b);
                    out.push((number(a), number(b), e))
                })
            })
            .unwrap();
            (out, stats)
        })
    }

    /// Brute force: every live pair `matches_within` accepts.
    fn brute(
        rule: &MatchRule,
        sigs: &[Signature],
        deleted: &std::collections::BTreeSet<usize>,
        max_distance: u32,
    ) -> BTreeMap<(u64, u64), Evidence> {
        let mut out = BTreeMap::new();
        for i in 0..sigs.len() {
            for j in i + 1..sigs.len() {
                if deleted.contains(&i) || deleted.contains(&j) {
                    continue;
                }
                if let Some(e) = rule.matches_within(&sigs[i], &sigs[j], max_distance) {
                    out.insert((i as u64, j as u64), e);
                }
            }
        }
        out
    }

    fn as_map(pairs: &[(u64, u64, Evidence)]) -> BTreeMap<(u64, u64), Evidence> {
        let mut map = BTreeMap::new();
        for &(a, b, e) in pairs {
            let key = (a.min(b), a.max(b));
            assert!(map.insert(key, e).is_none(), "pair {key:?} reported twice");
        }
        map
    }

    /// Exact against brute force, across segments and deletes, with the evidence, each pair
    /// once: unbounded, and with a small bound where the hot block key is split (exact, no key
    /// cut); and the same order on 1 and 2 threads.
    #[test]
    fn streaming_join_equals_brute_force_with_hot_block_keys_and_deletes() {
        let rule = MatchRule::default();
        let sigs = corpus(7, &rule, 420, 300, 0);
        let (index, _, deleted) = signature_index(&rule, &sigs, 97, |i| i % 13 == 5);
        assert!(!deleted.is_empty());
        let oracle = brute(&rule, &sigs, &deleted, 3);
        assert!(oracle.len() > 200, "{}", oracle.len());
        assert!(oracle.values().any(|e| e.resemblance().is_some()));
        assert!(oracle.values().any(|e| e.distance() == 0));
        let (pairs, stats) = joined(&index, &rule, 3, usize::MAX, 2);
        assert_eq!(as_map(&pairs), oracle);
        assert_eq!(stats.pairs, pairs.len() as u64);
        // The hot block key (300 distinct fingerprints) is split by sub-blocks, exactly.
        let (bounded, stats) = joined(&index, &rule, 3, 16, 2);
        assert_eq!(as_map(&bounded), oracle);
        assert_eq!(stats.hot_keys, 0);
        let (one_thread, _) = joined(&index, &rule, 3, 16, 1);
        assert_eq!(one_thread, bounded, "the order depends on the threads");
    }

    /// A narrowed simhash radius: pairs beyond it come only through the resemblance branch.
    #[test]
    fn streaming_join_with_a_narrowed_radius_equals_brute_force() {
        let rule = MatchRule::default();
        let sigs = corpus(8, &rule, 300, 120, 0);
        let (index, _, deleted) = signature_index(&rule, &sigs, 61, |i| i % 17 == 2);
        for k in [0, 1, 2] {
            let (pairs, _) = joined(&index, &rule, k, 8, 2);
            assert_eq!(as_map(&pairs), brute(&rule, &sigs, &deleted, k), "k = {k}");
        }
    }

    /// A band shared by more distinct fingerprints than the bound: counted as cut, and what is
    /// reported is still a subset of brute force with the right evidence; unbounded, exact.
    #[test]
    fn streaming_join_counts_a_hot_band_and_stays_within_brute_force() {
        let rule = MatchRule::default();
        let sigs = corpus(9, &rule, 120, 0, 60);
        let (index, _, deleted) = signature_index(&rule, &sigs, 50, |i| i % 19 == 3);
        let oracle = brute(&rule, &sigs, &deleted, 3);
        let (exact, stats) = joined(&index, &rule, 3, usize::MAX, 2);
        assert_eq!(as_map(&exact), oracle);
        assert_eq!(stats.hot_keys, 0);
        let (bounded, stats) = joined(&index, &rule, 3, 8, 2);
        assert!(stats.hot_keys > 0);
        let found = as_map(&bounded);
        for (pair, e) in &found {
            assert_eq!(oracle.get(pair), Some(e), "{pair:?}");
        }
        assert!(found.len() < oracle.len(), "the bound cut nothing");
    }

    #[test]
    fn split_bits_covers_the_bits_in_balanced_parts() {
        let masks = split_bits(!0xffff, 4);
        assert_eq!(masks.len(), 4);
        assert_eq!(masks.iter().fold(0, |a, m| a | m), !0xffff);
        assert!(masks.iter().all(|m| m.count_ones() == 12));
        assert_eq!(masks.iter().map(|m| m.count_ones()).sum::<u32>(), 48);
    }
}
