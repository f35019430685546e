//! All matching pairs of a set of signatures, in memory, with bounded work per key; and the
//! same join for one key's postings at a time, for engines that group by key themselves.

use super::{Evidence, MatchRule, Signature};
use crate::error::{Error, Result};
use std::collections::HashSet;

/// What [`pairs_in_memory`] and [`pairs_in_key_group`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PairStats {
    /// Pairs reported.
    pub pairs: u64,
    /// Calls of [`MatchRule::matches`] between distinct signatures.
    pub comparisons: u64,
    /// Keys whose postings (distinct signatures) exceeded the bound.
    pub hot_keys: u64,
    /// Pairs of the rule left out because their sketches estimate less than an opt-in
    /// minimum resemblance ([`PairJoin::min_resemblance`](crate::PairJoin::min_resemblance));
    /// 0 without one. Not counted in `pairs`.
    pub below_min_resemblance: u64,
}

impl PairStats {
    /// Adds the counts of `other` (the stats of another key group).
    pub fn add(&mut self, other: PairStats) {
        self.pairs += other.pairs;
        self.comparisons += other.comparisons;
        self.hot_keys += other.hot_keys;
        self.below_min_resemblance += other.below_min_resemblance;
    }
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
/// [`pairs_in_key_group`] is the same join, one key at a time.
///
/// ```
/// use tantivy_simhash::{pairs_in_memory, MatchRule, Scheme};
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
    let refs: Vec<&Signature> = signatures.iter().collect();
    let input_order: Vec<u64> = (0..signatures.len() as u64).collect();
    let groups = identical_groups(&refs, &input_order);
    stats.pairs += identical_pairs(&groups, |x, y| f(x, y, Evidence::Simhash { distance: 0 }));
    // Keys of each group's representative; key positions are aligned across documents (each
    // position has its own tag), so "first shared key" is the first equal position.
    let keys: Vec<Vec<u64>> = groups
        .iter()
        .map(|g| rule.keys(&signatures[g[0]]))
        .collect();
    let postings = sorted_postings(&keys);
    let hot: HashSet<u64> = postings
        .chunk_by(|a, b| a.0 == b.0)
        .filter(|run| run.len() > cap)
        .map(|run| run[0].0)
        .collect();
    stats.hot_keys = hot.len() as u64;
    let mut run_groups: Vec<u32> = Vec::new();
    for run in postings.chunk_by(|a, b| a.0 == b.0) {
        run_groups.clear();
        run_groups.extend(run.iter().map(|p| p.2));
        join_run(
            &run_groups,
            run[0].1 as usize,
            &keys,
            cap,
            &|k| hot.contains(&k),
            |ga, gb| {
                let (a, b) = (&groups[ga as usize], &groups[gb as usize]);
                stats.comparisons += 1;
                if let Some(e) = rule.matches(&signatures[a[0]], &signatures[b[0]]) {
                    stats.pairs += member_pairs(a, b, |x, y| f(x.min(y), x.max(y), e));
                }
            },
        );
    }
    stats
}

/// Calls `f(x, y)` for every pair of members within each group of identical signatures, `x`
/// before `y` in the group; returns how many.
fn identical_pairs(groups: &[Vec<usize>], mut f: impl FnMut(usize, usize)) -> u64 {
    let mut pairs = 0;
    for g in groups {
        for (n, &x) in g.iter().enumerate() {
            for &y in &g[n + 1..] {
                pairs += 1;
                f(x, y);
            }
        }
    }
    pairs
}

/// Calls `f(x, y)` for every member `x` of `a` and `y` of `b` (two groups of identical
/// signatures whose representatives match); returns how many.
fn member_pairs(a: &[usize], b: &[usize], mut f: impl FnMut(usize, usize)) -> u64 {
    for &x in a {
        for &y in b {
            f(x, y);
        }
    }
    (a.len() * b.len()) as u64
}

/// Every `(key, position, group)` of `keys` (each group's keys in [`MatchRule::keys`] order),
/// sorted: one run per key.
fn sorted_postings(keys: &[Vec<u64>]) -> Vec<(u64, u32, u32)> {
    let mut postings: Vec<(u64, u32, u32)> = Vec::new();
    for (gi, ks) in keys.iter().enumerate() {
        for (pos, &k) in ks.iter().enumerate() {
            postings.push((k, pos as u32, gi as u32));
        }
    }
    postings.sort_unstable();
    postings
}

/// The pairs [`pairs_in_memory`] reports under one key: the join for an engine that has
/// grouped every document's postings by key itself (a MapReduce or Dask shuffle on key).
///
/// `postings` are all `(row, signature)` that hold `key` among their [`MatchRule::keys`], in any
/// order; `row` numbers a document in the whole input (its input order: the hot-key window
/// follows it). `is_hot(k)` must say whether key `k` is hot in the whole input, i.e. held by
/// more than `max_postings_per_key` distinct signatures ([`distinct_signatures`] of its group
/// counts them); with `max_postings_per_key = usize::MAX` nothing is hot and `is_hot` is not
/// called. `f(row_a, row_b, evidence)` gets every pair with `row_a < row_b` whose owner key
/// (its first shared key that is not hot, else its first shared key) is `key`, and the pairs
/// among identical signatures under their first key; so running this on every key group of an
/// input reports exactly the pairs of [`pairs_in_memory`] on it, each once, with the same
/// evidence. The [`PairStats::hot_keys`] of a group is 1 when `key` is hot.
///
/// Cost: sorting the group, the keys of each distinct signature, and the comparisons of
/// [`pairs_in_memory`] for this key (at most `postings x max_postings_per_key`).
///
/// Errors ([`Error::Document`]) when a signature does not hold `key` or its sketch does not
/// have the rule's size: the postings were not grouped by this rule's keys.
///
/// ```
/// use std::collections::BTreeMap;
/// use tantivy_simhash::{pairs_in_key_group, pairs_in_memory};
/// use tantivy_simhash::{MatchRule, Scheme};
///
/// let rule = MatchRule::default();
/// let mut signer = rule.signer(&Scheme::default());
/// let text = "The same paragraph, long enough to be a page of its own, appears on two sites \
///             with their own menus and footers around it, and nowhere else on the web.";
/// let sigs = vec![signer.sign(text), signer.sign("Something else entirely."), signer.sign(text)];
/// // The shuffle: every (row, signature) under each of its keys.
/// let mut groups: BTreeMap<u64, Vec<(u64, _)>> = BTreeMap::new();
/// for (row, sig) in sigs.iter().enumerate() {
///     for key in rule.keys(sig) {
///         groups.entry(key).or_default().push((row as u64, sig.clone()));
///     }
/// }
/// let mut pairs = Vec::new();
/// for (key, postings) in &groups {
///     pairs_in_key_group(&rule, *key, postings, usize::MAX, |_| false, |a, b, _| pairs.push((a, b)))?;
/// }
/// assert_eq!(pairs, [(0, 2)]);
/// # Ok::<(), tantivy_simhash::Error>(())
/// ```
pub fn pairs_in_key_group(
    rule: &MatchRule,
    key: u64,
    postings: &[(u64, Signature)],
    max_postings_per_key: usize,
    is_hot: impl Fn(u64) -> bool,
    mut f: impl FnMut(u64, u64, Evidence),
) -> Result<PairStats> {
    let mut stats = PairStats::default();
    let cap = max_postings_per_key.max(1);
    check_sketch_sizes(rule, postings)?;
    let refs: Vec<&Signature> = postings.iter().map(|p| &p.1).collect();
    let rows: Vec<u64> = postings.iter().map(|p| p.0).collect();
    let groups = identical_groups(&refs, &rows);
    let keys: Vec<Vec<u64>> = groups
        .iter()
        .map(|g| rule.keys(&postings[g[0]].1))
        .collect();
    let Some(position) = key_position(key, postings, &groups, &keys)? else {
        return Ok(stats);
    };
    let row = |i: usize| postings[i].0;
    // Pairs among identical signatures, once: under the first key, which every document has.
    if position == 0 {
        stats.pairs += identical_pairs(&groups, |x, y| {
            f(row(x), row(y), Evidence::Simhash { distance: 0 })
        });
    }
    let hot_here = groups.len() > cap;
    stats.hot_keys = u64::from(hot_here);
    let run: Vec<u32> = (0..groups.len() as u32).collect();
    let check_hot = |k: u64| {
        if k == key {
            hot_here
        } else {
            cap < usize::MAX && is_hot(k)
        }
    };
    join_run(&run, position, &keys, cap, &check_hot, |ga, gb| {
        let (a, b) = (&groups[ga as usize], &groups[gb as usize]);
        stats.comparisons += 1;
        if let Some(e) = rule.matches(&postings[a[0]].1, &postings[b[0]].1) {
            stats.pairs += member_pairs(a, b, |x, y| f(row(x).min(row(y)), row(x).max(row(y)), e));
        }
    });
    Ok(stats)
}

/// An error naming the first row of `postings` whose sketch is not of `rule`'s size.
fn check_sketch_sizes(rule: &MatchRule, postings: &[(u64, Signature)]) -> Result<()> {
    let words = rule.minhash().sketch_words();
    match postings.iter().find(|(_, s)| s.sketch.words.len() != words) {
        None => Ok(()),
        Some((row, sig)) => Err(Error::Document(format!(
            "the signature of row {row} has {} sketch words; the rule ({rule}) expects {words}: \
             sign every document with the same rule",
            sig.sketch.words.len()
        ))),
    }
}

/// Where `key` stands among the keys of every group (the same place for all: positions carry
/// their own tags); `None` for no groups, an error naming a row whose keys lack `key`.
fn key_position(
    key: u64,
    postings: &[(u64, Signature)],
    groups: &[Vec<usize>],
    keys: &[Vec<u64>],
) -> Result<Option<usize>> {
    let mut position = None;
    for (g, ks) in groups.iter().zip(keys) {
        let Some(p) = ks.iter().position(|&k| k == key) else {
            return Err(Error::Document(format!(
                "the signature of row {} does not hold key {key:#x} of its key group; expected \
                 postings grouped by this rule's keys (MatchRule::keys)",
                postings[g[0]].0
            )));
        };
        position = Some(p);
    }
    Ok(position)
}

/// How many distinct signatures `signatures` holds: a key is hot for [`pairs_in_memory`] and
/// [`pairs_in_key_group`] when its postings hold more than `max_postings_per_key` of them.
/// Cost: a sort of the signatures.
pub fn distinct_signatures(signatures: &[&Signature]) -> usize {
    let mut sorted: Vec<&&Signature> = signatures.iter().collect();
    sorted.sort_unstable_by(|x, y| {
        (x.fingerprint, &x.sketch.words).cmp(&(y.fingerprint, &y.sketch.words))
    });
    sorted.dedup();
    sorted.len()
}

/// Groups of identical signatures (indexes into `signatures`), each ascending by
/// `input_order`, the groups ordered by their first member.
fn identical_groups(signatures: &[&Signature], input_order: &[u64]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..signatures.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (signatures[a], signatures[b]);
        (x.fingerprint, &x.sketch.words, input_order[a]).cmp(&(
            y.fingerprint,
            &y.sketch.words,
            input_order[b],
        ))
    });
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in order {
        match groups.last_mut() {
            Some(g) if signatures[g[0]] == signatures[i] => g.push(i),
            _ => groups.push(vec![i]),
        }
    }
    groups.sort_by_key(|g| input_order[g[0]]);
    groups
}

/// The join of one key's postings `run` (distinct signatures' indexes into `keys`, in input
/// order, all holding the key at `position`): calls `compare(a, b)` for every pair this key
/// owns, within the hot-key window.
fn join_run(
    run: &[u32],
    position: usize,
    keys: &[Vec<u64>],
    cap: usize,
    is_hot: &impl Fn(u64) -> bool,
    mut compare: impl FnMut(u32, u32),
) {
    let run_is_hot = run.len() > cap;
    let shared = |a: &[u64], b: &[u64], skip_hot: bool| {
        a.iter()
            .zip(b)
            .position(|(x, y)| x == y && !(skip_hot && is_hot(*x)))
    };
    for (n, &ga) in run.iter().enumerate() {
        let window = if run_is_hot {
            &run[n + 1..(n + 1 + cap).min(run.len())]
        } else {
            &run[n + 1..]
        };
        for &gb in window {
            let (ka, kb) = (&keys[ga as usize], &keys[gb as usize]);
            let owner = match shared(ka, kb, true) {
                Some(p) => p,
                None => match shared(ka, kb, false) {
                    Some(p) if run_is_hot => p,
                    _ => continue,
                },
            };
            if owner == position {
                compare(ga, gb);
            }
        }
    }
}
