//! [`edge_components`]: connected components of an edge list, for pairs found elsewhere (the
//! Python package's Dask pipeline joins the pairs of its partitions with it).

use super::clusters::UnionFind;
use crate::error::{Error, Result};

/// The connected components of the graph whose edges are `(a[i], b[i])`: `(nodes, labels)`,
/// every node met in an edge once (ascending) and the smallest node of its component. Cost: a
/// sort of the nodes, and union-find with path halving (12 bytes per node besides the edges).
///
/// Errors with [`Error::InvalidConfig`] when `a` and `b` differ in length or hold more than
/// `u32::MAX` distinct nodes.
///
/// ```
/// use tantivy_simhash::edge_components;
/// let (nodes, labels) = edge_components(&[5, 9, 7], &[9, 2, 8])?;
/// assert_eq!(nodes, [2, 5, 7, 8, 9]);
/// assert_eq!(labels, [2, 2, 7, 7, 2]);
/// # Ok::<(), tantivy_simhash::Error>(())
/// ```
pub fn edge_components(a: &[u64], b: &[u64]) -> Result<(Vec<u64>, Vec<u64>)> {
    let nodes = distinct_nodes(a, b)?;
    // Every end is in `nodes`, so the search finds it; positions fit u32 (checked above).
    let index = |x: u64| nodes.binary_search(&x).unwrap_or(0) as u32;
    let mut uf = UnionFind::new(nodes.len());
    for (&x, &y) in a.iter().zip(b) {
        uf.union(index(x), index(y));
    }
    // A union keeps the smaller root, so each root is its component's smallest position, and
    // nodes ascend: the root's node is the smallest node.
    let labels = (0..nodes.len() as u32)
        .map(|i| nodes[uf.find(i) as usize])
        .collect();
    Ok((nodes, labels))
}

/// The distinct ends of the edges `a[i] - b[i]`, sorted: a node's position is its index in the
/// edge functions. Errors when the lists differ in length or the nodes do not fit `u32`.
pub(super) fn distinct_nodes(a: &[u64], b: &[u64]) -> Result<Vec<u64>> {
    if a.len() != b.len() {
        return Err(Error::InvalidConfig(format!(
            "edge lists of {} and {} ends; expected one end in each per edge",
            a.len(),
            b.len()
        )));
    }
    let mut nodes: Vec<u64> = a.iter().chain(b).copied().collect();
    nodes.sort_unstable();
    nodes.dedup();
    if u32::try_from(nodes.len()).is_err() {
        return Err(Error::InvalidConfig(format!(
            "{} distinct nodes; at most {} fit: split the edges",
            nodes.len(),
            u32::MAX
        )));
    }
    Ok(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Components by repeated relabelling to the smallest neighbour label until nothing changes.
    fn reference(a: &[u64], b: &[u64]) -> BTreeMap<u64, u64> {
        let mut label: BTreeMap<u64, u64> = a.iter().chain(b).map(|&n| (n, n)).collect();
        loop {
            let mut changed = false;
            for (&x, &y) in a.iter().zip(b) {
                let m = label[&x].min(label[&y]);
                for n in [x, y] {
                    if label[&n] != m {
                        label.insert(n, m);
                        changed = true;
                    }
                }
            }
            if !changed {
                return label;
            }
        }
    }

    #[test]
    fn components_match_a_relabelling_reference() {
        let mut rng = crate::test_rng::Rng(11);
        for _ in 0..200 {
            let n = 1 + rng.below(40);
            let edges = rng.below(60) as usize;
            let a: Vec<u64> = (0..edges).map(|_| rng.below(n) * 1000).collect();
            let b: Vec<u64> = (0..edges).map(|_| rng.below(n) * 1000).collect();
            let (nodes, labels) = edge_components(&a, &b).unwrap();
            let want = reference(&a, &b);
            assert_eq!(nodes, want.keys().copied().collect::<Vec<_>>());
            assert_eq!(labels, want.values().copied().collect::<Vec<_>>());
        }
    }

    #[test]
    fn lists_of_different_lengths_are_refused() {
        assert!(matches!(
            edge_components(&[1, 2], &[3]),
            Err(Error::InvalidConfig(_))
        ));
    }
}
