//! Mirror sites: which hosts carry copies of which other hosts' pages (the method and its cost
//! are on [`MirrorFinder`]).

mod chrome;
mod pages;

use chrome::{ChromeCounts, HostContent, Line, PageContent};
use pages::{
    counterpart_groups, near_pairs, shared_by_groups, shared_by_pairs, PageTable, PairAcc,
};

use crate::error::{Error, Result};
use crate::fingerprint::Scheme;
use crate::layout::BlockLayout;
use crate::replay::document_text;
use crate::schema::NearDupIndex;
use crate::signature::{MatchRule, RuleSpec, Signature, Signer};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use tantivy::schema::{FieldType, Value};
use tantivy::{DocAddress, TantivyDocument};

/// One page of a host: its host name, its id and its text (the chrome included).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostPage {
    /// The host (or site) the page belongs to.
    pub host: String,
    /// The page's id, reported in examples.
    pub id: String,
    /// The page's text, lines separated by `\n`.
    pub text: String,
}

impl HostPage {
    /// A page of `host`.
    pub fn new(host: impl Into<String>, id: impl Into<String>, text: impl Into<String>) -> Self {
        HostPage {
            host: host.into(),
            id: id.into(),
            text: text.into(),
        }
    }
}

/// The settings of [`MirrorFinder`]. The defaults follow the mirror definition (10 pages or 20%
/// of the smaller host) and the measurements in docs/MIRRORS.md.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MirrorConfig {
    /// Two content fingerprints within this Hamming distance (inclusive) are copies of one page.
    /// 0..=9 ([`BlockLayout::for_distance`]). Default 8 (docs/MIRRORS.md: the estimate of `S`
    /// keeps rising up to 8 while no non-mirror pair gets closer to the rule).
    pub max_distance: u32,
    /// The resemblance branch of the rule for content: two pages whose content signatures share
    /// a MinHash band and whose sketches estimate at least this resemblance are copies too,
    /// however far apart their fingerprints (an edited or extended copy). `None` judges by the
    /// simhash distance alone. Default `Some(0.55)`, the default [`MatchRule`]'s threshold.
    #[serde(default = "default_min_resemblance")]
    pub min_resemblance: Option<f32>,
    /// A line (or most of its 3-shingles) found on this many pages of a host is chrome. At least
    /// 2; 0 turns chrome removal off (whole pages are fingerprinted). Default 2.
    pub chrome_min_pages: u32,
    /// Pages with fewer content tokens left after chrome removal are skipped. Default 20.
    pub min_content_tokens: u32,
    /// A host pair sharing this many pages is a mirror pair. Default 10.
    pub min_shared_pages: u32,
    /// A host pair sharing this share of the smaller host's pages is a mirror pair. Default 0.2.
    pub min_share: f64,
    /// Close page pairs under union-find (copies of copies count). Default true.
    pub transitive: bool,
    /// Example page pairs kept per host pair, nearest first. Default 3.
    pub max_examples: usize,
    /// Two pages whose shares of Han (Chinese) tokens differ by more than this are not copies
    /// of one another, whatever their distance: a copy keeps the script of its text, while a
    /// translation that keeps code, commands and names can come within the distance. 1 turns
    /// the check off. Default 0.2.
    pub max_script_gap: f64,
}

fn default_min_resemblance() -> Option<f32> {
    Some(RuleSpec::default().min_resemblance)
}

impl Default for MirrorConfig {
    fn default() -> Self {
        MirrorConfig {
            max_distance: 8,
            min_resemblance: default_min_resemblance(),
            chrome_min_pages: 2,
            min_content_tokens: 20,
            min_shared_pages: 10,
            min_share: 0.2,
            transitive: true,
            max_examples: 3,
            max_script_gap: 0.2,
        }
    }
}

/// Two pages that are copies of one page, as evidence for a [`HostPair`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PagePair {
    /// The page on [`HostPair::host_a`].
    pub page_a: String,
    /// The page on [`HostPair::host_b`].
    pub page_b: String,
    /// The Hamming distance of their content fingerprints. With [`MirrorConfig::transitive`] it
    /// can exceed [`MirrorConfig::max_distance`] when the two are linked through other copies.
    pub distance: u32,
}

/// Two hosts that carry copies of the same pages, with the evidence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostPair {
    /// The first host (the queried one, for [`MirrorReport::copies_of`]).
    pub host_a: String,
    /// The second host.
    pub host_b: String,
    /// Pages on `host_a`.
    pub pages_a: u32,
    /// Pages on `host_b`.
    pub pages_b: u32,
    /// Distinct pages both carry: the estimate of `S` in the mirror rule.
    pub shared_pages: u32,
    /// Pages of `host_a` with a copy on `host_b`.
    pub matched_a: u32,
    /// Pages of `host_b` with a copy on `host_a`.
    pub matched_b: u32,
    /// `matched_a / pages_a`.
    pub share_a: f64,
    /// `matched_b / pages_b`.
    pub share_b: f64,
    /// `shared_pages / min(min_shared_pages, min_share * min(pages_a, pages_b))`: 1 is the rule.
    pub score: f64,
    /// `score >= 1`: a mirror pair by the rule.
    pub is_mirror: bool,
    /// Example page pairs, nearest first.
    pub examples: Vec<PagePair>,
}

impl HostPair {
    fn swapped(&self) -> HostPair {
        HostPair {
            host_a: self.host_b.clone(),
            host_b: self.host_a.clone(),
            pages_a: self.pages_b,
            pages_b: self.pages_a,
            shared_pages: self.shared_pages,
            matched_a: self.matched_b,
            matched_b: self.matched_a,
            share_a: self.share_b,
            share_b: self.share_a,
            score: self.score,
            is_mirror: self.is_mirror,
            examples: self
                .examples
                .iter()
                .map(|e| PagePair {
                    page_a: e.page_b.clone(),
                    page_b: e.page_a.clone(),
                    distance: e.distance,
                })
                .collect(),
        }
    }
}

/// Counts that describe a run of [`MirrorFinder`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MirrorStats {
    /// Pages read.
    pub pages: u64,
    /// Hosts read.
    pub hosts: u64,
    /// Pages with enough content left to be fingerprinted.
    pub content_pages: u64,
    /// Share of tokens removed as chrome.
    pub chrome_share: f64,
    /// Cross-host page pairs the rule matches (within the distance, or resembling enough).
    pub page_pairs: u64,
    /// Pages in the largest counterpart group.
    pub largest_group: u64,
}

/// All host pairs that share at least one page, best first. Serialisable (JSON lines: one
/// [`HostPair`] per line).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MirrorReport {
    /// Host pairs sharing at least one page, by score (then shared pages), highest first;
    /// `host_a < host_b`.
    pub pairs: Vec<HostPair>,
    /// Pages per host.
    pub host_pages: HashMap<String, u32>,
    /// What the run saw.
    pub stats: MirrorStats,
}

impl MirrorReport {
    /// The mirror pairs ([`HostPair::is_mirror`]), best first. Cost: a lazy filter over the
    /// pairs.
    pub fn mirror_pairs(&self) -> impl Iterator<Item = &HostPair> {
        self.pairs.iter().filter(|p| p.is_mirror)
    }

    /// The hosts that carry copies of `host`'s pages, best first, each oriented with `host` as
    /// [`HostPair::host_a`]; mirrors and weaker evidence alike (filter on `is_mirror`). Empty
    /// when the host is unknown or shares nothing. Cost: a scan of the pairs.
    pub fn copies_of(&self, host: &str) -> Vec<HostPair> {
        self.pairs
            .iter()
            .filter_map(|p| {
                if p.host_a == host {
                    Some(p.clone())
                } else if p.host_b == host {
                    Some(p.swapped())
                } else {
                    None
                }
            })
            .collect()
    }
}

/// Finds mirror hosts among pages.
///
/// Mirror sites: which hosts carry copies of which other hosts' pages.
///
/// Two hosts are a *mirror pair* when they carry counterparts of many of the same pages: the
/// number `S` of distinct pages both carry reaches [`MirrorConfig::min_shared_pages`] (10), or
/// [`MirrorConfig::min_share`] (20%) of the smaller host. [`MirrorFinder`] estimates `S` for every
/// pair of hosts from simhash fingerprints of the pages' *content*, and reports each pair with
/// the pages matched on each side, their shares and example page pairs ([`HostPair`]).
///
/// # The method
///
/// 1. **Chrome removal, per host.** A page is its site's chrome (header, navigation, sidebar,
///    footer, date line, related links) around the content. Chrome is the same on many pages of
///    a host, and it dominates short pages: two unrelated pages in one template look alike, and
///    two copies of one page in two templates look different. So a line is dropped when it
///    occurs on at least [`MirrorConfig::chrome_min_pages`] pages of its host (numbers masked:
///    a date or a counter does not make a line unique), or when most of its word 3-shingles do
///    (related-link lists and breadcrumbs are made of other pages' titles). What is left is text
///    that occurs on one page of the host only: the evidence that this page is that page.
/// 2. **Signatures** of the remaining content with the [`Scheme`] (simhash fingerprint and MinHash
///    sketch, [`crate::Signer`]); pages with fewer than [`MirrorConfig::min_content_tokens`]
///    content tokens carry no evidence and are skipped.
/// 3. **Page pairs** by the match rule, with the simhash branch at
///    [`MirrorConfig::max_distance`] (keys of [`BlockLayout::for_distance`]`(max_distance)`) and the
///    default rule's resemblance branch ([`MirrorConfig::min_resemblance`]): the in-memory join
///    of [`signature::pairs_in_memory`](crate::signature::pairs_in_memory) finds every pair of
///    content signatures the rule matches, identical signatures grouped first. A pair whose shares of
///    Han tokens differ by more than [`MirrorConfig::max_script_gap`] is dropped: copies keep
///    their language, translations are not copies.
/// 4. **Counterpart groups**: with [`MirrorConfig::transitive`] (the default), the page pairs are
///    closed under union-find, so a page and its copies of copies form one group, as in the
///    mirror definition (a page derived through a chain of copies is still a counterpart).
///    `S(A, B)` is the number of groups that hold a page of `A` and a page of `B`. Without it,
///    only direct page pairs count and `S` is the smaller of the two matched page counts.
/// 5. **Host pairs** are scored by `score = S / min(min_shared_pages, min_share * min(|A|, |B|))`,
///    so `score >= 1` is exactly the mirror rule; [`HostPair::is_mirror`] says which.
///
/// Evidence must come from many distinct pages: a syndicated article or two on another host
/// stays far below the rule, and hosts that only share a template share no content after step 1.
///
/// # Cost
///
/// Analysis of every page twice (line tokens for chrome, then the fingerprint), in parallel
/// (rayon, over hosts and over the pages of a host); the join sorts `N` keys per key combination
/// and checks the pairs within equal keys (`N` log `N` per combination; 165 combinations at
/// `k = 8`), then expands identical fingerprints into page pairs (quadratic in the copies of one
/// page: fine for mirrors, costly if thousands of pages share one content). Memory: the input
/// text, plus the line and shingle hashes of the hosts being processed (8 bytes per token), plus
/// a few words per page. Measured in docs/MIRRORS.md: 2,100 pages/s on 2 cores, 4.2x the time of
/// fingerprinting every page once.
///
/// ```
/// use tantivy_simhash::{HostPage, MirrorConfig, MirrorFinder};
/// use tantivy_simhash::Scheme;
///
/// let finder = MirrorFinder::new(Scheme::default(), MirrorConfig::default())?;
/// // 12 articles of 40 distinct made-up words each.
/// let word = |n: usize| -> String {
///     let syllables = ["ka", "lo", "mi", "ne", "ru", "to", "sa", "vi"];
///     (0..4).map(|d| syllables[(n >> (3 * d)) & 7]).collect()
/// };
/// let article = |i: usize| (0..40).map(|j| word(i * 40 + j)).collect::<Vec<_>>().join(" ");
/// let mut pages = Vec::new();
/// for host in ["docs.example.org", "mirror.example.net"] {
///     for i in 0..12 {
///         // The same article in each host's chrome: header, navigation, footer.
///         let text = format!("{host}\nhome | about | contact\n{}\nCopyright 2024 {host}", article(i));
///         pages.push(HostPage::new(host, format!("{host}/{i}"), text));
///     }
/// }
/// let report = finder.find(pages)?;
/// let pair = &report.pairs[0];
/// assert_eq!(pair.shared_pages, 12);
/// assert!(pair.is_mirror);
/// let copies = report.copies_of("docs.example.org");
/// assert_eq!(copies[0].host_b, "mirror.example.net");
/// # Ok::<(), tantivy_simhash::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct MirrorFinder {
    scheme: Scheme,
    config: MirrorConfig,
    rule: MatchRule,
}

impl MirrorFinder {
    /// A finder that fingerprints content with `scheme`.
    ///
    /// Errors ([`Error::InvalidConfig`]): `max_distance` beyond 9, `chrome_min_pages` of 1 (every
    /// line would be chrome), `min_share` outside `0..=1` or not finite. Cost: builds the match
    /// rule (its layout and MinHash permutations); no I/O.
    pub fn new(scheme: Scheme, config: MirrorConfig) -> Result<Self> {
        let layout = BlockLayout::for_distance(config.max_distance)?;
        let rule = MatchRule::new(RuleSpec {
            layout,
            // Without the resemblance branch the threshold is unused (its pairs are dropped).
            min_resemblance: config.min_resemblance.unwrap_or(1.0),
            ..RuleSpec::default()
        })?;
        if config.chrome_min_pages == 1 {
            return Err(Error::InvalidConfig(
                "chrome_min_pages = 1 makes every line chrome; use 2 or more (0 turns chrome \
                 removal off)"
                    .into(),
            ));
        }
        for (name, v) in [
            ("min_share", config.min_share),
            ("max_script_gap", config.max_script_gap),
        ] {
            if !(v.is_finite() && (0.0..=1.0).contains(&v)) {
                return Err(Error::InvalidConfig(format!(
                    "{name} = {v}; expected a share between 0 and 1"
                )));
            }
        }
        Ok(MirrorFinder {
            scheme,
            config,
            rule,
        })
    }

    /// The settings. Free.
    pub fn config(&self) -> &MirrorConfig {
        &self.config
    }

    /// Finds the host pairs among `pages` (grouped by [`HostPage::host`]; the report does not
    /// depend on their order). Cost: see [`MirrorFinder`]. Any text is accepted: this
    /// does not fail today, the `Result` keeps room for limits on input size.
    pub fn find(&self, pages: impl IntoIterator<Item = HostPage>) -> Result<MirrorReport> {
        let mut by_host: HashMap<String, Vec<(String, String)>> = HashMap::new();
        for p in pages {
            by_host.entry(p.host).or_default().push((p.id, p.text));
        }
        let mut hosts: Vec<(String, Vec<(String, String)>)> = by_host.into_iter().collect();
        // Sorted hosts and pages: the report does not depend on the input order.
        hosts.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, pages) in &mut hosts {
            pages.sort_by(|a, b| a.0.cmp(&b.0));
        }
        self.find_grouped(hosts)
    }

    /// Finds the host pairs among the live documents of `index`: the host is the stored value of
    /// `host_field`, the text the stored values of the index's text fields (joined by line
    /// breaks), the id the id field's value.
    ///
    /// Documents without a host value are skipped. Errors: [`Error::Schema`] when `host_field`
    /// or a text field is missing or not a `STORED` text field; tantivy errors from the doc store.
    /// Cost: every live stored document is read (the doc store decompressed once) with its id
    /// (one id column read each), then [`find`](Self::find).
    pub fn find_in_index(&self, index: &NearDupIndex, host_field: &str) -> Result<MirrorReport> {
        let schema = index.index().schema();
        let stored = |name: &str| -> Result<tantivy::schema::Field> {
            let field = schema.get_field(name).map_err(|_| Error::Schema {
                field: name.to_string(),
                problem: "not in the schema; mirror detection reads the host and the page text \
                          from the doc store"
                    .into(),
            })?;
            let entry = schema.get_field_entry(field);
            if !(entry.is_stored() && matches!(entry.field_type(), FieldType::Str(_))) {
                return Err(Error::Schema {
                    field: name.to_string(),
                    problem: "must be a STORED text field: mirror detection re-reads it from the \
                              doc store; add STORED to its options and reindex"
                        .into(),
                });
            }
            Ok(field)
        };
        let host = stored(host_field)?;
        let text_fields = index
            .config()
            .text_fields()
            .iter()
            .map(|n| stored(n))
            .collect::<Result<Vec<_>>>()?;
        let searcher = index.searcher()?;
        let lookups = index.lookups_of(&searcher)?;
        let mut pages = Vec::new();
        for (ord, seg) in searcher.segment_readers().iter().enumerate() {
            for doc in seg.doc_ids_alive() {
                let address = DocAddress::new(ord as u32, doc);
                let stored_doc: TantivyDocument = searcher.doc(address)?;
                let Some(h) = stored_doc.get_first(host).and_then(|v| v.as_str()) else {
                    continue;
                };
                let text = document_text(&stored_doc, &text_fields);
                let id = lookups
                    .id_of(address)?
                    .unwrap_or_else(|| format!("{ord}/{doc}"));
                pages.push(HostPage::new(h, id, text));
            }
        }
        self.find(pages)
    }

    fn find_grouped(&self, hosts: Vec<(String, Vec<(String, String)>)>) -> Result<MirrorReport> {
        let cfg = &self.config;
        // Per host, in parallel: chrome removal and content fingerprints.
        let analyzed: Vec<HostContent> = hosts
            .par_iter()
            .map(|(_, pages)| self.host_content(pages))
            .collect();
        let pages = PageTable::flatten(hosts, analyzed);

        let content: Vec<(u32, &Signature)> = pages
            .signatures
            .iter()
            .enumerate()
            .filter_map(|(i, sig)| sig.as_ref().map(|s| (i as u32, s)))
            .collect();
        let edges = self.page_edges(&pages, &content);
        let cross: Vec<&(u32, u32, u32)> = edges
            .iter()
            .filter(|(a, b, _)| pages.hosts[*a as usize] != pages.hosts[*b as usize])
            .collect();

        // Groups of counterparts: connected components, or each cross-host pair on its own.
        let (groups, shared) = if cfg.transitive {
            let groups = counterpart_groups(pages.ids.len(), &edges);
            let shared = shared_by_groups(&groups, &pages, cfg.max_examples);
            (groups, shared)
        } else {
            (
                Vec::new(),
                shared_by_pairs(&cross, &pages, cfg.max_examples),
            )
        };

        let mut pairs: Vec<HostPair> = shared
            .into_iter()
            .map(|(hosts, acc)| self.host_pair(hosts, acc, &pages))
            .collect();
        // Best first; ties by pages shared, then by names.
        pairs.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(b.shared_pages.cmp(&a.shared_pages))
                .then_with(|| a.host_a.cmp(&b.host_a))
                .then_with(|| a.host_b.cmp(&b.host_b))
        });

        let stats = MirrorStats {
            pages: pages.ids.len() as u64,
            hosts: pages.host_names.len() as u64,
            content_pages: content.len() as u64,
            chrome_share: pages.chrome_share(),
            page_pairs: cross.len() as u64,
            largest_group: groups.iter().map(|g| g.len() as u64).max().unwrap_or(0),
        };
        Ok(MirrorReport {
            pairs,
            host_pages: pages.host_names.into_iter().zip(pages.host_sizes).collect(),
            stats,
        })
    }

    /// The pairs of pages with content that the rule matches, `(a, b, distance)`, but for
    /// pages whose shares of Han script differ by more than the configuration allows.
    fn page_edges(&self, pages: &PageTable, content: &[(u32, &Signature)]) -> Vec<(u32, u32, u32)> {
        let cfg = &self.config;
        let mut edges = near_pairs(&self.rule, cfg.min_resemblance.is_some(), content);
        edges.retain(|&(a, b, _)| {
            (pages.han_shares[a as usize] - pages.han_shares[b as usize]).abs()
                <= cfg.max_script_gap
        });
        edges
    }

    /// The scored [`HostPair`] of hosts `(ha, hb)` (`ha < hb`) from what they share.
    fn host_pair(&self, (ha, hb): (u32, u32), shared: PairAcc, pages: &PageTable) -> HostPair {
        let cfg = &self.config;
        let (na, nb) = (pages.host_sizes[ha as usize], pages.host_sizes[hb as usize]);
        let needed = (cfg.min_shared_pages as f64)
            .min(cfg.min_share * f64::from(na.min(nb)))
            .max(f64::MIN_POSITIVE);
        let score = f64::from(shared.shared) / needed;
        let mut examples = shared.examples;
        examples.sort_unstable();
        HostPair {
            host_a: pages.host_names[ha as usize].clone(),
            host_b: pages.host_names[hb as usize].clone(),
            pages_a: na,
            pages_b: nb,
            shared_pages: shared.shared,
            matched_a: shared.matched_a,
            matched_b: shared.matched_b,
            share_a: f64::from(shared.matched_a) / f64::from(na.max(1)),
            share_b: f64::from(shared.matched_b) / f64::from(nb.max(1)),
            score,
            is_mirror: score >= 1.0,
            examples: examples
                .into_iter()
                .map(|(distance, a, b)| PagePair {
                    page_a: pages.ids[a as usize].clone(),
                    page_b: pages.ids[b as usize].clone(),
                    distance,
                })
                .collect(),
        }
    }

    /// Chrome removal and content fingerprints for the pages of one host.
    fn host_content(&self, pages: &[(String, String)]) -> HostContent {
        let seed = 0x6d69_7272_6f72_7321; // "mirrors!"
                                          // Pages in parallel too, so one large host does not run on one thread.
        let lines: Vec<Vec<Line>> = pages
            .par_iter()
            .map_init(
                || self.scheme.text_analyzer(),
                |analyzer, (_, text)| {
                    text.split('\n')
                        .map(|line| Line::analyze(analyzer, line, seed))
                        .collect()
                },
            )
            .collect();
        let chrome = ChromeCounts::count(&lines, self.config.chrome_min_pages);
        let per_page: Vec<PageContent> = pages
            .par_iter()
            .zip(&lines)
            .map_init(
                || self.rule.signer(&self.scheme),
                |signer, ((_, text), page)| self.page_content(signer, text, page, &chrome),
            )
            .collect();
        let mut out = HostContent::default();
        for page in per_page {
            out.fingerprints.push(page.signature);
            out.han_shares.push(page.han_share);
            out.tokens += page.tokens;
            out.chrome_tokens += page.chrome_tokens;
        }
        out
    }

    /// One page's content (its lines that are not chrome) and its signature, when enough of it
    /// is left.
    fn page_content(
        &self,
        signer: &mut Signer,
        text: &str,
        page: &[Line],
        chrome: &ChromeCounts,
    ) -> PageContent {
        let mut content = String::new();
        let (mut tokens, mut chrome_tokens, mut han) = (0u64, 0u64, 0u64);
        for (raw, l) in text.split('\n').zip(page) {
            if l.tokens == 0 {
                continue;
            }
            tokens += u64::from(l.tokens);
            if chrome.is_chrome(l) {
                chrome_tokens += u64::from(l.tokens);
                continue;
            }
            han += u64::from(l.han_tokens);
            if !content.is_empty() {
                content.push('\n');
            }
            content.push_str(raw);
        }
        let kept = tokens - chrome_tokens;
        let signature =
            (kept >= u64::from(self.config.min_content_tokens)).then(|| signer.sign(&content));
        let han_share = if kept == 0 {
            0.0
        } else {
            han as f64 / kept as f64
        };
        PageContent {
            signature,
            han_share,
            tokens,
            chrome_tokens,
        }
    }
}

#[cfg(test)]
mod tests;
