//! [`DedupWriter::retag`]: storing batch cluster ids in the group field, through the writer.

use super::DedupWriter;
use crate::batch::Clusters;
use crate::columns::{field_name, read_strs};
use crate::component::reader::SegmentSignatures;
use crate::error::{Error, Result};
use crate::lookup::NearDupLookup;
use tantivy::columnar::StrColumn;
use tantivy::schema::{Field, Value};
use tantivy::{DocAddress, Searcher, TantivyDocument, Term};

/// Documents whose current group values (and ids) are read in one batch: a small read
/// decompresses a dictionary block per value.
const READ_BATCH: usize = 1 << 20;

/// What [`DedupWriter::retag`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupsWritten {
    /// Documents deleted and re-added with their cluster id in the group field.
    pub rewritten: usize,
    /// Documents whose group field already held the right value.
    pub unchanged: usize,
}

/// A document to re-add: its id, where it is, the group it must get.
struct Retag {
    id: String,
    address: DocAddress,
    group: String,
}

impl DedupWriter {
    /// Stores each document's cluster id in the group field, so that collapsing on the group
    /// field afterwards is exact: members of a cluster get the cluster id; a document alone
    /// keeps no group or gets its own id (what [`Policy::Tag`](crate::Policy::Tag) would give
    /// it). tantivy cannot update a document in place, so each document whose group field is
    /// wrong is deleted (by id) and re-added: `documents(id, address)` supplies its fields
    /// (addresses of [`Clusters::searcher`]). The signature, sequence and replaced-ids fields
    /// are re-added from the index as they were (the supplied values, if any, are ignored), so
    /// a re-added document keeps its place in the input order and the ids it replaced.
    /// [`retag_from_store`](Self::retag_from_store) reads the documents from the doc store.
    ///
    /// Call [`commit`](Self::commit) afterwards. Limits: ids must be unique (a delete by id
    /// removes every document with that id); documents added after the clusters were computed
    /// are not considered, and one with the id of a rewritten document would be deleted, so
    /// run it on a quiescent index; the re-added documents bypass the policy (they are already
    /// in the index) and, until the commit, the writer's own near-duplicate check does not see
    /// them.
    ///
    /// Cost: one batched read of the group column for every live document with a signature,
    /// then per rewritten document one `documents` call, a delete and an add.
    ///
    /// Errors: [`Error::Schema`] without a group field; [`Error::Document`] when a document has
    /// no id or `documents` returns one with another id; errors of `documents` and of the
    /// writer. Documents rewritten before an error stay rewritten (uncommitted:
    /// [`rollback`](Self::rollback) drops them).
    ///
    /// ```
    /// # use tantivy::doc;
    /// use tantivy_simhash::{ClusterMode, NearDupGraph};
    /// use tantivy_simhash::{Fingerprint, NearDupConfig, NearDupIndex, Policy};
    /// # let index = NearDupIndex::create_in_ram(NearDupConfig::new("id", ["body"]))?;
    /// # let (id, body) = (index.field("id")?, index.field("body")?);
    /// let mut writer = index.writer(50_000_000, Policy::Off)?;
    /// // "b" is within 3 of "a", "c" within 3 of "b" but 5 from "a": one component by chaining
    /// // (by leader, the default, "c" would stand alone).
    /// for (name, fp) in [("a", 0b0u64), ("b", 0b111), ("c", 0b1_1111), ("d", !0)] {
    ///     writer.add_document_with_fingerprint(doc!(id => name, body => "text"), Fingerprint(fp))?;
    /// }
    /// writer.commit()?;
    ///
    /// let graph = NearDupGraph::new(index.fields(), &index.searcher()?)?;
    /// let clusters = graph.clusters_by(ClusterMode::Components)?;
    /// let written = writer.retag(&clusters, |id_value, _address| {
    ///     Ok(doc!(id => id_value, body => "text")) // from the caller's own store
    /// })?;
    /// assert_eq!(written.rewritten, 3);
    /// writer.commit()?;
    ///
    /// let searcher = index.lookups()?;
    /// let hits = searcher.lookup_id("c")?; // "c" itself and "b"; "a" is 5 away
    /// assert_eq!(hits.len(), 2);
    /// for hit in hits {
    ///     let group = searcher.group_of(hit.address)?;
    ///     assert_eq!(group.as_deref(), Some("a")); // collapse on the group: one result
    /// }
    /// # Ok::<(), tantivy_simhash::Error>(())
    /// ```
    pub fn retag(
        &self,
        clusters: &Clusters,
        mut documents: impl FnMut(&str, DocAddress) -> Result<TantivyDocument>,
    ) -> Result<GroupsWritten> {
        let group_field = self.group_field()?;
        let searcher = clusters.searcher();
        let groups = str_columns(searcher, group_field)?;
        let mut written = GroupsWritten::default();
        let mut todo = self.clustered_to_retag(clusters, &groups, &mut written)?;
        todo.extend(self.alone_to_retag(clusters, &groups, &mut written)?);
        todo.sort_by(|a, b| a.id.cmp(&b.id).then(a.address.cmp(&b.address)));
        let snapshot = NearDupLookup::new(self.index.fields(), searcher)?;
        let reserved = self.reserved_fields(group_field);
        let id_field = self.index.fields.id;
        for same_id in todo.chunk_by(|a, b| a.id == b.id) {
            // One delete per id, before its re-adds (a delete applies to earlier documents).
            self.delete_term(Term::from_field_text(id_field, &same_id[0].id));
            for retag in same_id {
                let source = documents(&retag.id, retag.address)?;
                let doc = self.retagged_document(&snapshot, &reserved, source, retag)?;
                self.index_writer().add_document(doc.into())?;
                written.rewritten += 1;
            }
        }
        Ok(written)
    }

    /// [`retag`](Self::retag) with the documents read back from tantivy's doc store. Only
    /// stored fields survive a re-add, so every field of the schema other than the signature,
    /// group, sequence and replaced-ids fields must be `STORED`; otherwise this errors
    /// ([`Error::Schema`]) before writing anything: supply the documents with `retag`.
    /// Cost: [`retag`](Self::retag)'s, plus one doc store read (a block decompression) per
    /// rewritten document. Errors: [`retag`](Self::retag)'s, the schema check above, and
    /// tantivy's doc store errors (I/O, a corrupt block).
    pub fn retag_from_store(&self, clusters: &Clusters) -> Result<GroupsWritten> {
        let group_field = self.group_field()?;
        let reserved = self.reserved_fields(group_field);
        let searcher = clusters.searcher();
        for (field, entry) in searcher.schema().fields() {
            if !reserved.contains(&field) && !entry.is_stored() {
                return Err(Error::Schema {
                    field: entry.name().to_string(),
                    problem: "not STORED, so re-adding documents from the doc store would lose \
                              it; store it, or supply the documents with DedupWriter::retag"
                        .into(),
                });
            }
        }
        self.retag(clusters, |_, address| {
            Ok(searcher.doc::<TantivyDocument>(address)?)
        })
    }

    fn group_field(&self) -> Result<Field> {
        self.index.fields.require_group("cluster ids are stored in")
    }

    /// The fields the index fills itself: never copied from a supplied document.
    fn reserved_fields(&self, group_field: Field) -> Vec<Field> {
        let fields = self.index.fields;
        [fields.fingerprint, group_field]
            .into_iter()
            .chain(fields.sequence)
            .chain(fields.replaced)
            .chain(
                self.index
                    .signature_fields()
                    .sketch_fields()
                    .iter()
                    .copied(),
            )
            .collect()
    }

    /// Cluster members whose group value is not their cluster's id.
    fn clustered_to_retag(
        &self,
        clusters: &Clusters,
        groups: &[Option<StrColumn>],
        written: &mut GroupsWritten,
    ) -> Result<Vec<Retag>> {
        let members: Vec<(&str, &crate::batch::ClusterMember)> = clusters
            .iter()
            .flat_map(|c| c.members.iter().map(move |m| (c.id.as_str(), m)))
            .collect();
        let mut todo = Vec::new();
        for chunk in members.chunks(READ_BATCH) {
            let addresses: Vec<DocAddress> = chunk.iter().map(|(_, m)| m.address).collect();
            let current = read_strs(groups, &addresses)?;
            for (&(cluster, m), cur) in chunk.iter().zip(current) {
                if cur.as_deref() == Some(cluster) {
                    written.unchanged += 1;
                } else {
                    todo.push(Retag {
                        id: m.id.clone(),
                        address: m.address,
                        group: cluster.to_string(),
                    });
                }
            }
        }
        Ok(todo)
    }

    /// Live documents with a signature outside every cluster that carry a group other than
    /// their own id.
    fn alone_to_retag(
        &self,
        clusters: &Clusters,
        groups: &[Option<StrColumn>],
        written: &mut GroupsWritten,
    ) -> Result<Vec<Retag>> {
        let searcher = clusters.searcher();
        let mut clustered: Vec<DocAddress> = clusters
            .iter()
            .flat_map(|c| c.members.iter().map(|m| m.address))
            .collect();
        clustered.sort_unstable();
        let rule = self.index.rule();
        let mut alone = Vec::new();
        for (ord, seg) in searcher.segment_readers().iter().enumerate() {
            let Some(Some(column)) = groups.get(ord) else {
                continue;
            };
            let signatures = SegmentSignatures::open(seg, rule)?;
            for doc in seg.doc_ids_alive() {
                let address = DocAddress::new(ord as u32, doc);
                if column.ords().first(doc).is_some()
                    && signatures.fingerprint(doc).is_some()
                    && clustered.binary_search(&address).is_err()
                {
                    alone.push(address);
                }
            }
        }
        let ids = str_columns(searcher, self.index.fields.id)?;
        let mut todo = Vec::new();
        for chunk in alone.chunks(READ_BATCH) {
            let own = read_strs(&ids, chunk)?;
            let current = read_strs(groups, chunk)?;
            for ((&address, id), cur) in chunk.iter().zip(own).zip(current) {
                let id = id.ok_or_else(|| {
                    Error::Document(format!(
                        "the document at segment {} doc {} has no id; every document needs one \
                         (add documents through DedupWriter)",
                        address.segment_ord, address.doc_id
                    ))
                })?;
                if cur.as_deref() == Some(id.as_str()) {
                    written.unchanged += 1;
                } else {
                    todo.push(Retag {
                        group: id.clone(),
                        id,
                        address,
                    });
                }
            }
        }
        Ok(todo)
    }

    /// The document to re-add: the supplied fields other than the reserved ones, the stored
    /// signature, the new group, and the sequence and replaced ids read from the snapshot.
    fn retagged_document(
        &self,
        snapshot: &NearDupLookup,
        reserved: &[Field],
        source: TantivyDocument,
        retag: &Retag,
    ) -> Result<TantivyDocument> {
        let fields = self.index.fields;
        let mut doc = TantivyDocument::default();
        for (field, value) in source.field_values() {
            if !reserved.contains(&field) {
                doc.add_field_value(field, value);
            }
        }
        if doc.get_first(fields.id).and_then(|v| v.as_str()) != Some(retag.id.as_str()) {
            return Err(Error::Document(format!(
                "the document supplied for id `{}` has another id or none; supply the document \
                 with that id",
                retag.id
            )));
        }
        let address = retag.address;
        let Some(signature) = snapshot.signature_at(address) else {
            return Err(Error::Document(format!(
                "the document `{}` (segment {} doc {}) has no stored signature; retag only the \
                 searcher the clusters were computed on",
                retag.id, address.segment_ord, address.doc_id
            )));
        };
        self.index.add_signature_to(&mut doc, &signature);
        if let Some(group) = fields.group {
            doc.add_text(group, &retag.group);
        }
        if let (Some(field), Some(sequence)) = (fields.sequence, snapshot.sequence_of(address)) {
            doc.add_u64(field, sequence);
        }
        if let Some(field) = fields.replaced {
            for replaced in snapshot.replaced_ids_of(address)? {
                doc.add_text(field, &replaced);
            }
        }
        Ok(doc)
    }
}

/// The string column of `field` in every segment of `searcher`.
fn str_columns(searcher: &Searcher, field: Field) -> Result<Vec<Option<StrColumn>>> {
    let name = field_name(searcher.schema(), field)?.to_string();
    Ok(searcher
        .segment_readers()
        .iter()
        .map(|seg| seg.fast_fields().str(&name))
        .collect::<tantivy::Result<_>>()?)
}
