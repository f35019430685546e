//! Searching a store: a query over title and text with near-duplicate collapse, and the
//! lookups of one document's or one text's near-duplicates. `neardup search` / `neardup
//! similar` and Python's `Index.search` / `Index.similar` are this code; they only parse their
//! arguments and print or convert what it returns.

use super::{Store, StoredDoc};
use crate::collapse::{Collapsed, CollapsedHit, GroupBy, NearDupCollapse};
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use crate::lookup::NearDup;
use crate::schema::SEQUENCE_FIELD;
use std::collections::HashMap;
use tantivy::collector::TopDocs;
use tantivy::query::{Query, QueryParser};
use tantivy::{DocAddress, Order, Searcher};

/// How a search folds its hits.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Collapse {
    /// Every matching document, ranked by score.
    Off,
    /// One result per group of near-duplicates (the index's match rule).
    #[default]
    NearDuplicates,
    /// One result per value of this fast field (`host`, or the group column of `Policy::Tag`);
    /// a document without a value stands alone.
    Field(String),
}

/// Which hit leads a collapsed group (by the order documents were added, [`SEQUENCE_FIELD`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LeaderChoice {
    /// The copy added last.
    Newest,
    /// The copy added first.
    Oldest,
}

impl LeaderChoice {
    /// `newest` or `oldest`.
    pub fn from_name(name: &str) -> Option<LeaderChoice> {
        match name {
            "newest" => Some(LeaderChoice::Newest),
            "oldest" => Some(LeaderChoice::Oldest),
            _ => None,
        }
    }
}

/// With a leader choice or `derank`, the window of hits looked at is this many times the limit.
pub const WIDE_WINDOW: usize = 64;

/// What a search returns and how it folds its hits.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SearchSettings {
    /// How many results (groups, or documents without collapse); at least 1.
    pub limit: usize,
    /// How hits are folded.
    pub collapse: Collapse,
    /// Which hit leads a group; `None`: its best-ranked hit. The group still ranks where its
    /// best hit ranks. Needs a collapse.
    pub leader: Option<LeaderChoice>,
    /// One flat list: the groups' leaders, then the groups' other hits in the window in rank
    /// order (`moved`, with their leader's id). Needs a collapse.
    pub derank: bool,
}

impl SearchSettings {
    /// The best `limit` groups of near-duplicates, each led by its best-ranked hit.
    pub fn new(limit: usize) -> Self {
        SearchSettings {
            limit,
            collapse: Collapse::NearDuplicates,
            leader: None,
            derank: false,
        }
    }
}

/// A result of [`Search::run`]: a document and, when collapsed, the hits folded into it.
#[derive(Clone, Debug)]
pub struct SearchHit {
    /// 1-based position in the results.
    pub rank: usize,
    /// Its score.
    pub score: f32,
    /// Its stored fields.
    pub doc: StoredDoc,
    /// Where it is in the searcher of the search.
    pub address: DocAddress,
    /// The document and the hits folded into it among every matching document (1 without
    /// collapse, and for a hit `derank` moved).
    pub group_size: usize,
    /// Whether `group_size` counts every matching document (else: at least).
    pub group_size_exact: bool,
    /// With [`Collapse::Field`], the value the group shares (`None` without one).
    pub group_value: Option<String>,
    /// The hits folded into it among the window of top hits, in rank order, with their
    /// distance (and resemblance for a resemblance match) to it.
    pub members: Vec<CollapsedHit<f32>>,
    /// With `derank`: whether the hit was moved behind the leaders.
    pub moved: bool,
    /// For a moved hit: the id of its group's leader.
    pub leader_id: Option<String>,
}

/// A search of a store with fixed [`SearchSettings`], reusable across queries: keep one to keep
/// the collapse's per-segment columns open between searches.
pub struct Search {
    settings: SearchSettings,
    collapse: Option<Box<CollapseFn>>,
}

type CollapseFn = dyn Fn(&Searcher, &dyn Query) -> Result<Collapsed<f32>> + Send + Sync;

/// The collapse of `settings` for `limit` groups, with a window of at most `max_fetch` hits.
fn make_collapse(
    store: &Store,
    settings: &SearchSettings,
    limit: usize,
    max_fetch: usize,
) -> Result<Box<CollapseFn>> {
    // Exact group sizes cost a lookup of each leader's keys (docs/PERFORMANCE.md): worth it
    // for a person reading "N near-duplicates".
    let mut collapse = NearDupCollapse::by_score(store.index.fields(), limit)
        .exact_counts(true)
        .sharing_id_tables(store.index.id_tables());
    if let Collapse::Field(field) = &settings.collapse {
        collapse = collapse.group_by(GroupBy::Field(field.clone()))?;
    }
    if settings.leader.is_some() || settings.derank {
        // Leaders are chosen among, and moved hits are, the groups' hits in the window: look at
        // the widening bound's 64 x limit top hits at once, so that a group's newest copy or its
        // other hits are not missed because the first groups filled a 3 x limit window.
        collapse = collapse.fetch(wide_window(limit).min(max_fetch));
    }
    if let Some(choice) = settings.leader {
        // The sequence field numbers documents in the order they were added.
        let order = match choice {
            LeaderChoice::Newest => Order::Desc,
            LeaderChoice::Oldest => Order::Asc,
        };
        collapse = collapse.leader_order(SEQUENCE_FIELD, order);
    }
    Ok(Box::new(move |searcher: &Searcher, query: &dyn Query| {
        collapse.search(searcher, query)
    }))
}

/// The hits a leader choice or derank looks at for `limit` groups.
fn wide_window(limit: usize) -> usize {
    limit.saturating_mul(WIDE_WINDOW)
}

impl Search {
    /// A search of `store` with `settings`. Errors with [`Error::Setting`] for a limit of 0, a
    /// leader choice or `derank` without a collapse, and a field that cannot group (not a fast
    /// field of the schema). Cost: nothing until run.
    pub fn new(store: &Store, settings: SearchSettings) -> Result<Search> {
        if settings.limit == 0 {
            return Err(Error::Setting(
                "a search returns at least 1 result: ask for a limit of 1 or more".into(),
            ));
        }
        let needs_collapse = settings.leader.is_some() || settings.derank;
        if settings.collapse == Collapse::Off {
            if needs_collapse {
                return Err(Error::Setting(
                    "a leader choice and derank act on collapsed groups, and the search asks \
                     for every document ungrouped; collapse, or drop them"
                        .into(),
                ));
            }
            return Ok(Search {
                settings,
                collapse: None,
            });
        }
        let collapse = make_collapse(store, &settings, settings.limit, usize::MAX)?;
        Ok(Search {
            settings,
            collapse: Some(collapse),
        })
    }

    /// The settings it searches with.
    pub fn settings(&self) -> &SearchSettings {
        &self.settings
    }

    /// The best results for `query` (tantivy's query syntax over title and text) in the
    /// store's current searcher. Cost: the search, the collapse (a lookup per leader for the
    /// exact counts) and one doc-store read per result.
    ///
    /// Errors: [`Error::Request`] for a query that does not parse; [`Error::Store`] for a
    /// leader choice on an index without the order of addition (made by an older version);
    /// [`Error::Schema`] for a collapse field of the wrong type; tantivy's errors.
    pub fn run(&self, store: &Store, query: &str) -> Result<Vec<SearchHit>> {
        let searcher = store.index.searcher()?;
        let f = store.fields;
        let parser = QueryParser::for_index(store.index.index(), vec![f.title, f.text]);
        let parsed = parser.parse_query(query).map_err(|e| {
            Error::Request(format!(
                "cannot parse the query `{query}`: {e}; use words, \"phrases\", +must, -not or \
                 title:word"
            ))
        })?;
        // No query has more hits than the index has documents: a huge limit must not make
        // tantivy's top-k allocate for it. Within the index's size the kept collapse serves;
        // beyond it, one capped at the size serves this search.
        let docs = usize::try_from(searcher.num_docs())
            .unwrap_or(usize::MAX)
            .max(1);
        let limit = self.settings.limit.min(docs);
        let Some(kept) = &self.collapse else {
            let top = TopDocs::with_limit(limit).order_by_score();
            let found = searcher.search(&parsed, &top)?;
            return found
                .into_iter()
                .enumerate()
                .map(|(i, (score, address))| {
                    Ok(alone(
                        i + 1,
                        score,
                        store.load_doc(&searcher, address)?,
                        address,
                    ))
                })
                .collect();
        };
        let window = match self.settings.leader.is_some() || self.settings.derank {
            true => wide_window(self.settings.limit),
            false => self.settings.limit,
        };
        let capped;
        let collapse = match window > docs {
            false => kept,
            true => {
                capped = make_collapse(store, &self.settings, limit, docs)?;
                &capped
            }
        };
        let results = collapse(&searcher, &parsed).map_err(|e| match e {
            Error::Schema { field, .. }
                if self.settings.leader.is_some() && field == SEQUENCE_FIELD =>
            {
                Error::Store(format!(
                    "choosing the newest or oldest copy reads the order documents were added \
                     (the field {SEQUENCE_FIELD}), which this index does not have (it was made \
                     by an older version); rebuild it, or search without a leader choice"
                ))
            }
            e => e,
        })?;
        let by_field = matches!(self.settings.collapse, Collapse::Field(_));
        let mut hits = Vec::with_capacity(results.groups().len());
        for (i, g) in results.groups().iter().enumerate() {
            hits.push(SearchHit {
                rank: i + 1,
                score: g.leader.key,
                doc: store.load_doc(&searcher, g.leader.address)?,
                address: g.leader.address,
                group_size: g.count,
                group_size_exact: g.count_exact,
                group_value: g.leader.group.clone().filter(|_| by_field),
                members: g.members.clone(),
                moved: false,
                leader_id: None,
            });
        }
        if self.settings.derank {
            // `deranked` lists the leaders (the hits above), then the groups' members in rank
            // order; a member's leader is found by its address (one index: unique).
            let leader_of: HashMap<DocAddress, usize> = results
                .groups()
                .iter()
                .enumerate()
                .flat_map(|(i, g)| g.members.iter().map(move |m| (m.address, i)))
                .collect();
            let leaders = hits.len();
            for (i, m) in results.deranked().into_iter().enumerate().skip(leaders) {
                let mut hit = alone(
                    i + 1,
                    m.key,
                    store.load_doc(&searcher, m.address)?,
                    m.address,
                );
                hit.moved = true;
                hit.leader_id = leader_of.get(&m.address).map(|&g| hits[g].doc.id.clone());
                hits.push(hit);
            }
        }
        Ok(hits)
    }
}

/// A hit shown on its own: a group of one.
fn alone(rank: usize, score: f32, doc: StoredDoc, address: DocAddress) -> SearchHit {
    SearchHit {
        rank,
        score,
        doc,
        address,
        group_size: 1,
        group_size_exact: true,
        group_value: None,
        members: Vec::new(),
        moved: false,
        leader_id: None,
    }
}

/// What [`similar()`] looks up.
#[derive(Clone, Copy, Debug)]
pub enum SimilarTo<'a> {
    /// The document with this id (left out of the results).
    Id(&'a str),
    /// A text, signed with the index's scheme and rule.
    Text(&'a str),
}

/// The near-duplicates [`similar()`] found.
#[derive(Clone, Debug)]
pub struct Similar {
    /// The fingerprint looked up.
    pub fingerprint: Fingerprint,
    /// The simhash-only distance asked for; `None`: the index's match rule.
    pub within: Option<u32>,
    /// What was found, strongest evidence first, each with its stored fields.
    pub hits: Vec<(NearDup, StoredDoc)>,
}

/// The documents the index's match rule matches with a document or a text, strongest evidence
/// first (simhash matches nearest first, then resemblance matches most resembling first); with
/// `k`, simhash-only: the documents within `k` (at most the index's k). The document itself is
/// left out; `limit` > 0 keeps the first ones. Cost: one lookup, one doc-store read per hit.
///
/// Errors: [`Error::Setting`] for an empty text (nothing to fingerprint) or a `k` beyond the
/// index's; [`Error::Request`] when no document has the id; tantivy's errors.
pub fn similar(store: &Store, to: SimilarTo<'_>, k: Option<u32>, limit: usize) -> Result<Similar> {
    let within = k.map(|k| store.checked_k(Some(k))).transpose()?;
    let lookups = store.index.lookups()?;
    let (signature, own_id) = match to {
        SimilarTo::Id(id) => {
            let signature = lookups.signature_of_id(id)?.ok_or_else(|| {
                Error::Request(format!(
                    "no document has id `{id}` in {}",
                    store.dir.display()
                ))
            })?;
            (signature, Some(id))
        }
        SimilarTo::Text(text) if text.trim().is_empty() => {
            return Err(Error::Setting(
                "the text is empty: there is nothing to fingerprint (indexing refuses such \
                 documents too); give the text to compare, or an id"
                    .into(),
            ))
        }
        SimilarTo::Text(text) => (store.index.sign(text), None),
    };
    let mut found = match within {
        Some(k) => lookups.lookup_within(signature.fingerprint, k)?,
        None => lookups.lookup_signature(&signature)?,
    };
    found.retain(|h| Some(h.id.as_str()) != own_id);
    if limit > 0 {
        found.truncate(limit);
    }
    let hits = found
        .into_iter()
        .map(|h| {
            let doc = store.load_doc(lookups.searcher(), h.address)?;
            Ok((h, doc))
        })
        .collect::<Result<_>>()?;
    Ok(Similar {
        fingerprint: signature.fingerprint,
        within,
        hits,
    })
}
