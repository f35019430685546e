//! [`NearDupQuery`]: the documents the index's rule matches with a signature, as a tantivy query
//! (the account is on the type).

use crate::component::reader::{NearFilter, SegmentSignatures};
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use crate::layout::check_distance;
use crate::lookup::{NearDup, NearDupLookup};
use crate::schema::{NearDupFields, NearDupIndex};
use crate::signature::{MatchRule, Signature, Sketch, DEFAULT_MAX_POSTINGS_PER_KEY};
use std::sync::Arc;
use tantivy::query::doc_predicate_query::{
    ConstOrVariableSegmentPredicate, DocPredicate, DocPredicateQuery, SegmentDocPredicate,
};
use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, Searcher, SeekDangerResult, SegmentReader, Term, TERMINATED};

/// What a candidate must satisfy.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Test {
    /// The index's rule.
    Rule,
    /// Simhash only: within this distance (inclusive).
    Within(u32),
}

/// The documents the index's rule matches with a signature (or, with
/// [`with_max_distance`](Self::with_max_distance), every document within a simhash radius).
///
/// [`NearDupQuery`]: the documents the index's [`MatchRule`] matches with a signature, as a
/// tantivy [`Query`].
///
/// Per segment, the candidates are the union of the postings of the query's keys (simhash block
/// keys and MinHash band keys; every pair the rule matches shares one), each read up to a bound
/// ([`NearDupQuery::with_max_postings_per_key`], hot keys); a candidate matches when
/// [`MatchRule::matches`] holds on its signature read from the segment's columns (fingerprint,
/// then the sketch only for candidates that share a band). It is built on tantivy's
/// [`DocPredicateQuery`] (candidates = its necessary condition, the rule = its predicate), so it
/// composes inside a [`BooleanQuery`](tantivy::query::BooleanQuery) with any other query and
/// runs under any collector; deleted documents are skipped by tantivy's collectors as for every
/// query. Its score is a constant (1.0 times the boost): wrap it in
/// [`ConstScoreQuery::new(q, 0.0)`](tantivy::query::ConstScoreQuery) to filter a text query
/// without changing its scores.
///
/// [`NearDupQuery::with_max_distance`] is the explicit simhash-only alternative: every document
/// within `k` bits (inclusive) of the fingerprint, without the resemblance branch.
///
/// ```
/// use tantivy::collector::Count;
/// use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
/// use tantivy::schema::{IndexRecordOption, Schema, FAST, STRING, TEXT};
/// use tantivy::{doc, Index, Term};
/// use tantivy_simhash::{NearDupConfig, NearDupIndex, NearDupQuery, Policy};
///
/// let config = NearDupConfig::new("id", ["body"]);
/// let mut builder = Schema::builder();
/// let id = builder.add_text_field("id", STRING | FAST);
/// let host = builder.add_text_field("host", STRING);
/// let body = builder.add_text_field("body", TEXT);
/// config.add_fields(&mut builder);
/// let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config)?;
/// let mut writer = index.writer(50_000_000, Policy::Off)?;
/// let text = "The licence grants permission to use, copy, modify and distribute this \
///             software for any purpose, provided the notice appears in all copies.";
/// writer.add_document(doc!(id => "a", host => "x.org", body => text))?;
/// writer.add_document(doc!(id => "b", host => "y.org", body => text))?;
/// writer.commit()?;
///
/// let searcher = index.searcher()?;
/// // Near-duplicates of document "a" on host y.org:
/// let near = NearDupQuery::from_id(index.fields(), &searcher, "a")?;
/// let on_host = TermQuery::new(Term::from_field_text(host, "y.org"), IndexRecordOption::Basic);
/// let q = BooleanQuery::new(vec![
///     (Occur::Must, Box::new(near.clone()) as Box<dyn Query>),
///     (Occur::Must, Box::new(on_host)),
/// ]);
/// assert_eq!(searcher.search(&q, &Count)?, 1);
/// // The convenience form: ids and evidence, strongest first.
/// let hits = near.search(&searcher)?;
/// assert_eq!((hits[0].id.as_str(), hits[0].distance), ("a", 0));
/// // The same page under another site's menu and footer matches by resemblance:
/// let framed = format!("Home | Docs | Blog | Contact\n\n{text}\n\n(c) 2024 Example Ltd, all rights reserved");
/// let q = NearDupQuery::from_text(&index, &framed);
/// assert_eq!(searcher.search(&q, &Count)?, 2);
/// # Ok::<(), tantivy_simhash::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct NearDupQuery {
    shared: Arc<Shared>,
    test: Test,
    max_postings_per_key: usize,
}

/// What every clone and every segment's predicate share.
#[derive(Debug)]
struct Shared {
    signature: Signature,
    fields: NearDupFields,
    /// The query's keys, in the rule's key order.
    keys: Vec<u64>,
}

impl Shared {
    fn rule(&self) -> &MatchRule {
        self.fields.rule()
    }

    /// The signatures and key tables of a segment (its component file).
    fn signatures(&self, reader: &SegmentReader) -> tantivy::Result<SegmentSignatures> {
        SegmentSignatures::open(reader, self.rule()).map_err(tantivy::TantivyError::from)
    }
}

impl NearDupQuery {
    /// The documents that the rule of the index `fields` is the handle of matches with
    /// `signature` (made with the index's scheme and rule, for example by
    /// [`NearDupIndex::sign`]). Cost: computing the keys; the tables are probed when the query
    /// runs.
    pub fn from_signature(fields: NearDupFields, signature: Signature) -> Self {
        let keys = fields.rule().keys(&signature);
        NearDupQuery {
            shared: Arc::new(Shared {
                signature,
                fields,
                keys,
            }),
            test: Test::Rule,
            max_postings_per_key: DEFAULT_MAX_POSTINGS_PER_KEY,
        }
    }

    /// The documents the rule matches with a bare fingerprint: without a sketch only the
    /// simhash branch can fire, so these are the documents within the layout's `k` of
    /// `fingerprint`. Cost: the rule's keys of the signature and their terms, a few small
    /// allocations; nothing is read until the query runs.
    pub fn new(fields: NearDupFields, fingerprint: Fingerprint) -> Self {
        let signature = Signature {
            fingerprint,
            sketch: Sketch::empty(fields.rule().minhash()),
        };
        NearDupQuery::from_signature(fields, signature)
    }

    /// The documents of `index` that its rule matches with `text`, signed with the index's
    /// scheme and rule (which is why it takes the index rather than the handle). Cost: one
    /// analysis of `text`.
    pub fn from_text(index: &NearDupIndex, text: &str) -> Self {
        NearDupQuery::from_signature(index.fields(), index.sign(text))
    }

    /// The documents the rule matches with the live document of `searcher` with id `id`
    /// (which matches itself), by its stored signature. Cost: opening each segment's columns
    /// ([`NearDupLookup::new`]), then one term look-up per segment.
    ///
    /// Errors with [`Error::Document`] when no live document has that id; tantivy errors
    /// reading the postings.
    pub fn from_id(fields: NearDupFields, searcher: &Searcher, id: &str) -> Result<Self> {
        let lookups = NearDupLookup::new(fields, searcher)?;
        let signature = lookups.signature_of_id(id)?.ok_or_else(|| {
            Error::Document(format!("no live document has id `{id}` in this searcher"))
        })?;
        Ok(NearDupQuery::from_signature(fields, signature))
    }

    /// **Simhash-only**: every document within `max_distance` (inclusive) of the query's
    /// fingerprint, instead of the rule (the resemblance branch is dropped). Errors with
    /// [`Error::InvalidConfig`] when it exceeds the layout's `k`, which the keys could not
    /// guarantee to find.
    pub fn with_max_distance(mut self, max_distance: u32) -> Result<Self> {
        check_distance(self.shared.fields.layout().max_distance(), max_distance)?;
        self.test = Test::Within(max_distance);
        Ok(self)
    }

    /// Sets the bound on candidates read per key and segment (default
    /// [`DEFAULT_MAX_POSTINGS_PER_KEY`], whose documentation says what it costs in recall on
    /// hot keys; at least 1; `usize::MAX` is exact).
    pub fn with_max_postings_per_key(mut self, max_postings_per_key: usize) -> Self {
        self.max_postings_per_key = max_postings_per_key.max(1);
        self
    }

    /// The query fingerprint.
    pub fn fingerprint(&self) -> Fingerprint {
        self.shared.signature.fingerprint
    }

    /// The query signature.
    pub fn signature(&self) -> &Signature {
        &self.shared.signature
    }

    /// The simhash radius of a [`with_max_distance`](Self::with_max_distance) query; `None`
    /// for the rule.
    pub fn max_distance(&self) -> Option<u32> {
        match self.test {
            Test::Rule => None,
            Test::Within(k) => Some(k),
        }
    }

    /// The matches with ids and evidence, strongest first (ties by id), the same documents as
    /// running the query, through [`NearDupLookup`] (with this query's bound on hot keys).
    /// Cost: opening each segment's columns, then the lookup (which reads the id of every
    /// match); keep a [`NearDupLookup`] for many lookups on one searcher. Errors: those of
    /// [`NearDupLookup::new`] (a searcher of an index without these fields) and those of
    /// [`NearDupLookup::lookup_signature`] ([`Error::Tantivy`] / [`Error::Io`] when reading
    /// postings, columns or ids fails).
    pub fn search(&self, searcher: &Searcher) -> Result<Vec<NearDup>> {
        let lookups = NearDupLookup::new(self.shared.fields, searcher)?
            .with_max_postings_per_key(self.max_postings_per_key);
        match self.test {
            Test::Rule => lookups.lookup_signature(&self.shared.signature),
            Test::Within(k) => lookups.lookup_within(self.shared.signature.fingerprint, k),
        }
    }

    fn predicate(&self) -> DocPredicateQuery {
        RulePredicate {
            shared: Arc::clone(&self.shared),
            test: self.test,
            max_postings_per_key: self.max_postings_per_key,
        }
        .into()
    }
}

impl Query for NearDupQuery {
    fn weight(&self, _: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(NearDupWeight {
            inner: self.predicate(),
            shared: Arc::clone(&self.shared),
            test: self.test,
        }))
    }

    fn query_terms<'a>(&'a self, _visitor: &mut dyn FnMut(&'a Term, bool)) {
        // The keys live in the segment component's tables: they are no terms of the index.
    }
}

/// The weight: tantivy's predicate machinery, with an explanation that gives the evidence.
struct NearDupWeight {
    inner: DocPredicateQuery,
    shared: Arc<Shared>,
    test: Test,
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
        let query = self.shared.signature.fingerprint.0;
        let mut e = Explanation::new("NearDupQuery (constant score)", 1.0);
        match self.test {
            Test::Within(k) => {
                let signatures = self.shared.signatures(reader)?;
                if let Some(Fingerprint(v)) = signatures.fingerprint(doc) {
                    let d = (v ^ query).count_ones();
                    e.add_context(format!(
                        "fingerprint {v:016x} is at Hamming distance {d} <= {k} from {query:016x}"
                    ));
                }
            }
            Test::Rule => {
                let signatures = self.shared.signatures(reader)?;
                let rule = self.shared.rule();
                if let Some(evidence) = signatures
                    .get(doc)
                    .and_then(|s| rule.matches(&self.shared.signature, &s))
                {
                    e.add_context(format!("matched by the rule ({rule}): {evidence}"));
                }
            }
        }
        Ok(e)
    }
}

#[derive(Debug)]
struct RulePredicate {
    shared: Arc<Shared>,
    test: Test,
    max_postings_per_key: usize,
}

impl DocPredicate for RulePredicate {
    type SegmentDocPredicate = Verify;

    fn doc_predicate(
        &self,
        reader: &SegmentReader,
    ) -> tantivy::Result<ConstOrVariableSegmentPredicate<Verify>> {
        let signatures = self.shared.signatures(reader)?;
        let mut docs = Vec::new();
        let alive = reader.alive_bitset();
        let layout = self.shared.rule().layout();
        let distance = match self.test {
            Test::Rule => layout.max_distance(),
            Test::Within(k) => k,
        };
        let near = NearFilter::new(layout, self.shared.signature.fingerprint, distance);
        signatures
            .for_each_key_doc(
                &self.shared.keys,
                self.max_postings_per_key,
                alive,
                &near,
                |_, doc| docs.push(doc),
            )
            .map_err(tantivy::TantivyError::from)?;
        docs.sort_unstable();
        docs.dedup();
        if docs.is_empty() {
            return Ok(ConstOrVariableSegmentPredicate::Const(false));
        }
        Ok(ConstOrVariableSegmentPredicate::Variable {
            predicate: Verify {
                shared: Arc::clone(&self.shared),
                test: self.test,
                signatures,
                candidate: Signature::default(),
            },
            necessary_condition: Box::new(SortedDocs { docs, cursor: 0 }),
        })
    }
}

/// Per segment: the rule (or the simhash radius) on the segment's signatures.
struct Verify {
    shared: Arc<Shared>,
    test: Test,
    signatures: SegmentSignatures,
    candidate: Signature,
}

impl SegmentDocPredicate for Verify {
    fn eval(&mut self, doc: DocId) -> bool {
        let query = &self.shared.signature;
        let Some(fp) = self.signatures.fingerprint(doc) else {
            return false;
        };
        let distance = query.fingerprint.distance(fp);
        let rule = self.shared.rule();
        match self.test {
            Test::Within(k) => distance <= k,
            Test::Rule if distance <= rule.layout().max_distance() => true,
            Test::Rule => {
                // Beyond the radius only the resemblance branch can match: read the sketch.
                self.signatures.read_into(doc, &mut self.candidate)
                    && rule.matches(query, &self.candidate).is_some()
            }
        }
    }

    fn cost(&self) -> u64 {
        // One read and a popcount; the sketch only beyond the simhash radius.
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
