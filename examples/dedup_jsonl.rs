//! Dedup while indexing: reads a JSONL file (gzip or plain, one `{"id", "text"}` object per
//! line), rejects every document that is a near-duplicate of one already indexed, and says
//! which document each rejected one copies.
//!
//! ```text
//! cargo run --release --example dedup_jsonl -- demo/corpus.jsonl.gz
//! ```

use flate2::read::MultiGzDecoder;
use std::io::{BufRead, BufReader, Read};
use tantivy::doc;
use tantivy_simhash::{NearDupConfig, NearDupIndex, Outcome, Policy};

#[derive(serde::Deserialize)]
struct Line {
    id: String,
    text: String,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or("demo/corpus.jsonl.gz".into());
    let file = std::fs::File::open(&path).map_err(|e| format!("{path}: {e}"))?;
    let input: Box<dyn Read> = match path.ends_with(".gz") {
        true => Box::new(MultiGzDecoder::new(file)),
        false => Box::new(file),
    };

    // The id, the text (stored) and the near-duplicate fields, in memory:
    let index = NearDupIndex::create_in_ram(NearDupConfig::new("id", ["text"]))?;
    let (id, text) = (index.field("id")?, index.field("text")?);
    // Reject: a near-duplicate of an indexed document is not added (Tag would add it in the
    // first one's group, Replace would delete the older copy).
    let mut writer = index.writer(100_000_000, Policy::Reject)?;

    let (mut added, mut rejected) = (0, 0);
    for (n, line) in BufReader::new(input).lines().enumerate() {
        let line: Line =
            serde_json::from_str(&line?).map_err(|e| format!("line {}: {e}", n + 1))?;
        match writer.add_document(doc!(id => line.id.as_str(), text => line.text))? {
            Outcome::Duplicate { of, evidence, .. } => {
                rejected += 1;
                if rejected <= 5 {
                    println!("{} copies {of} ({evidence})", line.id);
                }
            }
            _ => added += 1,
        }
    }
    writer.commit()?;
    println!("{added} documents indexed, {rejected} near-duplicates rejected");
    assert_eq!(index.searcher()?.num_docs(), added);
    Ok(())
}
