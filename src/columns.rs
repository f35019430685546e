//! Reading a segment's columns and postings: the fingerprint column, string columns (ids and
//! groups) and the documents of a term.

use crate::error::Result;
use tantivy::columnar::{Column, StrColumn};
use tantivy::schema::{Field, IndexRecordOption, Schema};
use tantivy::{DocId, DocSet, InvertedIndexReader, SegmentReader, Term, TERMINATED};

/// The fingerprint column `field` of a segment.
pub(crate) fn fingerprint_column(
    seg: &SegmentReader,
    field: Field,
) -> tantivy::Result<Column<u64>> {
    seg.fast_fields().u64(field_name(seg.schema(), field)?)
}

/// The name of `field` in `schema`; an error (not a panic) when the schema has no such field,
/// as when a handle of one index meets a searcher of another.
pub(crate) fn field_name(schema: &Schema, field: Field) -> tantivy::Result<&str> {
    schema
        .fields()
        .nth(field.field_id() as usize)
        .map(|(_, entry)| entry.name())
        .ok_or_else(|| {
            tantivy::TantivyError::SchemaError(format!(
                "the schema has no field number {} (a handle of another index?); use the \
                 NearDupFields of the index being searched",
                field.field_id()
            ))
        })
}

/// The first value of `doc` in a string column, if any.
pub(crate) fn read_str(col: Option<&StrColumn>, doc: DocId) -> Result<Option<String>> {
    let Some(col) = col else { return Ok(None) };
    let Some(ord) = col.ords().first(doc) else {
        return Ok(None);
    };
    let mut s = String::new();
    if col.ord_to_str(ord, &mut s)? {
        Ok(Some(s))
    } else {
        Ok(None)
    }
}

/// Calls `f` with every document (live or deleted) in the postings of `term`, in doc id order.
/// Cost: one term look-up and one postings read.
pub(crate) fn for_each_posting(
    inverted: &InvertedIndexReader,
    term: &Term,
    mut f: impl FnMut(DocId),
) -> tantivy::Result<()> {
    if let Some(mut postings) = inverted.read_postings(term, IndexRecordOption::Basic)? {
        let mut doc = postings.doc();
        while doc != TERMINATED {
            f(doc);
            doc = postings.advance();
        }
    }
    Ok(())
}
