//! The component's file: one per segment, written once, read in place (memory-mapped).
//!
//! ```text
//! header (64 B)   magic "TSNDSEG1", format version, max_doc, words per document, families,
//!                 the rule's hash, the offset of the family directory
//! signatures      max_doc x words u64: the fingerprint, then the sketch words (doc id order);
//!                 words is 1 when no document of the segment has a sketch (fingerprints only)
//! present         ceil(max_doc / 64) u64: bit d set when document d has a signature
//! families        per key position of the rule: a bucket directory ((1 << bucket_bits) + 1
//!                 u32) and the entries (`(suffix << doc_bits | doc) << filter_bits | filter`,
//!                 3 to 8 bytes), sorted, so that one key's documents are one run in doc id
//!                 order; `filter` is the low `filter_bits` of the fingerprint's bits outside
//!                 a simhash block key (none for band keys)
//! directory       per family 16 B: bucket_bits, suffix_bits, doc_bits, entry bytes, entries
//!                 (u64), filter_bits, 3 zero bytes
//! checksum        xxh3-64 of everything before it
//! ```
//!
//! All integers are little-endian. Opening checks the structure (magic, version, every
//! section's size against the header, the rule, the segment's document count): O(families),
//! so the first lookup of a fresh process costs a few microseconds per segment. The checksum
//! is verified by [`ComponentFile::verify_checksum`], which every merge runs on its sources;
//! every read is bounds-checked, so a damaged byte the structure check misses gives an error,
//! never a panic.
//!
//! The code follows the file's parts: `write` writes a whole file; `open` checks one's
//! structure ([`ComponentFile::parse`]) and its checksum; `signatures` reads the signature
//! section; `tables` probes and scans the key tables.

mod open;
mod signatures;
mod tables;
mod write;

pub(crate) use write::{write, SignatureSource};

#[cfg(test)]
mod tests;

use crate::signature::MatchRule;
use tantivy::directory::OwnedBytes;
use xxhash_rust::xxh3::xxh3_64;

pub(crate) const MAGIC: [u8; 8] = *b"TSNDSEG1";
/// Bumped whenever the layout changes; an older file is refused with a message to rebuild.
/// Version 4 keeps filter bits in the simhash key tables' entries; version 3 may store one
/// word per document (a segment without sketches); files of versions 2 and 3 (no filter
/// bits: their descriptors' filter byte is zero) are read as well.
pub(crate) const FORMAT_VERSION: u32 = 4;
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
    /// 3 to 8.
    pub(crate) entry_bytes: u32,
    /// Fingerprint bits outside the key kept in each entry, below the doc id (simhash block
    /// keys only; 0 for band keys).
    pub(crate) filter_bits: u32,
}

/// Filter bits a simhash key table keeps at least: a random candidate is within distance 3
/// of the query on 16 bits with probability 697 / 65,536 (about 1%), so 99% of the chance
/// candidates of a block key are dropped without reading their rows.
const MIN_FILTER_BITS: u32 = 16;

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
    /// The doc id's bits among `max_doc` documents, and the bucket bits that give about eight
    /// to sixteen entries a bucket for keys of `width` bits.
    fn doc_and_bucket_bits(width: u32, max_doc: u32) -> (u32, u32) {
        let doc_bits = bits_for(max_doc.saturating_sub(1)).max(1);
        let bucket_bits = bits_for(max_doc).saturating_sub(4).min(width).min(26);
        (doc_bits, bucket_bits)
    }

    /// Parameters for key values of `width` bits among `max_doc` documents: about eight to
    /// sixteen entries per bucket (a key costs the directory read and a search within one or
    /// two cache lines; the directory stays under half a byte per document and position), and
    /// the narrowest entries (3, 4, else 8 bytes) that the suffix and the doc id fit, widening
    /// the directory for them up to 8 buckets per document.
    pub(crate) fn new(width: u32, max_doc: u32) -> Plan {
        let width = width.min(48);
        let (doc_bits, target) = Plan::doc_and_bucket_bits(width, max_doc);
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
            filter_bits: 0,
        }
    }

    /// Parameters for a simhash block key of `width` bits among `max_doc` documents: the
    /// buckets of [`new`](Self::new) without its widening, and entries wide enough for at
    /// least [`MIN_FILTER_BITS`] of the fingerprint's other `64 - width` bits (the entry's
    /// spare bits all go to the filter). A lookup's candidates are scattered rows of the
    /// signature section, one cache miss each (Manku et al. keep whole fingerprints in their
    /// tables for this reason); the filter rejects most of them from the table, for about two
    /// bytes per document and key.
    pub(crate) fn with_filter(width: u32, max_doc: u32) -> Plan {
        let width = width.min(48);
        let (doc_bits, bucket_bits) = Plan::doc_and_bucket_bits(width, max_doc);
        let suffix_bits = width - bucket_bits;
        let base = suffix_bits + doc_bits;
        let entry_bytes = (base + MIN_FILTER_BITS).div_ceil(8).clamp(3, 8);
        let filter_bits = (entry_bytes * 8).saturating_sub(base).min(64 - width);
        Plan {
            bucket_bits,
            suffix_bits,
            doc_bits,
            entry_bytes,
            filter_bits,
        }
    }

    /// The plan of every key position of `rule` ([`MatchRule::keys`] order); `filters` gives
    /// the simhash keys' tables filter bits (format 4 on).
    pub(crate) fn for_rule(rule: &MatchRule, max_doc: u32, filters: bool) -> Vec<Plan> {
        let blocks = rule.layout().num_keys();
        (0..rule.keys_per_document())
            .map(|position| {
                if position < blocks {
                    let range = rule.layout().combo_key_range(position);
                    let width = (range.end() - range.start()).count_ones();
                    if filters {
                        Plan::with_filter(width, max_doc)
                    } else {
                        Plan::new(width, max_doc)
                    }
                } else {
                    Plan::new(rule.minhash().key_bits, max_doc)
                }
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
