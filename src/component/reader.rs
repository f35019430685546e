//! Signatures in a tantivy index: the fields, reading them back per segment, and the lookup
//! that every consumer builds on.
//!
//! A document carries its signature to the index in plain `u64` fields (the fingerprint and
//! one field per sketch word: `{fingerprint}_sketch0` ..), which tantivy neither indexes nor
//! stores; the segment component ([`crate::component`]) writes them, with the rule's keys in
//! sorted tables, to a file per segment, and every reader here reads that file in place.

use super::{open_segment_file, ComponentFile};
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use crate::layout::BlockLayout;
use crate::signature::{band_from_words, Evidence, MatchRule, MinHashConfig, Signature};
use std::collections::HashSet;
use tantivy::fastfield::AliveBitSet;
use tantivy::schema::{Field, FieldType, NumericOptions, Schema, SchemaBuilder, TantivyDocument};
use tantivy::{DocAddress, DocId, Searcher, SegmentReader};

/// The names of the fields that carry signatures to the index under a rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SignatureFields {
    /// The fingerprint field.
    pub(crate) fingerprint: String,
    /// The sketch fields, one per 64-bit word.
    pub(crate) sketch: Vec<String>,
}

impl SignatureFields {
    /// The field names for `rule`: `fingerprint` and `{fingerprint}_sketch{i}`.
    pub(crate) fn new(fingerprint: &str, rule: &MatchRule) -> SignatureFields {
        SignatureFields {
            fingerprint: fingerprint.to_string(),
            sketch: (0..rule.minhash().sketch_words())
                .map(|i| format!("{fingerprint}_sketch{i}"))
                .collect(),
        }
    }

    /// The same names with `words` sketch fields.
    pub(crate) fn with_sketch_words(mut self, words: usize) -> SignatureFields {
        self.sketch = (0..words)
            .map(|i| format!("{}_sketch{i}", self.fingerprint))
            .collect();
        self
    }

    /// Adds the fields to `builder` (as
    /// [`NearDupConfig::add_fields`](crate::NearDupConfig::add_fields)): the fingerprint and
    /// the sketch words as plain `u64` fields that tantivy neither indexes nor stores
    /// (they carry each document's signature to the segment component). Cost: none beyond
    /// the schema; tantivy panics on a field name the builder already has, as for any field.
    pub(crate) fn add_to_schema(&self, builder: &mut SchemaBuilder) {
        builder.add_u64_field(&self.fingerprint, NumericOptions::default());
        for name in &self.sketch {
            builder.add_u64_field(name, NumericOptions::default());
        }
    }

    /// The fields in `schema`. Cost: one name look-up per field (34 by default). Errors with
    /// [`Error::InvalidConfig`] naming the first field `schema` lacks, and with
    /// [`Error::OldFormat`] when the fingerprint is a fast field (an index of the previous
    /// format, which kept signatures in columns).
    pub(crate) fn resolve(&self, schema: &Schema) -> Result<ResolvedSignatureFields> {
        let get = |name: &str| {
            schema.get_field(name).map_err(|_| {
                Error::InvalidConfig(format!(
                    "the schema has no field `{name}`; add the signature fields with \
                     SignatureFields::add_to_schema (or rebuild the index with this version)"
                ))
            })
        };
        let fingerprint = get(&self.fingerprint)?;
        if let FieldType::U64(o) = schema.get_field_entry(fingerprint).field_type() {
            if o.is_fast() || o.is_indexed() {
                return Err(Error::OldFormat(format!(
                    "the fingerprint field `{}` is a fast field: the signatures of this index \
                     are in columns, this version keeps them in a segment component",
                    self.fingerprint
                )));
            }
        }
        Ok(ResolvedSignatureFields {
            fingerprint,
            sketch: self.sketch.iter().map(|n| get(n)).collect::<Result<_>>()?,
        })
    }
}

/// [`SignatureFields`] resolved against a schema.
#[derive(Clone, Debug)]
pub(crate) struct ResolvedSignatureFields {
    fingerprint: Field,
    sketch: Vec<Field>,
}

impl ResolvedSignatureFields {
    /// The sketch fields, one per 64-bit word.
    pub(crate) fn sketch_fields(&self) -> &[Field] {
        &self.sketch
    }

    /// Adds `signature` (fingerprint and sketch words) to `doc`. Cost: one value per field (33
    /// by default); cannot fail.
    pub(crate) fn add_to_document(
        &self,
        _rule: &MatchRule,
        signature: &Signature,
        doc: &mut TantivyDocument,
    ) {
        doc.add_u64(self.fingerprint, signature.fingerprint.0);
        for (field, &word) in self.sketch.iter().zip(&signature.sketch.words) {
            doc.add_u64(*field, word);
        }
    }
}

/// The signatures and key tables of one segment: its component file, read in place.
#[derive(Clone, Debug)]
pub(crate) struct SegmentSignatures {
    file: ComponentFile,
}

impl SegmentSignatures {
    /// Opens `segment`'s component file under `rule`. Cost: mapping the file and checking its
    /// structure (a few microseconds); no document is read. Errors: [`Error::DamagedFile`]
    /// when the file is truncated or damaged, [`Error::OldFormat`] when the segment has no
    /// such file (an index of an older format), [`Error::IndexMismatch`] when it was written
    /// under another rule.
    pub(crate) fn open(segment: &SegmentReader, rule: &MatchRule) -> Result<SegmentSignatures> {
        Ok(SegmentSignatures {
            file: open_segment_file(segment, rule)?,
        })
    }

    /// The component file (the streaming join reads its tables).
    pub(crate) fn file(&self) -> &ComponentFile {
        &self.file
    }

    /// Reads the signature of `doc` into `out` (reusing its sketch buffer); `false` when the
    /// document has no signature. Cost: one contiguous read; allocates only if `out`'s sketch
    /// must grow.
    pub(crate) fn read_into(&self, doc: DocId, out: &mut Signature) -> bool {
        self.file.read_into(doc, out)
    }

    /// The fingerprint of `doc`, if it has one.
    pub(crate) fn fingerprint(&self, doc: DocId) -> Option<Fingerprint> {
        self.file.fingerprint(doc)
    }

    /// Appends the sketch words of `doc` (all of the rule's, zero where the segment keeps
    /// none) to `out`; `false`, appending nothing, when the document has no signature. Cost:
    /// one contiguous read; no allocation beyond `out`'s growth.
    pub(crate) fn sketch_words_into(&self, doc: DocId, out: &mut Vec<u64>) -> bool {
        self.file.sketch_words_into(doc, out)
    }

    /// The `rows * bits` bits of band `band` of `doc`'s sketch. Cost: reads only the one or
    /// two sketch words that hold them; no allocation.
    pub(crate) fn band(&self, doc: DocId, config: &MinHashConfig, band: u32) -> u64 {
        band_from_words(config, band, |w| self.file.word(doc, w + 1))
    }

    /// The signature of `doc`, if it has one. Cost: as [`read_into`](Self::read_into), plus
    /// the sketch's allocation.
    pub(crate) fn get(&self, doc: DocId) -> Option<Signature> {
        let mut s = Signature::default();
        self.read_into(doc, &mut s).then_some(s)
    }

    /// Documents of the segment (deleted ones included).
    pub(crate) fn max_doc(&self) -> u32 {
        self.file.max_doc()
    }

    /// Verifies the file's checksum (a read of the whole file). Errors:
    /// [`Error::DamagedFile`] when a byte differs from what was written.
    pub(crate) fn verify_checksum(&self) -> Result<()> {
        self.file.verify_checksum()
    }

    /// Calls `f(position, doc)` with the first `limit` live documents (in doc id order;
    /// deleted ones are skipped and do not count) under each key of `keys` (in
    /// [`MatchRule::keys`] order), position by position, from the segment's tables; those of
    /// them under a simhash block key that `near`'s filter bits put farther than its distance
    /// from the query are skipped (they are not within it, so not a match under that key). Errors: [`Error::DamagedFile`] when a table is inconsistent.
    pub(crate) fn for_each_key_doc(
        &self,
        keys: &[u64],
        limit: usize,
        alive: Option<&AliveBitSet>,
        near: &NearFilter,
        mut f: impl FnMut(usize, DocId),
    ) -> Result<()> {
        let live = |doc: DocId| alive.is_none_or(|a| a.is_alive(doc));
        for (position, &key) in keys.iter().enumerate() {
            let run = self.file.run(position, key)?;
            let mask = run.filter_mask();
            // Band keys, and the tables of files older than format 4, keep no filter bits.
            let rest = near.rests.get(position).filter(|_| mask != 0);
            let docs = run.docs_with_filter().filter(|&(d, _)| live(d)).take(limit);
            match rest {
                Some(&rest) => {
                    for (doc, filter) in docs {
                        if ((rest & mask) ^ filter).count_ones() <= near.distance {
                            f(position, doc);
                        }
                    }
                }
                None => docs.for_each(|(doc, _)| f(position, doc)),
            }
        }
        Ok(())
    }

    /// Whether a key of `keys` holds more than `bound` documents (deleted ones included).
    pub(crate) fn has_key_over(&self, keys: &[u64], bound: usize) -> Result<bool> {
        for (position, &key) in keys.iter().enumerate() {
            if self.file.run(position, key)?.len() > bound {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// The query's side of the simhash key tables' filter bits: for each block key position, the
/// query fingerprint's bits outside that key ([`BlockLayout::rests_into`]), and the distance
/// a candidate must be within. The bits a candidate differs in there are a lower bound of
/// its distance, so one beyond `distance` on them is not within it: dropped from the table
/// without reading its row.
///
/// [`BlockLayout::rests_into`]: crate::BlockLayout
pub(crate) struct NearFilter {
    rests: Vec<u64>,
    distance: u32,
}

impl NearFilter {
    pub(crate) fn new(layout: &BlockLayout, fp: Fingerprint, distance: u32) -> NearFilter {
        let mut rests = Vec::with_capacity(layout.num_keys());
        layout.rests_into(fp, &mut rests);
        NearFilter { rests, distance }
    }
}

/// Touches the buckets `buckets` of the segments `segments` (pairwise) for
/// [`SignatureReader::touch_runs`].
fn touch_round(segments: &[Option<&SegmentSignatures>], buckets: &[(usize, usize)]) -> u8 {
    segments
        .iter()
        .zip(buckets)
        .filter_map(|(segment, &bucket)| Some(segment.as_ref()?.file().touch_bytes(bucket)))
        .fold(0, |sum, byte| sum ^ byte)
}

/// A document [`SignatureReader::for_each_match`] found: where it is, why it matches, and its
/// signature (borrowed for the call).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SignatureMatch<'a> {
    /// Where the document is in the searcher.
    pub(crate) address: DocAddress,
    /// Why the rule matches it with the query.
    pub(crate) evidence: Evidence,
    /// Its stored signature.
    pub(crate) signature: &'a Signature,
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
    (source, doc, position): (&SegmentSignatures, DocId, usize),
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
    if query_bands.get(band as usize) != Some(&source.band(doc, rule.minhash(), band)) {
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

/// What [`verify`] makes of a candidate met under one of the query's keys.
enum Verdict {
    Match(Evidence),
    /// Not a match under this key (beyond the simhash radius under a block key, or not sharing
    /// this key's band); another key may still find it.
    NotUnderThisKey,
    /// Compared in full (or without a signature): no key can make it a match.
    Never,
}

/// A searcher's signatures and key tables: every segment's component file, opened once.
/// Opening costs a few microseconds per segment (the files are memory-mapped and only their
/// structure is checked), so a fresh process answers its first lookup without building
/// anything.
pub(crate) struct SignatureReader {
    segments: Vec<SegmentSignatures>,
    searcher: Searcher,
}

impl SignatureReader {
    /// Opens the component file of every segment of `searcher` under `rule`. Errors: those of
    /// [`SegmentSignatures::open`].
    pub(crate) fn new(searcher: &Searcher, rule: &MatchRule) -> Result<SignatureReader> {
        let segments = searcher
            .segment_readers()
            .iter()
            .map(|segment| SegmentSignatures::open(segment, rule))
            .collect::<Result<_>>()?;
        Ok(SignatureReader {
            segments,
            searcher: searcher.clone(),
        })
    }

    /// A reader over files already opened for `searcher`'s segments, in segment order (the
    /// ones the index's warmer opened: [`ComponentWarmer::files_of`](super::ComponentWarmer)).
    pub(crate) fn from_files(searcher: &Searcher, files: Vec<ComponentFile>) -> SignatureReader {
        SignatureReader {
            segments: files
                .into_iter()
                .map(|file| SegmentSignatures { file })
                .collect(),
            searcher: searcher.clone(),
        }
    }

    /// Calls `f(position, doc)` with the first `limit` live documents of segment `ord` under
    /// each key of `keys` (see [`SegmentSignatures::for_each_key_doc`]).
    pub(crate) fn for_each_key_doc(
        &self,
        ord: usize,
        keys: &[u64],
        limit: usize,
        near: &NearFilter,
        f: impl FnMut(usize, DocId),
    ) -> Result<()> {
        if let Some(segment) = self.segments.get(ord) {
            let alive = self.searcher.segment_reader(ord as u32).alive_bitset();
            segment.for_each_key_doc(keys, limit, alive, near, f)?;
        }
        Ok(())
    }

    /// Touches the memory every segment's probe of `keys` reads, in two tight loops: first
    /// every bucket's bounds, then the first and last bytes of every bucket's entries. The
    /// segments x keys cache misses of each loop overlap (measured: lookup p50 at 1M
    /// documents in 8 segments, docs/COMPONENT.md "Measured"), where the probes one by one
    /// wait for each, and a single loop waits for each bucket's bounds before its entries.
    pub(crate) fn touch_runs(&self, keys: &[u64]) {
        // Up to this many buckets are touched in one round (a stack buffer; larger lookups
        // go round by round).
        const ROUND: usize = 64;
        let mut buckets = [(0usize, 0usize); ROUND];
        let mut sum = 0u8;
        let probes = self
            .segments
            .iter()
            .flat_map(|segment| keys.iter().enumerate().map(move |(p, &k)| (segment, p, k)));
        let mut pending = 0;
        let mut round: [Option<&SegmentSignatures>; ROUND] = [None; ROUND];
        for (segment, position, key) in probes {
            buckets[pending] = segment.file().bucket_bytes(position, key);
            round[pending] = Some(segment);
            pending += 1;
            if pending == ROUND {
                sum ^= touch_round(&round, &buckets);
                pending = 0;
            }
        }
        sum ^= touch_round(&round[..pending], &buckets[..pending]);
        std::hint::black_box(sum);
    }

    /// Whether a key of `signature` holds more than `bound` documents in some segment (deleted
    /// ones included), so that a lookup with that bound may miss some of its matches. Cost:
    /// per key and segment, a table probe. Errors: [`Error::DamagedFile`] when a table is
    /// inconsistent.
    pub(crate) fn has_hot_key(
        &self,
        rule: &MatchRule,
        signature: &Signature,
        bound: usize,
    ) -> Result<bool> {
        if bound == usize::MAX {
            return Ok(false);
        }
        let keys = rule.keys(signature);
        for segment in &self.segments {
            if segment.has_key_over(&keys, bound)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Every segment's signatures, in segment order.
    pub(crate) fn segments(&self) -> &[SegmentSignatures] {
        &self.segments
    }

    /// The signatures of segment `ord`.
    pub(crate) fn segment(&self, ord: u32) -> Option<&SegmentSignatures> {
        self.segments.get(ord as usize)
    }

    /// Calls `f` once for every live document that `rule` matches with `query`: per segment
    /// and key of `query`, a probe of the segment's table (a directory read and a short binary
    /// search in the memory-mapped file); one signature read and one [`MatchRule::matches`]
    /// per candidate (a document met under several keys is verified and reported once: a
    /// per-segment set of the matches).
    ///
    /// Because every pair the rule matches shares a key, this finds exactly the documents a
    /// brute-force scan with [`MatchRule::matches`] finds. **Hot keys**: a key held by more
    /// than `max_postings_per_key` live documents is read only up to that many (in doc id
    /// order, per segment), so a lookup costs at most keys x `max_postings_per_key` candidates
    /// per segment; a match is then missed only if every key it shares with `query` is cut
    /// that way. `usize::MAX` reads everything.
    ///
    /// Returns the number of candidates verified (live documents not yet matched under an
    /// earlier key), the work the bound limits. Errors: [`Error::DamagedFile`] when a table
    /// is inconsistent.
    pub(crate) fn for_each_match(
        &self,
        rule: &MatchRule,
        query: &Signature,
        max_postings_per_key: usize,
        f: impl FnMut(SignatureMatch<'_>),
    ) -> Result<u64> {
        self.visit_matches(rule, query, max_postings_per_key, true, f)
    }

    /// [`for_each_match`](Self::for_each_match) for a caller that needs only where each match
    /// is and why: the same matches, in the same order, with the same count of candidates
    /// verified, but a match within the simhash radius reads only its fingerprint. The
    /// writer's committed check.
    pub(crate) fn for_each_match_evidence(
        &self,
        rule: &MatchRule,
        query: &Signature,
        max_postings_per_key: usize,
        mut f: impl FnMut(DocAddress, Evidence),
    ) -> Result<u64> {
        self.visit_matches(rule, query, max_postings_per_key, false, |m| {
            f(m.address, m.evidence)
        })
    }

    /// The matches of `query`; the signature passed to `f` is the match's only with
    /// `read_signature` (else whatever the last candidate read left in the buffer).
    fn visit_matches(
        &self,
        rule: &MatchRule,
        query: &Signature,
        max_postings_per_key: usize,
        read_signature: bool,
        mut f: impl FnMut(SignatureMatch<'_>),
    ) -> Result<u64> {
        let keys = rule.keys(query);
        let mut candidate = Signature::default();
        let query_bands: Vec<u64> = (0..rule.minhash().bands)
            .map(|b| query.sketch.band(rule.minhash(), b))
            .collect();
        // Per segment: the matches (reported once) and the candidates whose whole signature
        // was compared and did not match (the rule is a function of the two signatures, so a
        // later key of theirs is not compared again; they still count as verified).
        let mut seen: HashSet<DocId> = HashSet::new();
        let mut rejected: HashSet<DocId> = HashSet::new();
        let mut verified = 0u64;
        let near = NearFilter::new(
            rule.layout(),
            query.fingerprint,
            rule.layout().max_distance(),
        );
        self.touch_runs(&keys);
        for (ord, signatures) in self.segments.iter().enumerate() {
            seen.clear();
            rejected.clear();
            let visit = |position: usize, doc: DocId| {
                if seen.contains(&doc) {
                    return;
                }
                verified += 1;
                if rejected.contains(&doc) {
                    return;
                }
                let query = (query, query_bands.as_slice());
                match verify(
                    rule,
                    query,
                    (signatures, doc, position),
                    read_signature,
                    &mut candidate,
                ) {
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
            self.for_each_key_doc(ord, &keys, max_postings_per_key, &near, visit)?;
        }
        Ok(verified)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::tests::{families as signature_families, signature_index, Kin};
    use crate::signature::Sketch;
    use crate::test_rng::Rng;
    use std::collections::BTreeSet;

    /// Families of simhash neighbours, resemblance neighbours and band-sharing strangers (met
    /// under many keys, never a match) around random bases.
    fn families(seed: u64, rule: &MatchRule, n: usize) -> Vec<Signature> {
        use Kin::*;
        let kin = [SimhashNeighbour, ResemblanceNeighbour, BandStranger];
        let mut sigs = signature_families(&mut Rng(seed), rule, n, &[kin, kin].concat());
        sigs.truncate(n);
        sigs
    }

    /// `for_each_match_evidence` (the writer's committed check) reports the same matches with
    /// the same evidence, in the same order, and counts the same candidates as
    /// `for_each_match`, whose matches equal brute force; bounded and unbounded, across
    /// segments and deletes.
    #[test]
    fn evidence_only_matches_equal_full_matches_and_brute_force() {
        let rule = MatchRule::default();
        let sigs = families(11, &rule, 280);
        let mut never = 0;
        {
            let (index, _fields, deleted) = signature_index(&rule, &sigs, 90, |i| i % 11 == 4);
            let searcher = index.reader().unwrap().searcher();
            assert!(searcher.segment_readers().len() >= 3);
            let ids: Vec<_> = searcher
                .segment_readers()
                .iter()
                .map(|s| s.fast_fields().u64("n").unwrap())
                .collect();
            let number = |a: DocAddress| ids[a.segment_ord as usize].first(a.doc_id).unwrap();
            {
                let reader = SignatureReader::new(&searcher, &rule).unwrap();
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
                        let mut evidence = Vec::new();
                        let count = reader
                            .for_each_match_evidence(&rule, query, bound, |a, e| {
                                evidence.push((a, e))
                            })
                            .unwrap();
                        assert_eq!(evidence, full, "query {q}, bound {bound}");
                        assert_eq!(count, full_count, "query {q}, bound {bound}");

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
            }
        }
        // The corpus exercises the candidates compared in full that never match.
        assert!(never > sigs.len(), "{never}");
    }

    /// Hot keys: documents sharing the sketch words of every band (each band key held by all
    /// of them) but nothing else. A lookup verifies every holder unbounded, and at most keys x
    /// bound candidates per segment with a bound.
    #[test]
    fn a_bound_caps_the_work_of_a_lookup_under_hot_keys() {
        let rule = MatchRule::default();
        let words = rule.minhash().sketch_words();
        let mut rng = Rng(5);
        let shared: Vec<u64> = (0..words).map(|_| rng.next()).collect();
        let sigs: Vec<Signature> = (0..600)
            .map(|_| {
                let mut sketch = shared.clone();
                for w in &mut sketch[5..] {
                    *w = rng.next();
                }
                Signature {
                    fingerprint: Fingerprint(rng.next()),
                    sketch: Sketch { words: sketch },
                }
            })
            .collect();
        let (index, _fields, _) = signature_index(&rule, &sigs, 200, |_| false);
        let searcher = index.reader().unwrap().searcher();
        let segments = searcher.segment_readers().len();
        let reader = SignatureReader::new(&searcher, &rule).unwrap();
        let query = &sigs[7];
        let mut matches = 0;
        let unbounded = reader
            .for_each_match(&rule, query, usize::MAX, |_| matches += 1)
            .unwrap();
        // Every holder is a candidate; only the query itself matches (the other words differ).
        assert_eq!(matches, 1);
        assert!(unbounded >= sigs.len() as u64 - 1, "verified {unbounded}");
        let bound = 5;
        let bounded = reader.for_each_match(&rule, query, bound, |_| {}).unwrap();
        let cap = (rule.keys_per_document() * bound * segments) as u64;
        assert!(
            bounded <= cap && cap < unbounded,
            "verified {bounded}, cap {cap}"
        );
    }
}
