//! Adding documents: the id check, the signing, then under the writer's lock the id claim,
//! the sequence number, the near-duplicate check and tantivy's `add_document`.

use super::decide::Decided;
use super::id_policy::{CommittedId, Taken};
use super::pending::{Pending, PendingDoc};
use super::{DedupWriter, IdPolicy, Outcome, Policy, MAX_ID_BYTES};
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use crate::replay::{AnalyzedDocument, DeferredSigning, StagedTokens};
use crate::signature::Signature;
use crate::sync::lock;
use rayon::prelude::*;
use std::sync::Arc;
use tantivy::schema::Value;
use tantivy::TantivyDocument;

impl DedupWriter {
    /// Signs `doc` from the configured text fields, then adds it under the id policy and the
    /// near-duplicate policy, which decides by the index's [`MatchRule`](crate::MatchRule).
    ///
    /// Errors: [`Error::Document`] when the document has no id, an id longer than
    /// [`MAX_ID_BYTES`], or already carries fingerprint, sketch or key values;
    /// [`Error::IdTaken`] under [`IdPolicy::Report`]; tantivy errors from
    /// the lookup or the writer. Nothing is written when it fails.
    ///
    /// The text is analysed once: the tokens of the signature are the tokens tantivy indexes for
    /// the fingerprinted text fields indexed with the scheme's analyzer ([`AnalyzedDocument`];
    /// [`NearDupIndex::analysis_counts`](crate::NearDupIndex::analysis_counts) counts them). Other
    /// indexed text fields are analysed by tantivy as usual; a fingerprinted field tantivy does not
    /// index with that analyzer costs the signing analysis on top of whatever tantivy does with it.
    /// A document the id policy settles (skipped or reported) is not signed. Under
    /// [`Policy::Off`] tantivy's indexing thread signs the document as it cuts its text, and
    /// the outcome is [`Outcome::Queued`] (see [`Policy::Off`]).
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
        let signed = self.sign_here_or_when_indexed(&doc);
        self.add_prepared(doc, id, committed, signed)
    }

    /// Adds `doc` with a signature computed elsewhere (with the index's scheme and rule, for
    /// example by [`Signer`](crate::Signer)s in parallel): its fingerprint, sketch and the rule's
    /// keys are stored, and the policies decide, as for [`add_document`](Self::add_document). A
    /// signature made with another scheme or rule gives meaningless matches (it cannot be
    /// detected). Tantivy analyses the text fields itself (the writer has no tokens to give it).
    /// Cost: [`add_document`](Self::add_document)'s without the signing. Errors as
    /// [`add_document`](Self::add_document).
    pub fn add_document_with_signature(
        &self,
        doc: TantivyDocument,
        signature: Signature,
    ) -> Result<Outcome> {
        self.add_signed(doc, signature, true)
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
        self.add_signed(doc, signature, false)
    }

    /// Adds `doc` with a signature given by the caller (with its sketch, or with
    /// `with_sketch` false the fingerprint only), under both policies.
    fn add_signed(
        &self,
        doc: TantivyDocument,
        signature: Signature,
        with_sketch: bool,
    ) -> Result<Outcome> {
        let id = self.prepare(&doc)?;
        let committed = CommittedId::read(&self.searcher, self.id_policy, &id)?;
        let signed = Signed::Here {
            signature,
            with_sketch,
            staged: None,
        };
        self.add_prepared(doc, id, committed, signed)
    }

    /// Under [`Policy::Off`], when tantivy's indexing thread can sign `doc` as it cuts its
    /// text: that (no check needs the signature first); otherwise `doc` signed here, with its
    /// tokens staged for tantivy. One analysis either way.
    fn sign_here_or_when_indexed(&self, doc: &TantivyDocument) -> Signed {
        match self.signing_when_indexed() {
            Some(signing) => Signed::WhenIndexed(Arc::clone(signing)),
            None => {
                let (signature, staged) = self.sign_and_stage(doc);
                Signed::Here {
                    signature,
                    with_sketch: true,
                    staged,
                }
            }
        }
    }

    /// How tantivy's indexing thread signs the documents added now, if it does: under
    /// [`Policy::Off`], when every fingerprinted field is cut by the index's tokenizer.
    fn signing_when_indexed(&self) -> Option<&Arc<DeferredSigning>> {
        self.deferred
            .as_ref()
            .filter(|_| self.policy == Policy::Off)
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
        signed: Signed,
    ) -> Result<Outcome> {
        if let Signed::Here {
            signature,
            with_sketch,
            ..
        } = &signed
        {
            self.add_signature_fields(&mut doc, signature, *with_sketch);
        }
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
        let (signature, staged) = match signed {
            Signed::Here {
                signature, staged, ..
            } if self.policy != Policy::Off => (signature, staged),
            signed => return self.add_unchecked(pending, doc, &id, replacing.as_deref(), signed),
        };
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
        signed: Signed,
    ) -> Result<Outcome> {
        self.delete_old_version(&mut pending, replacing);
        pending.ids.insert(&Arc::from(id), None);
        drop(pending);
        match signed {
            Signed::Here {
                signature, staged, ..
            } => {
                let fingerprint = signature.fingerprint;
                self.add_to_tantivy(doc, staged, Outcome::Added { fingerprint })
            }
            Signed::WhenIndexed(signing) => {
                self.writer
                    .add_document(AnalyzedDocument::signed_when_indexed(doc, &signing))?;
                Ok(Outcome::Queued)
            }
        }
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

    /// Adds many documents: checks their ids, signs the ones the id policy leaves open in
    /// parallel (rayon, one signer per worker; under [`Policy::Off`] tantivy's indexing threads
    /// sign them instead, as for [`add_document`](Self::add_document)), then adds them in the given order under the
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
        let sigs: Vec<Option<(Signature, Option<Arc<StagedTokens>>)>> =
            if self.signing_when_indexed().is_some() {
                // Tantivy's threads sign them (`Policy::Off`): no signer is needed here.
                docs.iter().map(|_| None).collect()
            } else {
                docs.par_iter()
                    .zip(&settled)
                    .map_init(
                        || rule.signer(scheme),
                        |signer, (doc, settled)| {
                            matches!(settled, Ok(Settled::Open(..)))
                                .then(|| self.sign_and_stage_with(signer, doc))
                        },
                    )
                    .collect()
            };
        let mut outcomes = Vec::with_capacity(docs.len());
        for ((doc, settled), sig) in docs.into_iter().zip(settled).zip(sigs) {
            let outcome = match (settled?, sig) {
                (Settled::Done(outcome), _) => outcome,
                (Settled::Open(id, committed), Some((signature, staged))) => {
                    let signed = Signed::Here {
                        signature,
                        with_sketch: true,
                        staged,
                    };
                    self.add_prepared(doc, id, committed, signed)?
                }
                (Settled::Open(id, committed), None) => {
                    let signed = self.sign_here_or_when_indexed(&doc);
                    self.add_prepared(doc, id, committed, signed)?
                }
            };
            outcomes.push(outcome);
        }
        Ok(outcomes)
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

/// A document's signature, or who makes it.
enum Signed {
    /// Signed by the writer or given by the caller (`with_sketch` false: the fingerprint
    /// only), stored in the document's fields; with the tokens the signing logged.
    Here {
        signature: Signature,
        with_sketch: bool,
        staged: Option<Arc<StagedTokens>>,
    },
    /// Signed on tantivy's indexing thread ([`Policy::Off`]).
    WhenIndexed(Arc<DeferredSigning>),
}

/// A document after its id check: settled by the id policy, or open (its id and what the last
/// commit says about it).
enum Settled {
    Done(Outcome),
    Open(String, CommittedId),
}
