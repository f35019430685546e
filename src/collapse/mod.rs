//! [`NearDupCollapse`]: one search result per near-duplicate group, with "N similar pages".
//!
//! Engines that collapse results need an exact key (Elasticsearch `collapse`, Solr signatures);
//! this collector folds hits whose fingerprints are within `k` (inclusive) of a higher-ranked hit
//! into that hit's group. It wraps tantivy's [`TopDocs`](tantivy::collector::TopDocs) and
//! **delegates `collect_segment`**, so a pure text query keeps tantivy's block-max WAND pruning
//! (`FilterCollector` and `tweak_score` would lose it). The inner collector ranks hits (by
//! score, or by a fast field); `merge_fruits` then reads each hit's fingerprint from its
//! segment's column and folds.
//!
//! ## What a result contains: the window
//!
//! The inner `TopDocs` fetches `fetch` hits (by default 3 x the number of groups asked for;
//! measured on natural-en, docs/PERFORMANCE.md: 1.31-1.35x the time of `TopDocs` returning as
//! many hits, against 1.42-1.55x for 4 x, and 2 x had to widen for 8 queries in 500).
//! The **window** is the set of hits the collapse works on:
//! - when the query has fewer than `fetch` hits, all of them ([`Collapsed::is_complete`]);
//! - otherwise every hit that ranks **strictly** better than the `fetch`-th hit (its key is the
//!   [`cutoff`](Collapsed::cutoff)); hits tied with the `fetch`-th are left out, because which of
//!   them `TopDocs` keeps depends on document addresses, so keeping them would make the result
//!   depend on how the corpus is split into segments or shards.
//!
//! Within the window, hits are ranked by their key (score descending, or the fast field in its
//! order), ties broken by fingerprint (already read, so free), then by user id (read only for
//! hits equal on key and fingerprint: exact duplicates), then by shard and address. Without
//! [`read_ids`](NearDupCollapse::read_ids), exact duplicates keep their address order (by
//! distance they fall in one group; only which of them leads depends on it). The fold walks
//! the window best first: a hit joins the **first** group whose leader is within `k` of it,
//! else it leads a new group while fewer than `limit` groups exist. A group's `count` is its
//! leader plus the members found in the window: exact when the window is complete, a lower
//! bound otherwise ([`CollapsedGroup::count_exact`]), unless
//! [`exact_counts`](NearDupCollapse::exact_counts) asks for one more pass over every hit.
//!
//! The result is the same for any segmentation of the index, as long as the keys are: fast
//! field values always are, single-term scores too, but tantivy sums the scores of several
//! query terms in an order that depends on where documents sit, so a multi-term score can
//! differ in its last bit (one ulp) between two layouts of the same documents, and two hits
//! that close may swap ranks.
//!
//! ## Widening
//!
//! Used directly as a collector (`searcher.search(&query, &collapse)`), one search is run with
//! `fetch` hits, and fewer than `limit` groups may come back. [`NearDupCollapse::search`]
//! re-searches instead, doubling `fetch` until `limit` groups are found, the window holds every
//! hit, or `fetch` reaches `max_fetch` (default 64 x `limit`): at most
//! `ceil(log2(max_fetch / fetch))` re-searches (5 with the defaults), whose fetch sizes sum to
//! less than twice `max_fetch`. At the bound the result says so ([`Collapsed::is_complete`] is
//! false and fewer than `limit` groups are returned).
//!
//! ## Collapsing by tag
//!
//! When documents were tagged at index time ([`Policy::Tag`](crate::Policy::Tag)), the stored
//! group id is an exact key: [`NearDupCollapse::by_tag`] folds a hit into the first leader with
//! the same group id (fingerprint distances are still reported; a hit without a group id stands
//! alone). It reads the group id of every hit in the window (one dictionary block per
//! distinct block touched). Across shards, group ids
//! compare as strings: they must have been assigned for the whole corpus (a `DedupWriter` per
//! shard names groups after that shard's first document, so merged groups follow the shards'
//! tags, not those one index would have given).
//!
//! ## Shards
//!
//! [`Collapsed`] is serde-serialisable and [`Collapsed::merge`] combines the results of several
//! indexes of one corpus (the leaf/root pattern of distributed tantivy engines). Guarantee: when
//! every shard was searched with the same settings, [`keep_window`](NearDupCollapse::keep_window)
//! on, and the same BM25 statistics (for example [`ShardStatistics`] over all shards; scores
//! computed from per-shard statistics are not comparable), the merge equals the result of one
//! index holding all the documents with that `fetch`, group for group, provided user ids are
//! unique and keys compare equal across indexes (see the caveat above on multi-term scores).
//! A shard must return its whole window (every hit with its fingerprint, id and key), not only
//! its groups: a shard's leader may be a member of another shard's leader globally.
//! From the shards' cutoffs the root finds exactly the single index's window (see
//! [`Collapsed::merge`]). [`NearDupCollapse::search_shards`] runs this in one process, with
//! widening.
//!
//! ```
//! use tantivy::query::TermQuery;
//! use tantivy::schema::{IndexRecordOption, Schema, FAST, STORED, STRING, TEXT};
//! use tantivy::{doc, Index, Term};
//! use tantivy_simhash::{NearDupCollapse, NearDupConfig, NearDupIndex, Policy};
//!
//! let config = NearDupConfig::new("id", ["body"]);
//! let mut builder = Schema::builder();
//! let id = builder.add_text_field("id", STRING | FAST | STORED);
//! let body = builder.add_text_field("body", TEXT);
//! config.add_fields(&mut builder);
//! let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config)?;
//! let mut writer = index.writer(50_000_000, Policy::Off)?;
//! let licence = "Permission is hereby granted, free of charge, to any person obtaining a copy \
//!                of this software, to deal in the software without restriction, including \
//!                the rights to use, copy, modify, merge, publish and distribute it.";
//! writer.add_document(doc!(id => "a", body => licence))?;
//! writer.add_document(doc!(id => "b", body => licence.to_uppercase()))?; // same fingerprint
//! writer.add_document(doc!(id => "c", body => "A guide to the software licences of Debian."))?;
//! writer.commit()?;
//!
//! let searcher = index.searcher()?;
//! let term = Term::from_field_text(body, "software");
//! let query = TermQuery::new(term, IndexRecordOption::WithFreqs);
//! // 10 groups, ranked by score (the collapse makes the inner TopDocs for each fetch size).
//! let collapse = NearDupCollapse::by_score(index.fields(), 10);
//! let results = collapse.search(&searcher, &query)?;
//! assert_eq!(results.groups().len(), 2);
//! let licence_group = results.groups().iter().find(|g| g.count == 2).unwrap();
//! assert_eq!(licence_group.members[0].distance, Some(0));
//! assert!(licence_group.count_exact);
//! // Plain collector use (one search, no widening):
//! let once = searcher.search(&query, &collapse)?;
//! assert_eq!(once, results);
//! # Ok::<(), tantivy_simhash::Error>(())
//! ```

use crate::columns::field_name;
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use crate::schema::NearDupFields;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt::Debug;
use std::sync::Arc;
use tantivy::collector::sort_key::{Comparator, ComparatorEnum};
use tantivy::collector::{Collector, SegmentCollector, TopDocs};
use tantivy::columnar::Column;
use tantivy::fastfield::FastFieldReaders;
use tantivy::fastfield::FastValue;
use tantivy::query::{Bm25StatisticsProvider, EnableScoring, Query, Weight};
use tantivy::schema::{Field, Schema};
use tantivy::{DocAddress, DocId, Order, Score, Searcher, SegmentOrdinal, SegmentReader, Term};

/// Default over-fetch: hits fetched per group asked for.
pub const DEFAULT_OVERFETCH: usize = 3;
/// Default widening bound: at most this many hits per group asked for.
pub const DEFAULT_MAX_OVERFETCH: usize = 64;

/// A sort key the inner collector ranks hits by: the score (`f32`) or a fast field value
/// (`Option<u64>`, `Option<i64>`, `Option<f64>`, ...).
pub trait RankKey:
    Clone + PartialEq + Debug + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// `Less` when `self` ranks before `other` in `order`, as tantivy's `TopDocs` ranks them.
    fn rank_cmp(&self, other: &Self, order: Order) -> Ordering;
}

impl RankKey for f32 {
    fn rank_cmp(&self, other: &Self, order: Order) -> Ordering {
        let natural = self.partial_cmp(other).unwrap_or(Ordering::Equal);
        match order {
            Order::Desc => natural.reverse(),
            Order::Asc => natural,
        }
    }
}

impl<T> RankKey for Option<T>
where
    T: PartialOrd + Clone + Debug + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    /// `None` (no value) ranks last in both orders, as in `TopDocs::order_by_fast_field`.
    fn rank_cmp(&self, other: &Self, order: Order) -> Ordering {
        match (self, other) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some(a), Some(b)) => {
                let natural = a.partial_cmp(b).unwrap_or(Ordering::Equal);
                match order {
                    Order::Desc => natural.reverse(),
                    Order::Asc => natural,
                }
            }
        }
    }
}

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
    /// The Hamming distance to the group's leader (0 for the leader; `None` when a fingerprint
    /// is missing, or for hits outside the returned groups).
    pub distance: Option<u32>,
    /// Its stored group id, read only when collapsing [by tag](NearDupCollapse::by_tag).
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Settings {
    limit: usize,
    fetch: usize,
    max_fetch: usize,
    max_distance: u32,
    order: Order,
    by_tag: bool,
    keep_window: bool,
    read_ids: bool,
    exact_counts: bool,
}

/// The fruit of [`NearDupCollapse`]: groups in rank order of their leaders.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Collapsed<K> {
    groups: Vec<CollapsedGroup<K>>,
    rest: Vec<CollapsedHit<K>>,
    cutoff: Option<K>,
    settings: Settings,
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
    /// [`keep_window`](NearDupCollapse::keep_window), for merging).
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

    /// Combines the results of several indexes of one corpus (shards) into the result one index
    /// holding all their documents would give.
    ///
    /// Each part must come from a [`NearDupCollapse`] with the same settings (limit, fetch,
    /// distance, order, tag mode) and [`keep_window`](NearDupCollapse::keep_window) on, and the
    /// keys must be comparable across shards (the same BM25 statistics, see
    /// [`ShardStatistics`], or a fast field). With unique user ids the merge then equals the
    /// single index's result (up to the one-ulp caveat on multi-term scores in the
    /// [module docs](self)); hits get `shard` = their part's position in `parts`.
    ///
    /// How: a shard's window holds every hit of that shard ranked strictly better than its
    /// cutoff, and at least `fetch` of its hits rank at or above it; so every hit ranked
    /// strictly better than the best-ranked shard cutoff is present, and the single index's
    /// `fetch`-th key ranks at or below that cutoff. The root sorts those hits, cuts at the
    /// `fetch`-th (or keeps them all when fewer), and folds. The merged result can itself be
    /// merged (it keeps its window). Cost: sorting the parts' windows, then the fold
    /// (window x limit distance checks).
    ///
    /// Errors: [`Error::InvalidConfig`] when `parts` is empty, the settings differ, or a part
    /// was collected without `keep_window`.
    ///
    /// ```
    /// # use tantivy::query::AllQuery;
    /// # use tantivy::schema::{Schema, FAST, STRING, TEXT};
    /// # use tantivy::{doc, Index, Order};
    /// # use tantivy_simhash::{Collapsed, NearDupCollapse, NearDupConfig, NearDupIndex, Policy};
    /// # let config = NearDupConfig::new("id", ["body"]);
    /// # let shard = |docs: &[(&str, &str, u64)]| -> tantivy_simhash::Result<NearDupIndex> {
    /// #     let mut builder = Schema::builder();
    /// #     let id = builder.add_text_field("id", STRING | FAST);
    /// #     let body = builder.add_text_field("body", TEXT);
    /// #     let date = builder.add_u64_field("date", FAST);
    /// #     config.add_fields(&mut builder);
    /// #     let tantivy_index = Index::create_in_ram(builder.build());
    /// #     let index = NearDupIndex::create(tantivy_index, config.clone())?;
    /// #     let mut writer = index.writer(20_000_000, Policy::Off)?;
    /// #     for (i, text, d) in docs {
    /// #         writer.add_document(doc!(id => *i, body => *text, date => *d))?;
    /// #     }
    /// #     writer.commit()?;
    /// #     Ok(index)
    /// # };
    /// let notice = "Copyright notice: this software is distributed under the terms of the \
    ///               licence below, without any warranty, in the hope that it will be useful.";
    /// let shards = [
    ///     shard(&[("a", notice, 3), ("b", "Release notes for version two of the tool.", 2)])?,
    ///     shard(&[("c", notice, 1)])?,
    /// ];
    /// // Each shard (leaf) collapses its own documents, keeping its whole window...
    /// let collapse =
    ///     NearDupCollapse::by_fast_field::<u64>(shards[0].fields(), 10, "date", Order::Desc).keep_window(true);
    /// let mut parts = Vec::new();
    /// for index in &shards {
    ///     let part = index.searcher()?.search(&AllQuery, &collapse)?;
    ///     let json = serde_json::to_string(&part)?; // ... ships it to the root ...
    ///     parts.push(serde_json::from_str::<Collapsed<Option<u64>>>(&json)?);
    /// }
    /// // ... and the root merges: "c" (shard 1) folds into "a" (shard 0).
    /// let merged = Collapsed::merge(parts)?;
    /// let groups = merged.groups();
    /// assert_eq!(groups.len(), 2);
    /// assert_eq!((groups[0].leader.id.as_str(), groups[0].count), ("a", 2));
    /// assert_eq!((groups[0].members[0].id.as_str(), groups[0].members[0].shard), ("c", 1));
    /// # Ok::<(), tantivy_simhash::Error>(())
    /// ```
    pub fn merge(parts: Vec<Collapsed<K>>) -> Result<Collapsed<K>> {
        let Some(first) = parts.first() else {
            return Err(Error::InvalidConfig(
                "Collapsed::merge got no parts; pass the result of every shard".into(),
            ));
        };
        let settings = first.settings;
        for (i, part) in parts.iter().enumerate() {
            if !part.settings.keep_window {
                return Err(Error::InvalidConfig(format!(
                    "part {i} was collected without keep_window, so its hits outside the \
                     returned groups are missing; search every shard with \
                     NearDupCollapse::keep_window(true)"
                )));
            }
            if part.settings != settings {
                return Err(Error::InvalidConfig(format!(
                    "part {i} was collected with {:?} but part 0 with {:?}; search every shard \
                     with the same NearDupCollapse settings (and the same fetch)",
                    part.settings, settings
                )));
            }
        }
        let order = settings.order;
        let mut best_cutoff: Option<K> = None;
        for part in &parts {
            if let Some(c) = &part.cutoff {
                let better = best_cutoff
                    .as_ref()
                    .is_none_or(|b| c.rank_cmp(b, order) == Ordering::Less);
                if better {
                    best_cutoff = Some(c.clone());
                }
            }
        }
        let mut hits = Vec::new();
        for (shard, part) in parts.into_iter().enumerate() {
            let part_hits = part
                .groups
                .into_iter()
                .flat_map(|g| std::iter::once(g.leader).chain(g.members))
                .chain(part.rest);
            hits.extend(part_hits.map(|mut hit| {
                hit.shard = shard as u32;
                hit
            }));
        }
        if let Some(c) = &best_cutoff {
            hits.retain(|h| h.key.rank_cmp(c, order) == Ordering::Less);
        }
        hits.sort_by(|a, b| rank_order(a, b, order));
        let cutoff = window_cutoff(&mut hits, settings.fetch, order).or(best_cutoff);
        for hit in &mut hits {
            hit.distance = None;
        }
        let (groups, rest) = fold(hits, &settings, cutoff.is_none());
        Ok(Collapsed {
            groups,
            rest,
            cutoff,
            settings,
        })
    }
}

/// Fails when the inner collector's hits are not ranked in `order`: the collapse was told
/// another order than the collector ranks in, and every window, cutoff and group would be
/// wrong.
fn check_rank_order<K: RankKey>(ranked: &[(K, DocAddress)], order: Order) -> tantivy::Result<()> {
    let misordered = ranked
        .windows(2)
        .position(|pair| pair[1].0.rank_cmp(&pair[0].0, order) == Ordering::Less);
    match misordered {
        None => Ok(()),
        Some(i) => Err(tantivy::TantivyError::InvalidArgument(format!(
            "NearDupCollapse was told the inner collector ranks in {order:?} order, but it \
             ranked key {:?} before {:?}; give NearDupCollapse::with_top_docs the order its \
             collector ranks in, or use by_score / by_fast_field, which state it once",
            ranked[i].0,
            ranked[i + 1].0
        ))),
    }
}

/// Ranks two hits: key, then fingerprint, then user id, then shard and address.
fn rank_order<K: RankKey>(a: &CollapsedHit<K>, b: &CollapsedHit<K>, order: Order) -> Ordering {
    a.key
        .rank_cmp(&b.key, order)
        .then_with(|| a.fingerprint.cmp(&b.fingerprint))
        .then_with(|| a.id.cmp(&b.id))
        .then_with(|| a.shard.cmp(&b.shard))
        .then_with(|| a.address.cmp(&b.address))
}

/// With `hits` sorted best first: when there are at least `fetch`, keeps only those ranked
/// strictly better than the `fetch`-th and returns its key.
fn window_cutoff<K: RankKey>(
    hits: &mut Vec<CollapsedHit<K>>,
    fetch: usize,
    order: Order,
) -> Option<K> {
    if fetch == 0 || hits.len() < fetch {
        return None;
    }
    let cutoff = hits[fetch - 1].key.clone();
    hits.truncate(fetch);
    while hits
        .last()
        .is_some_and(|h| h.key.rank_cmp(&cutoff, order) != Ordering::Less)
    {
        hits.pop();
    }
    Some(cutoff)
}

/// The greedy fold over the window (sorted best first): the first `limit` groups, and the
/// window's other hits.
fn fold<K: RankKey>(
    window: Vec<CollapsedHit<K>>,
    settings: &Settings,
    complete: bool,
) -> (Vec<CollapsedGroup<K>>, Vec<CollapsedHit<K>>) {
    let mut groups: Vec<CollapsedGroup<K>> = Vec::with_capacity(settings.limit.min(window.len()));
    let mut rest = Vec::new();
    'hits: for mut hit in window {
        for group in groups.iter_mut() {
            let leader = &group.leader;
            let distance = match (leader.fingerprint, hit.fingerprint) {
                (Some(a), Some(b)) => Some(a.distance(b)),
                _ => None,
            };
            let joins = if settings.by_tag {
                leader.group.is_some() && leader.group == hit.group
            } else {
                distance.is_some_and(|d| d <= settings.max_distance)
            };
            if joins {
                hit.distance = distance;
                group.members.push(hit);
                group.count += 1;
                continue 'hits;
            }
        }
        if groups.len() < settings.limit {
            hit.distance = hit.fingerprint.map(|_| 0);
            groups.push(CollapsedGroup {
                leader: hit,
                members: Vec::new(),
                count: 1,
                count_exact: complete,
            });
        } else {
            hit.distance = None;
            rest.push(hit);
        }
    }
    (groups, rest)
}

/// Folds near-duplicate hits of an inner top-docs collector into groups. See the
/// [module docs](self).
///
/// Build it with [`by_score`](NearDupCollapse::by_score) or
/// [`by_fast_field`](NearDupCollapse::by_fast_field), which make the inner `TopDocs` themselves
/// (the rank order is stated once), or with [`with_top_docs`](NearDupCollapse::with_top_docs)
/// for any other sort key. `C` is the inner collector's type. Page through groups by asking
/// for more, not with `and_offset`.
pub struct NearDupCollapse<C> {
    inner: C,
    /// Makes the inner collector for a fetch size (widening asks for larger ones).
    top_docs: Arc<dyn Fn(usize) -> C + Send + Sync>,
    settings: Settings,
    fields: NearDupFields,
}

/// The names of the columns a collapse reads, from the searched index's schema (fast fields are
/// opened by name).
struct ColumnNames {
    fingerprint: String,
    id: String,
    group: Option<String>,
}

impl ColumnNames {
    fn new(fields: NearDupFields, schema: &Schema) -> tantivy::Result<ColumnNames> {
        Ok(ColumnNames {
            fingerprint: field_name(schema, fields.fingerprint)?.to_string(),
            id: field_name(schema, fields.id)?.to_string(),
            group: match fields.group {
                Some(g) => Some(field_name(schema, g)?.to_string()),
                None => None,
            },
        })
    }

    /// For a search over no segment, where nothing is read.
    fn empty() -> ColumnNames {
        ColumnNames {
            fingerprint: String::new(),
            id: String::new(),
            group: None,
        }
    }
}

impl NearDupCollapse<()> {
    /// Collapses the hits of the index `fields` is the handle of into at most `limit` groups,
    /// ranked by score (best first), as `TopDocs::with_limit(fetch).order_by_score()` ranks
    /// them. Defaults: `k` = the layout's
    /// [`max_distance`](crate::BlockLayout::max_distance), fetch = 3 x `limit`, max fetch = 64
    /// x `limit`. Cost: nothing until searched.
    pub fn by_score(
        fields: NearDupFields,
        limit: usize,
    ) -> NearDupCollapse<impl Collector<Fruit = Vec<(Score, DocAddress)>>> {
        NearDupCollapse::with_top_docs(fields, limit, Order::Desc, |fetch| {
            TopDocs::with_limit(fetch).order_by_score()
        })
    }

    /// Like [`by_score`](Self::by_score), ranked by the fast field `field` in `order`, as
    /// `TopDocs::with_limit(fetch).order_by_fast_field::<T>(field, order)` ranks them
    /// (documents without a value last). Errors at search time when `field` is not a fast
    /// field of type `T`.
    pub fn by_fast_field<T>(
        fields: NearDupFields,
        limit: usize,
        field: &str,
        order: Order,
    ) -> NearDupCollapse<impl Collector<Fruit = Vec<(Option<T>, DocAddress)>>>
    where
        T: FastValue + Serialize + DeserializeOwned,
        ComparatorEnum: Comparator<Option<T>>,
    {
        let field = field.to_string();
        NearDupCollapse::with_top_docs(fields, limit, order, move |fetch| {
            TopDocs::with_limit(fetch).order_by_fast_field::<T>(field.clone(), order)
        })
    }
}

impl<C> NearDupCollapse<C> {
    /// Collapses with the inner collector `top_docs(fetch)` makes, which must rank hits in
    /// `order` (for any sort key `by_score` and `by_fast_field` do not cover, such as
    /// `TopDocs::order_by` or `tweak_score`). A fruit that is not in `order` is an error at
    /// search time ([`Error::Tantivy`] saying so), never a silently wrong result. Defaults as
    /// in [`by_score`](NearDupCollapse::by_score).
    ///
    /// ```
    /// # use tantivy::collector::TopDocs;
    /// # use tantivy::query::AllQuery;
    /// # use tantivy::schema::{Schema, FAST, STRING, TEXT};
    /// # use tantivy::{doc, Index, Order};
    /// # use tantivy_simhash::{NearDupCollapse, NearDupConfig, NearDupIndex, Policy};
    /// # let config = NearDupConfig::new("id", ["body"]);
    /// # let mut builder = Schema::builder();
    /// # let id = builder.add_text_field("id", STRING | FAST);
    /// # let body = builder.add_text_field("body", TEXT);
    /// # let date = builder.add_u64_field("date", FAST);
    /// # config.add_fields(&mut builder);
    /// # let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config)?;
    /// # let mut writer = index.writer(20_000_000, Policy::Off)?;
    /// # writer.add_document(doc!(id => "a", body => "the first text of the two", date => 1u64))?;
    /// # writer.add_document(doc!(id => "b", body => "another text entirely here", date => 2u64))?;
    /// # writer.commit()?;
    /// # let searcher = index.searcher()?;
    /// // Told descending, but the collector ranks ascending: an error, not wrong groups.
    /// let confused = NearDupCollapse::with_top_docs(index.fields(), 10, Order::Desc, |n| {
    ///     TopDocs::with_limit(n).order_by_fast_field::<u64>("date", Order::Asc)
    /// });
    /// assert!(confused.search(&searcher, &AllQuery).is_err());
    /// # Ok::<(), tantivy_simhash::Error>(())
    /// ```
    pub fn with_top_docs(
        fields: NearDupFields,
        limit: usize,
        order: Order,
        top_docs: impl Fn(usize) -> C + Send + Sync + 'static,
    ) -> Self {
        let fetch = limit.saturating_mul(DEFAULT_OVERFETCH).max(1);
        NearDupCollapse {
            inner: top_docs(fetch),
            top_docs: Arc::new(top_docs),
            settings: Settings {
                limit,
                fetch,
                max_fetch: limit.saturating_mul(DEFAULT_MAX_OVERFETCH).max(fetch),
                max_distance: fields.layout().max_distance(),
                order,
                by_tag: false,
                keep_window: false,
                read_ids: true,
                exact_counts: false,
            },
            fields,
        }
    }

    /// Fetches `fetch` hits (at least 1) before folding. Raises `max_fetch` to it if needed.
    pub fn fetch(mut self, fetch: usize) -> Self {
        self.settings.fetch = fetch.max(1);
        self.settings.max_fetch = self.settings.max_fetch.max(self.settings.fetch);
        self.inner = (self.top_docs)(self.settings.fetch);
        self
    }

    /// Bounds the widening of [`search`](Self::search): it never fetches more than `max_fetch`
    /// hits (at least the initial fetch).
    pub fn max_fetch(mut self, max_fetch: usize) -> Self {
        self.settings.max_fetch = max_fetch.max(self.settings.fetch);
        self
    }

    /// Folds hits within `max_distance` (inclusive) of a leader. Any value works (fingerprints
    /// are compared directly, not through keys).
    pub fn max_distance(mut self, max_distance: u32) -> Self {
        self.settings.max_distance = max_distance;
        self
    }

    /// Folds by the group id stored under [`Policy::Tag`](crate::Policy::Tag) instead of by
    /// fingerprint distance. Errors with [`Error::Schema`] when the index has no group field.
    pub fn by_tag(mut self) -> Result<Self> {
        if self.fields.group.is_none() {
            return Err(Error::Schema {
                field: "group".into(),
                problem: "collapsing by tag reads the group field that Policy::Tag fills, but \
                          the configuration has none; keep NearDupConfig's group field"
                    .into(),
            });
        }
        self.settings.by_tag = true;
        Ok(self)
    }

    /// Keeps every hit of the window in the result (not only the returned groups), with its
    /// id, as [`Collapsed::merge`] needs. Costs one id read per hit of the window.
    pub fn keep_window(mut self, keep: bool) -> Self {
        self.settings.keep_window = keep;
        self
    }

    /// Reads the user id of every returned hit (the default). Without, ids are read only where
    /// the ranking needs them (hits tied on their key) and are empty elsewhere: use the
    /// addresses. Reading an id decompresses a block of the id column's dictionary (the reads
    /// are batched per segment in ordinal order, so a block is read once per search); on
    /// natural-en this is most of the cost of a collapse (docs/PERFORMANCE.md).
    /// [`keep_window`](Self::keep_window) always reads them.
    pub fn read_ids(mut self, read_ids: bool) -> Self {
        self.settings.read_ids = read_ids;
        self
    }

    /// Makes [`search`](Self::search) and [`search_shards`](Self::search_shards) count every
    /// group exactly when the window does not hold every hit: the count of a leader becomes
    /// the number of hits of the query whose first returned leader within `k` (in rank order)
    /// it is, as if every hit had been folded. The member lists stay those of the window.
    ///
    /// Cost: one more pass over every hit of the query, without pruning (like tantivy's
    /// `Count`), with one fingerprint read per hit and up to `limit` distance checks; by tag,
    /// one group ordinal read per hit instead.
    pub fn exact_counts(mut self, exact: bool) -> Self {
        self.settings.exact_counts = exact;
        self
    }

    fn with_fetch(&self, fetch: usize) -> NearDupCollapse<C> {
        NearDupCollapse {
            inner: (self.top_docs)(fetch),
            top_docs: self.top_docs.clone(),
            settings: Settings {
                fetch,
                ..self.settings
            },
            fields: self.fields,
        }
    }

    /// Searches `query` and collapses, widening the fetch (doubling it) while fewer than
    /// `limit` groups are found and more hits exist, up to `max_fetch`. See the
    /// [module docs](self) for the bound and the guarantee.
    ///
    /// Cost: one search per fetch tried (block-max pruning kept when the query allows it), one
    /// fingerprint read per hit fetched, one id read per returned hit (and per tied hit).
    /// Errors: tantivy errors (for example the inner collector's fast field is missing).
    pub fn search<K>(&self, searcher: &Searcher, query: &dyn Query) -> Result<Collapsed<K>>
    where
        C: Collector<Fruit = Vec<(K, DocAddress)>>,
        K: RankKey,
    {
        let mut result = self.widen(|collapse| Ok(searcher.search(query, collapse)?))?;
        if self.settings.exact_counts {
            self.count_exactly(&[searcher], query, &mut result)?;
        }
        Ok(result)
    }

    /// Like [`search`](Self::search) over several indexes of one corpus: each shard is searched
    /// with BM25 statistics summed over all shards ([`ShardStatistics`]) and its whole window
    /// kept, then [`Collapsed::merge`] combines them; widening re-searches every shard. The
    /// result equals [`search`](Self::search) on one index holding all the documents (ids
    /// unique; see the module docs on multi-term scores), and keeps its window.
    ///
    /// Cost: per fetch tried, one search per shard (pruning kept) with one id read per hit of
    /// its window, BM25 statistics asked of every shard, then the merge. Errors: tantivy
    /// errors; [`Error::InvalidConfig`] when `shards` is empty.
    pub fn search_shards<K>(&self, shards: &[&Searcher], query: &dyn Query) -> Result<Collapsed<K>>
    where
        C: Collector<Fruit = Vec<(K, DocAddress)>>,
        K: RankKey,
    {
        let statistics = ShardStatistics::new(shards.to_vec());
        self.widen(|collapse| {
            let collapse = NearDupCollapse {
                inner: (collapse.top_docs)(collapse.settings.fetch),
                top_docs: collapse.top_docs.clone(),
                settings: Settings {
                    keep_window: true,
                    ..collapse.settings
                },
                fields: collapse.fields,
            };
            let mut parts = Vec::with_capacity(shards.len());
            for shard in shards {
                parts.push(shard.search_with_statistics_provider(query, &collapse, &statistics)?);
            }
            Collapsed::merge(parts)
        })
        .and_then(|mut result| {
            if self.settings.exact_counts {
                self.count_exactly(shards, query, &mut result)?;
            }
            Ok(result)
        })
    }

    /// Counts, over every hit of `query` in `searchers`, the hits whose first leader within
    /// `k` (or with the same tag) is each returned leader.
    fn count_exactly<K: RankKey>(
        &self,
        searchers: &[&Searcher],
        query: &dyn Query,
        result: &mut Collapsed<K>,
    ) -> Result<()> {
        if result.is_complete() || result.groups.is_empty() {
            return Ok(());
        }
        let k = self.settings.max_distance;
        let leaders: Vec<Option<Fingerprint>> =
            result.groups.iter().map(|g| g.leader.fingerprint).collect();
        let tags: Vec<Option<&str>> = result
            .groups
            .iter()
            .map(|g| g.leader.group.as_deref())
            .collect();
        let mut counts = vec![0usize; leaders.len()];
        for searcher in searchers {
            let weight = query.weight(EnableScoring::disabled_from_searcher(searcher))?;
            let names = ColumnNames::new(self.fields, searcher.schema())?;
            for seg in searcher.segment_readers() {
                let alive = seg.alive_bitset();
                if self.settings.by_tag {
                    let Some(group_field) = &names.group else {
                        continue;
                    };
                    let Some(column) = seg.fast_fields().str(group_field)? else {
                        continue;
                    };
                    // The leaders' tags as this segment's term ordinals.
                    let mut ords: Vec<Option<u64>> = Vec::with_capacity(tags.len());
                    for tag in &tags {
                        ords.push(match tag {
                            Some(t) => column.dictionary().term_ord(t.as_bytes())?,
                            None => None,
                        });
                    }
                    if ords.iter().all(Option::is_none) {
                        continue;
                    }
                    weight.for_each_no_score(seg, &mut |docs| {
                        for &doc in docs {
                            if alive.is_some_and(|a| !a.is_alive(doc)) {
                                continue;
                            }
                            let Some(ord) = column.ords().first(doc) else {
                                continue;
                            };
                            if let Some(i) = ords.iter().position(|&o| o == Some(ord)) {
                                counts[i] += 1;
                            }
                        }
                    })?;
                } else {
                    let column = seg.fast_fields().u64(&names.fingerprint)?;
                    weight.for_each_no_score(seg, &mut |docs| {
                        for &doc in docs {
                            if alive.is_some_and(|a| !a.is_alive(doc)) {
                                continue;
                            }
                            let Some(fp) = column.first(doc).map(Fingerprint) else {
                                continue;
                            };
                            let first = leaders
                                .iter()
                                .position(|l| l.is_some_and(|l| l.distance(fp) <= k));
                            if let Some(i) = first {
                                counts[i] += 1;
                            }
                        }
                    })?;
                }
            }
        }
        for (group, count) in result.groups.iter_mut().zip(counts) {
            // A leader without a fingerprint (or tag) is counted by nobody but itself.
            let unkeyed = if self.settings.by_tag {
                group.leader.group.is_none()
            } else {
                group.leader.fingerprint.is_none()
            };
            group.count = if unkeyed { 1 } else { count };
            group.count_exact = true;
        }
        Ok(())
    }

    fn widen<K: RankKey>(
        &self,
        mut run: impl FnMut(&NearDupCollapse<C>) -> Result<Collapsed<K>>,
    ) -> Result<Collapsed<K>> {
        let mut fetch = self.settings.fetch;
        loop {
            let result = run(&self.with_fetch(fetch))?;
            if result.groups.len() >= self.settings.limit
                || result.is_complete()
                || fetch >= self.settings.max_fetch
            {
                return Ok(result);
            }
            fetch = fetch.saturating_mul(2).min(self.settings.max_fetch);
        }
    }
}

/// The per-segment collector of [`NearDupCollapse`]: the inner one, plus what the merge needs.
pub struct CollapseSegmentCollector<S> {
    inner: S,
    segment_ord: SegmentOrdinal,
    fast_fields: FastFieldReaders,
    schema: Schema,
}

/// The per-segment fruit of [`NearDupCollapse`]: the inner fruit and the segment's columns.
pub struct CollapseSegmentFruit<T> {
    inner: T,
    segment_ord: SegmentOrdinal,
    fast_fields: FastFieldReaders,
    schema: Schema,
}

impl<S: SegmentCollector> SegmentCollector for CollapseSegmentCollector<S> {
    type Fruit = CollapseSegmentFruit<S::Fruit>;

    fn collect(&mut self, doc: DocId, score: Score) {
        self.inner.collect(doc, score);
    }

    fn collect_block(&mut self, docs: &[DocId]) {
        self.inner.collect_block(docs);
    }

    fn harvest(self) -> Self::Fruit {
        CollapseSegmentFruit {
            inner: self.inner.harvest(),
            segment_ord: self.segment_ord,
            fast_fields: self.fast_fields,
            schema: self.schema,
        }
    }
}

impl<C, K> Collector for NearDupCollapse<C>
where
    C: Collector<Fruit = Vec<(K, DocAddress)>>,
    K: RankKey,
{
    type Fruit = Collapsed<K>;
    type Child = CollapseSegmentCollector<C::Child>;

    fn check_schema(&self, schema: &Schema) -> tantivy::Result<()> {
        ColumnNames::new(self.fields, schema)?;
        self.inner.check_schema(schema)
    }

    fn for_segment(
        &self,
        segment_ord: SegmentOrdinal,
        segment: &SegmentReader,
    ) -> tantivy::Result<Self::Child> {
        Ok(CollapseSegmentCollector {
            inner: self.inner.for_segment(segment_ord, segment)?,
            segment_ord,
            fast_fields: segment.fast_fields().clone(),
            schema: segment.schema().clone(),
        })
    }

    fn requires_scoring(&self) -> bool {
        self.inner.requires_scoring()
    }

    /// Delegated, so the inner collector's pruning (block-max WAND) is kept.
    fn collect_segment(
        &self,
        weight: &dyn Weight,
        segment_ord: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<CollapseSegmentFruit<<C::Child as SegmentCollector>::Fruit>> {
        Ok(CollapseSegmentFruit {
            inner: self.inner.collect_segment(weight, segment_ord, reader)?,
            segment_ord,
            fast_fields: reader.fast_fields().clone(),
            schema: reader.schema().clone(),
        })
    }

    fn merge_fruits(
        &self,
        segment_fruits: Vec<CollapseSegmentFruit<<C::Child as SegmentCollector>::Fruit>>,
    ) -> tantivy::Result<Collapsed<K>> {
        let mut segments: Vec<Option<FastFieldReaders>> = Vec::new();
        let mut inner_fruits = Vec::with_capacity(segment_fruits.len());
        let mut names = None;
        for fruit in segment_fruits {
            if names.is_none() {
                names = Some(ColumnNames::new(self.fields, &fruit.schema)?);
            }
            let ord = fruit.segment_ord as usize;
            if segments.len() <= ord {
                segments.resize(ord + 1, None);
            }
            segments[ord] = Some(fruit.fast_fields);
            inner_fruits.push(fruit.inner);
        }
        let ranked = self.inner.merge_fruits(inner_fruits)?;
        let Some(names) = names else {
            // No segment: nothing was ranked.
            return self.fold_ranked(ranked, &segments, &ColumnNames::empty());
        };
        self.fold_ranked(ranked, &segments, &names)
    }
}

impl<C> NearDupCollapse<C> {
    fn fold_ranked<K: RankKey>(
        &self,
        ranked: Vec<(K, DocAddress)>,
        segments: &[Option<FastFieldReaders>],
        names: &ColumnNames,
    ) -> tantivy::Result<Collapsed<K>> {
        let settings = self.settings;
        let order = settings.order;
        check_rank_order(&ranked, order)?;
        let mut fingerprints: Vec<Option<Column<u64>>> = vec![None; segments.len()];
        let mut window = Vec::with_capacity(ranked.len());
        for (key, address) in ranked {
            let ord = address.segment_ord as usize;
            let fingerprint = match segments.get(ord).and_then(Option::as_ref) {
                Some(ff) => {
                    if fingerprints[ord].is_none() {
                        fingerprints[ord] = Some(ff.u64(&names.fingerprint)?);
                    }
                    fingerprints[ord]
                        .as_ref()
                        .and_then(|col| col.first(address.doc_id))
                        .map(Fingerprint)
                }
                None => None,
            };
            window.push(CollapsedHit {
                key,
                id: String::new(),
                address,
                shard: 0,
                fingerprint,
                distance: None,
                group: None,
            });
        }
        // The inner collector returns at most `fetch` hits: exactly `fetch` means there may be
        // more, tied with the last one.
        let cutoff = window_cutoff(&mut window, settings.fetch, order);

        // Ties on the key: by fingerprint (already read), then by user id for hits equal on
        // both (exact duplicates), so the order does not depend on addresses.
        window.sort_by(|a, b| rank_order(a, b, order));
        if settings.read_ids || settings.keep_window {
            let mut tied = vec![false; window.len()];
            let mut start = 0;
            while start < window.len() {
                let mut end = start + 1;
                while end < window.len()
                    && window[end].fingerprint == window[start].fingerprint
                    && window[end].key.rank_cmp(&window[start].key, order) == Ordering::Equal
                {
                    end += 1;
                }
                if end - start > 1 {
                    tied[start..end].iter_mut().for_each(|t| *t = true);
                }
                start = end;
            }
            if tied.iter().any(|&t| t) {
                let targets: Vec<&mut CollapsedHit<K>> = window
                    .iter_mut()
                    .zip(&tied)
                    .filter(|(_, &t)| t)
                    .map(|(h, _)| h)
                    .collect();
                read_strings(targets, segments, &names.id, |h| &mut h.id)?;
                window.sort_by(|a, b| rank_order(a, b, order));
            }
        }
        if settings.by_tag {
            if let Some(group_field) = &names.group {
                let targets: Vec<&mut CollapsedHit<K>> = window.iter_mut().collect();
                read_strings(targets, segments, group_field, |h| &mut h.group)?;
            }
        }

        let (mut groups, mut rest) = fold(window, &settings, cutoff.is_none());
        let mut needs_id: Vec<&mut CollapsedHit<K>> = Vec::new();
        for group in groups.iter_mut() {
            needs_id.push(&mut group.leader);
            needs_id.extend(group.members.iter_mut());
        }
        if settings.keep_window {
            needs_id.extend(rest.iter_mut());
        } else {
            rest.clear();
        }
        if settings.read_ids || settings.keep_window {
            needs_id.retain(|h| h.id.is_empty());
            read_strings(needs_id, segments, &names.id, |h| &mut h.id)?;
        }
        Ok(Collapsed {
            groups,
            rest,
            cutoff,
            settings,
        })
    }
}

/// Somewhere a string read from a column goes.
trait StringSlot {
    fn set(&mut self, value: String);
}

impl StringSlot for String {
    fn set(&mut self, value: String) {
        *self = value;
    }
}

impl StringSlot for Option<String> {
    fn set(&mut self, value: String) {
        *self = Some(value);
    }
}

/// Reads the string column `field` for each target, per segment in term-ordinal order (each
/// dictionary block touched is decompressed once).
fn read_strings<K, T: StringSlot>(
    mut targets: Vec<&mut CollapsedHit<K>>,
    segments: &[Option<FastFieldReaders>],
    field: &str,
    slot: impl Fn(&mut CollapsedHit<K>) -> &mut T,
) -> tantivy::Result<()> {
    targets.sort_by_key(|h| h.address);
    let mut start = 0;
    while start < targets.len() {
        let ord = targets[start].address.segment_ord;
        let mut end = start;
        while end < targets.len() && targets[end].address.segment_ord == ord {
            end += 1;
        }
        let column = match segments.get(ord as usize).and_then(Option::as_ref) {
            Some(ff) => ff.str(field)?,
            None => None,
        };
        if let Some(column) = column {
            // (term ordinal, position in targets)
            let mut ords: Vec<(u64, usize)> = (start..end)
                .filter_map(|i| {
                    column
                        .ords()
                        .first(targets[i].address.doc_id)
                        .map(|o| (o, i))
                })
                .collect();
            ords.sort_unstable();
            let term_ords: Vec<u64> = ords.iter().map(|&(o, _)| o).collect();
            let mut values = Vec::with_capacity(ords.len());
            column
                .dictionary()
                .sorted_ords_to_term_cb(&term_ords, |bytes| {
                    values.push(String::from_utf8_lossy(bytes).into_owned());
                })?;
            for ((_, i), value) in ords.into_iter().zip(values) {
                slot(targets[i]).set(value);
            }
        }
        start = end;
    }
    Ok(())
}

/// BM25 statistics summed over several indexes of one corpus, so that their scores are
/// comparable (and equal to those of one index holding all the documents).
///
/// Cost: every statistic asks every shard (a term dictionary look-up per segment for
/// `doc_freq`); a weight asks once per query term.
pub struct ShardStatistics<'a> {
    shards: Vec<&'a Searcher>,
}

impl<'a> ShardStatistics<'a> {
    /// Statistics over `shards`.
    pub fn new(shards: Vec<&'a Searcher>) -> Self {
        ShardStatistics { shards }
    }
}

impl Bm25StatisticsProvider for ShardStatistics<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        let mut total = 0;
        for s in &self.shards {
            total += s.total_num_tokens(field)?;
        }
        Ok(total)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        let mut total = 0;
        for s in &self.shards {
            total += Bm25StatisticsProvider::total_num_docs(*s)?;
        }
        Ok(total)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let mut total = 0;
        for s in &self.shards {
            total += Bm25StatisticsProvider::doc_freq(*s, term)?;
        }
        Ok(total)
    }
}
