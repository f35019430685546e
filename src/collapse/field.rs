//! Grouping and leader order by a user's fast field: what a collapse folds by ([`GroupBy`]),
//! the field resolved against the schema (with the errors a wrong field gets), and its values
//! read per segment.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use tantivy::columnar::{Column, MonotonicallyMappableToU64, StrColumn};
use tantivy::fastfield::FastFieldReaders;
use tantivy::schema::{FieldType, Schema};
use tantivy::{DateTime, DocId, Order};

/// What [`NearDupCollapse`](super::NearDupCollapse) folds hits by
/// ([`group_by`](super::NearDupCollapse::group_by)).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum GroupBy {
    /// The index's [`MatchRule`](crate::MatchRule): a hit joins the first leader the rule
    /// matches it with (near-duplicates). The default.
    #[default]
    Rule,
    /// The group id stored under [`Policy::Tag`](crate::Policy::Tag): an exact key assigned
    /// at index time. Needs the index's group field.
    Tag,
    /// The value of a fast field of the schema, named: a hit joins the first leader with the
    /// same value (Elasticsearch's `collapse.field`, a distinct filter on a primary key). The
    /// field must be a fast `str` (text with `FAST`, compared as strings), `u64`, `i64`, `f64`
    /// (compared as values, except that `0.0` and `-0.0` differ and NaN equals NaN), `date`
    /// (at the field's fast precision) or `bool` field. A document without a value stands
    /// alone (it never joins and nothing joins it); a multi-valued field groups by the first
    /// value its column holds for the document.
    Field(String),
}

/// How a leader is chosen among a group's hits ([`leader_order`](super::NearDupCollapse::leader_order)).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct LeaderOrder {
    pub(super) field: String,
    pub(super) order: Order,
}

/// The type of a field a collapse reads values of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ValueKind {
    Str,
    U64,
    I64,
    F64,
    Bool,
    Date,
}

/// What a field is read for (a leader order needs values that compare across segments).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Purpose {
    Group,
    LeaderOrder,
}

/// The kind of the fast field `name` of `schema`; errors name what was found, what a collapse
/// needs, and what to do.
pub(super) fn resolve(schema: &Schema, name: &str, purpose: Purpose) -> Result<ValueKind> {
    let what = match purpose {
        Purpose::Group => "collapsing by a field (GroupBy::Field)",
        Purpose::LeaderOrder => "ordering leaders by a field (leader_order)",
    };
    let problem = |problem: String| Error::Schema {
        field: name.to_string(),
        problem,
    };
    let field = schema.get_field(name).map_err(|_| {
        problem(format!(
            "{what} needs a fast field of that name, but the schema has none; name one of the \
             schema's fast fields"
        ))
    })?;
    let entry = schema.get_field_entry(field);
    let type_name = format!("{:?}", entry.field_type().value_type());
    let kind = match entry.field_type() {
        FieldType::Str(_) => ValueKind::Str,
        FieldType::U64(_) => ValueKind::U64,
        FieldType::I64(_) => ValueKind::I64,
        FieldType::F64(_) => ValueKind::F64,
        FieldType::Bool(_) => ValueKind::Bool,
        FieldType::Date(_) => ValueKind::Date,
        _ => {
            return Err(problem(format!(
                "{what} reads a str, u64, i64, f64, date or bool fast field, but this field is \
                 of type {type_name}; index the value in a field of one of those types with FAST"
            )))
        }
    };
    if !entry.is_fast() {
        return Err(problem(format!(
            "{what} reads the field's column, but this {type_name} field is not a fast field; \
             add FAST to its options in the schema (and reindex)"
        )));
    }
    if kind == ValueKind::Str && purpose == Purpose::LeaderOrder {
        return Err(problem(format!(
            "{what} compares values across segments and shards, which a str column's term \
             ordinals cannot; order by a u64, i64, f64, date or bool fast field (a timestamp \
             or version number)"
        )));
    }
    Ok(kind)
}

impl ValueKind {
    /// A value read as its order-preserving `u64` (tantivy's mapping) as text: decimal numbers,
    /// `true`/`false`, a date as its nanosecond UNIX timestamp.
    pub(super) fn render(self, raw: u64) -> String {
        match self {
            ValueKind::Str | ValueKind::U64 => raw.to_string(),
            ValueKind::I64 => i64::from_u64(raw).to_string(),
            ValueKind::F64 => f64::from_u64(raw).to_string(),
            ValueKind::Bool => bool::from_u64(raw).to_string(),
            ValueKind::Date => DateTime::from_u64(raw).into_timestamp_nanos().to_string(),
        }
    }

    /// The inverse of [`render`](Self::render) for numeric kinds (`None` for text that no
    /// value renders to, and for `Str`).
    pub(super) fn parse(self, text: &str) -> Option<u64> {
        match self {
            ValueKind::Str => None,
            ValueKind::U64 => text.parse::<u64>().ok(),
            ValueKind::I64 => text.parse::<i64>().ok().map(i64::to_u64),
            ValueKind::F64 => text.parse::<f64>().ok().map(f64::to_u64),
            ValueKind::Bool => text.parse::<bool>().ok().map(bool::to_u64),
            ValueKind::Date => text
                .parse::<i64>()
                .ok()
                .map(|n| DateTime::from_timestamp_nanos(n).to_u64()),
        }
    }
}

/// One segment's column of a field, read as order-preserving `u64`s (term ordinals for `str`).
pub(super) enum SegmentValues {
    /// The segment has no value of the field.
    Absent,
    Str(StrColumn),
    U64(Column<u64>),
    I64(Column<i64>),
    F64(Column<f64>),
    Bool(Column<bool>),
    Date(Column<DateTime>),
}

impl SegmentValues {
    /// Opens the column of `field` (of `kind`) in a segment.
    pub(super) fn open(ff: &FastFieldReaders, field: &str, kind: ValueKind) -> Result<Self> {
        let values = match kind {
            ValueKind::Str => ff.str(field)?.map(SegmentValues::Str),
            ValueKind::U64 => ff.column_opt(field)?.map(SegmentValues::U64),
            ValueKind::I64 => ff.column_opt(field)?.map(SegmentValues::I64),
            ValueKind::F64 => ff.column_opt(field)?.map(SegmentValues::F64),
            ValueKind::Bool => ff.column_opt(field)?.map(SegmentValues::Bool),
            ValueKind::Date => ff.column_opt(field)?.map(SegmentValues::Date),
        };
        Ok(values.unwrap_or(SegmentValues::Absent))
    }

    /// The first value of `doc`: its order-preserving `u64` (a numeric value), or its term
    /// ordinal in this segment (a string). Cost: one column read.
    pub(super) fn first(&self, doc: DocId) -> Option<u64> {
        fn raw<T: MonotonicallyMappableToU64>(c: &Column<T>, doc: DocId) -> Option<u64> {
            c.first(doc).map(T::to_u64)
        }
        match self {
            SegmentValues::Absent => None,
            SegmentValues::Str(c) => c.ords().first(doc),
            SegmentValues::U64(c) => c.first(doc),
            SegmentValues::I64(c) => raw(c, doc),
            SegmentValues::F64(c) => raw(c, doc),
            SegmentValues::Bool(c) => raw(c, doc),
            SegmentValues::Date(c) => raw(c, doc),
        }
    }

    /// The column's id for the value `text` (as [`ValueKind::render`] or a string column
    /// gives it), `None` when no document of the segment can have it.
    pub(super) fn lookup(&self, kind: ValueKind, text: &str) -> Result<Option<u64>> {
        match self {
            SegmentValues::Absent => Ok(None),
            SegmentValues::Str(c) => Ok(c.dictionary().term_ord(text.as_bytes())?),
            _ => Ok(kind.parse(text)),
        }
    }
}
