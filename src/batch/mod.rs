//! Batch jobs over a whole index: every pair of near-duplicates, and their clusters.
//!
//! A [`NearDupGraph`] gathers the fingerprint of every live document of a searcher (all
//! segments, no force-merge needed; deleted documents and documents without a fingerprint are
//! skipped) and groups documents with identical fingerprints. Its nodes are these
//! **fingerprint groups**; its edges are the pairs of distinct fingerprints within `k`:
//!
//! - [`NearDupGraph::duplicate_groups`]: documents sharing one fingerprint (distance 0), as
//!   groups: a boilerplate page copied 10,000 times is one group, not 50 million pairs;
//! - [`NearDupGraph::for_each_pair`]: pairs of distinct fingerprints within `k`, each once,
//!   with the documents of both sides ([`GroupPair::for_each_doc_pair`] expands them);
//! - [`NearDupGraph::for_each_doc_pair`] and [`NearDupGraph::for_each_id_pair`]: every pair of
//!   documents (duplicates included), expanded, with addresses or user ids;
//! - [`NearDupGraph::clusters`]: connected components (union-find), with a deterministic id
//!   (the smallest user id of the cluster), which [`Clusters::write_groups`] stores in the
//!   group field so that results can be collapsed exactly afterwards.
//!
//! The join is Manku's pigeonhole self-join, in memory, on the fingerprint columns: for each key
//! combination of the [`BlockLayout`], bucket the distinct fingerprints by the bits of that
//! combination (a counting sort for keys of up to 24 bits), compare within each bucket, keep
//! pairs within `k`, and report a pair only under its first shared combination (computed from
//! the two fingerprints, so no set of seen pairs is needed). Buckets are verified in parallel
//! (rayon), in windows of bounded size, and pairs are handed to the caller window by window:
//! memory is the fingerprints (about 20 bytes per live document) plus one window of pairs, never
//! the whole candidate set. The keys stored in the index are not read: they are a function of
//! the fingerprint, and reading the column is cheaper than streaming the term dictionary
//! (measured in docs/PERFORMANCE.md). [`pairs_in_memory`] is the same kernel for a plain slice.
//!
//! Limits: exact duplicates cost nothing extra, but a bucket of many *distinct* fingerprints
//! sharing one key (boilerplate with small variations) is compared pairwise, `b * b / 2`
//! popcounts for a bucket of `b`; everything is in memory on one machine (about 36 bytes per
//! live document at the peak, beyond the index pages it reads; at most `u32::MAX` documents).
//! Across machines the same join would partition by key (each key's bucket is independent),
//! which this crate does not implement.
//!
//! ```
//! use tantivy::schema::{Schema, FAST, STORED, STRING, TEXT};
//! use tantivy::{doc, Index};
//! use tantivy_simhash::batch::NearDupGraph;
//! use tantivy_simhash::{Fingerprint, NearDupConfig, NearDupIndex, Policy};
//!
//! let config = NearDupConfig::new("id", ["body"]);
//! let mut builder = Schema::builder();
//! let id = builder.add_text_field("id", STRING | FAST | STORED);
//! builder.add_text_field("body", TEXT);
//! config.add_fields(&mut builder);
//! let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config)?;
//! let mut writer = index.writer(50_000_000, Policy::Off)?;
//! for (name, fp) in [("a", 0xff00u64), ("b", 0xff01), ("c", 0xff00), ("d", 0x1234_5678_9abc)] {
//!     writer.add_document_with_fingerprint(doc!(id => name), Fingerprint(fp))?;
//! }
//! writer.commit()?;
//!
//! let graph = NearDupGraph::new(index.fields(), &index.searcher()?)?;
//! let mut pairs = Vec::new();
//! graph.for_each_id_pair(|a, b, distance| pairs.push((a.min(b).to_string(), a.max(b).to_string(), distance)))?;
//! pairs.sort();
//! assert_eq!(pairs, [("a".into(), "b".into(), 1), ("a".into(), "c".into(), 0), ("b".into(), "c".into(), 1)]);
//!
//! let clusters = graph.clusters()?;
//! assert_eq!(clusters.len(), 1);
//! assert_eq!(clusters.iter().next().unwrap().id, "a"); // the smallest id names the cluster
//! # Ok::<(), tantivy_simhash::Error>(())
//! ```

use crate::columns::field_name;
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use crate::layout::BlockLayout;
use crate::lookup::NearDupSearcher;
use crate::schema::NearDupFields;
use crate::writer::DedupWriter;
use rayon::prelude::*;
use std::collections::HashMap;
use tantivy::columnar::StrColumn;
use tantivy::schema::{Field, Value};
use tantivy::{DocAddress, Searcher, TantivyDocument, Term};

/// Distinct fingerprints per unit of parallel work (one task verifies the buckets of this many
/// fingerprints), and how many such units are verified before their pairs are handed out.
const CHUNK_FINGERPRINTS: usize = 1 << 16;
const UNITS_PER_WINDOW: usize = 8;
/// Documents whose ids are read in one batch, and pairs of distinct fingerprints whose ids are
/// read in one batch, when pairs are reported with ids. Reading ids decompresses dictionary
/// blocks: sparse batches decompress a block per id, so batches are large (tens of MB).
const ID_BATCH_DOCS: usize = 1 << 20;
const ID_BATCH_PAIRS: usize = 1 << 20;

/// Every pair of `fingerprints` within `max_distance` (inclusive), each once, as
/// `f(i, j, distance)` with `i < j` indices into the slice. Identical fingerprints are paired
/// too (distance 0).
///
/// This is the in-memory kernel of [`NearDupGraph`], with the comparisons on the calling thread
/// (only the comparison sort for keys wider than 24 bits uses rayon): identical fingerprints are
/// grouped first (so exact duplicates cost their output, not a quadratic bucket scan), then the
/// distinct ones are joined per key combination of `layout`. Cost: a sort of the slice, then
/// per combination a counting (or comparison) sort and the comparisons within buckets (about
/// `layout.expected_candidates(n) * n / 2` distance tests for uniform fingerprints); memory
/// about 30 bytes per fingerprint at the peak. The number of calls is the number of pairs:
/// `g * (g - 1) / 2` for a group of `g` identical fingerprints.
///
/// Errors with [`Error::InvalidConfig`] when `max_distance` exceeds what `layout` guarantees,
/// or when the slice has more than `u32::MAX` fingerprints.
///
/// ```
/// use tantivy_simhash::{batch::pairs_in_memory, BlockLayout, Fingerprint};
///
/// let fps = [Fingerprint(0), Fingerprint(0b111), Fingerprint(0b1111), Fingerprint(0)];
/// let mut pairs = Vec::new();
/// pairs_in_memory(&fps, &BlockLayout::default(), 3, |i, j, d| pairs.push((i, j, d)))?;
/// pairs.sort();
/// assert_eq!(pairs, [(0, 1, 3), (0, 3, 0), (1, 2, 1), (1, 3, 3)]);
/// # Ok::<(), tantivy_simhash::Error>(())
/// ```
pub fn pairs_in_memory(
    fingerprints: &[Fingerprint],
    layout: &BlockLayout,
    max_distance: u32,
    mut f: impl FnMut(u32, u32, u32),
) -> Result<()> {
    check_distance(layout, max_distance)?;
    if u32::try_from(fingerprints.len()).is_err() {
        return Err(too_many(fingerprints.len()));
    }
    let mut order: Vec<(u64, u32)> = fingerprints
        .iter()
        .enumerate()
        .map(|(i, fp)| (fp.0, i as u32))
        .collect();
    order.sort_unstable();
    let groups = Groups::from_sorted(&order);
    let members: Vec<u32> = order.iter().map(|&(_, i)| i).collect();
    drop(order);
    let emit = |i: u32, j: u32, d: u32, f: &mut dyn FnMut(u32, u32, u32)| {
        if i < j {
            f(i, j, d)
        } else {
            f(j, i, d)
        }
    };
    for g in 0..groups.len() {
        let m = &members[groups.range(g)];
        for (x, &i) in m.iter().enumerate() {
            for &j in &m[x + 1..] {
                emit(i, j, 0, &mut f);
            }
        }
    }
    let join = Join::new(layout, max_distance);
    for combo in 0..layout.num_keys() {
        let buckets = join.buckets(&groups.fingerprints, combo);
        join.verify(&buckets, combo, 0..buckets.runs.len(), &mut |a, b, d| {
            for &i in &members[groups.range(a as usize)] {
                for &j in &members[groups.range(b as usize)] {
                    emit(i, j, d, &mut f);
                }
            }
        });
    }
    Ok(())
}

fn check_distance(layout: &BlockLayout, max_distance: u32) -> Result<()> {
    crate::layout::check_distance(layout.max_distance(), max_distance)
}

fn too_many(n: usize) -> Error {
    Error::InvalidConfig(format!(
        "{n} fingerprints; batch jobs handle at most {} at once: split the input (by segment \
         groups or shards) and join the parts",
        u32::MAX
    ))
}

/// Distinct fingerprints (sorted) and where each one's members start in a member array.
struct Groups {
    fingerprints: Vec<u64>,
    starts: Vec<u32>,
}

impl Groups {
    /// From rows sorted by fingerprint.
    fn from_sorted<T>(rows: &[(u64, T)]) -> Groups {
        // Counted first, so both vectors are allocated once at their exact size.
        let distinct = rows.chunk_by(|a, b| a.0 == b.0).count();
        let mut fingerprints = Vec::with_capacity(distinct);
        let mut starts = Vec::with_capacity(distinct + 1);
        let mut at = 0u32;
        for run in rows.chunk_by(|a, b| a.0 == b.0) {
            fingerprints.push(run[0].0);
            starts.push(at);
            at += run.len() as u32;
        }
        starts.push(at);
        Groups {
            fingerprints,
            starts,
        }
    }

    fn len(&self) -> usize {
        self.fingerprints.len()
    }

    fn range(&self, g: usize) -> std::ops::Range<usize> {
        self.starts[g] as usize..self.starts[g + 1] as usize
    }
}

/// The pigeonhole self-join of distinct fingerprints.
struct Join {
    max_distance: u32,
    /// The fingerprint bits of each key combination.
    masks: Vec<u64>,
    layout: BlockLayout,
}

/// The distinct fingerprints of one combination, ordered by that combination's bits, and the
/// runs (buckets with at least two fingerprints) to verify.
struct Buckets {
    fingerprints: Vec<u64>,
    rows: Vec<u32>,
    runs: Vec<(u32, u32)>,
}

impl Join {
    fn new(layout: &BlockLayout, max_distance: u32) -> Join {
        let masks = (0..layout.num_keys())
            .map(|c| {
                let zero = layout.key(c, Fingerprint(0));
                (0..64)
                    .filter(|&b| layout.key(c, Fingerprint(1 << b)) != zero)
                    .fold(0u64, |m, b| m | (1 << b))
            })
            .collect();
        Join {
            max_distance,
            masks,
            layout: layout.clone(),
        }
    }

    /// Buckets the distinct `fingerprints` by the bits of `combo`: a counting sort when the key
    /// has at most 24 bits and its offset table is not much larger than the input, a comparison
    /// sort otherwise.
    fn buckets(&self, fingerprints: &[u64], combo: usize) -> Buckets {
        let mask = self.masks[combo];
        let width = mask.count_ones();
        let shift = mask.trailing_zeros();
        let contiguous = width < 64 && (mask >> shift).trailing_ones() == width;
        let base = *self.layout.key_range(combo).start();
        let slot = |fp: u64| -> u64 {
            if contiguous {
                (fp & mask) >> shift
            } else {
                self.layout.key(combo, Fingerprint(fp)) - base
            }
        };
        let n = fingerprints.len();
        let mut out = Buckets {
            fingerprints: Vec::with_capacity(n),
            rows: Vec::with_capacity(n),
            runs: Vec::new(),
        };
        if width <= 24 && (1usize << width) <= (4 * n).max(1 << 16) {
            // The slot is recomputed in the scatter rather than stored: 4 bytes per fingerprint
            // less at the peak, for a shift and a mask.
            let mut offsets = vec![0u32; (1usize << width) + 1];
            for &fp in fingerprints {
                offsets[slot(fp) as usize + 1] += 1;
            }
            for i in 1..offsets.len() {
                offsets[i] += offsets[i - 1];
            }
            for w in offsets.windows(2) {
                if w[1] - w[0] >= 2 {
                    out.runs.push((w[0], w[1]));
                }
            }
            let mut next = offsets;
            out.fingerprints.resize(n, 0);
            out.rows.resize(n, 0);
            for (row, &fp) in fingerprints.iter().enumerate() {
                let s = slot(fp) as usize;
                let at = next[s] as usize;
                next[s] += 1;
                out.fingerprints[at] = fp;
                out.rows[at] = row as u32;
            }
        } else {
            let mut keyed: Vec<(u64, u32)> = fingerprints
                .par_iter()
                .enumerate()
                .map(|(row, &fp)| (slot(fp), row as u32))
                .collect();
            keyed.par_sort_unstable();
            let mut start = 0;
            for i in 1..=keyed.len() {
                if i == keyed.len() || keyed[i].0 != keyed[start].0 {
                    if i - start >= 2 {
                        out.runs.push((start as u32, i as u32));
                    }
                    start = i;
                }
            }
            for (_, row) in keyed {
                out.fingerprints.push(fingerprints[row as usize]);
                out.rows.push(row);
            }
        }
        out
    }

    /// Compares within the runs `runs` of `b`, calling `f(row_a, row_b, distance)` for every
    /// pair within `k` whose first shared combination is `combo`.
    fn verify(
        &self,
        b: &Buckets,
        combo: usize,
        runs: std::ops::Range<usize>,
        f: &mut dyn FnMut(u32, u32, u32),
    ) {
        // The distance test is the inner loop: with k known at compile time it is k rounds of
        // "clear the lowest set bit", cheaper than a popcount on targets without the popcnt
        // instruction (the default x86-64 target).
        match self.max_distance {
            0 => self.verify_within::<0>(b, combo, runs, f),
            1 => self.verify_within::<1>(b, combo, runs, f),
            2 => self.verify_within::<2>(b, combo, runs, f),
            3 => self.verify_within::<3>(b, combo, runs, f),
            4 => self.verify_within::<4>(b, combo, runs, f),
            5 => self.verify_within::<5>(b, combo, runs, f),
            6 => self.verify_within::<6>(b, combo, runs, f),
            _ => self.verify_within::<{ u32::MAX }>(b, combo, runs, f),
        }
    }

    /// [`verify`](Self::verify) for `max_distance == K`, or any distance with `K == u32::MAX`.
    fn verify_within<const K: u32>(
        &self,
        b: &Buckets,
        combo: usize,
        runs: std::ops::Range<usize>,
        f: &mut dyn FnMut(u32, u32, u32),
    ) {
        let k = self.max_distance;
        let within = |diff: u64| {
            if K == u32::MAX {
                diff.count_ones() <= k
            } else {
                let mut x = diff;
                for _ in 0..K {
                    x &= x.wrapping_sub(1);
                }
                x == 0
            }
        };
        let earlier = &self.masks[..combo];
        let mut hit = |x: usize, y: usize, diff: u64| {
            if earlier.iter().all(|&m| diff & m != 0) {
                f(b.rows[x], b.rows[y], diff.count_ones());
            }
        };
        for &(start, end) in &b.runs[runs] {
            let (start, end) = (start as usize, end as usize);
            for x in start..end {
                let a = b.fingerprints[x];
                let rest = &b.fingerprints[x + 1..end];
                // Eight comparisons without a branch (the compiler vectorises them), then the
                // rare hits one by one.
                let mut chunks = rest.chunks_exact(8);
                let mut at = x + 1;
                for chunk in &mut chunks {
                    let mut mask = 0u32;
                    for (i, &c) in chunk.iter().enumerate() {
                        mask |= u32::from(within(a ^ c)) << i;
                    }
                    while mask != 0 {
                        let i = mask.trailing_zeros() as usize;
                        mask &= mask - 1;
                        hit(x, at + i, a ^ chunk[i]);
                    }
                    at += 8;
                }
                for (i, &c) in chunks.remainder().iter().enumerate() {
                    if within(a ^ c) {
                        hit(x, at + i, a ^ c);
                    }
                }
            }
        }
    }

    /// Splits the runs of `b` into units of about [`CHUNK_FINGERPRINTS`] fingerprints.
    fn units(b: &Buckets) -> Vec<std::ops::Range<usize>> {
        let mut units = Vec::new();
        let mut first = 0;
        let mut size = 0usize;
        for (i, &(s, e)) in b.runs.iter().enumerate() {
            size += (e - s) as usize;
            if size >= CHUNK_FINGERPRINTS {
                units.push(first..i + 1);
                first = i + 1;
                size = 0;
            }
        }
        if first < b.runs.len() {
            units.push(first..b.runs.len());
        }
        units
    }

    /// Every pair of distinct fingerprints within `k`, each once, verified in parallel and
    /// handed to `f` one window of units at a time (on the caller's thread).
    fn for_each_window(
        &self,
        fingerprints: &[u64],
        mut f: impl FnMut(&[(u32, u32, u32)]) -> Result<()>,
    ) -> Result<()> {
        for combo in 0..self.masks.len() {
            let b = self.buckets(fingerprints, combo);
            let units = Join::units(&b);
            for window in units.chunks(UNITS_PER_WINDOW) {
                let found: Vec<Vec<(u32, u32, u32)>> = window
                    .par_iter()
                    .map(|runs| {
                        let mut v = Vec::new();
                        self.verify(&b, combo, runs.clone(), &mut |x, y, d| v.push((x, y, d)));
                        v
                    })
                    .collect();
                for v in &found {
                    if !v.is_empty() {
                        f(v)?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Documents sharing one fingerprint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FingerprintGroup<'a> {
    /// The fingerprint.
    pub fingerprint: Fingerprint,
    /// The live documents with this fingerprint, in address order.
    pub docs: &'a [DocAddress],
}

/// Two fingerprint groups within `k` of each other (distance >= 1): every document of `a` is a
/// near-duplicate of every document of `b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupPair<'a> {
    /// One side.
    pub a: FingerprintGroup<'a>,
    /// The other side.
    pub b: FingerprintGroup<'a>,
    /// The Hamming distance between the two fingerprints.
    pub distance: u32,
}

impl GroupPair<'_> {
    /// Calls `f(doc_a, doc_b)` for each of the `a.docs.len() * b.docs.len()` document pairs.
    pub fn for_each_doc_pair(&self, mut f: impl FnMut(DocAddress, DocAddress)) {
        for &x in self.a.docs {
            for &y in self.b.docs {
                f(x, y);
            }
        }
    }
}

/// The near-duplicate graph of a searcher's live documents. See the [module docs](self).
///
/// Holds a clone of the tantivy searcher (the segments it read stay alive while it lives), the
/// distinct fingerprints and the addresses of the live documents: about 20 bytes per document
/// (measured in docs/PERFORMANCE.md).
pub struct NearDupGraph {
    searcher: Searcher,
    layout: BlockLayout,
    max_distance: u32,
    id_field: Field,
    group_field: Option<Field>,
    fingerprint_field: Field,
    keys_field: Field,
    ids: Vec<Option<StrColumn>>,
    groups_columns: Vec<Option<StrColumn>>,
    groups: Groups,
    /// Live documents, grouped by fingerprint (in the order of `groups.fingerprints`).
    docs: Vec<DocAddress>,
}

impl std::fmt::Debug for NearDupGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NearDupGraph")
            .field("docs", &self.docs.len())
            .field("fingerprints", &self.groups.len())
            .field("max_distance", &self.max_distance)
            .finish_non_exhaustive()
    }
}

impl NearDupGraph {
    /// Gathers the live documents of `searcher`, with the layout's `k`.
    ///
    /// Cost: one pass over each segment's fingerprint column (in parallel) and a parallel sort
    /// of (fingerprint, address) rows; no pair is computed yet. Errors: tantivy errors opening
    /// the columns; [`Error::InvalidConfig`] beyond `u32::MAX` live documents.
    pub fn new(fields: NearDupFields, searcher: &Searcher) -> Result<Self> {
        NearDupGraph::with_max_distance(fields, searcher, fields.layout().max_distance())
    }

    /// Like [`new`](Self::new), with pairs up to `max_distance` (inclusive). Errors with
    /// [`Error::InvalidConfig`] when it exceeds the layout's `k`.
    pub fn with_max_distance(
        fields: NearDupFields,
        searcher: &Searcher,
        max_distance: u32,
    ) -> Result<Self> {
        let layout = fields.layout().clone();
        check_distance(&layout, max_distance)?;
        let schema = searcher.schema();
        let fp_name = field_name(schema, fields.fingerprint)?.to_string();
        let id_name = field_name(schema, fields.id)?.to_string();
        let group_name = match fields.group {
            Some(g) => Some(field_name(schema, g)?.to_string()),
            None => None,
        };
        let tantivy_searcher = searcher.clone();
        let segments = tantivy_searcher.segment_readers();

        // One allocation for all segments (each fills its own slice), so the peak is one row
        // per live document, not two.
        let alive_docs: Vec<usize> = segments.iter().map(|s| s.num_docs() as usize).collect();
        let total: usize = alive_docs.iter().sum();
        if u32::try_from(total).is_err() {
            return Err(too_many(total));
        }
        let mut rows = vec![(0u64, DocAddress::new(0, 0)); total];
        let mut slices = Vec::with_capacity(segments.len());
        let mut rest = rows.as_mut_slice();
        for &n in &alive_docs {
            let (head, tail) = rest.split_at_mut(n);
            slices.push(head);
            rest = tail;
        }
        let filled: Vec<usize> = segments
            .par_iter()
            .zip(slices)
            .enumerate()
            .map(|(ord, (seg, out))| -> Result<usize> {
                let col = seg.fast_fields().u64(&fp_name)?;
                let alive = seg.alive_bitset();
                let mut n = 0;
                for doc in 0..seg.max_doc() {
                    if alive.is_some_and(|a| !a.is_alive(doc)) {
                        continue;
                    }
                    // Documents added around the writer have no fingerprint: skipped.
                    if let (Some(fp), Some(slot)) = (col.first(doc), out.get_mut(n)) {
                        *slot = (fp, DocAddress::new(ord as u32, doc));
                        n += 1;
                    }
                }
                Ok(n)
            })
            .collect::<Result<_>>()?;
        if filled != alive_docs {
            // Close the gaps left by documents without a fingerprint.
            let mut at = 0;
            let mut start = 0;
            for (&n, &cap) in filled.iter().zip(&alive_docs) {
                rows.copy_within(start..start + n, at);
                at += n;
                start += cap;
            }
            rows.truncate(at);
        }
        rows.par_sort_unstable();
        let groups = Groups::from_sorted(&rows);
        let docs: Vec<DocAddress> = rows.iter().map(|&(_, a)| a).collect();
        drop(rows);

        let mut ids = Vec::with_capacity(segments.len());
        let mut groups_columns = Vec::with_capacity(segments.len());
        for seg in segments {
            ids.push(seg.fast_fields().str(&id_name)?);
            groups_columns.push(match &group_name {
                Some(g) => seg.fast_fields().str(g)?,
                None => None,
            });
        }
        Ok(NearDupGraph {
            searcher: tantivy_searcher,
            layout,
            max_distance,
            id_field: fields.id,
            group_field: fields.group,
            fingerprint_field: fields.fingerprint,
            keys_field: fields.keys,
            ids,
            groups_columns,
            groups,
            docs,
        })
    }

    /// The distance up to which documents are paired (inclusive).
    pub fn max_distance(&self) -> u32 {
        self.max_distance
    }

    /// The live documents with a fingerprint.
    pub fn num_docs(&self) -> usize {
        self.docs.len()
    }

    /// The distinct fingerprints among them.
    pub fn num_fingerprints(&self) -> usize {
        self.groups.len()
    }

    /// The tantivy searcher the graph was gathered from (addresses refer to it).
    pub fn searcher(&self) -> &Searcher {
        &self.searcher
    }

    fn group(&self, g: usize) -> FingerprintGroup<'_> {
        FingerprintGroup {
            fingerprint: Fingerprint(self.groups.fingerprints[g]),
            docs: &self.docs[self.groups.range(g)],
        }
    }

    /// Every fingerprint group (singletons included), by increasing fingerprint.
    pub fn groups(&self) -> impl Iterator<Item = FingerprintGroup<'_>> + '_ {
        (0..self.groups.len()).map(|g| self.group(g))
    }

    /// The groups of at least two documents: exact duplicates (distance 0).
    pub fn duplicate_groups(&self) -> impl Iterator<Item = FingerprintGroup<'_>> + '_ {
        self.groups().filter(|g| g.docs.len() >= 2)
    }

    /// Calls `f` once for every pair of distinct fingerprints within `k` (so `distance >= 1`),
    /// with the documents of both sides. Together with [`duplicate_groups`](Self::duplicate_groups)
    /// this is every near-duplicate pair, without the quadratic expansion of large groups.
    ///
    /// Cost: for each key combination, a counting sort of the distinct fingerprints and the
    /// comparisons within buckets, in parallel; pairs are handed out (on the caller's thread) a
    /// window at a time, so memory stays bounded by one window's pairs. `a` holds the smaller
    /// fingerprint. Errors: none today (everything it reads is in memory); the `Result` leaves
    /// room for a disk-backed join without an API change.
    pub fn for_each_pair(&self, mut f: impl FnMut(GroupPair<'_>)) -> Result<()> {
        self.join()
            .for_each_window(&self.groups.fingerprints, |pairs| {
                for &(a, b, distance) in pairs {
                    f(GroupPair {
                        a: self.group(a as usize),
                        b: self.group(b as usize),
                        distance,
                    });
                }
                Ok(())
            })
    }

    fn join(&self) -> Join {
        Join::new(&self.layout, self.max_distance)
    }

    /// Calls `f(a, b, distance)` once for every pair of live documents within `k`, duplicates
    /// included: the pairs inside each duplicate group first (distance 0), then the expansion
    /// of every [`GroupPair`]. The number of calls is the number of document pairs, quadratic in
    /// the size of a duplicate group: prefer [`for_each_pair`](Self::for_each_pair) when large
    /// groups are expected. Errors: as [`for_each_pair`](Self::for_each_pair).
    pub fn for_each_doc_pair(&self, mut f: impl FnMut(DocAddress, DocAddress, u32)) -> Result<()> {
        for g in self.duplicate_groups() {
            for (x, &a) in g.docs.iter().enumerate() {
                for &b in &g.docs[x + 1..] {
                    f(a, b, 0);
                }
            }
        }
        self.for_each_pair(|p| p.for_each_doc_pair(|a, b| f(a, b, p.distance)))
    }

    /// Like [`for_each_doc_pair`](Self::for_each_doc_pair), with the user ids of both
    /// documents. Ids are read in batches (per segment, in term order, so each block of the id
    /// column's dictionary is decompressed once per batch rather than once per id): up to
    /// about a million pairs of distinct fingerprints are held, with the ids of their
    /// documents, before they are handed out (tens of MB). Measured in docs/PERFORMANCE.md.
    ///
    /// Errors: [`Error::Document`] when a document has no id; tantivy errors reading ids.
    pub fn for_each_id_pair(&self, mut f: impl FnMut(&str, &str, u32)) -> Result<()> {
        // Duplicate groups, in batches of about ID_BATCH_DOCS documents.
        let mut batch: Vec<usize> = Vec::new();
        let mut batch_docs = 0;
        let flush_groups = |batch: &mut Vec<usize>, f: &mut dyn FnMut(&str, &str, u32)| {
            let docs: Vec<DocAddress> = batch
                .iter()
                .flat_map(|&g| self.docs[self.groups.range(g)].iter().copied())
                .collect();
            let ids = self.read_required_ids(&docs)?;
            let mut at = 0;
            for &g in batch.iter() {
                let n = self.groups.range(g).len();
                let m = &ids[at..at + n];
                for (x, a) in m.iter().enumerate() {
                    for b in &m[x + 1..] {
                        f(a, b, 0);
                    }
                }
                at += n;
            }
            batch.clear();
            Ok::<(), Error>(())
        };
        for g in 0..self.groups.len() {
            let n = self.groups.range(g).len();
            if n >= 2 {
                batch.push(g);
                batch_docs += n;
                if batch_docs >= ID_BATCH_DOCS {
                    flush_groups(&mut batch, &mut f)?;
                    batch_docs = 0;
                }
            }
        }
        flush_groups(&mut batch, &mut f)?;

        // Pairs of distinct fingerprints, in batches of about ID_BATCH_PAIRS.
        let mut pending: Vec<(u32, u32, u32)> = Vec::new();
        self.join()
            .for_each_window(&self.groups.fingerprints, |pairs| {
                pending.extend_from_slice(pairs);
                if pending.len() >= ID_BATCH_PAIRS {
                    self.emit_id_pairs(&pending, &mut f)?;
                    pending.clear();
                }
                Ok(())
            })?;
        self.emit_id_pairs(&pending, &mut f)
    }

    /// Reads the ids of the documents of `pairs` (group pairs) in one batch, then expands.
    fn emit_id_pairs(
        &self,
        pairs: &[(u32, u32, u32)],
        f: &mut dyn FnMut(&str, &str, u32),
    ) -> Result<()> {
        let mut involved: Vec<u32> = pairs.iter().flat_map(|&(a, b, _)| [a, b]).collect();
        involved.sort_unstable();
        involved.dedup();
        let docs: Vec<DocAddress> = involved
            .iter()
            .flat_map(|&g| self.docs[self.groups.range(g as usize)].iter().copied())
            .collect();
        let ids = self.read_required_ids(&docs)?;
        // Where each involved group's ids start.
        let mut starts = Vec::with_capacity(involved.len() + 1);
        let mut at = 0;
        for &g in &involved {
            starts.push(at);
            at += self.groups.range(g as usize).len();
        }
        starts.push(at);
        let ids_of = |g: u32| {
            let i = involved.partition_point(|&x| x < g);
            &ids[starts[i]..starts[i + 1]]
        };
        for &(a, b, d) in pairs {
            for x in ids_of(a) {
                for y in ids_of(b) {
                    f(x, y, d);
                }
            }
        }
        Ok(())
    }

    /// The user ids of `docs` (addresses of this graph's searcher), in the same order; `None`
    /// for a document without an id. Reads each segment's id dictionary once, in term order,
    /// for the whole slice: far cheaper than one [`NearDupSearcher::id_of`] per document for
    /// large slices, and about the same for a handful.
    pub fn read_ids(&self, docs: &[DocAddress]) -> Result<Vec<Option<String>>> {
        read_strs(&self.ids, docs)
    }

    fn read_required_ids(&self, docs: &[DocAddress]) -> Result<Vec<String>> {
        self.read_ids(docs)?
            .into_iter()
            .zip(docs)
            .map(|(id, a)| {
                id.ok_or_else(|| {
                    Error::Document(format!(
                        "the document at segment {} doc {} has no id; every document needs one \
                         (add documents through DedupWriter)",
                        a.segment_ord, a.doc_id
                    ))
                })
            })
            .collect()
    }

    /// The connected components of the near-duplicate graph with at least two documents
    /// (union-find over fingerprint groups), each named by its smallest user id, sorted by id.
    ///
    /// Cost: the join (as [`for_each_pair`](Self::for_each_pair)), 4 bytes per distinct
    /// fingerprint for the union-find, and one batched id read for the members of non-singleton
    /// clusters. Errors: [`Error::Document`] when a member has no id.
    pub fn clusters(&self) -> Result<Clusters> {
        let n = self.groups.len();
        let mut uf = UnionFind::new(n);
        self.join()
            .for_each_window(&self.groups.fingerprints, |pairs| {
                for &(a, b, _) in pairs {
                    uf.union(a, b);
                }
                Ok(())
            })?;
        // Members of each root, for roots with at least two documents.
        let mut size = vec![0u32; n];
        for g in 0..n {
            let r = uf.find(g as u32) as usize;
            size[r] += self.groups.range(g).len() as u32;
        }
        let mut slot: HashMap<u32, usize> = HashMap::new();
        let mut members: Vec<Vec<(DocAddress, Fingerprint)>> = Vec::new();
        for g in 0..n {
            let r = uf.find(g as u32);
            if size[r as usize] < 2 {
                continue;
            }
            let i = *slot.entry(r).or_insert_with(|| {
                members.push(Vec::with_capacity(size[r as usize] as usize));
                members.len() - 1
            });
            let fp = Fingerprint(self.groups.fingerprints[g]);
            members[i].extend(self.docs[self.groups.range(g)].iter().map(|&a| (a, fp)));
        }
        drop(size);
        let all: Vec<DocAddress> = members.iter().flatten().map(|&(a, _)| a).collect();
        let ids = self.read_required_ids(&all)?;
        let mut ids = ids.into_iter();
        let mut clusters: Vec<Cluster> = members
            .into_iter()
            .map(|m| {
                let mut members: Vec<ClusterMember> = m
                    .into_iter()
                    .map(|(address, fingerprint)| ClusterMember {
                        id: ids.next().unwrap_or_default(),
                        address,
                        fingerprint,
                    })
                    .collect();
                members.sort_by(|a, b| a.id.cmp(&b.id).then(a.address.cmp(&b.address)));
                Cluster {
                    id: members[0].id.clone(),
                    members,
                }
            })
            .collect();
        clusters.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(Clusters {
            clusters,
            num_docs: self.docs.len(),
        })
    }
}

/// Reads the strings of `docs` from per-segment string columns, batched per segment in
/// term-ordinal order.
fn read_strs(columns: &[Option<StrColumn>], docs: &[DocAddress]) -> Result<Vec<Option<String>>> {
    let mut out: Vec<Option<String>> = vec![None; docs.len()];
    // (segment, term ordinal, position in `docs`)
    let mut wanted: Vec<(u32, u64, u32)> = Vec::with_capacity(docs.len());
    for (pos, a) in docs.iter().enumerate() {
        if let Some(Some(col)) = columns.get(a.segment_ord as usize) {
            if let Some(ord) = col.ords().first(a.doc_id) {
                wanted.push((a.segment_ord, ord, pos as u32));
            }
        }
    }
    wanted.sort_unstable();
    let mut i = 0;
    while i < wanted.len() {
        let seg = wanted[i].0;
        let end = i + wanted[i..].partition_point(|w| w.0 == seg);
        let slice = &wanted[i..end];
        if let Some(Some(col)) = columns.get(seg as usize) {
            let ords: Vec<u64> = slice.iter().map(|w| w.1).collect();
            let mut positions = slice.iter().map(|w| w.2 as usize);
            col.dictionary().sorted_ords_to_term_cb(&ords, |bytes| {
                if let Some(p) = positions.next() {
                    out[p] = Some(String::from_utf8_lossy(bytes).into_owned());
                }
            })?;
        }
        i = end;
    }
    Ok(out)
}

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
/// chain of pairs within `k` (so two members can be farther apart than `k`).
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
}

/// What [`Clusters::write_groups`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupsWritten {
    /// Documents deleted and re-added with their cluster id in the group field.
    pub rewritten: usize,
    /// Documents whose group field already held the right value.
    pub unchanged: usize,
}

impl Clusters {
    /// The clusters, sorted by id.
    pub fn iter(&self) -> impl Iterator<Item = &Cluster> + '_ {
        self.clusters.iter()
    }

    /// The number of clusters.
    pub fn len(&self) -> usize {
        self.clusters.len()
    }

    /// Whether there is no cluster (no two live documents are within `k`).
    pub fn is_empty(&self) -> bool {
        self.clusters.is_empty()
    }

    /// Live documents in the graph, clustered or alone.
    pub fn num_docs(&self) -> usize {
        self.num_docs
    }

    /// The cluster with id `id`, if any (binary search).
    pub fn get(&self, id: &str) -> Option<&Cluster> {
        self.clusters
            .binary_search_by(|c| c.id.as_str().cmp(id))
            .ok()
            .map(|i| &self.clusters[i])
    }

    /// Stores each document's cluster id in the group field, through `writer`, so that
    /// collapsing on the group field afterwards is exact: members of a cluster get the cluster
    /// id; a document alone keeps no group or gets its own id (what [`Policy::Tag`] would
    /// give it). tantivy cannot update a document in place, so each document whose group field
    /// is wrong is deleted (by id) and re-added: `documents(id, address)` supplies its fields
    /// (the fingerprint, key and group fields are rewritten and may be absent).
    /// [`write_groups_from_store`](Self::write_groups_from_store) reads them from the doc store.
    ///
    /// Call [`DedupWriter::commit`] afterwards. Limits: ids must be unique (a delete by id
    /// removes every document with that id); documents added after `graph` was gathered are
    /// not considered, and one with the id of a rewritten document would be deleted, so run it
    /// on a quiescent index; until the commit, the writer's own near-duplicate check does not
    /// see the rewritten documents.
    ///
    /// Errors: [`Error::Schema`] without a group field; [`Error::Document`] when a document has
    /// no id; errors of `documents` and of the writer. Documents rewritten before an error stay
    /// rewritten (uncommitted: [`DedupWriter::rollback`] drops them).
    ///
    /// ```
    /// use tantivy::schema::{Schema, FAST, STORED, STRING, TEXT};
    /// use tantivy::{doc, Index};
    /// use tantivy_simhash::batch::NearDupGraph;
    /// use tantivy_simhash::{Fingerprint, NearDupConfig, NearDupIndex, NearDupSearcher, Policy};
    ///
    /// let config = NearDupConfig::new("id", ["body"]);
    /// let mut builder = Schema::builder();
    /// let id = builder.add_text_field("id", STRING | FAST | STORED);
    /// let body = builder.add_text_field("body", TEXT); // not stored: we supply documents
    /// config.add_fields(&mut builder);
    /// let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config)?;
    /// let mut writer = index.writer(50_000_000, Policy::Off)?;
    /// // "b" is within 3 of "a", "c" within 3 of "b" but 5 from "a": one cluster by chaining.
    /// for (name, fp) in [("a", 0b0u64), ("b", 0b111), ("c", 0b1_1111), ("d", !0)] {
    ///     writer.add_document_with_fingerprint(doc!(id => name, body => "text"), Fingerprint(fp))?;
    /// }
    /// writer.commit()?;
    ///
    /// let graph = NearDupGraph::new(index.fields(), &index.searcher()?)?;
    /// let clusters = graph.clusters()?;
    /// let written = clusters.write_groups(&graph, &writer, |id_value, _address| {
    ///     Ok(doc!(id => id_value, body => "text")) // from the caller's own store
    /// })?;
    /// assert_eq!(written.rewritten, 3);
    /// writer.commit()?;
    ///
    /// let searcher = NearDupSearcher::new(index.fields(), &index.searcher()?)?;
    /// let hits = searcher.lookup_id("c")?; // "c" itself and "b"; "a" is 5 away
    /// assert_eq!(hits.len(), 2);
    /// for hit in hits {
    ///     let group = searcher.group_of(hit.address)?;
    ///     assert_eq!(group.as_deref(), Some("a")); // collapse on the group: one result
    /// }
    /// # Ok::<(), tantivy_simhash::Error>(())
    /// ```
    ///
    /// [`Policy::Tag`]: crate::Policy::Tag
    pub fn write_groups(
        &self,
        graph: &NearDupGraph,
        writer: &DedupWriter,
        mut documents: impl FnMut(&str, DocAddress) -> Result<TantivyDocument>,
    ) -> Result<GroupsWritten> {
        let Some(group_field) = graph.group_field else {
            return Err(Error::Schema {
                field: "group".into(),
                problem: "cluster ids are stored in the group field, but the configuration has \
                          none; keep NearDupConfig's group field"
                    .into(),
            });
        };
        // (id, address, fingerprint, wanted group); None = alone and fine without a group.
        let mut todo: Vec<(String, DocAddress, Fingerprint, String)> = Vec::new();
        let mut written = GroupsWritten::default();
        // Current groups of all members, read in large batches (a small read decompresses a
        // dictionary block per value).
        let members: Vec<(&Cluster, &ClusterMember)> = self
            .clusters
            .iter()
            .flat_map(|c| c.members.iter().map(move |m| (c, m)))
            .collect();
        for chunk in members.chunks(ID_BATCH_DOCS) {
            let addrs: Vec<DocAddress> = chunk.iter().map(|(_, m)| m.address).collect();
            let current = read_strs(&graph.groups_columns, &addrs)?;
            for (&(c, m), cur) in chunk.iter().zip(current) {
                if cur.as_deref() == Some(c.id.as_str()) {
                    written.unchanged += 1;
                } else {
                    todo.push((m.id.clone(), m.address, m.fingerprint, c.id.clone()));
                }
            }
        }
        let mut clustered: Vec<DocAddress> = members.iter().map(|(_, m)| m.address).collect();
        drop(members);
        clustered.sort_unstable();
        // Documents alone: only those carrying a group other than their own id are wrong.
        let mut alone: Vec<(DocAddress, Fingerprint)> = Vec::new();
        for g in graph.groups() {
            for &a in g.docs {
                let has_group = graph
                    .groups_columns
                    .get(a.segment_ord as usize)
                    .and_then(|c| c.as_ref())
                    .is_some_and(|c| c.ords().first(a.doc_id).is_some());
                if has_group && clustered.binary_search(&a).is_err() {
                    alone.push((a, g.fingerprint));
                }
            }
        }
        for chunk in alone.chunks(ID_BATCH_DOCS) {
            let addrs: Vec<DocAddress> = chunk.iter().map(|&(a, _)| a).collect();
            let ids = graph.read_required_ids(&addrs)?;
            let current = read_strs(&graph.groups_columns, &addrs)?;
            for ((&(a, fp), id), cur) in chunk.iter().zip(ids).zip(current) {
                if cur.as_deref() == Some(id.as_str()) {
                    written.unchanged += 1;
                } else {
                    todo.push((id.clone(), a, fp, id));
                }
            }
        }
        todo.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        let layout = &graph.layout;
        // A re-added document keeps its place in the input order and the ids it replaced:
        // both are read from the graph's snapshot, whatever the supplied document holds.
        let fields = writer.index().fields();
        let snapshot = NearDupSearcher::new(fields, &graph.searcher)?;
        let reserved: Vec<Field> = [graph.fingerprint_field, graph.keys_field, group_field]
            .into_iter()
            .chain(fields.sequence)
            .chain(fields.replaced)
            .chain(
                writer
                    .index()
                    .signature_fields()
                    .sketch_fields()
                    .iter()
                    .copied(),
            )
            .collect();
        let mut i = 0;
        while i < todo.len() {
            let id = todo[i].0.clone();
            let end = i + todo[i..].partition_point(|t| t.0 == id);
            // One delete per id, before its re-adds (a delete applies to earlier documents).
            writer.delete_term(Term::from_field_text(graph.id_field, &id));
            for (id, address, fp, group) in &todo[i..end] {
                let source = documents(id, *address)?;
                let mut doc = TantivyDocument::default();
                for (field, value) in source.field_values() {
                    if !reserved.contains(&field) {
                        doc.add_field_value(field, value);
                    }
                }
                if doc.get_first(graph.id_field).and_then(|v| v.as_str()) != Some(id.as_str()) {
                    return Err(Error::Document(format!(
                        "the document supplied for id `{id}` has another id or none; supply the \
                         document with that id"
                    )));
                }
                // The stored signature (fingerprint, sketch, the rule's keys) goes back as it was.
                match snapshot.signature_at(*address) {
                    Some(sig) => writer.index().add_signature_to(&mut doc, &sig),
                    None => {
                        doc.add_u64(graph.fingerprint_field, fp.0);
                        for key in layout.keys(*fp) {
                            doc.add_u64(graph.keys_field, key);
                        }
                    }
                }
                doc.add_text(group_field, group);
                if let (Some(field), Some(sequence)) =
                    (fields.sequence, snapshot.sequence_of(*address))
                {
                    doc.add_u64(field, sequence);
                }
                if let Some(field) = fields.replaced {
                    for replaced in snapshot.replaced_ids_of(*address)? {
                        doc.add_text(field, &replaced);
                    }
                }
                writer.index_writer().add_document(doc.into())?;
                written.rewritten += 1;
            }
            i = end;
        }
        Ok(written)
    }

    /// [`write_groups`](Self::write_groups) with the documents read back from tantivy's doc
    /// store. Only stored fields survive a re-add, so every field of the schema other than the
    /// fingerprint, key and group fields must be `STORED`; otherwise this errors
    /// ([`Error::Schema`]) before writing anything: supply the documents with `write_groups`.
    /// Cost: one doc store read (a block decompression) per rewritten document.
    pub fn write_groups_from_store(
        &self,
        graph: &NearDupGraph,
        writer: &DedupWriter,
    ) -> Result<GroupsWritten> {
        let schema = graph.searcher.schema();
        let fields = writer.index().fields();
        let reserved = [
            Some(graph.fingerprint_field),
            Some(graph.keys_field),
            graph.group_field,
            fields.sequence,
            fields.replaced,
        ];
        let sketch = writer.index().signature_fields().sketch_fields();
        for (field, entry) in schema.fields() {
            if !reserved.contains(&Some(field)) && !sketch.contains(&field) && !entry.is_stored() {
                return Err(Error::Schema {
                    field: entry.name().to_string(),
                    problem: "not STORED, so re-adding documents from the doc store would lose \
                              it; store it, or supply the documents with Clusters::write_groups"
                        .into(),
                });
            }
        }
        let searcher = graph.searcher.clone();
        self.write_groups(graph, writer, |_, address| {
            Ok(searcher.doc::<TantivyDocument>(address)?)
        })
    }
}
