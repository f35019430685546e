//! What one task of the join found, compactly: ranges of rows and items over them.

use crate::signature::{resemblance_of, Evidence, MinHashConfig, PairStats};
use tantivy::DocAddress;

/// A document in the join: `segment << 32 | doc`, so the order is the address order.
pub(super) type Row = u64;

pub(super) fn address(row: Row) -> DocAddress {
    DocAddress::new((row >> 32) as u32, row as u32)
}

/// Pairs found by one task, compactly: a duplicate group is one item, not its pairs.
#[derive(Default)]
pub(crate) struct Found {
    pub(super) rows: Vec<Row>,
    pub(super) items: Vec<Item>,
    pub(super) stats: PairStats,
}

/// Ranges of [`Found::rows`] (each ascending).
pub(super) enum Item {
    /// Documents with one fingerprint: every pair, distance 0.
    Clique(u32, u32),
    /// Every document of one range with every document of the other.
    Cross((u32, u32), (u32, u32), Evidence),
}

impl Found {
    pub(super) fn push_rows(&mut self, rows: impl Iterator<Item = Row>) -> (u32, u32) {
        let start = self.rows.len() as u32;
        self.rows.extend(rows);
        (start, self.rows.len() as u32 - start)
    }

    fn range(&self, (start, len): (u32, u32)) -> &[Row] {
        &self.rows[start as usize..(start + len) as usize]
    }

    /// Calls `f(rows, other)` per item: documents of one fingerprint as `(rows, None)` (every
    /// pair within `rows`), a cross as `(a, Some(b))` (every row of `a` with every row of `b`).
    /// The compact form leader clustering walks, linear in the items' rows.
    pub(super) fn for_each_item(&self, mut f: impl FnMut(&[Row], Option<&[Row]>)) {
        for item in &self.items {
            match *item {
                Item::Clique(start, len) => f(self.range((start, len)), None),
                Item::Cross(a, b, _) => f(self.range(a), Some(self.range(b))),
            }
        }
    }

    /// Calls `f(a, b)` with pairs that connect the same documents as
    /// [`for_each_pair`](Self::for_each_pair) (a duplicate group as a chain): what a
    /// union-find needs, linear in the groups' sizes.
    pub(super) fn for_each_link(&self, mut f: impl FnMut(DocAddress, DocAddress)) {
        for item in &self.items {
            match *item {
                Item::Clique(start, len) => {
                    for w in self.range((start, len)).windows(2) {
                        f(address(w[0]), address(w[1]));
                    }
                }
                Item::Cross(a, b, _) => {
                    let (a, b) = (self.range(a), self.range(b));
                    for &x in a {
                        f(address(x), address(b[0]));
                    }
                    for &y in &b[1..] {
                        f(address(a[0]), address(y));
                    }
                }
            }
        }
    }

    /// Calls `f(a, b, evidence)` for every pair, `a < b`, in item order.
    pub(crate) fn for_each_pair(&self, mut f: impl FnMut(DocAddress, DocAddress, Evidence)) {
        for item in &self.items {
            match *item {
                Item::Clique(start, len) => {
                    let rows = self.range((start, len));
                    let same = Evidence::Simhash { distance: 0 };
                    for (i, &x) in rows.iter().enumerate() {
                        for &y in &rows[i + 1..] {
                            f(address(x), address(y), same);
                        }
                    }
                }
                Item::Cross(a, b, evidence) => {
                    for &x in self.range(a) {
                        for &y in self.range(b) {
                            f(address(x.min(y)), address(x.max(y)), evidence);
                        }
                    }
                }
            }
        }
    }
}

/// The classes of one range of rows: rows with one sketch (ascending), their sketch words.
struct Classes {
    /// Each class: its range in the new [`Found`]'s rows and its offset in `words`.
    classes: Vec<((u32, u32), usize)>,
    words: Vec<u64>,
}

impl Found {
    /// This task's pairs whose sketches estimate a resemblance of at least `min`
    /// ([`PairJoin::min_resemblance`](super::PairJoin::min_resemblance)), whichever branch
    /// matched them; a pair with an empty sketch (a text without shingles) has no estimate and
    /// stays. The form stays compact: a group of one fingerprint is split into classes of one
    /// sketch (identical sketches estimate 1), and each pair of classes is kept or dropped
    /// whole, so the leader walk and the union-find read it as before. `sketch(row, out)`
    /// appends the row's `width` sketch words to `out` (nothing when it has none: read as
    /// empty). Cost: one sketch read per row of a simhash item and one estimate per pair of
    /// classes; a resemblance item is decided by its evidence.
    pub(super) fn at_least(
        self,
        min: f32,
        config: &MinHashConfig,
        width: usize,
        sketch: impl Fn(Row, &mut Vec<u64>),
    ) -> Found {
        let mut out = Found {
            stats: self.stats,
            ..Found::default()
        };
        let mut below = 0u64;
        let size = |r: (u32, u32)| u64::from(r.1);
        for item in &self.items {
            match *item {
                Item::Cross(a, b, e @ Evidence::Resemblance { resemblance, .. }) => {
                    if resemblance >= min {
                        let ra = out.push_rows(self.range(a).iter().copied());
                        let rb = out.push_rows(self.range(b).iter().copied());
                        out.items.push(Item::Cross(ra, rb, e));
                    } else {
                        below += size(a) * size(b);
                    }
                }
                Item::Clique(start, len) => {
                    let c = out.classes(self.range((start, len)), width, &sketch);
                    for (i, &(ri, wi)) in c.classes.iter().enumerate() {
                        if ri.1 >= 2 {
                            out.items.push(Item::Clique(ri.0, ri.1));
                        }
                        for &(rj, wj) in &c.classes[i + 1..] {
                            let (x, y) = (&c.words[wi..wi + width], &c.words[wj..wj + width]);
                            if kept(x, y, min, config) {
                                let same = Evidence::Simhash { distance: 0 };
                                out.items.push(Item::Cross(ri, rj, same));
                            } else {
                                below += size(ri) * size(rj);
                            }
                        }
                    }
                }
                Item::Cross(a, b, e) => {
                    let ca = out.classes(self.range(a), width, &sketch);
                    let cb = out.classes(self.range(b), width, &sketch);
                    for &(ra, wa) in &ca.classes {
                        for &(rb, wb) in &cb.classes {
                            let (x, y) = (&ca.words[wa..wa + width], &cb.words[wb..wb + width]);
                            if kept(x, y, min, config) {
                                out.items.push(Item::Cross(ra, rb, e));
                            } else {
                                below += size(ra) * size(rb);
                            }
                        }
                    }
                }
            }
        }
        out.stats.pairs -= below;
        out.stats.below_min_resemblance += below;
        out
    }

    /// Splits `rows` into classes of one sketch, placing each class's rows (ascending) in
    /// this `Found`.
    fn classes(
        &mut self,
        rows: &[Row],
        width: usize,
        sketch: &impl Fn(Row, &mut Vec<u64>),
    ) -> Classes {
        let mut words = Vec::with_capacity(rows.len() * width);
        for &row in rows {
            let at = words.len();
            sketch(row, &mut words);
            words.resize(at + width, 0); // no signature: an empty sketch
        }
        let of = |i: usize| &words[i * width..(i + 1) * width];
        let mut order: Vec<usize> = (0..rows.len()).collect();
        order.sort_unstable_by(|&i, &j| of(i).cmp(of(j)).then(rows[i].cmp(&rows[j])));
        let mut classes = Vec::new();
        for class in order.chunk_by(|&i, &j| of(i) == of(j)) {
            let range = self.push_rows(class.iter().map(|&i| rows[i]));
            classes.push((range, class[0] * width));
        }
        Classes { classes, words }
    }
}

/// Whether a pair of sketches passes `min` (an empty one has no estimate: it passes).
fn kept(a: &[u64], b: &[u64], min: f32, config: &MinHashConfig) -> bool {
    let empty = |w: &[u64]| w.iter().all(|&x| x == 0);
    empty(a) || empty(b) || resemblance_of(a, b, config) >= min
}
