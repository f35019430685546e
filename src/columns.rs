//! Reading a segment's columns and postings: the fingerprint column, string columns (ids and
//! groups) and the documents of a term.

use crate::error::Result;
use tantivy::columnar::StrColumn;
use tantivy::schema::{Field, IndexRecordOption, Schema};
use tantivy::{DocAddress, DocId, DocSet, InvertedIndexReader, Term, TERMINATED};

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

/// The first string of each of `docs` in per-segment string columns (`columns[segment_ord]`;
/// `None` where a segment has no such column or a document no value), in the order of `docs`.
///
/// Batched: the reads are sorted per segment by term ordinal, so each block of a column's
/// dictionary is decompressed once per call rather than once per document. This is the one
/// reader of ids and group ids for many documents (collapse windows, batch jobs, retagging).
pub(crate) fn read_strs(
    columns: &[Option<StrColumn>],
    docs: &[DocAddress],
) -> Result<Vec<Option<String>>> {
    let mut out: Vec<Option<String>> = vec![None; docs.len()];
    // (segment, term ordinal, position in `docs`)
    let mut wanted: Vec<(u32, u64, u32)> = Vec::with_capacity(docs.len());
    for (pos, a) in docs.iter().enumerate() {
        if let Some(Some(col)) = columns.get(a.segment_ord as usize) {
            if let Some(ord) = col.ords().first(a.doc_id) {
                wanted.push((a.segment_ord, ord, pos as u32));
            }
        }
    }
    wanted.sort_unstable();
    for run in wanted.chunk_by(|x, y| x.0 == y.0) {
        if let Some(Some(col)) = columns.get(run[0].0 as usize) {
            let mut in_segment: Vec<(u64, usize)> =
                run.iter().map(|w| (w.1, w.2 as usize)).collect();
            read_ords_into(col, &mut in_segment, &mut out)?;
        }
    }
    Ok(out)
}

/// Sets `out[pos]` to the term of each `(term ordinal, pos)` in `wanted`, reading the dictionary
/// of `col` front to back (sorted by ordinal first, so each block is decompressed once).
pub(crate) fn read_ords_into(
    col: &StrColumn,
    wanted: &mut [(u64, usize)],
    out: &mut [Option<String>],
) -> Result<()> {
    wanted.sort_unstable();
    let ords: Vec<u64> = wanted.iter().map(|w| w.0).collect();
    let mut positions = wanted.iter().map(|w| w.1);
    col.dictionary().sorted_ords_to_term_cb(&ords, |bytes| {
        if let Some(p) = positions.next() {
            out[p] = Some(String::from_utf8_lossy(bytes).into_owned());
        }
    })?;
    Ok(())
}

/// Calls `f` with every document (live or deleted) in the postings of `term`, in doc id order.
/// Cost: one term look-up and one postings read.
pub(crate) fn for_each_posting(
    inverted: &InvertedIndexReader,
    term: &Term,
    f: impl FnMut(DocId),
) -> tantivy::Result<()> {
    for_each_posting_up_to(inverted, term, usize::MAX, |_| true, f)
}

/// [`for_each_posting`] for the first `limit` documents that `keep` accepts only (the bound on
/// hot keys, counting live documents); the others are skipped. Cost: one term look-up and
/// the postings up to the `limit`-th kept document.
pub(crate) fn for_each_posting_up_to(
    inverted: &InvertedIndexReader,
    term: &Term,
    limit: usize,
    keep: impl Fn(DocId) -> bool,
    mut f: impl FnMut(DocId),
) -> tantivy::Result<()> {
    if let Some(mut postings) = inverted.read_postings(term, IndexRecordOption::Basic)? {
        let mut doc = postings.doc();
        let mut read = 0usize;
        while doc != TERMINATED && read < limit {
            if keep(doc) {
                f(doc);
                read += 1;
            }
            doc = postings.advance();
        }
    }
    Ok(())
}
