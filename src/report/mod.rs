//! A review report: one self-contained HTML file a person opens in a browser (the account is on
//! [`write_report`]).

mod html;

use crate::batch::{ClusterMode, NearDupGraph};
use crate::error::{Error, Result};
use crate::explain::{Explanation, RunKind};
use crate::lookup::NearDupLookup;
use crate::mirrors::{MirrorConfig, MirrorFinder};
use crate::schema::NearDupIndex;
use rayon::prelude::*;
use serde::Serialize;
use std::collections::HashMap;
use std::io::Write;
use tantivy::schema::Value;
use tantivy::{DocAddress, TantivyDocument};

/// What a report embeds, and where its hosts are.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// Clusters listed (largest first); the rest are counted. Default 20,000.
    pub max_clusters_listed: usize,
    /// Clusters whose members and texts the file carries (largest first). Default 300.
    pub detailed_clusters: usize,
    /// Members carried per detailed cluster, besides the leader. Default 20.
    pub members_per_cluster: usize,
    /// Bytes of each text carried (cut at a character boundary). Default 20,000.
    pub max_text_bytes: usize,
    /// A stored string field holding each document's host: mirror host pairs are listed
    /// when it is set and in the schema. Default `host`.
    pub host_field: Option<String>,
    /// The report's heading. Default "Near-duplicate review".
    pub title: String,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            max_clusters_listed: 20_000,
            detailed_clusters: 300,
            members_per_cluster: 20,
            max_text_bytes: 20_000,
            host_field: Some("host".into()),
            title: "Near-duplicate review".into(),
        }
    }
}

/// What [`write_report`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReportStats {
    /// Live documents with a signature.
    pub documents: usize,
    /// Leader clusters of at least two documents.
    pub clusters: usize,
    /// Clusters listed in the file.
    pub clusters_listed: usize,
    /// Clusters whose members and texts the file carries.
    pub clusters_detailed: usize,
    /// Member-leader pairs with their texts and alignment in the file.
    pub pairs_shown: usize,
    /// Mirror host pairs listed.
    pub mirror_pairs: usize,
    /// Bytes written.
    pub bytes: usize,
}

#[derive(Serialize)]
struct Summary {
    title: String,
    rule: String,
    documents: usize,
    clusters: usize,
    clustered: usize,
    largest: usize,
    components: usize,
    components_clustered: usize,
    largest_component: usize,
    /// Documents each policy removes: Reject (= keep the leaders), Replace (newest wins),
    /// keep one per component.
    removed_reject: usize,
    removed_replace: usize,
    removed_components: usize,
    pairs: u64,
    hot_keys: u64,
    clusters_listed: usize,
    clusters_detailed: usize,
    members_per_cluster: usize,
    max_text_bytes: usize,
    size_histogram: Vec<(String, u64)>,
    resemblance_histogram: Vec<(String, u64)>,
}

#[derive(Serialize)]
struct ClusterRow {
    id: String,
    size: usize,
    title: String,
    /// Index into `details`, for a detailed cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<usize>,
}

#[derive(Serialize)]
struct Detail {
    leader: DocView,
    members: Vec<MemberView>,
    /// Members not carried.
    more: usize,
}

#[derive(Serialize)]
struct DocView {
    id: String,
    title: String,
    text: String,
    /// Whether `text` was cut.
    cut: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    host: Option<String>,
}

#[derive(Serialize)]
struct MemberView {
    doc: DocView,
    /// Highlights on the leader's text and on the member's: `[start, end, kind]` byte ranges
    /// (kind `del`, `ins`, `mv`), in order, within the carried text.
    marks_leader: Vec<(usize, usize, &'static str)>,
    marks_member: Vec<(usize, usize, &'static str)>,
    evidence: serde_json::Value,
}

#[derive(Serialize)]
struct Data {
    summary: Summary,
    clusters: Vec<ClusterRow>,
    details: Vec<Detail>,
    mirrors: Vec<crate::mirrors::HostPair>,
}

/// Writes the review report of `searcher`'s live documents to `out`.
///
/// Cost: the all-pairs join three times (leader clusters, connected components, and the
/// group pairs for the histograms and the Replace count; [`NearDupGraph`]), a doc-store read
/// per listed cluster's leader, an [`Explanation`] per carried member (in parallel), and with
/// hosts the mirror finder ([`MirrorFinder::find_in_index`], which reads every page). Memory:
/// the graph, plus the carried texts. Errors: [`Error::Schema`] when a text field is not
/// stored; [`Error::Document`] when a document has no id; [`Error::Io`] when writing fails;
/// [`Error::Tantivy`] when reading the index fails.
///
/// A review report: one self-contained HTML file a person opens in a browser to check what
/// the index calls near-duplicates ([`write_report`]).
///
/// The file holds everything (inline CSS, SVG and a little JavaScript; no network): the index's
/// summary (documents, near-duplicates, the share each policy would remove), a histogram of cluster
/// sizes and one of pair resemblance, the leader clusters largest first with their leader and
/// members (paged, filterable by id or title), and for a member the two texts side by side against
/// the leader with the differences of the word alignment highlighted and the rule's evidence
/// ([`Explanation`](crate::Explanation)); mirror host pairs when the documents have hosts.
///
/// **Scale.** What the file embeds is capped ([`ReportOptions`]): the cluster list, the
/// clusters whose members and texts it carries, the members per cluster and the bytes per
/// text. The report says what it left out. The summary and the histograms count everything.
///
/// ```
/// # use tantivy::doc;
/// use tantivy_simhash::{write_report, ReportOptions};
/// use tantivy_simhash::{NearDupConfig, NearDupIndex, Policy};
/// # let index = NearDupIndex::create_in_ram(NearDupConfig::new("id", ["body"]))?;
/// # let (id, body) = (index.field("id")?, index.field("body")?);
/// # let mut writer = index.writer(15_000_000, Policy::Off)?;
/// # let text = "Permission is hereby granted, free of charge, to any person obtaining a copy \
/// #             of this software, to deal in it without restriction.";
/// # writer.add_document(doc!(id => "a", body => text))?;
/// # writer.add_document(doc!(id => "b", body => text.replace("any person", "anyone")))?;
/// # writer.commit()?;
/// let mut html = Vec::new();
/// let stats = write_report(&index, &index.lookups()?, &ReportOptions::default(), &mut html)?;
/// assert_eq!(stats.clusters, 1);
/// assert!(String::from_utf8_lossy(&html).starts_with("<!DOCTYPE html>"));
/// # Ok::<(), tantivy_simhash::Error>(())
/// ```
pub fn write_report(
    index: &NearDupIndex,
    searcher: &NearDupLookup,
    options: &ReportOptions,
    out: &mut dyn Write,
) -> Result<ReportStats> {
    let fields = searcher.fields();
    let tantivy_searcher = searcher.searcher();
    let schema = tantivy_searcher.schema();
    let mut text_fields = Vec::new();
    for name in index.config().text_fields() {
        let field = schema.get_field(name)?;
        if !schema.get_field_entry(field).is_stored() {
            return Err(Error::Schema {
                field: name.clone(),
                problem: "is not stored, so the report cannot show the texts; index the text \
                          fields with STORED"
                    .into(),
            });
        }
        text_fields.push(field);
    }
    let host_field = options
        .host_field
        .as_deref()
        .and_then(|h| schema.get_field(h).ok())
        .filter(|&f| schema.get_field_entry(f).is_stored());
    let load = |address: DocAddress| -> Result<(String, Option<String>)> {
        let doc: TantivyDocument = tantivy_searcher.doc(address)?;
        let mut text = String::new();
        for &f in &text_fields {
            for v in doc.get_all(f) {
                if let Some(s) = v.as_str() {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(s);
                }
            }
        }
        let host = host_field
            .and_then(|f| {
                doc.get_first(f)
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
            })
            .filter(|h| !h.is_empty());
        Ok((text, host))
    };

    let graph = NearDupGraph::new(fields, tantivy_searcher)?;
    let leaders = graph.clusters()?;
    let components = graph.clusters_by(ClusterMode::Components)?;
    let rule = index.rule();
    let minhash = *rule.minhash();

    // Pairs: estimated resemblance of every matching document pair, and for Replace the
    // latest sequence number each document is matched by.
    let mut resemblance_bins = [0u64; 10];
    let mut pairs = 0u64;
    let mut latest: HashMap<DocAddress, u64> = HashMap::new();
    let seq = |a: DocAddress| searcher.sequence_of(a).unwrap_or(0);
    for g in graph.duplicate_groups() {
        let n = g.docs.len() as u64;
        resemblance_bins[9] += n * (n - 1) / 2;
        pairs += n * (n - 1) / 2;
        let max = g.docs.iter().map(|&a| seq(a)).max().unwrap_or(0);
        for &a in g.docs {
            let e = latest.entry(a).or_insert(0);
            *e = (*e).max(max);
        }
    }
    let stats = graph.for_each_group_pair(|p| {
        let r =
            p.a.signature
                .sketch
                .resemblance(&p.b.signature.sketch, &minhash);
        let n = (p.a.docs.len() * p.b.docs.len()) as u64;
        resemblance_bins[((r * 10.0) as usize).min(9)] += n;
        pairs += n;
        let max_a = p.a.docs.iter().map(|&a| seq(a)).max().unwrap_or(0);
        let max_b = p.b.docs.iter().map(|&a| seq(a)).max().unwrap_or(0);
        for (docs, max) in [(p.a.docs, max_b), (p.b.docs, max_a)] {
            for &a in docs {
                let e = latest.entry(a).or_insert(0);
                *e = (*e).max(max);
            }
        }
    })?;
    let removed_replace = latest.iter().filter(|(&a, &l)| l > seq(a)).count();

    let mut sorted: Vec<_> = leaders.iter().collect();
    sorted.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.id.cmp(&b.id)));
    let clustered: usize = sorted.iter().map(|c| c.len()).sum();
    let components_clustered: usize = components.iter().map(|c| c.len()).sum();
    let mut size_bins: Vec<(String, u64)> = Vec::new();
    {
        let mut bins: Vec<(usize, usize, u64)> = vec![(2, 2, 0), (3, 4, 0), (5, 9, 0), (10, 19, 0)];
        bins.extend([
            (20, 49, 0),
            (50, 99, 0),
            (100, 999, 0),
            (1000, usize::MAX, 0),
        ]);
        for c in &sorted {
            if let Some(b) = bins.iter_mut().find(|b| c.len() >= b.0 && c.len() <= b.1) {
                b.2 += 1;
            }
        }
        for (lo, hi, n) in bins {
            let label = match (lo, hi) {
                (l, h) if l == h => l.to_string(),
                (l, usize::MAX) => format!("{l}+"),
                (l, h) => format!("{l}-{h}"),
            };
            size_bins.push((label, n));
        }
    }
    let listed = sorted.len().min(options.max_clusters_listed);
    let detailed = listed.min(options.detailed_clusters);

    // Titles of the listed clusters' leaders (the first line of their text).
    let heads: Vec<Result<(String, Option<String>)>> = sorted[..listed]
        .par_iter()
        .map(|c| match c.leader() {
            Some(l) => load(l.address),
            None => Ok((String::new(), None)),
        })
        .collect();
    let mut rows = Vec::with_capacity(listed);
    let mut leader_texts = Vec::with_capacity(detailed);
    for (i, (c, head)) in sorted[..listed].iter().zip(heads).enumerate() {
        let (text, host) = head?;
        rows.push(ClusterRow {
            id: c.id.clone(),
            size: c.len(),
            title: title_of(&text),
            detail: (i < detailed).then_some(i),
        });
        if i < detailed {
            leader_texts.push((text, host));
        }
    }

    // The carried members, explained against their leader in parallel.
    let jobs: Vec<(usize, DocAddress, DocAddress)> = sorted[..detailed]
        .iter()
        .enumerate()
        .flat_map(|(i, c)| {
            let leader = c.leader().map(|l| l.address);
            c.members
                .iter()
                .filter(move |m| Some(m.address) != leader)
                .take(options.members_per_cluster)
                .filter_map(move |m| Some((i, leader?, m.address)))
        })
        .collect();
    let explained: Vec<Result<(usize, MemberView)>> = jobs
        .par_iter()
        .map(|&(i, la, ma)| {
            let (text, host) = load(ma)?;
            let leader_text = &leader_texts[i].0;
            let signature = |a| {
                searcher.signature_at(a).ok_or_else(|| {
                    Error::Document(format!(
                        "the document at segment {} doc {} has no signature",
                        a.segment_ord, a.doc_id
                    ))
                })
            };
            let e = Explanation::of_signed(
                rule,
                index.scheme(),
                [leader_text, &text],
                [signature(la)?, signature(ma)?],
            );
            let id = searcher.id_of(ma)?.unwrap_or_default();
            let marks = e.alignment.marked_words();
            let mut evidence = e.to_json();
            if let Some(o) = evidence.as_object_mut() {
                o.remove("alignment");
                o.insert("counts".into(), serde_json::json!(e.alignment.counts()));
            }
            let cut = cut_at(&text, options.max_text_bytes);
            let cut_leader = cut_at(leader_text, options.max_text_bytes);
            Ok((
                i,
                MemberView {
                    marks_leader: ranges(&marks[0], &e.alignment.a, cut_leader),
                    marks_member: ranges(&marks[1], &e.alignment.b, cut),
                    doc: DocView {
                        id,
                        title: title_of(&text),
                        cut: cut < text.len(),
                        text: text[..cut].to_string(),
                        host,
                    },
                    evidence,
                },
            ))
        })
        .collect();
    let mut details: Vec<Detail> = sorted[..detailed]
        .iter()
        .zip(leader_texts)
        .map(|(c, (text, host))| {
            let cut = cut_at(&text, options.max_text_bytes);
            Detail {
                leader: DocView {
                    id: c.leader().map_or_else(String::new, |l| l.id.clone()),
                    title: title_of(&text),
                    cut: cut < text.len(),
                    text: text[..cut].to_string(),
                    host,
                },
                members: Vec::new(),
                more: (c.len() - 1).saturating_sub(options.members_per_cluster),
            }
        })
        .collect();
    let pairs_shown = explained.len();
    for r in explained {
        let (i, m) = r?;
        details[i].members.push(m);
    }

    let mirrors = match (host_field, &options.host_field) {
        (Some(_), Some(name)) => {
            let finder = MirrorFinder::new(index.scheme().clone(), MirrorConfig::default())?;
            let report = finder.find_in_index(index, name)?;
            report
                .pairs
                .into_iter()
                .filter(|p| p.is_mirror)
                .take(1000)
                .collect()
        }
        _ => Vec::new(),
    };

    let summary = Summary {
        title: options.title.clone(),
        rule: rule.to_string(),
        documents: graph.num_docs(),
        clusters: sorted.len(),
        clustered,
        largest: sorted.first().map_or(0, |c| c.len()),
        components: components.len(),
        components_clustered,
        largest_component: components.iter().map(|c| c.len()).max().unwrap_or(0),
        removed_reject: clustered - sorted.len(),
        removed_replace,
        removed_components: components_clustered - components.len(),
        pairs,
        hot_keys: stats.hot_keys,
        clusters_listed: listed,
        clusters_detailed: detailed,
        members_per_cluster: options.members_per_cluster,
        max_text_bytes: options.max_text_bytes,
        size_histogram: size_bins,
        resemblance_histogram: resemblance_bins
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                (
                    format!("{:.1}-{:.1}", i as f64 / 10.0, (i + 1) as f64 / 10.0),
                    n,
                )
            })
            .collect(),
    };
    let mirror_pairs = mirrors.len();
    let data = Data {
        summary,
        clusters: rows,
        details,
        mirrors,
    };
    let json = serde_json::to_string(&data)?;
    let page = html::page(&options.title, &json);
    out.write_all(page.as_bytes())?;
    out.flush()?;
    Ok(ReportStats {
        documents: graph.num_docs(),
        clusters: sorted.len(),
        clusters_listed: listed,
        clusters_detailed: detailed,
        pairs_shown,
        mirror_pairs,
        bytes: page.len(),
    })
}

/// The first line of a text, at most 120 characters.
fn title_of(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    line.trim().chars().take(120).collect()
}

/// The largest char boundary of `text` at most `max` bytes in.
fn cut_at(text: &str, max: usize) -> usize {
    if text.len() <= max {
        return text.len();
    }
    let mut i = max;
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Byte ranges of the marked words (merged when consecutive words have the same kind),
/// within the first `limit` bytes.
fn ranges(
    marked: &[(usize, RunKind)],
    spans: &[std::ops::Range<usize>],
    limit: usize,
) -> Vec<(usize, usize, &'static str)> {
    let mut out: Vec<(usize, usize, &'static str)> = Vec::new();
    let mut prev: Option<(usize, &'static str)> = None;
    for &(w, kind) in marked {
        let Some(span) = spans.get(w) else { continue };
        if span.end > limit {
            break;
        }
        let k = match kind {
            RunKind::Delete => "del",
            RunKind::Insert => "ins",
            _ => "mv",
        };
        match (prev, out.last_mut()) {
            (Some((pw, pk)), Some(last)) if pw + 1 == w && pk == k => last.1 = span.end,
            _ => out.push((span.start, span.end, k)),
        }
        prev = Some((w, k));
    }
    out
}
