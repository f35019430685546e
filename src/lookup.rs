//! Lookups: [`NearDupSearcher`] finds every live document within `k` of a fingerprint through
//! the key postings of each segment.

use crate::columns::{field_name, for_each_posting, read_str};
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use crate::layout::check_distance;
use crate::schema::{lock, NearDupFields, NearDupIndex, REPLACED_FIELD, SEQUENCE_FIELD};
use crate::signature::store::SignatureReader;
use crate::signature::{Evidence, Signature};
use std::sync::Arc;
use tantivy::columnar::{Column, StrColumn};
use tantivy::schema::Field;
use tantivy::{DocAddress, IndexReader, ReloadPolicy, Searcher, Term};

impl NearDupIndex {
    /// tantivy's [`Searcher`] over the last commit, from a reader this index keeps (manual
    /// reload: each call reloads it, so the result reflects every commit made so far). Every
    /// search-side feature takes it: [`NearDupSearcher::new`] for lookups,
    /// [`NearDupCollapse::search`](crate::NearDupCollapse::search),
    /// [`NearDupGraph::new`](crate::NearDupGraph::new),
    /// [`NearDupQuery::from_id`](crate::NearDupQuery::from_id).
    ///
    /// Cost: a reload (cheap when nothing was committed). Errors: tantivy errors opening the
    /// reader.
    pub fn searcher(&self) -> Result<Searcher> {
        let mut guard = lock(&self.reader);
        if let Some(reader) = guard.as_ref() {
            reader.reload()?;
            return Ok(reader.searcher());
        }
        let reader: IndexReader = self
            .index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let searcher = reader.searcher();
        *guard = Some(reader);
        Ok(searcher)
    }

    /// A [`NearDupSearcher`] over [`searcher`](Self::searcher): lookups on the last commit.
    /// Cost: a reload and opening each segment's columns; keep it for many lookups.
    /// Errors: those of [`searcher`](Self::searcher) and [`NearDupSearcher::new`].
    pub fn lookups(&self) -> Result<NearDupSearcher> {
        NearDupSearcher::new(self.fields, &self.searcher()?)
    }
}

/// A near-duplicate found by a lookup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NearDup {
    /// The document's id (the id field's value).
    pub id: String,
    /// The Hamming distance to the query fingerprint.
    pub distance: u32,
    /// The document's fingerprint.
    pub fingerprint: Fingerprint,
    /// Where the document is in the searcher it was found with.
    pub address: DocAddress,
}

/// A document [`NearDupSearcher::for_each_match`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FingerprintMatch {
    /// Where the document is in the searcher.
    pub address: DocAddress,
    /// The Hamming distance to the query fingerprint.
    pub distance: u32,
    /// The document's fingerprint.
    pub fingerprint: Fingerprint,
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

/// Lookups over a tantivy [`Searcher`]: each segment's fingerprint, id and signature columns
/// and key postings opened once, so a lookup reads only postings and column values. Make one per
/// reload and reuse it.
pub struct NearDupSearcher {
    fields: NearDupFields,
    searcher: Searcher,
    segments: Vec<SegmentColumns>,
    signatures: SignatureReader,
}

impl NearDupSearcher {
    /// Opens the columns of every segment of `searcher` (a clone of it is kept, so its segments
    /// stay readable while this lives).
    ///
    /// Cost: a few microseconds per segment. Errors: tantivy errors opening a column;
    /// [`Error::Schema`] when the searcher's schema lacks a field of `fields` (a searcher of
    /// another index).
    pub fn new(fields: NearDupFields, searcher: &Searcher) -> Result<Self> {
        let schema = searcher.schema();
        let name = |f: Field| field_name(schema, f).map(str::to_string);
        let (fingerprint_name, id_name) = (name(fields.fingerprint)?, name(fields.id)?);
        let group_name = fields.group.map(name).transpose()?;
        let mut segments = Vec::with_capacity(searcher.segment_readers().len());
        for seg in searcher.segment_readers() {
            let ff = seg.fast_fields();
            segments.push(SegmentColumns {
                fingerprints: ff.u64(&fingerprint_name)?,
                ids: ff.str(&id_name)?,
                groups: match &group_name {
                    Some(g) => ff.str(g)?,
                    None => None,
                },
                sequences: match fields.sequence {
                    Some(_) => Some(ff.u64(SEQUENCE_FIELD)?),
                    None => None,
                },
                replaced: match fields.replaced {
                    Some(_) => ff.str(REPLACED_FIELD)?,
                    None => None,
                },
                replaced_index: match fields.replaced {
                    Some(field) => Some(seg.inverted_index(field)?),
                    None => None,
                },
                keys: seg.inverted_index(fields.keys)?,
                ids_index: seg.inverted_index(fields.id)?,
            });
        }
        let signatures = SignatureReader::new(searcher, &fields.signature_fields(schema)?)?;
        Ok(NearDupSearcher {
            fields,
            searcher: searcher.clone(),
            segments,
            signatures,
        })
    }

    /// Every live document that the index's [`MatchRule`](crate::MatchRule) matches with
    /// `signature`, with the evidence: simhash matches first (nearest first), then resemblance
    /// matches (most resembling first), ties by address. Exactly the documents a brute-force
    /// scan with [`MatchRule::matches`](crate::MatchRule::matches) finds (every match shares a
    /// key). Cost: per segment one term look-up per key of the rule (16 by default), one
    /// fingerprint read per candidate, sketch reads only for candidates that share a band
    /// (docs/QUALITY.md, "Storage and lookup cost").
    pub fn lookup_signature(&self, signature: &Signature) -> Result<Vec<(DocAddress, Evidence)>> {
        let mut out = Vec::new();
        self.signatures
            .for_each_match(self.fields.rule(), signature, usize::MAX, |m| {
                out.push((m.address, m.evidence))
            })?;
        let rank = |e: &Evidence| match *e {
            Evidence::Simhash { distance } => (0u8, distance as f32),
            Evidence::Resemblance { resemblance, .. } => (1, -resemblance),
        };
        out.sort_by(|a, b| {
            let (x, y) = (rank(&a.1), rank(&b.1));
            x.0.cmp(&y.0).then(x.1.total_cmp(&y.1)).then(a.0.cmp(&b.0))
        });
        Ok(out)
    }

    /// The stored signature of the document at `address`, if it has one.
    pub fn signature_at(&self, address: DocAddress) -> Option<Signature> {
        self.signatures
            .segment(address.segment_ord)?
            .get(address.doc_id)
    }

    /// The tantivy searcher.
    pub fn searcher(&self) -> &Searcher {
        &self.searcher
    }

    /// The handle of the index.
    pub fn fields(&self) -> NearDupFields {
        self.fields
    }

    /// Every live document within the layout's `k` of `fp` (inclusive), nearest first (ties by
    /// id). Cost: per segment, one term look-up and postings read per key, one column read per
    /// candidate; then one id read per match, which decompresses a block of the id column's
    /// dictionary (see [`lookup_addresses`](Self::lookup_addresses) to skip it). Measured in
    /// docs/PERFORMANCE.md.
    pub fn lookup(&self, fp: Fingerprint) -> Result<Vec<NearDup>> {
        self.lookup_within(fp, self.fields.layout().max_distance())
    }

    /// Like [`lookup`](Self::lookup) with `max_distance` instead of the layout's `k`.
    ///
    /// Errors with [`Error::InvalidConfig`] when `max_distance` exceeds the layout's `k`: the
    /// keys could not guarantee to find every match.
    pub fn lookup_within(&self, fp: Fingerprint, max_distance: u32) -> Result<Vec<NearDup>> {
        let mut out = Vec::new();
        self.for_each_match(fp, max_distance, |m| out.push(m))?;
        let mut hits = Vec::with_capacity(out.len());
        for m in out {
            hits.push(NearDup {
                id: self.id_of(m.address)?.unwrap_or_default(),
                distance: m.distance,
                fingerprint: m.fingerprint,
                address: m.address,
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
        self.for_each_match(fp, max_distance, |m| out.push((m.address, m.distance)))?;
        out.sort_unstable_by_key(|&(a, d)| (d, a));
        Ok(out)
    }

    /// Near-duplicates of the live document with id `id` (itself included, at distance 0).
    /// Errors with [`Error::Document`] when no live document has that id.
    pub fn lookup_id(&self, id: &str) -> Result<Vec<NearDup>> {
        let fp = self.fingerprint_of_id(id)?.ok_or_else(|| {
            Error::Document(format!("no live document has id `{id}` in this searcher"))
        })?;
        self.lookup(fp)
    }

    /// The fingerprint of the first live document with id `id`, if any.
    pub fn fingerprint_of_id(&self, id: &str) -> Result<Option<Fingerprint>> {
        let term = Term::from_field_text(self.fields.id, id);
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

    /// The id of the document at `address`, read from the id column; `None` when the address
    /// is not in this searcher or the document has no id. Cost: one id read, which
    /// decompresses a block of the id column's dictionary (tens of microseconds).
    /// Errors: I/O errors reading the column.
    pub fn id_of(&self, address: DocAddress) -> Result<Option<String>> {
        let Some(cols) = self.segments.get(address.segment_ord as usize) else {
            return Ok(None);
        };
        read_str(cols.ids.as_ref(), address.doc_id)
    }

    /// Where the document at `address` was in the order its writer added documents
    /// ([`SEQUENCE_FIELD`]), or `None` when the index has no sequence field. Cost: one column
    /// read.
    pub fn sequence_of(&self, address: DocAddress) -> Option<u64> {
        self.segments
            .get(address.segment_ord as usize)?
            .sequences
            .as_ref()?
            .first(address.doc_id)
    }

    /// Whether a live document records that it replaced `id` under [`Policy::Replace`](crate::Policy::Replace)
    /// (directly, or through a document it replaced): an input with this id was already
    /// handled, and adding it again would bring back a copy a newer document replaced. Always
    /// `false` on indexes without [`REPLACED_FIELD`]. Cost: one term lookup per segment.
    pub fn is_replaced(&self, id: &str) -> Result<bool> {
        let Some(field) = self.fields.replaced else {
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
    pub(crate) fn replaced_ids_of(&self, address: DocAddress) -> Result<Vec<String>> {
        let Some(col) = self
            .segments
            .get(address.segment_ord as usize)
            .and_then(|c| c.replaced.as_ref())
        else {
            return Ok(Vec::new());
        };
        let mut ids = Vec::new();
        for ord in col.ords().values_for_doc(address.doc_id) {
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

    /// The group of the document at `address` (under [`Policy::Tag`](crate::Policy::Tag)), read from the group
    /// column; `None` without a group field or value. Cost and errors as
    /// [`id_of`](Self::id_of).
    pub fn group_of(&self, address: DocAddress) -> Result<Option<String>> {
        let Some(cols) = self.segments.get(address.segment_ord as usize) else {
            return Ok(None);
        };
        read_str(cols.groups.as_ref(), address.doc_id)
    }

    /// Calls `f` once for every live document within `max_distance` of `fp`, segment by
    /// segment, in no particular order within a segment. Cost as
    /// [`lookup_addresses`](Self::lookup_addresses) without the sort. Errors with
    /// [`Error::InvalidConfig`] when `max_distance` exceeds the layout's `k`.
    pub fn for_each_match(
        &self,
        fp: Fingerprint,
        max_distance: u32,
        mut f: impl FnMut(FingerprintMatch),
    ) -> Result<()> {
        let layout = self.fields.layout();
        check_distance(layout.max_distance(), max_distance)?;
        let keys_field = self.fields.keys;
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
                            f(FingerprintMatch {
                                address: DocAddress::new(ord as u32, doc),
                                distance: d,
                                fingerprint: other,
                            });
                        }
                    }
                })?;
            }
        }
        Ok(())
    }
}
