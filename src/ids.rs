//! Ids at the cost of a column read: a segment's id dictionary decoded once into memory.
//!
//! A string fast column keeps its dictionary in compressed blocks, so reading one id through
//! it decompresses a block (~13 us); a lookup that returns ids pays that per hit. An
//! [`IdTable`] holds every id of one segment's column by term ordinal, so an id costs the
//! ordinal read (a fast-field read) and a copy.
//!
//! Building a table streams the whole dictionary once (about as long as 1 in 1,000 of its
//! ids read one by one) and keeps about the ids' bytes + 8 B per distinct id. So a segment
//! gets its table only after it has served `max(32, ids / 1024)` id reads (in any searcher
//! of this process): a one-off lookup never pays the build, a writer or a service that looks
//! up many documents pays it once per segment. Tables are shared by every searcher and
//! [`NearDupCollapse`](crate::NearDupCollapse) of the segment in the process and freed with
//! the last of them (segments are immutable, so a table never goes stale; deletes do not
//! change the dictionary). The same tables serve any string column read this way: a
//! collapse's string group values (a tag or a `GroupBy::Field` of type str) too.

use crate::columns::{read_ords_into, SegmentRegistry};
use crate::error::Result;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use tantivy::columnar::StrColumn;
use tantivy::index::SegmentId;
use tantivy::DocId;

/// Every id of one segment's id column, by term ordinal.
#[derive(Debug)]
pub(crate) struct IdTable {
    bytes: String,
    /// End of each id in `bytes` (ids are the dictionary's terms, in ordinal order).
    ends: Vec<u64>,
}

impl IdTable {
    /// Streams the dictionary of `column`. `None` when it cannot be read (the caller falls back
    /// to reading ids one by one, which reports the error) or a term is not UTF-8.
    fn build(column: &StrColumn) -> Option<IdTable> {
        let mut stream = column.dictionary().stream().ok()?;
        let mut bytes = String::new();
        let mut ends = Vec::with_capacity(column.dictionary().num_terms());
        while stream.advance() {
            bytes.push_str(std::str::from_utf8(stream.key()).ok()?);
            ends.push(bytes.len() as u64);
        }
        Some(IdTable { bytes, ends })
    }

    /// The id of term ordinal `ord`.
    pub(crate) fn get(&self, ord: u64) -> Option<&str> {
        let i = usize::try_from(ord).ok()?;
        let end = *self.ends.get(i)? as usize;
        let start = match i {
            0 => 0,
            _ => self.ends[i - 1] as usize,
        };
        self.bytes.get(start..end)
    }
}

/// What the process knows about one segment's id column: how often it was read, and its table
/// once built.
#[derive(Debug, Default)]
pub(crate) struct SegmentIds {
    reads: AtomicU64,
    table: OnceLock<Option<IdTable>>,
}

impl SegmentIds {
    /// The table of `column`, if built or worth building now (this read counted).
    pub(crate) fn table(&self, column: &StrColumn) -> Option<&IdTable> {
        self.table_for_reads(column, 1)
    }

    /// Whether the table is built (or found not buildable).
    #[cfg(test)]
    pub(crate) fn is_built(&self) -> bool {
        self.table.get().is_some()
    }

    /// Like [`table`](Self::table), counting `reads` reads at once (a batch).
    pub(crate) fn table_for_reads(&self, column: &StrColumn, reads: u64) -> Option<&IdTable> {
        if let Some(built) = self.table.get() {
            return built.as_ref();
        }
        let reads = self.reads.fetch_add(reads, Ordering::Relaxed) + reads;
        let threshold = (column.dictionary().num_terms() as u64 / 1024).max(32);
        if reads < threshold {
            return None;
        }
        self.table.get_or_init(|| IdTable::build(column)).as_ref()
    }
}

/// The first string of each of `docs` (documents of one segment) in `column`, in the order of
/// `docs` (`None` for a document without a value): through the segment's table when it is
/// built or the reads counted on `entry` (these included) make it worth building, else in one
/// pass over the dictionary sorted by term ordinal (each block decompressed once per call).
/// Both ways give the same strings (a table is only built from a dictionary of UTF-8 terms).
pub(crate) fn read_segment_strs(
    column: &StrColumn,
    entry: &SegmentIds,
    docs: &[DocId],
) -> Result<Vec<Option<String>>> {
    let ords = docs.iter().map(|&doc| column.ords().first(doc));
    if let Some(table) = entry.table_for_reads(column, docs.len() as u64) {
        return Ok(ords
            .map(|ord| ord.and_then(|o| table.get(o)).map(str::to_string))
            .collect());
    }
    let mut out: Vec<Option<String>> = vec![None; docs.len()];
    let mut wanted: Vec<(u64, usize)> = ords
        .enumerate()
        .filter_map(|(pos, ord)| Some((ord?, pos)))
        .collect();
    read_ords_into(column, &mut wanted, &mut out)?;
    Ok(out)
}

/// The process's id tables, by segment and column name.
static REGISTRY: SegmentRegistry<SegmentIds> = SegmentRegistry::new();

/// The shared entry of `segment`'s column `field`.
pub(crate) fn segment_ids(segment: SegmentId, field: &str) -> Arc<SegmentIds> {
    REGISTRY.entry(segment, field)
}
