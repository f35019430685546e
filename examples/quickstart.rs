//! The library example of the README: index with dedup, then search with near-duplicates
//! collapsed.
//!
//! ```text
//! cargo run --release --example quickstart
//! ```

use tantivy::collector::TopDocs;
use tantivy::query::TermQuery;
use tantivy::schema::{IndexRecordOption, Schema, FAST, STORED, STRING, TEXT};
use tantivy::{doc, Index, Term};
use tantivy_simhash::{NearDupCollapse, NearDupConfig, NearDupIndex, Outcome, Policy};

fn main() -> tantivy_simhash::Result<()> {
    // README: begin
    let config = NearDupConfig::new("id", ["body"]); // fingerprint `body`, identify by `id`
    let mut schema = Schema::builder();
    let id = schema.add_text_field("id", STRING | FAST | STORED);
    let body = schema.add_text_field("body", TEXT | STORED);
    config.add_fields(&mut schema); // the fingerprint, its keys and the group
    let index = NearDupIndex::create(Index::create_in_ram(schema.build()), config)?;

    let mut writer = index.writer(50_000_000, Policy::Tag)?; // or Off, Reject, Replace
    let mit = "Permission is hereby granted, free of charge, to any person obtaining a copy of \
               this software, to deal in the software without restriction.";
    writer.add_document(doc!(id => "mit-1", body => mit))?;
    let copy = writer.add_document(doc!(id => "mit-2", body => mit.to_uppercase()))?;
    assert!(matches!(copy, Outcome::Tagged { ref group, distance: 0, .. } if group == "mit-1"));
    writer.add_document(doc!(id => "guide", body => "A guide to the software in Debian."))?;
    writer.commit()?;

    let query = TermQuery::new(
        Term::from_field_text(body, "software"),
        IndexRecordOption::Basic,
    );
    let collapse = NearDupCollapse::new(&index, 10, |n| TopDocs::with_limit(n).order_by_score());
    let results = collapse.search(index.searcher()?.searcher(), &query)?;
    for group in results.groups() {
        println!(
            "{} and {} near-duplicates",
            group.leader.id,
            group.count - 1
        );
    }
    // README: end
    assert_eq!(results.groups().len(), 2);
    assert!(results.groups().iter().any(|g| g.count == 2));
    Ok(())
}
