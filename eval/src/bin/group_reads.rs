//! Reading the group of every document of a `Tag` index through `NearDupLookup::group_of`
//! (the process's string tables, `src/ids.rs`) against reading each group from the column's
//! dictionary one by one (what `group_of` did before; a block decompressed per string), in the
//! same run.
//!
//! ```text
//! cargo run --release -p tantivy-simhash-eval --bin group_reads -- ../shared/data [records]
//! ```

#[path = "../support/data.rs"]
mod data;

use data::{read_jsonl, Res};
use serde::Deserialize;
use std::path::PathBuf;
use std::time::Instant;
use tantivy::schema::{Schema, FAST, STORED, STRING, TEXT};
use tantivy::{doc, DocAddress, Index};
use tantivy_simhash::{NearDupConfig, NearDupIndex, Policy};

#[derive(Deserialize)]
struct Record {
    text: String,
}

fn main() -> Res<()> {
    let mut args = std::env::args().skip(1);
    let data = PathBuf::from(args.next().unwrap_or_else(|| "../shared/data".into()));
    let limit: usize = args.next().map_or(Ok(20_000), |n| n.parse())?;
    let records: Vec<Record> = read_jsonl(&data.join("natural-en.jsonl.gz"), limit)?;
    let config = NearDupConfig::new("id", ["body"]);
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING | FAST | STORED);
    let body = builder.add_text_field("body", TEXT);
    config.add_fields(&mut builder);
    let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config)?;
    let mut writer = index.writer(100_000_000, Policy::Tag)?;
    for (i, r) in records.iter().enumerate() {
        writer.add_document(doc!(id => format!("d{i}"), body => r.text.clone()))?;
    }
    writer.commit()?;
    drop(writer);
    let lookups = index.lookups()?;
    let searcher = lookups.searcher();
    let group = index
        .fields()
        .group
        .ok_or("a Tag index has a group field")?;
    let group_name = searcher.schema().get_field_name(group).to_string();
    let mut columns = Vec::new();
    let mut addresses = Vec::new();
    for (ord, segment) in searcher.segment_readers().iter().enumerate() {
        columns.push(segment.fast_fields().str(&group_name)?);
        addresses.extend(
            segment
                .doc_ids_alive()
                .map(|d| DocAddress::new(ord as u32, d)),
        );
    }
    let per_doc = |secs: f64| secs * 1e6 / addresses.len() as f64;
    for round in 1..=3 {
        let start = Instant::now();
        let mut through_tables = 0;
        for &a in &addresses {
            through_tables += lookups.group_of(a)?.map_or(0, |g| g.len());
        }
        let tables = start.elapsed().as_secs_f64();
        let start = Instant::now();
        let mut one_by_one = 0;
        for &a in &addresses {
            let Some(column) = &columns[a.segment_ord as usize] else {
                continue;
            };
            if let Some(ord) = column.ords().first(a.doc_id) {
                let mut g = String::new();
                column.ord_to_str(ord, &mut g)?;
                one_by_one += g.len();
            }
        }
        let dictionary = start.elapsed().as_secs_f64();
        if through_tables != one_by_one {
            return Err("the two ways read different groups".into());
        }
        println!(
            "round {round}: {} documents, group_of {:.2} us each, the dictionary one by one {:.2} us, ratio {:.3}",
            addresses.len(),
            per_doc(tables),
            per_doc(dictionary),
            tables / dictionary
        );
    }
    Ok(())
}
