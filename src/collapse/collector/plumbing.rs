//! tantivy's side of [`NearDupCollapse`]: the `Collector` and `SegmentCollector`
//! implementations, which run the inner collector per segment and hand the ranked hits and
//! each segment's columns (or, before they are cached, its reader) to the merge ([`NearDupCollapse::fold_ranked`]).

use super::*;

/// The per-segment collector of [`NearDupCollapse`]: the inner one, plus what the merge needs.
/// Public only because tantivy's `Collector` trait names it (`Collector::Child`); nothing to
/// use directly.
#[doc(hidden)]
pub struct CollapseSegmentCollector<S> {
    inner: S,
    segment_ord: SegmentOrdinal,
    segment_id: SegmentId,
    source: SegmentSource,
    schema: Schema,
}

/// The per-segment fruit of [`NearDupCollapse`]: the inner fruit and the segment's columns.
/// Public only because tantivy's `Collector` trait names it (`SegmentCollector::Fruit`);
/// nothing to use directly.
#[doc(hidden)]
pub struct CollapseSegmentFruit<T> {
    inner: T,
    segment_ord: SegmentOrdinal,
    segment_id: SegmentId,
    source: SegmentSource,
    schema: Schema,
}

impl<S: SegmentCollector> SegmentCollector for CollapseSegmentCollector<S> {
    type Fruit = CollapseSegmentFruit<S::Fruit>;

    fn collect(&mut self, doc: DocId, score: Score) {
        self.inner.collect(doc, score);
    }

    fn collect_block(&mut self, docs: &[DocId]) {
        self.inner.collect_block(docs);
    }

    fn harvest(self) -> Self::Fruit {
        CollapseSegmentFruit {
            inner: self.inner.harvest(),
            segment_ord: self.segment_ord,
            segment_id: self.segment_id,
            source: self.source,
            schema: self.schema,
        }
    }
}

impl<C, K> Collector for NearDupCollapse<C>
where
    C: Collector<Fruit = Vec<(K, DocAddress)>>,
    K: RankKey,
{
    type Fruit = Collapsed<K>;
    type Child = CollapseSegmentCollector<C::Child>;

    fn check_schema(&self, schema: &Schema) -> tantivy::Result<()> {
        ColumnNames::new(self.fields, &self.settings, schema)
            .map_err(tantivy::TantivyError::from)?;
        self.inner.check_schema(schema)
    }

    fn for_segment(
        &self,
        segment_ord: SegmentOrdinal,
        segment: &SegmentReader,
    ) -> tantivy::Result<Self::Child> {
        Ok(CollapseSegmentCollector {
            inner: self.inner.for_segment(segment_ord, segment)?,
            segment_ord,
            segment_id: segment.segment_id(),
            source: SegmentSource::new(&self.columns, segment),
            schema: segment.schema().clone(),
        })
    }

    fn requires_scoring(&self) -> bool {
        self.inner.requires_scoring()
    }

    /// Delegated, so the inner collector's pruning (block-max WAND) is kept.
    fn collect_segment(
        &self,
        weight: &dyn Weight,
        segment_ord: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<CollapseSegmentFruit<<C::Child as SegmentCollector>::Fruit>> {
        Ok(CollapseSegmentFruit {
            inner: self.inner.collect_segment(weight, segment_ord, reader)?,
            segment_ord,
            segment_id: reader.segment_id(),
            source: SegmentSource::new(&self.columns, reader),
            schema: reader.schema().clone(),
        })
    }

    fn merge_fruits(
        &self,
        segment_fruits: Vec<CollapseSegmentFruit<<C::Child as SegmentCollector>::Fruit>>,
    ) -> tantivy::Result<Collapsed<K>> {
        let mut segments: Vec<Option<FruitSegment>> = Vec::new();
        let mut inner_fruits = Vec::with_capacity(segment_fruits.len());
        let mut names = None;
        for fruit in segment_fruits {
            if names.is_none() {
                names = Some(
                    ColumnNames::new(self.fields, &self.settings, &fruit.schema)
                        .map_err(tantivy::TantivyError::from)?,
                );
            }
            let ord = fruit.segment_ord as usize;
            if segments.len() <= ord {
                segments.resize_with(ord + 1, || None);
            }
            segments[ord] = Some(FruitSegment {
                id: fruit.segment_id,
                source: fruit.source,
            });
            inner_fruits.push(fruit.inner);
        }
        let ranked = self.inner.merge_fruits(inner_fruits)?;
        match names {
            Some(names) => self.fold_ranked(ranked, &segments, &names),
            // No segment: nothing was ranked, and nothing is read.
            None => Ok(self.fold_nothing()),
        }
        .map_err(tantivy::TantivyError::from)
    }
}
