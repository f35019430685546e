//! The comparisons within one key's run: block runs (split by Manku's sub-blocks when hot) and
//! band runs (classes of one signature), and the rule for hot runs ([`visit_run`]).

use super::found::{Item, Row};
use super::{Context, Found};
use crate::fingerprint::Fingerprint;
use crate::signature::{Evidence, Signature};

impl Context<'_> {
    /// A run of documents sharing block key `position`: pairs within the simhash radius whose
    /// first shared block key is this one (identical fingerprints under the first position).
    pub(super) fn block_run(
        &self,
        position: usize,
        run: &[(u64, Row)],
        s: &mut Scratch,
        found: &mut Found,
    ) {
        s.members.clear();
        // Entries come from the tables, which hold documents with a signature only.
        s.members
            .extend(run.iter().map(|&(_, row)| (self.fingerprint(row), row)));
        s.members.sort_unstable();
        // Distinct fingerprints: (fingerprint, start, len) in `members`.
        s.groups.clear();
        for g in s.members.chunk_by(|x, y| x.0 == y.0) {
            let start = g.as_ptr() as usize - s.members.as_ptr() as usize;
            let start = start / std::mem::size_of::<(u64, Row)>();
            s.groups.push((g[0].0, start as u32, g.len() as u32));
        }
        s.placed.clear();
        s.placed.resize(s.groups.len(), None);
        if position == 0 {
            for g in 0..s.groups.len() {
                let len = s.groups[g].2;
                if len >= 2 {
                    let range = place(s, found, g);
                    found.items.push(Item::Clique(range.0, range.1));
                    found.stats.pairs += u64::from(len) * u64::from(len - 1) / 2;
                }
            }
        }
        let n = s.groups.len();
        if n <= self.cap.saturating_add(1) {
            for a in 0..n {
                for b in a + 1..n {
                    self.compare_blocks(position, None, a, b, s, found);
                }
            }
            return;
        }
        // Manku's split: the run shares this key's bits; a pair within the radius agrees on
        // one of `max_distance + 1` sub-blocks of the other bits.
        let sub_masks = split_bits(!self.block_masks[position], self.max_distance + 1);
        let mut order: Vec<(u64, u32)> = Vec::with_capacity(n);
        for (j, &mask) in sub_masks.iter().enumerate() {
            order.clear();
            order.extend((0..n).map(|g| (s.groups[g].0 & mask, g as u32)));
            order.sort_unstable();
            for sub in order.chunk_by(|x, y| x.0 == y.0) {
                let cut = visit_run(sub.len(), self.cap, |x, y| {
                    let (a, b) = (sub[x].1 as usize, sub[y].1 as usize);
                    self.compare_blocks(position, Some((j, &sub_masks)), a, b, s, found)
                });
                found.stats.hot_keys += u64::from(cut);
            }
        }
    }

    /// Compares distinct fingerprints `a` and `b` of a block run (indexes into `s.groups`);
    /// reports their documents' pairs when within the radius and owned here.
    fn compare_blocks(
        &self,
        position: usize,
        sub: Option<(usize, &[u64])>,
        a: usize,
        b: usize,
        s: &mut Scratch,
        found: &mut Found,
    ) -> Outcome {
        let (fa, fb) = (s.groups[a].0, s.groups[b].0);
        found.stats.comparisons += 1;
        let diff = fa ^ fb;
        let distance = diff.count_ones();
        if distance > self.max_distance {
            return Outcome::Rejected;
        }
        let layout = self.rule.layout();
        if layout.first_shared_key(Fingerprint(fa), Fingerprint(fb)) != Some(position) {
            return Outcome::Matched; // reported under an earlier key
        }
        if let Some((j, masks)) = sub {
            if masks.iter().position(|&m| diff & m == 0) != Some(j) {
                return Outcome::Matched; // reported under an earlier sub-block
            }
        }
        let ra = place(s, found, a);
        let rb = place(s, found, b);
        found.stats.pairs += u64::from(ra.1) * u64::from(rb.1);
        found
            .items
            .push(Item::Cross(ra, rb, Evidence::Simhash { distance }));
        Outcome::Matched
    }

    /// A run of documents sharing the key of band `position - blocks`: the pairs beyond the
    /// simhash radius whose first shared band is this one and whose resemblance the rule
    /// accepts. Documents with one signature (fingerprint and sketch) form a class, verified
    /// once and reported as one item with every other class it matches.
    pub(super) fn band_run(
        &self,
        position: usize,
        run: &[(u64, Row)],
        s: &mut Scratch,
        found: &mut Found,
    ) {
        let band = (position - self.block_masks.len()) as u32;
        let config = self.rule.minhash();
        s.band_members.clear();
        // The fingerprint from the file, not from `fingerprints`: it shares a cache line with
        // the band keys read next, where the in-memory copy would be a second random read.
        s.band_members.extend(
            run.iter()
                .map(|&(_, row)| (self.segment(row).file().word(row as u32, 0), row)),
        );
        s.band_members.sort_unstable();
        // The members' earlier bands: a pair sharing one is reported under it (or not at all),
        // so a run that shares an earlier band throughout (a family that keeps every band, a
        // template that fixes several) has nothing to report here.
        let earlier = |row: Row, j: u32| self.segment(row).band(row as u32, config, j);
        let first = s.band_members[0].1;
        for j in 0..band {
            let value = earlier(first, j);
            if s.band_members.iter().all(|m| earlier(m.1, j) == value) {
                return;
            }
        }
        self.band_classes(s);
        let n = s.classes.len();
        if n < 2 {
            return;
        }
        s.earlier.clear();
        for c in 0..n {
            let row = s.class_rows[s.classes[c].1 as usize];
            s.earlier.extend((0..band).map(|j| earlier(row, j)));
        }
        s.placed.clear();
        s.placed.resize(n, None);
        if n > self.cap.saturating_add(1) {
            // A family that keeps its earlier bands, met here with a few other documents (chance
            // collisions of this band's key): its pairs are reported under the earlier band, so
            // only pairs with one of the others are compared, at most `cap` others x the run.
            let (j, value, holders) =
                most_shared_earlier_band(&s.earlier, band as usize, &mut s.values);
            if holders >= 2 && n - holders <= self.cap {
                let width = band as usize;
                let holds = |earlier: &[u64], c: usize| earlier[c * width + j] == value;
                for a in 0..n {
                    if holds(&s.earlier, a) {
                        continue;
                    }
                    for b in 0..n {
                        if b != a && (holds(&s.earlier, b) || b > a) {
                            self.compare_bands(band, a.min(b), a.max(b), s, found);
                        }
                    }
                }
                return;
            }
        }
        let cut = visit_run(n, self.cap, |a, b| self.compare_bands(band, a, b, s, found));
        found.stats.hot_keys += u64::from(cut);
    }

    /// Splits `s.band_members` (sorted by fingerprint) into classes of one signature:
    /// `s.classes` (fingerprint, start, len in `s.class_rows`, rows ascending) with the
    /// signature of classes read for splitting in `s.class_signatures` (others read when first
    /// verified).
    fn band_classes(&self, s: &mut Scratch) {
        s.classes.clear();
        s.class_rows.clear();
        s.class_signatures.clear();
        let members = std::mem::take(&mut s.band_members);
        for group in members.chunk_by(|x, y| x.0 == y.0) {
            if group.len() == 1 {
                s.classes.push((group[0].0, s.class_rows.len() as u32, 1));
                s.class_rows.push(group[0].1);
                s.class_signatures.push(None);
                continue;
            }
            // One fingerprint, maybe several sketches: sort by sketch, then row.
            let mut read: Vec<(Signature, Row)> = group
                .iter()
                .filter_map(|&(_, row)| self.segment(row).get(row as u32).map(|sig| (sig, row)))
                .collect();
            read.sort_unstable_by(|x, y| {
                x.0.sketch.words.cmp(&y.0.sketch.words).then(x.1.cmp(&y.1))
            });
            for same in read.chunk_by(|x, y| x.0.sketch.words == y.0.sketch.words) {
                s.classes
                    .push((group[0].0, s.class_rows.len() as u32, same.len() as u32));
                s.class_rows.extend(same.iter().map(|x| x.1));
                s.class_signatures.push(Some(same[0].0.clone()));
            }
        }
        s.band_members = members;
    }

    /// Compares classes `a` and `b` of a band run; reports their documents' pairs when the
    /// rule matches them by resemblance with this band first.
    fn compare_bands(
        &self,
        band: u32,
        a: usize,
        b: usize,
        s: &mut Scratch,
        found: &mut Found,
    ) -> Outcome {
        let (fa, fb) = (s.classes[a].0, s.classes[b].0);
        if (fa ^ fb).count_ones() <= self.max_distance {
            return Outcome::Skipped; // a simhash match: reported under its block key
        }
        let width = band as usize;
        let (ea, eb) = (
            &s.earlier[a * width..(a + 1) * width],
            &s.earlier[b * width..(b + 1) * width],
        );
        if ea.iter().zip(eb).any(|(x, y)| x == y) {
            return Outcome::Skipped; // reported under an earlier band, if at all
        }
        found.stats.comparisons += 1;
        for c in [a, b] {
            if s.class_signatures[c].is_none() {
                let row = s.class_rows[s.classes[c].1 as usize];
                s.class_signatures[c] = self.segment(row).get(row as u32);
            }
        }
        let (Some(sa), Some(sb)) = (&s.class_signatures[a], &s.class_signatures[b]) else {
            return Outcome::Rejected;
        };
        match self.rule.matches_within(sa, sb, self.max_distance) {
            Some(e @ Evidence::Resemblance { band: first, .. }) if first == band => {
                let ra = place_class(s, found, a);
                let rb = place_class(s, found, b);
                found.stats.pairs += u64::from(ra.1) * u64::from(rb.1);
                found.items.push(Item::Cross(ra, rb, e));
                Outcome::Matched
            }
            _ => Outcome::Rejected,
        }
    }
}

/// The earlier band `j` (of `width` per class in `earlier`), its value and how many classes
/// hold it, for the value held by the most classes (the first such band on a tie).
fn most_shared_earlier_band(
    earlier: &[u64],
    width: usize,
    values: &mut Vec<u64>,
) -> (usize, u64, usize) {
    let mut best = (0, 0, 0);
    for j in 0..width {
        values.clear();
        values.extend(earlier.iter().skip(j).step_by(width));
        values.sort_unstable();
        for same in values.chunk_by(|x, y| x == y) {
            if same.len() > best.2 {
                best = (j, same[0], same.len());
            }
        }
    }
    best
}

/// What comparing one pair of a run cost and found, for [`visit_run`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Outcome {
    /// Decided without a comparison (another key reports it, or nothing does).
    Skipped,
    /// Compared, no match.
    Rejected,
    /// Compared, a match (reported here or under another key).
    Matched,
}

/// Below this share of matches among the comparisons of a hot run's window the run is cut.
const DENSE_RUN_SHARE: u64 = 4;

/// Calls `visit(a, b)` for pairs `a < b < n` of a run: each member with the next `cap`
/// (all pairs when `n <= cap + 1`); then, for a longer run, the remaining pairs too when at
/// least one in [`DENSE_RUN_SHARE`] of the window's comparisons matched. A dense run (a
/// family of near-duplicates) is thus joined exactly, its work proportional to the pairs it
/// reports; a sparse one (a template shared by unrelated documents) stops at `n x cap`
/// comparisons. Returns whether the run was cut (pairs left unvisited).
pub(super) fn visit_run(
    n: usize,
    cap: usize,
    mut visit: impl FnMut(usize, usize) -> Outcome,
) -> bool {
    let (mut compared, mut matched) = (0u64, 0u64);
    let window_end = |a: usize| a.saturating_add(1).saturating_add(cap).min(n);
    for a in 0..n {
        for b in a + 1..window_end(a) {
            match visit(a, b) {
                Outcome::Skipped => {}
                Outcome::Rejected => compared += 1,
                Outcome::Matched => {
                    compared += 1;
                    matched += 1;
                }
            }
        }
    }
    if n <= cap.saturating_add(1) {
        return false;
    }
    if matched * DENSE_RUN_SHARE < compared {
        return true;
    }
    for a in 0..n {
        for b in window_end(a)..n {
            visit(a, b);
        }
    }
    false
}

/// Reusable buffers of one task.
#[derive(Default)]
pub(super) struct Scratch {
    /// A block run's documents: (fingerprint, row), sorted.
    members: Vec<(u64, Row)>,
    /// Distinct fingerprints of `members`: (fingerprint, start, len).
    groups: Vec<(u64, u32, u32)>,
    /// Where a group's rows are in the task's output, once placed.
    placed: Vec<Option<(u32, u32)>>,
    /// A band run's documents: (fingerprint, row), sorted.
    band_members: Vec<(u64, Row)>,
    /// A band run's classes (one signature each): (fingerprint, start, len) in `class_rows`.
    classes: Vec<(u64, u32, u32)>,
    /// The rows of the classes, each class's ascending.
    class_rows: Vec<Row>,
    /// A class's signature, read when first needed.
    class_signatures: Vec<Option<Signature>>,
    /// The bands before the run's of each class (`band` values a class).
    earlier: Vec<u64>,
    /// Scratch values of one earlier band.
    values: Vec<u64>,
}

/// The rows of group `g` of a block run in `found`, copied there when first needed.
fn place(s: &mut Scratch, found: &mut Found, g: usize) -> (u32, u32) {
    if let Some(range) = s.placed[g] {
        return range;
    }
    let (_, start, len) = s.groups[g];
    let rows = s.members[start as usize..(start + len) as usize]
        .iter()
        .map(|m| m.1);
    let range = found.push_rows(rows);
    s.placed[g] = Some(range);
    range
}

/// The rows of class `c` of a band run in `found`, copied there when first needed.
fn place_class(s: &mut Scratch, found: &mut Found, c: usize) -> (u32, u32) {
    if let Some(range) = s.placed[c] {
        return range;
    }
    let (_, start, len) = s.classes[c];
    let range = found.push_rows(
        s.class_rows[start as usize..(start + len) as usize]
            .iter()
            .copied(),
    );
    s.placed[c] = Some(range);
    range
}

/// `parts` masks that split the set bits of `bits` (in bit order) into runs of nearly equal
/// size; pigeonhole: two values that differ in fewer than `parts` of those bits agree on one.
pub(super) fn split_bits(bits: u64, parts: u32) -> Vec<u64> {
    let total = bits.count_ones();
    let parts = parts.clamp(1, total.max(1));
    let mut masks = vec![0u64; parts as usize];
    let mut seen = 0;
    for b in 0..64 {
        if bits >> b & 1 == 1 {
            let part = (seen * parts / total.max(1)) as usize;
            masks[part] |= 1 << b;
            seen += 1;
        }
    }
    masks
}
