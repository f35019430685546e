//! `neardup pairs` and `neardup clusters`: batch jobs over the whole index (the streaming
//! join, `PairJoin`: no signature gathered in memory).

use super::app::{self, Store};
use super::output::{count, one_line};
use super::{CliResult, ClustersArgs, Out, PairsArgs, Status};
use serde::Serialize;
use tantivy_simhash::Evidence;
use tantivy_simhash::PairStats;
use tantivy_simhash::{Cluster, ClusterMode, PairJoin, DEFAULT_JOIN_MAX_POSTINGS_PER_KEY};

/// The streaming join of every pair (no signature gathered in memory).
/// How a batch command narrows the rule (`-k`, `--min-resemblance`); the default keeps it whole.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Narrowing {
    pub(crate) k: Option<u32>,
    pub(crate) min_resemblance: Option<f32>,
}

/// The streaming join of `store` narrowed by `narrowing`.
fn pair_join(store: &Store, narrowing: Narrowing) -> CliResult<PairJoin> {
    Ok(app::pair_join(
        store,
        narrowing.k,
        narrowing.min_resemblance,
    )?)
}

/// The rule a join pairs by, with its narrowed simhash radius and its resemblance floor.
fn rule_text(join: &PairJoin, min_resemblance: Option<f32>) -> String {
    let (rule, max_distance) = (join.rule(), join.max_distance());
    let mut text = super::output::rule_brief(rule);
    if max_distance != rule.layout().max_distance() {
        text.push_str(&format!(
            "; simhash branch narrowed to distance {max_distance}"
        ));
    }
    if let Some(min) = min_resemblance {
        text.push_str(&format!(
            "; only pairs whose sketches estimate a resemblance >= {min}"
        ));
    }
    text
}

/// Says on stderr how many of the rule's pairs a resemblance floor left out.
fn note_below(stats: &PairStats, min_resemblance: Option<f32>) {
    if let Some(min) = min_resemblance {
        super::eprintln_quiet(&format!(
            "note: {} of the rule left out: their sketches estimate a resemblance under {min}",
            count(stats.below_min_resemblance, "pair", "pairs")
        ));
    }
}

/// One pair of `neardup pairs --json`: the ids, the simhash distance, which branch of the rule
/// matched (`"simhash"` or `"resemblance"`) and, for a resemblance match, the sketches' estimate.
#[derive(Serialize)]
struct PairLine<'a> {
    a: &'a str,
    b: &'a str,
    distance: u32,
    #[serde(rename = "match")]
    branch: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    resemblance: Option<f32>,
}

/// The rule's branch that matched, as `pairs` prints it.
fn branch(evidence: &Evidence) -> &'static str {
    match evidence {
        Evidence::Simhash { .. } => "simhash",
        Evidence::Resemblance { .. } => "resemblance",
    }
}

/// Says on stderr when the join cut hot keys (some pairs may be missing).
pub(crate) fn warn_hot_keys(stats: &PairStats, bound: usize) {
    if stats.hot_keys > 0 {
        super::eprintln_quiet(&format!(
            "note: {} shared by more than {bound} distinct documents compared each document with \
             the next {bound} only; a pair that shares nothing but such keys may be missing",
            count(stats.hot_keys, "key", "keys")
        ));
    }
}

pub(super) fn pairs(args: &PairsArgs) -> CliResult<Status> {
    let store = app::open(&args.rule.dir)?;
    let min = args.rule.min_resemblance;
    let join = pair_join(&store, args.rule.narrowing())?;
    let mut out = Out::new(args.json);
    // The join meets pairs in an order that depends on the segments; they are sorted by ids
    // (byte order of the smaller id, then the other), so that two indexes of the same input
    // print the same bytes. Cost: the pairs are held (their ids plus ~40 bytes each).
    let mut pairs: Vec<(String, String, Evidence)> = Vec::new();
    let stats = join.for_each_id_pair(|pair| {
        let (a, b) = if pair.a <= pair.b {
            (pair.a, pair.b)
        } else {
            (pair.b, pair.a)
        };
        pairs.push((a.to_string(), b.to_string(), pair.evidence));
    })?;
    pairs.sort_unstable_by(|x, y| (&x.0, &x.1).cmp(&(&y.0, &y.1)));
    let total = pairs.len() as u64;
    let shown = if args.limit > 0 {
        args.limit.min(pairs.len())
    } else {
        pairs.len()
    };
    for (a, b, evidence) in &pairs[..shown] {
        let (distance, resemblance) = (evidence.distance(), evidence.resemblance());
        if out.is_json() {
            out.json_line(&PairLine {
                a,
                b,
                distance,
                branch: branch(evidence),
                resemblance,
            })?;
        } else {
            let resemblance = resemblance.map_or("-".to_string(), |r| format!("{r:.3}"));
            out.line(format_args!("{distance}\t{a}\t{b}\t{resemblance}"))?;
        }
    }
    let printed = shown;
    warn_hot_keys(&stats, DEFAULT_JOIN_MAX_POSTINGS_PER_KEY);
    note_below(&stats, min);
    if !out.is_json() {
        super::eprintln_quiet(&format!(
            "{} by the rule ({}) among {}{}",
            count(total, "pair", "pairs"),
            rule_text(&join, min),
            count(join.num_docs() as u64, "document", "documents"),
            if printed < total as usize {
                format!(" ({printed} printed)")
            } else {
                String::new()
            }
        ));
    }
    out.flush()?;
    Ok(Status::Done)
}

#[derive(Serialize)]
struct ClusterLine<'a> {
    cluster: &'a str,
    size: usize,
    members: Vec<&'a str>,
}

pub(super) fn clusters(args: &ClustersArgs) -> CliResult<Status> {
    let store = app::open(&args.rule.dir)?;
    let mut out = Out::new(args.json);
    clusters_in(
        &store,
        args.rule.narrowing(),
        args.limit,
        args.min_size,
        args.members,
        args.mode.into(),
        &mut out,
    )?;
    out.flush()?;
    Ok(Status::Done)
}

/// Prints the largest clusters (by leader, or connected components of the pairs within k),
/// largest first.
pub(crate) fn clusters_in(
    store: &Store,
    narrowing: Narrowing,
    limit: usize,
    min_size: usize,
    members: usize,
    mode: ClusterMode,
    out: &mut Out,
) -> CliResult<()> {
    // Both modes run over the streaming join (no signature gathered in memory).
    let min_resemblance = narrowing.min_resemblance;
    let join = pair_join(store, narrowing)?;
    let clusters = join.clusters_by(mode)?;
    warn_hot_keys(&clusters.join_stats(), DEFAULT_JOIN_MAX_POSTINGS_PER_KEY);
    note_below(&clusters.join_stats(), min_resemblance);
    let (sorted, total) = app::largest_clusters(&clusters, min_size, limit);
    let clustered: usize = clusters.iter().map(|c| c.len()).sum();
    if !out.is_json() {
        out.line(format_args!(
            "{} of at least {} documents {} ({}), {} in clusters of {}; largest first",
            count(total as u64, "cluster", "clusters"),
            min_size.max(2),
            match mode {
                ClusterMode::Leader => "each matching its leader (the first added) by the rule",
                ClusterMode::Components => "linked by chains of pairs by the rule",
            },
            rule_text(&join, min_resemblance),
            count(clustered as u64, "document", "documents"),
            clusters.num_docs()
        ))?;
    }
    for c in sorted {
        print_cluster(store, clusters.searcher(), c, members, out)?;
    }
    Ok(())
}

/// One cluster: a JSON line with every member, or its size, id and first title, then up to
/// `members` other members with their titles.
fn print_cluster(
    store: &Store,
    searcher: &tantivy::Searcher,
    c: &Cluster,
    members: usize,
    out: &mut Out,
) -> CliResult<()> {
    if out.is_json() {
        return out.json_line(&ClusterLine {
            cluster: &c.id,
            size: c.len(),
            members: c.members.iter().map(|m| m.id.as_str()).collect(),
        });
    }
    // The leader first (members are sorted by id under components).
    let leader = c.leader().unwrap_or(&c.members[0]);
    let first = store.load_doc(searcher, leader.address)?;
    let line = format!("{:>6}  {}  {}", c.len(), c.id, one_line(&first.title, 60));
    out.line(line.trim_end())?;
    let others = c.members.iter().filter(|m| m.address != leader.address);
    for m in others.take(members) {
        let shown = store.load_doc(searcher, m.address)?;
        let line = format!("          {}  {}", m.id, one_line(&shown.title, 60));
        out.line(line.trim_end())?;
    }
    if c.len() > members + 1 {
        out.line(format_args!("          … {} more", c.len() - members - 1))?;
    }
    Ok(())
}
