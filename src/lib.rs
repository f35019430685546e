//! # tantivy-simhash: near-duplicate detection for tantivy
//!
//! Charikar's simhash, as Google's crawler used it (Manku, Jain and Das Sarma, "Detecting
//! Near-Duplicates for Web Crawling", WWW 2007), built into tantivy indexes.
//!
//! - A [`Scheme`] turns text (English, Chinese through jieba, any language through a tantivy
//!   analyzer) into a 64-bit [`Fingerprint`]; near-duplicate texts get fingerprints at a small
//!   Hamming distance.
//! - A [`BlockLayout`] turns a fingerprint into the keys it is indexed under, so that any two
//!   fingerprints within distance `k` share a key and a lookup reads a few postings.
//! - A [`MatchRule`] decides what is a near-duplicate: simhash within `k`, or a shared MinHash
//!   band and enough estimated resemblance (the [`Signature`] holds both); every feature below
//!   judges by the index's rule.
//! - [`MirrorFinder`] finds hosts that copy each other's pages, with the site
//!   chrome removed so shared templates do not count.
//!
//! ## Fingerprints
//!
//! ```
//! use tantivy_simhash::{Fingerprint, Scheme};
//!
//! let scheme = Scheme::default();
//! let original = "Simhash maps a weighted feature set to 64 bits. Near-duplicate documents \
//!                 get fingerprints that differ in only a few bits, so a crawler can find them \
//!                 among billions of pages with a handful of table lookups.";
//! let edited = "Simhash maps a weighted feature set to 64 bits. Near-duplicate documents \
//!               get fingerprints that differ in only a few bits, so a crawler can find them \
//!               among billions of web pages with a handful of table lookups.";
//! let other = "The quarterly report shows revenue growth in every region, led by strong \
//!              demand for cloud services and a recovery in hardware sales since spring.";
//! let (a, b, c) = (scheme.fingerprint(original), scheme.fingerprint(edited), scheme.fingerprint(other));
//! assert!(a.distance(b) < a.distance(c));
//!
//! // Formatting, case, width and script do not matter:
//! let zh_cn = scheme.fingerprint("软件开发的过程包括需求分析、设计、编码、测试和维护，每个阶段都有自己的方法和工具。");
//! let zh_tw = scheme.fingerprint("軟件開發的過程包括需求分析、設計、編碼、測試和維護，每個階段都有自己的方法和工具。");
//! assert_eq!(zh_cn.distance(zh_tw), 0);
//! ```
//!
//! ## Keys
//!
//! ```
//! use tantivy_simhash::{BlockLayout, Fingerprint};
//!
//! let layout = BlockLayout::default(); // 4 blocks of 16 bits: any pair within 3 shares a key
//! let a = Fingerprint(0xdead_beef_0123_4567);
//! let b = Fingerprint(a.0 ^ (1 << 3) ^ (1 << 20) ^ (1 << 40)); // distance 3
//! assert_eq!(a.distance(b), 3);
//! assert!(layout.first_shared_key(a, b).is_some());
//! ```
//!
//! ## The four tasks
//!
//! Every feature takes the index's [`NearDupFields`] (a small `Copy` handle: the resolved
//! fields and the match rule, from [`NearDupIndex::fields`]) and searches tantivy's own
//! [`Searcher`](tantivy::Searcher) ([`NearDupIndex::searcher`] gives one over the last
//! commit); lookups keep each segment's columns open in a [`NearDupLookup`] made from both.
//! The setup lines are hidden; each example runs.
//!
//! **1. Make an index.** [`NearDupIndex::create_in_ram`] (or [`create_in_dir`](NearDupIndex::create_in_dir))
//! makes one with the id, the text fields and the near-duplicate fields. For a schema of your
//! own, [`NearDupConfig::add_fields`] adds the fingerprint, its keys and the group to it; the id
//! (`STRING | FAST`) and text fields are yours.
//!
//! ```
//! use tantivy::schema::{Schema, FAST, STORED, STRING, TEXT};
//! use tantivy::Index;
//! use tantivy_simhash::{NearDupConfig, NearDupIndex};
//!
//! let config = NearDupConfig::new("id", ["title", "body"]); // fingerprint title + body
//! let index = NearDupIndex::create_in_ram(config.clone())?;
//! assert!(index.fields().group.is_some());
//!
//! // The same with a schema of your own:
//! let mut builder = Schema::builder();
//! builder.add_text_field("id", STRING | FAST | STORED);
//! builder.add_text_field("title", TEXT);
//! builder.add_text_field("body", TEXT);
//! config.add_fields(&mut builder);
//! let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config)?;
//! # Ok::<(), tantivy_simhash::Error>(())
//! ```
//!
//! **2. Dedup while indexing.** [`DedupWriter`] fingerprints each document and applies a
//! [`Policy`]; it sees its own uncommitted documents.
//!
//! ```
//! # use tantivy::doc;
//! use tantivy_simhash::{NearDupConfig, NearDupIndex, Outcome, Policy};
//! # let index = NearDupIndex::create_in_ram(NearDupConfig::new("id", ["body"]))?;
//! # let (id, body) = (index.field("id")?, index.field("body")?);
//! let text = "Permission is hereby granted, free of charge, to any person obtaining a copy \
//!             of this software, to deal in it without restriction.";
//! let mut writer = index.writer(15_000_000, Policy::Reject)?;
//! writer.add_document(doc!(id => "a", body => text))?;
//! let again = writer.add_document(doc!(id => "b", body => text.to_uppercase()))?;
//! assert!(matches!(again, Outcome::Duplicate { ref of, .. } if of == "a"));
//! writer.commit()?;
//! # Ok::<(), tantivy_simhash::Error>(())
//! ```
//!
//! **3. Collapse any query.** [`NearDupCollapse`] returns one hit per near-duplicate group,
//! keeping tantivy's pruning; or one per value of any fast field ([`GroupBy`]), with the
//! leader chosen by a field (the newest version) and a derank mode
//! ([`Collapsed::deranked`]).
//!
//! ```
//! # use tantivy::doc;
//! use tantivy::query::AllQuery;
//! use tantivy_simhash::{NearDupCollapse, NearDupConfig, NearDupIndex, Policy};
//! # let index = NearDupIndex::create_in_ram(NearDupConfig::new("id", ["body"]))?;
//! # let (id, body) = (index.field("id")?, index.field("body")?);
//! # let mut writer = index.writer(15_000_000, Policy::Off)?;
//! # let text = "Permission is hereby granted, free of charge, to any person obtaining a copy \
//! #             of this software, to deal in it without restriction.";
//! # writer.add_document(doc!(id => "a", body => text))?;
//! # writer.add_document(doc!(id => "b", body => text.to_uppercase()))?;
//! # writer.add_document(doc!(id => "c", body => "Release notes for the second version."))?;
//! # writer.commit()?;
//! let searcher = index.searcher()?;
//! let collapse = NearDupCollapse::by_score(index.fields(), 10);
//! let results = collapse.search(&searcher, &AllQuery)?;
//! assert_eq!(results.groups().len(), 2); // {a, b} and {c}
//! # Ok::<(), tantivy_simhash::Error>(())
//! ```
//!
//! **4. All pairs.** [`PairJoin`] finds every pair the index's match rule matches over the
//! whole index, and its clusters, streaming over the segments' sorted key tables (no signature
//! held in memory). [`NearDupGraph`] does the same with every signature gathered in memory, and
//! adds signature groups and group pairs.
//!
//! ```
//! # use tantivy::doc;
//! use tantivy_simhash::{NearDupConfig, NearDupIndex, PairJoin, Policy};
//! # let index = NearDupIndex::create_in_ram(NearDupConfig::new("id", ["body"]))?;
//! # let (id, body) = (index.field("id")?, index.field("body")?);
//! # let mut writer = index.writer(15_000_000, Policy::Off)?;
//! # let text = "Permission is hereby granted, free of charge, to any person obtaining a copy \
//! #             of this software, to deal in it without restriction.";
//! # writer.add_document(doc!(id => "a", body => text))?;
//! # writer.add_document(doc!(id => "b", body => text.to_uppercase()))?;
//! # writer.add_document(doc!(id => "c", body => "Release notes for the second version."))?;
//! # writer.commit()?;
//! let join = PairJoin::new(index.fields(), &index.searcher()?)?;
//! let clusters = join.clusters()?; // leader clusters
//! assert_eq!(clusters.len(), 1); // {a, b}; c stands alone
//! assert_eq!(clusters.iter().next().map(|c| c.members.len()), Some(2));
//! # Ok::<(), tantivy_simhash::Error>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![warn(unreachable_pub)]

/// The application layer the `neardup` command line and the Python package share: indexes in a
/// directory with a fixed schema and recorded settings, input records and their validation,
/// ingest, search with collapse, similar, reports. A library user needs none of it.
pub mod app;
mod batch;
mod collapse;
mod columns;
mod component;
mod error;
mod explain;
mod fingerprint;
mod id_table;
mod layout;
mod lookup;
mod mirrors;
mod query;
mod replay;
mod report;
mod schema;
mod signature;
mod sync;
#[cfg(test)]
mod test_rng;
mod writer;

// Every public item has one path: here (or `app::` for the front ends' layer); the modules
// above are private, as in tantivy's `collector/mod.rs`.
pub use batch::{
    edge_components, edge_leaders, Cluster, ClusterMember, ClusterMode, Clusters, DocPair,
    GroupPair, IdPair, NearDupGraph, PairJoin, SignatureGroup, DEFAULT_JOIN_MAX_POSTINGS_PER_KEY,
};
pub use collapse::{
    CollapseSegmentCollector, CollapseSegmentFruit, Collapsed, CollapsedGroup, CollapsedHit,
    GroupBy, NearDupCollapse, RankKey, ShardStatistics,
};
pub use component::{NearDupComponent, NearDupReader, COMPONENT_EXTENSION};
pub use error::{Error, Result};
pub use explain::{
    word_resemblance, Alignment, Branch, ChromeLine, Explanation, MinHashPart, Run, RunKind,
    ShingleResemblance, SimhashPart, ALIGNMENT_DEADLINE, MIN_MOVED_WORDS,
};
pub use fingerprint::{
    Features, Fingerprint, FingerprintDetails, FingerprintKind, Fingerprinter, HanSegmentation,
    IdfTable, Normalization, Scheme, SchemeBuilder, SchemeParameters, SimhashTokenStream,
    SimhashTokenizer, TermWeight, Tokenization, TokenizationParameters, SIMHASH_TOKENIZER_NAME,
};
pub use layout::BlockLayout;
pub use lookup::{FingerprintMatch, NearDup, NearDupLookup};
pub use mirrors::{
    HostPage, HostPair, MirrorConfig, MirrorFinder, MirrorReport, MirrorStats, PagePair,
};
pub use query::NearDupQuery;
pub use replay::{register_tokenizer, AnalysisCounts, AnalyzedDocument};
pub use report::{write_report, ReportOptions, ReportStats};
pub use schema::{
    IndexRecord, NearDupConfig, NearDupFields, NearDupIndex, REPLACED_FIELD, SEQUENCE_FIELD,
};
pub use signature::{
    distinct_signatures, pairs_in_key_group, pairs_in_memory, Evidence, MatchRule, MinHashConfig,
    PairStats, RuleSpec, Shingling, Signature, Signer, Sketch, DEFAULT_MAX_POSTINGS_PER_KEY,
};
/// The tantivy this crate is built on (its `Index`, `Searcher`, `Collector` and `Query` are in
/// this crate's signatures): use it through this path to get the same version.
pub use tantivy;
pub use writer::{DedupWriter, GroupsWritten, IdPolicy, Outcome, Policy, MAX_ID_BYTES};
