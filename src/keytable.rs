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
//! read from its postings; the default rule's keys (16 and 20 bits) always fit.
//!
//! Tables are built lazily, once a segment has served `max(32, documents / 1024)` lookups in
//! the process (a one-off lookup never pays the build), shared by every searcher of the
//! segment in the process like [`crate::ids`]'s id tables, and freed with the last searcher
//! that holds the segment (a merged-away segment's table goes with it).

use crate::signature::store::SegmentSignatures;
use crate::signature::{MatchRule, Signature, Sketch};
use crate::Fingerprint;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};
use tantivy::index::SegmentId;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, InvertedIndexReader, Term, TERMINATED};

/// The bits of a key below its position's tag.
const VALUE_MASK: u64 = (1 << 48) - 1;

/// The in-memory keys of one segment under one rule. See the [module docs](self).
#[derive(Debug)]
pub(crate) struct KeyTable {
    rule: MatchRule,
    families: Vec<Option<Family>>,
    build_time: Duration,
}

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
    fn plan(width: u32, max_doc: u32) -> Option<(u32, u32, u32)> {
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
    pub(crate) fn build(rule: &MatchRule, columns: &SegmentSignatures, max_doc: u32) -> KeyTable {
        let started = Instant::now();
        let blocks = rule.layout().num_keys();
        let positions = blocks + rule.minhash().bands as usize;
        let plans: Vec<Option<(u32, u32, u32)>> = (0..positions)
            .map(|position| {
                let width = if position < blocks {
                    let range = rule.layout().key_range(position);
                    (range.end() - range.start()).count_ones()
                } else {
                    rule.minhash().key_bits
                };
                Family::plan(width, max_doc)
            })
            .collect();
        // (bucket, entry) per position, in doc id order.
        let mut filed: Vec<Vec<(u32, u32)>> = plans
            .iter()
            .map(|p| match p {
                Some(_) => Vec::with_capacity(max_doc as usize),
                None => Vec::new(),
            })
            .collect();
        let mut signature = Signature {
            fingerprint: Fingerprint(0),
            sketch: Sketch::default(),
        };
        let mut keys = Vec::with_capacity(positions);
        for doc in 0..max_doc {
            if !columns.read_into(doc, &mut signature) {
                continue;
            }
            keys.clear();
            rule.keys_into(&signature, &mut keys);
            for (position, &key) in keys.iter().enumerate() {
                let (Some(Some((bucket_bits, _, doc_bits))), Some(out)) =
                    (plans.get(position), filed.get_mut(position))
                else {
                    continue;
                };
                let value = key & VALUE_MASK;
                let bucket = (value & low_mask(*bucket_bits)) as u32;
                let entry = ((value >> bucket_bits) << doc_bits) | u64::from(doc);
                out.push((bucket, entry as u32));
            }
        }
        let families = plans
            .iter()
            .zip(filed)
            .map(|(plan, filed)| {
                let (bucket_bits, suffix_bits, doc_bits) = (*plan)?;
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
                Some(Family {
                    bucket_bits,
                    suffix_bits,
                    doc_bits,
                    starts,
                    entries,
                })
            })
            .collect();
        KeyTable {
            rule: rule.clone(),
            families,
            build_time: started.elapsed(),
        }
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
}

impl SegmentKeys {
    /// The table of the segment under `rule`, if built, or worth building now (this lookup
    /// counted): `max(32, max_doc / 1024)` lookups, or at once with `build_now`. `None` for a
    /// table built under another rule.
    pub(crate) fn table(
        &self,
        rule: &MatchRule,
        columns: &SegmentSignatures,
        max_doc: u32,
        build_now: bool,
    ) -> Option<&KeyTable> {
        if let Some(built) = self.built_for(rule) {
            return Some(built);
        }
        if !build_now && !self.count_lookup(max_doc) {
            return None;
        }
        self.build(rule, columns, max_doc)
    }

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

    /// Builds the table (once; a concurrent caller waits for it) from `columns`.
    pub(crate) fn build(
        &self,
        rule: &MatchRule,
        columns: &SegmentSignatures,
        max_doc: u32,
    ) -> Option<&KeyTable> {
        let built = self
            .table
            .get_or_init(|| KeyTable::build(rule, columns, max_doc));
        built.is_for(rule).then_some(built)
    }
}

/// The process's segments, by segment and fingerprint field: entries live while a searcher
/// holds them.
type Registry = Mutex<HashMap<(SegmentId, String), Weak<SegmentKeys>>>;

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Registry::default)
}

/// The shared entry of `segment`'s keys of the signature whose fingerprint field is `field`.
pub(crate) fn segment_keys(segment: SegmentId, field: &str) -> Arc<SegmentKeys> {
    let mut map = crate::schema::lock(registry());
    let key = (segment, field.to_string());
    if let Some(found) = map.get(&key).and_then(Weak::upgrade) {
        return found;
    }
    // Forget segments no searcher holds any more (merged away, or their searchers dropped).
    map.retain(|_, weak| weak.strong_count() > 0);
    let fresh = Arc::new(SegmentKeys::default());
    map.insert(key, Arc::downgrade(&fresh));
    fresh
}

/// The documents of one key in a [`KeyTable`], in doc id order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyRun<'a> {
    entries: &'a [u32],
    doc_mask: u32,
}

impl KeyRun<'_> {
    fn for_each(self, limit: usize, mut f: impl FnMut(DocId)) {
        for &e in self.entries.iter().take(limit) {
            f(e & self.doc_mask);
        }
    }
}

/// Calls `f` with the first `limit` documents (live or deleted, in doc id order) holding the
/// query key `key` of the keys field `field`: from the key table's `run` when there is one,
/// else from the postings. Both give the same documents in the same order.
pub(crate) fn for_each_key_doc(
    run: Option<KeyRun<'_>>,
    inverted: &InvertedIndexReader,
    (field, key): (Field, u64),
    limit: usize,
    mut f: impl FnMut(DocId),
) -> tantivy::Result<()> {
    if let Some(run) = run {
        run.for_each(limit, f);
        return Ok(());
    }
    let term = Term::from_field_u64(field, key);
    if let Some(mut postings) = inverted.read_postings(&term, IndexRecordOption::Basic)? {
        let mut doc = postings.doc();
        let mut read = 0usize;
        while doc != TERMINATED && read < limit {
            f(doc);
            read += 1;
            doc = postings.advance();
        }
    }
    Ok(())
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
}
