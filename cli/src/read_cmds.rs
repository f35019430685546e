//! The commands that read an index: `search`, `similar`, `stats`. What they find comes from
//! the library's application layer ([`app::Search`], [`app::similar`]); here are the flags and the
//! printing.

use super::app::{self, Collapse, Search, SearchHit, SearchSettings, SimilarTo, Store, StoredDoc};
use super::output::{count, evidence_short, one_line, EvidenceJson};
use super::{CliResult, Failure, LeaderChoice, Out, SearchArgs, SimilarArgs, StatsArgs, Status};
use serde::Serialize;
use std::path::Path;
use tantivy::query::QueryParser;
use tantivy::snippet::SnippetGenerator;
use tantivy_simhash::{CollapsedHit, NearDup};

pub(super) fn search(args: &SearchArgs) -> CliResult<Status> {
    if args.limit == 0 {
        return Err(Failure::Usage("--limit must be at least 1".into()));
    }
    let store = app::open(&args.dir)?;
    let mut out = Out::new(args.json);
    let collapse = match (&args.distinct_field, args.no_collapse) {
        (_, true) => Collapse::Off,
        (None, false) => Collapse::NearDuplicates,
        (Some(field), false) => Collapse::Field(field.clone()),
    };
    let settings = SearchSettings {
        limit: args.limit,
        collapse,
        leader: args.leader.map(|choice| match choice {
            LeaderChoice::Newest => app::LeaderChoice::Newest,
            LeaderChoice::Oldest => app::LeaderChoice::Oldest,
        }),
        derank: args.derank,
    };
    search_in(&store, &args.query, settings, &mut out)?;
    out.flush()?;
    Ok(Status::Done)
}

#[derive(Serialize)]
struct SearchLine<'a> {
    rank: usize,
    score: f32,
    id: &'a str,
    title: &'a str,
    host: &'a str,
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

/// Prints the best results for `query` as `settings` fold them: groups (the best hit of each,
/// with the group's size) unless the collapse is off, else single documents; with `derank`,
/// the leaders and then the moved hits.
pub(crate) fn search_in(
    store: &Store,
    query: &str,
    settings: SearchSettings,
    out: &mut Out,
) -> CliResult<()> {
    let distinct_field = match &settings.collapse {
        Collapse::Field(field) => Some(field.clone()),
        _ => None,
    };
    let (collapsed, derank) = (settings.collapse != Collapse::Off, settings.derank);
    let search = Search::new(store, settings)?;
    let hits = search.run(store, query)?;
    let passages = passage_finder(store, query);
    if hits.is_empty() && !out.is_json() {
        match collapsed {
            false => out.line(format_args!("no document matches `{query}`"))?,
            true => out.line("no document matches")?,
        }
    }
    for hit in &hits {
        let d = &hit.doc;
        if !out.is_json() {
            print_hit(out, hit.rank, hit.score, d, passages.as_ref())?;
            if derank {
                print_moved(out, hit, distinct_field.as_deref())?;
            } else if hit.group_size > 1 {
                print_group_members(out, hit, distinct_field.as_deref())?;
            }
            continue;
        }
        let (rank, score, id, title, host) = (hit.rank, hit.score, &d.id, &d.title, &d.host);
        if !collapsed {
            out.json_line(&SearchLine {
                rank,
                score,
                id,
                title,
                host,
            })?;
        } else if derank {
            out.json_line(&DerankedLine {
                rank,
                score,
                id,
                title,
                host,
                moved: hit.moved,
                leader_id: hit.leader_id.as_deref(),
            })?;
        } else {
            out.json_line(&CollapsedLine {
                rank,
                score,
                id,
                title,
                host,
                group_size: hit.group_size,
                group_size_exact: hit.group_size_exact,
                distinct_value: hit.group_value.as_deref(),
                members: hit
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
        }
    }
    Ok(())
}

/// The line under a group's leader: how many more hits the group has, and the nearest three.
fn print_group_members(
    out: &mut Out,
    g: &SearchHit,
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
    let others = g.group_size - 1;
    // The count covers every hit of the query; members beyond the window of top hits are
    // ranked lower, and are said to be when every member of the window is listed.
    let beyond = others.saturating_sub(g.members.len());
    let list = match (listed.is_empty(), others > listed.len()) {
        (true, _) => String::new(),
        (false, true) if listed.len() == g.members.len() => {
            format!(": {}; {beyond} more ranked lower", listed.join(", "))
        }
        (false, true) => format!(": {}, …", listed.join(", ")),
        (false, false) => format!(": {}", listed.join(", ")),
    };
    let at_least = if g.group_size_exact { "" } else { "at least " };
    let plural = if others == 1 { "" } else { "s" };
    match (distinct_field, g.group_value.as_deref()) {
        (Some(field), Some(value)) => out.line(format_args!(
            "             + {at_least}{others} more with {field} {value}{list}"
        ))?,
        _ => out.line(format_args!(
            "             + {at_least}{others} near-duplicate{plural}{list}"
        ))?,
    }
    Ok(())
}

/// The line under a hit `--derank` moved behind the leaders: whose group it belongs to.
fn print_moved(out: &mut Out, hit: &SearchHit, distinct_field: Option<&str>) -> CliResult<()> {
    let Some(leader) = hit.leader_id.as_deref().filter(|_| hit.moved) else {
        return Ok(());
    };
    match distinct_field {
        Some(field) => out.line(format_args!("             moved: same {field} as {leader}")),
        None => out.line(format_args!(
            "             moved: a near-duplicate of {leader}"
        )),
    }
}

/// What finds the passage of a text that matched `query` (tantivy's `SnippetGenerator` over
/// the text field, as `Search` parses the query); `None` when there is none to find (the query
/// was parsed by the search already, so a failure here only loses the passages).
fn passage_finder(store: &Store, query: &str) -> Option<SnippetGenerator> {
    let searcher = store.index.searcher().ok()?;
    let f = store.fields;
    let parser = QueryParser::for_index(store.index.index(), vec![f.title, f.text]);
    let parsed = parser.parse_query(query).ok()?;
    let mut finder = SnippetGenerator::create(&searcher, &*parsed, f.text).ok()?;
    finder.set_max_num_chars(PASSAGE_CHARS);
    Some(finder)
}

/// The characters of a hit's text line.
const PASSAGE_CHARS: usize = 100;

fn print_hit(
    out: &mut Out,
    rank: usize,
    score: f32,
    shown: &StoredDoc,
    passages: Option<&SnippetGenerator>,
) -> CliResult<()> {
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
    // The text's beginning when it holds a word of the query (or only the title matched),
    // else the passage that matched best, marked as cut when it does not start the text.
    let matches = |text: &str| {
        passages
            .map(|p| p.snippet(text))
            .filter(|s| !s.highlighted().is_empty())
    };
    let head: String = shown.text.chars().take(PASSAGE_CHARS).collect();
    let passage = match matches(&head) {
        Some(_) => None,
        None => matches(&shown.text),
    };
    let line = match &passage {
        Some(p) if shown.text.find(p.fragment()).is_some_and(|at| at > 0) => {
            format!("…{}", one_line(p.fragment(), PASSAGE_CHARS - 1))
        }
        Some(p) => one_line(p.fragment(), PASSAGE_CHARS),
        None => one_line(&shown.text, PASSAGE_CHARS),
    };
    out.line(format_args!("             {line}"))
}

pub(super) fn similar(args: &SimilarArgs) -> CliResult<Status> {
    let store = app::open(&args.dir)?;
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
        (Some(id), None) => SimilarTo::Id(id),
        (None, Some(text)) if text.trim().is_empty() => {
            return Err(Failure::Usage(format!(
                "{flag} is empty: there is nothing to fingerprint (`neardup index` refuses \
                 such documents too); give the text to compare, or --id"
            )))
        }
        (None, Some(text)) => SimilarTo::Text(text),
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

#[derive(Serialize)]
struct SimilarHit<'a> {
    id: &'a str,
    #[serde(flatten)]
    evidence: EvidenceJson,
    fingerprint: String,
    title: &'a str,
    host: &'a str,
}

/// Prints what [`app::similar`] finds: a headline, then one line per near-duplicate.
pub(crate) fn similar_in(
    store: &Store,
    source: SimilarTo<'_>,
    k: Option<u32>,
    limit: usize,
    out: &mut Out,
) -> CliResult<()> {
    let found = app::similar(store, source, k, limit)?;
    if !out.is_json() {
        let own_id = match source {
            SimilarTo::Id(id) => Some(id),
            SimilarTo::Text(_) => None,
        };
        let what = match own_id {
            Some(id) => format!("`{id}`"),
            None => "the text".to_string(),
        };
        let by = match found.within {
            Some(k) => format!("within simhash distance {k}"),
            None => format!(
                "by the rule ({})",
                super::output::rule_brief(store.index.rule())
            ),
        };
        out.line(format_args!(
            "{} of {what} (fingerprint {}) {by}{}",
            count(found.hits.len() as u64, "near-duplicate", "near-duplicates"),
            found.fingerprint,
            if own_id.is_some() {
                ", itself left out"
            } else {
                ""
            }
        ))?;
    }
    for (hit, shown) in &found.hits {
        print_similar_hit(hit, shown, out)?;
    }
    Ok(())
}

/// One near-duplicate: a JSON line, or its evidence, id, title and host.
fn print_similar_hit(hit: &NearDup, shown: &StoredDoc, out: &mut Out) -> CliResult<()> {
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
    let store = app::open(&args.dir)?;
    let mut out = Out::new(args.json);
    stats_in(&store, args.limit, args.clusters, &mut out)?;
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
    /// The layout's simhash block keys per document (part of the rule's keys).
    block_keys_per_document: usize,
    /// The match rule every command applies (the index's; fixed when it was created).
    rule: String,
    /// The rule's keys per document (the layout's block keys and the MinHash band keys).
    keys_per_document: usize,
    language: &'a str,
    policy: &'a str,
    fields: &'a super::input::FieldMap,
    largest_groups: Vec<app::GroupSize>,
    /// With `--clusters`: the largest clusters by the rule, computed now over the whole index.
    #[serde(skip_serializing_if = "Option::is_none")]
    largest_clusters: Option<Vec<ClusterSize>>,
}

#[derive(Serialize)]
struct ClusterSize {
    cluster: String,
    documents: usize,
}

/// Prints what the index holds. Cost: the index's metadata and one pass over the group column,
/// unless `clusters` asks for the largest clusters, which runs the all-pairs join.
pub(crate) fn stats_in(
    store: &Store,
    limit: usize,
    clusters: bool,
    out: &mut Out,
) -> CliResult<()> {
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
        block_keys_per_document: layout.num_keys(),
        rule: store.index.rule().to_string(),
        keys_per_document: store.index.rule().keys_per_document(),
        language: &store.record.language,
        policy: &store.record.policy,
        fields: &store.record.fields,
        largest_groups: store.largest_groups(s, limit)?,
        largest_clusters: if clusters {
            Some(largest_clusters(store, &searcher, limit)?)
        } else {
            None
        },
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
        stats.layout, stats.block_keys_per_document, stats.k
    ))?;
    out.line(format_args!("rule       {}", stats.rule))?;
    out.line(format_args!(
        "keys       {} per document, in sorted tables in each segment",
        stats.keys_per_document,
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
    if let Some(largest) = &stats.largest_clusters {
        out.line(format_args!(
            "largest clusters by the rule (neardup clusters {} for their members):",
            stats.index.display()
        ))?;
        if largest.is_empty() {
            out.line("  none: the rule matches no two documents")?;
        }
        for c in largest {
            out.line(format_args!("  {:>6}  {}", c.documents, c.cluster))?;
        }
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

/// The `limit` largest leader clusters by the index's rule, on the searcher `stats` reads.
/// Cost: the streaming join over the index's key tables (no signature gathered) and the leader
/// walk (`PairJoin::clusters`).
fn largest_clusters(
    store: &Store,
    searcher: &tantivy::Searcher,
    limit: usize,
) -> CliResult<Vec<ClusterSize>> {
    let fields = store.index.fields();
    let clusters = tantivy_simhash::PairJoin::new(fields, searcher)?.clusters()?;
    let (largest, _) = app::largest_clusters(&clusters, 2, limit);
    Ok(largest
        .into_iter()
        .map(|c| ClusterSize {
            cluster: c.id.clone(),
            documents: c.len(),
        })
        .collect())
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
