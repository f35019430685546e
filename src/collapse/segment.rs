//! The columns a collapse reads from one segment, opened once and kept across the collapse's
//! searches.
//!
//! Opening a fast column by name reads the segment's column directory (a few microseconds),
//! and the fold reads 33 of them per segment (the fingerprint and 32 sketch words) plus the id
//! column: opened per search, that was most of a collapse's own cost on 16 segments
//! (docs/PERFORMANCE.md). A [`ColumnCache`] belongs to one [`NearDupCollapse`] (shared by the
//! re-searches of its widening) and keeps each segment's opened columns, and its entry in the
//! collapse's id tables ([`crate::id_table`]; the index's, for the CLI's and Python's
//! searches), so that a segment whose ids the collapse reads often gets its table and an id
//! costs a column read.
//!
//! [`NearDupCollapse`]: super::NearDupCollapse

use super::field::{resolve, GroupBy, Purpose, SegmentValues, ValueKind};
use super::result::Settings;
use crate::columns::field_name;
use crate::component::reader::SegmentSignatures;
use crate::error::Result;
use crate::id_table::{read_segment_strs, IdTables, SegmentIds, SegmentTables};
use crate::schema::NearDupFields;
use crate::signature::MatchRule;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tantivy::columnar::StrColumn;
use tantivy::fastfield::FastFieldReaders;
use tantivy::index::SegmentId;
use tantivy::schema::Schema;
use tantivy::DocId;
use tantivy::SegmentReader;

/// The names of the columns a collapse reads, from the searched index's schema (fast fields are
/// opened by name).
pub(super) struct ColumnNames {
    /// The index's match rule (the signatures are read from the segment component).
    pub(super) rule: MatchRule,
    pub(super) id: String,
    /// The field hits are grouped by (the group field by tag, the user's field by field) and
    /// its kind; `None` by the rule.
    pub(super) group_by: Option<(String, ValueKind)>,
    /// The leader-order field and its kind.
    pub(super) leader_order: Option<(String, ValueKind)>,
}

impl ColumnNames {
    /// The names, with the user's fields checked against `schema` ([`Error::Schema`] for a
    /// field that is missing, not fast, or of a type that cannot be read so).
    pub(super) fn new(
        fields: NearDupFields,
        settings: &Settings,
        schema: &Schema,
    ) -> Result<ColumnNames> {
        let group_by = match &settings.group_by {
            GroupBy::Rule => None,
            GroupBy::Tag => {
                let group = fields.require_group("collapsing by tag reads")?;
                Some((field_name(schema, group)?.to_string(), ValueKind::Str))
            }
            GroupBy::Field(name) => Some((name.clone(), resolve(schema, name, Purpose::Group)?)),
        };
        let leader_order = match &settings.leader_order {
            None => None,
            Some(l) => Some((
                l.field.clone(),
                resolve(schema, &l.field, Purpose::LeaderOrder)?,
            )),
        };
        Ok(ColumnNames {
            rule: *fields.rule(),
            id: field_name(schema, fields.id)?.to_string(),
            group_by,
            leader_order,
        })
    }
}

/// A segment's columns stay cached until this many searches of the collapse (one per shard
/// and re-search) have not read them: a segment merged away, or of a searcher no longer
/// used, is released after that many searches (or with the collapse).
const RELEASE_AFTER_SEARCHES: u64 = 64;

/// A string column and the segment's entry in the collapse's tables of that column.
pub(super) struct StrValues {
    column: Option<StrColumn>,
    entry: Arc<SegmentIds>,
    /// Keeps the segment's entry in the tables while the collapse caches this column.
    _segment: Arc<SegmentTables>,
}

impl StrValues {
    fn open(
        ff: &FastFieldReaders,
        tables: &IdTables,
        segment: SegmentId,
        field: &str,
    ) -> Result<StrValues> {
        let (held, entry) = tables.column(segment, field);
        Ok(StrValues {
            column: ff.str(field)?,
            entry,
            _segment: held,
        })
    }

    /// The first string of each of `docs`, in their order (`None` without a value). Cost: a
    /// column read each once the segment's table is built, else one pass over the dictionary
    /// blocks they fall in.
    pub(super) fn read(&self, docs: &[DocId]) -> Result<Vec<Option<String>>> {
        match &self.column {
            Some(column) => read_segment_strs(column, &self.entry, docs),
            None => Ok(vec![None; docs.len()]),
        }
    }
}

/// What a collapse groups by in one segment: a string column (read through the collapse's
/// tables) or a numeric one.
pub(super) enum GroupValues {
    Str(StrValues),
    Numeric(SegmentValues, ValueKind),
}

/// The columns of one segment a collapse with given settings reads.
pub(super) struct SegmentColumns {
    pub(super) signatures: SegmentSignatures,
    pub(super) ids: StrValues,
    /// By tag or field: the grouping column.
    pub(super) group: Option<GroupValues>,
    /// With a leader order: its column.
    pub(super) leader_order: Option<SegmentValues>,
}

impl SegmentColumns {
    /// Opens the columns `names` names in a segment. Cost: one column open each (19 at most).
    fn open(
        reader: &SegmentReader,
        tables: &IdTables,
        segment: SegmentId,
        names: &ColumnNames,
    ) -> Result<Self> {
        let ff = reader.fast_fields();
        let group = match &names.group_by {
            None => None,
            Some((field, ValueKind::Str)) => Some(GroupValues::Str(StrValues::open(
                ff, tables, segment, field,
            )?)),
            Some((field, kind)) => Some(GroupValues::Numeric(
                SegmentValues::open(ff, field, *kind)?,
                *kind,
            )),
        };
        Ok(SegmentColumns {
            signatures: SegmentSignatures::open(reader, &names.rule)?,
            ids: StrValues::open(ff, tables, segment, &names.id)?,
            group,
            leader_order: match &names.leader_order {
                Some((field, kind)) => Some(SegmentValues::open(ff, field, *kind)?),
                None => None,
            },
        })
    }
}

/// The opened columns of the segments one collapse has searched. See the [module docs](self).
#[derive(Default)]
pub(super) struct ColumnCache {
    state: Mutex<CacheState>,
    /// The tables string columns are read through (the collapse's own unless it shares its
    /// index's).
    tables: IdTables,
}

#[derive(Default)]
struct CacheState {
    /// Searches so far (a clock for releasing segments).
    searches: u64,
    /// Each segment's columns and the search that last read them.
    segments: HashMap<SegmentId, (u64, Arc<SegmentColumns>)>,
}

impl ColumnCache {
    /// An empty cache reading string columns through `tables`.
    pub(super) fn reading_through(tables: IdTables) -> ColumnCache {
        ColumnCache {
            state: Mutex::default(),
            tables,
        }
    }

    /// Starts a search: returns its number, and releases the segments no search read for
    /// [`RELEASE_AFTER_SEARCHES`].
    pub(super) fn start_search(&self) -> u64 {
        let mut state = crate::sync::lock(&self.state);
        state.searches += 1;
        let now = state.searches;
        state
            .segments
            .retain(|_, (last, _)| now - *last <= RELEASE_AFTER_SEARCHES);
        now
    }

    /// The columns of `segment` for search `search`, opened on first use. Cost: a hash look-up
    /// under a lock; the first time, the opens of [`SegmentColumns::open`] (outside the lock).
    pub(super) fn segment(
        &self,
        search: u64,
        segment: SegmentId,
        reader: &SegmentReader,
        names: &ColumnNames,
    ) -> Result<Arc<SegmentColumns>> {
        if let Some((last, columns)) = crate::sync::lock(&self.state).segments.get_mut(&segment) {
            *last = search.max(*last);
            return Ok(columns.clone());
        }
        let opened = Arc::new(SegmentColumns::open(reader, &self.tables, segment, names)?);
        Ok(self.keep(search, segment, &opened))
    }

    /// The cached columns of `segment`, if any. Cost: a hash look-up under a lock.
    pub(super) fn peek(&self, segment: SegmentId) -> Option<Arc<SegmentColumns>> {
        crate::sync::lock(&self.state)
            .segments
            .get(&segment)
            .map(|(_, columns)| columns.clone())
    }

    /// Marks `columns` (taken by [`peek`](Self::peek) when the segment was collected, or just
    /// opened) as read by search `search`, caching them if the cache does not hold the
    /// segment's; returns the cached ones.
    pub(super) fn keep(
        &self,
        search: u64,
        segment: SegmentId,
        columns: &Arc<SegmentColumns>,
    ) -> Arc<SegmentColumns> {
        let mut state = crate::sync::lock(&self.state);
        let (last, kept) = state
            .segments
            .entry(segment)
            .or_insert_with(|| (search, columns.clone()));
        *last = search.max(*last);
        kept.clone()
    }

    /// How many segments are cached (for tests).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        crate::sync::lock(&self.state).segments.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NearDupCollapse, NearDupConfig, NearDupIndex, Policy};
    use tantivy::schema::{Schema, FAST, STRING, TEXT};
    use tantivy::{doc, Index};

    #[test]
    fn a_segment_is_released_after_searches_that_do_not_read_it() -> Result<()> {
        let config = NearDupConfig::new("id", ["body"]);
        let mut builder = Schema::builder();
        let id = builder.add_text_field("id", STRING | FAST);
        let body = builder.add_text_field("body", TEXT);
        config.add_fields(&mut builder);
        let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config)?;
        let mut writer = index.writer(20_000_000, Policy::Off)?;
        writer.add_document(doc!(id => "a", body => "some text to fingerprint"))?;
        writer.commit()?;
        let searcher = index.searcher()?;
        let segment = searcher.segment_reader(0);
        let collapse = NearDupCollapse::by_score(index.fields(), 10);
        let names = ColumnNames::new(collapse.fields, &collapse.settings, searcher.schema())?;
        let cache = ColumnCache::default();
        let read = |search| cache.segment(search, segment.segment_id(), segment, &names);

        let first = cache.start_search();
        let opened = read(first)?;
        assert_eq!(opened.ids.read(&[0])?, vec![Some("a".to_string())]);
        // Read again 10 searches later: the same columns, kept from then on.
        for _ in 0..10 {
            cache.start_search();
        }
        let again = read(first + 10)?;
        assert!(Arc::ptr_eq(&opened, &again));
        for _ in 0..RELEASE_AFTER_SEARCHES - 10 {
            cache.start_search();
        }
        assert_eq!(cache.len(), 1, "released before its time");
        for _ in 0..11 {
            cache.start_search();
        }
        assert_eq!(
            cache.len(),
            0,
            "kept past {RELEASE_AFTER_SEARCHES} searches unread"
        );
        Ok(())
    }
}
