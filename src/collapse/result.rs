//! What a collapse returns: [`Collapsed`], its groups and hits, and the settings it was
//! computed with.

use super::RankKey;
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use crate::signature::{MatchRule, RuleSpec, Signature, Sketch};
use serde::{Deserialize, Serialize};
use tantivy::{DocAddress, Order};

/// One hit of a collapsed result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CollapsedHit<K> {
    /// The key the hit was ranked by (its score, or its fast field value).
    pub key: K,
    /// The user id (the id field's value; empty if the document has none, or when ids were
    /// not read: [`NearDupCollapse::read_ids`]).
    pub id: String,
    /// Where the document is, in the searcher of shard `shard`.
    pub address: DocAddress,
    /// The position of its index in the parts given to [`Collapsed::merge`]; 0 without merge.
    pub shard: u32,
    /// Its fingerprint (`None` for a document added without one: it never joins a group).
    pub fingerprint: Option<Fingerprint>,
    /// Its MinHash sketch, read with the fingerprint (all zero for a document added without
    /// one; `None` without a fingerprint): [`Collapsed::merge`] folds by the rule, which
    /// reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sketch: Option<Sketch>,
    /// The Hamming distance to the group's leader (0 for the leader; `None` when a fingerprint
    /// is missing, or for hits outside the returned groups).
    pub distance: Option<u32>,
    /// The sketches' resemblance estimate with the group's leader, for a member that joined it
    /// by the rule's resemblance branch (`None` for a leader, a member within the simhash
    /// distance, a fold by tag, and hits outside the returned groups).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resemblance: Option<f32>,
    /// Its stored group id, read only when collapsing [by tag](super::NearDupCollapse::by_tag).
    pub group: Option<String>,
}

/// A group of near-duplicate hits: the best-ranked one leads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CollapsedGroup<K> {
    /// The best-ranked hit of the group.
    pub leader: CollapsedHit<K>,
    /// The other hits of the window folded into this group, in rank order.
    pub members: Vec<CollapsedHit<K>>,
    /// The leader and its members: "1 + N similar pages".
    pub count: usize,
    /// Whether `count` is exact (the window held every hit of the query) or a lower bound.
    pub count_exact: bool,
}

/// The settings a result was computed with; merged parts must agree on them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct Settings {
    pub(super) limit: usize,
    pub(super) fetch: usize,
    pub(super) max_fetch: usize,
    /// The rule's simhash branch, narrowed to this distance.
    pub(super) max_distance: u32,
    /// The match rule's parameters (the merge folds by it).
    pub(super) rule: RuleSpec,
    pub(super) order: Order,
    pub(super) by_tag: bool,
    pub(super) keep_window: bool,
    pub(super) read_ids: bool,
    pub(super) exact_counts: bool,
    /// The hot-key bound of exact counts' lookups.
    pub(super) max_postings_per_key: usize,
}

impl Settings {
    /// The match rule (checked again: a part deserialised from a shard may carry anything).
    pub(super) fn rule(&self) -> Result<MatchRule> {
        MatchRule::new(self.rule.clone())
            .map_err(|e| Error::InvalidConfig(format!("a collapse result's settings: {e}")))
    }
}

/// The fruit of [`NearDupCollapse`](super::NearDupCollapse): groups in rank order of their leaders.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Collapsed<K> {
    pub(super) groups: Vec<CollapsedGroup<K>>,
    pub(super) rest: Vec<CollapsedHit<K>>,
    pub(super) cutoff: Option<K>,
    pub(super) settings: Settings,
}

impl<K: RankKey> Collapsed<K> {
    /// The groups, at most `limit`, in rank order of their leaders.
    pub fn groups(&self) -> &[CollapsedGroup<K>] {
        &self.groups
    }

    /// The groups, owned.
    pub fn into_groups(self) -> Vec<CollapsedGroup<K>> {
        self.groups
    }

    /// The hits of the window outside the returned groups (kept only with
    /// [`keep_window`](super::NearDupCollapse::keep_window), for merging).
    pub fn rest(&self) -> &[CollapsedHit<K>] {
        &self.rest
    }

    /// Whether the window held every hit of the query: counts are exact, and fewer than
    /// `limit` groups means there are no more.
    pub fn is_complete(&self) -> bool {
        self.cutoff.is_none()
    }

    /// The key of the `fetch`-th hit when the window is not complete: the window holds exactly
    /// the hits ranked strictly better.
    pub fn cutoff(&self) -> Option<&K> {
        self.cutoff.as_ref()
    }

    /// The number of hits the inner collector fetched (after widening).
    pub fn fetch(&self) -> usize {
        self.settings.fetch
    }

    /// The number of groups asked for.
    pub fn limit(&self) -> usize {
        self.settings.limit
    }
}

impl<K> CollapsedHit<K> {
    /// The hit's signature, when it has a fingerprint (a missing sketch reads as empty: such a
    /// document matches by simhash only).
    pub(super) fn signature(&self) -> Option<Signature> {
        Some(Signature {
            fingerprint: self.fingerprint?,
            sketch: self.sketch.clone().unwrap_or_default(),
        })
    }
}
