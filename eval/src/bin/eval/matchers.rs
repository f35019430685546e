//! Matchers: yes/no rules (the crate's and the peers'), evaluated side by side on the same pairs,
//! with the truth's shingles as the reference.

use super::*;

/// A yes/no near-duplicate rule with the keys that generate its candidates.
pub(crate) trait Matcher: Sync {
    type Sig: Send + Sync;
    fn sign_all(&self, texts: &[String]) -> Vec<Self::Sig>;
    /// Candidate keys (a pair that matches should share one; peers may miss a few).
    fn keys(&self, sig: &Self::Sig, out: &mut Vec<u64>);
    fn matches(&self, a: &Self::Sig, b: &Self::Sig) -> bool;
    /// Bytes per document of what is stored to verify a candidate.
    fn bytes(&self) -> usize;
}

/// Our rule.
pub(crate) struct RuleMatcher {
    pub(crate) scheme: Scheme,
    pub(crate) rule: MatchRule,
}

impl Matcher for RuleMatcher {
    type Sig = Signature;
    fn sign_all(&self, texts: &[String]) -> Vec<Signature> {
        texts
            .par_iter()
            .map_init(|| self.rule.signer(&self.scheme), |s, t| s.sign(t))
            .collect()
    }
    fn keys(&self, sig: &Signature, out: &mut Vec<u64>) {
        self.rule.keys_into(sig, out);
    }
    fn matches(&self, a: &Signature, b: &Signature) -> bool {
        self.rule.matches(a, b).is_some()
    }
    fn bytes(&self) -> usize {
        8 + self.rule.sketch_bytes()
    }
}

/// A 64-bit simhash (one of our schemes or a peer's) within `k`, keyed by the layout for `k`.
pub(crate) struct SimhashMatcher {
    pub(crate) candidate: Candidate,
    pub(crate) layout: BlockLayout,
}

impl Matcher for SimhashMatcher {
    type Sig = Fingerprint;
    fn sign_all(&self, texts: &[String]) -> Vec<Fingerprint> {
        fingerprints(&self.candidate, texts)
    }
    fn keys(&self, sig: &Fingerprint, out: &mut Vec<u64>) {
        self.layout.keys_into(*sig, out);
    }
    fn matches(&self, a: &Fingerprint, b: &Fingerprint) -> bool {
        a.is_within(*b, self.layout.max_distance())
    }
    fn bytes(&self) -> usize {
        8
    }
}

#[derive(Default)]
pub(crate) struct MatchReport {
    /// recipe -> (pairs, share matched).
    pub(crate) recall: Vec<(String, usize, f64)>,
    /// hard-negative kind (and "all") -> (pairs, share matched).
    pub(crate) hardneg: Vec<(String, usize, f64)>,
    pub(crate) natural_recall_j08: f64,
    pub(crate) natural_recall_j09: f64,
    pub(crate) natural_recall_j08_without_excluded: f64,
    pub(crate) natural_precision: f64,
    pub(crate) natural_precision_without_excluded: f64,
    pub(crate) natural_matched_pairs: u64,
    pub(crate) natural_false_positives: u64,
    /// Largest posting list of one key in the natural corpus.
    pub(crate) natural_hottest_key: usize,
    pub(crate) cross_script_recall: Option<f64>,
    pub(crate) bytes_per_doc: usize,
    pub(crate) keys_per_doc: f64,
    pub(crate) seconds: f64,
}

pub(crate) fn grouped<M: Matcher>(
    m: &M,
    pairs: &[Pair],
    sa: &[M::Sig],
    sb: &[M::Sig],
) -> Vec<(String, usize, f64)> {
    let mut groups: Vec<&str> = Vec::new();
    for p in pairs {
        if !groups.contains(&p.recipe.as_str()) {
            groups.push(&p.recipe);
        }
    }
    let mut out = Vec::new();
    for g in groups.into_iter().map(Some).chain([None]) {
        let idx: Vec<usize> = (0..pairs.len())
            .filter(|&i| g.is_none_or(|g| pairs[i].recipe == g))
            .collect();
        let hit = idx.iter().filter(|&&i| m.matches(&sa[i], &sb[i])).count();
        out.push((
            g.unwrap_or("all").to_string(),
            idx.len(),
            hit as f64 / idx.len().max(1) as f64,
        ));
    }
    out
}

/// The natural corpus signed by one matcher: texts, signatures, and which documents come from
/// an excluded source.
pub(crate) struct SignedNatural<'a, S> {
    pub(crate) nat: &'a Natural,
    pub(crate) texts: Vec<String>,
    pub(crate) sigs: Vec<S>,
    pub(crate) excluded: Vec<bool>,
}

impl<'a, S> SignedNatural<'a, S> {
    pub(crate) fn new<M: Matcher<Sig = S>>(m: &M, lang: &'a Lang) -> Self {
        let nat = &lang.natural;
        let texts: Vec<String> = nat.docs.iter().map(Doc::full).collect();
        let sigs = m.sign_all(&texts);
        let excluded: Vec<bool> = nat
            .docs
            .iter()
            .map(|d| lang.excluded_sources.contains(&d.source.as_str()))
            .collect();
        SignedNatural {
            nat,
            texts,
            sigs,
            excluded,
        }
    }

    /// Whether the pair has a document from an excluded source.
    pub(crate) fn touches_excluded(&self, a: u32, b: u32) -> bool {
        self.excluded[a as usize] || self.excluded[b as usize]
    }

    /// The share of the true pairs with resemblance >= `lo` (without the excluded sources if
    /// `without`) that the matcher matches.
    pub(crate) fn recall_at<M: Matcher<Sig = S>>(&self, m: &M, lo: f32, without: bool) -> f64 {
        let sel: Vec<(u32, u32)> = self
            .nat
            .truth
            .iter()
            .filter(|(&(a, b), &j)| j >= lo && !(without && self.touches_excluded(a, b)))
            .map(|(&k, _)| k)
            .collect();
        let hit = sel
            .iter()
            .filter(|&&(a, b)| m.matches(&self.sigs[a as usize], &self.sigs[b as usize]))
            .count();
        hit as f64 / sel.len().max(1) as f64
    }

    /// With `EVAL_DEBUG_FP` set: a false positive's truth resemblance, shingle counts, sources.
    pub(crate) fn debug_false_positive(&self, a: u32, b: u32) {
        let (x, y) = (
            truth_shingles(&self.texts[a as usize]),
            truth_shingles(&self.texts[b as usize]),
        );
        eprintln!(
            "FP\t{:.3}\t{}\t{}\t{}\t{}",
            jaccard(&x, &y),
            x.len().min(y.len()),
            x.len().max(y.len()),
            self.nat.docs[a as usize].source,
            self.nat.docs[b as usize].source
        );
    }
}

/// Each document's candidate keys, sorted and deduplicated.
pub(crate) fn candidate_keys<M: Matcher>(m: &M, sigs: &[M::Sig]) -> Vec<Vec<u64>> {
    sigs.par_iter()
        .map(|s| {
            let mut k = Vec::new();
            m.keys(s, &mut k);
            k.sort_unstable();
            k.dedup();
            k
        })
        .collect()
}

/// The first key two sorted key lists share.
pub(crate) fn first_shared(a: &[u64], b: &[u64]) -> Option<u64> {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => return Some(a[i]),
        }
    }
    None
}

/// (matched pairs, false positives among them) of all sources and without the excluded ones.
pub(crate) type PairCounts = ((u64, u64), (u64, u64));

/// Every matching pair of the natural corpus: candidates from shared keys, each pair judged
/// under its first shared key (in sorted key order) only, so no global set is needed.
pub(crate) fn count_natural_matches<M: Matcher>(
    m: &M,
    signed: &SignedNatural<M::Sig>,
    keys: &[Vec<u64>],
    postings: &HashMap<u64, Vec<u32>>,
) -> PairCounts {
    let lists: Vec<(&u64, &Vec<u32>)> = postings.iter().filter(|(_, v)| v.len() > 1).collect();
    let sigs = &signed.sigs;
    lists
        .par_iter()
        .map(|&(&key, docs)| {
            let (mut all, mut without) = ((0u64, 0u64), (0u64, 0u64));
            for (x, &a) in docs.iter().enumerate() {
                for &b in &docs[x + 1..] {
                    let (a, b) = (a.min(b), a.max(b));
                    if first_shared(&keys[a as usize], &keys[b as usize]) != Some(key)
                        || !m.matches(&sigs[a as usize], &sigs[b as usize])
                    {
                        continue;
                    }
                    let fp = u64::from(!signed.nat.truth.contains_key(&(a, b)));
                    if fp == 1 && std::env::var_os("EVAL_DEBUG_FP").is_some() {
                        signed.debug_false_positive(a, b);
                    }
                    all = (all.0 + 1, all.1 + fp);
                    if !signed.touches_excluded(a, b) {
                        without = (without.0 + 1, without.1 + fp);
                    }
                }
            }
            (all, without)
        })
        .reduce(
            || ((0, 0), (0, 0)),
            |(a, b), (c, d)| ((a.0 + c.0, a.1 + c.1), (b.0 + d.0, b.1 + d.1)),
        )
}

/// 1 - false positives / matched pairs (1 when nothing matched).
pub(crate) fn precision_of((n, fp): (u64, u64)) -> f64 {
    if n == 0 {
        1.0
    } else {
        1.0 - fp as f64 / n as f64
    }
}

/// Recall across scripts on the pairs with t2s resemblance >= 0.5.
pub(crate) fn cross_script_match_recall<M: Matcher>(m: &M, c: &Cross) -> f64 {
    let (fc, ft) = (m.sign_all(&c.cn), m.sign_all(&c.tw));
    let idx: Vec<usize> = (0..fc.len()).filter(|&i| c.t2s[i] >= 0.5).collect();
    let hit = idx.iter().filter(|&&i| m.matches(&fc[i], &ft[i])).count();
    hit as f64 / idx.len().max(1) as f64
}

pub(crate) fn evaluate_matcher<M: Matcher>(m: &M, lang: &Lang) -> MatchReport {
    let t = Instant::now();
    let full = |pairs: &[Pair]| -> (Vec<String>, Vec<String>) {
        (
            pairs.iter().map(|p| p.a.full()).collect(),
            pairs.iter().map(|p| p.b.full()).collect(),
        )
    };
    let (sa, sb) = full(&lang.synthetic);
    let (ha, hb) = full(&lang.hardneg);
    let (ssa, ssb) = (m.sign_all(&sa), m.sign_all(&sb));
    let (sha, shb) = (m.sign_all(&ha), m.sign_all(&hb));
    let mut r = MatchReport {
        recall: grouped(m, &lang.synthetic, &ssa, &ssb),
        hardneg: grouped(m, &lang.hardneg, &sha, &shb),
        bytes_per_doc: m.bytes(),
        ..MatchReport::default()
    };

    let signed = SignedNatural::new(m, lang);
    r.natural_recall_j08 = signed.recall_at(m, 0.8, false);
    r.natural_recall_j09 = signed.recall_at(m, 0.9, false);
    r.natural_recall_j08_without_excluded = signed.recall_at(m, 0.8, true);

    let keys = candidate_keys(m, &signed.sigs);
    r.keys_per_doc = keys.iter().map(Vec::len).sum::<usize>() as f64 / keys.len().max(1) as f64;
    let mut postings: HashMap<u64, Vec<u32>> = HashMap::new();
    for (d, ks) in keys.iter().enumerate() {
        for &k in ks {
            postings.entry(k).or_default().push(d as u32);
        }
    }
    r.natural_hottest_key = postings.values().map(Vec::len).max().unwrap_or(0);
    let (counts, counts_without) = count_natural_matches(m, &signed, &keys, &postings);
    r.natural_precision = precision_of(counts);
    r.natural_precision_without_excluded = precision_of(counts_without);
    (r.natural_matched_pairs, r.natural_false_positives) = counts;

    if let Some(c) = &lang.cross {
        r.cross_script_recall = Some(cross_script_match_recall(m, c));
    }
    r.seconds = t.elapsed().as_secs_f64();
    r
}

/// A rule from its parts (exits on an invalid one: these are the program's own constants).
pub(crate) fn rule(
    width: u8,
    min_line_words: u32,
    bands: u32,
    rows: u32,
    bits: u32,
    slots: u32,
    t: f32,
) -> MatchRule {
    let spec = RuleSpec {
        shingling: Shingling {
            width,
            min_line_words,
            ..Shingling::default()
        },
        minhash: MinHashConfig {
            slots,
            bands,
            rows,
            bits,
            key_bits: 20,
        },
        min_resemblance: t,
        ..RuleSpec::default()
    };
    match MatchRule::new(spec) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("bad rule: {e}");
            std::process::exit(2)
        }
    }
}

pub(crate) enum AnyMatcher {
    Rule(RuleMatcher),
    Simhash(SimhashMatcher),
    MinHash(MinHash128),
    Jieba(JiebaTop10),
}

pub(crate) fn run_matcher(m: &AnyMatcher, lang: &Lang) -> MatchReport {
    match m {
        AnyMatcher::Rule(m) => evaluate_matcher(m, lang),
        AnyMatcher::Simhash(m) => evaluate_matcher(m, lang),
        AnyMatcher::MinHash(m) => evaluate_matcher(m, lang),
        AnyMatcher::Jieba(m) => evaluate_matcher(m, lang),
    }
}

/// The name of the new default rule in the matcher list.
pub(crate) const DEFAULT_RULE: &str = "rule-default";

pub(crate) fn matchers() -> Vec<(String, AnyMatcher)> {
    let k3 = BlockLayout::default();
    let mut out: Vec<(String, AnyMatcher)> = vec![
        (
            DEFAULT_RULE.into(),
            AnyMatcher::Rule(RuleMatcher {
                scheme: Scheme::default(),
                rule: MatchRule::default(),
            }),
        ),
        (
            "today-simhash-k3".into(),
            AnyMatcher::Simhash(SimhashMatcher {
                candidate: Candidate::Scheme(Scheme::default()),
                layout: k3,
            }),
        ),
        (
            "peer-py-simhash-k3".into(),
            AnyMatcher::Simhash(SimhashMatcher {
                candidate: Candidate::PySimhash,
                layout: k3,
            }),
        ),
        (
            "peer-jieba-top10-k3".into(),
            AnyMatcher::Jieba(JiebaTop10 { layout: k3 }),
        ),
        (
            "peer-minhash128-j0.8".into(),
            AnyMatcher::MinHash(MinHash128 { threshold: 0.8 }),
        ),
        (
            "peer-minhash128-j0.5".into(),
            AnyMatcher::MinHash(MinHash128 { threshold: 0.5 }),
        ),
    ];
    // The peer's curve, to compare precision at equal recall with the rule's thresholds.
    for t in [0.45, 0.55, 0.6] {
        out.push((
            format!("peer-minhash128-j{t}"),
            AnyMatcher::MinHash(MinHash128 { threshold: t }),
        ));
    }
    // Variants of the rule: shingle width, chrome, bins and bands, threshold. The default is
    // width 3, chrome by shape, no short-line filter, 12 bands x 3 bins (keys hashed from the
    // bins' full values) and a sketch of 512 bins of 2 bits, t = 0.55; each variant changes one
    // thing. `rule-sketch-SLOTSxBITS` is the sketch-width curve (docs/QUALITY.md, "Sketch
    // width"); `rule-sketch-256x8` is the previous default's sketch, rule-no-chrome the rule
    // before chrome.
    let (slots, bits) = (
        MinHashConfig::default().slots,
        MinHashConfig::default().bits,
    );
    let mut variants: Vec<(String, MatchRule)> = vec![
        ("rule-t0.45".into(), rule(3, 0, 12, 3, bits, slots, 0.45)),
        ("rule-t0.5".into(), rule(3, 0, 12, 3, bits, slots, 0.5)),
        ("rule-t0.6".into(), rule(3, 0, 12, 3, bits, slots, 0.6)),
        ("rule-t0.65".into(), rule(3, 0, 12, 3, bits, slots, 0.65)),
        (
            "rule-chrome-line8".into(),
            rule(3, 8, 12, 3, bits, slots, 0.55),
        ),
        ("rule-no-chrome".into(), {
            let mut spec = *MatchRule::default().spec();
            spec.shingling.chrome = false;
            MatchRule::new(spec).unwrap_or_else(|e| {
                eprintln!("bad rule: {e}");
                std::process::exit(2)
            })
        }),
        (
            "rule-width2-t0.65".into(),
            rule(2, 0, 12, 3, bits, slots, 0.65),
        ),
        (
            "rule-8bands-3rows".into(),
            rule(3, 0, 8, 3, bits, slots, 0.55),
        ),
        (
            "rule-16bands-4rows".into(),
            rule(3, 0, 16, 4, bits, slots, 0.55),
        ),
    ];
    for (sketch_slots, sketch_bits) in [
        (128, 8),
        (256, 8),
        (256, 4),
        (256, 2),
        (384, 2),
        (512, 2),
        (768, 2),
        (512, 1),
        (1024, 1),
    ] {
        variants.push((
            format!("rule-sketch-{sketch_slots}x{sketch_bits}"),
            rule(3, 0, 12, 3, sketch_bits, sketch_slots, 0.55),
        ));
    }
    for (n, r) in variants {
        out.push((
            n,
            AnyMatcher::Rule(RuleMatcher {
                scheme: Scheme::default(),
                rule: r,
            }),
        ));
    }
    out
}

/// Checks the reimplemented truth shingles against the `jaccard` of the first pairs.
pub(crate) fn check_truth_shingles(lang: &Lang) -> Res<()> {
    let mut worst = 0f64;
    for p in lang.synthetic.iter().chain(&lang.hardneg).take(200) {
        let j = jaccard(&truth_shingles(&p.a.full()), &truth_shingles(&p.b.full()));
        worst = worst.max((j - p.jaccard).abs());
    }
    eprintln!(
        "truth shingles, {}: largest |jaccard - truth| over 200 pairs = {worst:.4}",
        lang.name
    );
    if worst > 0.01 {
        return Err(format!(
            "the reimplemented truth shingles disagree with the truth files by {worst:.4} (> 0.01)"
        )
        .into());
    }
    Ok(())
}

/// The truth's own resemblance (`tools/shingles.py`): NFKC, case folding, every Han ideograph a
/// token, every other run of word characters a token, 3-shingles (fewer tokens: one shingle).
/// Han ideographs (the CJK unified blocks and extensions, compatibility ideographs): the truth's
/// own tokenisation, independent of the crate's.
pub(crate) fn is_han(c: char) -> bool {
    matches!(c as u32,
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2A6DF
        | 0x2A700..=0x2EBEF | 0x2F800..=0x2FA1F | 0x30000..=0x3134F)
}

pub(crate) fn truth_shingles(text: &str) -> HashSet<u64> {
    use unicode_normalization::UnicodeNormalization;
    let norm: String = text.nfkc().collect();
    let norm = caseless::default_case_fold_str(&norm);
    let mut tokens: Vec<String> = Vec::new();
    let mut cur = String::new();
    for c in norm.chars() {
        if is_han(c) {
            if !cur.is_empty() {
                tokens.push(std::mem::take(&mut cur));
            }
            tokens.push(c.to_string());
        } else if c.is_alphanumeric() || c == '_' {
            cur.push(c);
        } else if !cur.is_empty() {
            tokens.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        tokens.push(cur);
    }
    let hash = |t: &[String]| xxh3_64(t.join(" ").as_bytes());
    if tokens.is_empty() {
        HashSet::new()
    } else if tokens.len() < 3 {
        std::iter::once(hash(&tokens)).collect()
    } else {
        tokens.windows(3).map(hash).collect()
    }
}

pub(crate) fn jaccard(a: &HashSet<u64>, b: &HashSet<u64>) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    a.intersection(b).count() as f64 / a.union(b).count() as f64
}
