//! Shared helpers for the index tests.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use tantivy::indexer::NoMergePolicy;
use tantivy::schema::{Field, Schema, FAST, STORED, STRING, TEXT};
use tantivy::{Index, TantivyDocument};
use tantivy_simhash::{
    BlockLayout, DedupWriter, Fingerprint, NearDupConfig, NearDupIndex, NearDupLookup, Policy,
};

mod rng;
pub use rng::Rng;

/// `fp` with `n` distinct random bits flipped: a neighbour at distance exactly `n`.
pub fn flip_bits(rng: &mut Rng, fp: Fingerprint, n: u32) -> Fingerprint {
    Fingerprint(rng.flip(fp.0, n))
}

pub struct TestIndex {
    pub index: NearDupIndex,
    pub id: Field,
    pub body: Field,
    pub host: Field,
}

pub fn config(layout: BlockLayout) -> NearDupConfig {
    NearDupConfig::new("id", ["title", "body"]).with_layout(layout)
}

pub fn schema(config: &NearDupConfig) -> (Schema, Field, Field, Field) {
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING | FAST | STORED);
    let host = builder.add_text_field("host", STRING);
    builder.add_text_field("title", TEXT);
    let body = builder.add_text_field("body", TEXT);
    config.add_fields(&mut builder);
    (builder.build(), id, body, host)
}

pub fn ram_index(layout: BlockLayout) -> TestIndex {
    ram_index_with(config(layout))
}

pub fn ram_index_with(config: NearDupConfig) -> TestIndex {
    let (schema, id, body, host) = schema(&config);
    let index = NearDupIndex::create(Index::create_in_ram(schema), config).unwrap();
    TestIndex {
        index,
        id,
        body,
        host,
    }
}

/// [`ram_index_with`] in the directory `dir`, so a test can reopen the same files.
pub fn dir_index_with(dir: &std::path::Path, config: NearDupConfig) -> TestIndex {
    let (schema, id, body, host) = schema(&config);
    let index = Index::create_in_dir(dir, schema).unwrap();
    TestIndex {
        index: NearDupIndex::create(index, config).unwrap(),
        id,
        body,
        host,
    }
}

/// An index whose every user field is stored (id and body), so documents can be re-added from
/// the store or shown.
pub fn stored_index() -> (NearDupIndex, Field, Field) {
    let config = NearDupConfig::new("id", ["body"]);
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING | FAST | STORED);
    let body = builder.add_text_field("body", TEXT | STORED);
    config.add_fields(&mut builder);
    let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config).unwrap();
    (index, id, body)
}

/// A one-thread writer that never merges: the test lays out the segments with its commits.
pub fn unmerged_writer(index: &NearDupIndex, policy: Policy) -> DedupWriter {
    let writer = index
        .writer_with_num_threads(1, 20_000_000, policy)
        .unwrap();
    writer
        .index_writer()
        .set_merge_policy(Box::new(NoMergePolicy));
    writer
}

/// Adds `docs` in order, each with its fingerprint or (`None`) signed by the index, committing
/// after every `commit_every` documents (one segment each under [`unmerged_writer`]) and at
/// the end.
pub fn add_committing(
    writer: &mut DedupWriter,
    docs: impl IntoIterator<Item = (TantivyDocument, Option<Fingerprint>)>,
    commit_every: usize,
) {
    for (i, (doc, fingerprint)) in docs.into_iter().enumerate() {
        match fingerprint {
            Some(fp) => writer.add_document_with_fingerprint(doc, fp).unwrap(),
            None => writer.add_document(doc).unwrap(),
        };
        if (i + 1) % commit_every == 0 {
            writer.commit().unwrap();
        }
    }
    writer.commit().unwrap();
}

/// The number `N` of the document `dN` at `a` (the ids the test corpora use), read from the
/// doc store.
pub fn doc_number(s: &NearDupLookup, t: &TestIndex, a: tantivy::DocAddress) -> usize {
    use tantivy::schema::Value;
    let doc: TantivyDocument = s.searcher().doc(a).unwrap();
    doc.get_first(t.id).and_then(|v| v.as_str()).unwrap()[1..]
        .parse()
        .unwrap()
}

/// Brute force: every (id, distance) within `k` of `q` among `live`, sorted like lookups.
pub fn brute_force(
    live: &HashMap<String, Fingerprint>,
    q: Fingerprint,
    k: u32,
) -> Vec<(String, u32)> {
    let mut v: Vec<(String, u32)> = live
        .iter()
        .filter(|(_, fp)| q.distance(**fp) <= k)
        .map(|(id, fp)| (id.clone(), q.distance(*fp)))
        .collect();
    v.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    v
}

pub fn lookup_pairs(s: &NearDupLookup, q: Fingerprint, k: u32) -> Vec<(String, u32)> {
    s.lookup_within(q, k)
        .unwrap()
        .into_iter()
        .map(|h| (h.id, h.distance))
        .collect()
}

const WORDS: [&str; 24] = [
    "index", "segment", "term", "posting", "query", "score", "field", "token", "merge", "commit",
    "reader", "writer", "page", "site", "menu", "footer", "copy", "mirror", "软件", "开发", "过程",
    "需求", "分析", "设计",
];

/// Base texts and edited copies (a few words changed), so both branches of the match rule fire.
pub fn edited_texts(seed: u64, n: usize) -> Vec<String> {
    texts_and_copies(seed, n, false)
}

/// [`edited_texts`] with one edited copy in three (drawn at random) put under another site's
/// chrome (a header, a menu and a footer).
pub fn edited_texts_under_chrome(seed: u64, n: usize) -> Vec<String> {
    texts_and_copies(seed, n, true)
}

fn texts_and_copies(seed: u64, n: usize, with_chrome: bool) -> Vec<String> {
    let mut rng = Rng(seed);
    let mut out: Vec<Vec<&str>> = Vec::new();
    let mut chrome: Vec<bool> = Vec::new();
    for _ in 0..n {
        if !out.is_empty() && rng.below(2) == 0 {
            let mut d = out[rng.below(out.len() as u64) as usize].clone();
            for _ in 0..rng.below(d.len() as u64 / 6 + 1) {
                let at = rng.below(d.len() as u64) as usize;
                d[at] = WORDS[rng.below(WORDS.len() as u64) as usize];
            }
            out.push(d);
            // Drawn only with chrome, so that edited_texts keeps its sequence.
            chrome.push(with_chrome && rng.below(3) == 0);
        } else {
            let len = 5 + rng.below(120) as usize;
            out.push(
                (0..len)
                    .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize])
                    .collect(),
            );
            chrome.push(false);
        }
    }
    out.into_iter()
        .zip(chrome)
        .map(|(d, c)| {
            let body = d.join(" ");
            if c {
                format!("Daily Site\nhome | docs | blog | contact\n\n{body}\n\n(c) 2024 Daily Site")
            } else {
                body
            }
        })
        .collect()
}

/// Every live document of `searcher`: its id and group (`None` when it has none), in address
/// order; panics on a document without an id or an id stored twice.
pub fn live_ids_and_groups(searcher: &NearDupLookup) -> BTreeMap<String, Option<String>> {
    let mut out = BTreeMap::new();
    for (ord, seg) in searcher.searcher().segment_readers().iter().enumerate() {
        for doc in seg.doc_ids_alive() {
            let address = tantivy::DocAddress::new(ord as u32, doc);
            let id = searcher.id_of(address).unwrap().unwrap();
            let group = searcher.group_of(address).unwrap();
            assert!(
                out.insert(id.clone(), group).is_none(),
                "{id} is stored twice"
            );
        }
    }
    out
}
