//! Mirror detection on a small generated web, against an oracle that applies the mirror
//! definition to the generator's own record of which source page each host page came from.

mod common;

use common::Rng;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use tantivy::schema::{Schema, FAST, STORED, STRING, TEXT};
use tantivy::{doc, Index};
use tantivy_simhash::{Error, NearDupConfig, NearDupIndex, Policy, Scheme};
use tantivy_simhash::{HostPage, MirrorConfig, MirrorFinder, MirrorReport};

const SYLLABLES: [&str; 24] = [
    "ka", "lo", "mi", "ne", "ru", "to", "sa", "vi", "de", "po", "gu", "fe", "zo", "ha", "bi", "nu",
    "ta", "re", "xo", "wi", "ce", "ly", "om", "ek",
];

struct Web {
    rng: Rng,
    vocab: Vec<String>,
    /// Per source page: its title and content lines.
    sources: Vec<(String, Vec<String>)>,
    /// Per host: (page id, source page, text).
    hosts: BTreeMap<String, Vec<(String, usize, String)>>,
}

struct Template {
    top: Vec<String>,
    bottom: Vec<String>,
    crumb: String,
    date: &'static str,
    ads: Vec<String>,
}

impl Web {
    fn new(seed: u64) -> Self {
        let mut rng = Rng(seed);
        let mut vocab = Vec::new();
        while vocab.len() < 3000 {
            let n = 2 + rng.below(3) as usize;
            let w: String = (0..n)
                .map(|_| SYLLABLES[rng.below(SYLLABLES.len() as u64) as usize])
                .collect();
            vocab.push(w);
        }
        vocab.sort();
        vocab.dedup();
        Web {
            rng,
            vocab,
            sources: Vec::new(),
            hosts: BTreeMap::new(),
        }
    }

    fn words(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| self.vocab[self.rng.below(self.vocab.len() as u64) as usize].clone())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// A new source page: a title and 100 to 250 words in 2 to 6 lines.
    fn source(&mut self) -> usize {
        let title = self.words(4);
        let lines = 2 + self.rng.below(5) as usize;
        let total = 100 + self.rng.below(151) as usize;
        let content = (0..lines).map(|_| self.words(total / lines)).collect();
        self.sources.push((title, content));
        self.sources.len() - 1
    }

    fn template(&mut self, heavy: bool) -> Template {
        let side = if heavy { 3 } else { 0 };
        let mut top = vec![
            format!("{} the {} portal", self.words(1), self.words(1)),
            self.words(6).replace(' ', " | "),
        ];
        for _ in 0..side {
            top.push(format!("Popular: {}", self.words(20)));
        }
        let bottom = vec![
            format!(
                "Copyright 2003-2024 {}. All rights reserved.",
                self.words(2)
            ),
            format!("Hosted by {} in {}", self.words(1), self.words(2)),
        ];
        let crumb = self.words(2).replace(' ', " › ");
        let date = if self.rng.below(2) == 0 {
            "Updated"
        } else {
            "Posted on"
        };
        let ads = (0..3)
            .map(|_| format!("Advertisement: {}", self.words(8)))
            .collect();
        Template {
            top,
            bottom,
            crumb,
            date,
            ads,
        }
    }

    /// Light copy noise: no word or one word replaced, sometimes an ad line inserted.
    fn noisy(&mut self, lines: &[String], t: &Template) -> Vec<String> {
        let mut out = lines.to_vec();
        for _ in 0..self.rng.below(2) {
            let i = self.rng.below(out.len() as u64) as usize;
            let mut words: Vec<String> = out[i].split(' ').map(str::to_string).collect();
            let j = self.rng.below(words.len() as u64) as usize;
            words[j] = self.words(1);
            out[i] = words.join(" ");
        }
        if self.rng.below(10) < 3 {
            let at = self.rng.below(out.len() as u64 + 1) as usize;
            let ad = t.ads[self.rng.below(t.ads.len() as u64) as usize].clone();
            out.insert(at, ad);
        }
        out
    }

    /// Adds a host whose pages are `items` (source page and content lines), rendered in `t`.
    fn add_host(&mut self, host: &str, t: &Template, items: Vec<(usize, Vec<String>)>) {
        let titles: Vec<String> = items
            .iter()
            .map(|(s, _)| self.sources[*s].0.clone())
            .collect();
        let mut pages = Vec::new();
        for (n, (source, content)) in items.into_iter().enumerate() {
            let title = self.sources[source].0.clone();
            let mut lines = t.top.clone();
            lines.push(format!("{} › {title}", t.crumb));
            lines.push(title);
            lines.extend(content);
            lines.push(format!(
                "{} 20{:02}-{:02}-{:02}",
                t.date,
                10 + self.rng.below(14),
                1 + self.rng.below(12),
                1 + self.rng.below(28)
            ));
            let related: Vec<String> = (0..3)
                .map(|_| titles[self.rng.below(titles.len() as u64) as usize].clone())
                .collect();
            lines.push(format!("Related: {}", related.join(" · ")));
            lines.extend(t.bottom.iter().cloned());
            pages.push((format!("{host}/{n}"), source, lines.join("\n")));
        }
        self.hosts.insert(host.to_string(), pages);
    }

    fn copy(&mut self, from: &str, which: &[usize], t: &Template) -> Vec<(usize, Vec<String>)> {
        // Re-derive the copied page's content lines from the host page (noise included).
        let pages = self.hosts[from].clone();
        which
            .iter()
            .map(|&i| {
                let (_, source, text) = &pages[i];
                let lines: Vec<String> = content_lines(text);
                (*source, self.noisy(&lines, t))
            })
            .collect()
    }

    fn pages(&self) -> Vec<HostPage> {
        self.hosts
            .iter()
            .flat_map(|(h, ps)| {
                ps.iter()
                    .map(move |(id, _, text)| HostPage::new(h, id, text))
            })
            .collect()
    }

    /// The oracle: the mirror definition over the generator's record of source pages.
    fn oracle(&self) -> BTreeMap<(String, String), usize> {
        let sets: Vec<(&String, BTreeSet<usize>)> = self
            .hosts
            .iter()
            .map(|(h, ps)| (h, ps.iter().map(|p| p.1).collect()))
            .collect();
        let mut out = BTreeMap::new();
        for (i, (ha, sa)) in sets.iter().enumerate() {
            for (hb, sb) in &sets[i + 1..] {
                let s = sa.intersection(sb).count();
                let min = self.hosts[*ha].len().min(self.hosts[*hb].len());
                if s >= 10 || s as f64 >= 0.2 * min as f64 {
                    out.insert(((*ha).clone(), (*hb).clone()), s);
                }
            }
        }
        out
    }
}

/// The content lines of a rendered page: after the title, before the date line, ads excluded
/// (the generator's own layout, not the finder's chrome removal).
fn content_lines(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.contains(" › "))
        .map_or(0, |i| i + 2);
    let end = lines
        .iter()
        .position(|l| l.starts_with("Updated 20") || l.starts_with("Posted on 20"))
        .unwrap_or(lines.len());
    lines[start..end]
        .iter()
        .filter(|l| !l.starts_with("Advertisement:"))
        .map(|l| l.to_string())
        .collect()
}

/// An original, a full mirror, a partial mirror, a mirror of the full mirror, two unrelated
/// hosts in one heavy template, and a syndicator that copies two pages.
fn small_web() -> Web {
    let mut web = Web::new(42);
    let originals: Vec<usize> = (0..30).map(|_| web.source()).collect();
    let t = web.template(false);
    let items = originals
        .iter()
        .map(|&s| (s, web.sources[s].1.clone()))
        .collect();
    web.add_host("original.org", &t, items);

    let t = web.template(false);
    let all: Vec<usize> = (0..30).collect();
    let items = web.copy("original.org", &all, &t);
    web.add_host("full-mirror.net", &t, items);

    let t = web.template(false);
    let mut items = web.copy(
        "original.org",
        &(0..12).map(|i| i * 2).collect::<Vec<_>>(),
        &t,
    );
    for _ in 0..15 {
        let s = web.source();
        items.push((s, web.sources[s].1.clone()));
    }
    web.add_host("partial-mirror.com", &t, items);

    let t = web.template(false);
    let items = web.copy("full-mirror.net", &(0..18).collect::<Vec<_>>(), &t);
    web.add_host("mirror-of-mirror.io", &t, items);

    let shared = web.template(true);
    for host in ["family-a.info", "family-b.info"] {
        let mut t = web.template(true);
        t.top = shared.top.clone();
        t.bottom = shared.bottom.clone();
        let items = (0..25)
            .map(|_| {
                let s = web.source();
                (s, web.sources[s].1.clone())
            })
            .collect();
        web.add_host(host, &t, items);
    }

    let t = web.template(false);
    let mut items = web.copy("original.org", &[3, 17], &t);
    for _ in 0..23 {
        let s = web.source();
        items.push((s, web.sources[s].1.clone()));
    }
    web.add_host("syndicator.biz", &t, items);
    web
}

fn predicted(report: &MirrorReport) -> BTreeMap<(String, String), usize> {
    report
        .mirror_pairs()
        .map(|p| {
            (
                (p.host_a.clone(), p.host_b.clone()),
                p.shared_pages as usize,
            )
        })
        .collect()
}

#[test]
fn finds_exactly_the_oracle_pairs() {
    let web = small_web();
    let oracle = web.oracle();
    // The generated web has every kind the test is about.
    let key = |a: &str, b: &str| (a.to_string(), b.to_string());
    for pair in [
        key("full-mirror.net", "original.org"),
        key("original.org", "partial-mirror.com"),
        key("mirror-of-mirror.io", "original.org"),
        key("full-mirror.net", "mirror-of-mirror.io"),
        key("full-mirror.net", "partial-mirror.com"),
    ] {
        assert!(
            oracle.contains_key(&pair),
            "{pair:?} should be a mirror pair"
        );
    }
    assert!(!oracle.contains_key(&key("family-a.info", "family-b.info")));
    assert!(!oracle.contains_key(&key("original.org", "syndicator.biz")));

    let finder = MirrorFinder::new(Scheme::default(), MirrorConfig::default()).unwrap();
    let report = finder.find(web.pages()).unwrap();
    let got = predicted(&report);
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        oracle.keys().collect::<Vec<_>>()
    );
    // The estimate of S is close to the truth (light noise: within 10%).
    for (pair, s) in &oracle {
        let est = got[pair];
        assert!(
            est <= *s && est * 10 >= *s * 9,
            "{pair:?}: estimated {est}, true {s}"
        );
    }
    // Hosts that share only a template share no evidence at all.
    assert!(report
        .copies_of("family-a.info")
        .iter()
        .all(|p| p.host_b != "family-b.info"));
    // The syndicator's two copied pages are seen, and are not enough.
    let syndicated = report
        .copies_of("original.org")
        .into_iter()
        .find(|p| p.host_b == "syndicator.biz")
        .expect("the syndicated pages are found");
    assert_eq!(syndicated.shared_pages, 2);
    assert!(!syndicated.is_mirror && syndicated.score < 1.0);
}

#[test]
fn copies_of_ranks_and_orients() {
    let web = small_web();
    let finder = MirrorFinder::new(Scheme::default(), MirrorConfig::default()).unwrap();
    let report = finder.find(web.pages()).unwrap();
    let copies = report.copies_of("original.org");
    assert!(copies.iter().all(|p| p.host_a == "original.org"));
    assert!(copies.windows(2).all(|w| w[0].score >= w[1].score));
    assert_eq!(copies[0].host_b, "full-mirror.net");
    let full = &copies[0];
    assert_eq!((full.pages_a, full.pages_b), (30, 30));
    assert!(full.matched_a >= 27 && full.matched_b >= 27);
    assert!((full.share_a - full.matched_a as f64 / 30.0).abs() < 1e-12);
    // Examples: nearest first, pages of the right hosts, within k for direct pairs.
    assert!(!full.examples.is_empty() && full.examples.len() <= 3);
    assert!(full
        .examples
        .windows(2)
        .all(|w| w[0].distance <= w[1].distance));
    for e in &full.examples {
        assert!(e.page_a.starts_with("original.org/"));
        assert!(e.page_b.starts_with("full-mirror.net/"));
    }
    // The partial mirror: 12 of 30 original pages, 12 of 27 of its own.
    let partial = copies
        .iter()
        .find(|p| p.host_b == "partial-mirror.com")
        .unwrap();
    assert_eq!(partial.pages_b, 27);
    assert!(partial.matched_a <= 12 && partial.matched_a >= 11);
    assert!(copies.iter().all(|p| p.host_b != "family-a.info"));
    assert!(report.copies_of("no-such-host.example").is_empty());
    // The report serialises (the CLI prints it as JSON lines) and reads back.
    let json = serde_json::to_string(&report).unwrap();
    let back: MirrorReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back, report);
}

#[test]
fn whole_page_fingerprints_miss_copies_in_other_templates() {
    // Without chrome removal, page pairs are driven by the templates: copies in different
    // templates are missed. The finder with chrome removal is the one that matches the oracle.
    let web = small_web();
    let naive = MirrorConfig {
        chrome_min_pages: 0,
        max_distance: 3,
        min_resemblance: None,
        transitive: false,
        ..MirrorConfig::default()
    };
    let report = MirrorFinder::new(Scheme::default(), naive)
        .unwrap()
        .find(web.pages())
        .unwrap();
    assert_ne!(
        predicted(&report).keys().collect::<Vec<_>>(),
        web.oracle().keys().collect::<Vec<_>>()
    );
}

#[test]
fn direct_pairs_only_still_find_mirrors_of_mirrors() {
    let web = small_web();
    let cfg = MirrorConfig {
        transitive: false,
        ..MirrorConfig::default()
    };
    let report = MirrorFinder::new(Scheme::default(), cfg)
        .unwrap()
        .find(web.pages())
        .unwrap();
    assert_eq!(
        predicted(&report).keys().collect::<Vec<_>>(),
        web.oracle().keys().collect::<Vec<_>>()
    );
}

#[test]
fn find_in_index_reads_stored_pages() {
    let web = small_web();
    let config = NearDupConfig::new("id", ["text"]);
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING | FAST);
    let host = builder.add_text_field("host", STRING | STORED);
    let unstored = builder.add_text_field("site", STRING);
    let text = builder.add_text_field("text", TEXT | STORED);
    config.add_fields(&mut builder);
    let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config).unwrap();
    let mut writer = index.writer(50_000_000, Policy::Off).unwrap();
    let pages = web.pages();
    let mut by_id: HashMap<String, String> = HashMap::new();
    for p in &pages {
        writer
            .add_document(doc!(id => p.id.as_str(), host => p.host.as_str(), unstored => p.host.as_str(), text => p.text.as_str()))
            .unwrap();
        by_id.insert(p.id.clone(), p.host.clone());
    }
    writer.commit().unwrap();

    let finder = MirrorFinder::new(Scheme::default(), MirrorConfig::default()).unwrap();
    let from_index = finder.find_in_index(&index, "host").unwrap();
    let from_pages = finder.find(pages).unwrap();
    assert_eq!(from_index, from_pages);
    for p in &from_index.pairs {
        for e in &p.examples {
            assert_eq!(by_id[&e.page_a], p.host_a);
            assert_eq!(by_id[&e.page_b], p.host_b);
        }
    }
    let err = finder.find_in_index(&index, "site").unwrap_err();
    assert!(matches!(err, Error::Schema { ref field, .. } if field == "site"));
    let err = finder.find_in_index(&index, "nope").unwrap_err();
    assert!(matches!(err, Error::Schema { .. }));
}

#[test]
fn rejects_bad_settings() {
    let bad = [
        MirrorConfig {
            max_distance: 10,
            ..MirrorConfig::default()
        },
        MirrorConfig {
            chrome_min_pages: 1,
            ..MirrorConfig::default()
        },
        MirrorConfig {
            min_share: 1.5,
            ..MirrorConfig::default()
        },
        MirrorConfig {
            min_share: f64::NAN,
            ..MirrorConfig::default()
        },
        MirrorConfig {
            max_script_gap: -0.1,
            ..MirrorConfig::default()
        },
    ];
    for cfg in bad {
        assert!(matches!(
            MirrorFinder::new(Scheme::default(), cfg),
            Err(Error::InvalidConfig(_))
        ));
    }
}
