//! The component's file: one per segment, written once, read in place (memory-mapped).
//!
//! ```text
//! header (64 B)   magic "TSNDSEG1", format version, max_doc, words per document, families,
//!                 the rule's hash, the offset of the family directory
//! signatures      max_doc x words u64: the fingerprint, then the sketch words (doc id order);
//!                 words is 1 when no document of the segment has a sketch (fingerprints only)
//! present         ceil(max_doc / 64) u64: bit d set when document d has a signature
//! families        per key position of the rule: a bucket directory ((1 << bucket_bits) + 1
//!                 u32) and the entries (`suffix << doc_bits | doc`, 3, 4 or 8 bytes),
//!                 sorted, so that one key's documents are one run in doc id order
//! directory       per family 16 B: bucket_bits, suffix_bits, doc_bits, entry bytes, entries
//! checksum        xxh3-64 of everything before it
//! ```
//!
//! All integers are little-endian. Opening checks the structure (magic, version, every
//! section's size against the header, the rule, the segment's document count): O(families),
//! so the first lookup of a fresh process costs a few microseconds per segment. The checksum
//! is verified by [`ComponentFile::verify_checksum`], which every merge runs on its sources;
//! every read is bounds-checked, so a damaged byte the structure check misses gives an error,
//! never a panic.

use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use crate::signature::{MatchRule, Signature};
use std::io::Write;
use tantivy::directory::OwnedBytes;
use tantivy::DocId;
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

pub(crate) const MAGIC: [u8; 8] = *b"TSNDSEG1";
/// Bumped whenever the layout changes; an older file is refused with a message to rebuild.
/// Version 3 may store one word per document (a segment without sketches); version 2 files,
/// which always store every word, are read as well.
pub(crate) const FORMAT_VERSION: u32 = 3;
const OLDEST_READ_VERSION: u32 = 2;
pub(crate) const HEADER_BYTES: usize = 64;
const DESCRIPTOR_BYTES: usize = 16;

/// The bits of a key below its position's tag.
const VALUE_MASK: u64 = (1 << 48) - 1;

/// The hash a file records of the rule its keys were computed under.
pub(crate) fn rule_hash(rule: &MatchRule) -> u64 {
    xxh3_64(rule.id().as_bytes())
}

/// A family's table parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The low `bucket_bits` bits of a key's value pick the bucket.
    pub(crate) bucket_bits: u32,
    /// Bits of the value above the bucket bits, kept in each entry.
    pub(crate) suffix_bits: u32,
    /// Bits of the doc id in each entry.
    pub(crate) doc_bits: u32,
    /// 3, 4 or 8.
    pub(crate) entry_bytes: u32,
}

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

impl Plan {
    /// Parameters for key values of `width` bits among `max_doc` documents: about eight to
    /// sixteen entries per bucket (a key costs the directory read and a search within one or
    /// two cache lines; the directory stays under half a byte per document and position), and
    /// the narrowest entries (3, 4, else 8 bytes) that the suffix and the doc id fit, widening
    /// the directory for them up to 8 buckets per document.
    pub(crate) fn new(width: u32, max_doc: u32) -> Plan {
        let width = width.min(48);
        let doc_bits = bits_for(max_doc.saturating_sub(1)).max(1);
        let target = bits_for(max_doc).saturating_sub(4).min(width).min(26);
        let max_bucket_bits = bits_for(max_doc.saturating_mul(8)).clamp(16, 26);
        let fitting = [3u32, 4].into_iter().find_map(|bytes| {
            let least = (width + doc_bits).saturating_sub(bytes * 8);
            (least <= max_bucket_bits && least <= width).then_some((least, bytes))
        });
        let (bucket_bits, entry_bytes) = match fitting {
            Some((least, bytes)) => (target.max(least).min(width), bytes),
            None => (target, 8),
        };
        Plan {
            bucket_bits,
            suffix_bits: width - bucket_bits,
            doc_bits,
            entry_bytes,
        }
    }

    /// The plan of every key position of `rule` ([`MatchRule::keys`] order).
    pub(crate) fn for_rule(rule: &MatchRule, max_doc: u32) -> Vec<Plan> {
        let blocks = rule.layout().num_keys();
        (0..rule.keys_per_document())
            .map(|position| {
                let width = if position < blocks {
                    let range = rule.layout().combo_key_range(position);
                    (range.end() - range.start()).count_ones()
                } else {
                    rule.minhash().key_bits
                };
                Plan::new(width, max_doc)
            })
            .collect()
    }

    fn buckets(&self) -> usize {
        1usize << self.bucket_bits
    }

    /// The bucket of key value `value` (a key's low 48 bits): its low `bucket_bits` bits.
    fn bucket_of(&self, value: u64) -> usize {
        (value & low_mask(self.bucket_bits)) as usize
    }
}

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
    let max_doc = source.max_doc();
    let plans = Plan::for_rule(rule, max_doc);
    let present_words = (max_doc as usize).div_ceil(64);
    let mut present = vec![0u64; present_words];
    let mut counts = vec![0u64; plans.len()];
    let mut signature = Signature::default();
    let mut keys = Vec::with_capacity(rule.keys_per_document());
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
    header.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
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
            for (list, p) in filed.iter_mut().zip(pass.clone()) {
                let (Some(&key), Some(plan)) = (keys.get(p), plans.get(p)) else {
                    continue;
                };
                let value = key & VALUE_MASK;
                let bucket = plan.bucket_of(value) as u32;
                let entry = ((value >> plan.bucket_bits) << plan.doc_bits) | u64::from(doc);
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
        buf.extend_from_slice(&[0u8; 4]);
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

/// One key position's table in a file.
#[derive(Clone, Copy, Debug)]
struct FamilyView {
    plan: Plan,
    /// Byte offset of the bucket directory.
    starts: usize,
    /// Byte offset of the entries.
    entries: usize,
    len: usize,
}

/// A segment's component file, opened in place.
#[derive(Clone)]
pub(crate) struct ComponentFile {
    bytes: OwnedBytes,
    /// What errors call the file.
    name: String,
    max_doc: u32,
    /// Words stored per document: all of the rule's, or 1 (fingerprints only).
    words: usize,
    /// The rule's words per document (1 + its sketch words); the missing ones read as zero.
    full_words: usize,
    present: usize,
    families: Vec<FamilyView>,
}

impl std::fmt::Debug for ComponentFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComponentFile")
            .field("name", &self.name)
            .field("max_doc", &self.max_doc)
            .finish_non_exhaustive()
    }
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    let b = bytes.get(at..at.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Some(u64::from_le_bytes(a))
}

impl ComponentFile {
    /// Checks the structure of `bytes` (a whole file) and opens it. `name` names the file in
    /// errors; `rule` and `max_doc` are what the reader expects.
    pub(crate) fn parse(
        bytes: OwnedBytes,
        name: String,
        rule: &MatchRule,
        max_doc: u32,
    ) -> Result<ComponentFile> {
        let damaged = |problem: String| Error::DamagedFile {
            file: name.clone(),
            problem,
        };
        let data = bytes.as_slice();
        if data.len() < HEADER_BYTES + 8 {
            return Err(damaged(format!(
                "{} bytes; expected at least {} (a header and a checksum): the file is \
                 truncated",
                data.len(),
                HEADER_BYTES + 8
            )));
        }
        if data[..8] != MAGIC {
            if data[..6] == MAGIC[..6] {
                return Err(Error::OldFormat(format!(
                    "the segment file {name} has format `{}`, this version reads `{}`",
                    String::from_utf8_lossy(&data[..8]),
                    String::from_utf8_lossy(&MAGIC)
                )));
            }
            return Err(damaged(
                "it does not start with the component's magic bytes".into(),
            ));
        }
        let field = |at: usize| u32_at(data, at).unwrap_or(0);
        let version = field(8);
        if !(OLDEST_READ_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(Error::OldFormat(format!(
                "the segment file {name} has format version {version}, this version reads \
                 {FORMAT_VERSION}"
            )));
        }
        let file_docs = field(12);
        let words = field(16) as usize;
        let families = field(20) as usize;
        let hash = u64_at(data, 24).unwrap_or(0);
        let directory = u64_at(data, 32).unwrap_or(0);
        if file_docs != max_doc {
            return Err(damaged(format!(
                "it holds {file_docs} documents; the segment has {max_doc}"
            )));
        }
        if hash != rule_hash(rule) || families != rule.keys_per_document() {
            // The index's record names the rule, so a segment of another rule in it is damage
            // (or a file copied from another index).
            return Err(damaged(format!(
                "its header records rule hash {hash:016x} and {families} key positions; the \
                 index's rule {} has hash {:016x} and {} (a damaged header, or a file copied \
                 from another index)",
                rule.id(),
                rule_hash(rule),
                rule.keys_per_document()
            )));
        }
        let full_words = 1 + rule.minhash().sketch_words();
        if words != full_words && !(words == 1 && version >= 3) {
            return Err(damaged(format!(
                "{words} words per document; the rule's signature has {full_words} (or 1 \
                 without sketches)"
            )));
        }
        let body_end = data.len() - 8;
        let signatures = (max_doc as usize)
            .checked_mul(words * 8)
            .ok_or_else(|| damaged("the signature section overflows".into()))?;
        let present = HEADER_BYTES + signatures;
        let mut at = present + (max_doc as usize).div_ceil(64) * 8;
        let directory = usize::try_from(directory).unwrap_or(usize::MAX);
        if directory.checked_add(families * DESCRIPTOR_BYTES) != Some(body_end) {
            return Err(damaged(format!(
                "{} bytes, but its header places {families} table descriptors at byte \
                 {directory}: the file is truncated or overwritten",
                data.len()
            )));
        }
        let mut views = Vec::with_capacity(families);
        for f in 0..families {
            let d = directory + f * DESCRIPTOR_BYTES;
            let plan = Plan {
                bucket_bits: u32::from(data[d]),
                suffix_bits: u32::from(data[d + 1]),
                doc_bits: u32::from(data[d + 2]),
                entry_bytes: u32::from(data[d + 3]),
            };
            let len = u64_at(data, d + 4).unwrap_or(u64::MAX);
            if plan.bucket_bits > 26
                || plan.doc_bits > 32
                || !matches!(plan.entry_bytes, 3 | 4 | 8)
                || plan.suffix_bits + plan.doc_bits > plan.entry_bytes * 8
                || len > u64::from(max_doc)
            {
                return Err(damaged(format!("table {f} has an impossible descriptor")));
            }
            let starts = at;
            let entries = starts + (plan.buckets() + 1) * 4;
            let end = entries + len as usize * plan.entry_bytes as usize;
            if end > directory {
                return Err(damaged(format!(
                    "table {f} runs past the table directory: the file is truncated"
                )));
            }
            views.push(FamilyView {
                plan,
                starts,
                entries,
                len: len as usize,
            });
            at = end;
        }
        if at != directory {
            return Err(damaged(format!(
                "its tables end at byte {at}, the directory starts at {directory}"
            )));
        }
        Ok(ComponentFile {
            bytes,
            name,
            max_doc,
            words,
            full_words,
            present,
            families: views,
        })
    }

    /// Documents (the segment's `max_doc`).
    pub(crate) fn max_doc(&self) -> u32 {
        self.max_doc
    }

    /// Verifies the trailing checksum: a pass over the whole file.
    pub(crate) fn verify_checksum(&self) -> Result<()> {
        let data = self.bytes.as_slice();
        let (body, tail) = data.split_at(data.len() - 8);
        let stored = u64_at(tail, 0).unwrap_or(0);
        let computed = xxh3_64(body);
        if stored != computed {
            return Err(Error::DamagedFile {
                file: self.name.clone(),
                problem: format!(
                    "its checksum is {computed:016x}, the file records {stored:016x}: some \
                     bytes were changed after it was written"
                ),
            });
        }
        Ok(())
    }

    /// Whether `doc` has a signature.
    pub(crate) fn has_signature(&self, doc: DocId) -> bool {
        if doc >= self.max_doc {
            return false;
        }
        let word = u64_at(
            self.bytes.as_slice(),
            self.present + (doc as usize / 64) * 8,
        );
        word.is_some_and(|w| w >> (doc % 64) & 1 == 1)
    }

    /// The raw words of `doc` (fingerprint, then sketch), if it has a signature.
    fn raw(&self, doc: DocId) -> Option<&[u8]> {
        if !self.has_signature(doc) {
            return None;
        }
        let at = HEADER_BYTES + doc as usize * self.words * 8;
        self.bytes.as_slice().get(at..at + self.words * 8)
    }

    /// The words of `doc` (the fingerprint, then the sketch), if it has a signature.
    pub(crate) fn words(&self, doc: DocId) -> Option<impl Iterator<Item = u64> + '_> {
        let raw = self.raw(doc)?;
        let missing = self.full_words - self.words;
        Some(
            raw.chunks_exact(8)
                .map(|c| u64_at(c, 0).unwrap_or(0))
                .chain(std::iter::repeat_n(0, missing)),
        )
    }

    /// Word `w` of `doc` (0 is the fingerprint); 0 for a document without a signature.
    pub(crate) fn word(&self, doc: DocId, w: usize) -> u64 {
        if w >= self.words || doc >= self.max_doc {
            return 0;
        }
        u64_at(
            self.bytes.as_slice(),
            HEADER_BYTES + (doc as usize * self.words + w) * 8,
        )
        .unwrap_or(0)
    }

    /// The fingerprint of `doc`, if it has a signature.
    pub(crate) fn fingerprint(&self, doc: DocId) -> Option<Fingerprint> {
        self.has_signature(doc)
            .then(|| Fingerprint(self.word(doc, 0)))
    }

    /// Reads `doc`'s signature into `out`; `false` when it has none.
    pub(crate) fn read_into(&self, doc: DocId, out: &mut Signature) -> bool {
        let Some(mut words) = self.words(doc) else {
            return false;
        };
        out.fingerprint = Fingerprint(words.next().unwrap_or(0));
        out.sketch.words.clear();
        out.sketch.words.extend(words);
        true
    }

    /// The entries of bucket `bucket` of table `position` (`family`), bounds-checked: a
    /// damaged directory is an error naming the file.
    fn bucket(&self, position: usize, family: &FamilyView, bucket: usize) -> Result<KeyRun<'_>> {
        let data = self.bytes.as_slice();
        let damaged = || Error::DamagedFile {
            file: self.name.clone(),
            problem: format!("table {position}'s bucket {bucket} is out of bounds"),
        };
        let start = u32_at(data, family.starts + bucket * 4).ok_or_else(damaged)? as usize;
        let end = u32_at(data, family.starts + bucket * 4 + 4).ok_or_else(damaged)? as usize;
        if start > end || end > family.len {
            return Err(damaged());
        }
        let width = family.plan.entry_bytes as usize;
        let entries = data
            .get(family.entries + start * width..family.entries + end * width)
            .ok_or_else(damaged)?;
        Ok(KeyRun {
            entries,
            width,
            doc_mask: low_mask(family.plan.doc_bits),
            max_doc: self.max_doc,
        })
    }

    /// Reads the memory that [`run`](Self::run)`(position, key)` will read first (the key's
    /// bucket bounds and its first entry), returning a byte of it, so that a caller touching
    /// many keys in a tight loop has their cache misses overlap instead of waiting for each in
    /// turn. Never fails: bounds that are out of range (a damaged file) read nothing here and
    /// are reported by `run`.
    pub(crate) fn touch_run(&self, position: usize, key: u64) -> u8 {
        let Some(family) = self.families.get(position) else {
            return 0;
        };
        let data = self.bytes.as_slice();
        let bucket = family.plan.bucket_of(key & VALUE_MASK);
        let start = u32_at(data, family.starts + bucket * 4).unwrap_or(0) as usize;
        let at = family.entries + start * family.plan.entry_bytes as usize;
        data.get(at).copied().unwrap_or(0)
    }

    /// The documents under `key` at key position `position`, in doc id order (deleted ones
    /// included). Errors when the table is inconsistent (a damaged file).
    pub(crate) fn run(&self, position: usize, key: u64) -> Result<KeyRun<'_>> {
        let Some(family) = self.families.get(position) else {
            return Ok(KeyRun::EMPTY);
        };
        let plan = family.plan;
        let value = key & VALUE_MASK;
        let bucket = plan.bucket_of(value);
        let suffix = value >> plan.bucket_bits;
        if suffix >> plan.suffix_bits != 0 {
            return Ok(KeyRun::EMPTY);
        }
        let mut run = self.bucket(position, family, bucket)?;
        let width = plan.entry_bytes as usize;
        let entries = run.entries;
        if plan.suffix_bits > 0 {
            let shift = plan.doc_bits;
            let n = run.len();
            let lo = partition_point(n, |i| (run.entry(i) >> shift) < suffix);
            let len = partition_point(n - lo, |i| (run.entry(lo + i) >> shift) == suffix);
            run.entries = &entries[lo * width..(lo + len) * width];
        }
        Ok(run)
    }
}

impl ComponentFile {
    /// Entries of key position `position`'s table (deleted documents included).
    pub(crate) fn table_len(&self, position: usize) -> usize {
        self.families.get(position).map_or(0, |f| f.len)
    }

    /// Calls `f(value, doc)` for every entry of key position `position`'s table whose key
    /// value (the key without its position's tag, 48 bits) has its low `bits` bits equal to
    /// `residue`, in no particular order (deleted documents included). The streaming join
    /// partitions each table by these low bits: over all residues every entry is visited once,
    /// and one residue reads only the buckets that can hold it. The one place that decodes
    /// tables for batch jobs: a change of the table format re-implements this body. Errors:
    /// [`Error::DamagedFile`] when the bucket directory is inconsistent.
    pub(crate) fn for_each_table_entry(
        &self,
        position: usize,
        bits: u32,
        residue: u64,
        mut f: impl FnMut(u64, DocId),
    ) -> Result<()> {
        let Some(family) = self.families.get(position) else {
            return Ok(());
        };
        let plan = family.plan;
        let doc_mask = low_mask(plan.doc_bits);
        let wanted = low_mask(bits);
        if residue & !wanted != 0 {
            return Ok(());
        }
        let mut visit = |bucket: usize, filter: bool| -> Result<()> {
            let run = self.bucket(position, family, bucket)?;
            for i in 0..run.len() {
                let entry = run.entry(i);
                let value = ((entry >> plan.doc_bits) << plan.bucket_bits) | bucket as u64;
                if filter && value & wanted != residue {
                    continue;
                }
                f(value, (entry & doc_mask) as DocId);
            }
            Ok(())
        };
        if bits <= plan.bucket_bits {
            // The buckets whose low `bits` bits are the residue.
            let step = 1usize << bits;
            let mut bucket = residue as usize;
            while bucket < plan.buckets() {
                visit(bucket, false)?;
                bucket += step;
            }
        } else {
            // One bucket holds the residue among others: filtered.
            visit((residue & low_mask(plan.bucket_bits)) as usize, true)?;
        }
        Ok(())
    }
}

/// The first index in `0..n` where `pred` turns false (`pred` true then false).
fn partition_point(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The documents of one key in a file's table, in doc id order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyRun<'a> {
    entries: &'a [u8],
    width: usize,
    doc_mask: u64,
    max_doc: u32,
}

impl<'a> KeyRun<'a> {
    const EMPTY: KeyRun<'static> = KeyRun {
        entries: &[],
        width: 4,
        doc_mask: 0,
        max_doc: 0,
    };

    fn entry(&self, i: usize) -> u64 {
        let at = i * self.width;
        match self.width {
            4 => u32_at(self.entries, at).map_or(0, u64::from),
            8 => u64_at(self.entries, at).unwrap_or(0),
            _ => self.entries.get(at..at + 3).map_or(0, |b| {
                u64::from(b[0]) | u64::from(b[1]) << 8 | u64::from(b[2]) << 16
            }),
        }
    }

    /// How many documents hold the key (deleted ones included).
    pub(crate) fn len(&self) -> usize {
        self.entries.len() / self.width
    }

    /// The documents, in doc id order (a damaged entry beyond the segment is skipped).
    pub(crate) fn docs(self) -> impl Iterator<Item = DocId> + 'a {
        (0..self.len())
            .map(move |i| (self.entry(i) & self.doc_mask) as DocId)
            .filter(move |&d| d < self.max_doc)
    }
}
