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
//! measured on natural-en under the match rule, docs/PERFORMANCE.md: 1.6-2.2x the time of
//! `TopDocs` returning as many hits without ids, 0.5-0.8x when both read their ids; 2 x widened
//! twice as many queries, 29 in 500, and found fewer members).
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
//! ## Collapsing by tag or by any fast field
//!
//! [`NearDupCollapse::group_by`] folds by an exact key instead of the rule ([`GroupBy`]): the
//! group id stored at index time ([`Policy::Tag`](crate::Policy::Tag), `GroupBy::Tag`), or the
//! value of any fast field of the schema, string or numeric (`GroupBy::Field`: a distinct filter
//! by a primary key, Elasticsearch's `collapse.field`). A hit joins the first leader with the
//! same value; a hit without a value stands alone. Everything above holds unchanged (the
//! window, widening, pruning, counts exact or lower bounds, members, shard merge); fingerprint
//! distances are still reported. It reads the value of every hit in the window (for a string
//! field, one dictionary block per distinct block touched). Across shards, values compare as
//! strings (numbers rendered in decimal), so tags must have been assigned for the whole corpus
//! (a `DedupWriter` per shard names groups after that shard's first document, so merged groups
//! follow the shards' tags, not those one index would have given).
//!
//! ## Leaders by a field, and the derank mode
//!
//! A group ranks where its best-ranked hit ranks. With
//! [`leader_order`](NearDupCollapse::leader_order), the hit shown as its leader is instead the
//! first of its window hits by a numeric or date fast field (the newest version, say), ties by
//! rank. [`Collapsed::deranked`] is the derank mode: nothing is dropped, the groups' other
//! hits are moved behind all the leaders, in rank order.
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

mod collector;
mod counts;
mod field;
mod merge;
mod rank;
mod result;
mod segment;
mod window;

pub use collector::{CollapseSegmentCollector, CollapseSegmentFruit, NearDupCollapse};
pub use field::GroupBy;
pub use merge::ShardStatistics;
pub use rank::RankKey;
pub use result::{Collapsed, CollapsedGroup, CollapsedHit};
