//! Opening a component file: the structure check (header, sections, table descriptors) and
//! the checksum.

use super::{
    rule_hash, u32_at, u64_at, ComponentFile, FamilyView, Plan, DESCRIPTOR_BYTES, FORMAT_VERSION,
    HEADER_BYTES, MAGIC, OLDEST_READ_VERSION,
};
use crate::error::{Error, Result};
use crate::signature::MatchRule;
use tantivy::directory::OwnedBytes;
use xxhash_rust::xxh3::xxh3_64;

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
                filter_bits: u32::from(data[d + 12]),
            };
            let len = u64_at(data, d + 4).unwrap_or(u64::MAX);
            if plan.bucket_bits > 26
                || plan.doc_bits > 32
                || !(3..=8).contains(&plan.entry_bytes)
                || plan.filter_bits > 48
                || plan.suffix_bits + plan.doc_bits + plan.filter_bits > plan.entry_bytes * 8
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
}
