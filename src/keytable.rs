//! Key tables: a segment's keys in memory, so a lookup costs a few array reads per key instead
//! of a term-dictionary look-up and a postings read.
//!
//! A document's keys are a pure function of its stored signature ([`MatchRule::keys`] of the
//! fingerprint and sketch columns), so a [`KeyTable`] is built from the fast columns alone,
//! without touching the postings. It holds, per key position of the rule (4 simhash block
//! keys, then 12 band keys by default), the documents of the segment under each key value,
//! **in doc id order, deleted documents included**: exactly what the key's postings hold. A
//! lookup through a table therefore reads the same candidates in the same order as through the
//! postings (the bound on hot keys included), and checks deletes against the searcher's alive
//! bitset as before: a table depends on the segment only, never on its deletes, so it never
//! goes stale (segments are immutable; deleting documents changes the bitset, not the table).
//!
//! Layout of one key position (a "family"): the key's value `v` (its low 48 bits; the top
//! bits are the position's tag) is split into a bucket, its low `p` bits, and a suffix, the
//! rest. `starts[b]..starts[b + 1]` are the bucket's entries, each one `u32` packing
//! `suffix << doc_bits | doc`, sorted, so one key is a contiguous run in doc id order. `p` is
//! about `log2(documents) - 1`, so a bucket holds ~2 entries and a key costs ~2 cache misses
//! (the directory, then the entries). Memory: 4 B per entry plus 4 B per bucket, i.e. **about
//! 6-8 B per key per document** (~100-130 B per document for the default rule's 16 keys, ~24-32 B
//! for an index of fingerprints only; docs/PERFORMANCE.md has the measured figures). A position whose suffix and doc id do not fit in 32
//! bits with a directory of at most `max(8 x documents, 65,536)` buckets (keys much wider than
//! the segment needs: layouts of 2-3 blocks per key with 32-48 key bits) gets no table and is
//! read from its postings (or scanned, keys in columns only); the default rule's keys (16 and
//! 20 bits) always fit.
//!
//! In an index with key postings ([`NearDupConfig::with_key_postings`](crate::NearDupConfig::with_key_postings)),
//! tables are built lazily, once a segment has served `max(32, documents / 1024)` lookups in
//! the process (a one-off lookup never pays the build: it reads the postings). In an index
//! whose keys live in the columns only, there are no postings: a segment's table is built on
//! its first lookup, and a segment that gets no table (past the memory bound, tables disabled,
//! or a key position that does not fit) is answered by a **scan** of its signature columns
//! that computes every document's keys (same documents in the same order, a read of every
//! document per lookup; counted in [`KeyTableStats::scans`]). Tables are shared by every
//! searcher of the segment in the process like [`crate::ids`]'s id tables, and freed with the
//! last searcher that holds the segment (a merged-away segment's table goes with it).

use crate::columns::{for_each_posting_up_to, SegmentRegistry};
use crate::signature::store::SegmentSignatures;
use crate::signature::{MatchRule, Signature, Sketch};
use crate::Fingerprint;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tantivy::fastfield::AliveBitSet;
use tantivy::index::SegmentId;
use tantivy::schema::Field;
use tantivy::{DocId, InvertedIndexReader, Term};

/// The bits of a key below its position's tag.
const VALUE_MASK: u64 = (1 << 48) - 1;

/// The default bound on the memory all key tables of the process hold together: 1 GiB, the
/// tables of about 10 million documents under the default rule.
pub const DEFAULT_KEY_TABLE_MEMORY_LIMIT: u64 = 1 << 30;

static MEMORY_LIMIT: AtomicU64 = AtomicU64::new(DEFAULT_KEY_TABLE_MEMORY_LIMIT);
static MEMORY_USED: AtomicU64 = AtomicU64::new(0);

/// Bounds the memory that the key tables of the whole process may hold together (default
/// [`DEFAULT_KEY_TABLE_MEMORY_LIMIT`]). A segment whose table would pass the bound gets none
/// and is read from its postings (slower, same results), or, in an index whose keys live in
/// the columns only, scanned on every lookup (much slower: a read of every document of the
/// segment; counted in [`KeyTableStats::scans`]) until other tables are freed; tables already
/// built are kept. `0` builds no more tables. See
/// [`NearDupSearcher::with_key_tables`](crate::NearDupSearcher::with_key_tables).
pub fn set_key_table_memory_limit(bytes: u64) {
    MEMORY_LIMIT.store(bytes, Ordering::Relaxed);
}

/// The memory the process's key tables hold now, in bytes.
pub fn key_table_memory_used() -> u64 {
    MEMORY_USED.load(Ordering::Relaxed)
}

/// Reserves `bytes` of the process's budget for a table; `false` when it would pass the bound.
fn reserve(bytes: u64) -> bool {
    let limit = MEMORY_LIMIT.load(Ordering::Relaxed);
    MEMORY_USED
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
            used.checked_add(bytes).filter(|&total| total <= limit)
        })
        .is_ok()
}

/// The in-memory keys of one segment under one rule. See the [module docs](self).
#[derive(Debug)]
pub(crate) struct KeyTable {
    rule: MatchRule,
    families: Vec<Option<Family>>,
    build_time: Duration,
    /// Bytes of the process's budget this table holds (returned when it is dropped).
    reserved: u64,
}

impl Drop for KeyTable {
    fn drop(&mut self) {
        MEMORY_USED.fetch_sub(self.reserved, Ordering::Relaxed);
    }
}

/// A family's `(bucket_bits, suffix_bits, doc_bits)`.
type Plan = (u32, u32, u32);

/// One key position's documents by key value.
#[derive(Debug)]
struct Family {
    /// Bucket bits: the low `bucket_bits` bits of a key's value pick the bucket.
    bucket_bits: u32,
    /// Bits of the value above the bucket bits, kept in each entry.
    suffix_bits: u32,
    /// Bits of the doc id in each entry.
    doc_bits: u32,
    /// `starts[b]..starts[b + 1]` are bucket `b`'s entries.
    starts: Vec<u32>,
    /// `suffix << doc_bits | doc`, sorted within each bucket.
    entries: Vec<u32>,
}

impl Family {
    /// Parameters for values of `width` bits among `max_doc` documents, if they fit in `u32`
    /// entries with a directory at most 8 times the documents (or 64 Ki buckets).
    fn plan(width: u32, max_doc: u32) -> Option<Plan> {
        let doc_bits = bits_for(max_doc.saturating_sub(1)).max(1);
        let target = bits_for(max_doc).saturating_sub(1).min(width);
        let least = (width + doc_bits).saturating_sub(32);
        let bucket_bits = target.max(least).min(width);
        let buckets = 1u64 << bucket_bits;
        if width - bucket_bits + doc_bits > 32 || buckets > (8 * u64::from(max_doc)).max(1 << 16) {
            return None;
        }
        Some((bucket_bits, width - bucket_bits, doc_bits))
    }

    /// [`plan`](Self::plan) of every key position of `rule` ([`MatchRule::keys`] order): the
    /// layout's block keys, then the band keys.
    fn plans(rule: &MatchRule, max_doc: u32) -> Vec<Option<Plan>> {
        let blocks = rule.layout().num_keys();
        (0..blocks + rule.minhash().bands as usize)
            .map(|position| {
                let width = if position < blocks {
                    let range = rule.layout().combo_key_range(position);
                    (range.end() - range.start()).count_ones()
                } else {
                    rule.minhash().key_bits
                };
                Family::plan(width, max_doc)
            })
            .collect()
    }

    /// The family of one position from its `(bucket, entry)` pairs in doc id order: a counting
    /// sort by bucket, then each bucket sorted so that one key is a run.
    fn from_filed(plan: Plan, filed: Vec<(u32, u32)>) -> Family {
        let (bucket_bits, suffix_bits, doc_bits) = plan;
        let buckets = 1usize << bucket_bits;
        let mut starts = vec![0u32; buckets + 1];
        for &(bucket, _) in &filed {
            starts[bucket as usize + 1] += 1;
        }
        for b in 0..buckets {
            starts[b + 1] += starts[b];
        }
        let mut next: Vec<u32> = starts[..buckets].to_vec();
        let mut entries = vec![0u32; filed.len()];
        for (bucket, entry) in filed {
            let at = &mut next[bucket as usize];
            entries[*at as usize] = entry;
            *at += 1;
        }
        if suffix_bits > 0 {
            // Entries arrive in doc id order; sorting by (suffix, doc) makes each key a run.
            for b in 0..buckets {
                entries[starts[b] as usize..starts[b + 1] as usize].sort_unstable();
            }
        }
        Family {
            bucket_bits,
            suffix_bits,
            doc_bits,
            starts,
            entries,
        }
    }

    /// Documents of `value` in doc id order.
    fn docs(&self, value: u64) -> KeyRun<'_> {
        let bucket = (value & low_mask(self.bucket_bits)) as usize;
        let suffix = value >> self.bucket_bits;
        let run: &[u32] = if suffix >> self.suffix_bits != 0 {
            // Wider than any stored value: no document holds it.
            &[]
        } else {
            let (start, end) = (
                self.starts[bucket] as usize,
                self.starts[bucket + 1] as usize,
            );
            let slice = &self.entries[start..end];
            if self.suffix_bits == 0 {
                slice
            } else {
                let shift = self.doc_bits;
                let lo = slice.partition_point(|&e| (u64::from(e) >> shift) < suffix);
                let len = slice[lo..].partition_point(|&e| (u64::from(e) >> shift) == suffix);
                &slice[lo..lo + len]
            }
        };
        KeyRun {
            entries: run,
            doc_mask: low_mask(self.doc_bits) as u32,
        }
    }

    fn heap_bytes(&self) -> usize {
        (self.starts.capacity() + self.entries.capacity()) * 4
    }
}

/// The number of bits needed to write `v`.
fn bits_for(v: u32) -> u32 {
    32 - v.leading_zeros()
}

fn low_mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

impl KeyTable {
    /// Reads the signature of every document of a segment (`max_doc` documents, deleted ones
    /// included) from `columns` and files its keys under `rule`.
    /// `None` when the table would pass the process's memory bound
    /// ([`set_key_table_memory_limit`]).
    pub(crate) fn build(
        rule: &MatchRule,
        columns: &SegmentSignatures,
        max_doc: u32,
    ) -> Option<KeyTable> {
        let started = Instant::now();
        let plans = Family::plans(rule, max_doc);
        // At most one entry per document and position, and the directories.
        let reserved: u64 = plans
            .iter()
            .flatten()
            .map(|&(bucket_bits, _, _)| 4 * (u64::from(max_doc) + (1u64 << bucket_bits) + 1))
            .sum();
        if !reserve(reserved) {
            return None;
        }
        let families = plans
            .iter()
            .zip(file_keys(rule, columns, max_doc, &plans))
            .map(|(plan, filed)| plan.map(|plan| Family::from_filed(plan, filed)))
            .collect();
        let mut table = KeyTable {
            rule: rule.clone(),
            families,
            build_time: started.elapsed(),
            reserved,
        };
        // Hold what the table really takes (the estimate is an upper bound of the entries).
        let actual = table.heap_bytes() as u64;
        if actual >= reserved {
            MEMORY_USED.fetch_add(actual - reserved, Ordering::Relaxed);
        } else {
            MEMORY_USED.fetch_sub(reserved - actual, Ordering::Relaxed);
        }
        table.reserved = actual;
        Some(table)
    }

    /// Whether this table was built for `rule`.
    pub(crate) fn is_for(&self, rule: &MatchRule) -> bool {
        std::ptr::eq(&self.rule, rule) || self.rule == *rule
    }

    /// The documents holding `key` (the key at `position` of [`MatchRule::keys`]) in doc id
    /// order, deleted ones included; `None` when this position has no table (read its
    /// postings instead).
    pub(crate) fn docs(&self, position: usize, key: u64) -> Option<KeyRun<'_>> {
        let family = self.families.get(position)?.as_ref()?;
        Some(family.docs(key & VALUE_MASK))
    }

    /// [`docs`](Self::docs) of every key of `keys` (in [`MatchRule::keys`] order) into `out`.
    /// Finding them all before reading any lets the processor overlap their memory reads
    /// (each is a cache miss or two in a large table).
    pub(crate) fn runs_into<'a>(&'a self, keys: &[u64], out: &mut Vec<Option<KeyRun<'a>>>) {
        out.clear();
        out.extend(
            keys.iter()
                .enumerate()
                .map(|(position, &key)| self.docs(position, key)),
        );
    }

    /// Bytes of memory the table holds.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.families
            .iter()
            .flatten()
            .map(Family::heap_bytes)
            .sum::<usize>()
            + std::mem::size_of::<Self>()
    }

    /// How long building it took.
    pub(crate) fn build_time(&self) -> Duration {
        self.build_time
    }
}

/// What the process knows about one segment's keys: how many lookups it served, and its table
/// once built.
#[derive(Debug, Default)]
pub(crate) struct SegmentKeys {
    lookups: AtomicU64,
    table: OnceLock<KeyTable>,
    /// Serialises builds, so a table is built once even when the budget refuses a first try.
    building: Mutex<()>,
    /// Lookups answered by scanning the signature columns (keys in columns only, no table).
    scans: AtomicU64,
}

impl SegmentKeys {
    /// The table, if built under `rule`.
    pub(crate) fn built_for(&self, rule: &MatchRule) -> Option<&KeyTable> {
        self.table.get().filter(|t| t.is_for(rule))
    }

    /// Counts a lookup of a segment of `max_doc` documents without a table; whether the table
    /// is now worth building.
    pub(crate) fn count_lookup(&self, max_doc: u32) -> bool {
        if self.table.get().is_some() {
            return false;
        }
        let lookups = self.lookups.fetch_add(1, Ordering::Relaxed) + 1;
        lookups >= (u64::from(max_doc) / 1024).max(32)
    }

    /// Lookups of this segment answered by scanning its signature columns.
    pub(crate) fn scans(&self) -> u64 {
        self.scans.load(Ordering::Relaxed)
    }

    /// Builds the table (once; a concurrent caller waits for it) from `columns`.
    /// `None` when the process's memory bound refuses it (lookups then read postings).
    pub(crate) fn build(
        &self,
        rule: &MatchRule,
        columns: &SegmentSignatures,
        max_doc: u32,
    ) -> Option<&KeyTable> {
        let _building = crate::schema::lock(&self.building);
        if self.table.get().is_none() {
            let table = KeyTable::build(rule, columns, max_doc)?;
            // Only this thread sets it (under `building`), so this cannot fail.
            let _ = self.table.set(table);
        }
        self.built_for(rule)
    }
}

/// The process's key tables, by segment and fingerprint field.
static REGISTRY: SegmentRegistry<SegmentKeys> = SegmentRegistry::new();

/// The shared entry of `segment`'s keys of the signature whose fingerprint field is `field`.
pub(crate) fn segment_keys(segment: SegmentId, field: &str) -> Arc<SegmentKeys> {
    REGISTRY.entry(segment, field)
}

/// The documents of one key in a [`KeyTable`], in doc id order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyRun<'a> {
    entries: &'a [u32],
    doc_mask: u32,
}

impl<'a> KeyRun<'a> {
    /// A run of documents listed by a scan, in doc id order.
    fn listed(docs: &'a [DocId]) -> Self {
        KeyRun {
            entries: docs,
            doc_mask: u32::MAX,
        }
    }

    /// Calls `f` with the first `limit` documents of the run that `keep` accepts.
    fn for_each(self, limit: usize, keep: impl Fn(DocId) -> bool, mut f: impl FnMut(DocId)) {
        let docs = self.entries.iter().map(|&e| e & self.doc_mask);
        for doc in docs.filter(|&d| keep(d)).take(limit) {
            f(doc);
        }
    }

    /// How many documents hold the key (deleted ones included).
    fn len(self) -> usize {
        self.entries.len()
    }
}

/// Where a segment's signature columns come from when a key table must be built or the
/// columns scanned: already open, or opened on first need (opening 33 columns costs more than
/// a lookup through a table).
pub(crate) trait ColumnSource {
    /// The segment's signature columns.
    fn columns(&mut self) -> tantivy::Result<&SegmentSignatures>;
}

impl ColumnSource for &SegmentSignatures {
    fn columns(&mut self) -> tantivy::Result<&SegmentSignatures> {
        Ok(self)
    }
}

/// One segment's keys as a lookup reads them: its shared entry (table), its key postings if
/// the index has them, and its signature columns (to build a table or scan).
pub(crate) struct SegmentKeySource<'a, C: ColumnSource> {
    /// The segment's shared entry ([`segment_keys`]).
    pub(crate) entry: &'a SegmentKeys,
    /// The keys' inverted index and field; `None` when the keys live in the columns only.
    pub(crate) postings: Option<(&'a InvertedIndexReader, Field)>,
    /// The segment's signature columns.
    pub(crate) columns: C,
    /// The segment's `max_doc`.
    pub(crate) max_doc: u32,
    /// The segment's live documents (`None`: all are live). The bound on hot keys counts live
    /// documents only, so deleted holders of a hot key do not hide its live ones.
    pub(crate) alive: Option<&'a AliveBitSet>,
    /// Whether key tables may be used and built.
    pub(crate) tables: bool,
}

impl<'a, C: ColumnSource> SegmentKeySource<'a, C> {
    /// The segment's table under `rule`: built, or built now when the index has no postings
    /// (first use) or this lookup makes it worth building (postings: enough lookups served).
    fn table(&mut self, rule: &MatchRule) -> tantivy::Result<Option<&'a KeyTable>> {
        if !self.tables {
            return Ok(None);
        }
        if let Some(table) = self.entry.built_for(rule) {
            return Ok(Some(table));
        }
        if self.postings.is_some() && !self.entry.count_lookup(self.max_doc) {
            return Ok(None);
        }
        let entry = self.entry;
        let columns = self.columns.columns()?;
        Ok(entry.build(rule, columns, self.max_doc))
    }

    /// Calls `f(position, doc)` with the first `limit` live documents (in doc id order; deleted
    /// ones are skipped and do not count) under each key of `keys` (the first `keys.len()`
    /// keys of [`MatchRule::keys`]), position by position: from the segment's table, else its
    /// postings, else (keys in columns only) a scan of its signature columns. Every source
    /// gives the same documents in the same order. `runs` is scratch space (kept by the caller
    /// across segments). Cost: besides the `limit` documents per key, the deleted ones before
    /// them are read and skipped (until a merge drops them).
    pub(crate) fn for_each_key_doc(
        &mut self,
        rule: &MatchRule,
        keys: &[u64],
        limit: usize,
        runs: &mut Vec<Option<KeyRun<'a>>>,
        mut f: impl FnMut(usize, DocId),
    ) -> tantivy::Result<()> {
        let postings = self.postings;
        let (entry, max_doc, alive) = (self.entry, self.max_doc, self.alive);
        let live = |doc: DocId| alive.is_none_or(|a| a.is_alive(doc));
        runs.clear();
        if let Some(table) = self.table(rule)? {
            table.runs_into(keys, runs);
        }
        let scanned = if postings.is_none() && (runs.len() < keys.len() || runs.contains_none()) {
            entry.scans.fetch_add(1, Ordering::Relaxed);
            let columns = self.columns.columns()?;
            scan_keys(rule, columns, max_doc, (keys, live), runs, limit)
        } else {
            Vec::new()
        };
        for (position, &key) in keys.iter().enumerate() {
            let run = runs.get(position).copied().flatten().or_else(|| {
                scanned
                    .get(position)
                    .and_then(|docs| docs.as_deref().map(KeyRun::listed))
            });
            let visit = |doc| f(position, doc);
            match (run, postings) {
                (Some(run), _) => run.for_each(limit, live, visit),
                (None, Some((inverted, field))) => for_each_posting_up_to(
                    inverted,
                    &Term::from_field_u64(field, key),
                    limit,
                    live,
                    visit,
                )?,
                // Not reached: every position without a run was scanned.
                (None, None) => {}
            }
        }
        Ok(())
    }

    /// Whether a key of `keys` holds more than `bound` documents (deleted ones included, as
    /// in the postings), so a lookup bounded by it may miss matches.
    pub(crate) fn has_key_over(
        &mut self,
        rule: &MatchRule,
        keys: &[u64],
        bound: usize,
    ) -> tantivy::Result<bool> {
        if bound == usize::MAX {
            return Ok(false);
        }
        let postings = self.postings;
        let mut runs: Vec<Option<KeyRun<'a>>> = Vec::new();
        if let Some(table) = self.table(rule)? {
            table.runs_into(keys, &mut runs);
        }
        let mut over = false;
        for (position, &key) in keys.iter().enumerate() {
            over |= match (runs.get(position).copied().flatten(), postings) {
                (Some(run), _) => run.len() > bound,
                (None, Some((inverted, field))) => {
                    inverted.doc_freq(&Term::from_field_u64(field, key))? as usize > bound
                }
                (None, None) => false,
            };
        }
        if over || postings.is_some() || !(runs.len() < keys.len() || runs.contains_none()) {
            return Ok(over);
        }
        // Keys in columns only, some without a table: count them by a scan.
        self.entry.scans.fetch_add(1, Ordering::Relaxed);
        let columns = self.columns.columns()?;
        let scanned = scan_keys(
            rule,
            columns,
            self.max_doc,
            (keys, |_| true),
            &runs,
            bound.saturating_add(1),
        );
        Ok(scanned.iter().flatten().any(|docs| docs.len() > bound))
    }
}

trait ContainsNone {
    fn contains_none(&self) -> bool;
}

impl<T> ContainsNone for [Option<T>] {
    fn contains_none(&self) -> bool {
        self.iter().any(Option::is_none)
    }
}

/// Every document's `(bucket, entry)` per key position planned in `plans`, in doc id order
/// (an empty list for a position without a plan).
fn file_keys(
    rule: &MatchRule,
    columns: &SegmentSignatures,
    max_doc: u32,
    plans: &[Option<Plan>],
) -> Vec<Vec<(u32, u32)>> {
    let mut filed: Vec<Vec<(u32, u32)>> = plans
        .iter()
        .map(|p| match p {
            Some(_) => Vec::with_capacity(max_doc as usize),
            None => Vec::new(),
        })
        .collect();
    for_each_document_keys(rule, columns, max_doc, false, |doc, keys| {
        for ((plan, out), &key) in plans.iter().zip(filed.iter_mut()).zip(keys) {
            let Some((bucket_bits, _, doc_bits)) = *plan else {
                continue;
            };
            let value = key & VALUE_MASK;
            let bucket = (value & low_mask(bucket_bits)) as u32;
            let entry = ((value >> bucket_bits) << doc_bits) | u64::from(doc);
            out.push((bucket, entry as u32));
        }
    });
    filed
}

/// Calls `f(doc, keys)` for every document of the segment that has a signature, in doc id
/// order (deleted ones included), with its keys under `rule` in [`MatchRule::keys`] order;
/// with `blocks_only`, only the layout's block keys, computed from the fingerprint column
/// alone (no sketch read).
fn for_each_document_keys(
    rule: &MatchRule,
    columns: &SegmentSignatures,
    max_doc: u32,
    blocks_only: bool,
    mut f: impl FnMut(DocId, &[u64]),
) {
    let mut signature = Signature {
        fingerprint: Fingerprint(0),
        sketch: Sketch::default(),
    };
    let mut keys = Vec::with_capacity(rule.keys_per_document());
    for doc in 0..max_doc {
        keys.clear();
        if blocks_only {
            let Some(fp) = columns.fingerprint(doc) else {
                continue;
            };
            rule.layout().keys_into(fp, &mut keys);
        } else {
            if !columns.read_into(doc, &mut signature) {
                continue;
            }
            rule.keys_into(&signature, &mut keys);
        }
        f(doc, &keys);
    }
}

/// The first `limit` documents that `keep` accepts (in doc id order) under each key of
/// `keys` that has no run in `runs`, found by reading every document's signature from
/// `columns` and computing its keys (only the fingerprint when only block keys are wanted).
/// `Some(docs)` at each such position, `None` elsewhere.
fn scan_keys(
    rule: &MatchRule,
    columns: &SegmentSignatures,
    max_doc: u32,
    (keys, keep): (&[u64], impl Fn(DocId) -> bool),
    runs: &[Option<KeyRun<'_>>],
    limit: usize,
) -> Vec<Option<Vec<DocId>>> {
    let mut found: Vec<Option<Vec<DocId>>> = (0..keys.len())
        .map(|p| match runs.get(p) {
            Some(Some(_)) => None,
            _ => Some(Vec::new()),
        })
        .collect();
    let blocks = rule.layout().num_keys();
    let fingerprint_only = found
        .iter()
        .enumerate()
        .all(|(p, wanted)| wanted.is_none() || p < blocks);
    for_each_document_keys(rule, columns, max_doc, fingerprint_only, |doc, doc_keys| {
        if !keep(doc) {
            return;
        }
        for ((wanted, &key), &doc_key) in found.iter_mut().zip(keys).zip(doc_keys) {
            if let Some(docs) = wanted {
                if doc_key == key && docs.len() < limit {
                    docs.push(doc);
                }
            }
        }
    });
    found
}

/// What [`crate::NearDupSearcher::build_key_tables`] reports: the key tables of a searcher's
/// segments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyTableStats {
    /// Segments with a table.
    pub segments: usize,
    /// Documents of those segments (deleted ones included: a table holds them until a merge).
    pub documents: u64,
    /// Bytes of memory the tables hold.
    pub bytes: u64,
    /// Time spent building them, summed over the tables (whoever built them, in this process).
    pub build_time: Duration,
    /// Lookups of these segments (by any searcher of the process) answered by scanning the
    /// signature columns, because the index keeps its keys in columns only and the segment
    /// has no table (memory bound, tables disabled, keys that do not fit). Each read every
    /// document of its segment: a growing count says to raise
    /// [`set_key_table_memory_limit`] or enable tables.
    pub scans: u64,
}
