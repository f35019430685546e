//! Batch jobs over a whole index: every pair of near-duplicates by the match rule, and their
//! clusters.
//!
//! A [`NearDupGraph`] gathers the signature (fingerprint and MinHash sketch) of every live
//! document of a searcher (all segments, no force-merge needed; deleted documents and documents
//! without a fingerprint are skipped) and groups documents with identical signatures. Its nodes
//! are these **signature groups**; its edges are the pairs of distinct signatures that the
//! index's [`MatchRule`](crate::MatchRule) matches ("simhash within k, or a shared MinHash band
//! and enough estimated resemblance"), each with its [`Evidence`](crate::Evidence):
//!
//! - [`NearDupGraph::duplicate_groups`]: documents sharing one signature, as groups: a
//!   boilerplate page copied 10,000 times is one group, not 50 million pairs;
//! - [`NearDupGraph::for_each_group_pair`]: pairs of distinct signatures the rule matches, each
//!   once, with the documents of both sides ([`GroupPair::for_each_doc_pair`] expands them);
//! - [`NearDupGraph::for_each_doc_pair`] and [`NearDupGraph::for_each_id_pair`]: every pair of
//!   documents (duplicates included), expanded, with addresses ([`DocPair`]) or user ids
//!   ([`IdPair`]);
//! - [`NearDupGraph::clusters`]: leader clusters (in input order, a document joins the first
//!   earlier leader it matches directly, else leads: every member matches its leader), or with
//!   [`NearDupGraph::clusters_by`] and [`ClusterMode::Components`] connected components
//!   (union-find, which chain); either has a deterministic id, which
//!   [`DedupWriter::retag`](crate::DedupWriter::retag) stores in the group field so that
//!   results can be collapsed exactly afterwards.
//!
//! The join is [`signature::pairs_in_memory`](crate::signature::pairs_in_memory) over the
//! distinct signatures: every key of the rule (simhash blocks and MinHash bands) is a bucket,
//! candidates in a bucket are verified with [`MatchRule::matches`](crate::MatchRule::matches),
//! and a pair is reported only under one shared key, so no set of seen pairs is kept. Every pair
//! the rule matches shares a key, so without a hot key the pairs are exactly those of a
//! brute-force scan. The keys stored in the index are not read: they are a function of the
//! signature, and reading the columns is cheaper than streaming the term dictionary.
//!
//! **Hot keys.** A key shared by more than
//! [`max_postings_per_key`](NearDupGraph::max_postings_per_key) distinct signatures (default
//! [`DEFAULT_JOIN_MAX_POSTINGS_PER_KEY`]; a template sentence that fixes a MinHash band on 100,000
//! pages) compares each signature only with the next `max_postings_per_key` in its postings:
//! work per key is at most postings x bound, not quadratic. What it costs in recall: a pair is
//! missed only when every key it shares is that hot and the two lie further apart than the bound
//! in the postings of their first shared key; every join returns
//! [`PairStats`](crate::signature::PairStats) whose `hot_keys` says whether a key was cut.
//! The hottest key of the natural evaluation corpora holds 519 documents (en): below the
//! default, so the result there is exact.
//!
//! Limits: everything is in memory on one machine (the signatures, about 170 bytes per live
//! document, plus about 450 bytes per distinct signature during the join; at most `u32::MAX`
//! documents); the join runs on one thread.
//!
//! [`PairJoin`] finds the same pairs and clusters without holding any signature: a streaming
//! join over the segment component's sorted key tables, read in place, on all of rayon's
//! threads, with hot block keys split exactly (Manku's sub-blocks) before the bound applies.
//! `neardup pairs`, `clusters` and `stats`, the Python package's `pairs` and `clusters` and
//! [`app::clusters`](crate::app::clusters) use it; prefer it for all pairs and clusters of a
//! large index (memory: a merge step per thread, a window of pairs; for leader clusters the
//! join's compact pairs, for components a union-find). [`NearDupGraph`] remains for its
//! signature groups and group pairs (the review report uses them) and as the in-memory
//! reference the tests compare the join with. Across machines the same join partitions by key
//! (each key's bucket is independent): the Python package's `tantivy_simhash.dask` runs it on
//! Dask (docs/DISTRIBUTED.md).
//!
//! ```
//! use tantivy::doc;
//! use tantivy_simhash::NearDupGraph;
//! use tantivy_simhash::{Evidence, Fingerprint, NearDupConfig, NearDupIndex, Policy};
//!
//! let index = NearDupIndex::create_in_ram(NearDupConfig::new("id", ["body"]))?;
//! let id = index.field("id")?;
//! let mut writer = index.writer(50_000_000, Policy::Off)?;
//! for (name, fp) in [("a", 0xff00u64), ("b", 0xff01), ("c", 0xff00), ("d", 0x1234_5678_9abc)] {
//!     writer.add_document_with_fingerprint(doc!(id => name), Fingerprint(fp))?;
//! }
//! writer.commit()?;
//!
//! let graph = NearDupGraph::new(index.fields(), &index.searcher()?)?;
//! let mut pairs = Vec::new();
//! graph.for_each_id_pair(|p| {
//!     // No sketches here (fingerprints only), so every match is by simhash distance.
//!     assert!(matches!(p.evidence, Evidence::Simhash { .. }));
//!     pairs.push((p.a.min(p.b).to_string(), p.a.max(p.b).to_string(), p.evidence.distance()));
//! })?;
//! pairs.sort();
//! assert_eq!(pairs, [("a".into(), "b".into(), 1), ("a".into(), "c".into(), 0), ("b".into(), "c".into(), 1)]);
//!
//! let clusters = graph.clusters()?;
//! assert_eq!(clusters.len(), 1);
//! assert_eq!(clusters.iter().next().unwrap().id, "a"); // the leader (added first) names it
//! # Ok::<(), tantivy_simhash::Error>(())
//! ```

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
pub(crate) use stream::join as stream_join;
pub use stream::PairJoin;

/// The default hot-key bound of [`NearDupGraph`]: a key shared by more distinct signatures
/// than this compares each only with the next this many (see the [module docs](self)).
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
