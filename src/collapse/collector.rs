//! [`NearDupCollapse`]: the collector, its settings, and the search loop that widens the fetch.

use super::field::{GroupBy, LeaderOrder};
use super::merge::ShardStatistics;
use super::rank::RankKey;
use super::result::{rank_order, Collapsed, CollapsedGroup, CollapsedHit, Settings};
use super::segment::{ColumnCache, ColumnNames};
use super::window::{
    check_rank_order, fold, tied_on_key_and_fingerprint, window_cutoff, FruitSegment,
    SegmentSource, StrField, WindowColumns,
};
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::id_table::IdTables;
use crate::schema::NearDupFields;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::sync::Arc;
use tantivy::collector::sort_key::{Comparator, ComparatorEnum};
use tantivy::collector::{Collector, SegmentCollector, TopDocs};
use tantivy::fastfield::FastValue;
use tantivy::index::SegmentId;
use tantivy::query::{Query, Weight};
use tantivy::schema::Schema;
use tantivy::{DocAddress, DocId, Order, Score, Searcher, SegmentOrdinal, SegmentReader};

mod plumbing;

pub use plumbing::{CollapseSegmentCollector, CollapseSegmentFruit};

/// Default over-fetch: hits fetched per group asked for.
pub(crate) const DEFAULT_OVERFETCH: usize = 3;
/// Default widening bound: at most this many hits per group asked for.
pub(crate) const DEFAULT_MAX_OVERFETCH: usize = 64;
/// Default hot-key bound of [exact counts](NearDupCollapse::exact_counts): documents read per
/// key of a leader and segment.
pub(crate) const DEFAULT_MAX_POSTINGS_PER_KEY: usize = 1024;

/// Folds near-duplicate hits of an inner top-docs collector into groups.
///
/// Build it with [`by_score`](NearDupCollapse::by_score) or
/// [`by_fast_field`](NearDupCollapse::by_fast_field), which make the inner `TopDocs` themselves
/// (the rank order is stated once), or with [`with_top_docs`](NearDupCollapse::with_top_docs)
/// for any other sort key. `C` is the inner collector's type. Page through groups by asking
/// for more, not with `and_offset`.
///
/// **Reuse one collapse for many searches** (it is `Send + Sync`): it keeps the columns it
/// opened in each segment it searched (35 at most: fingerprint, 32 sketch words, id, group or
/// leader field; opening them costs a few microseconds each, more than the fold itself), and
/// the segments' id tables ([`read_ids`](Self::read_ids)), so that later searches only read
/// values. A segment is released once 64 searches of this collapse (one per shard and
/// re-search) have not read it, and everything with the collapse; until then a merged-away
/// segment's column data stays mapped.
///
/// [`NearDupCollapse`]: one search result per near-duplicate group, with "N similar pages".
///
/// Engines that collapse results need an exact key (Elasticsearch `collapse`, Solr signatures);
/// this collector folds hits whose fingerprints are within `k` (inclusive) of a higher-ranked hit
/// into that hit's group. It wraps tantivy's [`TopDocs`](tantivy::collector::TopDocs) and
/// **delegates `collect_segment`**, so a pure text query keeps tantivy's block-max WAND pruning
/// (`FilterCollector` and `tweak_score` would lose it). The inner collector ranks hits (by
/// score, or by a fast field); `merge_fruits` then reads each hit's fingerprint from its
/// segment's column and folds.
///
/// ## What a result contains: the window
///
/// The inner `TopDocs` fetches `fetch` hits (by default 3 x the number of groups asked for;
/// measured on natural-en under the match rule with the segment component, docs/PERFORMANCE.md:
/// 1.3-1.5x the time of `TopDocs(10)` without ids, 0.3-0.7x when both read their ids (1 and 16
/// segments); 2 x widened twice as many queries, 29 in 500, and found fewer members).
/// The **window** is the set of hits the collapse works on:
/// - when the query has fewer than `fetch` hits, all of them ([`Collapsed::is_complete`]);
/// - otherwise every hit that ranks **strictly** better than the `fetch`-th hit (its key is the
///   [`cutoff`](Collapsed::cutoff)); hits tied with the `fetch`-th are left out, because which of
///   them `TopDocs` keeps depends on document addresses, so keeping them would make the result
///   depend on how the corpus is split into segments or shards.
///
/// Within the window, hits are ranked by their key (score descending, or the fast field in its
/// order), ties broken by fingerprint (already read, so free), then by user id (read only for
/// hits equal on key and fingerprint: exact duplicates), then by shard and address. Without
/// [`read_ids`](NearDupCollapse::read_ids), exact duplicates keep their address order (by
/// distance they fall in one group; only which of them leads depends on it). The fold walks
/// the window best first: a hit joins the **first** group whose leader is within `k` of it,
/// else it leads a new group while fewer than `limit` groups exist. A group's `count` is its
/// leader plus the members found in the window: exact when the window is complete, a lower
/// bound otherwise ([`CollapsedGroup::count_exact`]), unless
/// [`exact_counts`](NearDupCollapse::exact_counts) asks for one more pass over every hit.
///
/// The result is the same for any segmentation of the index, as long as the keys are: fast
/// field values always are, single-term scores too, but tantivy sums the scores of several
/// query terms in an order that depends on where documents sit, so a multi-term score can
/// differ in its last bit (one ulp) between two layouts of the same documents, and two hits
/// that close may swap ranks.
///
/// ## Widening
///
/// Used directly as a collector (`searcher.search(&query, &collapse)`), one search is run with
/// `fetch` hits, and fewer than `limit` groups may come back. [`NearDupCollapse::search`]
/// re-searches instead, doubling `fetch` until `limit` groups are found, the window holds every
/// hit, or `fetch` reaches `max_fetch` (default 64 x `limit`): at most
/// `ceil(log2(max_fetch / fetch))` re-searches (5 with the defaults), whose fetch sizes sum to
/// less than twice `max_fetch`. At the bound the result says so ([`Collapsed::is_complete`] is
/// false and fewer than `limit` groups are returned).
///
/// ## Collapsing by tag or by any fast field
///
/// [`NearDupCollapse::group_by`] folds by an exact key instead of the rule ([`GroupBy`]): the
/// group id stored at index time ([`Policy::Tag`](crate::Policy::Tag), `GroupBy::Tag`), or the
/// value of any fast field of the schema, string or numeric (`GroupBy::Field`: a distinct filter
/// by a primary key, Elasticsearch's `collapse.field`). A hit joins the first leader with the
/// same value; a hit without a value stands alone. Everything above holds unchanged (the
/// window, widening, pruning, counts exact or lower bounds, members, shard merge); fingerprint
/// distances are still reported. It reads the value of every hit in the window (for a string
/// field, one dictionary block per distinct block touched). Across shards, values compare as
/// strings (numbers rendered in decimal), so tags must have been assigned for the whole corpus
/// (a `DedupWriter` per shard names groups after that shard's first document, so merged groups
/// follow the shards' tags, not those one index would have given).
///
/// ## Leaders by a field, and the derank mode
///
/// A group ranks where its best-ranked hit ranks. With
/// [`leader_order`](NearDupCollapse::leader_order), the hit shown as its leader is instead the
/// first of its window hits by a numeric or date fast field (the newest version, say), ties by
/// rank. [`Collapsed::deranked`] is the derank mode: nothing is dropped, the groups' other
/// hits are moved behind all the leaders, in rank order.
///
/// ## Shards
///
/// [`Collapsed`] is serde-serialisable and [`Collapsed::merge`] combines the results of several
/// indexes of one corpus (the leaf/root pattern of distributed tantivy engines). Guarantee: when
/// every shard was searched with the same settings, [`keep_window`](NearDupCollapse::keep_window)
/// on, and the same BM25 statistics (for example [`ShardStatistics`] over all shards; scores
/// computed from per-shard statistics are not comparable), the merge equals the result of one
/// index holding all the documents with that `fetch`, group for group, provided user ids are
/// unique and keys compare equal across indexes (see the caveat above on multi-term scores).
/// A shard must return its whole window (every hit with its fingerprint, id and key), not only
/// its groups: a shard's leader may be a member of another shard's leader globally.
/// From the shards' cutoffs the root finds exactly the single index's window (see
/// [`Collapsed::merge`]). [`NearDupCollapse::search_shards`] runs this in one process, with
/// widening.
///
/// ```
/// use tantivy::query::TermQuery;
/// use tantivy::schema::{IndexRecordOption, Schema, FAST, STORED, STRING, TEXT};
/// use tantivy::{doc, Index, Term};
/// use tantivy_simhash::{NearDupCollapse, NearDupConfig, NearDupIndex, Policy};
///
/// let config = NearDupConfig::new("id", ["body"]);
/// let mut builder = Schema::builder();
/// let id = builder.add_text_field("id", STRING | FAST | STORED);
/// let body = builder.add_text_field("body", TEXT);
/// config.add_fields(&mut builder);
/// let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config)?;
/// let mut writer = index.writer(50_000_000, Policy::Off)?;
/// let licence = "Permission is hereby granted, free of charge, to any person obtaining a copy \
///                of this software, to deal in the software without restriction, including \
///                the rights to use, copy, modify, merge, publish and distribute it.";
/// writer.add_document(doc!(id => "a", body => licence))?;
/// writer.add_document(doc!(id => "b", body => licence.to_uppercase()))?; // same fingerprint
/// writer.add_document(doc!(id => "c", body => "A guide to the software licences of Debian."))?;
/// writer.commit()?;
///
/// let searcher = index.searcher()?;
/// let term = Term::from_field_text(body, "software");
/// let query = TermQuery::new(term, IndexRecordOption::WithFreqs);
/// // 10 groups, ranked by score (the collapse makes the inner TopDocs for each fetch size).
/// let collapse = NearDupCollapse::by_score(index.fields(), 10);
/// let results = collapse.search(&searcher, &query)?;
/// assert_eq!(results.groups().len(), 2);
/// let licence_group = results.groups().iter().find(|g| g.count == 2).unwrap();
/// assert_eq!(licence_group.members[0].distance, Some(0));
/// assert!(licence_group.count_exact);
/// // Plain collector use (one search, no widening):
/// let once = searcher.search(&query, &collapse)?;
/// assert_eq!(once, results);
/// # Ok::<(), tantivy_simhash::Error>(())
/// ```
pub struct NearDupCollapse<C> {
    inner: C,
    /// Makes the inner collector for a fetch size (widening asks for larger ones).
    top_docs: Arc<dyn Fn(usize) -> C + Send + Sync>,
    pub(super) settings: Settings,
    pub(super) fields: NearDupFields,
    /// The columns of the segments searched so far, shared with the re-searches of widening.
    columns: Arc<ColumnCache>,
}

impl NearDupCollapse<()> {
    /// Collapses the hits of the index `fields` is the handle of into at most `limit` groups,
    /// ranked by score (best first), as `TopDocs::with_limit(fetch).order_by_score()` ranks
    /// them, folding the hits that the index's [`MatchRule`](crate::MatchRule) matches with a
    /// leader. Defaults: the
    /// rule's simhash distance `k` (the layout's
    /// [`max_distance`](crate::BlockLayout::max_distance)), fetch = 3 x `limit`, max fetch =
    /// 64 x `limit`. Cost: nothing until searched.
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
        let rule = fields.rule();
        NearDupCollapse {
            inner: top_docs(fetch),
            top_docs: Arc::new(top_docs),
            settings: Settings {
                limit,
                fetch,
                max_fetch: limit.saturating_mul(DEFAULT_MAX_OVERFETCH).max(fetch),
                max_distance: rule.layout().max_distance(),
                rule: *rule.spec(),
                order,
                group_by: GroupBy::Rule,
                leader_order: None,
                keep_window: false,
                read_ids: true,
                exact_counts: false,
                max_postings_per_key: DEFAULT_MAX_POSTINGS_PER_KEY,
            },
            fields,
            columns: Arc::default(),
        }
    }

    /// Reads string columns (ids, string groups) through `tables` instead of tables of its
    /// own: the CLI's and Python's searches share their index's tables this way
    /// ([`NearDupIndex::id_tables`](crate::NearDupIndex)), one collapse being made per search.
    pub(crate) fn sharing_id_tables(mut self, tables: &IdTables) -> Self {
        self.columns = Arc::new(ColumnCache::reading_through(tables.clone()));
        self
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

    /// Narrows the rule's simhash branch: a hit joins a leader within `max_distance`
    /// (inclusive), or by the resemblance branch as before ([`MatchRule::matches_within`]).
    /// Errors with [`Error::InvalidConfig`] beyond the layout's `k`: exact counts find hits
    /// through the rule's keys, which guarantee nothing farther.
    ///
    /// [`MatchRule::matches_within`]: crate::MatchRule::matches_within
    pub fn max_distance(mut self, max_distance: u32) -> Result<Self> {
        crate::layout::check_distance(self.settings.rule.layout.max_distance(), max_distance)?;
        self.settings.max_distance = max_distance;
        Ok(self)
    }

    /// Bounds the work of [`exact_counts`](Self::exact_counts) per key of a leader: a key with
    /// more than `max_postings_per_key` documents in a segment (a hot key: a template shared
    /// by thousands of pages) is read only that far, and the count of a leader with such a key
    /// is then a lower bound, marked so ([`CollapsedGroup::count_exact`] false). Default
    /// 1024 (at least 1; `usize::MAX` reads everything).
    ///
    /// [`CollapsedGroup::count_exact`]: super::CollapsedGroup::count_exact
    pub fn max_postings_per_key(mut self, max_postings_per_key: usize) -> Self {
        self.settings.max_postings_per_key = max_postings_per_key.max(1);
        self
    }

    /// What hits are folded by: the match rule (the default), the tags of
    /// [`Policy::Tag`](crate::Policy::Tag), or the value of any fast field (a distinct filter:
    /// one hit per value, before the top-k). Everything else holds as by the rule: the
    /// window, widening, pruning, counts, members and shard merge; fingerprint distances to
    /// the leader are still reported.
    ///
    /// Cost, by tag or field: one read of the field per hit of the window (a string column's
    /// reads batched per dictionary block), and one comparison per group per hit; with
    /// [`exact_counts`](Self::exact_counts), one more pass over every hit of the query
    /// reading one value each. Errors: [`Error::Schema`] when collapsing by tag and the index
    /// has no group field; at search time, [`Error::Schema`] when the named field is missing
    /// from the searched schema, not a fast field, or not of type str, u64, i64, f64, date or
    /// bool (by [`searcher.search`](tantivy::Searcher::search), the same message as tantivy's
    /// `InvalidArgument`).
    ///
    /// ```
    /// # use tantivy::query::AllQuery;
    /// # use tantivy::schema::{Schema, FAST, STRING, TEXT};
    /// # use tantivy::{doc, Index};
    /// # use tantivy_simhash::{GroupBy, NearDupCollapse, NearDupConfig, NearDupIndex, Policy};
    /// # let config = NearDupConfig::new("id", ["body"]);
    /// # let mut builder = Schema::builder();
    /// # let id = builder.add_text_field("id", STRING | FAST);
    /// # let body = builder.add_text_field("body", TEXT);
    /// let url = builder.add_text_field("url", STRING | FAST);
    /// # config.add_fields(&mut builder);
    /// # let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config)?;
    /// # let mut writer = index.writer(20_000_000, Policy::Off)?;
    /// // Two versions of one page (the old one not deleted yet), and another page.
    /// writer.add_document(doc!(id => "1", url => "/a", body => "first version of page a"))?;
    /// writer.add_document(doc!(id => "2", url => "/a", body => "page a, rewritten entirely"))?;
    /// writer.add_document(doc!(id => "3", url => "/b", body => "page b"))?;
    /// # writer.commit()?;
    /// # let searcher = index.searcher()?;
    /// let distinct = NearDupCollapse::by_score(index.fields(), 10)
    ///     .group_by(GroupBy::Field("url".into()))?;
    /// let results = distinct.search(&searcher, &AllQuery)?;
    /// assert_eq!(results.groups().len(), 2); // one hit per url
    /// let page_a = results.groups().iter().find(|g| g.count == 2).unwrap();
    /// assert_eq!(page_a.leader.group.as_deref(), Some("/a"));
    /// assert_eq!(page_a.members.len(), 1); // the other version, with its address
    /// // A field the schema lacks is an error that says so, not an empty result.
    /// let missing = NearDupCollapse::by_score(index.fields(), 10)
    ///     .group_by(GroupBy::Field("path".into()))?;
    /// assert!(missing.search(&searcher, &AllQuery).is_err());
    /// # Ok::<(), tantivy_simhash::Error>(())
    /// ```
    pub fn group_by(mut self, group_by: GroupBy) -> Result<Self> {
        if group_by == GroupBy::Tag {
            self.fields
                .require_group("collapsing by tag reads the tags Policy::Tag stores in")?;
        }
        self.settings.group_by = group_by;
        Ok(self)
    }

    /// Chooses each group's leader by the fast field `field` in `order` (for example the
    /// newest version: a date or version field, [`Order::Desc`]) instead of by rank: the
    /// group still ranks where its best-ranked hit ranks, but the hit shown as its
    /// [`leader`](super::CollapsedGroup::leader) is the first of the group's hits in the
    /// window (leader and members, the candidates) by that field, documents without a value
    /// last, ties by rank; the others are its members, in rank order. For groups by the rule,
    /// tag or field alike. Exact counts do not widen the candidates: a hit outside the window
    /// is counted, never chosen (it has no score to show). Member distances are to the chosen
    /// leader (by the rule, a member may then be farther than `k` from it: both are within
    /// reach of the best-ranked hit). [`Collapsed::merge`] chooses the same leaders as one
    /// index.
    ///
    /// Cost: one column read per hit of the window. Errors at search time: [`Error::Schema`]
    /// when `field` is missing, not fast, or not a u64, i64, f64, date or bool field (a str
    /// column's term ordinals do not compare across segments).
    ///
    /// ```
    /// # use tantivy::query::AllQuery;
    /// # use tantivy::schema::{Schema, FAST, STRING, TEXT};
    /// # use tantivy::{doc, Index, Order};
    /// # use tantivy_simhash::{GroupBy, NearDupCollapse, NearDupConfig, NearDupIndex, Policy};
    /// # let config = NearDupConfig::new("id", ["body"]);
    /// # let mut builder = Schema::builder();
    /// # let id = builder.add_text_field("id", STRING | FAST);
    /// # let body = builder.add_text_field("body", TEXT);
    /// let url = builder.add_text_field("url", STRING | FAST);
    /// let version = builder.add_u64_field("version", FAST);
    /// # config.add_fields(&mut builder);
    /// # let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config)?;
    /// # let mut writer = index.writer(20_000_000, Policy::Off)?;
    /// writer.add_document(doc!(id => "1", url => "/a", version => 1u64, body => "tantivy tantivy"))?;
    /// writer.add_document(doc!(id => "2", url => "/a", version => 2u64, body => "tantivy"))?;
    /// # writer.commit()?;
    /// # let searcher = index.searcher()?;
    /// # let term = tantivy::Term::from_field_text(body, "tantivy");
    /// # let query = tantivy::query::TermQuery::new(term, tantivy::schema::IndexRecordOption::WithFreqs);
    /// // The latest version of each url, ranked where the url's best hit ranks.
    /// let latest = NearDupCollapse::by_score(index.fields(), 10)
    ///     .group_by(GroupBy::Field("url".into()))?
    ///     .leader_order("version", Order::Desc);
    /// let results = latest.search(&searcher, &query)?;
    /// assert_eq!(results.groups()[0].leader.id, "2");
    /// assert_eq!(results.groups()[0].members[0].id, "1"); // the best-scored hit
    /// # Ok::<(), tantivy_simhash::Error>(())
    /// ```
    pub fn leader_order(mut self, field: &str, order: Order) -> Self {
        self.settings.leader_order = Some(LeaderOrder {
            field: field.to_string(),
            order,
        });
        self
    }

    /// Keeps every hit of the window in the result (not only the returned groups), with its
    /// id, as [`Collapsed::merge`] needs. Costs one id read per hit of the window.
    pub fn keep_window(mut self, keep: bool) -> Self {
        self.settings.keep_window = keep;
        self
    }

    /// Reads the user id of every returned hit (the default). Without, ids are read only where
    /// the ranking needs them (hits tied on their key) and are empty elsewhere: use the
    /// addresses. [`keep_window`](Self::keep_window) always reads them.
    ///
    /// Cost: a segment's ids are read through its **id table** (every id of the segment in
    /// memory, about the ids' bytes + 8 B each; this collapse's own, kept across its
    /// searches) once this collapse has read `max(32, ids / 1024)` of its ids: an id then
    /// costs a column read and a copy. Before that (and for a collapse used once), the ids of
    /// one search are read per segment in one pass over the dictionary blocks they fall in,
    /// one block decompression each (~13 us on natural-en). The table is built (one pass over
    /// the segment's dictionary) by the search that crosses the threshold, and freed with the
    /// segment's cached columns (see [`NearDupCollapse`]) or the collapse.
    pub fn read_ids(mut self, read_ids: bool) -> Self {
        self.settings.read_ids = read_ids;
        self
    }

    /// Makes [`search`](Self::search) and [`search_shards`](Self::search_shards) count every
    /// group exactly when the window does not hold every hit: the count of a leader becomes
    /// the number of hits of the query whose first returned leader (in rank order) the rule
    /// matches them with, as if every hit had been folded. The member lists stay those of the
    /// window.
    ///
    /// How: every document the rule matches with a leader shares one of the leader's keys, so
    /// each leader's keys are looked up (the lookup of
    /// [`NearDupLookup::lookup_signature`](crate::NearDupLookup::lookup_signature),
    /// bounded by [`max_postings_per_key`](Self::max_postings_per_key)), each match is given
    /// to its first leader, and the query's matching documents are found among them by
    /// seeking its scorer. Cost, per shard and segment: for each of the `limit` leaders, one
    /// term look-up per key (16 by default) and one verification per candidate (at most keys
    /// x the bound), then one scorer seek per match: independent of how many documents the
    /// query matches. A leader with a key beyond the bound gets a lower bound, marked
    /// `count_exact = false`. By tag or field: one more pass over every hit of the query,
    /// reading one value per hit.
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
                ..self.settings.clone()
            },
            fields: self.fields,
            columns: self.columns.clone(),
        }
    }

    /// Searches `query` and collapses, widening the fetch (doubling it) while fewer than
    /// `limit` groups are found and more hits exist, up to `max_fetch`. See
    /// [`NearDupCollapse`] for the bound and the guarantee.
    ///
    /// Cost: one search per fetch tried (block-max pruning kept when the query allows it), one
    /// signature read per hit fetched (the fingerprint and 32 sketch words: bit-packed fast fields,
    /// a few ns each; the columns opened once per segment, see [`NearDupCollapse`]), up to `limit`
    /// rule checks per hit, one id read per returned hit and per tied hit (see
    /// [`read_ids`](Self::read_ids)). On natural-en, about 1.5x `TopDocs(limit)` without ids, and
    /// less than `TopDocs(limit)` reading its ids (docs/PERFORMANCE.md). Errors:
    /// [`Error::Tantivy`](crate::Error::Tantivy) from the search (for example the inner collector's
    /// fast field is missing), [`Error::Io`](crate::Error::Io) when reading an id from the id
    /// column's dictionary fails.
    pub fn search<K>(&self, searcher: &Searcher, query: &dyn Query) -> Result<Collapsed<K>>
    where
        C: Collector<Fruit = Vec<(K, DocAddress)>>,
        K: RankKey,
    {
        ColumnNames::new(self.fields, &self.settings, searcher.schema())?;
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
        for shard in shards {
            ColumnNames::new(self.fields, &self.settings, shard.schema())?;
        }
        let statistics = ShardStatistics::new(shards.to_vec());
        self.widen(|collapse| {
            let collapse = NearDupCollapse {
                inner: (collapse.top_docs)(collapse.settings.fetch),
                top_docs: collapse.top_docs.clone(),
                settings: Settings {
                    keep_window: true,
                    ..collapse.settings.clone()
                },
                fields: collapse.fields,
                columns: collapse.columns.clone(),
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

    fn widen<K: RankKey>(
        &self,
        mut run: impl FnMut(&NearDupCollapse<C>) -> Result<Collapsed<K>>,
    ) -> Result<Collapsed<K>> {
        let mut fetch = self.settings.fetch;
        loop {
            // The first fetch is this collapse's own (its inner collector made for it): no
            // copy of the settings and the collector for it.
            let result = if fetch == self.settings.fetch {
                run(self)?
            } else {
                run(&self.with_fetch(fetch))?
            };
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

/// Reads the ids of the returned hits (leaders, members and the kept rest of the window) not
/// read yet (hits tied on key and fingerprint were, to rank them).
fn read_result_ids<K>(
    groups: &mut [CollapsedGroup<K>],
    rest: &mut [CollapsedHit<K>],
    columns: &mut WindowColumns<'_>,
) -> Result<()> {
    let mut needs_id: Vec<&mut CollapsedHit<K>> = Vec::new();
    for group in groups.iter_mut() {
        needs_id.push(&mut group.leader);
        needs_id.extend(group.members.iter_mut());
    }
    needs_id.extend(rest.iter_mut());
    needs_id.retain(|h| h.id.is_empty());
    columns.read_strings(needs_id, StrField::Id, |h| &mut h.id)
}

impl<C> NearDupCollapse<C> {
    /// The merge step of the collector: the inner collector's ranked hits become the window,
    /// with their signatures (and, where needed, ids and tags), folded into groups.
    fn fold_ranked<K: RankKey>(
        &self,
        ranked: Vec<(K, DocAddress)>,
        segments: &[Option<FruitSegment>],
        names: &ColumnNames,
    ) -> Result<Collapsed<K>> {
        let settings = &self.settings;
        let order = settings.order;
        check_rank_order(&ranked, order)?;
        // The index's rule: the settings carry its spec (for a merge of results).
        let rule = &names.rule;
        let mut columns = WindowColumns::new(segments, names, &self.columns);
        let mut window = columns.hits(ranked)?;
        // The inner collector returns at most `fetch` hits: exactly `fetch` means there may be
        // more, tied with the last one.
        let cutoff = window_cutoff(&mut window, settings.fetch, order);
        self.rank_window(&mut window, &mut columns)?;
        if names.group_by.is_some() {
            columns.read_groups(&mut window)?;
        }
        if names.leader_order.is_some() {
            columns.read_leader_values(&mut window)?;
        }
        let sketches = columns.sketches(&window)?;
        let (mut groups, mut rest) = fold(window, &sketches, settings, rule, cutoff.is_none());
        if !settings.keep_window {
            rest.clear();
        }
        if settings.read_ids || settings.keep_window {
            read_result_ids(&mut groups, &mut rest, &mut columns)?;
        }
        Ok(Collapsed {
            groups,
            rest,
            cutoff,
            settings: settings.clone(),
        })
    }

    /// The result of a search over no segment.
    fn fold_nothing<K>(&self) -> Collapsed<K> {
        Collapsed {
            groups: Vec::new(),
            rest: Vec::new(),
            cutoff: None,
            settings: self.settings.clone(),
        }
    }

    /// Sorts the window: ties on the key by fingerprint (already read), then by user id for
    /// hits equal on both (exact duplicates, whose ids are read for that), so the order does
    /// not depend on addresses.
    fn rank_window<K: RankKey>(
        &self,
        window: &mut [CollapsedHit<K>],
        columns: &mut WindowColumns<'_>,
    ) -> Result<()> {
        let order = self.settings.order;
        // The inner collector ranks by key (ties by address): usually already in this order,
        // where a sort would only move the hits.
        if !window.is_sorted_by(|a, b| rank_order(a, b, order) != std::cmp::Ordering::Greater) {
            window.sort_by(|a, b| rank_order(a, b, order));
        }
        if !(self.settings.read_ids || self.settings.keep_window) {
            return Ok(());
        }
        let tied = tied_on_key_and_fingerprint(window, order);
        if tied.iter().any(|&t| t) {
            let targets: Vec<&mut CollapsedHit<K>> = window
                .iter_mut()
                .zip(&tied)
                .filter(|(_, &t)| t)
                .map(|(h, _)| h)
                .collect();
            columns.read_strings(targets, StrField::Id, |h| &mut h.id)?;
            window.sort_by(|a, b| rank_order(a, b, order));
        }
        Ok(())
    }
}
