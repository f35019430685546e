//! What a collapse returns: [`Collapsed`], its groups and hits, and the settings it was
//! computed with.

use super::field::{GroupBy, LeaderOrder};
use super::rank::RankKey;
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use crate::signature::{MatchRule, RuleSpec, Signature, Sketch};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use tantivy::{DocAddress, Order};

/// One hit of a collapsed result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CollapsedHit<K> {
    /// The key the hit was ranked by (its score, or its fast field value).
    pub key: K,
    /// The user id (the id field's value; empty if the document has none, or when ids were
    /// not read: [`NearDupCollapse::read_ids`](super::NearDupCollapse::read_ids)).
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
    /// The value it was grouped by: its stored group id ([`GroupBy::Tag`]), or its value of
    /// the field ([`GroupBy::Field`]: a string as stored, a number in decimal, a bool as
    /// `true`/`false`, a date as its nanosecond UNIX timestamp); `None` when folding by the
    /// rule, or when the document has no value.
    pub group: Option<String>,
    /// Its value of the [leader order](super::NearDupCollapse::leader_order) field, as
    /// tantivy's order-preserving `u64` (carried so that [`Collapsed::merge`] chooses the same
    /// leaders).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) leader_value: Option<u64>,
}

/// A group of hits (near-duplicates, or equal on a key): it ranks where its best-ranked hit
/// ranks, which leads it unless a [leader order](super::NearDupCollapse::leader_order) chose
/// another.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CollapsedGroup<K> {
    /// The hit shown for the group: its best-ranked hit, or the first of its window hits in
    /// the leader order.
    pub leader: CollapsedHit<K>,
    /// The other hits of the window folded into this group, in rank order (with a leader
    /// order, the best-ranked hit may be one of them).
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
    pub(super) group_by: GroupBy,
    pub(super) leader_order: Option<LeaderOrder>,
    pub(super) keep_window: bool,
    pub(super) read_ids: bool,
    pub(super) exact_counts: bool,
    /// The hot-key bound of exact counts' lookups.
    pub(super) max_postings_per_key: usize,
}

impl Settings {
    /// The match rule (checked again: a part deserialised from a shard may carry anything).
    pub(super) fn rule(&self) -> Result<MatchRule> {
        MatchRule::new(self.rule)
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

    /// The derank mode: instead of dropping the hits folded into a group, a flat list where each
    /// group's leader keeps its place and the others are moved behind the leaders: every
    /// [`leader`](CollapsedGroup::leader) in group order, then every
    /// [`member`](CollapsedGroup::members) of every group in rank order (the rank tie rules of the
    /// [`NearDupCollapse`](super::NearDupCollapse) docs). The list holds the groups' hits of the
    /// window, as deterministic as the groups, and [`merge`](Self::merge) of shards gives the list
    /// of one index. Ask for as many groups as leading hits are wanted; as with the groups, the
    /// list is the whole truth only for the window ([`is_complete`](Self::is_complete) otherwise
    /// says that more hits, and so more moved hits, exist).
    ///
    /// Cost: sorting the members (no index access).
    ///
    /// ```
    /// # use tantivy::query::AllQuery;
    /// # use tantivy::schema::{Schema, FAST, STRING, TEXT};
    /// # use tantivy::{doc, Index, Order};
    /// # use tantivy_simhash::{NearDupCollapse, NearDupConfig, NearDupIndex, Policy};
    /// # let config = NearDupConfig::new("id", ["body"]);
    /// # let mut builder = Schema::builder();
    /// # let id = builder.add_text_field("id", STRING | FAST);
    /// # let body = builder.add_text_field("body", TEXT);
    /// # let rank = builder.add_u64_field("rank", FAST);
    /// # config.add_fields(&mut builder);
    /// # let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config)?;
    /// # let mut writer = index.writer(20_000_000, Policy::Off)?;
    /// let notice = "Copyright notice: this software is distributed under the terms of the \
    ///               licence below, without any warranty, in the hope that it will be useful.";
    /// writer.add_document(doc!(id => "a", body => notice, rank => 4u64))?;
    /// writer.add_document(doc!(id => "b", body => notice, rank => 3u64))?; // a copy of "a"
    /// writer.add_document(doc!(id => "c", body => "Release notes for version two.", rank => 2u64))?;
    /// # writer.commit()?;
    /// # let searcher = index.searcher()?;
    /// let collapse = NearDupCollapse::by_fast_field::<u64>(index.fields(), 10, "rank", Order::Desc);
    /// let results = collapse.search(&searcher, &AllQuery)?;
    /// let flat: Vec<&str> = results.deranked().iter().map(|h| h.id.as_str()).collect();
    /// assert_eq!(flat, ["a", "c", "b"]); // "b" is moved behind the leaders, not dropped
    /// # Ok::<(), tantivy_simhash::Error>(())
    /// ```
    pub fn deranked(&self) -> Vec<&CollapsedHit<K>> {
        let order = self.settings.order;
        let mut moved: Vec<&CollapsedHit<K>> =
            self.groups.iter().flat_map(|g| &g.members).collect();
        moved.sort_by(|a, b| rank_order(a, b, order));
        self.groups.iter().map(|g| &g.leader).chain(moved).collect()
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

/// Ranks two hits: key, then fingerprint, then user id, then shard and address.
pub(super) fn rank_order<K: RankKey>(
    a: &CollapsedHit<K>,
    b: &CollapsedHit<K>,
    order: Order,
) -> Ordering {
    a.key
        .rank_cmp(&b.key, order)
        .then_with(|| a.fingerprint.cmp(&b.fingerprint))
        .then_with(|| a.id.cmp(&b.id))
        .then_with(|| a.shard.cmp(&b.shard))
        .then_with(|| a.address.cmp(&b.address))
}
