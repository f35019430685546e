//! Exact counts: how many hits of the query each returned leader stands for.

use super::collector::NearDupCollapse;
use super::field::{GroupBy, SegmentValues};
use super::rank::RankKey;
use super::result::Collapsed;
use super::segment::ColumnNames;
use super::window::anchor;
use crate::component::reader::SignatureReader;
use crate::error::Result;
use crate::signature::{Evidence, MatchRule, Signature};
use std::collections::HashMap;
use tantivy::query::{EnableScoring, Query, Weight};
use tantivy::{DocId, DocSet, Searcher, TERMINATED};

impl<C> NearDupCollapse<C> {
    /// Counts, over every hit of `query` in `searchers`, the hits whose first returned group
    /// (in rank order) the rule (or the tag, or the field's value) joins them to. See
    /// [`exact_counts`](Self::exact_counts).
    pub(super) fn count_exactly<K: RankKey>(
        &self,
        searchers: &[&Searcher],
        query: &dyn Query,
        result: &mut Collapsed<K>,
    ) -> Result<()> {
        if result.is_complete() || result.groups.is_empty() {
            return Ok(());
        }
        let by_value = self.settings.group_by != GroupBy::Rule;
        let (counts, cut) = if by_value {
            (self.count_by_value(searchers, query, result)?, Vec::new())
        } else {
            self.count_by_rule(searchers, query, result)?
        };
        let order = self.settings.order;
        for (i, (group, count)) in result.groups.iter_mut().zip(counts).enumerate() {
            // A group without a fingerprint (or value) is counted by nobody but its hit.
            let anchor = anchor(group, order);
            let unkeyed = if by_value {
                anchor.group.is_none()
            } else {
                anchor.fingerprint.is_none()
            };
            group.count = if unkeyed { 1 } else { count };
            group.count_exact = !cut.get(i).copied().unwrap_or(false);
        }
        Ok(())
    }

    /// Counts by the rule: the leaders' keys are looked up, each match goes to its first
    /// leader, and the matches that are hits of the query are counted. Also says which leaders
    /// have a key beyond the hot-key bound in some segment (their count is a lower bound).
    fn count_by_rule<K: RankKey>(
        &self,
        searchers: &[&Searcher],
        query: &dyn Query,
        result: &Collapsed<K>,
    ) -> Result<(Vec<usize>, Vec<bool>)> {
        let rule = self.settings.rule()?;
        let bound = self.settings.max_postings_per_key;
        // The hits the fold formed the groups around (with a leader order, not always the
        // leaders shown).
        let order = self.settings.order;
        let leaders: Vec<Option<Signature>> = result
            .groups
            .iter()
            .map(|g| anchor(g, order).signature())
            .collect();
        let mut counts = vec![0usize; leaders.len()];
        let mut cut = vec![false; leaders.len()];
        for searcher in searchers {
            let reader = SignatureReader::new(searcher, &rule)?;
            // (segment, doc) -> the first leader that matches it.
            let mut first: HashMap<(u32, DocId), usize> = HashMap::new();
            for (i, leader) in leaders.iter().enumerate() {
                let Some(leader) = leader else { continue };
                cut[i] |= reader.has_hot_key(&rule, leader, bound)?;
                reader.for_each_match(&rule, leader, bound, |m| {
                    if self.joins(&rule, leader, m.evidence, m.signature) {
                        let a = m.address;
                        first.entry((a.segment_ord, a.doc_id)).or_insert(i);
                    }
                })?;
            }
            let mut matched: Vec<(u32, DocId, usize)> =
                first.into_iter().map(|((s, d), i)| (s, d, i)).collect();
            matched.sort_unstable();
            let weight = query.weight(EnableScoring::disabled_from_searcher(searcher))?;
            for run in matched.chunk_by(|a, b| a.0 == b.0) {
                let segment = searcher.segment_reader(run[0].0);
                count_hits(weight.as_ref(), segment, run, &mut counts)?;
            }
        }
        Ok((counts, cut))
    }

    /// Whether a match the lookup found (by the full rule) joins under this collapse's
    /// narrowed simhash distance.
    fn joins(
        &self,
        rule: &MatchRule,
        leader: &Signature,
        evidence: Evidence,
        candidate: &Signature,
    ) -> bool {
        match evidence {
            Evidence::Simhash { distance } if distance > self.settings.max_distance => rule
                .matches_within(leader, candidate, self.settings.max_distance)
                .is_some(),
            _ => true,
        }
    }

    /// Counts by tag or field: one pass over every hit of the query, reading its value.
    fn count_by_value<K: RankKey>(
        &self,
        searchers: &[&Searcher],
        query: &dyn Query,
        result: &Collapsed<K>,
    ) -> Result<Vec<usize>> {
        // Every hit of a group has the group's value.
        let values: Vec<Option<&str>> = result
            .groups
            .iter()
            .map(|g| g.leader.group.as_deref())
            .collect();
        let mut counts = vec![0usize; values.len()];
        for searcher in searchers {
            let names = ColumnNames::new(self.fields, &self.settings, searcher.schema())?;
            let Some((field, kind)) = &names.group_by else {
                return Ok(counts);
            };
            let weight = query.weight(EnableScoring::disabled_from_searcher(searcher))?;
            for seg in searcher.segment_readers() {
                let alive = seg.alive_bitset();
                let column = SegmentValues::open(seg.fast_fields(), field, *kind)?;
                // The groups' values as this segment's column values (term ordinals).
                let mut ords: Vec<Option<u64>> = Vec::with_capacity(values.len());
                for value in &values {
                    ords.push(match value {
                        Some(v) => column.lookup(*kind, v)?,
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
                        let Some(ord) = column.first(doc) else {
                            continue;
                        };
                        if let Some(i) = ords.iter().position(|&o| o == Some(ord)) {
                            counts[i] += 1;
                        }
                    }
                })?;
            }
        }
        Ok(counts)
    }
}

/// Adds to `counts[leader]` every `(segment, doc, leader)` of `run` (one segment, sorted by doc)
/// that is a hit of the query: one seek of its scorer per document.
fn count_hits(
    weight: &dyn Weight,
    segment: &tantivy::SegmentReader,
    run: &[(u32, DocId, usize)],
    counts: &mut [usize],
) -> Result<()> {
    let mut scorer = weight.scorer(segment, 1.0)?;
    for &(_, doc, leader) in run {
        if scorer.doc() < doc {
            scorer.seek(doc);
        }
        if scorer.doc() == TERMINATED {
            break;
        }
        if scorer.doc() == doc {
            counts[leader] += 1;
        }
    }
    Ok(())
}
