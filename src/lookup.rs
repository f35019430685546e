//! Lookups: [`NearDupSearcher`] finds the live documents that the index's
//! [`MatchRule`](crate::MatchRule) matches with a text, a stored document or a signature
//! ([`lookup_text`](NearDupSearcher::lookup_text), [`lookup_id`](NearDupSearcher::lookup_id),
//! [`lookup_signature`](NearDupSearcher::lookup_signature)), through the key postings of each
//! segment. A bare fingerprint has no sketch, so [`lookup`](NearDupSearcher::lookup) and
//! [`lookup_within`](NearDupSearcher::lookup_within) are the simhash-only alternative: every
//! document within `k` bits.

use crate::columns::{for_each_posting, read_str};
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use crate::layout::check_distance;
use crate::schema::{lock, NearDupIndex, REPLACED_FIELD, SEQUENCE_FIELD};
use crate::signature::store::SignatureReader;
use crate::signature::{Evidence, Signature, DEFAULT_MAX_POSTINGS_PER_KEY};
use std::sync::Arc;
use tantivy::columnar::{Column, StrColumn};
use tantivy::{DocAddress, DocId, IndexReader, ReloadPolicy, Searcher, Term};

impl NearDupIndex {
    /// A searcher over the last commit, from a reader this index keeps (manual reload: each
    /// call reloads it, so the result reflects every commit made so far). Cost: a reload and
    /// opening each segment's columns; keep the searcher for many lookups.
    pub fn searcher(&self) -> Result<NearDupSearcher> {
        let mut guard = lock(&self.reader);
        let reader = match guard.as_ref() {
            Some(r) => {
                r.reload()?;
                r.clone()
            }
            None => {
                let r: IndexReader = self
                    .index
                    .reader_builder()
                    .reload_policy(ReloadPolicy::Manual)
                    .try_into()?;
                *guard = Some(r.clone());
                r
            }
        };
        drop(guard);
        NearDupSearcher::new(self, reader.searcher())
    }
}

/// A near-duplicate found by a lookup.
#[derive(Clone, Debug, PartialEq)]
pub struct NearDup {
    /// The document's id (the id field's value).
    pub id: String,
    /// The Hamming distance to the query fingerprint (also in `evidence`).
    pub distance: u32,
    /// Why it matches: [`Evidence::Simhash`] within the layout's `k`, or
    /// [`Evidence::Resemblance`] with the sketches' resemblance estimate. Simhash-only lookups
    /// ([`NearDupSearcher::lookup_within`]) always give [`Evidence::Simhash`].
    pub evidence: Evidence,
    /// The document's fingerprint.
    pub fingerprint: Fingerprint,
    /// Where the document is in the searcher it was found with.
    pub address: DocAddress,
}

/// One segment's columns, opened once per searcher.
struct SegmentColumns {
    fingerprints: Column<u64>,
    ids: Option<StrColumn>,
    groups: Option<StrColumn>,
    sequences: Option<Column<u64>>,
    replaced: Option<StrColumn>,
    replaced_index: Option<Arc<tantivy::InvertedIndexReader>>,
    keys: Arc<tantivy::InvertedIndexReader>,
    ids_index: Arc<tantivy::InvertedIndexReader>,
}

/// A tantivy [`Searcher`] with each segment's fingerprint column and key postings opened, for
/// fast lookups. Make one per reload and reuse it.
pub struct NearDupSearcher {
    index: NearDupIndex,
    searcher: Searcher,
    segments: Vec<SegmentColumns>,
    signatures: SignatureReader,
    max_postings_per_key: usize,
}

impl NearDupSearcher {
    /// Opens the columns of every segment of `searcher`. Cost: a few microseconds per segment.
    pub fn new(index: &NearDupIndex, searcher: Searcher) -> Result<Self> {
        let f = index.fields;
        let cfg = &index.config;
        let mut segments = Vec::with_capacity(searcher.segment_readers().len());
        for seg in searcher.segment_readers() {
            let ff = seg.fast_fields();
            segments.push(SegmentColumns {
                fingerprints: ff.u64(cfg.fingerprint_field())?,
                ids: ff.str(cfg.id_field())?,
                groups: match cfg.group_field() {
                    Some(g) => ff.str(g)?,
                    None => None,
                },
                sequences: match f.sequence {
                    Some(_) => Some(ff.u64(SEQUENCE_FIELD)?),
                    None => None,
                },
                replaced: match f.replaced {
                    Some(_) => ff.str(REPLACED_FIELD)?,
                    None => None,
                },
                replaced_index: match f.replaced {
                    Some(field) => Some(seg.inverted_index(field)?),
                    None => None,
                },
                keys: seg.inverted_index(f.keys)?,
                ids_index: seg.inverted_index(f.id)?,
            });
        }
        let signatures = SignatureReader::new(&searcher, &index.signature_fields)?;
        Ok(NearDupSearcher {
            index: index.clone(),
            searcher,
            segments,
            signatures,
            max_postings_per_key: DEFAULT_MAX_POSTINGS_PER_KEY,
        })
    }

    /// Sets the bound on candidates read per key and segment by the rule's lookups
    /// ([`DEFAULT_MAX_POSTINGS_PER_KEY`] unless set; at least 1; `usize::MAX` is exact). Its
    /// documentation says what it costs in recall on hot keys.
    pub fn with_max_postings_per_key(mut self, max_postings_per_key: usize) -> Self {
        self.max_postings_per_key = max_postings_per_key.max(1);
        self
    }

    /// The bound on candidates read per key and segment by the rule's lookups.
    pub fn max_postings_per_key(&self) -> usize {
        self.max_postings_per_key
    }

    /// The signature columns and key postings of every segment, for lookups with an explicit
    /// bound that count their work ([`SignatureReader::for_each_match`]).
    pub fn signature_reader(&self) -> &SignatureReader {
        &self.signatures
    }

    /// Every live document that the index's [`MatchRule`](crate::MatchRule) matches with
    /// `signature`, strongest evidence first ([`Evidence::cmp_strength`]: simhash matches
    /// nearest first, then resemblance matches most resembling first), ties by id. Exactly the
    /// documents a brute-force scan with [`MatchRule::matches`](crate::MatchRule::matches)
    /// finds (every match shares a key), unless a key is hot
    /// ([`with_max_postings_per_key`](Self::with_max_postings_per_key)). Cost: per segment one
    /// term look-up per key of the rule (16 by default), one fingerprint read per candidate,
    /// sketch reads only for candidates that share a band; then one id read per match (see
    /// [`lookup_signature_addresses`](Self::lookup_signature_addresses) to skip it).
    pub fn lookup_signature(&self, signature: &Signature) -> Result<Vec<NearDup>> {
        let mut found = Vec::new();
        self.signatures.for_each_match(
            self.index.rule(),
            signature,
            self.max_postings_per_key,
            |ord, doc, e, s| found.push((DocAddress::new(ord, doc), e, s.fingerprint)),
        )?;
        let mut hits = Vec::with_capacity(found.len());
        for (address, evidence, fingerprint) in found {
            hits.push(NearDup {
                id: self
                    .id_of(address.segment_ord, address.doc_id)?
                    .unwrap_or_default(),
                distance: evidence.distance(),
                evidence,
                fingerprint,
                address,
            });
        }
        hits.sort_by(|a, b| {
            a.evidence
                .cmp_strength(&b.evidence)
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(hits)
    }

    /// Like [`lookup_signature`](Self::lookup_signature) without reading ids:
    /// `(address, evidence)`, strongest first, ties by address.
    pub fn lookup_signature_addresses(
        &self,
        signature: &Signature,
    ) -> Result<Vec<(DocAddress, Evidence)>> {
        let mut out = Vec::new();
        self.signatures.for_each_match(
            self.index.rule(),
            signature,
            self.max_postings_per_key,
            |ord, doc, e, _| out.push((DocAddress::new(ord, doc), e)),
        )?;
        out.sort_by(|a, b| a.1.cmp_strength(&b.1).then(a.0.cmp(&b.0)));
        Ok(out)
    }

    /// The stored signature of the document at `address`, if it has one.
    pub fn signature_at(&self, address: DocAddress) -> Option<Signature> {
        self.signatures
            .segment(address.segment_ord)?
            .get(address.doc_id)
    }

    /// The signature of `text` under the index's scheme and rule (one analysis).
    pub fn sign(&self, text: &str) -> Signature {
        self.index.rule().signer(self.index.scheme()).sign(text)
    }

    /// The tantivy searcher.
    pub fn searcher(&self) -> &Searcher {
        &self.searcher
    }

    /// The index.
    pub fn index(&self) -> &NearDupIndex {
        &self.index
    }

    /// **Simhash-only**: every live document within the layout's `k` of `fp` (inclusive),
    /// nearest first (ties by id). A fingerprint has no sketch, so the rule's resemblance branch
    /// cannot be evaluated: use [`lookup_text`](Self::lookup_text),
    /// [`lookup_id`](Self::lookup_id) or [`lookup_signature`](Self::lookup_signature) for the
    /// rule. No bound on hot keys applies (every posting is read). Cost: per segment, one term look-up and postings read per key, one column read per
    /// candidate; then one id read per match, which decompresses a block of the id column's
    /// dictionary (see [`lookup_addresses`](Self::lookup_addresses) to skip it). Measured in
    /// docs/PERFORMANCE.md.
    pub fn lookup(&self, fp: Fingerprint) -> Result<Vec<NearDup>> {
        self.lookup_within(fp, self.index.layout().max_distance())
    }

    /// Like [`lookup`](Self::lookup) with `max_distance` instead of the layout's `k`.
    ///
    /// Errors with [`Error::InvalidConfig`] when `max_distance` exceeds the layout's `k`: the
    /// keys could not guarantee to find every match.
    pub fn lookup_within(&self, fp: Fingerprint, max_distance: u32) -> Result<Vec<NearDup>> {
        let mut out = Vec::new();
        self.for_each_match(fp, max_distance, |ord, doc, distance, fingerprint| {
            out.push((ord, doc, distance, fingerprint));
        })?;
        let mut hits = Vec::with_capacity(out.len());
        for (ord, doc, distance, fingerprint) in out {
            hits.push(NearDup {
                id: self.id_of(ord, doc)?.unwrap_or_default(),
                distance,
                evidence: Evidence::Simhash { distance },
                fingerprint,
                address: DocAddress::new(ord, doc),
            });
        }
        hits.sort_by(|a, b| a.distance.cmp(&b.distance).then_with(|| a.id.cmp(&b.id)));
        Ok(hits)
    }

    /// Like [`lookup_within`](Self::lookup_within) without reading ids: `(address, distance)`,
    /// nearest first (ties by address). Reading an id decompresses a block of the id column's
    /// dictionary (zstd, tens to hundreds of microseconds); this skips it, for callers that
    /// need only addresses, counts or a few ids ([`NearDupSearcher::id_of`]).
    pub fn lookup_addresses(
        &self,
        fp: Fingerprint,
        max_distance: u32,
    ) -> Result<Vec<(DocAddress, u32)>> {
        let mut out = Vec::new();
        self.for_each_match(fp, max_distance, |ord, doc, distance, _| {
            out.push((DocAddress::new(ord, doc), distance));
        })?;
        out.sort_unstable_by_key(|&(a, d)| (d, a));
        Ok(out)
    }

    /// The documents the index's rule matches with `text`, signed with the index's scheme and
    /// rule (one analysis), strongest evidence first: see
    /// [`lookup_signature`](Self::lookup_signature).
    pub fn lookup_text(&self, text: &str) -> Result<Vec<NearDup>> {
        self.lookup_signature(&self.sign(text))
    }

    /// The documents the index's rule matches with the live document with id `id` (itself
    /// included, at distance 0), by its stored signature: see
    /// [`lookup_signature`](Self::lookup_signature). A document added with only a fingerprint
    /// (no sketch) matches by the simhash branch only. Errors with [`Error::Document`] when no
    /// live document has that id.
    pub fn lookup_id(&self, id: &str) -> Result<Vec<NearDup>> {
        let signature = self.signature_of_id(id)?.ok_or_else(|| {
            Error::Document(format!("no live document has id `{id}` in this searcher"))
        })?;
        self.lookup_signature(&signature)
    }

    /// The stored signature of the first live document with id `id`, if any.
    pub fn signature_of_id(&self, id: &str) -> Result<Option<Signature>> {
        Ok(self
            .address_of_id(id)?
            .and_then(|address| self.signature_at(address)))
    }

    /// The address of the first live document with id `id` (with a fingerprint), if any.
    pub fn address_of_id(&self, id: &str) -> Result<Option<DocAddress>> {
        let term = Term::from_field_text(self.index.fields.id, id);
        for (ord, cols) in self.segments.iter().enumerate() {
            let seg = self.searcher.segment_reader(ord as u32);
            let mut found = None;
            for_each_posting(&cols.ids_index, &term, |doc| {
                if found.is_none() && !seg.is_deleted(doc) && cols.fingerprints.first(doc).is_some()
                {
                    found = Some(doc);
                }
            })?;
            if let Some(doc) = found {
                return Ok(Some(DocAddress::new(ord as u32, doc)));
            }
        }
        Ok(None)
    }

    /// The fingerprint of the first live document with id `id`, if any.
    pub fn fingerprint_of_id(&self, id: &str) -> Result<Option<Fingerprint>> {
        let term = Term::from_field_text(self.index.fields.id, id);
        for (ord, cols) in self.segments.iter().enumerate() {
            let seg = self.searcher.segment_reader(ord as u32);
            let mut found = None;
            for_each_posting(&cols.ids_index, &term, |doc| {
                if found.is_none() && !seg.is_deleted(doc) {
                    found = cols.fingerprints.first(doc).map(Fingerprint);
                }
            })?;
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }

    /// The id of a document, read from the id column.
    pub fn id_of(&self, segment_ord: u32, doc: DocId) -> Result<Option<String>> {
        let Some(cols) = self.segments.get(segment_ord as usize) else {
            return Ok(None);
        };
        read_str(cols.ids.as_ref(), doc)
    }

    /// Where a document was in the order its writer added documents ([`SEQUENCE_FIELD`]), or
    /// `None` when the index has no sequence field.
    pub fn sequence_of(&self, segment_ord: u32, doc: DocId) -> Option<u64> {
        self.segments
            .get(segment_ord as usize)?
            .sequences
            .as_ref()?
            .first(doc)
    }

    /// Whether a live document records that it replaced `id` under [`Policy::Replace`]
    /// (directly, or through a document it replaced): an input with this id was already
    /// handled, and adding it again would bring back a copy a newer document replaced. Always
    /// `false` on indexes without [`REPLACED_FIELD`]. Cost: one term lookup per segment.
    pub fn is_replaced(&self, id: &str) -> Result<bool> {
        let Some(field) = self.index.fields.replaced else {
            return Ok(false);
        };
        let term = Term::from_field_text(field, id);
        for (ord, cols) in self.segments.iter().enumerate() {
            let Some(index) = &cols.replaced_index else {
                continue;
            };
            let seg = self.searcher.segment_reader(ord as u32);
            let mut live = false;
            for_each_posting(index, &term, |doc| live |= !seg.is_deleted(doc))?;
            if live {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The ids a document records as replaced ([`REPLACED_FIELD`]).
    pub(crate) fn replaced_ids_of(&self, segment_ord: u32, doc: DocId) -> Result<Vec<String>> {
        let Some(col) = self
            .segments
            .get(segment_ord as usize)
            .and_then(|c| c.replaced.as_ref())
        else {
            return Ok(Vec::new());
        };
        let mut ids = Vec::new();
        for ord in col.ords().values_for_doc(doc) {
            let mut s = String::new();
            if col.ord_to_str(ord, &mut s)? {
                ids.push(s);
            }
        }
        Ok(ids)
    }

    /// The largest sequence number of the searcher's documents, deleted ones included.
    pub(crate) fn max_sequence(&self) -> Option<u64> {
        self.segments
            .iter()
            .filter_map(|c| c.sequences.as_ref())
            .filter(|c| c.num_docs() > 0)
            .map(|c| c.max_value())
            .max()
    }

    /// The group of a document (under [`Policy::Tag`]), read from the group column.
    pub fn group_of(&self, segment_ord: u32, doc: DocId) -> Result<Option<String>> {
        let Some(cols) = self.segments.get(segment_ord as usize) else {
            return Ok(None);
        };
        read_str(cols.groups.as_ref(), doc)
    }

    /// Calls `f(segment_ord, doc, distance, fingerprint)` once for every live document within
    /// `max_distance` of `fp`, segment by segment, in no particular order within a segment.
    pub fn for_each_match(
        &self,
        fp: Fingerprint,
        max_distance: u32,
        mut f: impl FnMut(u32, DocId, u32, Fingerprint),
    ) -> Result<()> {
        let layout = self.index.layout();
        check_distance(layout.max_distance(), max_distance)?;
        let keys_field = self.index.fields.keys;
        let terms: Vec<Term> = layout
            .keys(fp)
            .into_iter()
            .map(|key| Term::from_field_u64(keys_field, key))
            .collect();
        for (ord, cols) in self.segments.iter().enumerate() {
            let seg = self.searcher.segment_reader(ord as u32);
            for (combo, term) in terms.iter().enumerate() {
                for_each_posting(&cols.keys, term, |doc| {
                    if let Some(v) = cols.fingerprints.first(doc) {
                        let other = Fingerprint(v);
                        let d = fp.distance(other);
                        // A document sharing several keys is reported under the first only.
                        if d <= max_distance
                            && layout.first_shared_key(fp, other) == Some(combo)
                            && !seg.is_deleted(doc)
                        {
                            f(ord as u32, doc, d, other);
                        }
                    }
                })?;
            }
        }
        Ok(())
    }
}
