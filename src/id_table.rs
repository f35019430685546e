//! Ids at the cost of a column read: a segment's id dictionary decoded once into memory.
//!
//! A string fast column keeps its dictionary in compressed blocks, so reading one id through
//! it decompresses a block (~13 us); a lookup that returns ids pays that per hit. An
//! [`IdTable`] holds every id of one segment's column by term ordinal, so an id costs the
//! ordinal read (a fast-field read) and a copy.
//!
//! Building a table streams the whole dictionary once (about as long as 1 in 1,000 of its
//! ids read one by one) and keeps about the ids' bytes + 8 B per distinct id. So a segment
//! gets its table only after it has served `max(32, ids / 1024)` id reads through the same
//! [`IdTables`]: a one-off lookup never pays the build, a writer or a service that looks up
//! many documents pays it once per segment.
//!
//! Who owns the tables: an [`IdTables`], never the process. A [`NearDupIndex`]'s reader
//! warmer holds one ([`crate::component::ComponentWarmer`]): every searcher of its readers,
//! and every consumer it makes ([`NearDupIndex::lookups`], the writer's checks against
//! committed segments, the CLI's and Python's collapses), shares the tables of a segment
//! while a live searcher generation holds that segment, so a reload keeps the tables of the
//! segments it did not change, and a merged-away segment's are freed with the last searcher
//! and consumer holding it. A consumer made from a bare `Searcher`
//! ([`NearDupLookup::new`](crate::NearDupLookup::new), a
//! [`NearDupCollapse`](crate::NearDupCollapse)) owns tables of its own, freed with it.
//! Segments are immutable, so a table never goes stale; deletes do not change the
//! dictionary. The same tables serve any string column read this way: a collapse's string
//! group values (a tag or a `GroupBy::Field` of type str), and through [`StrColumns`] the
//! groups (`Tag`) and replaced ids (`Replace`) that
//! [`NearDupLookup::group_of`](crate::NearDupLookup::group_of) and the writer's checks
//! against committed segments read.
//!
//! [`NearDupIndex`]: crate::NearDupIndex
//! [`NearDupIndex::lookups`]: crate::NearDupIndex::lookups

use crate::columns::{field_name, read_ords_into};
use crate::error::Result;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use tantivy::columnar::StrColumn;
use tantivy::index::SegmentId;
use tantivy::schema::Field;
use tantivy::{DocAddress, DocId};

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

/// What an [`IdTables`] knows about one segment's id column: how often it was read, and its
/// table once built.
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

/// One segment's string tables, by column name.
#[derive(Debug, Default)]
pub(crate) struct SegmentTables {
    columns: Mutex<HashMap<String, Arc<SegmentIds>>>,
}

impl SegmentTables {
    /// The entry of column `field`, made (empty) on first use.
    pub(crate) fn column(&self, field: &str) -> Arc<SegmentIds> {
        let mut columns = crate::sync::lock(&self.columns);
        if let Some(found) = columns.get(field) {
            return found.clone();
        }
        let fresh = Arc::new(SegmentIds::default());
        columns.insert(field.to_string(), fresh.clone());
        fresh
    }
}

/// The string tables of the segments one owner reads (a [`NearDupIndex`](crate::NearDupIndex)'s
/// warmer, or one consumer), by segment. Cloning shares them. An entry lives while something
/// holds its [`SegmentTables`]: the warmer, for each segment of a live searcher generation,
/// and every consumer reading the segment; an entry nobody holds is forgotten.
#[derive(Clone, Debug, Default)]
pub(crate) struct IdTables {
    segments: Arc<Mutex<HashMap<SegmentId, Weak<SegmentTables>>>>,
}

impl IdTables {
    /// The tables of `segment`, made (empty) if nothing holds them. Cost: a hash look-up under
    /// a lock (and a sweep of forgotten entries when one is made).
    pub(crate) fn segment(&self, segment: SegmentId) -> Arc<SegmentTables> {
        let mut map = crate::sync::lock(&self.segments);
        if let Some(found) = map.get(&segment).and_then(Weak::upgrade) {
            return found;
        }
        // Forget segments nothing holds any more (merged away, their searchers dropped).
        map.retain(|_, weak| weak.strong_count() > 0);
        let fresh = Arc::new(SegmentTables::default());
        map.insert(segment, Arc::downgrade(&fresh));
        fresh
    }

    /// The entry of `segment`'s column `field`, and the segment's tables that keep it shared
    /// (hold both while reading).
    pub(crate) fn column(
        &self,
        segment: SegmentId,
        field: &str,
    ) -> (Arc<SegmentTables>, Arc<SegmentIds>) {
        let tables = self.segment(segment);
        let column = tables.column(field);
        (tables, column)
    }

    /// How many segments have tables that something holds (for tests).
    #[cfg(test)]
    pub(crate) fn held_segments(&self) -> usize {
        crate::sync::lock(&self.segments)
            .values()
            .filter(|w| w.strong_count() > 0)
            .count()
    }
}

/// One string column of one segment and its entry in the owner's tables.
struct SegmentStrs {
    column: StrColumn,
    table: Arc<SegmentIds>,
    /// Keeps the segment's entry in the owner's [`IdTables`] while this reads it.
    _segment: Arc<SegmentTables>,
}

impl SegmentStrs {
    /// The strings of `doc`, in the column's order of its values.
    fn read(&self, doc: DocId) -> Result<Vec<String>> {
        let ords: Vec<u64> = self.column.ords().values_for_doc(doc).collect();
        if ords.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(table) = self.table.table_for_reads(&self.column, ords.len() as u64) {
            return Ok(ords
                .iter()
                .filter_map(|&o| table.get(o).map(str::to_string))
                .collect());
        }
        let mut out = vec![None; ords.len()];
        let mut wanted: Vec<(u64, usize)> = ords.into_iter().zip(0..).collect();
        read_ords_into(&self.column, &mut wanted, &mut out)?;
        Ok(out.into_iter().flatten().collect())
    }
}

/// A string field's columns in every segment of a searcher (`None` where a segment has none),
/// read through an owner's [`IdTables`]: the ids, groups and replaced ids a lookup or the
/// writer's committed check reads.
#[derive(Default)]
pub(crate) struct StrColumns {
    /// The tables the segments' columns are read through.
    tables: IdTables,
    /// The searcher and the field's name, to open a segment's column the first time it is read.
    source: Option<(tantivy::Searcher, String)>,
    /// Each segment's column, opened on first read: opening one reads its dictionary's block
    /// index (about 0.1 ms per million strings), which a handle that never reads this field,
    /// or reads it in a few segments, need not pay for every segment.
    segments: Vec<OnceLock<Option<SegmentStrs>>>,
}

impl StrColumns {
    /// The columns of `field` (none without a field) in `searcher`'s segments, each opened when
    /// first read, read through `tables`. Cost: a clone of the searcher. Errors:
    /// [`crate::Error::Tantivy`] when the searcher's schema has no such field (a searcher of
    /// another index); a column that cannot be opened is an error of the read that opens it.
    pub(crate) fn open(
        searcher: &tantivy::Searcher,
        field: Option<Field>,
        tables: &IdTables,
    ) -> Result<Self> {
        let Some(field) = field else {
            return Ok(StrColumns::default());
        };
        let name = field_name(searcher.schema(), field)?.to_string();
        Ok(StrColumns {
            tables: tables.clone(),
            segments: searcher
                .segment_readers()
                .iter()
                .map(|_| OnceLock::new())
                .collect(),
            source: Some((searcher.clone(), name)),
        })
    }

    /// The first string of the document at `address`, if any: one ordinal read, then the
    /// segment's table or one dictionary block.
    pub(crate) fn first(&self, address: DocAddress) -> Result<Option<String>> {
        let Some(strs) = self.segment(address)? else {
            return Ok(None);
        };
        let Some(ord) = strs.column.ords().first(address.doc_id) else {
            return Ok(None);
        };
        if let Some(table) = strs.table.table(&strs.column) {
            return Ok(table.get(ord).map(str::to_string));
        }
        let mut s = String::new();
        Ok(strs.column.ord_to_str(ord, &mut s)?.then_some(s))
    }

    /// Every string of the document at `address`, in the column's order.
    pub(crate) fn all(&self, address: DocAddress) -> Result<Vec<String>> {
        match self.segment(address)? {
            Some(strs) => strs.read(address.doc_id),
            None => Ok(Vec::new()),
        }
    }

    /// The column of `address`'s segment (opened now if it was not), if it has one.
    fn segment(&self, address: DocAddress) -> Result<Option<&SegmentStrs>> {
        let ord = address.segment_ord as usize;
        let (Some(cell), Some((searcher, name))) = (self.segments.get(ord), &self.source) else {
            return Ok(None);
        };
        if let Some(strs) = cell.get() {
            return Ok(strs.as_ref());
        }
        let segment = searcher.segment_reader(address.segment_ord);
        let opened = segment.fast_fields().str(name)?.map(|column| {
            let (tables, table) = self.tables.column(segment.segment_id(), name);
            SegmentStrs {
                column,
                table,
                _segment: tables,
            }
        });
        // Another thread may have opened it meanwhile: either copy is the same column.
        let _ = cell.set(opened);
        Ok(cell.get().and_then(Option::as_ref))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;
    use tantivy::indexer::NoMergePolicy;
    use tantivy::schema::{Schema, FAST, STRING};
    use tantivy::{Index, IndexWriter, TantivyDocument};

    /// Every document's strings, read many times in a random order (so that the segments' tables
    /// get built midway), equal what tantivy's dictionary gives one by one; across segments,
    /// with documents without a value and with several values.
    #[test]
    fn strings_equal_the_dictionary_before_and_after_the_tables() {
        let mut builder = Schema::builder();
        let field = builder.add_text_field("replaced", STRING | FAST);
        let index = Index::create_in_ram(builder.build());
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 20_000_000).unwrap();
        writer.set_merge_policy(Box::new(NoMergePolicy));
        let mut rng = Rng(17);
        for i in 0..600 {
            let mut doc = TantivyDocument::default();
            for _ in 0..rng.below(4) {
                doc.add_text(field, format!("id-{}-\u{e9}", rng.below(700)));
            }
            writer.add_document(doc).unwrap();
            if i % 200 == 199 {
                writer.commit().unwrap();
            }
        }
        writer.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        assert_eq!(searcher.segment_readers().len(), 3);
        let tables = IdTables::default();
        let strs = StrColumns::open(&searcher, Some(field), &tables).unwrap();
        let none = StrColumns::open(&searcher, None, &tables).unwrap();
        let mut expected = Vec::new();
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            let column = segment.fast_fields().str("replaced").unwrap().unwrap();
            for doc in 0..segment.max_doc() {
                let values: Vec<String> = column
                    .ords()
                    .values_for_doc(doc)
                    .map(|o| {
                        let mut s = String::new();
                        assert!(column.ord_to_str(o, &mut s).unwrap());
                        s
                    })
                    .collect();
                expected.push((DocAddress::new(ord as u32, doc), values));
            }
        }
        assert!(expected.iter().any(|(_, v)| v.is_empty()));
        assert!(expected.iter().any(|(_, v)| v.len() >= 2));
        for _ in 0..3 {
            for _ in 0..expected.len() {
                let (address, values) = &expected[rng.index(expected.len())];
                assert_eq!(&strs.all(*address).unwrap(), values, "{address:?}");
                assert_eq!(strs.first(*address).unwrap().as_ref(), values.first());
                assert!(none.all(*address).unwrap().is_empty());
            }
        }
        let built = searcher
            .segment_readers()
            .iter()
            .filter(|s| tables.column(s.segment_id(), "replaced").1.is_built())
            .count();
        assert_eq!(built, 3, "every segment's table was built by the reads");
    }

    /// An index of `segments` segments of `per_segment` documents, each with one distinct id.
    fn id_index(segments: usize, per_segment: usize) -> (Index, Field) {
        let mut builder = Schema::builder();
        let field = builder.add_text_field("id", STRING | FAST);
        let index = Index::create_in_ram(builder.build());
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 20_000_000).unwrap();
        writer.set_merge_policy(Box::new(NoMergePolicy));
        for s in 0..segments {
            for d in 0..per_segment {
                let mut doc = TantivyDocument::default();
                doc.add_text(field, format!("id-{s}-{d}"));
                writer.add_document(doc).unwrap();
            }
            writer.commit().unwrap();
        }
        (index, field)
    }

    /// A segment's table is built by the read that makes `max(32, ids / 1024)` reads through
    /// the same tables, not one before; reads through other tables do not count.
    #[test]
    fn a_table_is_built_after_max_32_or_ids_over_1024_reads() {
        for (ids, threshold) in [(100usize, 32u64), (40_000, 39)] {
            let (index, field) = id_index(1, ids);
            let searcher = index.reader().unwrap().searcher();
            let tables = IdTables::default();
            let strs = StrColumns::open(&searcher, Some(field), &tables).unwrap();
            let elsewhere = StrColumns::open(&searcher, Some(field), &IdTables::default()).unwrap();
            let segment = searcher.segment_reader(0).segment_id();
            let address = DocAddress::new(0, 7);
            for _ in 0..threshold * 2 {
                assert_eq!(elsewhere.first(address).unwrap().as_deref(), Some("id-0-7"));
            }
            for read in 1..=threshold {
                assert!(
                    !tables.column(segment, "id").1.is_built(),
                    "{ids} ids, read {read}"
                );
                assert_eq!(strs.first(address).unwrap().as_deref(), Some("id-0-7"));
            }
            assert!(tables.column(segment, "id").1.is_built(), "{ids} ids");
        }
    }

    /// Two readers over one [`IdTables`] share a segment's table (the reads of both count, and
    /// the table one built serves the other); the tables of a segment nothing holds any more
    /// are forgotten, so a reader of the same segment made afterwards starts afresh.
    #[test]
    fn readers_over_one_tables_share_and_a_released_segment_is_forgotten() {
        let (index, field) = id_index(2, 50);
        let searcher = index.reader().unwrap().searcher();
        let tables = IdTables::default();
        let a = StrColumns::open(&searcher, Some(field), &tables).unwrap();
        let b = StrColumns::open(&searcher, Some(field), &tables).unwrap();
        // The searcher's segment order is not the commit order: find the second commit's
        // segment through tables of its own (those reads do not count here).
        let probe = StrColumns::open(&searcher, Some(field), &IdTables::default()).unwrap();
        let second = (0..2u32)
            .find(|&ord| probe.first(DocAddress::new(ord, 0)).unwrap().as_deref() == Some("id-1-0"))
            .unwrap();
        let address = DocAddress::new(second, 3);
        for _ in 0..16 {
            assert_eq!(a.first(address).unwrap().as_deref(), Some("id-1-3"));
            assert_eq!(b.first(address).unwrap().as_deref(), Some("id-1-3"));
        }
        let segment = searcher.segment_reader(second).segment_id();
        assert!(tables.column(segment, "id").1.is_built());
        assert_eq!(
            tables.held_segments(),
            1,
            "the first commit's segment was never read"
        );
        drop((a, b));
        assert_eq!(tables.held_segments(), 0);
        let c = StrColumns::open(&searcher, Some(field), &tables).unwrap();
        assert_eq!(c.first(address).unwrap().as_deref(), Some("id-1-3"));
        assert!(!tables.column(segment, "id").1.is_built());
    }
}
