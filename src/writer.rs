//! [`DedupWriter`]: tantivy's `IndexWriter` with a fingerprint per document and a [`Policy`] for
//! near-duplicates, seeing its own uncommitted documents through a pending table.

use crate::error::Result;
use crate::fingerprint::{Fingerprint, Fingerprinter};
use crate::lookup::NearDupLookup;
use crate::replay::{
    self, document_text, AnalyzedDocument, DeferredSigning, StagedTokens, StagingPool,
};
use crate::schema::NearDupIndex;
use crate::signature::{Signature, Signer, DEFAULT_MAX_POSTINGS_PER_KEY};
use crate::sync::lock;
use std::sync::{Arc, Mutex};
use tantivy::{IndexWriter, Opstamp, TantivyDocument, Term};

mod add;
mod decide;
mod id_policy;
mod pending;
mod policy;

/// The longest id a [`DedupWriter`] accepts, in UTF-8 bytes: tantivy drops a longer term from
/// the id field's postings (its `MAX_TOKEN_LEN`), so such an id could never be found again and
/// every rerun would add its document anew.
pub const MAX_ID_BYTES: usize = tantivy::tokenizer::MAX_TOKEN_LEN;

mod retag;
pub use id_policy::IdPolicy;
use pending::Pending;
pub use policy::{Outcome, Policy};
pub use retag::GroupsWritten;

impl NearDupIndex {
    /// A [`DedupWriter`] with `memory_budget` bytes in total for tantivy's indexing threads
    /// (at least 15 MB per thread; see `Index::writer`).
    ///
    /// Cost: tantivy's writer, plus a reader of the last commit (its signature columns opened).
    /// Errors: [`Error::Schema`](crate::Error::Schema) for [`Policy::Tag`] without a group field;
    /// tantivy's errors (a budget too small, the index locked by another writer).
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

/// Why [`Policy::Tag`] needs the group field (the start of its error message).
const TAG_NEEDS_GROUP: &str = "Policy::Tag stores each document's group in";

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
    reader: crate::component::NearDupReader,
    /// The index as of the last commit (replaced only by `commit`, which takes `&mut self`, so
    /// it is read outside the lock).
    searcher: NearDupLookup,
    pending: Mutex<Pending>,
    fingerprinters: Mutex<Vec<Fingerprinter>>,
    signers: Mutex<Vec<Signer>>,
    /// Buffers of the tokens the signers stage for tantivy, back from the documents tantivy
    /// has indexed ([`AnalyzedDocument`]).
    staging: Arc<StagingPool>,
    payload: String,
    /// The scheme's analysis, as staged tokens name it.
    analysis: u64,
    /// How tantivy's indexing threads sign documents under [`Policy::Off`]; `None` when the
    /// fingerprinted fields are not all cut by the index's replaying tokenizer (the writer
    /// signs them itself then).
    deferred: Option<Arc<DeferredSigning>>,
}

impl DedupWriter {
    /// Wraps an existing tantivy writer of `index` (made with
    /// `index.index().writer::<AnalyzedDocument>(..)`).
    ///
    /// Cost: opens a reader of the last commit and its signature columns, and reads the largest
    /// sequence number (one column scan per segment). Errors:
    /// [`Error::Schema`](crate::Error::Schema) for [`Policy::Tag`] without a group field; tantivy's
    /// errors opening the reader.
    pub fn wrap(
        index: NearDupIndex,
        writer: IndexWriter<AnalyzedDocument>,
        policy: Policy,
    ) -> Result<Self> {
        if policy == Policy::Tag {
            index.fields.require_group(TAG_NEEDS_GROUP)?;
        }
        let reader = index.manual_reader()?;
        let searcher = index.lookups_of(&reader.searcher())?;
        let next_sequence = searcher.max_sequence().map_or(0, |m| m.saturating_add(1));
        let payload = index.config.record().to_json()?;
        let analysis = replay::analysis_id(index.scheme());
        let staging = Arc::default();
        let deferred = DeferredSigning::new(
            index.scheme(),
            index.rule(),
            &index.text_fields,
            &index.replay_fields,
            &staging,
        );
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
            staging,
            payload,
            analysis,
            deferred,
        })
    }

    /// The policy.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Changes the policy for the documents added from now on. Errors:
    /// [`Error::Schema`](crate::Error::Schema) for [`Policy::Tag`] without a group field (the
    /// policy is then unchanged).
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
    /// [`Error::Tantivy`](crate::Error::Tantivy) from tantivy's commit and reload (I/O, a failed
    /// indexing thread).
    pub fn commit(&mut self) -> Result<Opstamp> {
        let mut prepared = self.writer.prepare_commit()?;
        prepared.set_payload(&self.payload);
        let opstamp = prepared.commit()?;
        self.reader.reload()?;
        self.searcher = self.index.lookups_of(&self.reader.searcher())?;
        let pending = self
            .pending
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        pending.clear();
        pending.follow(&self.searcher)?;
        Ok(opstamp)
    }

    /// Drops every change since the last commit, like [`IndexWriter::rollback`]. Errors:
    /// [`Error::Tantivy`](crate::Error::Tantivy) (the pending table is kept then).
    pub fn rollback(&mut self) -> Result<Opstamp> {
        let opstamp = self.writer.rollback()?;
        let pending = self
            .pending
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        pending.clear();
        Ok(opstamp)
    }

    /// Waits for merges to finish and drops the writer, like [`IndexWriter::wait_merging_threads`].
    /// Uncommitted documents are lost: commit first. Cost: blocks until tantivy's merges end.
    /// Errors: [`Error::Tantivy`](crate::Error::Tantivy) (a merge that failed).
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
}
