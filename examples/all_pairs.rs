//! All pairs of a corpus: indexes the demo corpus without any dedup, then lists every pair of
//! documents the match rule finds, and the clusters they form, in one pass over the index.
//!
//! ```text
//! cargo run --release --example all_pairs
//! ```

use flate2::read::MultiGzDecoder;
use std::io::{BufRead, BufReader};
use tantivy::doc;
use tantivy_simhash::NearDupGraph;
use tantivy_simhash::{NearDupConfig, NearDupIndex, Policy};

#[derive(serde::Deserialize)]
struct Line {
    id: String,
    text: String,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The id, the text (stored) and the near-duplicate fields, in memory:
    let index = NearDupIndex::create_in_ram(NearDupConfig::new("id", ["text"]))?;
    let (id, text) = (index.field("id")?, index.field("text")?);
    let mut writer = index.writer(100_000_000, Policy::Off)?; // keep every document
    let corpus = std::fs::File::open("demo/corpus.jsonl.gz")?;
    for line in BufReader::new(MultiGzDecoder::new(corpus)).lines() {
        let line: Line = serde_json::from_str(&line?)?;
        writer.add_document(doc!(id => line.id, text => line.text))?;
    }
    writer.commit()?;

    let graph = NearDupGraph::new(index.fields(), &index.searcher()?)?;
    let mut pairs = Vec::new();
    graph.for_each_id_pair(|p| pairs.push((p.a.to_string(), p.b.to_string(), p.evidence)))?;
    pairs.sort_by(|x, y| (&x.0, &x.1).cmp(&(&y.0, &y.1)));
    for (a, b, evidence) in pairs.iter().take(5) {
        println!("{a}  {b}  {evidence}");
    }
    let clusters = graph.clusters()?;
    let largest = clusters.iter().map(|c| c.len()).max().unwrap_or(0);
    println!(
        "{} pairs among {} documents; {} clusters, the largest of {largest}",
        pairs.len(),
        graph.num_docs(),
        clusters.len()
    );
    Ok(())
}
