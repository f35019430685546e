//! What a store holds, as both front ends report it: the largest clusters of the
//! near-duplicate graph, the largest groups tagged while indexing, the mirror hosts and the
//! review report.

use super::Store;
use crate::batch::{Cluster, ClusterMode, Clusters, PairJoin};
use crate::error::{Error, Result};
use crate::mirrors::{HostPair, MirrorConfig, MirrorFinder, MirrorReport};
use crate::report::{write_report, ReportOptions, ReportStats};
use std::collections::HashMap;
use std::path::Path;

/// The streaming join of the store's live documents by the index's rule, its simhash branch
/// narrowed to `k` (the index's `k` by default) and, with `min_resemblance`, only the pairs
/// whose sketches estimate at least that ([`PairJoin::min_resemblance`]). Cost: opening each
/// segment's component file and id column. Errors: [`Error::Setting`] for a `k` beyond the
/// index's or a `min_resemblance` outside 0..=1; those of
/// [`PairJoin::new`].
pub fn pair_join(store: &Store, k: Option<u32>, min_resemblance: Option<f32>) -> Result<PairJoin> {
    let k = store.checked_k(k)?;
    let searcher = store.index.searcher()?;
    let join = PairJoin::with_max_distance(store.index.fields(), &searcher, k)?;
    match min_resemblance {
        // A bad floor is the caller's argument, as a bad `k` is.
        Some(min) => join.min_resemblance(min).map_err(|e| match e {
            Error::InvalidConfig(m) => Error::Setting(m),
            other => other,
        }),
        None => Ok(join),
    }
}

/// Every cluster of the store's live documents under `mode`, by [`pair_join`]'s pairs, sorted
/// by id: the streaming join's [`PairJoin::clusters_by`], which holds no signature (memory: the
/// join's compact pairs for leaders, a 4-byte union-find per document for components, and the
/// clusters). Errors: those of [`pair_join`] and [`PairJoin::clusters_by`].
pub fn clusters(
    store: &Store,
    k: Option<u32>,
    min_resemblance: Option<f32>,
    mode: ClusterMode,
) -> Result<Clusters> {
    pair_join(store, k, min_resemblance)?.clusters_by(mode)
}

/// The clusters of at least `min_size` (and 2) documents, largest first (ties by id), at most
/// `limit` of them (0: all), and how many there are before that cut. Cost: a sort.
pub fn largest_clusters(
    clusters: &Clusters,
    min_size: usize,
    limit: usize,
) -> (Vec<&Cluster>, usize) {
    let mut sorted: Vec<_> = clusters
        .iter()
        .filter(|c| c.len() >= min_size.max(2))
        .collect();
    sorted.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.id.cmp(&b.id)));
    let total = sorted.len();
    if limit > 0 {
        sorted.truncate(limit);
    }
    (sorted, total)
}

/// A group of documents tagged while indexing (`Policy::Tag`): its id and live documents.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GroupSize {
    /// The group id (the id of its first document).
    pub group: String,
    /// Its live documents.
    pub documents: u64,
}

impl Store {
    /// The `limit` largest groups of the index's group column (filled under `Policy::Tag`)
    /// with at least two live documents, largest first (ties by id); none when the index has
    /// no group column. Cost: one pass over the column of every segment.
    pub fn largest_groups(
        &self,
        searcher: &tantivy::Searcher,
        limit: usize,
    ) -> Result<Vec<GroupSize>> {
        let Some(field) = self.index.config().group_field() else {
            return Ok(Vec::new());
        };
        let mut sizes: HashMap<String, u64> = HashMap::new();
        for seg in searcher.segment_readers() {
            let Some(col) = seg.fast_fields().str(field)? else {
                continue;
            };
            // Counted by term ordinal, then the names of the groups read in one pass over the
            // dictionary: an ordinal looked up alone decompresses a dictionary block each time
            // (~13 us), seconds per million groups (`neardup stats` reads this).
            let mut by_ord = vec![0u64; col.dictionary().num_terms()];
            for doc in seg.doc_ids_alive() {
                if let Some(n) = col
                    .ords()
                    .first(doc)
                    .and_then(|o| by_ord.get_mut(o as usize))
                {
                    *n += 1;
                }
            }
            let ords: Vec<u64> = (0..by_ord.len() as u64)
                .filter(|&o| by_ord[o as usize] > 0)
                .collect();
            let mut counts = ords.iter().map(|&o| by_ord[o as usize]);
            col.dictionary().sorted_ords_to_term_cb(&ords, |name| {
                if let Some(n) = counts.next() {
                    *sizes
                        .entry(String::from_utf8_lossy(name).into_owned())
                        .or_default() += n;
                }
            })?;
        }
        let mut groups: Vec<GroupSize> = sizes
            .into_iter()
            .filter(|&(_, n)| n >= 2)
            .map(|(group, documents)| GroupSize { group, documents })
            .collect();
        groups.sort_by(|a, b| {
            b.documents
                .cmp(&a.documents)
                .then_with(|| a.group.cmp(&b.group))
        });
        groups.truncate(limit);
        Ok(groups)
    }
}

/// The mirror report of a store and the host pairs asked for.
pub struct Mirrors {
    /// The finder that made the report (its thresholds).
    pub finder: MirrorFinder,
    /// The whole report.
    pub report: MirrorReport,
    /// The mirror pairs, best first (with `all`, every host pair sharing a page), or those of
    /// the hosts that copy the host asked for.
    pub pairs: Vec<HostPair>,
}

/// The host pairs that copy each other's pages (field `host`), best first: every mirror pair,
/// with `all` every host pair sharing a page, or, with `host`, the hosts that copy it. Cost:
/// one pass over the index and a pairs join (see [`MirrorFinder::find_in_index`]).
///
/// Errors: [`Error::Request`] when no page has `host`; the finder's errors.
pub fn mirrors(store: &Store, host: Option<&str>, all: bool) -> Result<Mirrors> {
    let finder = MirrorFinder::new(store.index.scheme().clone(), MirrorConfig::default())?;
    let report = finder.find_in_index(&store.index, "host")?;
    let pairs = match host {
        Some(h) if !report.host_pages.contains_key(h) => {
            return Err(Error::Request(format!(
                "no page of {} has host `{h}` (hosts come from the field mapped as the host \
                 when indexing: --host-field, fields={{\"host\": ...}})",
                store.dir.display()
            )))
        }
        Some(h) => report.copies_of(h),
        None => report.pairs.clone(),
    };
    let pairs = pairs.into_iter().filter(|p| all || p.is_mirror).collect();
    Ok(Mirrors {
        finder,
        report,
        pairs,
    })
}

/// What a store's review report embeds (see [`ReportOptions`]); the host field and the title
/// are the store's.
#[derive(Clone, Copy, Debug)]
pub struct ReportCaps {
    /// Clusters listed, largest first.
    pub max_clusters_listed: usize,
    /// Clusters whose members and texts the file carries.
    pub detailed_clusters: usize,
    /// Members carried per detailed cluster, besides its leader.
    pub members_per_cluster: usize,
    /// Bytes of each text carried.
    pub max_text_bytes: usize,
}

impl Default for ReportCaps {
    /// Those of [`ReportOptions::default`].
    fn default() -> Self {
        let o = ReportOptions::default();
        ReportCaps {
            max_clusters_listed: o.max_clusters_listed,
            detailed_clusters: o.detailed_clusters,
            members_per_cluster: o.members_per_cluster,
            max_text_bytes: o.max_text_bytes,
        }
    }
}

impl Store {
    /// The review report of the store ([`write_report`], hosts from field `host`), as the
    /// bytes of one HTML file, and what it holds. Cost and errors: those of [`write_report`].
    pub fn report(&self, caps: ReportCaps) -> Result<(Vec<u8>, ReportStats)> {
        let options = ReportOptions {
            max_clusters_listed: caps.max_clusters_listed,
            detailed_clusters: caps.detailed_clusters,
            members_per_cluster: caps.members_per_cluster,
            max_text_bytes: caps.max_text_bytes,
            host_field: Some("host".into()),
            title: format!("Near-duplicate review of {}", self.dir.display()),
        };
        let mut html = Vec::new();
        let stats = write_report(&self.index, &self.index.lookups()?, &options, &mut html)?;
        Ok((html, stats))
    }

    /// [`Store::report`] written to the file `path`. Errors: [`Error::Request`] naming the
    /// file when it cannot be written; those of [`Store::report`].
    pub fn write_report_file(&self, path: &Path, caps: ReportCaps) -> Result<ReportStats> {
        let (html, stats) = self.report(caps)?;
        std::fs::write(path, &html).map_err(|e| {
            Error::Request(format!(
                "cannot write the report to {}: {e}; check that its directory exists and is \
                 writable",
                path.display()
            ))
        })?;
        Ok(stats)
    }
}
