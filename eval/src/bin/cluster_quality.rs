//! How far cluster members are from their leader, by leader clustering and by connected
//! components (docs/QUALITY.md, "Clusters a deduplicator can trust").
//!
//! Indexes a JSONL corpus (gzip or plain; `id`, `title`, `text`) in file order with the
//! default configuration and policy Off, then for each mode: the clusters, the largest, the
//! members other than the leader (the document first in input order), and how many of them
//! have an exact resemblance (the evaluation's word 3-shingles of title + "\n" + text) below
//! 0.5 and below 0.2 with their leader. In leader mode it also counts the members that do not
//! match their leader by the rule (the target is 0).
//!
//! ```text
//! cargo run --release -p tantivy-simhash-eval --bin cluster_quality -- ../shared/data/natural-en.jsonl.gz
//! python3 tools/licence_corpus.py licences.jsonl.gz
//! cargo run --release -p tantivy-simhash-eval --bin cluster_quality -- licences.jsonl.gz
//! ```

#[path = "../support/data.rs"]
mod data;

use rayon::prelude::*;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;
use tantivy::schema::{Schema, FAST, STORED, STRING, TEXT};
use tantivy::{doc, Index};
use tantivy_simhash::word_resemblance;
use tantivy_simhash::{ClusterMode, PairJoin};
use tantivy_simhash::{NearDupConfig, NearDupIndex, Policy};

#[derive(Deserialize)]
struct Doc {
    id: String,
    #[serde(default)]
    title: String,
    text: String,
}

fn main() -> data::Res<()> {
    let path = PathBuf::from(
        std::env::args()
            .nth(1)
            .ok_or("usage: cluster_quality CORPUS.jsonl[.gz]")?,
    );
    let docs: Vec<Doc> = data::read_jsonl(&path, usize::MAX)?;
    let config = NearDupConfig::new("id", ["title", "body"]);
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING | FAST | STORED);
    let title = builder.add_text_field("title", TEXT);
    let body = builder.add_text_field("body", TEXT);
    config.add_fields(&mut builder);
    let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config)?;
    let started = Instant::now();
    let mut w = index.writer(200_000_000, Policy::Off)?;
    for d in &docs {
        if d.title.is_empty() {
            w.add_document(doc!(id => d.id.clone(), body => d.text.clone()))?;
        } else {
            w.add_document(
                doc!(id => d.id.clone(), title => d.title.clone(), body => d.text.clone()),
            )?;
        }
    }
    w.commit()?;
    let indexed = started.elapsed();
    let text: HashMap<&str, String> = docs
        .iter()
        .map(|d| {
            let t = if d.title.is_empty() {
                d.text.clone()
            } else {
                format!("{}\n{}", d.title, d.text)
            };
            (d.id.as_str(), t)
        })
        .collect();
    let searcher = index.lookups()?;
    let join = PairJoin::new(searcher.fields(), searcher.searcher())?;
    println!(
        "{}: {} documents (indexed in {:.1} s)",
        path.display(),
        docs.len(),
        indexed.as_secs_f64()
    );
    println!(
        "  {:<10} {:>8} {:>9} {:>8} {:>8} {:>10} {:>10} {:>9}   largest",
        "mode", "clusters", "clustered", "largest", "members", "r<0.5", "r<0.2", "rule-fail"
    );
    for mode in [ClusterMode::Leader, ClusterMode::Components] {
        let t = Instant::now();
        let clusters = join.clusters_by(mode)?;
        let took = t.elapsed();
        // (leader, member) pairs of every cluster.
        let mut pairs: Vec<(&str, &str, tantivy::DocAddress, tantivy::DocAddress)> = Vec::new();
        for c in clusters.iter() {
            let Some(l) = c.leader() else { continue };
            for m in c.members.iter().filter(|m| m.address != l.address) {
                pairs.push((l.id.as_str(), m.id.as_str(), l.address, m.address));
            }
        }
        let scored: Vec<(f64, bool)> = pairs
            .par_iter()
            .map(|&(l, m, la, ma)| {
                let r = word_resemblance(&text[l], &text[m]);
                let sig = |a| searcher.signature_at(a);
                let fails = match (sig(la), sig(ma)) {
                    (Some(x), Some(y)) => index.rule().matches(&x, &y).is_none(),
                    _ => true,
                };
                (r, fails)
            })
            .collect();
        let below = |t: f64| scored.iter().filter(|s| s.0 < t).count();
        let fails = scored.iter().filter(|s| s.1).count();
        let largest = clusters
            .iter()
            .max_by_key(|c| (c.len(), std::cmp::Reverse(c.id.clone())));
        let clustered: usize = clusters.iter().map(|c| c.len()).sum();
        let share = |n: usize| 100.0 * n as f64 / scored.len().max(1) as f64;
        println!(
            "  {:<10} {:>8} {:>9} {:>8} {:>8} {:>4} {:>4.1}% {:>4} {:>4.1}% {:>9}   {} ({}; {:.2} s)",
            mode.name(),
            clusters.len(),
            clustered,
            largest.map_or(0, |c| c.len()),
            scored.len(),
            below(0.5),
            share(below(0.5)),
            below(0.2),
            share(below(0.2)),
            fails,
            largest.and_then(|c| c.leader()).map_or("-", |m| m.id.as_str()),
            largest.map_or(String::new(), |c| {
                let l = c.leader().map(|m| m.id.as_str()).unwrap_or("");
                let of_largest = || pairs.iter().zip(&scored).filter(|(p, _)| p.0 == l);
                format!(
                    "matches {} of its {} members directly, {} below 0.5",
                    of_largest().filter(|(_, s)| !s.1).count(),
                    c.len() - 1,
                    of_largest().filter(|(_, s)| s.0 < 0.5).count()
                )
            }),
            took.as_secs_f64()
        );
    }
    Ok(())
}
