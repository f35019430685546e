//! The pages of a run and what pairs of hosts share: counterpart groups, page pairs, examples.

use super::chrome::HostContent;
use crate::signature::{Evidence, MatchRule, Signature};
use std::collections::HashMap;

/// Every page of a run, host after host, by page number: what pairing and scoring read.
pub(super) struct PageTable {
    pub(super) host_names: Vec<String>,
    pub(super) host_sizes: Vec<u32>,
    pub(super) ids: Vec<String>,
    /// The host number of each page.
    pub(super) hosts: Vec<u32>,
    pub(super) signatures: Vec<Option<Signature>>,
    pub(super) han_shares: Vec<f64>,
    pub(super) tokens: u64,
    pub(super) chrome_tokens: u64,
}

impl PageTable {
    /// The share of the pages' tokens that chrome removal dropped (0 without tokens).
    pub(super) fn chrome_share(&self) -> f64 {
        if self.tokens == 0 {
            0.0
        } else {
            self.chrome_tokens as f64 / self.tokens as f64
        }
    }

    pub(super) fn flatten(
        hosts: Vec<(String, Vec<(String, String)>)>,
        analyzed: Vec<HostContent>,
    ) -> Self {
        let mut table = PageTable {
            host_names: Vec::with_capacity(hosts.len()),
            host_sizes: Vec::with_capacity(hosts.len()),
            ids: Vec::new(),
            hosts: Vec::new(),
            signatures: Vec::new(),
            han_shares: Vec::new(),
            tokens: 0,
            chrome_tokens: 0,
        };
        for ((name, pages), content) in hosts.into_iter().zip(analyzed) {
            let h = table.host_names.len() as u32;
            table.host_names.push(name);
            table.host_sizes.push(pages.len() as u32);
            table.tokens += content.tokens;
            table.chrome_tokens += content.chrome_tokens;
            for (((id, _), fp), han) in pages
                .into_iter()
                .zip(content.fingerprints)
                .zip(content.han_shares)
            {
                table.ids.push(id);
                table.hosts.push(h);
                table.signatures.push(fp);
                table.han_shares.push(han);
            }
        }
        table
    }
}

/// The connected components of the page pairs (union-find), each sorted: pages and their
/// copies of copies.
pub(super) fn counterpart_groups(pages: usize, edges: &[(u32, u32, u32)]) -> Vec<Vec<u32>> {
    let mut uf = crate::batch::UnionFind::new(pages);
    for &(a, b, _) in edges {
        uf.union(a, b);
    }
    let mut by_root: HashMap<u32, Vec<u32>> = HashMap::new();
    for &(a, b, _) in edges {
        for p in [a, b] {
            by_root.entry(uf.find(p)).or_default().push(p);
        }
    }
    by_root
        .into_values()
        .map(|mut g| {
            g.sort_unstable();
            g.dedup();
            g
        })
        .collect()
}

/// What each pair of hosts shares when a counterpart group counts as one shared page.
pub(super) fn shared_by_groups(
    groups: &[Vec<u32>],
    pages: &PageTable,
    max_examples: usize,
) -> HashMap<(u32, u32), PairAcc> {
    let mut acc: HashMap<(u32, u32), PairAcc> = HashMap::new();
    for group in groups {
        let mut per_host: HashMap<u32, Vec<u32>> = HashMap::new();
        for &p in group {
            per_host.entry(pages.hosts[p as usize]).or_default().push(p);
        }
        let mut hs: Vec<(&u32, &Vec<u32>)> = per_host.iter().collect();
        hs.sort_unstable_by_key(|(h, _)| **h);
        for i in 0..hs.len() {
            for j in i + 1..hs.len() {
                let (ha, pa) = hs[i];
                let (hb, pb) = hs[j];
                let e = acc.entry((*ha, *hb)).or_default();
                e.shared += 1;
                e.matched_a += pa.len() as u32;
                e.matched_b += pb.len() as u32;
                let best = closest(pa, pb, &pages.signatures);
                e.push_example(best, max_examples);
            }
        }
    }
    acc
}

/// What each pair of hosts shares from direct cross-host page pairs only: the smaller of the
/// two matched page counts.
pub(super) fn shared_by_pairs(
    cross: &[&(u32, u32, u32)],
    pages: &PageTable,
    max_examples: usize,
) -> HashMap<(u32, u32), PairAcc> {
    let mut acc: HashMap<(u32, u32), PairAcc> = HashMap::new();
    let mut sides: HashMap<(u32, u32), (Vec<u32>, Vec<u32>)> = HashMap::new();
    for &&(a, b, d) in cross {
        let (a, b) = if pages.hosts[a as usize] < pages.hosts[b as usize] {
            (a, b)
        } else {
            (b, a)
        };
        let key = (pages.hosts[a as usize], pages.hosts[b as usize]);
        let s = sides.entry(key).or_default();
        s.0.push(a);
        s.1.push(b);
        acc.entry(key)
            .or_default()
            .push_example((d, a, b), max_examples);
    }
    for (key, (mut sa, mut sb)) in sides {
        sa.sort_unstable();
        sa.dedup();
        sb.sort_unstable();
        sb.dedup();
        let e = acc.entry(key).or_default();
        e.matched_a = sa.len() as u32;
        e.matched_b = sb.len() as u32;
        e.shared = e.matched_a.min(e.matched_b);
    }
    acc
}

#[derive(Default)]
pub(super) struct PairAcc {
    pub(super) shared: u32,
    pub(super) matched_a: u32,
    pub(super) matched_b: u32,
    /// (distance, page on a, page on b), at most `max_examples` nearest.
    pub(super) examples: Vec<(u32, u32, u32)>,
}

impl PairAcc {
    pub(super) fn push_example(&mut self, e: (u32, u32, u32), max: usize) {
        if max == 0 {
            return;
        }
        if self.examples.len() < max {
            self.examples.push(e);
            return;
        }
        if let Some((i, worst)) = self.examples.iter().enumerate().max_by_key(|(_, w)| **w) {
            if e < *worst {
                self.examples[i] = e;
            }
        }
    }
}

/// The nearest pair between two page lists: (distance, page a, page b).
pub(super) fn closest(pa: &[u32], pb: &[u32], sigs: &[Option<Signature>]) -> (u32, u32, u32) {
    let mut best = (u32::MAX, pa[0], pb[0]);
    for &a in pa {
        for &b in pb {
            if let (Some(x), Some(y)) = (&sigs[a as usize], &sigs[b as usize]) {
                best = best.min((x.fingerprint.distance(y.fingerprint), a, b));
            }
        }
    }
    best
}

/// Every pair of `items` whose content signatures `rule` matches (without its resemblance
/// branch unless `by_resemblance`), through the in-memory join of
/// [`signature::pairs_in_memory`](crate::signature::pairs_in_memory) (identical signatures
/// grouped first; hot keys bounded by [`crate::DEFAULT_JOIN_MAX_POSTINGS_PER_KEY`]). Returns
/// `(item a, item b, fingerprint distance)` with `a < b`, each pair once, sorted.
pub(crate) fn near_pairs(
    rule: &MatchRule,
    by_resemblance: bool,
    items: &[(u32, &Signature)],
) -> Vec<(u32, u32, u32)> {
    let signatures: Vec<Signature> = items.iter().map(|(_, s)| (*s).clone()).collect();
    let mut out = Vec::new();
    let bound = crate::DEFAULT_JOIN_MAX_POSTINGS_PER_KEY;
    crate::signature::pairs_in_memory(rule, &signatures, bound, |i, j, e| {
        if !by_resemblance && matches!(e, Evidence::Resemblance { .. }) {
            return;
        }
        let (a, b) = (items[i].0, items[j].0);
        out.push((a.min(b), a.max(b), e.distance()));
    });
    out.sort_unstable();
    out
}
