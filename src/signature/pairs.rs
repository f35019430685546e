//! All matching pairs of a set of signatures, in memory, with bounded work per key.

use super::{Evidence, MatchRule, Signature};
use std::collections::HashSet;

/// What [`pairs_in_memory`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PairStats {
    /// Pairs reported.
    pub pairs: u64,
    /// Calls of [`MatchRule::matches`] between distinct signatures.
    pub comparisons: u64,
    /// Keys whose postings (distinct signatures) exceeded the bound.
    pub hot_keys: u64,
}

/// Every pair `(i, j)`, `i < j`, of `signatures` that `rule` matches, each once, as
/// `f(i, j, evidence)`; exact with `max_postings_per_key = usize::MAX`.
///
/// Identical signatures are grouped first: a group of `g` copies costs its `g (g - 1) / 2`
/// outputs, never a scan. The distinct signatures are joined per key. **Hot keys**: a key
/// shared by more than `max_postings_per_key` distinct signatures (a page template that fixes
/// a MinHash band, a 100,000-times copied sentence) compares each signature only with the next
/// `max_postings_per_key` ones in its postings, so the work per key is at most
/// `postings x max_postings_per_key` comparisons instead of quadratic. **What it costs in
/// recall**: a matching pair is missed only when every key it shares is hot and it lies more
/// than `max_postings_per_key` apart (in input order) in the postings of its first shared key.
/// [`PairStats::hot_keys`] says whether that can have happened.
///
/// Each pair is reported under one key: its first shared key that is not hot, else its first
/// shared key; so no set of seen pairs is kept. Memory: the keys of every distinct signature.
///
/// ```
/// use tantivy_simhash::{signature::pairs_in_memory, MatchRule, Scheme};
///
/// let rule = MatchRule::default();
/// let mut signer = rule.signer(&Scheme::default());
/// let text = "The same paragraph, long enough to be a page of its own, appears on two sites \
///             with their own menus and footers around it, and nowhere else on the web.";
/// let sigs = [signer.sign(text), signer.sign("Something else entirely."), signer.sign(text)];
/// let mut pairs = Vec::new();
/// pairs_in_memory(&rule, &sigs, usize::MAX, |i, j, _| pairs.push((i, j)));
/// assert_eq!(pairs, [(0, 2)]);
/// ```
pub fn pairs_in_memory(
    rule: &MatchRule,
    signatures: &[Signature],
    max_postings_per_key: usize,
    mut f: impl FnMut(usize, usize, Evidence),
) -> PairStats {
    let mut stats = PairStats::default();
    let cap = max_postings_per_key.max(1);
    // Groups of identical signatures, by their first member.
    let mut order: Vec<usize> = (0..signatures.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&signatures[a], &signatures[b]);
        (x.fingerprint, &x.sketch.words, a).cmp(&(y.fingerprint, &y.sketch.words, b))
    });
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for &i in &order {
        match groups.last_mut() {
            Some(g) if signatures[g[0]] == signatures[i] => g.push(i),
            _ => groups.push(vec![i]),
        }
    }
    groups.sort_by_key(|g| g[0]);
    for g in &groups {
        for (n, &x) in g.iter().enumerate() {
            for &y in &g[n + 1..] {
                stats.pairs += 1;
                f(x, y, Evidence::Simhash { distance: 0 });
            }
        }
    }
    let mut emit = |a: &[usize], b: &[usize], e: Evidence, stats: &mut PairStats| {
        for &x in a {
            for &y in b {
                stats.pairs += 1;
                f(x.min(y), x.max(y), e);
            }
        }
    };
    // Keys of each group's representative; key positions are aligned across documents (each
    // position has its own tag), so "first shared key" is the first equal position.
    let keys: Vec<Vec<u64>> = groups
        .iter()
        .map(|g| rule.keys(&signatures[g[0]]))
        .collect();
    let mut postings: Vec<(u64, u32, u32)> = Vec::new(); // (key, position, group)
    for (gi, ks) in keys.iter().enumerate() {
        for (pos, &k) in ks.iter().enumerate() {
            postings.push((k, pos as u32, gi as u32));
        }
    }
    postings.sort_unstable();
    let mut hot: HashSet<u64> = HashSet::new();
    for run in postings.chunk_by(|a, b| a.0 == b.0) {
        if run.len() > cap {
            hot.insert(run[0].0);
        }
    }
    stats.hot_keys = hot.len() as u64;
    let shared = |a: &[u64], b: &[u64], skip_hot: bool| {
        a.iter()
            .zip(b)
            .position(|(x, y)| x == y && !(skip_hot && hot.contains(x)))
    };
    for run in postings.chunk_by(|a, b| a.0 == b.0) {
        let is_hot = run.len() > cap;
        for (n, &(_, pos, ga)) in run.iter().enumerate() {
            let window = if is_hot {
                &run[n + 1..(n + 1 + cap).min(run.len())]
            } else {
                &run[n + 1..]
            };
            for &(_, _, gb) in window {
                let (ka, kb) = (&keys[ga as usize], &keys[gb as usize]);
                let owner = match shared(ka, kb, true) {
                    Some(p) => p,
                    None => match shared(ka, kb, false) {
                        Some(p) if is_hot => p,
                        _ => continue,
                    },
                };
                if owner != pos as usize {
                    continue;
                }
                let (a, b) = (&groups[ga as usize], &groups[gb as usize]);
                stats.comparisons += 1;
                if let Some(e) = rule.matches(&signatures[a[0]], &signatures[b[0]]) {
                    emit(a, b, e, &mut stats);
                }
            }
        }
    }
    stats
}
