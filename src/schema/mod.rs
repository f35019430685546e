//! The near-duplicate index: its configuration, the fields it adds to a schema, the record of
//! how it was built, and [`NearDupIndex`], the handle the other modules take.
//!
//! Every document carries, next to the user's own fields:
//!
//! - its [`Signature`](crate::Signature) (the [`Fingerprint`] and the MinHash sketch) in plain
//!   `u64` fields that tantivy neither indexes nor stores: they carry it to the index's
//!   **segment component** ([`crate::component`]), which writes every segment's signatures
//!   and the match rule's keys, in sorted tables, to a file of the segment;
//! - optionally, under [`Policy::Tag`](crate::Policy::Tag), the id of the first document of its near-duplicate group
//!   in a string fast field, so results can be collapsed exactly.
//!
//! The user's **id field** must be a text field indexed with the `raw` tokenizer and fast:
//! `STRING | FAST` (add `STORED` if you want it back from the doc store). Lookups return ids read
//! from its column, [`Policy::Replace`](crate::Policy::Replace) deletes by it, and [`NearDupQuery::from_id`](crate::NearDupQuery::from_id) finds a
//! document by it.
//!
//! Which [`Scheme`] and [`BlockLayout`] built an index ([`IndexRecord`]: their ids and
//! parameters, and the field names, so [`NearDupIndex::open_recorded`] needs nothing else) is
//! recorded twice: in a small file
//! (`.tantivy-simhash.json`; tantivy's garbage collection never deletes names starting with a dot)
//! written by [`NearDupIndex::create`], and in the payload of every commit made through
//! [`DedupWriter::commit`](crate::DedupWriter::commit). [`NearDupIndex::open`] checks the record against what the caller
//! asks for: fingerprints of two schemes cannot be compared, so a mismatch is an error
//! ([`Error::IndexMismatch`]), and so is a missing or mistyped field ([`Error::Schema`]).
//!
//! ```
//! use tantivy::doc;
//! use tantivy_simhash::{NearDupConfig, NearDupIndex, NearDupLookup, Outcome, Policy};
//!
//! let index = NearDupIndex::create_in_ram(NearDupConfig::new("id", ["body"]))?;
//! let (id, body) = (index.field("id")?, index.field("body")?);
//!
//! let mut writer = index.writer(50_000_000, Policy::Reject)?;
//! let text = "Simhash maps a weighted feature set to 64 bits, so that near-duplicate \
//!             documents get fingerprints that differ in only a few bits.";
//! assert!(matches!(writer.add_document(doc!(id => "a", body => text))?, Outcome::Added { .. }));
//! // The writer sees its own uncommitted documents:
//! let again = writer.add_document(doc!(id => "b", body => text))?;
//! assert!(matches!(again, Outcome::Duplicate { ref of, .. } if of == "a"));
//! assert_eq!(again.evidence().map(|e| e.distance()), Some(0));
//! writer.commit()?;
//!
//! let lookups = NearDupLookup::new(index.fields(), &index.searcher()?)?;
//! // Formatting-only changes give the same fingerprint:
//! let hits = lookups.lookup(index.scheme().fingerprint(&text.to_uppercase()))?;
//! assert_eq!(hits[0].id, "a");
//! # Ok::<(), tantivy_simhash::Error>(())
//! ```

mod config;
mod fields;
mod index;
mod record;

pub use config::{NearDupConfig, REPLACED_FIELD, SEQUENCE_FIELD};
pub use fields::NearDupFields;
pub use index::NearDupIndex;
pub use record::IndexRecord;
pub(crate) use record::RECORD_FILE;
