//! [`DedupWriter`]: tantivy's `IndexWriter` with a fingerprint per document and a [`Policy`] for
//! near-duplicates, seeing its own uncommitted documents through a pending table.

use crate::error::{Error, Result};
use crate::fingerprint::{Fingerprint, Fingerprinter};
use crate::lookup::NearDupLookup;
use crate::replay::{self, document_text, AnalyzedDocument, StagedTokens, StagingPool};
use crate::schema::NearDupIndex;
use crate::signature::{Evidence, Signature, Signer, DEFAULT_MAX_POSTINGS_PER_KEY};
use crate::sync::lock;
use rayon::prelude::*;
use std::sync::{Arc, Mutex};
use tantivy::schema::Value;
use tantivy::{IndexReader, IndexWriter, Opstamp, TantivyDocument, Term};

mod id_policy;
mod pending;

/// The longest id a [`DedupWriter`] accepts, in UTF-8 bytes: tantivy drops a longer term from
/// the id field's postings (its `MAX_TOKEN_LEN`), so such an id could never be found again and
/// every rerun would add its document anew.
pub const MAX_ID_BYTES: usize = tantivy::tokenizer::MAX_TOKEN_LEN;

mod retag;
pub use id_policy::IdPolicy;
use id_policy::{CommittedId, Taken};
use pending::{replaced_and_carried, Chain, Found, Pending, PendingDoc, Wanted};
pub use retag::GroupsWritten;

impl NearDupIndex {
    /// A [`DedupWriter`] with `memory_budget` bytes in total for tantivy's indexing threads
    /// (at least 15 MB per thread; see `Index::writer`).
    ///
    /// Cost: tantivy's writer, plus a reader of the last commit (its signature columns opened).
    /// Errors: [`Error::Schema`] for [`Policy::Tag`] without a group field; tantivy's errors
    /// (a budget too small, the index locked by another writer).
    pub fn writer(&self, memory_budget: usize, policy: Policy) -> Result<DedupWriter> {
        let writer: IndexWriter<AnalyzedDocument> = self.index.writer(memory_budget)?;
        DedupWriter::wrap(self.clone(), writer, policy)
    }

    /// A [`DedupWriter`] with `num_threads` indexing threads sharing `memory_budget` bytes.
    /// Cost and errors as [`writer`](Self::writer).
    pub fn writer_with_num_threads(
        &self,
        num_threads: usize,
        memory_budget: usize,
        policy: Policy,
    ) -> Result<DedupWriter> {
        let writer: IndexWriter<AnalyzedDocument> = self
            .index
            .writer_with_num_threads(num_threads, memory_budget)?;
        DedupWriter::wrap(self.clone(), writer, policy)
    }
}

/// What [`DedupWriter`] does with a document that has a near-duplicate among the committed
/// documents or its own uncommitted ones: a document the index's
/// [`MatchRule`](crate::MatchRule) matches (simhash within `k`, or a shared MinHash band and
/// enough estimated resemblance).
///
/// "The nearest" near-duplicate is the one with the strongest [`Evidence`]
/// ([`Evidence::cmp_strength`]: simhash matches by distance, then resemblance matches by
/// estimate), and of equally strong ones the one added first.
///
/// **Cost** per document beyond `Off` (all but `Off`): one check under the writer's lock, the
/// rule's keys looked up in every committed segment and in the pending table (each key's list
/// bounded by [`DedupWriter::max_postings_per_key`]), one fingerprint read per candidate and a
/// sketch comparison only for candidates that share a band key beyond the simhash radius; the
/// id of the nearest committed match read once. `Tag` also reads that match's group and stores
/// a group value per document; `Replace` reads every match's id and replaced ids, deletes each
/// match by id and stores the ids it replaced (a chain of replacements makes that list grow).
/// Measured figures: docs/PERFORMANCE.md, "Indexing".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Policy {
    /// Only store signatures and keys; no lookup. The fastest.
    Off,
    /// Skip the document: it is not added.
    #[default]
    Reject,
    /// Add it, and store in the group field the group of its nearest near-duplicate (a
    /// document without near-duplicates starts a group named by its own id). Adding the same
    /// documents in the same order gives the same groups, whatever the number of indexing
    /// threads and however they split the segments (as long as no key is hot: see
    /// [`DEFAULT_MAX_POSTINGS_PER_KEY`]).
    Tag,
    /// Add it and delete every near-duplicate (by id): the newer document replaces the older.
    /// It records the ids it replaced (with those its victims had replaced) in
    /// [`REPLACED_FIELD`](crate::schema::REPLACED_FIELD), so a rerun over the same input can skip them
    /// ([`NearDupLookup::is_replaced`]) instead of bringing the old copies back. The
    /// near-duplicates are every live document the rule matches, committed or not, so the
    /// same documents are kept whether and where commits fall, as long as no key has more
    /// live holders than [`DedupWriter::max_postings_per_key`] (replaced ones do not count;
    /// see [`DEFAULT_MAX_POSTINGS_PER_KEY`]).
    Replace,
}

impl Policy {
    /// The policies in the order front ends list them.
    pub const ALL: [Policy; 4] = [Policy::Tag, Policy::Reject, Policy::Replace, Policy::Off];

    /// The policy's name: `off`, `reject`, `tag` or `replace`.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Off => "off",
            Policy::Reject => "reject",
            Policy::Tag => "tag",
            Policy::Replace => "replace",
        }
    }

    /// The policy named `name` (as [`name`](Self::name) gives it, in any case), if any.
    pub fn from_name(name: &str) -> Option<Policy> {
        Policy::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }
}

/// Why [`Policy::Tag`] needs the group field (the start of its error message).
const TAG_NEEDS_GROUP: &str = "Policy::Tag stores each document's group in";

/// What happened to a document given to [`DedupWriter`].
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Added; no near-duplicate (or [`Policy::Off`]).
    Added {
        /// Its fingerprint.
        fingerprint: Fingerprint,
    },
    /// Not added ([`Policy::Reject`]): `of` is its nearest near-duplicate.
    Duplicate {
        /// The id of the nearest near-duplicate.
        of: String,
        /// Why it matches: the simhash distance, and for a resemblance match the estimate.
        evidence: Evidence,
        /// The rejected document's fingerprint.
        fingerprint: Fingerprint,
    },
    /// Added in an existing group ([`Policy::Tag`]).
    Tagged {
        /// The group: the id of the first document of the group.
        group: String,
        /// The id of the nearest near-duplicate.
        of: String,
        /// Why it matches the nearest.
        evidence: Evidence,
        /// The document's fingerprint.
        fingerprint: Fingerprint,
    },
    /// Added, and its near-duplicates deleted ([`Policy::Replace`]).
    Replaced {
        /// The ids of the deleted documents, nearest first.
        replaced: Vec<String>,
        /// Why the nearest matches.
        evidence: Evidence,
        /// The document's fingerprint.
        fingerprint: Fingerprint,
    },
    /// Not added, not signed ([`IdPolicy::KeepFirst`]): the id is taken.
    IdTaken {
        /// The id, which a live document has (`replaced == false`) or a live document records
        /// that it replaced under [`Policy::Replace`] (`replaced == true`).
        id: String,
        /// Whether the id is taken as a replaced one.
        replaced: bool,
    },
}

impl Outcome {
    /// The document's fingerprint; `None` for [`Outcome::IdTaken`] (such a document is not
    /// signed).
    pub fn fingerprint(&self) -> Option<Fingerprint> {
        match self {
            Outcome::Added { fingerprint }
            | Outcome::Duplicate { fingerprint, .. }
            | Outcome::Tagged { fingerprint, .. }
            | Outcome::Replaced { fingerprint, .. } => Some(*fingerprint),
            Outcome::IdTaken { .. } => None,
        }
    }

    /// Why the document matched its nearest near-duplicate; `None` for [`Outcome::Added`] and
    /// [`Outcome::IdTaken`].
    pub fn evidence(&self) -> Option<Evidence> {
        match self {
            Outcome::Added { .. } | Outcome::IdTaken { .. } => None,
            Outcome::Duplicate { evidence, .. }
            | Outcome::Tagged { evidence, .. }
            | Outcome::Replaced { evidence, .. } => Some(*evidence),
        }
    }

    /// Whether the document was added to the index.
    pub fn is_added(&self) -> bool {
        !matches!(self, Outcome::Duplicate { .. } | Outcome::IdTaken { .. })
    }
}

/// Wraps tantivy's [`IndexWriter`]: signs each document (fingerprint and sketch), adds its
/// signature and the rule's keys, and applies a [`Policy`] to the documents the index's
/// [`MatchRule`](crate::MatchRule) matches, with tantivy's method names.
///
/// It sees the committed index (as of its last commit) and its own uncommitted documents (a
/// pending table indexed by the rule's keys, holding their signatures), so a near-duplicate of
/// a document added a moment ago is caught before any commit. The check and the insertion are
/// one atomic step under a lock: with several threads adding at once under [`Policy::Reject`],
/// no two stored documents match. The signing itself (the expensive part) runs outside the
/// lock.
///
/// **Cost per check**: the rule's keys (16 by default) looked up per committed segment and in
/// the pending table, each read up to [`max_postings_per_key`](Self::max_postings_per_key)
/// candidates (hot keys: see [`DEFAULT_MAX_POSTINGS_PER_KEY`], which also says what the bound
/// costs in recall); one fingerprint read per candidate, sketch reads only for candidates that
/// share a band. [`candidates_verified`](Self::candidates_verified) counts the work.
///
/// **Memory** besides tantivy's: the pending table (the uncommitted documents' signatures, keys
/// and ids), and under `Reject`, `Tag` and `Replace` copies of the signatures of the committed
/// segments its checks read most (a segment is copied once it has served `max(64, docs / 8)`
/// candidates; 265 B per document under the default rule, at most 256 MiB per writer; beyond
/// that, segments are read from their columns, with the same results).
///
/// Documents deleted through [`DedupWriter::delete_term`] on the id field stop matching at
/// once; deletes on other fields (or through the inner writer) are seen after the next commit.
/// Dropping the writer without committing loses the uncommitted documents (tantivy's contract);
/// the committed index stays readable and correct.
pub struct DedupWriter {
    index: NearDupIndex,
    writer: IndexWriter<AnalyzedDocument>,
    policy: Policy,
    id_policy: IdPolicy,
    reader: IndexReader,
    /// The index as of the last commit (replaced only by `commit`, which takes `&mut self`, so
    /// it is read outside the lock).
    searcher: NearDupLookup,
    pending: Mutex<Pending>,
    fingerprinters: Mutex<Vec<Fingerprinter>>,
    signers: Mutex<Vec<Signer>>,
    /// Buffers of the tokens the signers stage for tantivy, back from the documents tantivy
    /// has indexed ([`crate::replay`]).
    staging: Arc<StagingPool>,
    payload: String,
    /// The scheme's analysis, as staged tokens name it.
    analysis: u64,
}

impl DedupWriter {
    /// Wraps an existing tantivy writer of `index` (made with
    /// `index.index().writer::<AnalyzedDocument>(..)`).
    ///
    /// Cost: opens a reader of the last commit and its signature columns, and reads the largest
    /// sequence number (one column scan per segment). Errors: [`Error::Schema`] for
    /// [`Policy::Tag`] without a group field; tantivy's errors opening the reader.
    pub fn wrap(
        index: NearDupIndex,
        writer: IndexWriter<AnalyzedDocument>,
        policy: Policy,
    ) -> Result<Self> {
        if policy == Policy::Tag {
            index.fields.require_group(TAG_NEEDS_GROUP)?;
        }
        let reader = index.manual_reader()?;
        let searcher = NearDupLookup::new(index.fields, &reader.searcher())?;
        let next_sequence = searcher.max_sequence().map_or(0, |m| m.saturating_add(1));
        let payload = index.config.record().to_json()?;
        let analysis = replay::analysis_id(index.scheme());
        let mut pending = Pending::new(next_sequence, DEFAULT_MAX_POSTINGS_PER_KEY);
        pending.follow(&searcher)?;
        Ok(DedupWriter {
            index,
            writer,
            policy,
            id_policy: IdPolicy::Off,
            reader,
            searcher,
            pending: Mutex::new(pending),
            fingerprinters: Mutex::new(Vec::new()),
            signers: Mutex::new(Vec::new()),
            staging: Arc::default(),
            payload,
            analysis,
        })
    }

    /// The policy.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Changes the policy for the documents added from now on. Errors: [`Error::Schema`] for
    /// [`Policy::Tag`] without a group field (the policy is then unchanged).
    pub fn set_policy(&mut self, policy: Policy) -> Result<()> {
        if policy == Policy::Tag {
            self.index.fields.require_group(TAG_NEEDS_GROUP)?;
        }
        self.policy = policy;
        Ok(())
    }

    /// The id policy ([`IdPolicy::Off`] unless set).
    pub fn id_policy(&self) -> IdPolicy {
        self.id_policy
    }

    /// Sets what the writer does with documents whose id is taken, from the next document on
    /// (ids added earlier since the last commit count as taken: the writer keeps them under
    /// every id policy).
    pub fn set_id_policy(&mut self, id_policy: IdPolicy) {
        self.id_policy = id_policy;
    }

    /// The writer with `id_policy` ([`set_id_policy`](Self::set_id_policy)), for chaining
    /// after [`NearDupIndex::writer`].
    pub fn with_id_policy(mut self, id_policy: IdPolicy) -> Self {
        self.id_policy = id_policy;
        self
    }

    /// The old versions deleted by [`IdPolicy::Replace`] over the writer's life (one per added
    /// document whose id was taken; rolled back ones included).
    pub fn ids_replaced(&self) -> u64 {
        lock(&self.pending).ids_replaced
    }

    /// The bound on candidates read per key in each check (per committed segment and in the
    /// pending table); [`DEFAULT_MAX_POSTINGS_PER_KEY`] unless set. Cost: takes the writer's
    /// lock; cannot fail.
    pub fn max_postings_per_key(&self) -> usize {
        lock(&self.pending).max_postings_per_key
    }

    /// Sets the bound on candidates read per key (at least 1; `usize::MAX` is exact: every
    /// match the rule finds, at a cost that grows with the largest postings list). It applies
    /// to the checks from now on; the pending table's lists keep what they hold, and grow up to
    /// the new bound. Cost: takes the writer's lock; cannot fail (0 is taken as 1).
    pub fn set_max_postings_per_key(&mut self, max_postings_per_key: usize) {
        lock(&self.pending).max_postings_per_key = max_postings_per_key.max(1);
    }

    /// Candidates verified by the near-duplicate checks so far (committed and pending), over
    /// the writer's life: the work [`max_postings_per_key`](Self::max_postings_per_key) bounds
    /// (at most keys x bound x (committed segments + 1) per check). Cost: takes the writer's
    /// lock; cannot fail.
    pub fn candidates_verified(&self) -> u64 {
        lock(&self.pending).verified
    }

    /// The near-duplicate index. Cost: none; cannot fail.
    pub fn index(&self) -> &NearDupIndex {
        &self.index
    }

    /// The inner tantivy writer. Documents added through it directly get no fingerprint and are
    /// not checked; a commit through it records no payload (the record file remains). It takes
    /// [`AnalyzedDocument`]s: `TantivyDocument::into()` converts a plain one. Cost: none;
    /// cannot fail.
    pub fn index_writer(&self) -> &IndexWriter<AnalyzedDocument> {
        &self.writer
    }

    /// The inner tantivy writer, mutably (for example to set a merge policy). Cost: none;
    /// cannot fail.
    pub fn index_writer_mut(&mut self) -> &mut IndexWriter<AnalyzedDocument> {
        &mut self.writer
    }

    /// Signs `doc` from the configured text fields, then adds it under the id policy and the
    /// near-duplicate policy, which decides by the index's [`MatchRule`](crate::MatchRule).
    ///
    /// Errors: [`Error::Document`] when the document has no id, an id longer than
    /// [`MAX_ID_BYTES`], or already carries fingerprint, sketch or key values;
    /// [`Error::IdTaken`] under [`IdPolicy::Report`]; tantivy errors from
    /// the lookup or the writer. Nothing is written when it fails.
    ///
    /// The text is analysed once: the tokens of the signature are the tokens tantivy indexes
    /// for the fingerprinted text fields indexed with the scheme's analyzer
    /// ([`crate::replay`]; [`NearDupIndex::analysis_counts`] counts them). Other indexed text
    /// fields are analysed by tantivy as usual; a fingerprinted field tantivy does not index
    /// with that analyzer costs the signing analysis on top of whatever tantivy does with it.
    /// A document the id policy settles (skipped or reported) is not signed.
    ///
    /// ```
    /// # use tantivy::doc;
    /// # use tantivy_simhash::{IdPolicy, NearDupConfig, NearDupIndex, Outcome, Policy};
    /// # fn main() -> tantivy_simhash::Result<()> {
    /// # let index = NearDupIndex::create_in_ram(NearDupConfig::new("id", ["body"]))?;
    /// # let (id, body) = (index.field("id")?, index.field("body")?);
    /// // Re-ingesting a document skips it instead of storing it twice.
    /// let mut writer = index.writer(50_000_000, Policy::Off)?.with_id_policy(IdPolicy::KeepFirst);
    /// let first = doc!(id => "a", body => "the first version of the page");
    /// assert!(writer.add_document(first.clone())?.is_added());
    /// writer.commit()?;
    /// let again = writer.add_document(doc!(id => "a", body => "a second version"))?;
    /// assert_eq!(again, Outcome::IdTaken { id: "a".into(), replaced: false });
    ///
    /// // Under IdPolicy::Replace the new version deletes the old one.
    /// writer.set_id_policy(IdPolicy::Replace);
    /// assert!(writer.add_document(doc!(id => "a", body => "a second version"))?.is_added());
    /// writer.commit()?;
    /// assert_eq!(index.searcher()?.num_docs(), 1);
    /// assert_eq!(writer.ids_replaced(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_document(&self, doc: TantivyDocument) -> Result<Outcome> {
        let (id, committed) = match self.settle_by_id(&doc)? {
            Settled::Open(id, committed) => (id, committed),
            Settled::Done(outcome) => return Ok(outcome),
        };
        let (signature, staged) = self.sign_and_stage(&doc);
        self.add_prepared(doc, id, committed, signature, true, staged)
    }

    /// Adds `doc` with a signature computed elsewhere (with the index's scheme and rule, for
    /// example by [`Signer`]s in parallel): its fingerprint, sketch and the rule's keys are
    /// stored, and the policies decide, as for [`add_document`](Self::add_document). A
    /// signature made with another scheme or rule gives meaningless matches (it cannot be
    /// detected). Tantivy analyses the text fields itself (the writer has no tokens to give it).
    /// Cost: [`add_document`](Self::add_document)'s without the signing. Errors as
    /// [`add_document`](Self::add_document).
    pub fn add_document_with_signature(
        &self,
        doc: TantivyDocument,
        signature: Signature,
    ) -> Result<Outcome> {
        let id = self.prepare(&doc)?;
        let committed = CommittedId::read(&self.searcher, self.id_policy, &id)?;
        self.add_prepared(doc, id, committed, signature, true, None)
    }

    /// Adds `doc` with only a fingerprint computed elsewhere (for example by a batch job with
    /// the same scheme). **Simhash-only**: the document is stored without a sketch (no band
    /// keys), so under the rule it matches, and is matched by, other documents only through the
    /// simhash branch (fingerprints within the layout's `k`); the resemblance branch never
    /// fires for it, in this check or in any later lookup. Use
    /// [`add_document_with_signature`](Self::add_document_with_signature) (or
    /// [`add_document`](Self::add_document)) for the full rule. Cost and errors as
    /// [`add_document_with_signature`](Self::add_document_with_signature).
    pub fn add_document_with_fingerprint(
        &self,
        doc: TantivyDocument,
        fp: Fingerprint,
    ) -> Result<Outcome> {
        let signature = Signature {
            fingerprint: fp,
            sketch: crate::signature::Sketch::empty(self.index.rule().minhash()),
        };
        let id = self.prepare(&doc)?;
        let committed = CommittedId::read(&self.searcher, self.id_policy, &id)?;
        self.add_prepared(doc, id, committed, signature, false, None)
    }

    /// Checks `doc` and looks its id up in the last commit; settles it when the id policy
    /// already knows the answer, so a skipped document is never signed. The answer is checked
    /// again under the lock (another thread may add the id meanwhile).
    fn settle_by_id(&self, doc: &TantivyDocument) -> Result<Settled> {
        let id = self.prepare(doc)?;
        let committed = CommittedId::read(&self.searcher, self.id_policy, &id)?;
        if matches!(self.id_policy, IdPolicy::KeepFirst | IdPolicy::Report) {
            let taken = lock(&self.pending).ids.taken(&id, &committed);
            if let Some(taken) = taken {
                return self.id_taken(id, taken).map(Settled::Done);
            }
        }
        Ok(Settled::Open(id, committed))
    }

    /// What [`IdPolicy::KeepFirst`] or [`IdPolicy::Report`] make of a taken id.
    fn id_taken(&self, id: String, taken: Taken) -> Result<Outcome> {
        let replaced = taken == Taken::Replaced;
        match self.id_policy {
            IdPolicy::Report => Err(Error::IdTaken { id, replaced }),
            _ => Ok(Outcome::IdTaken { id, replaced }),
        }
    }

    /// Adds a signed document under the id policy and the near-duplicate policy: stores its
    /// signature, then under the lock claims its id, numbers it, checks it against the
    /// committed index and the pending table, applies the policy and adds it.
    fn add_prepared(
        &self,
        mut doc: TantivyDocument,
        id: String,
        committed: CommittedId,
        signature: Signature,
        with_sketch: bool,
        staged: Option<Arc<StagedTokens>>,
    ) -> Result<Outcome> {
        self.add_signature_fields(&mut doc, &signature, with_sketch);
        let mut pending = lock(&self.pending);
        // The id check, the near-duplicate check and the insertion are one step under the lock:
        // of two threads adding one id, exactly one wins.
        let replacing = match self.claim_id(&mut pending, &id, &committed) {
            Ok(replacing) => replacing,
            Err(taken) => {
                drop(pending);
                return self.id_taken(id, taken);
            }
        };
        self.number(&mut pending, &mut doc);
        if self.policy == Policy::Off {
            return self.add_unchecked(pending, doc, &id, replacing.as_deref(), &signature, staged);
        }
        let kept = match self.check(
            &mut pending,
            &mut doc,
            &id,
            &signature,
            replacing.as_deref(),
        )? {
            Decided::Rejected(outcome) => return Ok(outcome),
            Decided::Kept(kept) => kept,
        };
        self.delete_old_version(&mut pending, replacing.as_deref());
        pending.insert(
            self.index.rule(),
            &signature,
            PendingDoc {
                id: Arc::from(id),
                group: kept.group,
                replaced: kept.carried,
            },
        );
        // Queued under the lock, so that a later document deleting it (Replace) gets a later
        // opstamp.
        let outcome = self.add_to_tantivy(doc, staged, kept.outcome);
        drop(pending);
        outcome
    }

    /// Hands `doc` (with the tokens its signing logged) to tantivy; `outcome` once it is queued.
    fn add_to_tantivy(
        &self,
        doc: TantivyDocument,
        staged: Option<Arc<StagedTokens>>,
        outcome: Outcome,
    ) -> Result<Outcome> {
        self.writer
            .add_document(AnalyzedDocument::with_tokens(doc, staged))?;
        Ok(outcome)
    }

    /// [`Policy::Off`]: adds `doc` without a near-duplicate check; only its id is remembered
    /// (for the id policy). Releases the lock before tantivy takes the document.
    fn add_unchecked(
        &self,
        mut pending: std::sync::MutexGuard<'_, Pending>,
        doc: TantivyDocument,
        id: &str,
        replacing: Option<&str>,
        signature: &Signature,
        staged: Option<Arc<StagedTokens>>,
    ) -> Result<Outcome> {
        self.delete_old_version(&mut pending, replacing);
        pending.ids.insert(&Arc::from(id), None);
        drop(pending);
        let fingerprint = signature.fingerprint;
        self.add_to_tantivy(doc, staged, Outcome::Added { fingerprint })
    }

    /// Adds the signature fields to `doc`: the fingerprint, and with `with_sketch` the sketch
    /// and the rule's keys.
    fn add_signature_fields(
        &self,
        doc: &mut TantivyDocument,
        signature: &Signature,
        with_sketch: bool,
    ) {
        if with_sketch {
            self.index.add_signature_to(doc, signature);
        } else {
            self.index.add_fingerprint_to(doc, signature.fingerprint);
        }
    }

    /// Gives `doc` the next sequence number. Called under the lock, so the numbers follow the
    /// order of the near-duplicate checks.
    fn number(&self, pending: &mut Pending, doc: &mut TantivyDocument) {
        if let Some(field) = self.index.fields.sequence {
            doc.add_u64(field, pending.next_sequence);
        }
        pending.next_sequence += 1;
    }

    /// The near-duplicate check of a document under `Reject`, `Tag` or `Replace` and what the
    /// policy makes of its matches: rejected, or kept (with its group, or with its matches
    /// deleted and their ids recorded in `doc`).
    fn check(
        &self,
        pending: &mut Pending,
        doc: &mut TantivyDocument,
        id: &str,
        signature: &Signature,
        replacing: Option<&str>,
    ) -> Result<Decided> {
        let wanted = Wanted {
            all: self.policy == Policy::Replace,
            groups: self.policy == Policy::Tag,
        };
        let found = pending.matches(
            &self.searcher,
            self.index.rule(),
            signature,
            wanted,
            replacing,
        )?;
        let fp = signature.fingerprint;
        Ok(match (self.policy, found.first()) {
            (_, None) => Decided::Kept(self.keep_unmatched(doc, id, fp)),
            (Policy::Reject, Some(best)) => Decided::Rejected(Outcome::Duplicate {
                of: best.id.to_string(),
                evidence: best.evidence,
                fingerprint: fp,
            }),
            (Policy::Tag, Some(best)) => Decided::Kept(self.tag(doc, best, fp)),
            (_, Some(_)) => Decided::Kept(self.replace_matches(pending, doc, &found, id, fp)),
        })
    }

    /// Checks `id` under the id policy, given what the last commit says: `Err` when the policy
    /// refuses a taken id, else the id whose live versions the new document replaces
    /// ([`IdPolicy::Replace`]).
    fn claim_id(
        &self,
        pending: &mut Pending,
        id: &str,
        committed: &CommittedId,
    ) -> std::result::Result<Option<String>, Taken> {
        if self.id_policy == IdPolicy::Off {
            return Ok(None);
        }
        match (self.id_policy, pending.ids.taken(id, committed)) {
            (IdPolicy::KeepFirst | IdPolicy::Report, Some(taken)) => Err(taken),
            (IdPolicy::Replace, Some(Taken::Live)) => Ok(Some(id.to_string())),
            _ => Ok(None),
        }
    }

    /// A document without near-duplicates: under [`Policy::Tag`] it starts a group named by
    /// its id.
    fn keep_unmatched(&self, doc: &mut TantivyDocument, id: &str, fp: Fingerprint) -> Kept {
        let group: Option<Arc<str>> = (self.policy == Policy::Tag).then(|| Arc::from(id));
        if let (Some(g), Some(field)) = (&group, self.index.fields.group) {
            doc.add_text(field, &**g);
        }
        Kept {
            outcome: Outcome::Added { fingerprint: fp },
            group,
            carried: Chain::default(),
        }
    }

    /// [`Policy::Tag`]: the document joins the group of its nearest near-duplicate (a match
    /// without a group value names the group by its id).
    fn tag(&self, doc: &mut TantivyDocument, best: &Found, fp: Fingerprint) -> Kept {
        let group = Arc::clone(best.group.as_ref().unwrap_or(&best.id));
        if let Some(field) = self.index.fields.group {
            doc.add_text(field, &*group);
        }
        Kept {
            outcome: Outcome::Tagged {
                group: group.to_string(),
                of: best.id.to_string(),
                evidence: best.evidence,
                fingerprint: fp,
            },
            group: Some(group),
            carried: Chain::default(),
        }
    }

    /// [`Policy::Replace`]: deletes every match by id (before the document is added, so the
    /// delete cannot touch it even if it has the same id: a delete applies to documents added
    /// before it) and records in the document what they were and what they had replaced, so a
    /// rerun skips every id of the chain, not only the last one.
    fn replace_matches(
        &self,
        pending: &mut Pending,
        doc: &mut TantivyDocument,
        found: &[Found],
        id: &str,
        fp: Fingerprint,
    ) -> Kept {
        let (replaced, carried) = replaced_and_carried(found, id);
        for old in &replaced {
            self.writer
                .delete_term(Term::from_field_text(self.index.fields.id, old));
            pending.delete_id(old);
        }
        if let Some(field) = self.index.fields.replaced {
            for r in carried.iter() {
                doc.add_text(field, &**r);
            }
        }
        Kept {
            outcome: Outcome::Replaced {
                replaced,
                evidence: found[0].evidence,
                fingerprint: fp,
            },
            group: None,
            carried,
        }
    }

    /// Deletes the live documents with id `replacing` ([`IdPolicy::Replace`]), before the new
    /// version is added (a delete applies to the documents added before it).
    fn delete_old_version(&self, pending: &mut Pending, replacing: Option<&str>) {
        if let Some(id) = replacing {
            self.writer
                .delete_term(Term::from_field_text(self.index.fields.id, id));
            pending.delete_id(id);
            pending.ids_replaced += 1;
        }
    }

    /// Adds many documents: checks their ids, signs the ones the id policy leaves open in
    /// parallel (rayon, one signer per worker), then adds them in the given order under the
    /// policies (so within a batch the earlier document wins under [`IdPolicy::KeepFirst`] and
    /// [`Policy::Reject`], the later under [`IdPolicy::Replace`]). One analysis per signed
    /// document, as [`add_document`](Self::add_document). Stops at the first error; documents
    /// before it are added.
    ///
    /// Cost: as many [`add_document`](Self::add_document) calls, with the signing spread over
    /// rayon's threads (the checks and insertions stay sequential, under the lock); the batch's
    /// staged tokens are held until tantivy indexes each document. Errors as
    /// [`add_document`](Self::add_document).
    pub fn add_documents(&self, docs: Vec<TantivyDocument>) -> Result<Vec<Outcome>> {
        let scheme = self.index.scheme();
        let rule = self.index.rule();
        let settled: Vec<Result<Settled>> = docs.iter().map(|d| self.settle_by_id(d)).collect();
        let sigs: Vec<Option<(Signature, Option<Arc<StagedTokens>>)>> = docs
            .par_iter()
            .zip(&settled)
            .map_init(
                || rule.signer(scheme),
                |signer, (doc, settled)| {
                    matches!(settled, Ok(Settled::Open(..)))
                        .then(|| self.sign_and_stage_with(signer, doc))
                },
            )
            .collect();
        let mut outcomes = Vec::with_capacity(docs.len());
        for ((doc, settled), sig) in docs.into_iter().zip(settled).zip(sigs) {
            let outcome = match (settled?, sig) {
                (Settled::Done(outcome), _) => outcome,
                (Settled::Open(id, committed), Some((sig, staged))) => {
                    self.add_prepared(doc, id, committed, sig, true, staged)?
                }
                (Settled::Open(id, committed), None) => {
                    let (sig, staged) = self.sign_and_stage(&doc);
                    self.add_prepared(doc, id, committed, sig, true, staged)?
                }
            };
            outcomes.push(outcome);
        }
        Ok(outcomes)
    }

    /// Deletes the documents matching `term`, like [`IndexWriter::delete_term`]. On the id field
    /// the deletion is seen by the near-duplicate check at once; on other fields, after the
    /// next commit. Cost: tantivy's delete, plus on the id field a hash-table update under the
    /// writer's lock. Cannot fail (tantivy's contract).
    pub fn delete_term(&self, term: Term) -> Opstamp {
        let mut pending = lock(&self.pending);
        if term.field() == self.index.fields.id {
            if let Some(id) = term.value().as_str() {
                pending.delete_id(id);
            }
        }
        let op = self.writer.delete_term(term);
        drop(pending);
        op
    }

    /// Commits, recording the scheme and layout in the commit payload, and makes the committed
    /// documents visible to the near-duplicate check (the pending table is emptied).
    ///
    /// Cost: tantivy's commit (flushing the indexing threads' segments, applying deletes), then a
    /// reader reload and the signature columns of every segment reopened. Errors:
    /// [`Error::Tantivy`] from tantivy's commit and reload (I/O, a failed indexing thread).
    pub fn commit(&mut self) -> Result<Opstamp> {
        let mut prepared = self.writer.prepare_commit()?;
        prepared.set_payload(&self.payload);
        let opstamp = prepared.commit()?;
        crate::component::reload_fresh(|| self.reader.reload())?;
        self.searcher = NearDupLookup::new(self.index.fields, &self.reader.searcher())?;
        let pending = self
            .pending
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        pending.clear();
        pending.follow(&self.searcher)?;
        Ok(opstamp)
    }

    /// Drops every change since the last commit, like [`IndexWriter::rollback`]. Errors:
    /// [`Error::Tantivy`] (the pending table is kept then).
    pub fn rollback(&mut self) -> Result<Opstamp> {
        let opstamp = self.writer.rollback()?;
        let pending = self
            .pending
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        pending.clear();
        Ok(opstamp)
    }

    /// Waits for merges to finish and drops the writer, like
    /// [`IndexWriter::wait_merging_threads`]. Uncommitted documents are lost: commit first.
    /// Cost: blocks until tantivy's merges end. Errors: [`Error::Tantivy`] (a merge
    /// that failed).
    pub fn wait_merging_threads(self) -> Result<()> {
        self.writer.wait_merging_threads()?;
        Ok(())
    }

    /// Uncommitted documents the writer remembers for its checks (added under `Reject`, `Tag`
    /// or `Replace`, not yet committed; `Off` remembers only ids). Cost: takes the writer's
    /// lock; cannot fail.
    pub fn num_pending(&self) -> usize {
        lock(&self.pending).docs.len()
    }

    /// The signature of `doc` from the configured text fields, with a pooled signer (one
    /// analysis pass gives the fingerprint and the sketch). Cost: one analysis of the joined
    /// text fields (see docs/PERFORMANCE.md, "Fingerprinting"). Cannot fail.
    pub fn signature(&self, doc: &TantivyDocument) -> Signature {
        let text = document_text(doc, &self.index.text_fields);
        let pooled = lock(&self.signers).pop();
        let mut signer = pooled.unwrap_or_else(|| self.index.rule().signer(self.index.scheme()));
        let sig = signer.sign(&text);
        lock(&self.signers).push(signer);
        sig
    }

    /// The signature of `doc` and the tokens of its replayed fields, with a pooled signer.
    fn sign_and_stage(&self, doc: &TantivyDocument) -> (Signature, Option<Arc<StagedTokens>>) {
        let pooled = lock(&self.signers).pop();
        let mut signer = pooled.unwrap_or_else(|| self.index.rule().signer(self.index.scheme()));
        let signed = self.sign_and_stage_with(&mut signer, doc);
        lock(&self.signers).push(signer);
        signed
    }

    fn sign_and_stage_with(
        &self,
        signer: &mut Signer,
        doc: &TantivyDocument,
    ) -> (Signature, Option<Arc<StagedTokens>>) {
        replay::sign_and_stage(
            signer,
            &self.staging,
            self.analysis,
            doc,
            &self.index.text_fields,
            &self.index.replay_fields,
        )
    }

    /// The fingerprint of `doc` from the configured text fields, with a pooled fingerprinter.
    /// Cost: one analysis of the joined text fields. Cannot fail.
    pub fn fingerprint(&self, doc: &TantivyDocument) -> Fingerprint {
        let text = document_text(doc, &self.index.text_fields);
        let pooled = lock(&self.fingerprinters).pop();
        let mut fpr = pooled.unwrap_or_else(|| self.index.scheme().fingerprinter());
        let fp = fpr.fingerprint(&text);
        lock(&self.fingerprinters).push(fpr);
        fp
    }

    /// Checks that `doc` can be added; returns its id.
    fn prepare(&self, doc: &TantivyDocument) -> Result<String> {
        let fields = self.index.fields;
        let id = doc
            .get_first(fields.id)
            .and_then(|v| v.as_str())
            .ok_or_else(|| {
                Error::Document(format!(
                    "the document has no value in the id field `{}`; every document needs one",
                    self.index.config.id_field()
                ))
            })?
            .to_string();
        if id.len() > MAX_ID_BYTES {
            return Err(Error::Document(format!(
                "the id `{}…` has {} bytes, more than the {MAX_ID_BYTES} an id can have (tantivy \
                 cannot index a longer term, so the document could not be found by its id); \
                 shorten the id, or use a hash of it",
                id.chars().take(40).collect::<String>(),
                id.len()
            )));
        }
        let reserved = [
            Some(fields.fingerprint),
            Some(fields.keys),
            fields.group,
            fields.sequence,
            fields.replaced,
        ];
        let sketch = self
            .index
            .signature_fields()
            .sketch_fields()
            .iter()
            .copied();
        for f in reserved.into_iter().flatten().chain(sketch) {
            if doc.get_first(f).is_some() {
                return Err(Error::Document(format!(
                    "document `{id}` already has a value in `{}`, a field the writer fills; \
                     remove it",
                    self.index.index.schema().get_field_name(f)
                )));
            }
        }
        Ok(id)
    }
}

/// What the policy made of a checked document.
enum Decided {
    /// Not added ([`Policy::Reject`]).
    Rejected(Outcome),
    /// Added, with what it leaves in the pending table.
    Kept(Kept),
}

/// What an added document leaves besides its outcome: its group ([`Policy::Tag`]) and the ids
/// it records as replaced ([`Policy::Replace`]), kept in the pending table.
struct Kept {
    outcome: Outcome,
    group: Option<Arc<str>>,
    carried: Chain,
}

/// A document after its id check: settled by the id policy, or open (its id and what the last
/// commit says about it).
enum Settled {
    Done(Outcome),
    Open(String, CommittedId),
}
