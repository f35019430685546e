//! Batch jobs over a whole index: all pairs by the match rule and their clusters. The user-facing
//! account (the graph, the join, hot keys, limits) is on [`NearDupGraph`].

mod clusters;
mod components;
mod graph;
mod leaders;
mod stream;

pub(crate) use clusters::UnionFind;
pub use clusters::{Cluster, ClusterMember, ClusterMode, Clusters};
pub use components::edge_components;
pub use graph::{DocPair, GroupPair, IdPair, NearDupGraph, SignatureGroup};
pub use leaders::edge_leaders;
pub use stream::PairJoin;

/// The default hot-key bound of [`NearDupGraph`]: a key shared by more distinct signatures
/// than this compares each only with the next this many (see [`NearDupGraph`], "Hot keys").
pub const DEFAULT_JOIN_MAX_POSTINGS_PER_KEY: usize = 1024;

/// The error for an input beyond the joins' `u32` document numbers.
fn too_many(n: usize) -> crate::Error {
    crate::Error::InvalidConfig(format!(
        "{n} fingerprints; batch jobs handle at most {} at once: split the input (by segment \
         groups or shards) and join the parts",
        u32::MAX
    ))
}

/// Documents whose ids are read in one batch, and pairs of distinct signatures whose ids are
/// read in one batch, when pairs are reported with ids. Reading ids decompresses dictionary
/// blocks: sparse batches decompress a block per id, so batches are large (tens of MB).
const ID_BATCH_DOCS: usize = 1 << 20;
const ID_BATCH_PAIRS: usize = 1 << 20;
