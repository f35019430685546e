//! Writing a component file: the header, the signatures, the present bitset, the key tables
//! and their directory, then the checksum.

use super::{low_mask, rule_hash, Plan, FORMAT_VERSION, HEADER_BYTES, MAGIC, VALUE_MASK};
use crate::error::Result;
use crate::fingerprint::Fingerprint;
use crate::signature::{MatchRule, Signature};
use std::io::Write;
use tantivy::DocId;
use xxhash_rust::xxh3::Xxh3;

/// Where the signatures of a file being written come from, in the new doc id order.
pub(crate) trait SignatureSource {
    /// Documents (the segment's `max_doc`).
    fn max_doc(&self) -> u32;
    /// Calls `f(doc, words)` for every document in doc id order; `words` is `None` for a
    /// document without a signature, else the fingerprint and the sketch words.
    fn for_each(&self, f: &mut dyn FnMut(DocId, Option<&[u64]>)) -> Result<()>;
}

/// A writer that hashes what it writes (the trailing checksum).
struct Hashed<W: Write> {
    inner: W,
    hasher: Xxh3,
    written: u64,
}

impl<W: Write> Hashed<W> {
    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.hasher.update(bytes);
        self.written += bytes.len() as u64;
        self.inner.write_all(bytes)
    }
}

/// Writes the file of `source`'s documents under `rule` to `out`. Passes over the source: one
/// to count the keys, one for the signatures, one per four key positions for the tables.
/// Memory: the present bitset and, for the positions of one pass, 12 B per document and
/// position (the `(bucket, entry)` pairs being sorted).
pub(crate) fn write(
    rule: &MatchRule,
    words_per_doc: usize,
    source: &dyn SignatureSource,
    out: &mut dyn Write,
) -> Result<()> {
    write_version(rule, words_per_doc, source, out, FORMAT_VERSION)
}

/// [`write`] in format `version`: the current one, or (for the tests that read older files)
/// version 3, whose tables keep no filter bits.
pub(super) fn write_version(
    rule: &MatchRule,
    words_per_doc: usize,
    source: &dyn SignatureSource,
    out: &mut dyn Write,
    version: u32,
) -> Result<()> {
    let max_doc = source.max_doc();
    let plans = Plan::for_rule(rule, max_doc, version >= 4);
    let present_words = (max_doc as usize).div_ceil(64);
    let mut present = vec![0u64; present_words];
    let mut counts = vec![0u64; plans.len()];
    let mut signature = Signature::default();
    let mut keys = Vec::with_capacity(rule.keys_per_document());
    let mut rests = Vec::with_capacity(rule.layout().num_keys());
    let mut any_sketch = false;
    // Pass 1: which documents have a signature, and each position's entry count (an empty
    // sketch has no band keys), which place the directory; whether any sketch is stored.
    source.for_each(&mut |doc, words| {
        let Some(words) = words else {
            return;
        };
        any_sketch |= words.iter().skip(1).any(|&w| w != 0);
        if let Some(bit) = present.get_mut(doc as usize / 64) {
            *bit |= 1 << (doc % 64);
        }
        load(words, &mut signature);
        for count in counts.iter_mut().take(rule.key_count(&signature)) {
            *count += 1;
        }
    })?;
    // A segment of fingerprints only (signed without sketches) stores no sketch words: they
    // would all be zero, 160 of its ~190 bytes per document.
    let words_per_doc = if any_sketch { words_per_doc } else { 1 };
    let families_bytes: u64 = plans
        .iter()
        .zip(&counts)
        .map(|(p, &n)| 4 * (p.buckets() as u64 + 1) + n * u64::from(p.entry_bytes))
        .sum();
    let directory_offset = HEADER_BYTES as u64
        + max_doc as u64 * words_per_doc as u64 * 8
        + present_words as u64 * 8
        + families_bytes;
    let mut w = Hashed {
        inner: out,
        hasher: Xxh3::new(),
        written: 0,
    };
    let mut header = Vec::with_capacity(HEADER_BYTES);
    header.extend_from_slice(&MAGIC);
    header.extend_from_slice(&version.to_le_bytes());
    header.extend_from_slice(&max_doc.to_le_bytes());
    header.extend_from_slice(&(words_per_doc as u32).to_le_bytes());
    header.extend_from_slice(&(plans.len() as u32).to_le_bytes());
    header.extend_from_slice(&rule_hash(rule).to_le_bytes());
    header.extend_from_slice(&directory_offset.to_le_bytes());
    header.resize(HEADER_BYTES, 0);
    w.put(&header)?;
    // Pass 2: the signatures.
    let mut buf: Vec<u8> = Vec::with_capacity(words_per_doc * 8);
    let mut failed: Option<std::io::Error> = None;
    source.for_each(&mut |_, words| {
        if failed.is_some() {
            return;
        }
        buf.clear();
        for i in 0..words_per_doc {
            let word = words.and_then(|w| w.get(i)).copied().unwrap_or(0);
            buf.extend_from_slice(&word.to_le_bytes());
        }
        if let Err(e) = w.put(&buf) {
            failed = Some(e);
        }
    })?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    buf.clear();
    for word in &present {
        buf.extend_from_slice(&word.to_le_bytes());
    }
    w.put(&buf)?;
    // Then the tables, a few positions per pass.
    const POSITIONS_PER_PASS: usize = 4;
    let mut filed: Vec<Vec<(u32, u64)>> = Vec::new();
    for first in (0..plans.len()).step_by(POSITIONS_PER_PASS) {
        let pass = first..(first + POSITIONS_PER_PASS).min(plans.len());
        filed.clear();
        for p in pass.clone() {
            filed.push(Vec::with_capacity(counts[p] as usize));
        }
        source.for_each(&mut |doc, words| {
            let Some(words) = words else {
                return;
            };
            load(words, &mut signature);
            keys.clear();
            rule.keys_into(&signature, &mut keys);
            rests.clear();
            rule.layout().rests_into(signature.fingerprint, &mut rests);
            for (list, p) in filed.iter_mut().zip(pass.clone()) {
                let (Some(&key), Some(plan)) = (keys.get(p), plans.get(p)) else {
                    continue;
                };
                let value = key & VALUE_MASK;
                let bucket = plan.bucket_of(value) as u32;
                let entry = ((value >> plan.bucket_bits) << plan.doc_bits) | u64::from(doc);
                let entry = if plan.filter_bits > 0 {
                    let rest = rests.get(p).copied().unwrap_or(0);
                    (entry << plan.filter_bits) | (rest & low_mask(plan.filter_bits))
                } else {
                    entry
                };
                list.push((bucket, entry));
            }
        })?;
        for (list, p) in filed.iter_mut().zip(pass) {
            write_family(&mut w, plans[p], list)?;
        }
    }
    debug_assert_eq!(w.written, directory_offset);
    buf.clear();
    for (plan, &count) in plans.iter().zip(&counts) {
        buf.push(plan.bucket_bits as u8);
        buf.push(plan.suffix_bits as u8);
        buf.push(plan.doc_bits as u8);
        buf.push(plan.entry_bytes as u8);
        buf.extend_from_slice(&count.to_le_bytes());
        buf.push(plan.filter_bits as u8);
        buf.extend_from_slice(&[0u8; 3]);
    }
    w.put(&buf)?;
    let checksum = w.hasher.digest();
    w.inner.write_all(&checksum.to_le_bytes())?;
    Ok(())
}

/// Files one family: a counting sort by bucket, then each bucket sorted so a key is a run
/// (entries arrive in doc id order, so each run stays in doc id order).
fn write_family<W: Write>(w: &mut Hashed<W>, plan: Plan, filed: &mut [(u32, u64)]) -> Result<()> {
    let buckets = plan.buckets();
    let mut starts = vec![0u32; buckets + 1];
    for &(bucket, _) in filed.iter() {
        starts[bucket as usize + 1] += 1;
    }
    for b in 0..buckets {
        starts[b + 1] += starts[b];
    }
    let mut next: Vec<u32> = starts[..buckets].to_vec();
    let mut entries = vec![0u64; filed.len()];
    for &(bucket, entry) in filed.iter() {
        let at = &mut next[bucket as usize];
        entries[*at as usize] = entry;
        *at += 1;
    }
    if plan.suffix_bits > 0 {
        for b in 0..buckets {
            entries[starts[b] as usize..starts[b + 1] as usize].sort_unstable();
        }
    }
    let mut bytes = Vec::with_capacity(starts.len() * 4 + entries.len() * 8);
    for s in &starts {
        bytes.extend_from_slice(&s.to_le_bytes());
    }
    let width = plan.entry_bytes as usize;
    for e in &entries {
        bytes.extend_from_slice(&e.to_le_bytes()[..width]);
    }
    w.put(&bytes)?;
    Ok(())
}

/// Copies a document's words into `signature` (the fingerprint, then the sketch).
fn load(words: &[u64], signature: &mut Signature) {
    signature.fingerprint = Fingerprint(words.first().copied().unwrap_or(0));
    signature.sketch.words.clear();
    signature
        .sketch
        .words
        .extend_from_slice(words.get(1..).unwrap_or(&[]));
}
