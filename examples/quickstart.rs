//! The library example of the README: index with dedup, then search with near-duplicates
//! collapsed.
//!
//! ```text
//! cargo run --release --example quickstart
//! ```

use tantivy::query::TermQuery;
use tantivy::schema::IndexRecordOption;
use tantivy::{doc, Term};
use tantivy_simhash::{NearDupCollapse, NearDupConfig, NearDupIndex, Policy};

fn main() -> tantivy_simhash::Result<()> {
    let mit = "Permission is hereby granted, free of charge, to any person obtaining a copy of \
               this software, to deal in the software without restriction.";
    let upper = mit.to_uppercase();
    let docs = [
        ("mit-1", mit),
        ("mit-2", &upper),
        ("guide", "The software in Debian."),
    ];

    // README: begin
    let config = NearDupConfig::new("id", ["body"]); // identify by `id`, fingerprint `body`
    let index = NearDupIndex::create_in_ram(config)?; // or create_in_dir(path, config)
    let (id, body) = (index.field("id")?, index.field("body")?);
    let mut writer = index.writer(50_000_000, Policy::Tag)?; // or Off, Reject, Replace
    for (name, text) in docs {
        let outcome = writer.add_document(doc!(id => name, body => text))?; // Added, Tagged, ...
        println!("{name}: {outcome:?}");
    }
    writer.commit()?;

    let query = TermQuery::new(
        Term::from_field_text(body, "software"),
        IndexRecordOption::Basic,
    );
    let collapse = NearDupCollapse::by_score(index.fields(), 10);
    let results = collapse.search(&index.searcher()?, &query)?;
    for group in results.groups() {
        println!(
            "{} and {} near-duplicates",
            group.leader.id,
            group.count - 1
        );
    }
    // README: end
    assert_eq!(results.groups().len(), 2);
    assert!(results
        .groups()
        .iter()
        .any(|g| g.count == 2 && g.leader.id == "mit-1"));
    let searcher = index.lookups()?;
    assert!(matches!(
        searcher.lookup(index.scheme().fingerprint(mit))?.as_slice(),
        [a, b] if a.id == "mit-1" && b.id == "mit-2" && b.distance == 0
    ));
    Ok(())
}
