//! Signatures in a tantivy index: the fields, reading them back per segment, and the lookup
//! that every consumer builds on.
//!
//! A signature is stored as the fingerprint (one `u64` fast field), the sketch (one
//! single-valued `u64` fast field per 64-bit word: `{fingerprint}_sketch0` ..; bit-packed
//! columns read in a few ns, unlike a bytes column whose dictionary costs ~13 us per read) and,
//! when the keys field is indexed, the rule's keys (the multi-valued indexed `u64` keys field,
//! block and band keys together). A keys field that is not indexed holds nothing: the keys are
//! computed from the columns ([`NearDupSearcher::with_key_tables`](crate::NearDupSearcher::with_key_tables)).

use super::minhash::band_from_words;
use super::{Evidence, MatchRule, MinHashConfig, Signature, Sketch};
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use crate::keytable::{segment_keys, KeyRun, KeyTableStats, SegmentKeySource, SegmentKeys};
use std::collections::HashSet;
use tantivy::columnar::Column;
use tantivy::schema::{
    Field, FieldType, NumericOptions, Schema, SchemaBuilder, TantivyDocument, FAST,
};
use tantivy::{DocAddress, DocId, Searcher, SegmentReader};

/// The names of the fields that hold signatures under a rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignatureFields {
    /// The fingerprint fast field.
    pub fingerprint: String,
    /// The keys field (block and band keys).
    pub keys: String,
    /// The sketch fast fields, one per 64-bit word.
    pub sketch: Vec<String>,
}

impl SignatureFields {
    /// The field names for `rule`: `fingerprint`, `keys`, and `{fingerprint}_sketch{i}`.
    pub fn new(fingerprint: &str, keys: &str, rule: &MatchRule) -> SignatureFields {
        SignatureFields {
            fingerprint: fingerprint.to_string(),
            keys: keys.to_string(),
            sketch: (0..rule.minhash().sketch_words())
                .map(|i| format!("{fingerprint}_sketch{i}"))
                .collect(),
        }
    }

    /// The same names with `words` sketch fields.
    pub fn with_sketch_words(mut self, words: usize) -> SignatureFields {
        self.sketch = (0..words)
            .map(|i| format!("{}_sketch{i}", self.fingerprint))
            .collect();
        self
    }

    /// Adds the fields to `builder` with the keys in the columns only, the default of a new
    /// index (as [`NearDupConfig::add_fields`](crate::NearDupConfig::add_fields)): the
    /// fingerprint and sketch words as `u64` fast fields, the keys as a bare `u64` field that
    /// holds no value (lookups compute the keys from the columns, through key tables). Use
    /// [`add_to_schema_with_key_postings`](Self::add_to_schema_with_key_postings) to index
    /// them. Cost: none beyond the schema; tantivy panics on a field name the builder already
    /// has, as for any field.
    pub fn add_to_schema(&self, builder: &mut SchemaBuilder) {
        self.add_to_schema_with_key_postings(builder, false);
    }

    /// [`add_to_schema`](Self::add_to_schema), with the keys indexed as a multi-valued `u64`
    /// field without fieldnorms when `key_postings` (the storage of
    /// [`NearDupConfig::with_key_postings(true)`](crate::NearDupConfig::with_key_postings):
    /// 16 postings per document by default, for lookups that read postings until a segment's
    /// key table is built). Cost and panics as [`add_to_schema`](Self::add_to_schema).
    pub fn add_to_schema_with_key_postings(&self, builder: &mut SchemaBuilder, key_postings: bool) {
        builder.add_u64_field(&self.fingerprint, FAST);
        let keys = if key_postings {
            NumericOptions::default().set_indexed()
        } else {
            NumericOptions::default()
        };
        builder.add_u64_field(&self.keys, keys);
        for name in &self.sketch {
            builder.add_u64_field(name, FAST);
        }
    }

    /// The fields in `schema`. The keys are written and read as postings when the keys field is
    /// indexed, else computed from the columns. Cost: one name look-up per field (33 by
    /// default). Errors with [`Error::InvalidConfig`] naming the first field `schema` lacks.
    pub fn resolve(&self, schema: &Schema) -> Result<ResolvedSignatureFields> {
        let get = |name: &str| {
            schema.get_field(name).map_err(|_| {
                Error::InvalidConfig(format!(
                    "the schema has no field `{name}`; add the signature fields with \
                     SignatureFields::add_to_schema (or rebuild the index with this version)"
                ))
            })
        };
        let keys = get(&self.keys)?;
        let key_postings = match schema.get_field_entry(keys).field_type() {
            FieldType::U64(o) => o.is_indexed(),
            _ => false,
        };
        Ok(ResolvedSignatureFields {
            names: self.clone(),
            fingerprint: get(&self.fingerprint)?,
            keys,
            key_postings,
            sketch: self.sketch.iter().map(|n| get(n)).collect::<Result<_>>()?,
        })
    }
}

/// [`SignatureFields`] resolved against a schema.
#[derive(Clone, Debug)]
pub struct ResolvedSignatureFields {
    names: SignatureFields,
    fingerprint: Field,
    keys: Field,
    /// Whether the keys field is indexed (keys in postings).
    key_postings: bool,
    sketch: Vec<Field>,
}

impl ResolvedSignatureFields {
    /// Whether the keys are indexed as postings (else they live in the columns only).
    pub fn key_postings(&self) -> bool {
        self.key_postings
    }

    /// The names.
    pub fn names(&self) -> &SignatureFields {
        &self.names
    }

    /// The keys field.
    pub fn keys_field(&self) -> Field {
        self.keys
    }

    /// The sketch fields, one per 64-bit word.
    pub fn sketch_fields(&self) -> &[Field] {
        &self.sketch
    }

    /// Adds `signature` (fingerprint, sketch words, and the keys when they are indexed) to
    /// `doc`. Cost: one value per field (33 by default), plus the rule's keys (16 by default)
    /// when they are indexed; cannot fail.
    pub fn add_to_document(
        &self,
        rule: &MatchRule,
        signature: &Signature,
        doc: &mut TantivyDocument,
    ) {
        doc.add_u64(self.fingerprint, signature.fingerprint.0);
        for (field, &word) in self.sketch.iter().zip(&signature.sketch.words) {
            doc.add_u64(*field, word);
        }
        if self.key_postings {
            for key in rule.keys(signature) {
                doc.add_u64(self.keys, key);
            }
        }
    }
}

/// The signature columns of one segment.
pub struct SegmentSignatures {
    fingerprint: Column<u64>,
    sketch: Vec<Column<u64>>,
}

impl SegmentSignatures {
    /// Opens the columns of `fields` in `segment`. Cost: one column open per field (33 by
    /// default). Errors: [`Error::Tantivy`] when a field is missing from the segment or is not a
    /// `u64` fast field (a schema without the signature fields).
    pub fn open(segment: &SegmentReader, fields: &SignatureFields) -> Result<SegmentSignatures> {
        SegmentSignatures::from_fast_fields(segment.fast_fields(), fields)
    }

    /// Opens the columns of `fields` among a segment's fast fields (what a collector's segment
    /// fruit keeps). Cost: one column open per field (33 by default). Errors as
    /// [`open`](Self::open).
    pub fn from_fast_fields(
        ff: &tantivy::fastfield::FastFieldReaders,
        fields: &SignatureFields,
    ) -> Result<SegmentSignatures> {
        Ok(SegmentSignatures {
            fingerprint: ff.u64(&fields.fingerprint)?,
            sketch: fields
                .sketch
                .iter()
                .map(|n| ff.u64(n))
                .collect::<tantivy::Result<_>>()?,
        })
    }

    /// Reads the signature of `doc` into `out` (reusing its sketch buffer); `false` when the
    /// document has no fingerprint (it was not added with a signature). Cost: one column read
    /// per field (33 by default); allocates only if `out`'s sketch must grow.
    pub fn read_into(&self, doc: DocId, out: &mut Signature) -> bool {
        let Some(fp) = self.fingerprint.first(doc) else {
            return false;
        };
        out.fingerprint = Fingerprint(fp);
        out.sketch.words.clear();
        out.sketch
            .words
            .extend(self.sketch.iter().map(|c| c.first(doc).unwrap_or(0)));
        true
    }

    /// The fingerprint of `doc`, if it has one.
    pub fn fingerprint(&self, doc: DocId) -> Option<Fingerprint> {
        self.fingerprint.first(doc).map(Fingerprint)
    }

    /// The `rows * bits` bits of band `band` of `doc`'s sketch. Cost: reads only the one or
    /// two sketch columns that hold them; no allocation.
    pub fn band(&self, doc: DocId, config: &MinHashConfig, band: u32) -> u64 {
        band_from_words(config, band, |w| {
            self.sketch.get(w).and_then(|c| c.first(doc)).unwrap_or(0)
        })
    }

    /// The signature of `doc`, if it has one. Cost: as [`read_into`](Self::read_into), plus
    /// the sketch's allocation.
    pub fn get(&self, doc: DocId) -> Option<Signature> {
        let mut s = Signature {
            fingerprint: Fingerprint(0),
            sketch: Sketch::default(),
        };
        self.read_into(doc, &mut s).then_some(s)
    }
}

/// A document [`SignatureReader::for_each_match`] found: where it is, why it matches, and its
/// signature (borrowed for the call).
#[derive(Clone, Copy, Debug)]
pub struct SignatureMatch<'a> {
    /// Where the document is in the searcher.
    pub address: DocAddress,
    /// Why the rule matches it with the query.
    pub evidence: Evidence,
    /// Its stored signature.
    pub signature: &'a Signature,
}

/// One segment of a [`SignatureReader`].
struct ReaderSegment {
    columns: SegmentSignatures,
    /// The keys' inverted index; `None` when the keys live in the columns only.
    postings: Option<std::sync::Arc<tantivy::InvertedIndexReader>>,
    keys: std::sync::Arc<SegmentKeys>,
    max_doc: u32,
}

/// What [`SignatureReader::visit_matches`] reads of a match.
enum Read<'a> {
    /// Its whole signature (for [`SignatureMatch::signature`]).
    Signature,
    /// Its evidence only, from the copies where there are copies.
    Evidence(&'a mut DenseSignatures),
}

/// Where [`verify`] reads a candidate's signature from: its segment's columns, or a copy of
/// them ([`DenseSegment`]: one contiguous run of words instead of a read per column).
trait CandidateSignatures {
    fn fingerprint(&self, doc: DocId) -> Option<Fingerprint>;
    fn band(&self, doc: DocId, config: &MinHashConfig, band: u32) -> u64;
    fn read_into(&self, doc: DocId, out: &mut Signature) -> bool;
}

impl CandidateSignatures for SegmentSignatures {
    fn fingerprint(&self, doc: DocId) -> Option<Fingerprint> {
        SegmentSignatures::fingerprint(self, doc)
    }
    fn band(&self, doc: DocId, config: &MinHashConfig, band: u32) -> u64 {
        SegmentSignatures::band(self, doc, config, band)
    }
    fn read_into(&self, doc: DocId, out: &mut Signature) -> bool {
        SegmentSignatures::read_into(self, doc, out)
    }
}

impl CandidateSignatures for DenseSegment {
    fn fingerprint(&self, doc: DocId) -> Option<Fingerprint> {
        self.get(doc).map(|(fp, _)| fp)
    }
    fn band(&self, doc: DocId, config: &MinHashConfig, band: u32) -> u64 {
        self.get(doc).map_or(0, |(_, words)| {
            band_from_words(config, band, |w| words.get(w).copied().unwrap_or(0))
        })
    }
    fn read_into(&self, doc: DocId, out: &mut Signature) -> bool {
        let Some((fp, words)) = self.get(doc) else {
            return false;
        };
        out.fingerprint = fp;
        out.sketch.words.clear();
        out.sketch.words.extend_from_slice(words);
        true
    }
}

/// Whether the candidate `doc`, met under the query's key at `position`, matches; reads as
/// little as that key's branch needs. Under a block key only the simhash branch is checked
/// (a resemblance match shares a band key and is verified there); under band `b`'s key the
/// fingerprint first, then band `b`'s one or two sketch words, and the whole sketch only
/// for a candidate that really shares the band. A simhash match's whole signature is read
/// into `candidate` only with `read_signature`.
fn verify(
    rule: &MatchRule,
    (query, query_bands): (&Signature, &[u64]),
    (source, doc, position): (&impl CandidateSignatures, DocId, usize),
    read_signature: bool,
    candidate: &mut Signature,
) -> Verdict {
    let Some(fp) = source.fingerprint(doc) else {
        return Verdict::Never;
    };
    let blocks = rule.layout().num_keys();
    let distance = query.fingerprint.distance(fp);
    if distance <= rule.layout().max_distance() {
        if read_signature {
            source.read_into(doc, candidate);
        }
        return Verdict::Match(Evidence::Simhash { distance });
    }
    if position < blocks {
        return Verdict::NotUnderThisKey;
    }
    let band = (position - blocks) as u32;
    if source.band(doc, rule.minhash(), band) != query_bands[band as usize] {
        return Verdict::NotUnderThisKey;
    }
    if !source.read_into(doc, candidate) {
        return Verdict::Never;
    }
    match rule.matches(query, candidate) {
        Some(evidence) => Verdict::Match(evidence),
        None => Verdict::Never,
    }
}

/// One segment's signatures, copied out of its columns: per document the fingerprint, then
/// the sketch words (as [`SegmentSignatures::read_into`] reads them).
struct DenseSegment {
    /// 1 + the sketch words.
    stride: usize,
    words: Vec<u64>,
    /// Whether each document has a fingerprint.
    present: Vec<bool>,
}

impl DenseSegment {
    /// Reads every document's signature, column by column. Cost: one sequential pass per
    /// column (33 by default), `stride * 8 + 1` bytes per document.
    fn read(columns: &SegmentSignatures, max_doc: u32) -> DenseSegment {
        let stride = 1 + columns.sketch.len();
        let docs = max_doc as usize;
        let mut words = vec![0u64; docs * stride];
        let mut present = vec![false; docs];
        for doc in 0..max_doc {
            if let Some(fp) = columns.fingerprint.first(doc) {
                words[doc as usize * stride] = fp;
                present[doc as usize] = true;
            }
        }
        for (w, column) in columns.sketch.iter().enumerate() {
            for doc in 0..max_doc {
                words[doc as usize * stride + 1 + w] = column.first(doc).unwrap_or(0);
            }
        }
        DenseSegment {
            stride,
            words,
            present,
        }
    }

    /// The fingerprint and sketch words of `doc`, if it has a fingerprint.
    fn get(&self, doc: DocId) -> Option<(Fingerprint, &[u64])> {
        let doc = doc as usize;
        if !*self.present.get(doc)? {
            return None;
        }
        let run = &self.words[doc * self.stride..][..self.stride];
        Some((Fingerprint(run[0]), &run[1..]))
    }

    fn heap_bytes(&self) -> usize {
        self.words.len() * 8 + self.present.len()
    }
}

/// Copies of committed signatures for a caller that verifies many candidates against the same
/// segments (the writer's checks): a candidate read from the columns costs one read per
/// column (33 by default, each in another part of the segment's file), from a copy one
/// contiguous read. A segment is copied once it has served `max(64, max_doc / 8)` candidates
/// (the copy costs about as much as that many reads from the columns), while the copies hold
/// at most `limit` bytes (`8 + 8 * sketch words + 1` per document: 265 B by default); other
/// segments are read from their columns, with the same results. Copies are kept for the
/// segments the next reader shares ([`follow`](Self::follow)).
pub(crate) struct DenseSignatures {
    segments: Vec<CopySlot>,
    bytes: usize,
    limit: usize,
}

struct CopySlot {
    id: tantivy::index::SegmentId,
    served: u64,
    copy: Option<DenseSegment>,
}

impl DenseSignatures {
    /// No copies yet; at most `limit` bytes of them.
    pub(crate) fn new(limit: usize) -> DenseSignatures {
        DenseSignatures {
            segments: Vec::new(),
            bytes: 0,
            limit,
        }
    }

    /// Follows `reader`'s segments: keeps the copies (and counts) of the segments it shares
    /// with the previous reader, drops the others. Cost: a pass over the segments.
    pub(crate) fn follow(&mut self, reader: &SignatureReader) {
        let mut old = std::mem::take(&mut self.segments);
        self.bytes = 0;
        for ord in 0..reader.segments.len() {
            let id = reader.searcher.segment_reader(ord as u32).segment_id();
            let slot = match old.iter().position(|s| s.id == id) {
                Some(i) => old.swap_remove(i),
                None => CopySlot {
                    id,
                    served: 0,
                    copy: None,
                },
            };
            self.bytes += slot.copy.as_ref().map_or(0, DenseSegment::heap_bytes);
            self.segments.push(slot);
        }
    }

    /// The copy of segment `ord` of `reader` (the reader last followed), made now if the
    /// segment has served enough candidates and the bound allows it.
    fn segment(&mut self, reader: &SignatureReader, ord: usize) -> Option<&DenseSegment> {
        let slot = self.segments.get_mut(ord)?;
        if slot.copy.is_none() {
            let segment = reader.segments.get(ord)?;
            let docs = u64::from(segment.max_doc);
            let stride = 1 + segment.columns.sketch.len();
            let bytes = segment.max_doc as usize * (stride * 8 + 1);
            if slot.served < (docs / 8).max(64) || self.bytes + bytes > self.limit {
                return None;
            }
            let copy = DenseSegment::read(&segment.columns, segment.max_doc);
            self.bytes += copy.heap_bytes();
            slot.copy = Some(copy);
        }
        slot.copy.as_ref()
    }

    /// Counts `candidates` served by segment `ord`.
    fn count(&mut self, ord: usize, candidates: u64) {
        if let Some(slot) = self.segments.get_mut(ord) {
            slot.served += candidates;
        }
    }

    /// Bytes the copies hold.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

/// What [`verify`] makes of a candidate met under one of the query's keys.
enum Verdict {
    Match(Evidence),
    /// Not a match under this key (beyond the simhash radius under a block key, or not sharing
    /// this key's band); another key may still find it.
    NotUnderThisKey,
    /// Compared in full (or without a signature): no key can make it a match.
    Never,
}

/// A searcher's signature columns and key postings, opened once per segment; lookups reuse
/// them (opening the columns costs more than a lookup).
pub struct SignatureReader {
    keys: Field,
    segments: Vec<ReaderSegment>,
    searcher: Searcher,
    key_tables: bool,
}

impl SignatureReader {
    /// Opens the columns and (keys in postings) the keys' inverted index of every segment of
    /// `searcher`. Cost: per segment, one column open per signature field (33 by default) and
    /// an inverted index open; no document is read. Keep it for many lookups. Errors:
    /// [`Error::Tantivy`] when a segment lacks a signature column or the keys' postings
    /// (`fields` resolved against another index's schema), or when opening a segment's files
    /// fails.
    pub fn new(searcher: &Searcher, fields: &ResolvedSignatureFields) -> Result<SignatureReader> {
        let mut segments = Vec::new();
        for segment in searcher.segment_readers() {
            segments.push(ReaderSegment {
                columns: SegmentSignatures::open(segment, fields.names())?,
                postings: if fields.key_postings {
                    Some(segment.inverted_index(fields.keys)?)
                } else {
                    None
                },
                keys: segment_keys(segment.segment_id(), &fields.names().fingerprint),
                max_doc: segment.max_doc(),
            });
        }
        Ok(SignatureReader {
            keys: fields.keys,
            segments,
            searcher: searcher.clone(),
            key_tables: true,
        })
    }

    /// Whether the keys are read from postings (else from key tables, or a scan of the
    /// columns).
    pub fn key_postings(&self) -> bool {
        self.segments.iter().all(|s| s.postings.is_some())
    }

    /// Segment `ord`'s keys as lookups read them.
    fn key_source(&self, ord: usize) -> Option<SegmentKeySource<'_, &SegmentSignatures>> {
        let segment = self.segments.get(ord)?;
        Some(SegmentKeySource {
            entry: &segment.keys,
            postings: segment.postings.as_deref().map(|p| (p, self.keys)),
            columns: &segment.columns,
            max_doc: segment.max_doc,
            tables: self.key_tables,
            alive: self.searcher.segment_reader(ord as u32).alive_bitset(),
        })
    }

    /// Calls `f(position, doc)` with the first `limit` live documents (in doc id order; deleted
    /// ones are skipped and do not count) of segment `ord` under each key of `keys` (the first `keys.len()` keys of
    /// [`MatchRule::keys`]), position by position: from the segment's key table, its postings
    /// or a scan of its columns (see [`crate::keytable`]). `runs` is scratch space, kept by
    /// the caller across segments.
    pub(crate) fn for_each_key_doc<'s>(
        &'s self,
        ord: usize,
        (rule, keys, limit): (&MatchRule, &[u64], usize),
        runs: &mut Vec<Option<KeyRun<'s>>>,
        f: impl FnMut(usize, DocId),
    ) -> Result<()> {
        if let Some(mut source) = self.key_source(ord) {
            source.for_each_key_doc(rule, keys, limit, runs, f)?;
        }
        Ok(())
    }

    /// Whether a key of `signature` holds more than `bound` documents in some segment (deleted
    /// ones included), so that a lookup with that bound may miss some of its matches. Cost:
    /// per key and segment, a table read or a term look-up (a scan of the columns for a
    /// segment without either). Errors: [`Error::Tantivy`] when reading a segment's postings or
    /// columns fails.
    pub fn has_hot_key(
        &self,
        rule: &MatchRule,
        signature: &Signature,
        bound: usize,
    ) -> Result<bool> {
        if bound == usize::MAX {
            return Ok(false);
        }
        let keys = rule.keys(signature);
        for ord in 0..self.segments.len() {
            if let Some(mut source) = self.key_source(ord) {
                if source.has_key_over(rule, &keys, bound)? {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Whether lookups may use in-memory key tables (see
    /// [`NearDupSearcher::with_key_tables`](crate::NearDupSearcher::with_key_tables): built
    /// once a segment has served `max(32, documents / 1024)` lookups, or on first use when the
    /// keys live in the columns only; ~6-8 B per key per document, shared by the process's
    /// searchers of the segment); `true` unless set. With `false` every key is read from its
    /// postings, or, keys in columns only, found by scanning the columns on every lookup, and
    /// no table is built (tables other searchers built are not used either). The results are
    /// the same either way.
    pub fn with_key_tables(mut self, enabled: bool) -> Self {
        self.key_tables = enabled;
        self
    }

    /// Whether lookups may use in-memory key tables.
    pub fn key_tables(&self) -> bool {
        self.key_tables
    }

    /// Builds the key table of every segment that has none yet, under `rule`, and sums what
    /// the tables of this reader's segments hold (nothing when tables are disabled).
    ///
    /// Cost: one read of every document's signature per segment without a table, measured at
    /// 1.0-3.4 us per document; the tables hold ~98 B per document under the default rule (16
    /// keys), ~50 B with 4 block keys (docs/PERFORMANCE.md, summary). A segment whose table
    /// would pass [`set_key_table_memory_limit`](crate::set_key_table_memory_limit) gets none;
    /// this does not fail.
    pub fn build_key_tables(&self, rule: &MatchRule) -> KeyTableStats {
        if self.key_tables {
            for segment in &self.segments {
                segment.keys.build(rule, &segment.columns, segment.max_doc);
            }
        }
        self.key_table_stats(rule)
    }

    /// What the key tables built under `rule` for this reader's segments hold (nothing when
    /// tables are disabled), and how many lookups of them scanned the columns. Cost: a few
    /// counter reads per segment; builds none, reads no index data.
    pub fn key_table_stats(&self, rule: &MatchRule) -> KeyTableStats {
        let mut stats = KeyTableStats::default();
        for segment in &self.segments {
            stats.scans += segment.keys.scans();
            if !self.key_tables {
                continue;
            }
            if let Some(table) = segment.keys.built_for(rule) {
                stats.segments += 1;
                stats.documents += u64::from(segment.max_doc);
                stats.bytes += table.heap_bytes() as u64;
                stats.build_time += table.build_time();
            }
        }
        stats
    }

    /// The signature columns of segment `ord`.
    pub fn segment(&self, ord: u32) -> Option<&SegmentSignatures> {
        self.segments.get(ord as usize).map(|s| &s.columns)
    }

    /// Calls `f` once for every live document that
    /// `rule` matches with `query`: per segment and key of `query`, a few array reads from the
    /// segment's key table once built ([`with_key_tables`](Self::with_key_tables)), else a term
    /// look-up and postings read (keys in columns only: a scan of the segment's columns); one
    /// signature read and one [`MatchRule::matches`] per candidate (a document met
    /// under several keys is verified and reported once: a per-segment set of the matches).
    ///
    /// Because every pair the rule matches shares a key, this finds exactly the documents a
    /// brute-force scan with [`MatchRule::matches`] finds. **Hot keys**: a key whose postings
    /// hold more than `max_postings_per_key` documents is read only up to that many (in doc id
    /// order, per segment), so a lookup costs at most keys x `max_postings_per_key` candidates
    /// per segment; a match is then missed only if every key it shares with `query` is cut that
    /// way. `usize::MAX` reads everything.
    ///
    /// Returns the number of candidates verified (live documents not yet matched under an
    /// earlier key), the work the bound limits. Errors: [`Error::Tantivy`] when reading
    /// postings fails or a segment's keys cannot be read.
    pub fn for_each_match(
        &self,
        rule: &MatchRule,
        query: &Signature,
        max_postings_per_key: usize,
        f: impl FnMut(SignatureMatch<'_>),
    ) -> Result<u64> {
        self.visit_matches(rule, query, max_postings_per_key, Read::Signature, f)
    }

    /// [`for_each_match`](Self::for_each_match) for a caller that needs only where each match
    /// is and why: the same matches, in the same order, with the same count of candidates
    /// verified, but a match within the simhash radius costs one column read (its fingerprint)
    /// instead of one per signature field (33 by default), and the candidates of a segment
    /// `copies` holds a copy of are read from that copy (one contiguous read instead of one per
    /// column; see [`DenseSignatures`]). The writer's committed check.
    pub(crate) fn for_each_match_evidence(
        &self,
        rule: &MatchRule,
        query: &Signature,
        max_postings_per_key: usize,
        copies: &mut DenseSignatures,
        mut f: impl FnMut(DocAddress, Evidence),
    ) -> Result<u64> {
        self.visit_matches(
            rule,
            query,
            max_postings_per_key,
            Read::Evidence(copies),
            |m| f(m.address, m.evidence),
        )
    }

    /// The matches of `query`; the signature passed to `f` is the match's only with
    /// [`Read::Signature`] (else whatever the last candidate read left in the buffer).
    fn visit_matches(
        &self,
        rule: &MatchRule,
        query: &Signature,
        max_postings_per_key: usize,
        mut read: Read<'_>,
        mut f: impl FnMut(SignatureMatch<'_>),
    ) -> Result<u64> {
        let keys = rule.keys(query);
        let mut candidate = Signature {
            fingerprint: Fingerprint(0),
            sketch: Sketch::default(),
        };
        let query_bands: Vec<u64> = (0..rule.minhash().bands)
            .map(|b| query.sketch.band(rule.minhash(), b))
            .collect();
        // Per segment: the matches (reported once) and the candidates whose whole signature
        // was compared and did not match (the rule is a function of the two signatures, so a
        // later key of theirs is not compared again; they still count as verified).
        let mut seen: HashSet<DocId> = HashSet::new();
        let mut rejected: HashSet<DocId> = HashSet::new();
        let mut verified = 0u64;
        let mut runs = Vec::with_capacity(keys.len());
        let read_signature = matches!(read, Read::Signature);
        for (ord, reader_segment) in self.segments.iter().enumerate() {
            let columns = &reader_segment.columns;
            let segment = self.searcher.segment_reader(ord as u32);
            seen.clear();
            rejected.clear();
            let copy = match &mut read {
                Read::Evidence(copies) => copies.segment(self, ord),
                Read::Signature => None,
            };
            let before = verified;
            let visit = |position: usize, doc: DocId| {
                if seen.contains(&doc) || segment.is_deleted(doc) {
                    return;
                }
                verified += 1;
                if rejected.contains(&doc) {
                    return;
                }
                let query = (query, query_bands.as_slice());
                let verdict = match copy {
                    Some(copy) => verify(
                        rule,
                        query,
                        (copy, doc, position),
                        read_signature,
                        &mut candidate,
                    ),
                    None => verify(
                        rule,
                        query,
                        (columns, doc, position),
                        read_signature,
                        &mut candidate,
                    ),
                };
                match verdict {
                    Verdict::Match(evidence) => {
                        seen.insert(doc);
                        f(SignatureMatch {
                            address: DocAddress::new(ord as u32, doc),
                            evidence,
                            signature: &candidate,
                        });
                    }
                    Verdict::Never => {
                        rejected.insert(doc);
                    }
                    Verdict::NotUnderThisKey => {}
                }
            };
            self.for_each_key_doc(ord, (rule, &keys, max_postings_per_key), &mut runs, visit)?;
            if let Read::Evidence(copies) = &mut read {
                copies.count(ord, verified - before);
            }
        }
        Ok(verified)
    }

    /// Calls `f(a, b, evidence)` once for every pair of live documents that `rule` matches,
    /// across all segments, `a < b` by address. The signatures of the live documents are read
    /// into memory (8 + sketch bytes each, plus their keys during the join) and joined by
    /// [`super::pairs_in_memory`], whose `max_postings_per_key` bound and its cost in recall
    /// apply. Cost: one signature read per live document, then the join (its memory and time
    /// are [`super::pairs_in_memory`]'s). Errors: none today (the columns are open); the
    /// `Result` leaves room for reading signatures lazily.
    pub fn for_each_pair(
        &self,
        rule: &MatchRule,
        max_postings_per_key: usize,
        mut f: impl FnMut(DocAddress, DocAddress, Evidence),
    ) -> Result<super::PairStats> {
        let mut addresses = Vec::new();
        let mut signatures = Vec::new();
        for (ord, reader_segment) in self.segments.iter().enumerate() {
            let segment = self.searcher.segment_reader(ord as u32);
            for doc in segment.doc_ids_alive() {
                if let Some(sig) = reader_segment.columns.get(doc) {
                    addresses.push(DocAddress::new(ord as u32, doc));
                    signatures.push(sig);
                }
            }
        }
        Ok(super::pairs_in_memory(
            rule,
            &signatures,
            max_postings_per_key,
            |i, j, e| f(addresses[i], addresses[j], e),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::tests::signature_index;
    use crate::test_rng::Rng;
    use std::collections::BTreeSet;

    /// Signatures in families around random ones: simhash neighbours (1-3 bits flipped, same
    /// sketch), resemblance neighbours (far fingerprint, a few sketch words changed) and
    /// band-sharing strangers (far fingerprint, the band words kept, the rest changed, so they
    /// share every band and fail the resemblance: met under many keys, never a match).
    fn families(seed: u64, rule: &MatchRule, n: usize) -> Vec<Signature> {
        let mut rng = Rng(seed);
        let words = rule.minhash().sketch_words();
        let mut sigs: Vec<Signature> = Vec::new();
        while sigs.len() < n {
            let base = Signature {
                fingerprint: Fingerprint(rng.next()),
                sketch: Sketch {
                    words: (0..words).map(|_| rng.next()).collect(),
                },
            };
            for kind in 0..6 {
                let mut s = base.clone();
                match kind % 3 {
                    0 => s.fingerprint.0 ^= 1 << rng.below(64) | 1 << rng.below(64),
                    1 => {
                        s.fingerprint = Fingerprint(rng.next());
                        for _ in 0..3 {
                            let w = 5 + rng.index(words - 5);
                            s.sketch.words[w] = rng.next();
                        }
                    }
                    _ => {
                        s.fingerprint = Fingerprint(rng.next());
                        for w in &mut s.sketch.words[5..] {
                            *w = rng.next();
                        }
                    }
                }
                sigs.push(s);
            }
            sigs.push(base);
        }
        sigs.truncate(n);
        sigs
    }

    /// `for_each_match_evidence` (the writer's committed check) reports the same matches with
    /// the same evidence, in the same order, and counts the same candidates as
    /// `for_each_match`, whose matches equal brute force; with keys in postings and in columns
    /// (key tables, and scans without them), bounded and unbounded, across segments and deletes.
    #[test]
    fn evidence_only_matches_equal_full_matches_and_brute_force() {
        let rule = MatchRule::default();
        let sigs = families(11, &rule, 280);
        let mut never = 0;
        for key_postings in [false, true] {
            let (index, fields, deleted) =
                signature_index(&rule, &sigs, key_postings, 90, |i| i % 11 == 4);
            let searcher = index.reader().unwrap().searcher();
            assert!(searcher.segment_readers().len() >= 3);
            let ids: Vec<_> = searcher
                .segment_readers()
                .iter()
                .map(|s| s.fast_fields().u64("n").unwrap())
                .collect();
            let number = |a: DocAddress| ids[a.segment_ord as usize].first(a.doc_id).unwrap();
            for tables in [true, false] {
                let reader = SignatureReader::new(&searcher, &fields)
                    .unwrap()
                    .with_key_tables(tables);
                // Copies made midway (each segment once it served its candidates), and none.
                let mut copies = DenseSignatures::new(usize::MAX);
                copies.follow(&reader);
                let mut no_copies = DenseSignatures::new(0);
                no_copies.follow(&reader);
                for (q, query) in sigs.iter().enumerate() {
                    let oracle: BTreeSet<u64> = (0..sigs.len())
                        .filter(|i| {
                            !deleted.contains(i) && rule.matches(query, &sigs[*i]).is_some()
                        })
                        .map(|i| i as u64)
                        .collect();
                    never += (0..sigs.len())
                        .filter(|&i| {
                            rule.matches(query, &sigs[i]).is_none()
                                && query
                                    .sketch
                                    .first_shared_band(&sigs[i].sketch, rule.minhash())
                                    .is_some()
                        })
                        .count();
                    for bound in [usize::MAX, 2] {
                        let mut full = Vec::new();
                        let full_count = reader
                            .for_each_match(&rule, query, bound, |m| {
                                full.push((m.address, m.evidence))
                            })
                            .unwrap();
                        // From the segments' copies, then from their columns.
                        for dense in [&mut copies, &mut no_copies] {
                            let mut evidence = Vec::new();
                            let count = reader
                                .for_each_match_evidence(&rule, query, bound, dense, |a, e| {
                                    evidence.push((a, e))
                                })
                                .unwrap();
                            assert_eq!(evidence, full, "query {q}, bound {bound}");
                            assert_eq!(count, full_count, "query {q}, bound {bound}");
                        }
                        // The evidence equals `full`, checked against the rule and brute force.
                        let evidence = full;
                        for &(address, e) in &evidence {
                            let i = number(address) as usize;
                            assert_eq!(rule.matches(query, &sigs[i]), Some(e), "query {q}");
                        }
                        let found: BTreeSet<u64> =
                            evidence.iter().map(|&(a, _)| number(a)).collect();
                        assert_eq!(found.len(), evidence.len(), "query {q}: reported twice");
                        if bound == usize::MAX {
                            assert_eq!(found, oracle, "query {q}");
                        } else {
                            assert!(found.is_subset(&oracle), "query {q}");
                        }
                    }
                }
                let docs: usize = searcher
                    .segment_readers()
                    .iter()
                    .map(|s| s.max_doc() as usize)
                    .sum();
                assert_eq!(copies.bytes(), docs * (8 * 33 + 1), "every segment copied");
                assert_eq!(no_copies.bytes(), 0);
            }
        }
        // The corpus exercises the candidates compared in full that never match.
        assert!(never > sigs.len(), "{never}");
    }
}
