//! What the writer does with a near-duplicate ([`Policy`]) and what became of each document
//! ([`Outcome`]).

use crate::fingerprint::Fingerprint;
use crate::signature::Evidence;

/// What [`DedupWriter`](super::DedupWriter) does with a document that has a near-duplicate among
/// the committed documents or its own uncommitted ones: a document the index's
/// [`MatchRule`](crate::MatchRule) matches (simhash within `k`, or a shared MinHash band and enough
/// estimated resemblance).
///
/// "The nearest" near-duplicate is the one with the strongest [`Evidence`]
/// ([`Evidence::cmp_strength`]: simhash matches by distance, then resemblance matches by
/// estimate), and of equally strong ones the one added first.
///
/// **Cost** per document beyond `Off` (all but `Off`): one check under the writer's lock, the
/// rule's keys looked up in every committed segment and in the pending table (each key's list
/// bounded by [`DedupWriter::max_postings_per_key`](super::DedupWriter::max_postings_per_key)), one
/// fingerprint read per candidate and a sketch comparison only for candidates that share a band key
/// beyond the simhash radius; the id of the nearest committed match read once. `Tag` also reads
/// that match's group and stores a group value per document; `Replace` reads every match's id and
/// replaced ids, deletes each match by id and stores the ids it replaced (a chain of replacements
/// makes that list grow). Measured figures: docs/PERFORMANCE.md, "Indexing".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Policy {
    /// Only store signatures and keys; no lookup. The fastest: nothing needs the signature
    /// before the document is added, so tantivy's indexing thread signs it while it cuts the
    /// text for the index (one analysis, off the caller's thread) and the outcome is
    /// [`Outcome::Queued`], without the fingerprint. When a fingerprinted field is not indexed
    /// with [`SIMHASH_TOKENIZER_NAME`](crate::SIMHASH_TOKENIZER_NAME) or the scheme uses a
    /// user analyzer, the writer signs instead and the outcome is [`Outcome::Added`].
    Off,
    /// Skip the document: it is not added.
    #[default]
    Reject,
    /// Add it, and store in the group field the group of its nearest near-duplicate (a
    /// document without near-duplicates starts a group named by its own id). Adding the same
    /// documents in the same order gives the same groups, whatever the number of indexing
    /// threads and however they split the segments (as long as no key is hot: see
    /// [`DEFAULT_MAX_POSTINGS_PER_KEY`](crate::DEFAULT_MAX_POSTINGS_PER_KEY)).
    Tag,
    /// Add it and delete every near-duplicate (by id): the newer document replaces the older. It
    /// records the ids it replaced (with those its victims had replaced) in
    /// [`REPLACED_FIELD`](crate::schema::REPLACED_FIELD), so a rerun over the same input can skip
    /// them ([`NearDupLookup::is_replaced`](crate::NearDupLookup::is_replaced)) instead of bringing
    /// the old copies back. The near-duplicates are every live document the rule matches, committed
    /// or not, so the same documents are kept whether and where commits fall, as long as no key has
    /// more live holders than
    /// [`DedupWriter::max_postings_per_key`](super::DedupWriter::max_postings_per_key) (replaced
    /// ones do not count; see
    /// [`DEFAULT_MAX_POSTINGS_PER_KEY`](crate::DEFAULT_MAX_POSTINGS_PER_KEY)).
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

/// What happened to a document given to [`DedupWriter`](super::DedupWriter).
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Added; no near-duplicate (or [`Policy::Off`], when the writer signed it).
    Added {
        /// Its fingerprint.
        fingerprint: Fingerprint,
    },
    /// Added under [`Policy::Off`] without a check, and signed by tantivy's indexing thread
    /// as it cuts the document's text (one analysis for the index and the signature, off the
    /// caller's thread), so its fingerprint is not known when `add_document` returns: read it
    /// from the index after the commit. The writer signs it itself, giving
    /// [`Outcome::Added`], when tantivy does not cut every fingerprinted field with the
    /// index's tokenizer ([`crate::SIMHASH_TOKENIZER_NAME`]).
    Queued,
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
    /// Not added, not signed ([`IdPolicy::KeepFirst`](super::IdPolicy::KeepFirst)): the id is
    /// taken.
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
    /// signed) and [`Outcome::Queued`] (signed later).
    pub fn fingerprint(&self) -> Option<Fingerprint> {
        match self {
            Outcome::Added { fingerprint }
            | Outcome::Duplicate { fingerprint, .. }
            | Outcome::Tagged { fingerprint, .. }
            | Outcome::Replaced { fingerprint, .. } => Some(*fingerprint),
            Outcome::IdTaken { .. } | Outcome::Queued => None,
        }
    }

    /// Why the document matched its nearest near-duplicate; `None` for [`Outcome::Added`],
    /// [`Outcome::Queued`] and [`Outcome::IdTaken`].
    pub fn evidence(&self) -> Option<Evidence> {
        match self {
            Outcome::Added { .. } | Outcome::Queued | Outcome::IdTaken { .. } => None,
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
