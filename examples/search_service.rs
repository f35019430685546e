//! A search service that collapses near-duplicates: an index of the demo corpus (grouped while
//! indexing with `Policy::Tag`), then each query answered with one result per group of
//! near-duplicates and the group's size. The collapse is made once and reused by every query.
//!
//! ```text
//! cargo run --release --example search_service -- license python
//! ```

use flate2::read::MultiGzDecoder;
use std::io::{BufRead, BufReader};
use tantivy::query::QueryParser;
use tantivy::schema::Value;
use tantivy::{doc, TantivyDocument};
use tantivy_simhash::{NearDupCollapse, NearDupConfig, NearDupIndex, Policy};

#[derive(serde::Deserialize)]
struct Line {
    id: String,
    text: String,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The id, the text (stored) and the near-duplicate fields, in memory:
    let index = NearDupIndex::create_in_ram(NearDupConfig::new("id", ["text"]))?;
    let (id, text) = (index.field("id")?, index.field("text")?);
    let mut writer = index.writer(100_000_000, Policy::Tag)?;
    let corpus = std::fs::File::open("demo/corpus.jsonl.gz")?;
    for line in BufReader::new(MultiGzDecoder::new(corpus)).lines() {
        let line: Line = serde_json::from_str(&line?)?;
        writer.add_document(doc!(id => line.id, text => line.text))?;
    }
    writer.commit()?;

    // The service's state: a query parser and one collapse (10 groups a page, exact sizes).
    let parser = QueryParser::for_index(index.index(), vec![text]);
    let collapse = NearDupCollapse::by_score(index.fields(), 10).exact_counts(true);
    let queries: Vec<String> = std::env::args().skip(1).collect();
    let queries = match queries.is_empty() {
        true => vec!["license".to_string(), "python".to_string()],
        false => queries,
    };
    for query in &queries {
        let searcher = index.searcher()?; // the latest commit
        let results = collapse.search(&searcher, &parser.parse_query(query)?)?;
        println!("{query}:");
        for (rank, group) in results.groups().iter().enumerate() {
            let stored: TantivyDocument = searcher.doc(group.leader.address)?;
            let first_line = stored
                .get_first(text)
                .and_then(|v| v.as_str())
                .unwrap_or("");
            let first_line: String = first_line
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(60)
                .collect();
            println!(
                "{:>3}. {:<12} {:>3} copies  {first_line}",
                rank + 1,
                group.leader.id,
                group.count
            );
        }
    }
    Ok(())
}
