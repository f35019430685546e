//! Lookups: [`NearDupLookup`] finds the live documents that the index's
//! [`MatchRule`](crate::MatchRule) matches with a text, a stored document or a signature
//! ([`NearDupIndex::lookup_text`], [`lookup_id`](NearDupLookup::lookup_id),
//! [`lookup_signature`](NearDupLookup::lookup_signature)), through each segment's sorted key
//! tables, read in place from the segment component's file ([`crate::component`]). A bare
//! fingerprint has no sketch, so [`lookup`](NearDupLookup::lookup) and
//! [`lookup_within`](NearDupLookup::lookup_within) are the simhash-only alternative: every
//! document within `k` bits.

use crate::columns::for_each_posting;
use crate::component::reader::{NearFilter, SignatureReader};
use crate::component::NearDupReader;
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use crate::id_table::{IdTables, StrColumns};
use crate::layout::check_distance;
use crate::schema::{NearDupFields, NearDupIndex, SEQUENCE_FIELD};
use crate::signature::{Evidence, Signature, DEFAULT_MAX_POSTINGS_PER_KEY};
use crate::sync::lock;
use tantivy::columnar::Column;
use tantivy::{DocAddress, ReloadPolicy, Searcher, Term};

impl NearDupIndex {
    /// tantivy's [`Searcher`] over the last commit, from a reader this index keeps (manual
    /// reload: each call reloads it, so the result reflects every commit made so far). Every
    /// search-side feature takes it: [`NearDupLookup::new`] for lookups,
    /// [`NearDupCollapse::search`](crate::NearDupCollapse::search),
    /// [`NearDupGraph::new`](crate::NearDupGraph::new),
    /// [`NearDupQuery::from_id`](crate::NearDupQuery::from_id).
    ///
    /// Cost: a reload (cheap when nothing was committed). Errors: [`Error::Tantivy`] when
    /// opening or reloading the reader fails.
    pub fn searcher(&self) -> Result<Searcher> {
        let mut guard = lock(&self.reader);
        if let Some(warmed) = guard.as_ref() {
            warmed.reload()?;
            return Ok(warmed.searcher());
        }
        let warmed = self.manual_reader()?;
        let searcher = warmed.searcher();
        *guard = Some(warmed);
        Ok(searcher)
    }

    /// A reader of this index that reloads only when asked, retrying a searcher that a merge
    /// made stale while it was opened.
    pub(crate) fn manual_reader(&self) -> Result<NearDupReader> {
        self.reader(ReloadPolicy::Manual)
    }

    /// A reader of this index ([`NearDupReader`]) whose searchers keep their segments'
    /// component files readable while they live: use it instead of
    /// `index.index().reader_builder()` when a searcher may outlive merges (a searcher of a
    /// plain tantivy reader fails its lookups with [`Error::OldFormat`]'s "has no
    /// near-duplicate file" once a merge deleted its segments). `policy` is tantivy's: with
    /// `OnCommitWithDelay` tantivy reloads on its own thread after each commit.
    ///
    /// Cost: opening each segment's component file (a few microseconds each) now and at each
    /// reload. Errors: [`Error::Tantivy`] when tantivy cannot open the reader or a component
    /// file cannot be opened ([`Error::DamagedFile`] for a damaged one).
    pub fn reader(&self, policy: ReloadPolicy) -> Result<NearDupReader> {
        Ok(NearDupReader::open(&self.warmer, || {
            self.index.reader_builder().reload_policy(policy)
        })?)
    }

    /// A [`NearDupLookup`] over [`searcher`](Self::searcher): lookups on the last commit.
    /// Cost: a reload and opening each segment's columns; keep it for many lookups.
    /// Errors: those of [`searcher`](Self::searcher) and [`NearDupLookup::new`].
    pub fn lookups(&self) -> Result<NearDupLookup> {
        self.lookups_of(&self.searcher()?)
    }

    /// A [`NearDupLookup`] over `searcher`, a searcher of one of this index's readers: it takes
    /// the component files the warmer opened for it and reads ids through the warmer's tables
    /// (shared with every searcher and consumer of this index).
    pub(crate) fn lookups_of(&self, searcher: &Searcher) -> Result<NearDupLookup> {
        let files = self.warmer.files_of(searcher);
        NearDupLookup::open(self.fields, searcher, files, self.warmer.id_tables())
    }

    /// The string tables this index's consumers share (owned by its readers' warmer).
    pub(crate) fn id_tables(&self) -> &IdTables {
        self.warmer.id_tables()
    }

    /// The documents of the last commit that the index's rule matches with `text` (signed with
    /// the index's scheme and rule: [`sign`](Self::sign)), strongest evidence first: see
    /// [`NearDupLookup::lookup_signature`]. Cost: [`lookups`](Self::lookups), one analysis
    /// and the lookup; for many texts keep a [`NearDupLookup`] and a
    /// [`Signer`](crate::Signer). Errors: those of [`lookups`](Self::lookups) and of the
    /// lookup.
    pub fn lookup_text(&self, text: &str) -> Result<Vec<NearDup>> {
        self.lookups()?.lookup_signature(&self.sign(text))
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
    /// ([`NearDupLookup::lookup_within`]) always give [`Evidence::Simhash`].
    pub evidence: Evidence,
    /// The document's fingerprint.
    pub fingerprint: Fingerprint,
    /// Where the document is in the searcher it was found with.
    pub address: DocAddress,
}

/// A document [`NearDupLookup::for_each_match`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FingerprintMatch {
    /// Where the document is in the searcher.
    pub address: DocAddress,
    /// The Hamming distance to the query fingerprint.
    pub distance: u32,
    /// The document's fingerprint.
    pub fingerprint: Fingerprint,
}

/// One segment's sequence column, opened once per searcher. (The id and replaced-id postings
/// are opened when read: opening a field's term dictionary reads its block index, and tantivy's
/// segment reader keeps it once opened.)
struct SegmentIdColumns {
    sequences: Option<Column<u64>>,
}

/// Lookups over a tantivy [`Searcher`]: each segment's fingerprint, id and signature columns
/// and key postings opened once, so a lookup reads only postings and column values. Make one per
/// reload and reuse it.
pub struct NearDupLookup {
    fields: NearDupFields,
    searcher: Searcher,
    segments: Vec<SegmentIdColumns>,
    /// The id, group ([`Policy::Tag`](crate::Policy::Tag)) and replaced-id columns, read through
    /// `id_tables` ([`crate::id_table`]).
    ids: StrColumns,
    groups: StrColumns,
    replaced: StrColumns,
    signatures: SignatureReader,
    /// The string tables the columns are read through: the index's warmer's when made by
    /// [`NearDupIndex::lookups`], else this handle's own.
    id_tables: IdTables,
    max_postings_per_key: usize,
}

impl NearDupLookup {
    /// Opens the columns of every segment of `searcher` (a clone of it is kept, so its segments
    /// stay readable while this lives).
    ///
    /// Cost: a few microseconds per segment. Errors: [`Error::Tantivy`] when opening a column
    /// fails;
    /// [`Error::Schema`] when the searcher's schema lacks a field of `fields` (a searcher of
    /// another index).
    pub fn new(fields: NearDupFields, searcher: &Searcher) -> Result<Self> {
        NearDupLookup::open(fields, searcher, None, &IdTables::default())
    }

    /// [`new`](Self::new), with the searcher's component files when they are open already,
    /// reading string columns through `id_tables`.
    fn open(
        fields: NearDupFields,
        searcher: &Searcher,
        files: Option<Vec<crate::component::ComponentFile>>,
        id_tables: &IdTables,
    ) -> Result<Self> {
        let mut segments = Vec::with_capacity(searcher.segment_readers().len());
        for seg in searcher.segment_readers() {
            let ff = seg.fast_fields();
            segments.push(SegmentIdColumns {
                sequences: match fields.sequence {
                    Some(_) => Some(ff.u64(SEQUENCE_FIELD)?),
                    None => None,
                },
            });
        }
        let signatures = match files {
            Some(files) => SignatureReader::from_files(searcher, files),
            None => SignatureReader::new(searcher, fields.rule())?,
        };
        let ids = StrColumns::open(searcher, Some(fields.id), id_tables)?;
        let groups = StrColumns::open(searcher, fields.group, id_tables)?;
        let replaced = StrColumns::open(searcher, fields.replaced, id_tables)?;
        Ok(NearDupLookup {
            fields,
            searcher: searcher.clone(),
            segments,
            ids,
            groups,
            replaced,
            signatures,
            id_tables: id_tables.clone(),
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

    /// Verifies the checksum of every segment's near-duplicate file (one per segment, written
    /// by [`NearDupComponent`](crate::NearDupComponent)): opening checks only each file's
    /// structure, so a changed signature or table entry is found here (and by every merge,
    /// which verifies its sources) rather than giving wrong matches. Cost: a read of every
    /// component file, segment by segment. Errors: [`Error::DamagedFile`] naming the first
    /// damaged file.
    ///
    /// ```
    /// # use tantivy_simhash::{NearDupConfig, NearDupIndex};
    /// # let index = NearDupIndex::create_in_ram(NearDupConfig::new("id", ["body"]))?;
    /// index.lookups()?.verify_checksums()?;
    /// # Ok::<(), tantivy_simhash::Error>(())
    /// ```
    pub fn verify_checksums(&self) -> Result<()> {
        self.signatures
            .segments()
            .iter()
            .try_for_each(|segment| segment.verify_checksum())
    }

    /// The signatures and key tables of every segment, for lookups with an explicit
    /// bound that count their work ([`SignatureReader::for_each_match`]). Cost: none (a
    /// reference).
    pub(crate) fn signature_reader(&self) -> &SignatureReader {
        &self.signatures
    }

    /// The string tables this handle reads ids through (for the writer's reads of the same
    /// searcher). Cost: none.
    pub(crate) fn id_tables(&self) -> &IdTables {
        &self.id_tables
    }

    /// Every live document that the index's [`MatchRule`](crate::MatchRule) matches with
    /// `signature`, strongest evidence first ([`Evidence::cmp_strength`]: simhash matches nearest
    /// first, then resemblance matches most resembling first), ties by id. Exactly the documents a
    /// brute-force scan with [`MatchRule::matches`](crate::MatchRule::matches) finds (every match
    /// shares a key), unless a key is hot
    /// ([`with_max_postings_per_key`](Self::with_max_postings_per_key)). Cost: per segment and key
    /// of the rule (16 by default), a probe of the segment's sorted table in its component file
    /// (a directory read and a short binary search); one
    /// fingerprint read per candidate, sketch reads only for candidates that share a band; then one
    /// id read per match (see [`lookup_signature_addresses`](Self::lookup_signature_addresses) to
    /// skip it). Errors: [`Error::Tantivy`] when reading postings or columns fails, [`Error::Io`]
    /// when reading an id from the id column's dictionary fails. A matching document with no id is
    /// reported with an empty `id`.
    pub fn lookup_signature(&self, signature: &Signature) -> Result<Vec<NearDup>> {
        let mut found = Vec::new();
        self.signatures.for_each_match(
            self.fields.rule(),
            signature,
            self.max_postings_per_key,
            |m| found.push((m.address, m.evidence, m.signature.fingerprint)),
        )?;
        let mut hits = Vec::with_capacity(found.len());
        for (address, evidence, fingerprint) in found {
            hits.push(NearDup {
                id: self.id_of(address)?.unwrap_or_default(),
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

    /// Like [`lookup_signature`](Self::lookup_signature) without reading ids: `(address,
    /// evidence)`, strongest first, ties by address. Cost: that of
    /// [`lookup_signature`](Self::lookup_signature) without the id reads. Errors:
    /// [`Error::Tantivy`] when reading postings or columns fails.
    pub fn lookup_signature_addresses(
        &self,
        signature: &Signature,
    ) -> Result<Vec<(DocAddress, Evidence)>> {
        let mut out = Vec::new();
        self.signatures.for_each_match(
            self.fields.rule(),
            signature,
            self.max_postings_per_key,
            |m| out.push((m.address, m.evidence)),
        )?;
        out.sort_by(|a, b| a.1.cmp_strength(&b.1).then(a.0.cmp(&b.0)));
        Ok(out)
    }

    /// The stored signature of the document at `address`, if it has one (`None` also for an
    /// address outside this searcher). Cost: one read per signature column (33 by default).
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

    /// **Simhash-only**: every live document within the layout's `k` of `fp` (inclusive), nearest
    /// first (ties by id). A fingerprint has no sketch, so the rule's resemblance branch cannot be
    /// evaluated: use [`NearDupIndex::lookup_text`], [`lookup_id`](Self::lookup_id) or
    /// [`lookup_signature`](Self::lookup_signature) for the rule. No bound on hot keys applies
    /// (every holder of a key is read). Cost: per segment and block key, a probe of the segment's
    /// sorted table; one fingerprint read per candidate; then one id read per match (see
    /// [`lookup_addresses`](Self::lookup_addresses) to skip it, and [`id_of`](Self::id_of) for its
    /// cost). Measured in docs/PERFORMANCE.md. Errors: [`Error::Tantivy`] when reading postings or
    /// columns fails, [`Error::Io`] when reading an id from the id column's dictionary fails. A
    /// matching document with no id is reported with an empty `id`.
    pub fn lookup(&self, fp: Fingerprint) -> Result<Vec<NearDup>> {
        self.lookup_within(fp, self.fields.layout().max_distance())
    }

    /// Like [`lookup`](Self::lookup) with `max_distance` instead of the layout's `k`.
    ///
    /// Cost as [`lookup`](Self::lookup). Errors with [`Error::InvalidConfig`] when
    /// `max_distance` exceeds the layout's `k` (the keys could not guarantee to find every
    /// match); [`Error::Tantivy`] when reading postings or
    /// columns fails, [`Error::Io`] when reading an id from the id column's dictionary fails.
    pub fn lookup_within(&self, fp: Fingerprint, max_distance: u32) -> Result<Vec<NearDup>> {
        let mut out = Vec::new();
        self.for_each_match(fp, max_distance, |m| out.push(m))?;
        let mut hits = Vec::with_capacity(out.len());
        for m in out {
            hits.push(NearDup {
                id: self.id_of(m.address)?.unwrap_or_default(),
                distance: m.distance,
                evidence: Evidence::Simhash {
                    distance: m.distance,
                },
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
    /// need only addresses, counts or a few ids ([`NearDupLookup::id_of`]). Errors as
    /// [`lookup_within`](Self::lookup_within).
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

    /// The documents the index's rule matches with the live document with id `id` (itself
    /// included, at distance 0), by its stored signature: see
    /// [`lookup_signature`](Self::lookup_signature). A document added with only a fingerprint
    /// (no sketch) matches by the simhash branch only. Cost: [`signature_of_id`](Self::signature_of_id)
    /// and [`lookup_signature`](Self::lookup_signature). Errors with [`Error::Document`] when no
    /// live document has that id; [`Error::Tantivy`] when reading postings or
    /// columns fails, [`Error::Io`] when reading an id from the id column's dictionary fails.
    pub fn lookup_id(&self, id: &str) -> Result<Vec<NearDup>> {
        let signature = self.signature_of_id(id)?.ok_or_else(|| {
            Error::Document(format!("no live document has id `{id}` in this searcher"))
        })?;
        self.lookup_signature(&signature)
    }

    /// The stored signature of the first live document with id `id` (with a fingerprint), if
    /// any. Cost: [`address_of_id`](Self::address_of_id), then one read per signature column
    /// (33 by default). Errors as [`address_of_id`](Self::address_of_id).
    pub fn signature_of_id(&self, id: &str) -> Result<Option<Signature>> {
        Ok(self
            .address_of_id(id)?
            .and_then(|address| self.signature_at(address)))
    }

    /// The address of the first live document with id `id` (with a fingerprint), if any, in
    /// segment order. Cost: per segment, one term look-up in the id field's postings and a
    /// fingerprint read per posting (one, ids being unique). Errors: [`Error::Tantivy`] when
    /// reading the postings fails.
    pub fn address_of_id(&self, id: &str) -> Result<Option<DocAddress>> {
        let term = Term::from_field_text(self.fields.id, id);
        for (ord, seg) in self.searcher.segment_readers().iter().enumerate() {
            let signatures = self.signatures.segment(ord as u32);
            let mut found = None;
            for_each_posting(&*seg.inverted_index(self.fields.id)?, &term, |doc| {
                let signed = signatures.is_some_and(|s| s.fingerprint(doc).is_some());
                if found.is_none() && !seg.is_deleted(doc) && signed {
                    found = Some(doc);
                }
            })?;
            if let Some(doc) = found {
                return Ok(Some(DocAddress::new(ord as u32, doc)));
            }
        }
        Ok(None)
    }

    /// The fingerprint of the first live document with id `id` (with a fingerprint), if any:
    /// [`address_of_id`](Self::address_of_id) and one column read. Cost and errors as
    /// [`address_of_id`](Self::address_of_id).
    pub fn fingerprint_of_id(&self, id: &str) -> Result<Option<Fingerprint>> {
        Ok(self.address_of_id(id)?.and_then(|address| {
            self.signatures
                .segment(address.segment_ord)?
                .fingerprint(address.doc_id)
        }))
    }

    /// The id of the document at `address`, read from the id column; `None` when the address
    /// is not in this searcher or the document has no id. Errors: [`Error::Io`] when
    /// reading the id column's dictionary fails.
    ///
    /// Cost: once the segment has served `max(32, ids / 1024)` id reads, one column read and a
    /// copy, from the segment's id table (its ids decoded once, about their bytes + 8 B each
    /// in memory; building it streams the dictionary once). Before that, each read
    /// decompresses a block of the id column's dictionary (~13 us), so a one-off lookup never
    /// pays the build. Who shares a table: a handle from [`NearDupIndex::lookups`] shares it
    /// with every searcher and consumer of that [`NearDupIndex`] while a live searcher holds
    /// the segment (its readers' warmer owns the tables); one from [`new`](Self::new) keeps
    /// its own, freed with it.
    pub fn id_of(&self, address: DocAddress) -> Result<Option<String>> {
        self.ids.first(address)
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

    /// Whether a live document records that it replaced `id` under
    /// [`Policy::Replace`](crate::Policy::Replace) (directly, or through a document it replaced):
    /// an input with this id was already handled, and adding it again would bring back a copy a
    /// newer document replaced. Always `false` on indexes without [`REPLACED_FIELD`](crate::schema::REPLACED_FIELD). Cost: per
    /// segment, one term look-up in the replaced field's postings and a delete check per posting.
    /// Errors: [`Error::Tantivy`] when reading the postings fails.
    pub fn is_replaced(&self, id: &str) -> Result<bool> {
        let Some(field) = self.fields.replaced else {
            return Ok(false);
        };
        let term = Term::from_field_text(field, id);
        for seg in self.searcher.segment_readers() {
            let mut live = false;
            for_each_posting(&*seg.inverted_index(field)?, &term, |doc| {
                live |= !seg.is_deleted(doc)
            })?;
            if live {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The ids a document records as replaced ([`REPLACED_FIELD`](crate::schema::REPLACED_FIELD)).
    pub(crate) fn replaced_ids_of(&self, address: DocAddress) -> Result<Vec<String>> {
        self.replaced.all(address)
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

    /// The group of the document at `address` (under [`Policy::Tag`](crate::Policy::Tag)), read
    /// from the group column through the string tables ids are read through; `None` without a
    /// group field or value. Cost and errors as [`id_of`](Self::id_of).
    pub fn group_of(&self, address: DocAddress) -> Result<Option<String>> {
        self.groups.first(address)
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
        let keys = layout.keys(fp);
        let near = NearFilter::new(layout, fp, max_distance);
        self.signatures.touch_runs(&keys);
        for ord in 0..self.segments.len() {
            let Some(signatures) = self.signatures.segment(ord as u32) else {
                continue;
            };
            let visit = |combo: usize, doc| {
                if let Some(other) = signatures.fingerprint(doc) {
                    let d = fp.distance(other);
                    // A document sharing several keys is reported under the first only.
                    if d <= max_distance && layout.first_shared_key(fp, other) == Some(combo) {
                        f(FingerprintMatch {
                            address: DocAddress::new(ord as u32, doc),
                            distance: d,
                            fingerprint: other,
                        });
                    }
                }
            };
            self.signatures
                .for_each_key_doc(ord, &keys, usize::MAX, &near, visit)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NearDupConfig, Policy};
    use tantivy::doc;

    /// An index of `segments` committed segments of 40 documents each (ids `d{s}-{i}`), its
    /// writer dropped.
    fn index_of_segments(segments: usize) -> NearDupIndex {
        let index = NearDupIndex::create_in_ram(NearDupConfig::new("id", ["body"])).unwrap();
        let (id, body) = (index.field("id").unwrap(), index.field("body").unwrap());
        let mut writer = index
            .writer_with_num_threads(1, 20_000_000, Policy::Off)
            .unwrap();
        for s in 0..segments {
            for i in 0..40 {
                let text = format!(
                    "document {i} of segment {s}, with words of its own {}",
                    i * 7
                );
                writer
                    .add_document(doc!(id => format!("d{s}-{i}"), body => text))
                    .unwrap();
            }
            writer.commit().unwrap();
        }
        index
    }

    /// Reads the id of document 0 of every segment 32 times (the threshold of 40-id segments).
    fn read_ids(lookups: &NearDupLookup, reads: usize) {
        for (ord, segment) in lookups.searcher().segment_readers().iter().enumerate() {
            for _ in 0..reads {
                let id = lookups.id_of(DocAddress::new(ord as u32, 0)).unwrap();
                assert!(
                    id.is_some_and(|id| id.starts_with('d')),
                    "{ord} {segment:?}"
                );
            }
        }
    }

    fn built(index: &NearDupIndex, searcher: &Searcher) -> Vec<bool> {
        searcher
            .segment_readers()
            .iter()
            .map(|s| index.id_tables().column(s.segment_id(), "id").1.is_built())
            .collect()
    }

    /// Two lookup handles of one reader's searcher share each segment's id table: half the
    /// threshold's reads through each build it. Handles made with `NearDupLookup::new` read
    /// through tables of their own and build none of the index's.
    #[test]
    fn lookups_of_one_index_share_id_tables_and_bare_ones_do_not() {
        let index = index_of_segments(2);
        let searcher = index.searcher().unwrap();
        let bare = NearDupLookup::new(index.fields(), &searcher).unwrap();
        read_ids(&bare, 64);
        assert_eq!(built(&index, &searcher), [false, false]);
        let a = index.lookups().unwrap();
        let b = index.lookups().unwrap();
        read_ids(&a, 16);
        assert_eq!(built(&index, &searcher), [false, false]);
        read_ids(&b, 16);
        assert_eq!(built(&index, &searcher), [true, true]);
    }

    /// After a merge and a reload, the warmer's garbage collection of the old generation frees
    /// the merged-away segments' tables: the index holds tables of the new searcher's segment
    /// only, not built yet, and lookups on it give the same ids.
    #[test]
    fn a_reload_after_a_merge_drops_the_old_segments_tables() {
        let index = index_of_segments(3);
        let old = index.searcher().unwrap();
        let lookups = index.lookups().unwrap();
        read_ids(&lookups, 32);
        assert_eq!(built(&index, &old), [true, true, true]);
        let old_ids: Vec<_> = old
            .segment_readers()
            .iter()
            .map(|s| s.segment_id())
            .collect();
        drop((lookups, old));

        let mut writer: tantivy::IndexWriter = index
            .index()
            .writer_with_num_threads(1, 20_000_000)
            .unwrap();
        writer.merge(&old_ids).wait().unwrap();
        drop(writer);
        let fresh = index.searcher().unwrap();
        assert_eq!(fresh.segment_readers().len(), 1);
        lock(&index.reader)
            .as_ref()
            .unwrap()
            .collect_garbage(&[fresh.generation()]);
        assert_eq!(
            index.id_tables().held_segments(),
            1,
            "the old segments are held"
        );
        assert_eq!(built(&index, &fresh), [false]);
        let lookups = index.lookups().unwrap();
        let mut ids: Vec<String> = (0..fresh.segment_reader(0).max_doc())
            .filter_map(|doc| lookups.id_of(DocAddress::new(0, doc)).unwrap())
            .collect();
        ids.sort();
        assert_eq!(ids.len(), 120);
        assert_eq!(ids.first().map(String::as_str), Some("d0-0"));
        assert_eq!(built(&index, &fresh), [true]);
    }
}
