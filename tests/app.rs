//! The application layer's indexes (those `neardup` and the Python package make): created once,
//! reopened with the settings it recorded, and its two kinds of errors.

mod common;

use tantivy_simhash::app::{self, FieldMap, Requested};
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
    let (created, was_created) = app::open_or_create(&path, &req).unwrap();
    assert!(was_created);
    assert_eq!(created.index.layout().max_distance(), 4);
    drop(created);

    let opened = app::open(&path).unwrap();
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
    let err = app::open_or_create(&path, &other_k).err().unwrap();
    assert!(matches!(&err, Error::Store(m) if m.contains("-k 4") && m.contains("-k 3")));
    let (again, was_created) = app::open_or_create(&path, &Requested::default()).unwrap();
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
    let err = app::open_or_create(&dir.path().join("a"), &unknown)
        .err()
        .unwrap();
    assert!(matches!(&err, Error::Setting(m) if m.contains("klingon")));
    assert!(matches!(app::scheme_for("klingon"), Err(Error::Setting(_))));

    std::fs::write(dir.path().join("note.txt"), "not an index").unwrap();
    let err = app::open_or_create(dir.path(), &Requested::default())
        .err()
        .unwrap();
    assert!(matches!(err, Error::Store(_)));
    let err = app::open(&dir.path().join("missing")).err().unwrap();
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

/// The keys live in the segment component's tables only: a new store's schema has no keys
/// field (nor any field the component does not read but the signature's).
#[test]
fn a_new_store_has_no_keys_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    let (store, created) = app::open_or_create(&path, &Requested::default()).unwrap();
    assert!(created);
    let schema = store.index.index().schema();
    assert!(schema.get_field("simhash_keys").is_err());
    let fingerprint = store.index.fields().fingerprint;
    let first_sketch = store.index.fields().sketch_fields().next().unwrap();
    assert_eq!(first_sketch.field_id(), fingerprint.field_id() + 1);
}
