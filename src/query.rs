//! [`NearDupQuery`]: every document within Hamming distance `k` of a fingerprint, as a tantivy
//! [`Query`].
//!
//! Per segment, the candidates are the union of the postings of the fingerprint's keys (the
//! pigeonhole guarantees every document within the layout's `k` shares a key); a candidate
//! matches when the exact Hamming distance read from the fingerprint column is `<= k`
//! (**inclusive**: distance `k` matches, `k + 1` does not). It is built on tantivy's
//! [`DocPredicateQuery`] (candidates = its necessary condition, distance = its predicate), so it
//! composes inside a [`BooleanQuery`](tantivy::query::BooleanQuery) with any other query, and
//! deleted documents are skipped by tantivy's collectors as for every query. Its score is a
//! constant (1.0 times the boost): wrap it in
//! [`ConstScoreQuery::new(q, 0.0)`](tantivy::query::ConstScoreQuery) to filter a text query
//! without changing its scores.
//!
//! ```
//! use tantivy::collector::Count;
//! use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
//! use tantivy::schema::{IndexRecordOption, Schema, FAST, STRING, TEXT};
//! use tantivy::{doc, Index, Term};
//! use tantivy_simhash::{NearDupConfig, NearDupIndex, NearDupQuery, Policy};
//!
//! let config = NearDupConfig::new("id", ["body"]);
//! let mut builder = Schema::builder();
//! let id = builder.add_text_field("id", STRING | FAST);
//! let host = builder.add_text_field("host", STRING);
//! let body = builder.add_text_field("body", TEXT);
//! config.add_fields(&mut builder);
//! let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config)?;
//! let mut writer = index.writer(50_000_000, Policy::Off)?;
//! let text = "The licence grants permission to use, copy, modify and distribute this \
//!             software for any purpose, provided the notice appears in all copies.";
//! writer.add_document(doc!(id => "a", host => "x.org", body => text))?;
//! writer.add_document(doc!(id => "b", host => "y.org", body => text))?;
//! writer.commit()?;
//!
//! let searcher = index.searcher()?;
//! // Near-duplicates of document "a" on host y.org:
//! let near = NearDupQuery::from_id(index.fields(), &searcher, "a")?;
//! let on_host = TermQuery::new(Term::from_field_text(host, "y.org"), IndexRecordOption::Basic);
//! let q = BooleanQuery::new(vec![
//!     (Occur::Must, Box::new(near.clone()) as Box<dyn Query>),
//!     (Occur::Must, Box::new(on_host)),
//! ]);
//! assert_eq!(searcher.search(&q, &Count)?, 1);
//! // The convenience form: (id, distance), nearest first.
//! let hits = near.search(&searcher)?;
//! assert_eq!((hits[0].id.as_str(), hits[0].distance), ("a", 0));
//! # Ok::<(), tantivy_simhash::Error>(())
//! ```

use crate::columns::{fingerprint_column, for_each_posting};
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use crate::layout::check_distance;
use crate::lookup::{NearDup, NearDupSearcher};
use crate::schema::{NearDupFields, NearDupIndex};
use tantivy::columnar::Column;
use tantivy::query::doc_predicate_query::{
    ConstOrVariableSegmentPredicate, DocPredicate, DocPredicateQuery, SegmentDocPredicate,
};
use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::schema::Field;
use tantivy::{DocId, DocSet, Score, Searcher, SeekDangerResult, SegmentReader, Term, TERMINATED};

/// Documents within Hamming distance `k` (inclusive) of a fingerprint. See the
/// [module docs](self).
#[derive(Clone, Debug)]
pub struct NearDupQuery {
    fields: NearDupFields,
    fingerprint: Fingerprint,
    max_distance: u32,
    terms: Vec<Term>,
}

impl NearDupQuery {
    /// Documents within the layout's `k` of `fingerprint`, in the index `fields` is the handle
    /// of. Cost: computing the keys; the postings are read when the query runs.
    pub fn new(fields: NearDupFields, fingerprint: Fingerprint) -> Self {
        let layout = fields.layout();
        NearDupQuery {
            fields,
            fingerprint,
            max_distance: layout.max_distance(),
            terms: layout
                .keys(fingerprint)
                .into_iter()
                .map(|k| Term::from_field_u64(fields.keys, k))
                .collect(),
        }
    }

    /// Documents of `index` within the layout's `k` of the fingerprint of `text` (through the
    /// index's scheme, which is why it takes the index rather than the handle). Cost: one
    /// analysis of `text`.
    pub fn from_text(index: &NearDupIndex, text: &str) -> Self {
        NearDupQuery::new(index.fields(), index.scheme().fingerprint(text))
    }

    /// Documents within the layout's `k` of the live document of `searcher` with id `id`
    /// (which matches itself). Cost: opening each segment's columns
    /// ([`NearDupSearcher::new`]), then one term look-up per segment.
    ///
    /// Errors with [`Error::Document`] when no live document has that id; tantivy errors
    /// reading the postings.
    pub fn from_id(fields: NearDupFields, searcher: &Searcher, id: &str) -> Result<Self> {
        let lookups = NearDupSearcher::new(fields, searcher)?;
        let fp = lookups.fingerprint_of_id(id)?.ok_or_else(|| {
            Error::Document(format!("no live document has id `{id}` in this searcher"))
        })?;
        Ok(NearDupQuery::new(fields, fp))
    }

    /// Narrows the distance to `max_distance` (inclusive). Errors with
    /// [`Error::InvalidConfig`] when it exceeds the layout's `k`, which the keys could not
    /// guarantee to find.
    pub fn with_max_distance(mut self, max_distance: u32) -> Result<Self> {
        check_distance(self.fields.layout().max_distance(), max_distance)?;
        self.max_distance = max_distance;
        Ok(self)
    }

    /// The query fingerprint.
    pub fn fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }

    /// The largest distance that matches (inclusive).
    pub fn max_distance(&self) -> u32 {
        self.max_distance
    }

    /// The matches as (id, distance, ...), nearest first (ties by id), the same documents as
    /// running the query, through [`NearDupSearcher::lookup_within`] (which reads the id of
    /// every match). Cost: opening each segment's columns, then the lookup; keep a
    /// [`NearDupSearcher`] for many lookups on one searcher.
    pub fn search(&self, searcher: &Searcher) -> Result<Vec<NearDup>> {
        NearDupSearcher::new(self.fields, searcher)?
            .lookup_within(self.fingerprint, self.max_distance)
    }

    fn predicate(&self) -> DocPredicateQuery {
        NearDupPredicate {
            fingerprint: self.fingerprint.0,
            max_distance: self.max_distance,
            keys_field: self.fields.keys,
            fingerprint_field: self.fields.fingerprint,
            terms: self.terms.clone(),
        }
        .into()
    }
}

impl Query for NearDupQuery {
    fn weight(&self, _: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(NearDupWeight {
            inner: self.predicate(),
            fingerprint: self.fingerprint.0,
            max_distance: self.max_distance,
            fingerprint_field: self.fields.fingerprint,
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        for t in &self.terms {
            visitor(t, false);
        }
    }
}

/// The weight: tantivy's predicate machinery, with an explanation that gives the distance.
struct NearDupWeight {
    inner: DocPredicateQuery,
    fingerprint: u64,
    max_distance: u32,
    fingerprint_field: Field,
}

impl Weight for NearDupWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        Weight::scorer(&self.inner, reader, boost)
    }

    fn scorer_danger(
        &self,
        reader: &SegmentReader,
        target: DocId,
        boost: Score,
    ) -> tantivy::Result<(SeekDangerResult, Box<dyn Scorer>)> {
        Weight::scorer_danger(&self.inner, reader, target, boost)
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        // Errors (as tantivy does) when the document does not match.
        Weight::explain(&self.inner, reader, doc)?;
        let column = fingerprint_column(reader, self.fingerprint_field)?;
        let mut e = Explanation::new("NearDupQuery (constant score)", 1.0);
        if let Some(v) = column.first(doc) {
            let d = (v ^ self.fingerprint).count_ones();
            e.add_context(format!(
                "fingerprint {v:016x} is at Hamming distance {d} <= {} from {:016x}",
                self.max_distance, self.fingerprint
            ));
        }
        Ok(e)
    }
}

#[derive(Debug)]
struct NearDupPredicate {
    fingerprint: u64,
    max_distance: u32,
    keys_field: Field,
    fingerprint_field: Field,
    terms: Vec<Term>,
}

impl DocPredicate for NearDupPredicate {
    type SegmentDocPredicate = WithinDistance;

    fn doc_predicate(
        &self,
        reader: &SegmentReader,
    ) -> tantivy::Result<ConstOrVariableSegmentPredicate<WithinDistance>> {
        let inverted = reader.inverted_index(self.keys_field)?;
        let mut docs = Vec::new();
        for term in &self.terms {
            for_each_posting(&inverted, term, |doc| docs.push(doc))?;
        }
        if docs.is_empty() {
            return Ok(ConstOrVariableSegmentPredicate::Const(false));
        }
        docs.sort_unstable();
        docs.dedup();
        Ok(ConstOrVariableSegmentPredicate::Variable {
            predicate: WithinDistance {
                column: fingerprint_column(reader, self.fingerprint_field)?,
                fingerprint: self.fingerprint,
                max_distance: self.max_distance,
            },
            necessary_condition: Box::new(SortedDocs { docs, cursor: 0 }),
        })
    }
}

/// Per segment: the Hamming distance on the fingerprint column.
struct WithinDistance {
    column: Column<u64>,
    fingerprint: u64,
    max_distance: u32,
}

impl SegmentDocPredicate for WithinDistance {
    fn eval(&mut self, doc: DocId) -> bool {
        self.column
            .first(doc)
            .is_some_and(|v| (v ^ self.fingerprint).count_ones() <= self.max_distance)
    }

    fn cost(&self) -> u64 {
        // One column read and a popcount: a couple of postings advances.
        2
    }
}

/// A sorted, deduplicated list of doc ids as a [`DocSet`].
struct SortedDocs {
    docs: Vec<DocId>,
    cursor: usize,
}

impl DocSet for SortedDocs {
    fn advance(&mut self) -> DocId {
        if self.cursor < self.docs.len() {
            self.cursor += 1;
        }
        self.doc()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        let rest = &self.docs[self.cursor.min(self.docs.len())..];
        self.cursor += rest.partition_point(|&d| d < target);
        self.doc()
    }

    fn doc(&self) -> DocId {
        self.docs.get(self.cursor).copied().unwrap_or(TERMINATED)
    }

    fn size_hint(&self) -> u32 {
        (self.docs.len() - self.cursor.min(self.docs.len())) as u32
    }
}
