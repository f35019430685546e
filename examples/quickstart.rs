//! The library example of the README: index with dedup, then find near-duplicates.
//!
//! ```text
//! cargo run --release --example quickstart
//! ```

use tantivy::schema::{Schema, FAST, STORED, STRING, TEXT};
use tantivy::{doc, Index};
use tantivy_simhash::{NearDupConfig, NearDupIndex, Outcome, Policy};

fn main() -> tantivy_simhash::Result<()> {
    // README: begin
    let config = NearDupConfig::new("id", ["body"]); // fingerprint `body`, identify by `id`
    let mut schema = Schema::builder();
    let id = schema.add_text_field("id", STRING | FAST | STORED);
    let body = schema.add_text_field("body", TEXT | STORED);
    config.add_fields(&mut schema); // the fingerprint, its keys and the group
    let index = NearDupIndex::create(Index::create_in_ram(schema.build()), config)?;

    let mut writer = index.writer(50_000_000, Policy::Reject)?; // or Off, Tag, Replace
    let text = "Permission is hereby granted, free of charge, to any person obtaining a copy of \
                this software, to deal in the software without restriction.";
    writer.add_document(doc!(id => "mit-1", body => text))?;
    let copy = writer.add_document(doc!(id => "mit-2", body => text.to_uppercase()))?;
    assert!(matches!(copy, Outcome::Duplicate { ref of, distance: 0, .. } if of == "mit-1"));
    writer.commit()?;

    let near = index
        .searcher()?
        .lookup_text(&text.replace("charge", "cost"))?;
    // README: end
    for hit in &near {
        println!("{} at distance {}", hit.id, hit.distance);
    }
    Ok(())
}
