//! What adding documents to a store did, counted and named the one way `neardup index` and
//! Python's `Writer` report it.

use crate::writer::Outcome;
use serde::Serialize;

/// Counts of the outcomes of added documents.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IngestCounts {
    /// Documents stored (tagged and replacing ones included).
    pub added: u64,
    /// Stored documents with a near-duplicate already indexed (`Policy::Tag`).
    pub tagged: u64,
    /// Stored documents that replaced near-duplicates (`Policy::Replace`).
    pub replacing: u64,
    /// Documents deleted because a newer near-duplicate replaced them (`Policy::Replace`).
    pub replaced: u64,
    /// Documents not stored: near-duplicates of documents already indexed (`Policy::Reject`).
    pub rejected: u64,
    /// Documents not stored because their id is already in the index (or was added earlier in
    /// the same run): `IdPolicy::KeepFirst`.
    pub skipped_existing_id: u64,
    /// Documents not stored because a newer near-duplicate replaced their id (`Policy::Replace`
    /// in an earlier run over the same input): adding them again would bring the old copy back.
    pub skipped_replaced_id: u64,
}

impl IngestCounts {
    /// Counts one document's outcome. Free.
    pub fn tally(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Added { .. } => self.added += 1,
            Outcome::Duplicate { .. } => self.rejected += 1,
            Outcome::IdTaken { replaced: true, .. } => self.skipped_replaced_id += 1,
            Outcome::IdTaken { .. } => self.skipped_existing_id += 1,
            Outcome::Tagged { .. } => {
                self.added += 1;
                self.tagged += 1;
            }
            Outcome::Replaced { replaced, .. } => {
                self.added += 1;
                self.replacing += 1;
                self.replaced += replaced.len() as u64;
            }
        }
    }

    /// Documents counted.
    pub fn documents(&self) -> u64 {
        self.added + self.rejected + self.skipped_existing_id + self.skipped_replaced_id
    }
}

/// The name of an outcome: `added`, `tagged` (added in the group of a near-duplicate),
/// `replaced` (added; its near-duplicates were deleted), `rejected` (not added: a
/// near-duplicate is indexed) or `skipped` (not added: its id is taken).
pub fn outcome_name(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Added { .. } => "added",
        Outcome::Tagged { .. } => "tagged",
        Outcome::Replaced { .. } => "replaced",
        Outcome::Duplicate { .. } => "rejected",
        Outcome::IdTaken { .. } => "skipped",
    }
}
