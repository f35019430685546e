//! [`PairJoin`]: the streaming join's public face (pairs with ids or addresses; its clusters
//! are in `clusters.rs`).

use super::found::Found;
use super::join;
use crate::batch::{DocPair, IdPair, ID_BATCH_PAIRS};
use crate::columns::{field_name, read_strs};
use crate::component::reader::SegmentSignatures;
use crate::error::{Error, Result};
use crate::schema::NearDupFields;
use crate::signature::{MatchRule, PairStats};
use tantivy::columnar::StrColumn;
use tantivy::{DocAddress, Searcher};

/// Every pair of a searcher's live documents that the index's match rule matches, streamed
/// from the segments' sorted key tables, with user ids or addresses.
///
/// Unlike [`NearDupGraph`](crate::batch::NearDupGraph) it holds no signature: memory is one merge
/// step per thread, the pairs of a window of tasks, and what the caller keeps. The output order is
/// a function of the index (its segments and their documents): pairs come by key position, then by
/// key value within it; two indexes of the same documents in other segments list the same pairs in
/// another order (sort them for bytes that do not depend on it).
///
/// ```
/// use tantivy::schema::{Schema, FAST, STORED, STRING};
/// use tantivy::{doc, Index};
/// use tantivy_simhash::PairJoin;
/// use tantivy_simhash::{Fingerprint, NearDupConfig, NearDupIndex, Policy};
///
/// let config = NearDupConfig::new("id", Vec::<String>::new());
/// let mut builder = Schema::builder();
/// let id = builder.add_text_field("id", STRING | FAST | STORED);
/// config.add_fields(&mut builder);
/// let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config)?;
/// let mut writer = index.writer(50_000_000, Policy::Off)?;
/// for (name, fp) in [("a", 0xff00u64), ("b", 0xff01), ("c", 0xff00), ("d", 0x1234_5678_9abc)] {
///     writer.add_document_with_fingerprint(doc!(id => name), Fingerprint(fp))?;
/// }
/// writer.commit()?;
///
/// let join = PairJoin::new(index.fields(), &index.searcher()?)?;
/// let mut pairs = Vec::new();
/// let stats = join.for_each_id_pair(|p| {
///     pairs.push((p.a.min(p.b).to_string(), p.a.max(p.b).to_string(), p.evidence.distance()))
/// })?;
/// pairs.sort();
/// assert_eq!(pairs, [("a".into(), "b".into(), 1), ("a".into(), "c".into(), 0), ("b".into(), "c".into(), 1)]);
/// assert_eq!(stats.hot_keys, 0);
/// # Ok::<(), tantivy_simhash::Error>(())
/// ```
pub struct PairJoin {
    pub(super) searcher: Searcher,
    pub(super) rule: MatchRule,
    pub(super) max_distance: u32,
    pub(super) max_postings_per_key: usize,
    pub(super) segments: Vec<SegmentSignatures>,
    pub(super) ids: Vec<Option<StrColumn>>,
    /// The name of the sequence field (the order documents were added), if the index has one.
    pub(super) sequence: Option<String>,
    /// [`min_resemblance`](Self::min_resemblance), if set.
    pub(super) min_resemblance: Option<f32>,
}

impl std::fmt::Debug for PairJoin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PairJoin")
            .field("segments", &self.segments.len())
            .field("max_distance", &self.max_distance)
            .field("max_postings_per_key", &self.max_postings_per_key)
            .finish_non_exhaustive()
    }
}

impl PairJoin {
    /// The join of `searcher`'s live documents by the index's rule. Cost: opening each
    /// segment's component file (a structure check, no document read) and its id column.
    /// Errors: [`Error::OldFormat`](crate::Error::OldFormat) for a segment without the
    /// component's file, [`Error::DamagedFile`](crate::Error::DamagedFile) for one whose
    /// structure is inconsistent; [`Error::Tantivy`](crate::Error::Tantivy) when a file or an id
    /// column cannot be opened.
    pub fn new(fields: NearDupFields, searcher: &Searcher) -> Result<PairJoin> {
        PairJoin::with_max_distance(fields, searcher, fields.layout().max_distance())
    }

    /// Like [`new`](Self::new), with the rule's simhash branch narrowed to `max_distance`
    /// ([`MatchRule::matches_within`]). Errors with [`Error::InvalidConfig`] beyond the
    /// layout's `k`, and as [`new`](Self::new).
    pub fn with_max_distance(
        fields: NearDupFields,
        searcher: &Searcher,
        max_distance: u32,
    ) -> Result<PairJoin> {
        crate::layout::check_distance(fields.layout().max_distance(), max_distance)?;
        let rule = fields.rule();
        let id_name = field_name(searcher.schema(), fields.id)?.to_string();
        let segments = searcher
            .segment_readers()
            .iter()
            .map(|s| SegmentSignatures::open(s, rule))
            .collect::<Result<Vec<_>>>()?;
        let ids = searcher
            .segment_readers()
            .iter()
            .map(|seg| seg.fast_fields().str(&id_name))
            .collect::<tantivy::Result<_>>()?;
        let sequence = fields
            .sequence
            .map(|f| searcher.schema().get_field_name(f).to_string());
        Ok(PairJoin {
            searcher: searcher.clone(),
            rule: *rule,
            max_distance,
            max_postings_per_key: crate::batch::DEFAULT_JOIN_MAX_POSTINGS_PER_KEY,
            segments,
            ids,
            sequence,
            min_resemblance: None,
        })
    }

    /// The hot-key bound (default
    /// [`DEFAULT_JOIN_MAX_POSTINGS_PER_KEY`](crate::batch::DEFAULT_JOIN_MAX_POSTINGS_PER_KEY);
    /// `usize::MAX`: exact, and quadratic on any run). A block key's run of more distinct
    /// fingerprints is split by Manku's sub-blocks (exact). A sub-block run or a band key's
    /// run still longer compares each member with the next `max_postings_per_key`, then the
    /// rest too when a quarter of those comparisons matched (a family of near-duplicates:
    /// exact, its work proportional to the pairs reported); otherwise it stops there (a
    /// template shared by unrelated documents), counted in
    /// [`PairStats::hot_keys`](crate::PairStats::hot_keys): a pair sharing only such keys may
    /// be missing.
    pub fn max_postings_per_key(mut self, max_postings_per_key: usize) -> Self {
        self.max_postings_per_key = max_postings_per_key.max(1);
        self
    }

    /// Opt-in: only the rule's pairs whose sketches estimate a resemblance of at least `min`
    /// (0 to 1), **whichever branch matched them**, in pairs and in both kinds of clusters.
    /// For a reader who counts only pairs above the rule's own threshold (0.55) as
    /// duplicates: the rule's simhash branch (within `k`, a test on weighted token counts)
    /// can match pairs whose shingles are at 0.45, and its estimate has a standard deviation
    /// of about 0.03 at 0.5 (256 bins of 4 bits), so 0.67, five deviations from both 0.5 and
    /// 0.8, keeps what a reader at 0.8 counts and drops what one at 0.5 calls a false
    /// positive. A pair with an empty sketch (a text without shingles) has no estimate and
    /// stays. The rule, its keys and the index are unchanged; the pairs left out are counted
    /// in [`PairStats::below_min_resemblance`](crate::PairStats::below_min_resemblance).
    ///
    /// Cost: a sketch read for each document of a simhash match and an estimate for each pair
    /// of distinct sketches among them (documents of one sketch are decided once), in the
    /// join's threads. Errors: [`Error::InvalidConfig`] when `min` is not a number in 0..=1.
    pub fn min_resemblance(mut self, min: f32) -> Result<Self> {
        if !(min.is_finite() && (0.0..=1.0).contains(&min)) {
            return Err(Error::InvalidConfig(format!(
                "min_resemblance = {min}; expected a number in 0..=1 (0.67 counts the pairs a \
                 reader at resemblance 0.8 counts; leave it unset for every pair of the rule)"
            )));
        }
        self.min_resemblance = Some(min);
        Ok(self)
    }

    /// The rule the pairs satisfy.
    pub fn rule(&self) -> &MatchRule {
        &self.rule
    }

    /// The distance up to which the simhash branch pairs documents (inclusive).
    pub fn max_distance(&self) -> u32 {
        self.max_distance
    }

    /// The live documents with a signature. Cost: a pass over each segment's presence bits.
    pub fn num_docs(&self) -> usize {
        let mut n = 0;
        for (ord, seg) in self.searcher.segment_readers().iter().enumerate() {
            if let Some(s) = self.segments.get(ord) {
                n += seg
                    .doc_ids_alive()
                    .filter(|&d| s.file().has_signature(d))
                    .count();
            }
        }
        n
    }

    /// Calls `f` once for every pair of live documents the rule matches, `a < b` by address,
    /// in the order of the [type docs](Self). Cost: one sequential read of every fingerprint
    /// (held, 8 bytes a document); per key position a read of every table entry and a sort of
    /// a few hundred at a time; per run of a shared key, comparisons of distinct fingerprints,
    /// and a whole signature read only for the candidates that share a band; on all of
    /// rayon's threads. Returns what the join did ([`PairStats::hot_keys`] > 0: a pair sharing
    /// only cut keys may be missing). Errors: [`Error::DamagedFile`] when a table is
    /// inconsistent.
    pub fn for_each_doc_pair(&self, mut f: impl FnMut(DocPair)) -> Result<PairStats> {
        self.join(|found| found.for_each_pair(|a, b, evidence| f(DocPair { a, b, evidence })))
    }

    /// Runs the streaming join over this join's segments and settings, handing `emit` what
    /// each task found, in task order.
    pub(super) fn join(&self, emit: impl FnMut(&Found)) -> Result<PairStats> {
        join(
            &self.segments,
            &self.searcher,
            &self.rule,
            self.max_distance,
            self.max_postings_per_key,
            self.min_resemblance,
            emit,
        )
    }

    /// Like [`for_each_doc_pair`](Self::for_each_doc_pair), with the user ids of both
    /// documents (in the same order). Ids are read in batches of about a million pairs (per
    /// segment in term order). Errors: as `for_each_doc_pair`; [`Error::Document`] when a
    /// document has no id; [`Error::Io`](crate::Error::Io) when reading ids fails.
    pub fn for_each_id_pair(&self, mut f: impl FnMut(IdPair<'_>)) -> Result<PairStats> {
        let mut pending: Vec<DocPair> = Vec::new();
        let mut failed: Option<Error> = None;
        let stats = self.for_each_doc_pair(|p| {
            if failed.is_some() {
                return;
            }
            pending.push(p);
            if pending.len() >= ID_BATCH_PAIRS {
                if let Err(e) = self.emit_ids(&pending, &mut f) {
                    failed = Some(e);
                }
                pending.clear();
            }
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        self.emit_ids(&pending, &mut f)?;
        Ok(stats)
    }

    /// The tantivy searcher the join reads (addresses refer to it).
    pub fn searcher(&self) -> &Searcher {
        &self.searcher
    }

    /// Reads the ids of the documents of `pairs` in one batch and calls `f` for each pair.
    fn emit_ids(&self, pairs: &[DocPair], f: &mut impl FnMut(IdPair<'_>)) -> Result<()> {
        let mut docs: Vec<DocAddress> = pairs.iter().flat_map(|p| [p.a, p.b]).collect();
        docs.sort_unstable();
        docs.dedup();
        let ids = read_strs(&self.ids, &docs)?;
        let id_of = |a: DocAddress| -> Result<&str> {
            let i = docs.partition_point(|&d| d < a);
            ids.get(i)
                .and_then(|id| id.as_deref())
                .ok_or_else(|| missing_id(a))
        };
        for p in pairs {
            f(IdPair {
                a: id_of(p.a)?,
                b: id_of(p.b)?,
                evidence: p.evidence,
            });
        }
        Ok(())
    }
}

pub(super) fn missing_id(a: DocAddress) -> Error {
    Error::Document(format!(
        "the document at segment {} doc {} has no id; every document needs one (add documents \
         through DedupWriter)",
        a.segment_ord, a.doc_id
    ))
}
