//! [`Collapsed::merge`]: the results of several shards as one index's result, and the BM25
//! statistics that make their scores comparable.

use super::rank::RankKey;
use super::result::{rank_order, Settings};
use super::result::{Collapsed, CollapsedHit};
use super::window::{fold, window_cutoff, WindowSketches};
use crate::error::{Error, Result};
use std::cmp::Ordering;
use tantivy::query::Bm25StatisticsProvider;
use tantivy::schema::Field;
use tantivy::{Searcher, Term};

impl<K: RankKey> Collapsed<K> {
    /// Combines the results of several indexes of one corpus (shards) into the result one index
    /// holding all their documents would give.
    ///
    /// Each part must come from a [`NearDupCollapse`](super::NearDupCollapse) with the same
    /// settings (limit, fetch, distance, order, tag mode) and
    /// [`keep_window`](super::NearDupCollapse::keep_window) on, and the keys must be comparable
    /// across shards (the same BM25 statistics, see [`ShardStatistics`], or a fast field). With
    /// unique user ids the merge then equals the single index's result (up to the one-ulp caveat on
    /// multi-term scores in the [`NearDupCollapse`](super::NearDupCollapse) docs); hits get `shard`
    /// = their part's position in `parts`.
    ///
    /// How: a shard's window holds every hit of that shard ranked strictly better than its
    /// cutoff, and at least `fetch` of its hits rank at or above it; so every hit ranked
    /// strictly better than the best-ranked shard cutoff is present, and the single index's
    /// `fetch`-th key ranks at or below that cutoff. The root sorts those hits, cuts at the
    /// `fetch`-th (or keeps them all when fewer), and folds by the match rule the parts carry.
    /// The merged result can itself be merged (it keeps its window). Cost: sorting the parts'
    /// windows, then the fold (window x limit rule checks).
    ///
    /// Errors: [`Error::InvalidConfig`] when `parts` is empty, the settings (match rule
    /// included) differ, or a part was collected without `keep_window`.
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
        let settings = agreed_settings(&parts)?;
        let order = settings.order;
        // The best of the parts' cutoffs: no hit ranked after it is in every part's window.
        let best_cutoff = parts
            .iter()
            .filter_map(|p| p.cutoff.as_ref())
            .fold(None, |best: Option<&K>, c| match best {
                Some(b) if c.rank_cmp(b, order) != Ordering::Less => Some(b),
                _ => Some(c),
            })
            .cloned();
        let mut hits = pooled_hits(parts);
        if let Some(c) = &best_cutoff {
            hits.retain(|h| h.key.rank_cmp(c, order) == Ordering::Less);
        }
        hits.sort_by(|a, b| rank_order(a, b, order));
        let cutoff = window_cutoff(&mut hits, settings.fetch, order).or(best_cutoff);
        for hit in &mut hits {
            hit.distance = None;
        }
        let rule = settings.rule()?;
        let sketches = WindowSketches::take_from(&mut hits);
        let (groups, rest) = fold(hits, &sketches, &settings, &rule, cutoff.is_none());
        Ok(Collapsed {
            groups,
            rest,
            cutoff,
            settings,
        })
    }
}

/// The settings every part was collected with; an error naming the part that was collected
/// without its window or with other settings (or when there is no part).
fn agreed_settings<K>(parts: &[Collapsed<K>]) -> Result<Settings> {
    let Some(first) = parts.first() else {
        return Err(Error::InvalidConfig(
            "Collapsed::merge got no parts; pass the result of every shard".into(),
        ));
    };
    for (i, part) in parts.iter().enumerate() {
        if !part.settings.keep_window {
            return Err(Error::InvalidConfig(format!(
                "part {i} was collected without keep_window, so its hits outside the \
                 returned groups are missing; search every shard with \
                 NearDupCollapse::keep_window(true)"
            )));
        }
        if part.settings != first.settings {
            return Err(Error::InvalidConfig(format!(
                "part {i} was collected with {:?} but part 0 with {:?}; search every shard \
                 with the same NearDupCollapse settings (and the same fetch)",
                part.settings, first.settings
            )));
        }
    }
    Ok(first.settings.clone())
}

/// Every hit of every part's window (leaders, members, the rest), marked with its part's
/// position as its shard.
fn pooled_hits<K>(parts: Vec<Collapsed<K>>) -> Vec<CollapsedHit<K>> {
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
    hits
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
    /// Statistics over `shards` (the searchers of every index of the corpus). Cost: none until
    /// a statistic is asked; errors surface there, as the shards' tantivy errors.
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
