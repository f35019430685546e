//! The segment component: every segment's signatures and key tables in a file of its own. The
//! user-facing account is on [`NearDupComponent`]; the file format is in `file`.

mod file;
pub(crate) mod reader;

pub(crate) use file::ComponentFile;

use crate::error::Error;
use crate::id_table::{IdTables, SegmentTables};
use crate::signature::MatchRule;
use file::SignatureSource;
use std::any::Any;
use std::sync::Arc;
use tantivy::index::SegmentComponent;
use tantivy::indexer::doc_id_mapping::MappingType;
use tantivy::indexer::DocIdMapping;
use tantivy::schema::document::{ErasedDocument, ErasedValue, ReferenceValueLeaf};
use tantivy::schema::Schema;
use tantivy::{
    DocId, PluginMergeContext, PluginWriter, PluginWriterContext, Segment, SegmentPlugin,
    SegmentReader, TantivyError,
};

/// The file extension of the component's per-segment file.
pub const COMPONENT_EXTENSION: &str = "neardup";

fn component() -> SegmentComponent {
    SegmentComponent::Custom(COMPONENT_EXTENSION.to_string())
}

/// The tantivy segment plugin that stores signatures and key tables: every segment's in a file
/// of its own. Make it with
/// [`NearDupConfig::segment_component`](crate::NearDupConfig::segment_component).
///
/// tantivy 0.27 lets custom data take part in a segment's life ([`SegmentPlugin`]: written
/// with the segment, rebuilt by merges, deleted with it). This type is that
/// plugin for this crate: per segment it writes one file (extension [`COMPONENT_EXTENSION`])
/// holding
///
/// - the signatures (fingerprint and sketch) as a dense array in doc id order: reading one is
///   an offset;
/// - the rule's keys as sorted tables, one per key position (Manku et al.'s permuted tables):
///   a lookup probes them in place, from the memory-mapped file, with no build step.
///
/// The signature reaches the component through the document: the fingerprint and sketch
/// fields ([`NearDupConfig::add_fields`](crate::NearDupConfig::add_fields)) are plain `u64`
/// fields that tantivy neither indexes nor stores; the component reads them in
/// `add_document`. Merges rebuild the file from the source segments' files and their alive
/// bitsets. Indexes sorted by a field (shuffled doc ids) are refused.
///
/// **What it costs users**: the plugin set of a tantivy index is fixed when the index is
/// created, and an index that holds the component opens for writing only where the component
/// is registered. [`NearDupIndex::create`](crate::NearDupIndex::create) and
/// [`open`](crate::NearDupIndex::open) register it, and `create` adds it to a new, empty
/// index made without it. Plain tantivy code that writes to such an index must register it
/// first; without it, `Index::writer` fails with `MissingPlugin("neardup")`. Reading (a
/// `Searcher`, queries, the doc store) needs no registration.
///
/// ```
/// # use tantivy::schema::{Schema, FAST, STRING, TEXT};
/// use tantivy::Index;
/// use tantivy_simhash::{NearDupConfig, NearDupIndex};
/// # let config = NearDupConfig::new("id", ["body"]);
/// # let mut builder = Schema::builder();
/// # builder.add_text_field("id", STRING | FAST);
/// # builder.add_text_field("body", TEXT);
/// # config.add_fields(&mut builder);
/// # let dir = tantivy::directory::RamDirectory::create();
/// # NearDupIndex::create(Index::create(dir.clone(), builder.build(), Default::default())?, config.clone())?;
/// // Opening an index with plain tantivy: register the component before writing.
/// let mut index = Index::open(dir)?;
/// index.register_plugin(config.segment_component()?);
/// let writer: tantivy::IndexWriter = index.writer(15_000_000)?;
/// # Ok::<(), tantivy_simhash::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct NearDupComponent {
    spec: Arc<ComponentSpec>,
}

#[derive(Debug)]
struct ComponentSpec {
    rule: MatchRule,
    fingerprint: String,
    sketch: Vec<String>,
}

impl NearDupComponent {
    /// The component of signatures under `rule`, read from the fields `fingerprint` and
    /// `sketch` (one per sketch word) of each document.
    pub(crate) fn new(rule: MatchRule, fingerprint: String, sketch: Vec<String>) -> Self {
        NearDupComponent {
            spec: Arc::new(ComponentSpec {
                rule,
                fingerprint,
                sketch,
            }),
        }
    }

    /// The match rule whose signatures and keys the component stores.
    pub fn rule(&self) -> &MatchRule {
        &self.spec.rule
    }
}

impl SegmentPlugin for NearDupComponent {
    fn extensions(&self) -> &[&str] {
        &[COMPONENT_EXTENSION]
    }

    fn create_writer(&self, ctx: &PluginWriterContext) -> tantivy::Result<Box<dyn PluginWriter>> {
        let schema = ctx.segment.schema();
        let spec = &self.spec;
        let words = 1 + spec.rule.minhash().sketch_words();
        // Word slot of every field id (u32::MAX: not a signature field).
        let mut slots: Vec<u32> = Vec::new();
        let mut place = |name: &str, slot: usize| -> tantivy::Result<()> {
            let field = schema.get_field(name).map_err(|_| {
                TantivyError::SchemaError(format!(
                    "the near-duplicate component reads the field `{name}`, which the schema \
                     lacks; add the fields with NearDupConfig::add_fields"
                ))
            })?;
            let id = field.field_id() as usize;
            if slots.len() <= id {
                slots.resize(id + 1, u32::MAX);
            }
            slots[id] = slot as u32;
            Ok(())
        };
        place(&spec.fingerprint, 0)?;
        for (i, name) in spec.sketch.iter().enumerate().take(words - 1) {
            place(name, i + 1)?;
        }
        Ok(Box::new(ComponentWriter {
            spec: spec.clone(),
            slots,
            words_per_doc: words,
            words: Vec::new(),
            present: Vec::new(),
            scratch: vec![0; words],
        }))
    }

    fn merge(&self, ctx: PluginMergeContext) -> tantivy::Result<()> {
        if ctx.doc_id_mapping.mapping_type() == MappingType::Shuffled {
            return Err(sorted_index_error());
        }
        let rule = &self.spec.rule;
        let mut sources = Vec::with_capacity(ctx.readers.len());
        for reader in ctx.readers {
            let file = open_segment_file(reader, rule).map_err(TantivyError::from)?;
            // A merge reads every signature anyway: check the whole file first, so damage
            // is reported rather than copied into the merged segment.
            file.verify_checksum().map_err(TantivyError::from)?;
            sources.push((reader, file));
        }
        let source = MergeSource { sources };
        let mut out = ctx.target_segment.open_write(component())?;
        file::write(rule, 1 + rule.minhash().sketch_words(), &source, &mut out)
            .map_err(TantivyError::from)?;
        tantivy::directory::TerminatingWrite::terminate(out)?;
        Ok(())
    }
}

fn sorted_index_error() -> TantivyError {
    TantivyError::InvalidArgument(
        "the near-duplicate component does not support indexes sorted by a field \
         (IndexSettings::sort_by_field): create the index without sorting"
            .into(),
    )
}

/// Opens `segment`'s component file, checking its structure against `rule`.
pub(crate) fn open_segment_file(
    segment: &SegmentReader,
    rule: &MatchRule,
) -> crate::Result<ComponentFile> {
    let name = format!(
        "{}.{COMPONENT_EXTENSION}",
        segment.segment_id().uuid_string()
    );
    let slice = segment.open_read(component()).map_err(|e| match e {
        tantivy::directory::error::OpenReadError::FileDoesNotExist(_) => Error::OldFormat(format!(
            "segment {} has no near-duplicate file ({name})",
            segment.segment_id().uuid_string()
        )),
        other => Error::Tantivy(other.into()),
    })?;
    let bytes = slice.read_bytes()?;
    ComponentFile::parse(bytes, name, rule, segment.max_doc())
}

/// The signatures of the merged segment: the source segments' live documents in order (what
/// tantivy's merger does for indexes that are not sorted).
struct MergeSource<'a> {
    sources: Vec<(&'a SegmentReader, ComponentFile)>,
}

impl SignatureSource for MergeSource<'_> {
    fn max_doc(&self) -> u32 {
        self.sources.iter().map(|(r, _)| r.num_docs()).sum()
    }

    fn for_each(&self, f: &mut dyn FnMut(DocId, Option<&[u64]>)) -> crate::Result<()> {
        let mut new_doc: DocId = 0;
        let mut words: Vec<u64> = Vec::new();
        for (reader, file) in &self.sources {
            for doc in reader.doc_ids_alive() {
                match file.words(doc) {
                    Some(read) => {
                        words.clear();
                        words.extend(read);
                        f(new_doc, Some(&words));
                    }
                    None => f(new_doc, None),
                }
                new_doc += 1;
            }
        }
        Ok(())
    }
}

/// Collects a new segment's signatures as tantivy indexes its documents.
struct ComponentWriter {
    spec: Arc<ComponentSpec>,
    slots: Vec<u32>,
    words_per_doc: usize,
    /// `words_per_doc` words per document, in doc id order.
    words: Vec<u64>,
    present: Vec<bool>,
    scratch: Vec<u64>,
}

impl PluginWriter for ComponentWriter {
    fn add_document(
        &mut self,
        doc_id: DocId,
        doc: &dyn ErasedDocument,
        _schema: &Schema,
    ) -> tantivy::Result<()> {
        // Documents arrive in doc id order; a gap (none is expected) is filled with documents
        // without a signature so offsets stay right.
        while (self.present.len() as u64) < u64::from(doc_id) {
            self.present.push(false);
            self.words
                .extend(std::iter::repeat_n(0, self.words_per_doc));
        }
        self.scratch.iter_mut().for_each(|w| *w = 0);
        let mut has_fingerprint = false;
        for (field, value) in doc.erased_fields() {
            let Some(&slot) = self.slots.get(field.field_id() as usize) else {
                continue;
            };
            if slot == u32::MAX {
                continue;
            }
            if let ErasedValue::Leaf(ReferenceValueLeaf::U64(v)) = value {
                if let Some(w) = self.scratch.get_mut(slot as usize) {
                    *w = v;
                }
                has_fingerprint |= slot == 0;
            }
        }
        if !has_fingerprint {
            // A document the writer left to sign on this thread (`Policy::Off`): tantivy has
            // cut its text by now, which signed it.
            if let (Some(signature), Some((first, sketch))) = (
                crate::replay::take_signature(),
                self.scratch.split_first_mut(),
            ) {
                *first = signature.fingerprint.0;
                for (w, &word) in sketch.iter_mut().zip(&signature.sketch.words) {
                    *w = word;
                }
                has_fingerprint = true;
            }
        }
        self.present.push(has_fingerprint);
        self.words.extend_from_slice(&self.scratch);
        Ok(())
    }

    fn serialize(
        self: Box<Self>,
        segment: &Segment,
        doc_id_map: Option<&DocIdMapping>,
    ) -> tantivy::Result<()> {
        if doc_id_map.is_some() {
            return Err(sorted_index_error());
        }
        let mut out = segment.open_write(component())?;
        file::write(&self.spec.rule, self.words_per_doc, &*self, &mut out)
            .map_err(TantivyError::from)?;
        tantivy::directory::TerminatingWrite::terminate(out)?;
        Ok(())
    }

    fn mem_usage(&self) -> usize {
        self.words.capacity() * 8 + self.present.capacity()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

impl SignatureSource for ComponentWriter {
    fn max_doc(&self) -> u32 {
        self.present.len() as u32
    }

    fn for_each(&self, f: &mut dyn FnMut(DocId, Option<&[u64]>)) -> crate::Result<()> {
        for (doc, (&present, words)) in self
            .present
            .iter()
            .zip(self.words.chunks_exact(self.words_per_doc))
            .enumerate()
        {
            f(doc as DocId, present.then_some(words));
        }
        Ok(())
    }
}

/// Keeps the component files of the segments of every live searcher of a reader: a
/// [`tantivy::Warmer`] that, for each new searcher, opens each segment's component file
/// (checking its structure, so a damaged file fails the reload instead of a later lookup) and
/// holds the segments' metadata until the searcher's generation is dropped.
///
/// Why: tantivy opens its own segment files when a searcher is made, so they stay readable
/// after a merge deletes them; this component's file is opened by each reader when needed,
/// and garbage collection after a merge keeps only the files of segments whose metadata is
/// alive. Each [`NearDupReader`] warms through it under a tag of its own.
///
/// It also owns the string tables of its searchers' segments ([`IdTables`]): each generation
/// holds its segments' tables, so every searcher and consumer of those segments shares them,
/// a reload keeps those of the segments it did not change, and a segment's are freed once no
/// live generation nor consumer holds it.
pub(crate) struct ComponentWarmer {
    rule: MatchRule,
    /// By reader (the tag of its [`ReaderWarmer`]) and generation: tantivy numbers generations per reader, and
    /// collects garbage per reader with only its own live generations.
    held: std::sync::Mutex<std::collections::HashMap<(u64, u64), HeldSegments>>,
    id_tables: IdTables,
}

/// How a warm fails when a segment was merged away, and its component file collected, between
/// tantivy opening a new searcher's segments and the warmer opening their component files:
/// that searcher is stale, and reloading again makes a fresh one ([`reload_fresh`]).
const STALE_SEARCHER: &str = "a segment of the new searcher was merged away while it was opened";

/// Whether `segment` is no longer among the index's committed segments.
fn merged_away(index: &tantivy::Index, segment: &SegmentReader) -> tantivy::Result<bool> {
    let id = segment.segment_id();
    Ok(!index
        .searchable_segment_metas()?
        .iter()
        .any(|m| m.id() == id))
}

/// Runs `open` (a reader's construction or reload) again while it fails only because a merge
/// raced it (see [`STALE_SEARCHER`]); a few attempts suffice, since each race needs a merge to
/// end inside the few microseconds between tantivy opening the segments and warming them.
pub(crate) fn reload_fresh<T>(mut open: impl FnMut() -> tantivy::Result<T>) -> tantivy::Result<T> {
    for _ in 0..16 {
        match open() {
            Err(TantivyError::InternalError(msg)) if msg.starts_with(STALE_SEARCHER) => continue,
            done => return done,
        }
    }
    open()
}

/// What one searcher generation holds.
struct HeldSegments {
    /// The segments' metadata, in the searcher's order: tracked, it keeps their files from
    /// garbage collection; its ids say which searcher these files belong to.
    metas: Vec<tantivy::index::SegmentMeta>,
    files: Vec<ComponentFile>,
    _tables: Vec<Arc<SegmentTables>>,
}

impl ComponentWarmer {
    pub(crate) fn new(rule: MatchRule) -> Self {
        ComponentWarmer {
            rule,
            held: Default::default(),
            id_tables: IdTables::default(),
        }
    }

    /// The string tables of this warmer's searchers (shared: a clone reads the same tables).
    pub(crate) fn id_tables(&self) -> &IdTables {
        &self.id_tables
    }

    /// The component files this warmer opened for `searcher`'s segments (in segment order), if
    /// it warmed that searcher: a reader made from it takes them instead of opening them again.
    pub(crate) fn files_of(&self, searcher: &tantivy::Searcher) -> Option<Vec<ComponentFile>> {
        let held = crate::sync::lock(&self.held);
        let generation = searcher.generation().generation_id();
        // Several readers may have a generation of this number: the one of these segments.
        let found = held.iter().find(|((_, g), h)| {
            *g == generation
                && h.metas.len() == searcher.segment_readers().len()
                && h.metas
                    .iter()
                    .zip(searcher.segment_readers())
                    .all(|(meta, segment)| meta.id() == segment.segment_id())
        })?;
        Some(found.1.files.clone())
    }

    /// [`tantivy::Warmer::warm`] for the reader tagged `tag`.
    fn warm_as(&self, tag: u64, searcher: &tantivy::Searcher) -> tantivy::Result<()> {
        let index = searcher.index();
        // A tracked meta per segment keeps its files from garbage collection, whether or not the
        // segment is still part of the index (a merge may have replaced it already).
        let metas: Vec<_> = searcher
            .segment_readers()
            .iter()
            .map(|segment| index.new_segment_meta(segment.segment_id(), segment.max_doc()))
            .collect();
        let mut files = Vec::with_capacity(metas.len());
        for segment in searcher.segment_readers() {
            match open_segment_file(segment, &self.rule) {
                Ok(file) => files.push(file),
                Err(Error::OldFormat(msg)) if merged_away(index, segment)? => {
                    return Err(TantivyError::InternalError(format!(
                        "{STALE_SEARCHER} ({msg})"
                    )))
                }
                Err(other) => return Err(other.into()),
            }
        }
        let tables = searcher
            .segment_readers()
            .iter()
            .map(|segment| self.id_tables.segment(segment.segment_id()))
            .collect();
        crate::sync::lock(&self.held).insert(
            (tag, searcher.generation().generation_id()),
            HeldSegments {
                metas,
                files,
                _tables: tables,
            },
        );
        Ok(())
    }

    /// [`tantivy::Warmer::garbage_collect`] for the reader tagged `tag`: only its entries.
    fn collect_as(&self, tag: u64, live_generations: &[&tantivy::SearcherGeneration]) {
        let live: std::collections::HashSet<u64> =
            live_generations.iter().map(|g| g.generation_id()).collect();
        crate::sync::lock(&self.held).retain(|(t, id), _| *t != tag || live.contains(id));
    }
}

/// The warmer of one [`NearDupReader`] (each public one, [`NearDupIndex::searcher`]'s, each
/// writer's): its entries in the shared [`ComponentWarmer`] under a tag of its own, so that
/// another reader's garbage collection (which knows only that reader's live generations, with
/// numbers that may equal this reader's) never releases them, and dropped with the reader
/// ([`NearDupReader`]), which releases them.
///
/// [`NearDupIndex::searcher`]: crate::NearDupIndex::searcher
pub(crate) struct ReaderWarmer {
    shared: Arc<ComponentWarmer>,
    tag: u64,
}

impl ReaderWarmer {
    pub(crate) fn new(shared: Arc<ComponentWarmer>) -> Arc<ReaderWarmer> {
        static NEXT_TAG: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let tag = NEXT_TAG.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Arc::new(ReaderWarmer { shared, tag })
    }
}

impl tantivy::Warmer for ReaderWarmer {
    fn warm(&self, searcher: &tantivy::Searcher) -> tantivy::Result<()> {
        self.shared.warm_as(self.tag, searcher)
    }

    fn garbage_collect(&self, live_generations: &[&tantivy::SearcherGeneration]) {
        self.shared.collect_as(self.tag, live_generations);
    }
}

impl Drop for ReaderWarmer {
    fn drop(&mut self) {
        crate::sync::lock(&self.shared.held).retain(|(t, _), _| *t != self.tag);
    }
}

/// A tantivy [`IndexReader`](tantivy::IndexReader) of a [`NearDupIndex`] with a warmer that
/// only it uses: each searcher it makes keeps its segments' component files readable while the
/// searcher lives, even after a merge deleted those segments (without it, a lookup over such a
/// searcher fails with [`Error::OldFormat`]'s "has no near-duplicate file"). Made by
/// [`NearDupIndex::reader`].
///
/// Why a type of its own rather than tantivy's reader builder with a warmer attached: tantivy
/// numbers each reader's searcher generations on its own and collects a warmer's garbage with
/// only the calling reader's live generations, so one warmer shared by two readers would let one
/// reader's reload release the files of the other's searchers. Each `NearDupReader` has its own
/// warmer, dropped with it (tantivy holds warmers weakly, so the reader is dropped first).
///
/// ```
/// # use tantivy::{doc, ReloadPolicy};
/// # use tantivy_simhash::{NearDupConfig, NearDupIndex, Policy};
/// # let index = NearDupIndex::create_in_ram(NearDupConfig::new("id", ["body"]))?;
/// # let (id, body) = (index.field("id")?, index.field("body")?);
/// # let mut writer = index.writer(15_000_000, Policy::Off)?;
/// # writer.add_document(doc!(id => "a", body => "the quick brown fox jumps over the lazy dog"))?;
/// # writer.commit()?;
/// let reader = index.reader(ReloadPolicy::Manual)?;
/// let searcher = reader.searcher(); // a tantivy Searcher: lookups, collapses and queries take it
/// assert_eq!(searcher.num_docs(), 1);
/// # Ok::<(), tantivy_simhash::Error>(())
/// ```
///
/// Cost: per reload, opening each new segment's component file (a few microseconds each: the
/// structure is checked, not the checksum). Errors: those of tantivy's reader, and a reload
/// fails when a component file is missing or damaged ([`Error::DamagedFile`]).
///
/// [`NearDupIndex`]: crate::NearDupIndex
/// [`NearDupIndex::reader`]: crate::NearDupIndex::reader
/// [`Error::OldFormat`]: crate::Error::OldFormat
/// [`Error::DamagedFile`]: crate::Error::DamagedFile
pub struct NearDupReader {
    reader: tantivy::IndexReader,
    warmer: Arc<ReaderWarmer>,
}

impl NearDupReader {
    /// A reader of `index` made by `builder` (with no warmer yet) with a warmer of its own.
    pub(crate) fn open(
        shared: &Arc<ComponentWarmer>,
        builder: impl Fn() -> tantivy::IndexReaderBuilder,
    ) -> tantivy::Result<NearDupReader> {
        let warmer = ReaderWarmer::new(Arc::clone(shared));
        let weak: std::sync::Weak<dyn tantivy::Warmer> = {
            let strong: Arc<dyn tantivy::Warmer> = warmer.clone();
            Arc::downgrade(&strong)
        };
        let reader = reload_fresh(|| builder().warmers(vec![weak.clone()]).try_into())?;
        Ok(NearDupReader { reader, warmer })
    }

    /// A searcher over the commit this reader was last (re)loaded at: cheap (an `Arc` clone).
    pub fn searcher(&self) -> tantivy::Searcher {
        self.reader.searcher()
    }

    /// Reloads to the last commit (a reader of [`ReloadPolicy::Manual`] sees new commits only
    /// after this). Retries a reload that a merge raced. Errors: [`Error::Tantivy`] when
    /// tantivy's reload fails or a new segment's component file cannot be opened.
    ///
    /// [`ReloadPolicy::Manual`]: tantivy::ReloadPolicy::Manual
    /// [`Error::Tantivy`]: crate::Error::Tantivy
    pub fn reload(&self) -> crate::error::Result<()> {
        Ok(reload_fresh(|| self.reader.reload())?)
    }

    /// tantivy's reader itself, for what this type does not forward.
    pub fn index_reader(&self) -> &tantivy::IndexReader {
        &self.reader
    }

    /// The warmer's garbage collection now (tantivy runs it on a thread every second).
    #[cfg(test)]
    pub(crate) fn collect_garbage(&self, live: &[&tantivy::SearcherGeneration]) {
        tantivy::Warmer::garbage_collect(&*self.warmer, live);
    }
}

impl std::fmt::Debug for NearDupReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NearDupReader")
            .field("tag", &self.warmer.tag)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::tests::signature_index;
    use crate::signature::{Signature, Sketch};
    use crate::Fingerprint;

    fn signatures(rule: &MatchRule, n: u64) -> Vec<Signature> {
        (0..n)
            .map(|i| Signature {
                fingerprint: Fingerprint(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
                sketch: Sketch {
                    words: vec![i; rule.minhash().sketch_words()],
                },
            })
            .collect()
    }

    /// Merges every segment of `index` and collects the files no meta holds.
    fn merge_all_and_collect(index: &tantivy::Index) {
        let ids = index.searchable_segment_ids().unwrap();
        assert!(ids.len() >= 4);
        let mut writer: tantivy::IndexWriter =
            index.writer_with_num_threads(1, 20_000_000).unwrap();
        writer.merge(&ids).wait().unwrap();
        writer.garbage_collect_files().wait().unwrap();
    }

    /// The race behind a once-seen "has no near-duplicate file": a searcher opened before a
    /// merge whose source segments' files were collected before the warmer ran. The warm must
    /// fail as stale (so `reload_fresh` retries), never as an old-format index.
    #[test]
    fn a_merge_racing_the_warmer_makes_a_stale_searcher() {
        let rule = MatchRule::default();
        let (index, _fields, _) = signature_index(&rule, &signatures(&rule, 40), 10, |_| false);
        // tantivy's plain reader holds no meta of its segments: as if not yet warmed.
        let stale = index.reader().unwrap().searcher();
        merge_all_and_collect(&index);
        let warmer = ComponentWarmer::new(rule);
        let err = warmer.warm_as(0, &stale).unwrap_err();
        assert!(
            matches!(&err, TantivyError::InternalError(m) if m.starts_with(STALE_SEARCHER)),
            "{err}"
        );
        warmer
            .warm_as(0, &index.reader().unwrap().searcher())
            .unwrap();
    }

    /// A warmed searcher keeps the component files of segments merged away after it was made.
    #[test]
    fn a_warmed_searcher_keeps_the_files_of_merged_segments() {
        let rule = MatchRule::default();
        let sigs = signatures(&rule, 40);
        let (index, _fields, _) = signature_index(&rule, &sigs, 10, |_| false);
        let warmer = ComponentWarmer::new(rule);
        let warmed = index.reader().unwrap().searcher();
        warmer.warm_as(0, &warmed).unwrap();
        merge_all_and_collect(&index);
        let mut seen = 0;
        for segment in warmed.segment_readers() {
            let file = open_segment_file(segment, &rule).unwrap();
            for doc in 0..segment.max_doc() {
                let fp = file.fingerprint(doc).unwrap();
                assert!(sigs.iter().any(|s| s.fingerprint == fp));
                seen += 1;
            }
        }
        assert_eq!(seen, sigs.len());
    }

    #[test]
    fn reload_fresh_retries_only_a_stale_searcher() {
        let mut calls = 0;
        let got = reload_fresh(|| {
            calls += 1;
            if calls < 3 {
                Err(TantivyError::InternalError(format!("{STALE_SEARCHER} (x)")))
            } else {
                Ok(calls)
            }
        });
        assert_eq!(got.unwrap(), 3);
        let mut calls = 0;
        let got: tantivy::Result<()> = reload_fresh(|| {
            calls += 1;
            Err(TantivyError::InternalError("another failure".into()))
        });
        assert!(got.is_err());
        assert_eq!(calls, 1);
    }
}
