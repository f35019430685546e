//! [`NearDupConfig`]: which scheme, layout, match rule and field names an index uses, and the
//! fields it adds to a schema.

use super::record::{Record, RecordedSettings, RECORD_FORMAT};
use crate::component::reader::SignatureFields;
use crate::component::NearDupComponent;
use crate::error::{Error, Result};
use crate::fingerprint::Scheme;
use crate::layout::BlockLayout;
use crate::signature::{MatchRule, RuleSpec};
use std::sync::Arc;
use tantivy::schema::{Schema, SchemaBuilder, FAST, STORED, STRING, TEXT};
use tantivy::SegmentPlugin;

/// The field [`NearDupConfig::add_fields`] adds for each document's place in the order the
/// writer added documents (a `u64` fast field). Near-duplicates at the same distance are ranked
/// by it, so "the first" means the first added, whatever tantivy's threads and segments do.
/// Indexes made without it still work; their ties follow segment order.
pub const SEQUENCE_FIELD: &str = "simhash_seq";

/// The field [`NearDupConfig::add_fields`] adds for the ids a document replaced under
/// [`Policy::Replace`](crate::Policy::Replace) (directly, or through the documents it replaced), a multi-valued
/// `STRING | FAST` field: [`NearDupLookup::is_replaced`](crate::NearDupLookup::is_replaced) reads it, so a rerun over the same
/// input can skip the ids that were replaced. Indexes made without it do not record them.
pub const REPLACED_FIELD: &str = "simhash_replaced";

/// How an index uses fingerprints: the scheme, the layout and the field names.
///
/// Defaults: [`Scheme::default`], [`BlockLayout::default`] (4 x 16, k <= 3), fields `simhash`
/// (fingerprint; the sketch words are `simhash_sketch0`, `simhash_sketch1`, ...) and
/// `simhash_group` (group, for [`Policy::Tag`](crate::Policy::Tag)).
#[derive(Clone, Debug)]
pub struct NearDupConfig {
    pub(super) scheme: Scheme,
    pub(super) layout: BlockLayout,
    /// The match rule's parameters; its layout is kept equal to `layout`.
    pub(super) rule: RuleSpec,
    pub(super) id_field: String,
    pub(super) text_fields: Vec<String>,
    pub(super) fingerprint_field: String,
    pub(super) group_field: Option<String>,
}

impl NearDupConfig {
    /// A configuration whose documents are identified by `id_field` (a `STRING | FAST` text
    /// field) and fingerprinted from `text_fields` (their values joined by a line break, in the
    /// order given).
    pub fn new<S: Into<String>>(
        id_field: impl Into<String>,
        text_fields: impl IntoIterator<Item = S>,
    ) -> Self {
        NearDupConfig {
            scheme: Scheme::default(),
            layout: BlockLayout::default(),
            rule: RuleSpec::default(),
            id_field: id_field.into(),
            text_fields: text_fields.into_iter().map(Into::into).collect(),
            fingerprint_field: "simhash".into(),
            group_field: Some("simhash_group".into()),
        }
    }

    /// The tantivy segment plugin (the segment component, [`NearDupComponent`](crate::NearDupComponent)) an index of this configuration needs
    /// registered: pass it to `tantivy::IndexBuilder::register_plugin` when creating an index
    /// yourself, or to `Index::register_plugin` after `Index::open` before writing.
    /// [`NearDupIndex::create`](crate::NearDupIndex::create) and [`NearDupIndex::open`](crate::NearDupIndex::open) register it themselves. Cost: a copy
    /// of the rule. Errors: [`Error::InvalidConfig`] when the rule's parameters are unusable.
    pub fn segment_component(&self) -> Result<Arc<dyn SegmentPlugin>> {
        Ok(Arc::new(self.component()?))
    }

    fn component(&self) -> Result<NearDupComponent> {
        let names = self.signature_fields();
        Ok(NearDupComponent::new(
            self.rule()?,
            names.fingerprint,
            names.sketch,
        ))
    }

    /// Uses `scheme` to fingerprint text.
    pub fn with_scheme(mut self, scheme: Scheme) -> Self {
        self.scheme = scheme;
        self
    }

    /// Uses `layout` for the keys; its [`BlockLayout::max_distance`] is the default `k` of
    /// lookups and of [`DedupWriter`](crate::DedupWriter).
    pub fn with_layout(mut self, layout: BlockLayout) -> Self {
        self.rule.layout = layout;
        self.layout = layout;
        self
    }

    /// Uses `rule` to match documents (its layout becomes the layout). The writer stores every
    /// document's [`Signature`](crate::Signature) (fingerprint, sketch, the rule's keys), and
    /// [`NearDupLookup::lookup_signature`](crate::NearDupLookup::lookup_signature) finds
    /// the documents the rule matches.
    pub fn with_rule(mut self, rule: MatchRule) -> Self {
        self.layout = *rule.layout();
        self.rule = *rule.spec();
        self
    }

    /// The match rule. Errors with [`Error::InvalidConfig`] when its parameters are invalid
    /// (they come from [`MatchRule`], so only a hand-edited record can make them so).
    pub fn rule(&self) -> Result<MatchRule> {
        MatchRule::new(self.rule)
    }

    /// The names of the signature fields (fingerprint, sketch words).
    pub(crate) fn signature_fields(&self) -> SignatureFields {
        SignatureFields::new(&self.fingerprint_field, &MatchRule::default())
            .with_sketch_words(self.rule.minhash.sketch_words())
    }

    /// Renames the fingerprint field, and with it the sketch fields (`{name}_sketch0`, ...).
    pub fn with_fingerprint_field(mut self, name: impl Into<String>) -> Self {
        self.fingerprint_field = name.into();
        self
    }

    /// Renames the group field, or (with `None`) leaves it out;
    /// [`Policy::Tag`](crate::Policy::Tag) needs it.
    pub fn with_group_field(mut self, name: Option<&str>) -> Self {
        self.group_field = name.map(str::to_string);
        self
    }

    /// The scheme.
    pub fn scheme(&self) -> &Scheme {
        &self.scheme
    }

    /// The layout.
    pub fn layout(&self) -> &BlockLayout {
        &self.layout
    }

    /// The name of the id field.
    pub fn id_field(&self) -> &str {
        &self.id_field
    }

    /// The names of the text fields that are fingerprinted, in order.
    pub fn text_fields(&self) -> &[String] {
        &self.text_fields
    }

    /// The name of the fingerprint field.
    pub fn fingerprint_field(&self) -> &str {
        &self.fingerprint_field
    }

    /// The name of the group field, if there is one.
    pub fn group_field(&self) -> Option<&str> {
        self.group_field.as_deref()
    }

    /// Adds the signature (fingerprint and sketch words) and (if configured) group fields to
    /// `builder`. The id and text fields are the caller's: add them yourself (the id as
    /// `STRING | FAST`).
    ///
    /// The fingerprint and the sketch words are plain `u64` fields that tantivy neither
    /// indexes nor stores (the segment component keeps the signatures and the keys);
    /// the group a `STRING | FAST` text field (so `TermQuery` can fetch a whole group and its
    /// column collapses results).
    ///
    /// It also adds [`SEQUENCE_FIELD`] (the order documents were added in, to break ties between
    /// equally near near-duplicates by it) and [`REPLACED_FIELD`] (the ids each document
    /// replaced, so reruns can skip them): 8 bytes per document, and the replaced ids.
    pub fn add_fields(&self, builder: &mut SchemaBuilder) {
        self.signature_fields().add_to_schema(builder);
        if let Some(group) = &self.group_field {
            builder.add_text_field(group, STRING | FAST);
        }
        builder.add_u64_field(SEQUENCE_FIELD, FAST);
        builder.add_text_field(REPLACED_FIELD, STRING | FAST);
    }

    /// A schema with this configuration's fields: the id field as `STRING | FAST | STORED`, each
    /// text field as `TEXT | STORED` (tantivy's default analyzer for search; stored, so that
    /// [`NearDupIndex::explain_ids`](crate::NearDupIndex::explain_ids) and [`MirrorFinder::find_in_index`](crate::MirrorFinder::find_in_index)
    /// can read the text back), and the near-duplicate fields of [`add_fields`](Self::add_fields).
    /// [`NearDupIndex::create_in_ram`](crate::NearDupIndex::create_in_ram) and [`NearDupIndex::create_in_dir`](crate::NearDupIndex::create_in_dir) use it. For other
    /// options (more fields, another analyzer, text not stored), build the schema yourself and
    /// call `add_fields`.
    ///
    /// Errors: [`Error::Schema`] when two fields would have the same name (the id and a text
    /// field, a text field named twice, or a name this crate's fields use, such as `simhash`).
    /// Cost: a few allocations per field.
    ///
    /// ```
    /// use tantivy_simhash::NearDupConfig;
    ///
    /// let schema = NearDupConfig::new("url", ["title", "body"]).schema()?;
    /// assert!(schema.get_field("body").is_ok() && schema.get_field("simhash").is_ok());
    /// assert!(NearDupConfig::new("id", ["id"]).schema().is_err()); // a name twice
    /// assert!(NearDupConfig::new("id", ["simhash"]).schema().is_err()); // the fingerprint's
    /// # Ok::<(), tantivy_simhash::Error>(())
    /// ```
    pub fn schema(&self) -> Result<Schema> {
        let mut ours = Schema::builder();
        self.add_fields(&mut ours);
        let ours = ours.build();
        let mut names: Vec<&str> = Vec::with_capacity(1 + self.text_fields.len());
        for name in std::iter::once(&self.id_field).chain(&self.text_fields) {
            let taken = if names.contains(&name.as_str()) {
                Some("is named twice (the id field and the text fields need distinct names)")
            } else if ours.get_field(name).is_ok() {
                Some("is a name of this crate's fields; rename the field, or the crate's with NearDupConfig::with_fingerprint_field")
            } else {
                None
            };
            if let Some(problem) = taken {
                return Err(Error::Schema {
                    field: name.clone(),
                    problem: problem.into(),
                });
            }
            names.push(name);
        }
        let mut builder = Schema::builder();
        builder.add_text_field(&self.id_field, STRING | FAST | STORED);
        for name in &self.text_fields {
            builder.add_text_field(name, TEXT | STORED);
        }
        self.add_fields(&mut builder);
        Ok(builder.build())
    }

    pub(crate) fn record(&self) -> Record {
        Record {
            format: RECORD_FORMAT.to_string(),
            scheme: self.scheme.id().to_string(),
            layout: self.layout.id(),
            fingerprint_field: self.fingerprint_field.clone(),
            rule: self.rule().map(|r| r.id()).unwrap_or_default(),
            settings: Some(RecordedSettings {
                scheme: self.scheme.parameters(),
                layout: self.layout,
                id_field: self.id_field.clone(),
                text_fields: self.text_fields.clone(),
                group_field: self.group_field.clone(),
                rule: Some(self.rule),
            }),
            application: None,
        }
    }
}
