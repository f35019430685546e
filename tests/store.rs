//! The library's store (the indexes `neardup` and the Python package make): created once,
//! reopened with the settings it recorded, and its two kinds of errors.

mod common;

use tantivy_simhash::store::{self, FieldMap, Requested};
use tantivy_simhash::{Error, Policy};

#[test]
fn a_store_reopens_with_what_it_recorded_and_refuses_to_change_fixed_settings() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    let req = Requested {
        language: Some("english".into()),
        k: Some(4),
        policy: Some(Policy::Replace),
        text_field: Some("body".into()),
        ..Requested::default()
    };
    let (created, was_created) = store::open_or_create(&path, &req).unwrap();
    assert!(was_created);
    assert_eq!(created.index.layout().max_distance(), 4);
    drop(created);

    let opened = store::open(&path).unwrap();
    assert_eq!(opened.record.language, "english");
    assert_eq!(opened.record.k, 4);
    assert_eq!(opened.record.policy(), Policy::Replace);
    assert_eq!(
        opened.record.fields,
        FieldMap {
            text: "body".into(),
            ..FieldMap::default()
        }
    );
    assert_eq!(opened.checked_k(None).unwrap(), 4);
    assert!(matches!(opened.checked_k(Some(5)), Err(Error::Setting(_))));
    drop(opened);

    // Language and k are fixed at creation: asking for others is the directory's error.
    let other_k = Requested {
        k: Some(3),
        ..Requested::default()
    };
    let err = store::open_or_create(&path, &other_k).err().unwrap();
    assert!(matches!(&err, Error::Store(m) if m.contains("-k 4") && m.contains("-k 3")));
    let (again, was_created) = store::open_or_create(&path, &Requested::default()).unwrap();
    assert!(!was_created);
    assert_eq!(again.record.k, 4);
}

#[test]
fn bad_settings_and_foreign_directories_are_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    let unknown = Requested {
        language: Some("klingon".into()),
        ..Requested::default()
    };
    let err = store::open_or_create(&dir.path().join("a"), &unknown)
        .err()
        .unwrap();
    assert!(matches!(&err, Error::Setting(m) if m.contains("klingon")));
    assert!(matches!(
        store::scheme_for("klingon"),
        Err(Error::Setting(_))
    ));

    std::fs::write(dir.path().join("note.txt"), "not an index").unwrap();
    let err = store::open_or_create(dir.path(), &Requested::default())
        .err()
        .unwrap();
    assert!(matches!(err, Error::Store(_)));
    let err = store::open(&dir.path().join("missing")).err().unwrap();
    assert!(matches!(&err, Error::Store(m) if m.contains("does not exist")));
}

#[test]
fn policies_are_named_as_the_front_ends_name_them() {
    for p in Policy::ALL {
        assert_eq!(Policy::from_name(p.name()), Some(p));
    }
    assert_eq!(Policy::from_name("TAG"), Some(Policy::Tag));
    assert_eq!(Policy::from_name("keep"), None);
}

/// Key storage is chosen when a store is created (columns only by default), recorded, enforced
/// like language and k, and changes no result: both storages find the same near-duplicates.
#[test]
fn key_storage_is_chosen_at_creation_recorded_and_changes_no_lookup() {
    let texts = common::edited_texts(7, 120);
    let dir = tempfile::tempdir().unwrap();
    let mut found = Vec::new();
    for key_postings in [None, Some(true)] {
        let path = dir.path().join(format!("idx-{key_postings:?}"));
        let req = Requested {
            key_postings,
            ..Requested::default()
        };
        let (store, _) = store::open_or_create(&path, &req).unwrap();
        let expected = key_postings == Some(true);
        assert_eq!(store.record.key_postings, expected);
        assert_eq!(store.index.fields().key_postings(), expected);
        let mut writer = store
            .index
            .writer_with_num_threads(1, 20_000_000, Policy::Off)
            .unwrap();
        for (i, text) in texts.iter().enumerate() {
            let id = format!("d{i}");
            writer
                .add_document(
                    tantivy::doc!(store.fields.id => id, store.fields.text => text.as_str()),
                )
                .unwrap();
        }
        writer.commit().unwrap();
        drop(writer);
        drop(store);

        let opened = store::open(&path).unwrap();
        assert_eq!(opened.record.key_postings, expected);
        let lookups = opened.index.lookups().unwrap();
        let ids: Vec<Vec<String>> = (0..texts.len())
            .map(|i| {
                let mut ids: Vec<String> = lookups
                    .lookup_id(&format!("d{i}"))
                    .unwrap()
                    .into_iter()
                    .map(|hit| hit.id)
                    .collect();
                ids.sort();
                ids
            })
            .collect();
        found.push(ids);
        drop(lookups);
        drop(opened);

        // The other storage is refused, naming both; asking nothing keeps the recorded one.
        let other = Requested {
            key_postings: Some(!expected),
            ..Requested::default()
        };
        let err = store::open_or_create(&path, &other).err().unwrap();
        assert!(
            matches!(&err, Error::Store(m) if m.contains("--key-postings")),
            "{err}"
        );
        let (again, was_created) = store::open_or_create(&path, &Requested::default()).unwrap();
        assert!(!was_created);
        assert_eq!(again.record.key_postings, expected);
    }
    assert_eq!(found[0], found[1]);
    assert!(
        found[0].iter().any(|ids| ids.len() > 1),
        "the texts must have near-duplicates"
    );
}
