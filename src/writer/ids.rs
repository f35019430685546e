//! [`IdPolicy`]: what [`DedupWriter`](super::DedupWriter) does with a document whose id is
//! already in the index (tantivy has no primary key), and the writer's table of uncommitted ids.

use crate::columns::for_each_posting;
use crate::error::Result;
use crate::lookup::NearDupSearcher;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use tantivy::{DocAddress, Term};

/// What [`DedupWriter`](super::DedupWriter) does with a document whose id is already taken:
/// tantivy has no primary key, so without a policy re-ingesting a document stores it twice.
///
/// An id is **taken** when a live document has it: a committed one (as of the writer's last
/// commit, minus the ids deleted since through [`delete_term`](super::DedupWriter::delete_term)
/// on the id field or by [`Policy::Replace`](super::Policy::Replace)) or one added since the
/// last commit. For [`KeepFirst`](Self::KeepFirst) and [`Report`](Self::Report) an id is also
/// taken when a live document records that it replaced that id under
/// [`Policy::Replace`](super::Policy::Replace) (the near-duplicate policy), so a rerun over the
/// same input does not bring back a copy a newer near-duplicate replaced
/// ([`NearDupSearcher::is_replaced`]).
///
/// **Order**: the id check, the near-duplicate check and the insertion are one step under the
/// writer's lock, so of documents with one id added at once from several threads exactly one
/// wins: the first to take the lock under `KeepFirst` (the others are skipped or reported), the
/// last under `Replace` (each deletes the one before). That order is the order of their
/// sequence numbers ([`SEQUENCE_FIELD`](crate::schema::SEQUENCE_FIELD)); within one thread, and
/// within one [`add_documents`](super::DedupWriter::add_documents) call, it is the call order.
/// [`rollback`](super::DedupWriter::rollback) forgets the uncommitted ids with the documents.
///
/// **Cost per document** (all but `Off`): one term lookup of the id per committed segment (and
/// one in the replaced-ids field when the schema has it, for `KeepFirst` and `Report`), made
/// outside the lock, plus two hash-table probes and one copy of the id under it; a document
/// skipped or reported by id is not signed, so skipping costs less than adding. `Off` keeps
/// only the copy of the id. The uncommitted ids take about their bytes + 48 B each until the
/// next commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IdPolicy {
    /// No id checks: a document is added whatever its id (tantivy's behaviour, and the
    /// default: the check costs term lookups).
    #[default]
    Off,
    /// Keep the document already there: a document whose id is taken is not added
    /// ([`Outcome::IdTaken`](super::Outcome::IdTaken), nothing written, not signed).
    KeepFirst,
    /// Replace the old version: the live documents with the id are deleted (by id term) and the
    /// new one is added. The near-duplicate [`Policy`](super::Policy) then judges the new
    /// version against the other documents only, never against the version it replaces (an
    /// edit is not a near-duplicate of itself): if that policy rejects it
    /// ([`Outcome::Duplicate`](super::Outcome::Duplicate)), nothing is written and the old
    /// version stays. [`DedupWriter::ids_replaced`](super::DedupWriter::ids_replaced) counts
    /// the versions replaced.
    Replace,
    /// Fail on a taken id: [`Error::IdTaken`](crate::Error::IdTaken), nothing written (in
    /// [`add_documents`](super::DedupWriter::add_documents), the documents before it are
    /// added, as for any error).
    Report,
}

impl IdPolicy {
    /// The policies in the order front ends list them.
    pub const ALL: [IdPolicy; 4] = [
        IdPolicy::Off,
        IdPolicy::KeepFirst,
        IdPolicy::Replace,
        IdPolicy::Report,
    ];

    /// The policy's name: `off`, `keep`, `replace` or `report`. Cost: none; cannot fail.
    pub fn name(self) -> &'static str {
        match self {
            IdPolicy::Off => "off",
            IdPolicy::KeepFirst => "keep",
            IdPolicy::Replace => "replace",
            IdPolicy::Report => "report",
        }
    }

    /// The policy named `name` (as [`name`](Self::name) gives it, in any case); `None` for
    /// any other name (front ends turn it into an error listing the names). Cost: a few string
    /// comparisons.
    pub fn from_name(name: &str) -> Option<IdPolicy> {
        IdPolicy::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }
}

/// What the last commit says about an id: read outside the writer's lock (the committed
/// snapshot changes only at a commit, which takes the writer mutably).
#[derive(Clone, Debug, Default)]
pub(super) struct CommittedId {
    /// A committed document with a fingerprint has the id (deletes since the commit not
    /// applied).
    pub(super) live: bool,
    /// The ids of the committed documents that record they replaced the id (read only when
    /// no committed document has it, and not for [`IdPolicy::Replace`]).
    pub(super) replaced_by: Vec<String>,
}

impl CommittedId {
    /// Looks `id` up in the last commit: what `policy` needs, nothing under `Off`.
    pub(super) fn read(searcher: &NearDupSearcher, policy: IdPolicy, id: &str) -> Result<Self> {
        if policy == IdPolicy::Off || searcher.searcher().num_docs() == 0 {
            return Ok(CommittedId::default());
        }
        let live = searcher.address_of_id(id)?.is_some();
        let replaced_by = if live || policy == IdPolicy::Replace {
            Vec::new()
        } else {
            replaced_by(searcher, id)?
        };
        Ok(CommittedId { live, replaced_by })
    }
}

/// The ids of the live documents of `searcher` that record they replaced `id`: one term lookup
/// per segment, and an id read per recorder.
fn replaced_by(searcher: &NearDupSearcher, id: &str) -> Result<Vec<String>> {
    let Some(field) = searcher.fields().replaced else {
        return Ok(Vec::new());
    };
    let term = Term::from_field_text(field, id);
    let mut recorders = Vec::new();
    for (ord, segment) in searcher.searcher().segment_readers().iter().enumerate() {
        let inverted = segment.inverted_index(field)?;
        let mut docs = Vec::new();
        for_each_posting(&inverted, &term, |doc| {
            if !segment.is_deleted(doc) {
                docs.push(doc);
            }
        })?;
        for doc in docs {
            recorders.extend(searcher.id_of(DocAddress::new(ord as u32, doc))?);
        }
    }
    Ok(recorders)
}

/// Why an id is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Taken {
    /// A live document has it.
    Live,
    /// A live document records that it replaced it.
    Replaced,
}

/// The ids of the documents added since the last commit.
#[derive(Default)]
pub(super) struct PendingIds {
    /// Live uncommitted ids, each with its documents' places in the pending table (empty when
    /// the near-duplicate policy keeps no table).
    live: HashMap<String, Vec<u32>>,
    /// Ids an uncommitted document records it replaced, with the ids of the recorders (one
    /// shared copy per recorder: a chain of replacements records every id of the chain again).
    replaced_by: HashMap<String, Vec<Arc<str>>>,
    /// Committed ids deleted since the last commit.
    deleted: HashSet<String>,
}

impl PendingIds {
    pub(super) fn clear(&mut self) {
        self.live.clear();
        self.replaced_by.clear();
        self.deleted.clear();
    }

    /// Records a document added with `id`, at `place` in the pending table if it has one.
    pub(super) fn insert(&mut self, id: &str, place: Option<u32>) {
        let places = match self.live.get_mut(id) {
            Some(places) => places,
            None => self.live.entry(id.to_string()).or_default(),
        };
        places.extend(place);
    }

    /// Records that the document `by` replaced the ids `replaced`.
    pub(super) fn insert_replaced(&mut self, by: &str, replaced: &[String]) {
        if replaced.is_empty() {
            return;
        }
        let by: Arc<str> = Arc::from(by);
        for r in replaced {
            match self.replaced_by.get_mut(r.as_str()) {
                Some(recorders) => recorders.push(Arc::clone(&by)),
                None => {
                    self.replaced_by.insert(r.clone(), vec![Arc::clone(&by)]);
                }
            }
        }
    }

    /// Forgets `id` as a live id; returns the pending-table places of its documents.
    pub(super) fn delete(&mut self, id: &str) -> Vec<u32> {
        self.deleted.insert(id.to_string());
        self.live.remove(id).unwrap_or_default()
    }

    /// Whether committed documents with `id` were deleted since the last commit.
    pub(super) fn is_deleted(&self, id: &str) -> bool {
        self.deleted.contains(id)
    }

    /// Whether `id` is taken, given what the last commit says about it.
    pub(super) fn taken(&self, id: &str, committed: &CommittedId) -> Option<Taken> {
        if self.live.contains_key(id) || (committed.live && !self.deleted.contains(id)) {
            return Some(Taken::Live);
        }
        let replaced_pending = self
            .replaced_by
            .get(id)
            .is_some_and(|by| by.iter().any(|b| self.live.contains_key(&**b)));
        // A committed recorder deleted since the commit no longer takes the id (unless it was
        // added again, which the pending check above sees).
        let replaced_committed = committed
            .replaced_by
            .iter()
            .any(|b| !self.deleted.contains(b));
        (replaced_pending || replaced_committed).then_some(Taken::Replaced)
    }
}
