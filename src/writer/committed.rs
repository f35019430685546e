//! The group and replaced-ids columns of the writer's committed segments, read through the
//! process's string tables ([`crate::ids`]): a check under `Tag` reads the group of its nearest
//! committed match and one under `Replace` the replaced ids of every committed match, and a
//! string read from a column's dictionary decompresses a block with a fresh context each time
//! (~13 us), where a segment's table, built once it has served `max(32, terms / 1024)` reads
//! and shared by every reader of the segment in the process, costs an array read.

use crate::columns::read_ords_into;
use crate::error::Result;
use crate::ids::{segment_ids, SegmentIds};
use std::sync::Arc;
use tantivy::columnar::StrColumn;
use tantivy::schema::Field;
use tantivy::DocAddress;

/// One string column of one segment and its entry in the process's tables.
struct SegmentStrs {
    column: StrColumn,
    table: Arc<SegmentIds>,
}

impl SegmentStrs {
    /// The strings of `doc`, in the column's order of its values.
    fn read(&self, doc: tantivy::DocId) -> Result<Vec<String>> {
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

/// A string field's columns in every committed segment (`None` where a segment has none).
#[derive(Default)]
pub(super) struct CommittedStrs {
    segments: Vec<Option<SegmentStrs>>,
}

impl CommittedStrs {
    /// The columns of `field` (none without a field) in `searcher`'s segments. Cost: one column
    /// open per segment. Errors: [`crate::Error::Tantivy`] when a column cannot be opened.
    pub(super) fn open(searcher: &tantivy::Searcher, field: Option<Field>) -> Result<Self> {
        let mut segments = Vec::new();
        if let Some(field) = field {
            let name = searcher.schema().get_field_name(field).to_string();
            for segment in searcher.segment_readers() {
                let column = segment.fast_fields().str(&name)?;
                segments.push(column.map(|column| SegmentStrs {
                    column,
                    table: segment_ids(segment.segment_id(), &name),
                }));
            }
        }
        Ok(CommittedStrs { segments })
    }

    /// The first string of the document at `address`, if any.
    pub(super) fn first(&self, address: DocAddress) -> Result<Option<String>> {
        match self.segment(address) {
            Some(strs) => Ok(strs.read(address.doc_id)?.into_iter().next()),
            None => Ok(None),
        }
    }

    /// Every string of the document at `address`, in the column's order.
    pub(super) fn all(&self, address: DocAddress) -> Result<Vec<String>> {
        match self.segment(address) {
            Some(strs) => strs.read(address.doc_id),
            None => Ok(Vec::new()),
        }
    }

    fn segment(&self, address: DocAddress) -> Option<&SegmentStrs> {
        self.segments.get(address.segment_ord as usize)?.as_ref()
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
        let strs = CommittedStrs::open(&searcher, Some(field)).unwrap();
        let none = CommittedStrs::open(&searcher, None).unwrap();
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
            .filter(|s| segment_ids(s.segment_id(), "replaced").is_built())
            .count();
        assert_eq!(built, 3, "every segment's table was built by the reads");
    }
}
