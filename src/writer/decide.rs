//! What the policies make of a document under the writer's lock: the id claim
//! ([`IdPolicy`]), the near-duplicate check and what [`Policy`] does with its matches (reject,
//! tag, replace).

use super::id_policy::{CommittedId, Taken};
use super::pending::{replaced_and_carried, Chain, Found, Pending, Wanted};
use super::{DedupWriter, IdPolicy, Outcome, Policy};
use crate::error::Result;
use crate::fingerprint::Fingerprint;
use crate::signature::Signature;
use std::sync::Arc;
use tantivy::{TantivyDocument, Term};

impl DedupWriter {
    /// The near-duplicate check of a document under `Reject`, `Tag` or `Replace` and what the
    /// policy makes of its matches: rejected, or kept (with its group, or with its matches
    /// deleted and their ids recorded in `doc`).
    pub(super) fn check(
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
    pub(super) fn claim_id(
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
    pub(super) fn delete_old_version(&self, pending: &mut Pending, replacing: Option<&str>) {
        if let Some(id) = replacing {
            self.writer
                .delete_term(Term::from_field_text(self.index.fields.id, id));
            pending.delete_id(id);
            pending.ids_replaced += 1;
        }
    }
}

/// What the policy made of a checked document.
pub(super) enum Decided {
    /// Not added ([`Policy::Reject`]).
    Rejected(Outcome),
    /// Added, with what it leaves in the pending table.
    Kept(Kept),
}

/// What an added document leaves besides its outcome: its group ([`Policy::Tag`]) and the ids
/// it records as replaced ([`Policy::Replace`]), kept in the pending table.
pub(super) struct Kept {
    pub(super) outcome: Outcome,
    pub(super) group: Option<Arc<str>>,
    pub(super) carried: Chain,
}
