//! Indexes of format `tantivy-simhash/4` made before the keys field was dropped: their schema
//! has a `simhash_keys` field (a `u64` that tantivy neither indexes nor stores, which never held
//! a value) between the fingerprint and the sketch words, and their record names it
//! (`keys_field`, `key_postings: false`), in the file and in every commit's payload. Such an
//! index opens from its record and with today's configuration, finds what an index of today's
//! schema finds for the same documents, and takes writes (Reject checks against it included),
//! its next commit recording today's record without a conflict.

mod common;

use common::{add_committing, config, edited_texts, unmerged_writer};
use std::path::Path;
use tantivy::schema::{NumericOptions, Schema, FAST, STORED, STRING, TEXT};
use tantivy::{Index, IndexWriter, TantivyDocument};
use tantivy_simhash::{BlockLayout, IndexRecord, NearDupConfig, NearDupIndex, Outcome, Policy};

/// The name the previous version gave the keys field by default.
const KEYS_FIELD: &str = "simhash_keys";

/// The schema of `common::schema` as the previous version's `add_fields` made it: the keys
/// field right after the fingerprint.
fn old_schema(config: &NearDupConfig) -> Schema {
    let mut ours = Schema::builder();
    config.add_fields(&mut ours);
    let ours = ours.build();
    let mut builder = Schema::builder();
    builder.add_text_field("id", STRING | FAST | STORED);
    builder.add_text_field("host", STRING);
    builder.add_text_field("title", TEXT);
    builder.add_text_field("body", TEXT);
    for (_, entry) in ours.fields() {
        builder.add_field(entry.clone());
        if entry.name() == config.fingerprint_field() {
            builder.add_u64_field(KEYS_FIELD, NumericOptions::default());
        }
    }
    builder.build()
}

/// `record` (today's JSON) as the previous version wrote it.
fn old_record_json(record: &str) -> String {
    let mut value: serde_json::Value = serde_json::from_str(record).unwrap();
    let map = value.as_object_mut().unwrap();
    assert!(
        !map.contains_key("keys_field"),
        "today's record names no keys field"
    );
    map.insert("keys_field".into(), KEYS_FIELD.into());
    map.insert("key_postings".into(), false.into());
    serde_json::to_string(&value).unwrap()
}

/// Rewrites the record file and the last commit's payload of the index in `path` as the
/// previous version wrote them.
fn write_old_record(path: &Path, config: &NearDupConfig) {
    let file = path.join(".tantivy-simhash.json");
    let today = std::fs::read_to_string(&file).unwrap();
    let old = old_record_json(&today);
    std::fs::write(&file, &old).unwrap();
    let mut index = Index::open_in_dir(path).unwrap();
    index.register_plugin(config.segment_component().unwrap());
    let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
    let mut commit = writer.prepare_commit().unwrap();
    commit.set_payload(&old);
    commit.commit().unwrap();
    let payload = index.load_metas().unwrap().payload.unwrap();
    assert!(payload.contains("\"keys_field\""), "{payload}");
}

fn doc(t: &common::TestIndex, id: &str, text: &str) -> TantivyDocument {
    let mut doc = TantivyDocument::default();
    doc.add_text(t.id, id);
    doc.add_text(t.body, text);
    doc
}

/// Every document's matches (ids and evidence), by id.
fn all_matches(index: &NearDupIndex, texts: &[String]) -> Vec<Vec<(String, String)>> {
    texts
        .iter()
        .map(|text| {
            let mut found: Vec<(String, String)> = index
                .lookup_text(text)
                .unwrap()
                .into_iter()
                .map(|m| (m.id, format!("{:?}", m.evidence)))
                .collect();
            found.sort();
            found
        })
        .collect()
}

#[test]
fn an_index_with_the_old_keys_field_opens_searches_and_writes_as_todays() {
    let config = config(BlockLayout::default());
    assert!(config.schema().unwrap().get_field(KEYS_FIELD).is_err());
    let texts = edited_texts(11, 90);
    let (today_texts, later) = texts.split_at(80);

    // Today's index of the first 80 texts: the oracle.
    let today = common::ram_index_with(config.clone());
    let mut writer = unmerged_writer(&today.index, Policy::Off);
    let docs = today_texts
        .iter()
        .enumerate()
        .map(|(i, x)| (doc(&today, &format!("d{i}"), x), None));
    add_committing(&mut writer, docs, 30);
    drop(writer);

    // The same documents in an index of the old schema and record.
    let dir = tempfile::tempdir().unwrap();
    let schema = old_schema(&config);
    let keys = schema.get_field(KEYS_FIELD).unwrap();
    let fingerprint = schema.get_field(config.fingerprint_field()).unwrap();
    assert_eq!(keys.field_id(), fingerprint.field_id() + 1);
    let created = NearDupIndex::create(
        Index::create_in_dir(dir.path(), schema).unwrap(),
        config.clone(),
    )
    .unwrap();
    let old = common::TestIndex {
        id: created.field("id").unwrap(),
        body: created.field("body").unwrap(),
        host: created.field("host").unwrap(),
        index: created,
    };
    let mut writer = unmerged_writer(&old.index, Policy::Off);
    let docs = today_texts
        .iter()
        .enumerate()
        .map(|(i, x)| (doc(&old, &format!("d{i}"), x), None));
    add_committing(&mut writer, docs, 30);
    drop(writer);
    drop(old);
    write_old_record(dir.path(), &config);

    // Opened from its record, and with today's configuration.
    let recorded = NearDupIndex::open_recorded(Index::open_in_dir(dir.path()).unwrap()).unwrap();
    let opened =
        NearDupIndex::open(Index::open_in_dir(dir.path()).unwrap(), config.clone()).unwrap();
    let expected = all_matches(&today.index, &texts);
    assert!(
        expected.iter().any(|m| m.len() > 1),
        "the corpus needs matches"
    );
    assert_eq!(all_matches(&recorded, &texts), expected);
    assert_eq!(all_matches(&opened, &texts), expected);

    // Written to: Reject checks against its committed documents, new ones are found, and the
    // commit records today's record beside the old file without a conflict.
    drop(recorded);
    let old = common::TestIndex {
        id: opened.field("id").unwrap(),
        body: opened.field("body").unwrap(),
        host: opened.field("host").unwrap(),
        index: opened,
    };
    let mut writer = old.index.writer(20_000_000, Policy::Reject).unwrap();
    let outcome = writer.add_document(doc(&old, "copy", &texts[0])).unwrap();
    assert!(
        matches!(outcome, Outcome::Duplicate { ref of, .. } if of == "d0"),
        "{outcome:?}"
    );
    for (i, text) in later.iter().enumerate() {
        writer
            .add_document(doc(&old, &format!("d{}", 80 + i), text))
            .unwrap();
    }
    writer.commit().unwrap();
    drop(writer);
    let mut writer = unmerged_writer(&today.index, Policy::Reject);
    for (i, text) in later.iter().enumerate() {
        writer
            .add_document(doc(&today, &format!("d{}", 80 + i), text))
            .unwrap();
    }
    writer.commit().unwrap();
    assert_eq!(
        all_matches(&old.index, &texts),
        all_matches(&today.index, &texts)
    );
    let record = IndexRecord::read(old.index.index()).unwrap().unwrap();
    assert_eq!(record.layout(), Some(&BlockLayout::default()));
    let payload = old.index.index().load_metas().unwrap().payload.unwrap();
    assert!(!payload.contains("keys_field"), "{payload}");
}
