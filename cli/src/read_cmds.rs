//! The commands that read an index: `search`, `similar`, `stats`.

use super::output::{count, evidence_short, one_line, EvidenceJson};
use super::store::{self, Store, StoredDoc};
use super::{CliResult, Failure, LeaderChoice, Out, SearchArgs, SimilarArgs, StatsArgs, Status};
use serde::Serialize;
use std::collections::HashMap;
use std::path::Path;
use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy::Order;
use tantivy_simhash::{
    Collapsed, CollapsedGroup, CollapsedHit, Fingerprint, GroupBy, NearDup, NearDupCollapse,
    SEQUENCE_FIELD,
};

pub(super) fn search(args: &SearchArgs) -> CliResult<Status> {
    if args.limit == 0 {
        return Err(Failure::Usage("--limit must be at least 1".into()));
    }
    let store = store::open(&args.dir)?;
    let mut out = Out::new(args.json);
    let collapse = match (&args.distinct_field, args.no_collapse) {
        (_, true) => Collapse::Off,
        (None, false) => Collapse::NearDuplicates,
        (Some(field), false) => Collapse::Field(field),
    };
    let view = GroupView {
        leader: args.leader,
        derank: args.derank,
    };
    search_in(&store, &args.query, args.limit, collapse, view, &mut out)?;
    out.flush()?;
    Ok(Status::Done)
}

#[derive(Serialize)]
struct SearchHit<'a> {
    rank: usize,
    score: f32,
    id: &'a str,
    title: &'a str,
    host: &'a str,
}

/// How `search` folds its hits.
#[derive(Clone, Copy)]
pub(crate) enum Collapse<'a> {
    /// Every matching document.
    Off,
    /// One result per group of near-duplicates.
    NearDuplicates,
    /// One result per value of a fast field.
    Field(&'a str),
}

/// How `search` shows collapsed groups (ignored without collapse: the command line refuses the
/// combination).
#[derive(Clone, Copy, Default)]
pub(crate) struct GroupView {
    /// Which hit leads a group; `None`: its best-ranked hit.
    pub(crate) leader: Option<LeaderChoice>,
    /// One flat list: the leaders, then the groups' other hits in rank order.
    pub(crate) derank: bool,
}

/// Prints the best `limit` results for `query`: groups (the best hit of each, with the group's
/// size) unless `collapse` is off, else single documents.
pub(crate) fn search_in(
    store: &Store,
    query: &str,
    limit: usize,
    collapse: Collapse<'_>,
    view: GroupView,
    out: &mut Out,
) -> CliResult<()> {
    let searcher = store.index.searcher()?;
    // No query has more hits than the index has documents: a huge --limit must not make
    // tantivy's top-k allocate for it.
    let limit = limit.min(
        usize::try_from(searcher.num_docs())
            .unwrap_or(usize::MAX)
            .max(1),
    );
    let f = store.fields;
    let parser = QueryParser::for_index(store.index.index(), vec![f.title, f.text]);
    let parsed = parser.parse_query(query).map_err(|e| {
        Failure::Message(format!(
            "cannot parse the query `{query}`: {e}; use words, \"phrases\", +must, -not or \
             title:word"
        ))
    })?;
    let tantivy_searcher = &searcher;
    if let Some(field) = match collapse {
        Collapse::Off => None,
        Collapse::NearDuplicates => Some(None),
        Collapse::Field(field) => Some(Some(field)),
    } {
        return print_collapsed(store, tantivy_searcher, &parsed, limit, field, view, out);
    }
    let hits = tantivy_searcher.search(&parsed, &TopDocs::with_limit(limit).order_by_score())?;
    if hits.is_empty() && !out.is_json() {
        out.line(format_args!("no document matches `{query}`"))?;
    }
    for (rank, (score, addr)) in hits.into_iter().enumerate() {
        let shown = store.load_doc(tantivy_searcher, addr)?;
        if out.is_json() {
            out.json_line(&SearchHit {
                rank: rank + 1,
                score,
                id: &shown.id,
                title: &shown.title,
                host: &shown.host,
            })?;
        } else {
            print_hit(out, rank + 1, score, &shown)?;
        }
    }
    Ok(())
}

/// A member of a collapsed group: its simhash distance to the leader, and the resemblance
/// estimate when the match rule's resemblance branch folded it (absent otherwise).
#[derive(Serialize)]
struct GroupMember<'a> {
    id: &'a str,
    score: f32,
    distance: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resemblance: Option<f32>,
}

#[derive(Serialize)]
struct CollapsedLine<'a> {
    rank: usize,
    score: f32,
    id: &'a str,
    title: &'a str,
    host: &'a str,
    /// The leader and the near-duplicates folded into it.
    group_size: usize,
    /// Whether `group_size` counts every hit of the query (else: at least).
    group_size_exact: bool,
    /// The value of `--distinct-field` the group shares.
    #[serde(skip_serializing_if = "Option::is_none")]
    distinct_value: Option<&'a str>,
    members: Vec<GroupMember<'a>>,
}

/// With `--leader` or `--derank`, the window is this many times `--limit` hits.
const WIDE_WINDOW: usize = 64;

/// A hit of `search --derank`: a leader, or a hit moved behind the leaders.
#[derive(Serialize)]
struct DerankedLine<'a> {
    rank: usize,
    score: f32,
    id: &'a str,
    title: &'a str,
    host: &'a str,
    /// Whether the hit was moved behind the leaders (a member of a group, not its leader).
    moved: bool,
    /// For a moved hit, the id of its group's leader.
    #[serde(skip_serializing_if = "Option::is_none")]
    leader_id: Option<&'a str>,
}

fn print_collapsed(
    store: &Store,
    searcher: &tantivy::Searcher,
    query: &dyn tantivy::query::Query,
    limit: usize,
    distinct_field: Option<&str>,
    view: GroupView,
    out: &mut Out,
) -> CliResult<()> {
    let results = collapse_hits(store, searcher, query, limit, distinct_field, view)?;
    if view.derank {
        return print_deranked(store, searcher, &results, distinct_field, out);
    }
    if results.groups().is_empty() && !out.is_json() {
        out.line("no document matches")?;
    }
    for (rank, g) in results.groups().iter().enumerate() {
        let shown = store.load_doc(searcher, g.leader.address)?;
        if out.is_json() {
            out.json_line(&CollapsedLine {
                rank: rank + 1,
                score: g.leader.key,
                id: &shown.id,
                title: &shown.title,
                host: &shown.host,
                group_size: g.count,
                group_size_exact: g.count_exact,
                distinct_value: distinct_field.and(g.leader.group.as_deref()),
                members: g
                    .members
                    .iter()
                    .map(|m| GroupMember {
                        id: &m.id,
                        score: m.key,
                        distance: m.distance,
                        resemblance: m.resemblance,
                    })
                    .collect(),
            })?;
            continue;
        }
        print_hit(out, rank + 1, g.leader.key, &shown)?;
        if g.count > 1 {
            print_group_members(out, g, distinct_field)?;
        }
    }
    Ok(())
}

/// The query's hits collapsed into groups (near-duplicates, or one per `distinct_field`
/// value), with the leaders and window `view` asks for.
fn collapse_hits(
    store: &Store,
    searcher: &tantivy::Searcher,
    query: &dyn tantivy::query::Query,
    limit: usize,
    distinct_field: Option<&str>,
    view: GroupView,
) -> CliResult<Collapsed<f32>> {
    // Exact group sizes cost a lookup of each leader's keys (docs/PERFORMANCE.md): worth it
    // for a person reading "N near-duplicates".
    let mut collapse = NearDupCollapse::by_score(store.index.fields(), limit).exact_counts(true);
    if let Some(field) = distinct_field {
        collapse = collapse.group_by(GroupBy::Field(field.to_string()))?;
    }
    if view.leader.is_some() || view.derank {
        // Leaders are chosen among, and moved hits are, the groups' hits in the window: look at
        // the widening bound's 64 x limit top hits at once, so that a group's newest copy or
        // its other hits are not missed because the first groups filled a 3 x limit window.
        let docs = usize::try_from(searcher.num_docs()).unwrap_or(usize::MAX);
        collapse = collapse.fetch(limit.saturating_mul(WIDE_WINDOW).min(docs.max(1)));
    }
    if let Some(choice) = view.leader {
        // The sequence field numbers documents in the order they were added.
        let order = match choice {
            LeaderChoice::Newest => Order::Desc,
            LeaderChoice::Oldest => Order::Asc,
        };
        collapse = collapse.leader_order(SEQUENCE_FIELD, order);
    }
    let results = collapse.search(searcher, query).map_err(|e| match e {
        tantivy_simhash::Error::Schema { field, .. }
            if view.leader.is_some() && field == SEQUENCE_FIELD =>
        {
            Failure::Message(format!(
                "--leader orders by the order documents were added (the field {SEQUENCE_FIELD}), \
                 which this index does not have (it was made by an older version); rebuild it \
                 with `neardup index`, or search without --leader"
            ))
        }
        e => e.into(),
    })?;
    Ok(results)
}

/// The line under a group's leader: how many more hits the group has, and the nearest three.
fn print_group_members(
    out: &mut Out,
    g: &CollapsedGroup<f32>,
    distinct_field: Option<&str>,
) -> CliResult<()> {
    // The members are those of the window of top hits; the count covers every hit. The
    // nearest are listed (simhash matches by distance, then resemblance matches, most
    // resembling first), ties by id: near-duplicates often score within a rounding
    // error of each other, and that order changes with the index's segments.
    let mut nearest: Vec<_> = g.members.iter().collect();
    nearest.sort_by(|a, b| {
        let key = |m: &CollapsedHit<f32>| match m.resemblance {
            None => (0u8, m.distance.unwrap_or(u32::MAX) as f32),
            Some(r) => (1, -r),
        };
        let (x, y) = (key(a), key(b));
        x.0.cmp(&y.0)
            .then(x.1.total_cmp(&y.1))
            .then_with(|| a.id.cmp(&b.id))
    });
    let listed: Vec<String> = nearest
        .into_iter()
        .take(3)
        .map(|m| match (m.resemblance, m.distance) {
            (Some(r), _) => format!("{} (resemblance {r:.2})", m.id),
            (None, Some(d)) => format!("{} (d={d})", m.id),
            (None, None) => m.id.clone(),
        })
        .collect();
    let others = g.count - 1;
    let list = match (listed.is_empty(), others > listed.len()) {
        (true, _) => String::new(),
        (false, true) => format!(": {}, …", listed.join(", ")),
        (false, false) => format!(": {}", listed.join(", ")),
    };
    let at_least = if g.count_exact { "" } else { "at least " };
    let plural = if others == 1 { "" } else { "s" };
    match (distinct_field, g.leader.group.as_deref()) {
        (Some(field), Some(value)) => out.line(format_args!(
            "             + {at_least}{others} more with {field} {value}{list}"
        ))?,
        _ => out.line(format_args!(
            "             + {at_least}{others} near-duplicate{plural}{list}"
        ))?,
    }
    Ok(())
}

/// Prints [`Collapsed::deranked`]: the leaders in group
/// order, then the groups' other hits in rank order, each with the id of its leader.
fn print_deranked(
    store: &Store,
    searcher: &tantivy::Searcher,
    results: &Collapsed<f32>,
    distinct_field: Option<&str>,
    out: &mut Out,
) -> CliResult<()> {
    let groups = results.groups();
    if groups.is_empty() && !out.is_json() {
        out.line("no document matches")?;
    }
    // The leader of each moved hit (one index: an address names one hit).
    let leader_of: HashMap<tantivy::DocAddress, usize> = groups
        .iter()
        .enumerate()
        .flat_map(|(i, g)| g.members.iter().map(move |m| (m.address, i)))
        .collect();
    let mut leader_ids = Vec::with_capacity(groups.len());
    for g in groups {
        leader_ids.push(store.load_doc(searcher, g.leader.address)?.id);
    }
    let flat: Vec<&CollapsedHit<f32>> = results.deranked();
    for (position, hit) in flat.iter().enumerate() {
        let shown = store.load_doc(searcher, hit.address)?;
        let leader = match position < groups.len() {
            true => None,
            false => leader_of.get(&hit.address).map(|&i| leader_ids[i].as_str()),
        };
        if out.is_json() {
            out.json_line(&DerankedLine {
                rank: position + 1,
                score: hit.key,
                id: &shown.id,
                title: &shown.title,
                host: &shown.host,
                moved: position >= groups.len(),
                leader_id: leader,
            })?;
            continue;
        }
        print_hit(out, position + 1, hit.key, &shown)?;
        if let Some(leader) = leader {
            match distinct_field {
                Some(field) => {
                    out.line(format_args!("             moved: same {field} as {leader}"))?
                }
                None => out.line(format_args!(
                    "             moved: a near-duplicate of {leader}"
                ))?,
            }
        }
    }
    Ok(())
}

fn print_hit(out: &mut Out, rank: usize, score: f32, shown: &StoredDoc) -> CliResult<()> {
    let host = if shown.host.is_empty() {
        String::new()
    } else {
        format!("  [{}]", shown.host)
    };
    let line = format!(
        "{rank:>3}. {score:>6.2}  {}  {}{host}",
        shown.id,
        one_line(&shown.title, 60)
    );
    out.line(line.trim_end())?;
    out.line(format_args!("             {}", one_line(&shown.text, 100)))
}

pub(super) fn similar(args: &SimilarArgs) -> CliResult<Status> {
    let store = store::open(&args.dir)?;
    let from_file = match &args.text_file {
        Some(path) => Some(read_text_file(path)?),
        None => None,
    };
    let (flag, text) = match (&args.text, &from_file) {
        (Some(text), _) => ("--text", Some(text)),
        (None, Some(text)) => ("--text-file", Some(text)),
        (None, None) => ("", None),
    };
    let source = match (&args.id, text) {
        (Some(id), None) => Source::Id(id),
        (None, Some(text)) if text.trim().is_empty() => {
            return Err(Failure::Usage(format!(
                "{flag} is empty: there is nothing to fingerprint (`neardup index` refuses \
                 such documents too); give the text to compare, or --id"
            )))
        }
        (None, Some(text)) => Source::Text(text),
        _ => {
            return Err(Failure::Usage(
                "give exactly one of --id, --text and --text-file".into(),
            ))
        }
    };
    let mut out = Out::new(args.json);
    similar_in(&store, source, args.k, args.limit, &mut out)?;
    out.flush()?;
    Ok(Status::Done)
}

/// The text of `--text-file` (`-`: stdin), which must be UTF-8.
fn read_text_file(path: &Path) -> CliResult<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    let read = if path.as_os_str() == "-" {
        std::io::stdin().lock().read_to_end(&mut bytes)
    } else {
        std::fs::File::open(path).and_then(|mut f| f.read_to_end(&mut bytes))
    };
    let name = if path.as_os_str() == "-" {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    };
    read.map_err(|e| Failure::Message(format!("cannot read --text-file {name}: {e}")))?;
    String::from_utf8(bytes).map_err(|e| {
        Failure::Message(format!(
            "--text-file {name} is not UTF-8 (bad byte at offset {}); convert it to UTF-8",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// What `similar` looks up.
pub(crate) enum Source<'a> {
    Id(&'a str),
    Text(&'a str),
}

#[derive(Serialize)]
struct SimilarHit<'a> {
    id: &'a str,
    #[serde(flatten)]
    evidence: EvidenceJson,
    fingerprint: String,
    title: &'a str,
    host: &'a str,
}

/// Prints the documents the index's match rule matches with a document or a text, strongest
/// evidence first (simhash matches nearest first, then resemblance matches most resembling
/// first); with `k`, simhash-only: the documents within `k` (at most the index's k). For
/// `--id`, the document itself is left out.
pub(crate) fn similar_in(
    store: &Store,
    source: Source<'_>,
    k: Option<u32>,
    limit: usize,
    out: &mut Out,
) -> CliResult<()> {
    let within = k.map(|k| store.checked_k(Some(k))).transpose()?;
    let searcher = store.index.lookups()?;
    let (signature, own_id) = match source {
        Source::Id(id) => {
            let signature = searcher.signature_of_id(id)?.ok_or_else(|| {
                Failure::Message(format!(
                    "no document has id `{id}` in {}",
                    store.dir.display()
                ))
            })?;
            (signature, Some(id))
        }
        Source::Text(text) => (store.index.sign(text), None),
    };
    let mut hits = match within {
        Some(k) => searcher.lookup_within(signature.fingerprint, k)?,
        None => searcher.lookup_signature(&signature)?,
    };
    hits.retain(|h| Some(h.id.as_str()) != own_id);
    if limit > 0 {
        hits.truncate(limit);
    }
    if !out.is_json() {
        let found = hits.len() as u64;
        out.line(similar_headline(
            store,
            own_id,
            signature.fingerprint,
            within,
            found,
        ))?;
    }
    for hit in &hits {
        print_similar_hit(store, searcher.searcher(), hit, out)?;
    }
    Ok(())
}

/// What `similar` found: how many near-duplicates of what, by which test.
fn similar_headline(
    store: &Store,
    own_id: Option<&str>,
    fp: Fingerprint,
    within: Option<u32>,
    found: u64,
) -> String {
    let what = match own_id {
        Some(id) => format!("`{id}`"),
        None => "the text".to_string(),
    };
    let by = match within {
        Some(k) => format!("within simhash distance {k}"),
        None => format!("by the rule ({})", store.index.rule()),
    };
    format!(
        "{} of {what} (fingerprint {fp}) {by}{}",
        count(found, "near-duplicate", "near-duplicates"),
        if own_id.is_some() {
            ", itself left out"
        } else {
            ""
        }
    )
}

/// One near-duplicate: a JSON line, or its evidence, id, title and host.
fn print_similar_hit(
    store: &Store,
    searcher: &tantivy::Searcher,
    hit: &NearDup,
    out: &mut Out,
) -> CliResult<()> {
    let shown = store.load_doc(searcher, hit.address)?;
    if out.is_json() {
        return out.json_line(&SimilarHit {
            id: &hit.id,
            evidence: hit.evidence.into(),
            fingerprint: hit.fingerprint.to_string(),
            title: &shown.title,
            host: &shown.host,
        });
    }
    let host = if shown.host.is_empty() {
        String::new()
    } else {
        format!("  [{}]", shown.host)
    };
    let line = format!(
        "  {:<12} {}  {}{host}",
        evidence_short(hit.evidence),
        hit.id,
        one_line(&shown.title, 60)
    );
    out.line(line.trim_end())
}

pub(super) fn stats(args: &StatsArgs) -> CliResult<Status> {
    let store = store::open(&args.dir)?;
    let mut out = Out::new(args.json);
    stats_in(&store, args.limit, &mut out)?;
    out.flush()?;
    Ok(Status::Done)
}

#[derive(Serialize)]
struct Stats<'a> {
    index: &'a Path,
    documents: u64,
    deleted: u64,
    segments: usize,
    bytes_on_disk: u64,
    scheme: &'a str,
    layout: String,
    k: u32,
    keys_per_document: usize,
    /// The match rule every command applies (the index's; fixed when it was created).
    rule: String,
    /// Whether the rule's keys are also tantivy postings (`--key-postings`); otherwise they
    /// live in the signature columns only and the first lookup of a process builds key tables.
    key_postings: bool,
    /// The rule's keys per document (the layout's block keys and the MinHash band keys).
    rule_keys_per_document: usize,
    language: &'a str,
    policy: &'a str,
    fields: &'a super::input::FieldMap,
    largest_groups: Vec<Group>,
    /// The largest clusters (chains of pairs within k), computed now over the whole index.
    largest_clusters: Vec<ClusterSize>,
}

#[derive(Serialize)]
struct ClusterSize {
    cluster: String,
    documents: usize,
}

#[derive(Serialize)]
pub(crate) struct Group {
    pub group: String,
    pub documents: u64,
}

/// Prints what the index holds.
pub(crate) fn stats_in(store: &Store, limit: usize, out: &mut Out) -> CliResult<()> {
    let searcher = store.index.searcher()?;
    let s = &searcher;
    let documents = s.num_docs();
    let deleted: u64 = s
        .segment_readers()
        .iter()
        .map(|r| u64::from(r.num_deleted_docs()))
        .sum();
    let layout = store.index.layout();
    let stats = Stats {
        index: &store.dir,
        documents,
        deleted,
        segments: s.segment_readers().len(),
        bytes_on_disk: dir_size(&store.dir),
        scheme: store.index.scheme().id(),
        layout: layout.id(),
        k: layout.max_distance(),
        keys_per_document: layout.num_keys(),
        rule: store.index.rule().to_string(),
        key_postings: store.index.fields().key_postings(),
        rule_keys_per_document: store.index.rule().keys_per_document(),
        language: &store.record.language,
        policy: &store.record.policy,
        fields: &store.record.fields,
        largest_groups: largest_groups(s, limit)?,
        largest_clusters: largest_clusters(store, &searcher, limit)?,
    };
    if out.is_json() {
        return out.json_line(&stats);
    }
    print_stats(&stats, out)
}

/// The human form of `stats`: one line per property, then the largest clusters and groups.
fn print_stats(stats: &Stats<'_>, out: &mut Out) -> CliResult<()> {
    out.line(format_args!("index      {}", stats.index.display()))?;
    match stats.deleted {
        0 => out.line(format_args!("documents  {}", stats.documents))?,
        deleted => out.line(format_args!(
            "documents  {} ({deleted} deleted, not yet merged away)",
            stats.documents
        ))?,
    }
    out.line(format_args!(
        "segments   {}, {:.1} MB on disk",
        stats.segments,
        stats.bytes_on_disk as f64 / 1e6
    ))?;
    out.line(format_args!("scheme     {}", stats.scheme))?;
    out.line(format_args!(
        "layout     {} (the rule's simhash part: {} block keys; every pair within distance {} shares one)",
        stats.layout, stats.keys_per_document, stats.k
    ))?;
    out.line(format_args!("rule       {}", stats.rule))?;
    out.line(format_args!(
        "keys       {} per document, {}",
        stats.rule_keys_per_document,
        if stats.key_postings {
            "in postings and columns (--key-postings: a fresh process looks up at once)"
        } else {
            "in columns only (a fresh process builds in-memory key tables on its first lookup)"
        }
    ))?;
    out.line(format_args!(
        "language   {}; last dedup policy {}",
        stats.language, stats.policy
    ))?;
    let f = stats.fields;
    out.line(format_args!(
        "fields     id <- {}, text <- {}, title <- {}, host <- {} (JSON fields of the last run)",
        f.id, f.text, f.title, f.host
    ))?;
    out.line(format_args!(
        "largest clusters by the rule (neardup clusters {} for their members):",
        stats.index.display()
    ))?;
    if stats.largest_clusters.is_empty() {
        out.line("  none: the rule matches no two documents")?;
    }
    for c in &stats.largest_clusters {
        out.line(format_args!("  {:>6}  {}", c.documents, c.cluster))?;
    }
    if stats.largest_groups.is_empty() {
        out.line(
            "groups     none recorded (documents are grouped while indexing with --dedup tag)",
        )?;
    } else {
        out.line("largest groups recorded while indexing (--dedup tag), by first document:")?;
        for g in &stats.largest_groups {
            out.line(format_args!("  {:>6}  {}", g.documents, g.group))?;
        }
    }
    Ok(())
}

/// The `limit` largest clusters of the near-duplicate graph. Cost: one pass over the fingerprint
/// columns and the all-pairs join (tantivy_simhash::batch).
fn largest_clusters(
    store: &Store,
    searcher: &tantivy::Searcher,
    limit: usize,
) -> CliResult<Vec<ClusterSize>> {
    let fields = store.index.fields();
    let clusters = tantivy_simhash::batch::NearDupGraph::new(fields, searcher)?.clusters()?;
    let sizes: Vec<ClusterSize> = clusters
        .iter()
        .map(|c| ClusterSize {
            cluster: c.id.clone(),
            documents: c.len(),
        })
        .collect();
    Ok(largest_first(sizes, limit, |c| {
        (c.documents, c.cluster.as_str())
    }))
}

/// The `limit` largest groups of the group column (filled under `--dedup tag`), by size, with
/// at least two live documents.
pub(crate) fn largest_groups(searcher: &tantivy::Searcher, limit: usize) -> CliResult<Vec<Group>> {
    let mut sizes: HashMap<String, u64> = HashMap::new();
    for seg in searcher.segment_readers() {
        let Some(col) = seg.fast_fields().str("simhash_group")? else {
            continue;
        };
        let mut by_ord: HashMap<u64, u64> = HashMap::new();
        for doc in 0..seg.max_doc() {
            if seg.is_deleted(doc) {
                continue;
            }
            if let Some(ord) = col.ords().first(doc) {
                *by_ord.entry(ord).or_default() += 1;
            }
        }
        let mut name = String::new();
        for (ord, n) in by_ord {
            if n == 0 {
                continue;
            }
            name.clear();
            if col.ord_to_str(ord, &mut name)? {
                *sizes.entry(name.clone()).or_default() += n;
            }
        }
    }
    let groups: Vec<Group> = sizes
        .into_iter()
        .filter(|&(_, n)| n >= 2)
        .map(|(group, documents)| Group { group, documents })
        .collect();
    Ok(largest_first(groups, limit, |g| {
        (g.documents as usize, g.group.as_str())
    }))
}

/// The `limit` largest of `items` by their `(size, name)`: larger first, ties by name.
fn largest_first<T>(
    mut items: Vec<T>,
    limit: usize,
    size_and_name: impl Fn(&T) -> (usize, &str),
) -> Vec<T> {
    items.sort_by(|a, b| {
        let ((size_a, name_a), (size_b, name_b)) = (size_and_name(a), size_and_name(b));
        size_b.cmp(&size_a).then_with(|| name_a.cmp(name_b))
    });
    items.truncate(limit);
    items
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}
