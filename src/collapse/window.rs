//! The window and the fold: ranking the inner collector's hits, cutting the window, reading
//! what the fold needs (signatures, tied ids, tags), and folding hits into groups by the
//! match rule.

use super::field::GroupBy;
use super::rank::RankKey;
use super::result::{rank_order, Settings};
use super::result::{CollapsedGroup, CollapsedHit};
use super::segment::{ColumnCache, ColumnNames, GroupValues, SegmentColumns};
use crate::error::Result;
use crate::fingerprint::Fingerprint;
use crate::signature::{Evidence, MatchRule, Sketch};
use std::cmp::Ordering;
use std::sync::Arc;
use tantivy::index::SegmentId;
use tantivy::SegmentReader;
use tantivy::{DocAddress, DocId, Order};

/// Fails when the inner collector's hits are not ranked in `order`: the collapse was told
/// another order than the collector ranks in, and every window, cutoff and group would be
/// wrong.
pub(super) fn check_rank_order<K: RankKey>(
    ranked: &[(K, DocAddress)],
    order: Order,
) -> tantivy::Result<()> {
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

/// With `hits` sorted best first: when there are at least `fetch`, keeps only those ranked
/// strictly better than the `fetch`-th and returns its key.
pub(super) fn window_cutoff<K: RankKey>(
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

/// Whether `hit` joins the group led by `leader`, and the evidence: by tag or field, the same
/// value; else the match rule, its simhash branch narrowed to the settings' distance, with
/// each hit's bands taken once ([`HitBands`]). Each side is a hit, its sketch words (from the
/// [`WindowSketches`]) and its bands.
fn joins<K>(
    settings: &Settings,
    rule: &MatchRule,
    leader: (&CollapsedHit<K>, &[u64], &[u32]),
    hit: (&CollapsedHit<K>, &[u64], &[u32]),
) -> Option<Option<Evidence>> {
    if settings.group_by != GroupBy::Rule {
        let same = leader.0.group.is_some() && leader.0.group == hit.0.group;
        let distance = match (leader.0.fingerprint, hit.0.fingerprint) {
            (Some(a), Some(b)) => Some(Evidence::Simhash {
                distance: a.distance(b),
            }),
            _ => None,
        };
        return same.then_some(distance);
    }
    let a = (leader.0.fingerprint?, leader.1, leader.2);
    let b = (hit.0.fingerprint?, hit.1, hit.2);
    rule.matches_within_bands(a, b, settings.max_distance)
        .map(Some)
}

/// The sketch words of a window's hits, in one buffer, by window position: the fold reads
/// them there, and only the hits a result returns get a [`Sketch`] of their own (an
/// allocation each; a window has `fetch` hits, a result about a third of them without
/// [`keep_window`](super::NearDupCollapse::keep_window)).
pub(super) struct WindowSketches {
    words: Vec<u64>,
    /// Where each hit's words are in `words`; `None` for a hit without a sketch (no
    /// fingerprint).
    spans: Vec<Option<(usize, usize)>>,
}

impl WindowSketches {
    /// Takes the sketches the hits carry (results of shards, for their merge), leaving
    /// `None`.
    pub(super) fn take_from<K>(hits: &mut [CollapsedHit<K>]) -> WindowSketches {
        let mut sketches = WindowSketches {
            words: Vec::new(),
            spans: Vec::with_capacity(hits.len()),
        };
        for hit in hits {
            let span = hit.sketch.take().map(|sketch| {
                let start = sketches.words.len();
                sketches.words.extend_from_slice(&sketch.words);
                (start, sketches.words.len())
            });
            sketches.spans.push(span);
        }
        sketches
    }

    /// The words of the hit at window position `slot` (none without a sketch).
    fn words(&self, slot: usize) -> &[u64] {
        match self.spans.get(slot).copied().flatten() {
            Some((start, end)) => &self.words[start..end],
            None => &[],
        }
    }

    /// The hit's own copy of its sketch, for a result.
    fn sketch(&self, slot: usize) -> Option<Sketch> {
        let (start, end) = self.spans.get(slot).copied().flatten()?;
        Some(Sketch {
            words: self.words[start..end].to_vec(),
        })
    }
}

/// Band keys compared at once: a rule with at most this many bands (12 by default) keeps
/// each hit's keys in one fixed array, whose comparison with a leader's is a few vector
/// instructions.
const LANES: usize = 16;

/// The band keys of the groups' leaders, kept for the fold: each hit's keys are taken from its
/// packed sketch once, not once per leader it is checked against (up to `limit` times), and
/// held as `u32` (keys have at most 32 bits), which compare several at a time.
struct HitBands {
    /// The leaders' bands, one run of `bands` each (empty runs for a leader whose sketch is
    /// empty or missing, which shares no band).
    leaders: Vec<u32>,
    /// Where each leader's run starts and ends in `leaders`.
    runs: Vec<(usize, usize)>,
    /// The current hit's bands.
    hit: Vec<u32>,
    /// The same keys in [`LANES`] lanes (when the rule has at most that many bands): the
    /// leaders', and which of their lanes hold a band (none for a leader without bands).
    leader_lanes: Vec<([u32; LANES], u32)>,
    hit_lanes: ([u32; LANES], u32),
    /// `bands_into`'s buffer.
    words: Vec<u64>,
}

impl HitBands {
    fn new(rule: &MatchRule, limit: usize) -> HitBands {
        let bands = rule.spec().minhash.bands as usize;
        HitBands {
            leaders: Vec::with_capacity(bands * limit),
            runs: Vec::with_capacity(limit),
            hit: Vec::with_capacity(bands),
            leader_lanes: Vec::with_capacity(limit),
            hit_lanes: ([0; LANES], 0),
            words: Vec::with_capacity(bands),
        }
    }

    /// Whether the rule's bands fit in [`LANES`] lanes.
    fn fit_lanes(rule: &MatchRule) -> bool {
        rule.spec().minhash.bands as usize <= LANES
    }

    /// Takes the bands of `hit`, whose sketch words are `sketch` (none when folding by value,
    /// or for a missing or empty sketch: all zero words).
    fn take<K>(
        &mut self,
        settings: &Settings,
        rule: &MatchRule,
        hit: &CollapsedHit<K>,
        sketch: &[u64],
    ) {
        self.hit.clear();
        self.hit_lanes = ([0; LANES], 0);
        if settings.group_by != GroupBy::Rule || hit.fingerprint.is_none() {
            return;
        }
        if sketch.iter().any(|&w| w != 0) {
            self.words.clear();
            rule.bands_into(sketch, &mut self.words);
            // Band keys have `key_bits` <= 32 bits (`MinHashConfig::check`).
            self.hit.extend(self.words.iter().map(|&k| k as u32));
            if self.hit.len() <= LANES {
                self.hit_lanes.0[..self.hit.len()].copy_from_slice(&self.hit);
                self.hit_lanes.1 = low_lanes(self.hit.len());
            }
        }
    }

    /// The bands of leader `i`.
    fn leader(&self, i: usize) -> &[u32] {
        let (start, end) = self.runs[i];
        &self.leaders[start..end]
    }

    /// The current hit becomes a leader.
    fn push_leader(&mut self) {
        let start = self.leaders.len();
        self.leaders.extend_from_slice(&self.hit);
        self.runs.push((start, self.leaders.len()));
        self.leader_lanes.push(self.hit_lanes);
    }

    /// What [`MatchRule::matches_within_bands`] says of leader `i` and the current hit (each
    /// a fingerprint and its sketch words: the leader's by its window position), for a rule whose bands fit in [`LANES`] lanes:
    /// the same answer, the band keys compared lane by lane at once.
    fn rule_matches_leader(
        &self,
        rule: &MatchRule,
        max_distance: u32,
        i: usize,
        leader: (Option<Fingerprint>, &WindowSketches, usize),
        hit: (Option<Fingerprint>, &[u64]),
    ) -> Option<Evidence> {
        let distance = leader.0?.distance(hit.0?);
        let first_shared_band = || {
            let (lanes, valid) = &self.leader_lanes[i];
            let shared = equal_lanes(lanes, &self.hit_lanes.0) & valid & self.hit_lanes.1;
            (shared != 0).then(|| shared.trailing_zeros())
        };
        // The leader's words are read only for a pair sharing a band (most share none).
        let words = || (leader.1.words(leader.2), hit.1);
        rule.matches_by(distance, max_distance, first_shared_band, words)
    }
}

/// The mask of the first `n` (at most [`LANES`]) lanes.
fn low_lanes(n: usize) -> u32 {
    ((1u64 << n) - 1) as u32
}

/// Bit `i` set when lane `i` of `a` and `b` are equal (branch-free: vectorised).
#[inline]
fn equal_lanes(a: &[u32; LANES], b: &[u32; LANES]) -> u32 {
    let mut mask = 0u32;
    for i in 0..LANES {
        mask |= u32::from(a[i] == b[i]) << i;
    }
    mask
}

/// The greedy fold over the window (sorted best first), whose sketch words are in
/// `sketches` (by window position): a hit joins the first group whose leader it matches, else
/// leads a new group while fewer than `limit` exist; then, with a leader order, each group's
/// leader is chosen ([`choose_leaders`]). Returns the groups and the window's other hits; the
/// groups' hits get their sketches back, the others too with
/// [`keep_window`](super::NearDupCollapse::keep_window) (else the result drops them). Cost: the
/// bands of each hit taken once, then up to `limit` rule checks per hit (a popcount and up to
/// `bands` comparisons, and a pass over the sketches for a pair sharing a band), and a copy of
/// each returned sketch.
pub(super) fn fold<K: RankKey>(
    window: Vec<CollapsedHit<K>>,
    sketches: &WindowSketches,
    settings: &Settings,
    rule: &MatchRule,
    complete: bool,
) -> (Vec<CollapsedGroup<K>>, Vec<CollapsedHit<K>>) {
    let mut groups: Vec<CollapsedGroup<K>> = Vec::with_capacity(settings.limit.min(window.len()));
    let mut bands = HitBands::new(rule, groups.capacity());
    // The window position of each group's leader (its sketch words in `sketches`).
    let mut leader_slots: Vec<usize> = Vec::with_capacity(groups.capacity());
    let mut rest = Vec::new();
    let lanes = settings.group_by == GroupBy::Rule && HitBands::fit_lanes(rule);
    'hits: for (slot, mut hit) in window.into_iter().enumerate() {
        let words = sketches.words(slot);
        bands.take(settings, rule, &hit, words);
        for (i, group) in groups.iter_mut().enumerate() {
            let found = if lanes {
                bands
                    .rule_matches_leader(
                        rule,
                        settings.max_distance,
                        i,
                        (group.leader.fingerprint, sketches, leader_slots[i]),
                        (hit.fingerprint, words),
                    )
                    .map(Some)
            } else {
                joins(
                    settings,
                    rule,
                    (
                        &group.leader,
                        sketches.words(leader_slots[i]),
                        bands.leader(i),
                    ),
                    (&hit, words, &bands.hit),
                )
            };
            if let Some(evidence) = found {
                hit.distance = evidence.map(|e| e.distance());
                hit.resemblance = evidence.and_then(|e| e.resemblance());
                hit.sketch = sketches.sketch(slot);
                group.members.push(hit);
                group.count += 1;
                continue 'hits;
            }
        }
        hit.resemblance = None;
        if groups.len() < settings.limit {
            hit.distance = hit.fingerprint.map(|_| 0);
            hit.sketch = sketches.sketch(slot);
            bands.push_leader();
            leader_slots.push(slot);
            groups.push(CollapsedGroup {
                leader: hit,
                members: Vec::new(),
                count: 1,
                count_exact: complete,
            });
        } else {
            hit.distance = None;
            if settings.keep_window {
                hit.sketch = sketches.sketch(slot);
            }
            rest.push(hit);
        }
    }
    if let Some(leader_order) = &settings.leader_order {
        choose_leaders(&mut groups, leader_order.order, settings, rule);
    }
    (groups, rest)
}

/// The best-ranked hit of a group (the one the fold formed it around: with a leader order it
/// may be a member).
pub(super) fn anchor<K: RankKey>(group: &CollapsedGroup<K>, order: Order) -> &CollapsedHit<K> {
    group
        .members
        .iter()
        .fold(&group.leader, |best, m| match rank_order(m, best, order) {
            Ordering::Less => m,
            _ => best,
        })
}

/// Makes each group's leader the first of its hits (leader and members: the group's hits of
/// the window) by the leader-order value in `order` (documents without a value last), ties by
/// rank; the others stay members in rank order, with their distance (and, when the rule
/// matches them, resemblance) to the new leader. By the rule, a member may then be farther
/// than `k` from the new leader (both are within reach of the best-ranked hit).
fn choose_leaders<K: RankKey>(
    groups: &mut [CollapsedGroup<K>],
    order: Order,
    settings: &Settings,
    rule: &MatchRule,
) {
    for group in groups {
        let best = group.members.iter().enumerate().fold(
            None,
            |best: Option<(usize, Option<u64>)>, (i, m)| {
                let current = best.map_or(group.leader.leader_value, |b| b.1);
                // Members are in rank order, so only a strictly better value wins a tie.
                match m.leader_value.rank_cmp(&current, order) {
                    Ordering::Less => Some((i, m.leader_value)),
                    _ => best,
                }
            },
        );
        let Some((i, _)) = best else { continue };
        let new_leader = group.members.remove(i);
        let old_leader = std::mem::replace(&mut group.leader, new_leader);
        // The old leader ranked before every member: it goes first.
        group.members.insert(0, old_leader);
        group.leader.distance = group.leader.fingerprint.map(|_| 0);
        group.leader.resemblance = None;
        let leader_signature = group.leader.signature();
        for m in &mut group.members {
            m.distance = match (group.leader.fingerprint, m.fingerprint) {
                (Some(a), Some(b)) => Some(a.distance(b)),
                _ => None,
            };
            m.resemblance = None;
            if settings.group_by == GroupBy::Rule {
                let evidence = match (&leader_signature, m.signature()) {
                    (Some(a), Some(b)) => rule.matches_within(a, &b, settings.max_distance),
                    _ => None,
                };
                m.resemblance = evidence.and_then(|e| e.resemblance());
            }
        }
    }
}

/// A searched segment as the collector's fruit gives it: its id, and its columns when the
/// collapse's cache held them at collection, else its reader to open them from (cloning a
/// `SegmentReader` copies its file maps: a cost per segment and search worth saving once the
/// columns are cached).
pub(super) struct FruitSegment {
    pub(super) id: SegmentId,
    pub(super) source: SegmentSource,
}

/// Where the merge takes a segment's columns from.
pub(super) enum SegmentSource {
    /// The cached columns.
    Cached(Arc<SegmentColumns>),
    /// The segment's reader (the columns were not cached); boxed, being large.
    Reader(Box<SegmentReader>),
}

impl SegmentSource {
    /// The columns of `segment` if `cache` holds them, else `reader` (cloned).
    pub(super) fn new(cache: &ColumnCache, reader: &SegmentReader) -> SegmentSource {
        match cache.peek(reader.segment_id()) {
            Some(columns) => SegmentSource::Cached(columns),
            None => SegmentSource::Reader(Box::new(reader.clone())),
        }
    }
}

/// Which string column of the window's segments to read.
#[derive(Clone, Copy)]
pub(super) enum StrField {
    /// The user id.
    Id,
    /// The grouping field (by tag, or a string field).
    Group,
}

/// The columns of the window's segments, taken from the collapse's [`ColumnCache`] (opened
/// there on first use).
pub(super) struct WindowColumns<'a> {
    segments: &'a [Option<FruitSegment>],
    names: &'a ColumnNames,
    cache: &'a ColumnCache,
    search: u64,
    opened: Vec<Option<Arc<SegmentColumns>>>,
}

impl<'a> WindowColumns<'a> {
    pub(super) fn new(
        segments: &'a [Option<FruitSegment>],
        names: &'a ColumnNames,
        cache: &'a ColumnCache,
    ) -> WindowColumns<'a> {
        WindowColumns {
            segments,
            names,
            cache,
            search: cache.start_search(),
            opened: (0..segments.len()).map(|_| None).collect(),
        }
    }

    /// The columns of segment `ord`, if it was searched.
    fn segment(&mut self, ord: usize) -> Result<Option<&SegmentColumns>> {
        let Some(segment) = self.segments.get(ord).and_then(Option::as_ref) else {
            return Ok(None);
        };
        if self.opened[ord].is_none() {
            self.opened[ord] = Some(match &segment.source {
                SegmentSource::Cached(columns) => self.cache.keep(self.search, segment.id, columns),
                SegmentSource::Reader(reader) => {
                    self.cache
                        .segment(self.search, segment.id, reader, self.names)?
                }
            });
        }
        Ok(self.opened[ord].as_deref())
    }

    /// The inner collector's ranked hits as window hits, with their fingerprints (sketches,
    /// ids, values and distances not read yet: [`sketches`](Self::sketches) reads the
    /// window's sketches once it is cut and ranked).
    pub(super) fn hits<K>(&mut self, ranked: Vec<(K, DocAddress)>) -> Result<Vec<CollapsedHit<K>>> {
        let mut window = Vec::with_capacity(ranked.len());
        for (key, address) in ranked {
            let fingerprint = self
                .segment(address.segment_ord as usize)?
                .and_then(|s| s.signatures.fingerprint(address.doc_id));
            window.push(CollapsedHit {
                key,
                id: String::new(),
                address,
                shard: 0,
                fingerprint,
                sketch: None,
                distance: None,
                resemblance: None,
                group: None,
                leader_value: None,
            });
        }
        Ok(window)
    }

    /// The sketch words of the window's hits, by position, into one buffer (a hit with a
    /// fingerprint has a sketch, all zero if it was added without one). Cost: one contiguous
    /// read per hit (32 words by default) and the buffer's allocation.
    pub(super) fn sketches<K>(&mut self, window: &[CollapsedHit<K>]) -> Result<WindowSketches> {
        let mut sketches = WindowSketches {
            words: Vec::with_capacity(window.len() * self.names.rule.minhash().sketch_words()),
            spans: Vec::with_capacity(window.len()),
        };
        for hit in window {
            let start = sketches.words.len();
            let read = hit.fingerprint.is_some()
                && self
                    .segment(hit.address.segment_ord as usize)?
                    .is_some_and(|s| {
                        s.signatures
                            .sketch_words_into(hit.address.doc_id, &mut sketches.words)
                    });
            sketches
                .spans
                .push(read.then_some((start, sketches.words.len())));
        }
        Ok(sketches)
    }

    /// Reads the grouping column of each hit: a string as stored, a number rendered
    /// ([`ValueKind::render`]); hits without a value are left alone. Cost: one column read
    /// per hit (a string through its segment's table, or batched per dictionary block).
    pub(super) fn read_groups<K>(&mut self, hits: &mut [CollapsedHit<K>]) -> Result<()> {
        let mut strings: Vec<&mut CollapsedHit<K>> = Vec::new();
        for hit in hits {
            let Some(columns) = self.segment(hit.address.segment_ord as usize)? else {
                continue;
            };
            match &columns.group {
                Some(GroupValues::Numeric(values, kind)) => {
                    if let Some(raw) = values.first(hit.address.doc_id) {
                        hit.group = Some(kind.render(raw));
                    }
                }
                Some(GroupValues::Str(_)) => strings.push(hit),
                None => {}
            }
        }
        self.read_strings(strings, StrField::Group, |h| &mut h.group)
    }

    /// Reads the leader-order column of each hit as its order-preserving `u64`; hits without
    /// a value are left alone. Cost: one column read per hit.
    pub(super) fn read_leader_values<K>(&mut self, hits: &mut [CollapsedHit<K>]) -> Result<()> {
        for hit in hits {
            let Some(columns) = self.segment(hit.address.segment_ord as usize)? else {
                continue;
            };
            if let Some(raw) = columns
                .leader_order
                .as_ref()
                .and_then(|c| c.first(hit.address.doc_id))
            {
                hit.leader_value = Some(raw);
            }
        }
        Ok(())
    }

    /// Reads the string column `field` of each target into `slot`, one batch per segment
    /// ([`StrValues::read`]: through the segment's table once built, else each dictionary
    /// block touched decompressed once); targets without a value are left alone.
    pub(super) fn read_strings<K, T: From<String>>(
        &mut self,
        mut targets: Vec<&mut CollapsedHit<K>>,
        field: StrField,
        slot: impl Fn(&mut CollapsedHit<K>) -> &mut T,
    ) -> Result<()> {
        targets.sort_by_key(|h| h.address);
        for run in targets.chunk_by_mut(|a, b| a.address.segment_ord == b.address.segment_ord) {
            let Some(columns) = self.segment(run[0].address.segment_ord as usize)? else {
                continue;
            };
            let values = match (field, &columns.group) {
                (StrField::Id, _) => &columns.ids,
                (StrField::Group, Some(GroupValues::Str(values))) => values,
                (StrField::Group, _) => continue,
            };
            let docs: Vec<DocId> = run.iter().map(|h| h.address.doc_id).collect();
            for (target, value) in run.iter_mut().zip(values.read(&docs)?) {
                if let Some(value) = value {
                    *slot(target) = T::from(value);
                }
            }
        }
        Ok(())
    }
}

/// Marks the hits of `window` (sorted) that are tied with a neighbour on key and fingerprint:
/// exact duplicates, whose order the user id decides.
pub(super) fn tied_on_key_and_fingerprint<K: RankKey>(
    window: &[CollapsedHit<K>],
    order: Order,
) -> Vec<bool> {
    let mut tied = vec![false; window.len()];
    let same = |a: &CollapsedHit<K>, b: &CollapsedHit<K>| {
        a.fingerprint == b.fingerprint && a.key.rank_cmp(&b.key, order) == Ordering::Equal
    };
    let mut start = 0;
    while start < window.len() {
        let mut end = start + 1;
        while end < window.len() && same(&window[end], &window[start]) {
            end += 1;
        }
        if end - start > 1 {
            tied[start..end].iter_mut().for_each(|t| *t = true);
        }
        start = end;
    }
    tied
}
