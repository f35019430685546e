//! [`NearDupFields`]: the resolved fields of an index, and the checks of a schema's fields
//! against a configuration.

use super::{NearDupConfig, REPLACED_FIELD, SEQUENCE_FIELD};
use crate::component::reader::ResolvedSignatureFields;
use crate::error::{Error, Result};
use crate::fingerprint::{Scheme, SIMHASH_TOKENIZER_NAME};
use crate::layout::BlockLayout;
use crate::signature::MatchRule;
use tantivy::schema::{Field, FieldType, Schema};

/// The handle every feature takes: the resolved fields of a near-duplicate index and its match
/// rule. Small and `Copy` (112 bytes, the rule's parameters included), so collectors, queries and
/// lookups hold it by value.
///
/// Get it from [`NearDupIndex::fields`](crate::NearDupIndex::fields). It holds everything reading an index needs (which
/// columns and postings to open, the rule that decides a match, the layout of its keys); the
/// [`Scheme`] is not in it: a scheme may hold a user analyzer and an IDF table, which cannot be
/// `Copy`, and only turning text into a fingerprint needs it (the entry points that take text,
/// such as [`NearDupQuery::from_text`](crate::NearDupQuery::from_text), take the
/// [`NearDupIndex`](crate::NearDupIndex)). The rule is a plain `Copy` value (its parameters;
/// the layout's blocks and combinations are computed when used), held by value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NearDupFields {
    /// The user's id field (`STRING | FAST`).
    pub id: Field,
    /// The fingerprint (`u64`, fast).
    pub fingerprint: Field,
    /// The group id (string, fast), if configured.
    pub group: Option<Field>,
    /// [`SEQUENCE_FIELD`] (`u64`, fast), if the schema has it.
    pub sequence: Option<Field>,
    /// [`REPLACED_FIELD`] (string, indexed and fast, multi-valued), if the schema has it.
    pub replaced: Option<Field>,
    /// The sketch words: `sketch_words` consecutive fields from `first_sketch`
    /// ([`NearDupConfig::add_fields`] adds them together; resolving checks it).
    pub(super) first_sketch: Field,
    pub(super) sketch_words: u32,
    pub(super) rule: MatchRule,
}

impl NearDupFields {
    /// The match rule of the index.
    pub fn rule(&self) -> &MatchRule {
        &self.rule
    }

    /// The layout of the block keys (the rule's simhash branch); its
    /// [`max_distance`](BlockLayout::max_distance) is the default `k` of lookups, queries and
    /// collapses.
    pub fn layout(&self) -> &BlockLayout {
        self.rule.layout()
    }

    /// The sketch fields (`u64`, fast), one per 64-bit word of the sketch, in word order.
    /// Cost: none (computed from the first field's number; the fields are numbered in a row).
    pub fn sketch_fields(&self) -> impl ExactSizeIterator<Item = Field> + Clone {
        let first = self.first_sketch.field_id();
        (first..first + self.sketch_words).map(Field::from_field_id)
    }

    /// The group field, or the one error every feature that needs it gives: `needs` says what
    /// needs it ("Policy::Tag stores each document's group in", ...).
    pub(crate) fn require_group(&self, needs: &str) -> Result<Field> {
        self.group.ok_or_else(|| Error::Schema {
            field: "group".into(),
            problem: format!(
                "{needs} the group field, but the configuration has none; keep NearDupConfig's \
                 group field (NearDupConfig::with_group_field(Some(..)))"
            ),
        })
    }
}

/// The text fields to fingerprint; an error naming the first that is missing or not text.
pub(super) fn resolve_text_fields(schema: &Schema, config: &NearDupConfig) -> Result<Vec<Field>> {
    config
        .text_fields
        .iter()
        .map(|name| {
            required_field(
                schema,
                name,
                |t| matches!(t, FieldType::Str(_)),
                "text fields to fingerprint must be text fields",
            )
        })
        .collect()
}

/// This crate's own fields ([`SEQUENCE_FIELD`], [`REPLACED_FIELD`]), optional: indexes made
/// before they existed open without them; an error when one has the wrong type.
pub(super) fn resolve_crate_fields(schema: &Schema) -> Result<(Option<Field>, Option<Field>)> {
    let sequence = optional_field(
        schema,
        SEQUENCE_FIELD,
        |t| matches!(t, FieldType::U64(o) if o.is_fast()),
        "this crate's sequence field must be a u64 fast field; use NearDupConfig::add_fields",
    )?;
    let replaced = optional_field(
        schema,
        REPLACED_FIELD,
        is_raw_fast_text,
        "this crate's replaced-ids field must be STRING | FAST; use NearDupConfig::add_fields",
    )?;
    Ok((sequence, replaced))
}

/// The field `name` of `schema`, if its type is `wanted`: [`Error::Schema`] with `problem`
/// otherwise, and a message saying how to add it when it is missing.
pub(super) fn required_field(
    schema: &Schema,
    name: &str,
    wanted: impl Fn(&FieldType) -> bool,
    problem: &str,
) -> Result<Field> {
    let field = schema.get_field(name).map_err(|_| Error::Schema {
        field: name.to_string(),
        problem: "not in the schema; add it (NearDupConfig::add_fields adds the \
                  fingerprint, key and group fields; the id field is yours, as \
                  STRING | FAST)"
            .into(),
    })?;
    check_field_type(schema, name, field, wanted, problem)
}

/// The field `name` of `schema` if the schema has it (checked as [`required_field`] does).
pub(super) fn optional_field(
    schema: &Schema,
    name: &str,
    wanted: impl Fn(&FieldType) -> bool,
    problem: &str,
) -> Result<Option<Field>> {
    match schema.get_field(name) {
        Err(_) => Ok(None),
        Ok(field) => check_field_type(schema, name, field, wanted, problem).map(Some),
    }
}

pub(super) fn check_field_type(
    schema: &Schema,
    name: &str,
    field: Field,
    wanted: impl Fn(&FieldType) -> bool,
    problem: &str,
) -> Result<Field> {
    if wanted(schema.get_field_entry(field).field_type()) {
        Ok(field)
    } else {
        Err(Error::Schema {
            field: name.to_string(),
            problem: problem.to_string(),
        })
    }
}

/// A fast text field indexed whole (`STRING | FAST`): what ids and replaced ids need.
pub(super) fn is_raw_fast_text(field_type: &FieldType) -> bool {
    matches!(field_type, FieldType::Str(o)
        if o.is_fast() && o.get_indexing_options().is_some_and(|i| i.tokenizer() == "raw"))
}

/// The fingerprinted fields tantivy indexes with the scheme's analyzer: the writer hands it
/// their tokens (one analysis per document). None when the scheme's tokens cannot be replayed.
pub(super) fn replay_fields(schema: &Schema, scheme: &Scheme, text_fields: &[Field]) -> Vec<Field> {
    if !scheme.tokens_replayable() {
        return Vec::new();
    }
    text_fields
        .iter()
        .copied()
        .filter(|&f| match schema.get_field_entry(f).field_type() {
            FieldType::Str(o) => o
                .get_indexing_options()
                .is_some_and(|i| i.tokenizer() == SIMHASH_TOKENIZER_NAME),
            _ => false,
        })
        .collect()
}

/// The signature's fast fields (fingerprint and sketch words), and the first sketch field
/// (`fingerprint` when the rule has no sketch); the sketch fields must be consecutive.
pub(super) fn resolve_signature_fields(
    schema: &Schema,
    config: &NearDupConfig,
    fingerprint: Field,
) -> Result<(ResolvedSignatureFields, Field)> {
    let schema_err = |name: &str, problem: String| Error::Schema {
        field: name.to_string(),
        problem,
    };
    let signature_fields = config.signature_fields().resolve(schema).map_err(|e| {
        schema_err(
            &format!("{}_sketch0", config.fingerprint_field),
            format!(
                "{e}; an index made by an older version has no signature fields: \
                     rebuild it, with NearDupConfig::add_fields"
            ),
        )
    })?;
    let sketch = signature_fields.sketch_fields();
    let first_sketch = sketch.first().copied().unwrap_or(fingerprint);
    let consecutive = sketch
        .iter()
        .enumerate()
        .all(|(i, f)| f.field_id() == first_sketch.field_id() + i as u32);
    if !consecutive {
        return Err(schema_err(
            schema.get_field_name(first_sketch),
            "the sketch fields must be added together, in order (NearDupConfig::add_fields \
             does so)"
                .into(),
        ));
    }
    Ok((signature_fields, first_sketch))
}
