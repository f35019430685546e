//! Reading the key tables: one key's run of documents (a bucket read and a binary search), and
//! the scan of a table by residue that the batch jobs stream.

use super::{low_mask, u32_at, ComponentFile, FamilyView, VALUE_MASK};
use crate::error::{Error, Result};
use tantivy::DocId;

impl ComponentFile {
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
            filter_bits: family.plan.filter_bits,
            max_doc: self.max_doc,
        })
    }

    /// Reads `key`'s bucket bounds in table `position` (the first memory
    /// [`run`](Self::run)`(position, key)` reads) and returns the byte range of the bucket's
    /// entries (the next); empty when there is no such table, or for bounds out of range,
    /// which `run` reports. Never fails. A caller reading the bounds of many keys first, then
    /// touching their entries ([`touch_bytes`](Self::touch_bytes)), in tight loops, has the
    /// cache misses of each step overlap instead of waiting for each in turn.
    pub(crate) fn bucket_bytes(&self, position: usize, key: u64) -> (usize, usize) {
        let Some(family) = self.families.get(position) else {
            return (0, 0);
        };
        let data = self.bytes.as_slice();
        let bucket = family.plan.bucket_of(key & VALUE_MASK);
        let at = family.starts + bucket * 4;
        let start = u32_at(data, at).unwrap_or(0) as usize;
        let end = u32_at(data, at + 4).unwrap_or(0) as usize;
        let width = family.plan.entry_bytes as usize;
        (
            family.entries + start * width,
            family.entries + end.max(start) * width,
        )
    }

    /// Reads the first and the last byte of `range` (a bucket's entries: one to three cache
    /// lines), returning them combined; nothing for an empty or out-of-range one.
    pub(crate) fn touch_bytes(&self, (start, end): (usize, usize)) -> u8 {
        if start >= end {
            return 0;
        }
        let data = self.bytes.as_slice();
        data.get(start).copied().unwrap_or(0) ^ data.get(end - 1).copied().unwrap_or(0)
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
            let shift = plan.doc_bits + plan.filter_bits;
            let n = run.len();
            let lo = partition_point(n, |i| (run.entry(i) >> shift) < suffix);
            let len = partition_point(n - lo, |i| (run.entry(lo + i) >> shift) == suffix);
            run.entries = &entries[lo * width..(lo + len) * width];
        }
        Ok(run)
    }
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
                let entry = run.entry(i) >> plan.filter_bits;
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
    /// Filter bits below each entry's doc id ([`Plan::filter_bits`](super::Plan)).
    filter_bits: u32,
    max_doc: u32,
}

impl<'a> KeyRun<'a> {
    const EMPTY: KeyRun<'static> = KeyRun {
        entries: &[],
        width: 4,
        doc_mask: 0,
        filter_bits: 0,
        max_doc: 0,
    };

    /// Entry `i` (0 out of range). Each width (3 to 8 bytes) is one fixed-size read: the
    /// binary search of a probe and the scan of its run decode entries in their inner loops.
    fn entry(&self, i: usize) -> u64 {
        let at = i * self.width;
        let Some(bytes) = self.entries.get(at..at + self.width) else {
            return 0;
        };
        let le = |b: [u8; 8]| u64::from_le_bytes(b);
        match *bytes {
            [a, b, c] => le([a, b, c, 0, 0, 0, 0, 0]),
            [a, b, c, d] => le([a, b, c, d, 0, 0, 0, 0]),
            [a, b, c, d, e] => le([a, b, c, d, e, 0, 0, 0]),
            [a, b, c, d, e, f] => le([a, b, c, d, e, f, 0, 0]),
            [a, b, c, d, e, f, g] => le([a, b, c, d, e, f, g, 0]),
            [a, b, c, d, e, f, g, h] => le([a, b, c, d, e, f, g, h]),
            // Opening refuses other widths.
            _ => bytes
                .iter()
                .rev()
                .fold(0, |v, &byte| v << 8 | u64::from(byte)),
        }
    }

    /// How many documents hold the key (deleted ones included).
    pub(crate) fn len(&self) -> usize {
        self.entries.len() / self.width
    }

    /// The documents with their entries' filter bits (0 in a table without them), in doc id
    /// order (a damaged entry beyond the segment is skipped).
    pub(crate) fn docs_with_filter(self) -> impl Iterator<Item = (DocId, u64)> + 'a {
        let filter_mask = self.filter_mask();
        (0..self.len())
            .map(move |i| {
                let entry = self.entry(i);
                (
                    ((entry >> self.filter_bits) & self.doc_mask) as DocId,
                    entry & filter_mask,
                )
            })
            .filter(move |&(d, _)| d < self.max_doc)
    }

    /// The mask of an entry's filter bits (0 in a table without them).
    pub(crate) fn filter_mask(&self) -> u64 {
        low_mask(self.filter_bits)
    }
}
