//! [`DedupWriter`]: tantivy's `IndexWriter` with a fingerprint per document and a [`Policy`] for
//! near-duplicates, seeing its own uncommitted documents through a pending table.

use crate::error::{Error, Result};
use crate::fingerprint::{Fingerprint, Fingerprinter};
use crate::layout::check_distance;
use crate::layout::BlockLayout;
use crate::lookup::NearDupSearcher;
use crate::replay::{self, AnalyzedDocument, StagedTokens};
use crate::schema::{document_text, lock, NearDupIndex};
use crate::signature::{Signature, Signer};
use rayon::prelude::*;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use tantivy::schema::Value;
use tantivy::{IndexReader, IndexWriter, Opstamp, ReloadPolicy, TantivyDocument, Term};

mod retag;
pub use retag::GroupsWritten;

impl NearDupIndex {
    /// A [`DedupWriter`] with `memory_budget` bytes in total for tantivy's indexing threads
    /// (at least 15 MB per thread; see `Index::writer`).
    pub fn writer(&self, memory_budget: usize, policy: Policy) -> Result<DedupWriter> {
        let writer: IndexWriter<AnalyzedDocument> = self.index.writer(memory_budget)?;
        DedupWriter::wrap(self.clone(), writer, policy)
    }

    /// A [`DedupWriter`] with `num_threads` indexing threads sharing `memory_budget` bytes.
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

/// What [`DedupWriter`] does with a document that has a near-duplicate (within the layout's
/// `k`, inclusive) among the committed documents or its own uncommitted ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Policy {
    /// Only store fingerprints and keys; no lookup. The fastest.
    Off,
    /// Skip the document: it is not added.
    #[default]
    Reject,
    /// Add it, and store in the group field the group of its nearest near-duplicate (of
    /// equally near ones, the one added first; a document without near-duplicates starts a
    /// group named by its own id). Adding the same documents in the same order gives the same
    /// groups, whatever the number of indexing threads and however they split the segments.
    Tag,
    /// Add it and delete every near-duplicate (by id): the newer document replaces the older.
    /// It records the ids it replaced (with those its victims had replaced) in
    /// [`REPLACED_FIELD`](crate::schema::REPLACED_FIELD), so a rerun over the same input can skip them
    /// ([`NearDupSearcher::is_replaced`]) instead of bringing the old copies back.
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
#[derive(Clone, Debug, PartialEq, Eq)]
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
        /// The distance to it.
        distance: u32,
        /// The rejected document's fingerprint.
        fingerprint: Fingerprint,
    },
    /// Added in an existing group ([`Policy::Tag`]).
    Tagged {
        /// The group: the id of the first document of the group.
        group: String,
        /// The id of the nearest near-duplicate.
        of: String,
        /// The distance to it.
        distance: u32,
        /// The document's fingerprint.
        fingerprint: Fingerprint,
    },
    /// Added, and its near-duplicates deleted ([`Policy::Replace`]).
    Replaced {
        /// The ids of the deleted documents, nearest first.
        replaced: Vec<String>,
        /// The distance to the nearest.
        distance: u32,
        /// The document's fingerprint.
        fingerprint: Fingerprint,
    },
}

impl Outcome {
    /// The document's fingerprint.
    pub fn fingerprint(&self) -> Fingerprint {
        match self {
            Outcome::Added { fingerprint }
            | Outcome::Duplicate { fingerprint, .. }
            | Outcome::Tagged { fingerprint, .. }
            | Outcome::Replaced { fingerprint, .. } => *fingerprint,
        }
    }

    /// Whether the document was added to the index.
    pub fn is_added(&self) -> bool {
        !matches!(self, Outcome::Duplicate { .. })
    }
}

/// An uncommitted document, as the writer remembers it.
struct PendingDoc {
    fingerprint: Fingerprint,
    id: String,
    group: Option<String>,
    /// The ids it replaced, directly or through the documents it replaced.
    replaced: Vec<String>,
    alive: bool,
}

/// What the writer knows that the last commit does not.
struct Pending {
    searcher: NearDupSearcher,
    docs: Vec<PendingDoc>,
    by_key: HashMap<u64, Vec<u32>>,
    /// Ids deleted since the last commit: committed documents with these ids are ignored.
    deleted: HashSet<String>,
    keys: Vec<u64>,
    /// The sequence number of the next document added ([`SEQUENCE_FIELD`]); it survives
    /// commits, so it grows over the writer's life.
    next_sequence: u64,
}

/// A match among committed or pending documents.
struct Found {
    id: String,
    group: Option<String>,
    distance: u32,
    /// What it replaced (read only for [`Policy::Replace`]).
    replaced: Vec<String>,
}

impl Pending {
    fn clear(&mut self) {
        self.docs.clear();
        self.by_key.clear();
        self.deleted.clear();
    }

    /// Live matches within `k`, committed and pending, nearest first; among equally near ones
    /// the first added first (committed documents by their sequence number, then pending ones
    /// in the order they were added), so the result does not depend on how tantivy's threads
    /// split documents into segments. With `all == false` only the nearest is guaranteed:
    /// reading a committed id decompresses a dictionary block, so ids of farther committed
    /// matches are not read. Groups are read only when `groups` is set; what each match
    /// replaced only when `all` is.
    fn matches(
        &mut self,
        layout: &BlockLayout,
        fp: Fingerprint,
        k: u32,
        all: bool,
        groups: bool,
    ) -> Result<Vec<Found>> {
        let mut pending = Vec::new();
        self.keys.clear();
        layout.keys_into(fp, &mut self.keys);
        for (combo, key) in self.keys.iter().enumerate() {
            let Some(list) = self.by_key.get(key) else {
                continue;
            };
            for &i in list {
                let p = &self.docs[i as usize];
                let d = fp.distance(p.fingerprint);
                if p.alive && d <= k && layout.first_shared_key(fp, p.fingerprint) == Some(combo) {
                    pending.push((d, i));
                }
            }
        }
        pending.sort_unstable();
        let best_pending = pending.first().map(|&(d, _)| d);

        let mut committed = Vec::new();
        let searcher = &self.searcher;
        searcher.for_each_match(fp, k, |m| {
            // Without a sequence field (an older index), ties follow segment order.
            let sequence = searcher.sequence_of(m.address).unwrap_or(u64::MAX);
            committed.push((m.distance, sequence, m.address));
        })?;
        committed.sort_unstable();
        let mut found = Vec::new();
        for (distance, _, address) in committed {
            if !all && (!found.is_empty() || best_pending.is_some_and(|b| distance > b)) {
                break;
            }
            let Some(id) = self.searcher.id_of(address)? else {
                continue;
            };
            if self.deleted.contains(&id) {
                continue;
            }
            let group = if groups {
                self.searcher.group_of(address)?
            } else {
                None
            };
            let replaced = if all {
                self.searcher.replaced_ids_of(address)?
            } else {
                Vec::new()
            };
            found.push(Found {
                id,
                group,
                distance,
                replaced,
            });
        }
        found.extend(pending.into_iter().map(|(distance, i)| {
            let p = &self.docs[i as usize];
            Found {
                id: p.id.clone(),
                group: p.group.clone(),
                distance,
                replaced: if all { p.replaced.clone() } else { Vec::new() },
            }
        }));
        // Stable: committed documents (added earlier) stay before pending ones at one distance.
        found.sort_by_key(|f| f.distance);
        Ok(found)
    }

    fn insert(&mut self, layout: &BlockLayout, doc: PendingDoc) {
        let i = self.docs.len() as u32;
        self.keys.clear();
        layout.keys_into(doc.fingerprint, &mut self.keys);
        for &key in &self.keys {
            self.by_key.entry(key).or_default().push(i);
        }
        self.docs.push(doc);
    }

    fn delete_id(&mut self, id: &str) {
        self.deleted.insert(id.to_string());
        for p in &mut self.docs {
            if p.id == id {
                p.alive = false;
            }
        }
    }
}

/// Wraps tantivy's [`IndexWriter`]: fingerprints each document, adds its fingerprint and keys,
/// and applies a [`Policy`] to near-duplicates, with tantivy's method names.
///
/// It sees the committed index (as of its last commit) and its own uncommitted documents (a
/// pending table), so a near-duplicate of a document added a moment ago is caught before any
/// commit. The check and the insertion are one atomic step under a lock: with several threads
/// adding at once under [`Policy::Reject`], no two stored documents are within `k`. The
/// fingerprinting itself (the expensive part) runs outside the lock.
///
/// Documents deleted through [`DedupWriter::delete_term`] on the id field stop matching at
/// once; deletes on other fields (or through the inner writer) are seen after the next commit.
/// Dropping the writer without committing loses the uncommitted documents (tantivy's contract);
/// the committed index stays readable and correct.
pub struct DedupWriter {
    index: NearDupIndex,
    writer: IndexWriter<AnalyzedDocument>,
    policy: Policy,
    max_distance: u32,
    reader: IndexReader,
    pending: Mutex<Pending>,
    fingerprinters: Mutex<Vec<Fingerprinter>>,
    signers: Mutex<Vec<Signer>>,
    payload: String,
    /// The scheme's analysis, as staged tokens name it.
    analysis: u64,
}

impl DedupWriter {
    /// Wraps an existing tantivy writer of `index` (made with
    /// `index.index().writer::<AnalyzedDocument>(..)`).
    pub fn wrap(
        index: NearDupIndex,
        writer: IndexWriter<AnalyzedDocument>,
        policy: Policy,
    ) -> Result<Self> {
        if policy == Policy::Tag {
            index.fields.require_group(TAG_NEEDS_GROUP)?;
        }
        let reader: IndexReader = index
            .index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let searcher = NearDupSearcher::new(index.fields, &reader.searcher())?;
        let next_sequence = searcher.max_sequence().map_or(0, |m| m.saturating_add(1));
        let payload = index.config.record().to_json()?;
        let analysis = replay::analysis_id(index.scheme());
        Ok(DedupWriter {
            max_distance: index.layout().max_distance(),
            index,
            writer,
            policy,
            reader,
            pending: Mutex::new(Pending {
                searcher,
                docs: Vec::new(),
                by_key: HashMap::new(),
                deleted: HashSet::new(),
                keys: Vec::new(),
                next_sequence,
            }),
            fingerprinters: Mutex::new(Vec::new()),
            signers: Mutex::new(Vec::new()),
            payload,
            analysis,
        })
    }

    /// The policy.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Changes the policy for the documents added from now on.
    pub fn set_policy(&mut self, policy: Policy) -> Result<()> {
        if policy == Policy::Tag {
            self.index.fields.require_group(TAG_NEEDS_GROUP)?;
        }
        self.policy = policy;
        Ok(())
    }

    /// The distance up to which documents count as near-duplicates (inclusive); defaults to the
    /// layout's `k`.
    pub fn max_distance(&self) -> u32 {
        self.max_distance
    }

    /// Sets the distance up to which documents count as near-duplicates (inclusive). Errors if
    /// it exceeds the layout's `k`.
    pub fn set_max_distance(&mut self, max_distance: u32) -> Result<()> {
        check_distance(self.index.layout().max_distance(), max_distance)?;
        self.max_distance = max_distance;
        Ok(())
    }

    /// The near-duplicate index.
    pub fn index(&self) -> &NearDupIndex {
        &self.index
    }

    /// The inner tantivy writer. Documents added through it directly get no fingerprint and are
    /// not checked; a commit through it records no payload (the record file remains). It takes
    /// [`AnalyzedDocument`]s: `TantivyDocument::into()` converts a plain one.
    pub fn index_writer(&self) -> &IndexWriter<AnalyzedDocument> {
        &self.writer
    }

    /// The inner tantivy writer, mutably (for example to set a merge policy).
    pub fn index_writer_mut(&mut self) -> &mut IndexWriter<AnalyzedDocument> {
        &mut self.writer
    }

    /// Fingerprints `doc` from the configured text fields, then adds it under the policy.
    ///
    /// Errors: [`Error::Document`] when the document has no id or already carries fingerprint
    /// or key values; tantivy errors from the lookup or the writer.
    ///
    /// The text is analysed once: the tokens of the signature are the tokens tantivy indexes
    /// for the fingerprinted text fields indexed with the scheme's analyzer
    /// ([`crate::replay`]; [`NearDupIndex::analysis_counts`] counts them). Other indexed text
    /// fields are analysed by tantivy as usual; a fingerprinted field tantivy does not index
    /// with that analyzer costs the signing analysis on top of whatever tantivy does with it.
    pub fn add_document(&self, doc: TantivyDocument) -> Result<Outcome> {
        let (signature, staged) = self.sign_and_stage(&doc);
        self.add_prepared(doc, signature.fingerprint, Some(&signature), staged)
    }

    /// Adds `doc` with a signature computed elsewhere (with the index's scheme and rule, for
    /// example by [`Signer`]s in parallel): its fingerprint, sketch and the rule's keys are
    /// stored. The policy still decides by the fingerprint within the writer's `k`. Tantivy
    /// analyses the text fields itself (the writer has no tokens to give it).
    pub fn add_document_with_signature(
        &self,
        doc: TantivyDocument,
        signature: Signature,
    ) -> Result<Outcome> {
        self.add_prepared(doc, signature.fingerprint, Some(&signature), None)
    }

    /// Adds `doc` with a fingerprint computed elsewhere (for example by a batch job with the
    /// same scheme). See [`add_document`](Self::add_document).
    ///
    /// Without a signature the document gets no sketch and no band keys: the match rule's
    /// resemblance branch never matches it (use
    /// [`add_document_with_signature`](Self::add_document_with_signature)).
    pub fn add_document_with_fingerprint(
        &self,
        doc: TantivyDocument,
        fp: Fingerprint,
    ) -> Result<Outcome> {
        self.add_prepared(doc, fp, None, None)
    }

    fn add_prepared(
        &self,
        mut doc: TantivyDocument,
        fp: Fingerprint,
        signature: Option<&Signature>,
        staged: Option<Arc<StagedTokens>>,
    ) -> Result<Outcome> {
        let id = self.prepare(&doc)?;
        let layout = self.index.layout();
        let fields = self.index.fields;
        match signature {
            Some(sig) => self.index.add_signature_to(&mut doc, sig),
            None => self.index.add_fingerprint_to(&mut doc, fp),
        }
        let mut pending = lock(&self.pending);
        // Numbered under the lock, so the numbers follow the order of the checks below.
        if let Some(field) = fields.sequence {
            doc.add_u64(field, pending.next_sequence);
        }
        pending.next_sequence += 1;
        if self.policy == Policy::Off {
            drop(pending);
            self.writer
                .add_document(AnalyzedDocument::with_tokens(doc, staged))?;
            return Ok(Outcome::Added { fingerprint: fp });
        }
        let found = pending.matches(
            layout,
            fp,
            self.max_distance,
            self.policy == Policy::Replace,
            self.policy == Policy::Tag,
        )?;
        let outcome = match (self.policy, found.first()) {
            (_, None) => {
                let group = (self.policy == Policy::Tag).then(|| id.clone());
                if let (Some(g), Some(field)) = (&group, fields.group) {
                    doc.add_text(field, g);
                }
                Outcome::Added { fingerprint: fp }.with_pending(
                    &mut pending,
                    layout,
                    fp,
                    id,
                    group,
                    Vec::new(),
                )
            }
            (Policy::Reject, Some(best)) => {
                return Ok(Outcome::Duplicate {
                    of: best.id.clone(),
                    distance: best.distance,
                    fingerprint: fp,
                });
            }
            (Policy::Tag, Some(best)) => {
                let group = best.group.clone().unwrap_or_else(|| best.id.clone());
                if let Some(field) = fields.group {
                    doc.add_text(field, &group);
                }
                let outcome = Outcome::Tagged {
                    group: group.clone(),
                    of: best.id.clone(),
                    distance: best.distance,
                    fingerprint: fp,
                };
                outcome.with_pending(&mut pending, layout, fp, id, Some(group), Vec::new())
            }
            (_, Some(best)) => {
                // Replace: delete first, so the delete cannot touch the new document even if
                // it has the same id (a delete applies to documents added before it).
                let distance = best.distance;
                let mut replaced: Vec<String> = Vec::with_capacity(found.len());
                for f in &found {
                    if !replaced.contains(&f.id) {
                        replaced.push(f.id.clone());
                    }
                }
                for old in &replaced {
                    self.writer
                        .delete_term(Term::from_field_text(fields.id, old));
                    pending.delete_id(old);
                }
                // What the deleted documents had replaced is now this document's to remember,
                // so a rerun skips every id of the chain, not only the last one.
                let mut carried = replaced.clone();
                for f in &found {
                    for r in &f.replaced {
                        if !carried.contains(r) {
                            carried.push(r.clone());
                        }
                    }
                }
                carried.retain(|r| *r != id);
                if let Some(field) = fields.replaced {
                    for r in &carried {
                        doc.add_text(field, r);
                    }
                }
                Outcome::Replaced {
                    replaced,
                    distance,
                    fingerprint: fp,
                }
                .with_pending(&mut pending, layout, fp, id, None, carried)
            }
        };
        self.writer
            .add_document(AnalyzedDocument::with_tokens(doc, staged))?;
        drop(pending);
        Ok(outcome)
    }

    /// Adds many documents: signs them in parallel (rayon, one signer per worker), then adds
    /// them in the given order under the policy (so within a batch the earlier document wins).
    /// One analysis per document, as [`add_document`](Self::add_document). Stops at the first
    /// error; documents before it are added.
    pub fn add_documents(&self, docs: Vec<TantivyDocument>) -> Result<Vec<Outcome>> {
        let scheme = self.index.scheme();
        let rule = self.index.rule();
        let sigs: Vec<(Signature, Option<Arc<StagedTokens>>)> = docs
            .par_iter()
            .map_init(
                || rule.signer(scheme),
                |signer, doc| self.sign_and_stage_with(signer, doc),
            )
            .collect();
        docs.into_iter()
            .zip(sigs)
            .map(|(doc, (sig, staged))| self.add_prepared(doc, sig.fingerprint, Some(&sig), staged))
            .collect()
    }

    /// Deletes the documents matching `term`, like [`IndexWriter::delete_term`]. On the id field
    /// the deletion is seen by the near-duplicate check at once; on other fields, after the
    /// next commit.
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
    pub fn commit(&mut self) -> Result<Opstamp> {
        let mut prepared = self.writer.prepare_commit()?;
        prepared.set_payload(&self.payload);
        let opstamp = prepared.commit()?;
        self.reader.reload()?;
        let searcher = NearDupSearcher::new(self.index.fields, &self.reader.searcher())?;
        let pending = self
            .pending
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        pending.searcher = searcher;
        pending.clear();
        Ok(opstamp)
    }

    /// Drops every change since the last commit, like [`IndexWriter::rollback`].
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
    pub fn wait_merging_threads(self) -> Result<()> {
        self.writer.wait_merging_threads()?;
        Ok(())
    }

    /// Uncommitted documents the writer remembers (added, not yet committed).
    pub fn num_pending(&self) -> usize {
        lock(&self.pending).docs.len()
    }

    /// The signature of `doc` from the configured text fields, with a pooled signer (one
    /// analysis pass gives the fingerprint and the sketch).
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
            self.analysis,
            doc,
            &self.index.text_fields,
            &self.index.replay_fields,
        )
    }

    /// The fingerprint of `doc` from the configured text fields, with a pooled fingerprinter.
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

impl Outcome {
    fn with_pending(
        self,
        pending: &mut Pending,
        layout: &BlockLayout,
        fp: Fingerprint,
        id: String,
        group: Option<String>,
        replaced: Vec<String>,
    ) -> Self {
        pending.insert(
            layout,
            PendingDoc {
                fingerprint: fp,
                id,
                group,
                replaced,
                alive: true,
            },
        );
        self
    }
}
