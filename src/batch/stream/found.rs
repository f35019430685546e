//! What one task of the join found, compactly: ranges of rows and items over them.

use crate::signature::{Evidence, PairStats};
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
