//! Simhash curves of the fingerprint schemes: recall and false positives at k = 0..=10 per
//! recipe, natural recall and precision by brute force, cross-script recall.

use super::*;

/// What is evaluated: one of our schemes, or a peer's recipe reimplemented here.
pub(crate) enum Candidate {
    Scheme(Scheme),
    /// The popular Python `simhash` package (2.x) with its defaults: lower-case, keep the runs
    /// of `[\w\u4e00-\u9fcc]+` concatenated, character 4-grams weighted by their count, md5
    /// (its low 64 bits), 64 bits. Python's `\w` is approximated by `char::is_alphanumeric`
    /// and `_`.
    PySimhash,
}

impl Candidate {
    pub(crate) fn id(&self) -> String {
        match self {
            Candidate::Scheme(s) => s.id().to_string(),
            Candidate::PySimhash => "peer: python simhash 2.x defaults (char 4-grams, md5)".into(),
        }
    }
}

pub(crate) fn fingerprints(candidate: &Candidate, texts: &[String]) -> Vec<Fingerprint> {
    match candidate {
        Candidate::Scheme(scheme) => texts
            .par_iter()
            .map_init(|| scheme.fingerprinter(), |f, t| f.fingerprint(t))
            .collect(),
        Candidate::PySimhash => texts.par_iter().map(|t| py_simhash(t)).collect(),
    }
}

/// Fingerprints printed by the Python package itself (`simhash` 2.1.2,
/// `'%016x' % Simhash(text).value`): the reimplementation must give the same.
pub(crate) const PY_SIMHASH_GOLDEN: [(&str, u64); 4] = [
    (
        "The quick brown fox jumps over the lazy dog, twice!",
        0x2d0b_1695_908e_888b,
    ),
    (
        "软件开发的过程包括需求分析、设计、编码、测试和维护。",
        0xd566_4581_f875_3588,
    ),
    ("ab", 0x2f40_dc2b_92f0_eba0),
    ("Hello_World 123 über", 0x9071_95d6_ab95_a986),
];

pub(crate) fn py_simhash(text: &str) -> Fingerprint {
    use md5::{Digest, Md5};
    let content: Vec<char> = text
        .to_lowercase()
        .chars()
        .filter(|&c| c.is_alphanumeric() || c == '_' || ('\u{4e00}'..='\u{9fcc}').contains(&c))
        .collect();
    let mut counts: HashMap<String, i64> = HashMap::new();
    if content.len() < 4 {
        counts.insert(content.iter().collect(), 1);
    } else {
        for w in content.windows(4) {
            *counts.entry(w.iter().collect()).or_insert(0) += 1;
        }
    }
    let mut v = [0i64; 64];
    for (feature, w) in counts {
        let digest = Md5::digest(feature.as_bytes());
        let mut low = [0u8; 8];
        low.copy_from_slice(&digest[8..16]);
        let h = u64::from_be_bytes(low);
        for (i, x) in v.iter_mut().enumerate() {
            *x += if (h >> i) & 1 == 1 { w } else { -w };
        }
    }
    let mut fp = 0u64;
    for (i, &x) in v.iter().enumerate() {
        if x > 0 {
            fp |= 1 << i;
        }
    }
    Fingerprint(fp)
}

/// Fraction of distances <= k, for k = 0..=KMAX.
pub(crate) fn cumulative(distances: &[u32]) -> [f64; KMAX + 1] {
    let mut out = [0.0; KMAX + 1];
    if distances.is_empty() {
        return out;
    }
    for (k, o) in out.iter_mut().enumerate() {
        *o = distances.iter().filter(|&&d| d as usize <= k).count() as f64 / distances.len() as f64;
    }
    out
}

pub(crate) struct Report {
    pub(crate) recall: Rows,
    pub(crate) hardneg: Rows,
    pub(crate) random: (u64, [u64; KMAX + 1]),
    pub(crate) natural: Rows,
    pub(crate) precision: PrecisionRows,
    pub(crate) natural_random: (u64, [u64; KMAX + 1]),
    pub(crate) cross: Rows,
    pub(crate) seconds: f64,
    pub(crate) mbytes: f64,
}

pub(crate) fn by_group<'a>(
    pairs: &'a [Pair],
    fa: &[Fingerprint],
    fb: &[Fingerprint],
    key: impl Fn(&'a Pair) -> &'a str,
) -> Vec<(String, usize, [f64; KMAX + 1])> {
    let mut groups: Vec<&str> = Vec::new();
    for p in pairs {
        if !groups.contains(&key(p)) {
            groups.push(key(p));
        }
    }
    let mut out: Vec<_> = groups
        .iter()
        .map(|g| {
            let d: Vec<u32> = pairs
                .iter()
                .enumerate()
                .filter(|(_, p)| key(p) == *g)
                .map(|(i, _)| fa[i].distance(fb[i]))
                .collect();
            (g.to_string(), d.len(), cumulative(&d))
        })
        .collect();
    let all: Vec<u32> = (0..pairs.len()).map(|i| fa[i].distance(fb[i])).collect();
    out.push(("all".to_string(), all.len(), cumulative(&all)));
    out
}

/// Counts all pairs i < j of `fps` at distance <= KMAX, excluding pairs `skip` says to skip.
pub(crate) fn random_pairs(
    fps: &[Fingerprint],
    skip: impl Fn(usize, usize) -> bool + Sync,
) -> (u64, [u64; KMAX + 1]) {
    let n = fps.len();
    let (total, hist) = (0..n)
        .into_par_iter()
        .map(|i| {
            let mut h = [0u64; KMAX + 1];
            let mut t = 0u64;
            for j in i + 1..n {
                if skip(i, j) {
                    continue;
                }
                t += 1;
                let d = fps[i].distance(fps[j]) as usize;
                if d <= KMAX {
                    h[d] += 1;
                }
            }
            (t, h)
        })
        .reduce(
            || (0, [0; KMAX + 1]),
            |(t1, mut h1), (t2, h2)| {
                for k in 0..=KMAX {
                    h1[k] += h2[k];
                }
                (t1 + t2, h1)
            },
        );
    let mut cum = [0u64; KMAX + 1];
    let mut acc = 0;
    for k in 0..=KMAX {
        acc += hist[k];
        cum[k] = acc;
    }
    (total, cum)
}

/// Rows of a table: a label, the number of pairs, the share within each k.
pub(crate) type Rows = Vec<(String, usize, [f64; KMAX + 1])>;

/// Rows of the precision table: a label, the pairs within each k, the false positives among them.
pub(crate) type PrecisionRows = Vec<(String, [u64; KMAX + 1], [u64; KMAX + 1])>;

/// Recall on the synthetic pairs: per recipe, then per length bucket (without the heavy and
/// script recipes).
pub(crate) fn synthetic_recall(lang: &Lang, fsa: &[Fingerprint], fsb: &[Fingerprint]) -> Rows {
    let mut recall = by_group(&lang.synthetic, fsa, fsb, |p| p.recipe.as_str());
    for bucket in ["20-50", "50-200", "200-1000", "1000+"] {
        let d: Vec<u32> = lang
            .synthetic
            .iter()
            .enumerate()
            .filter(|(_, p)| p.bucket == bucket && !matches!(p.recipe.as_str(), "heavy" | "script"))
            .map(|(i, _)| fsa[i].distance(fsb[i]))
            .collect();
        recall.push((
            format!("len {bucket} (no heavy/script)"),
            d.len(),
            cumulative(&d),
        ));
    }
    recall
}

/// What the "random" pairs within k are: the recipe (or hard-negative kind), title and source
/// ids of both documents.
pub(crate) fn list_random_pairs(lang: &Lang, fr: &[Fingerprint], srcs: &[HashSet<&str>], k: u32) {
    let pairs: Vec<&Pair> = lang.synthetic.iter().chain(&lang.hardneg).collect();
    let describe = |p: &Pair| format!("{} {:?} {:?}", p.recipe, p.a.title, p.src);
    for i in 0..fr.len() {
        for j in i + 1..fr.len() {
            let d = fr[i].distance(fr[j]);
            if d <= k && srcs[i].is_disjoint(&srcs[j]) {
                println!(
                    "random pair d={d} | {} | {}",
                    describe(pairs[i]),
                    describe(pairs[j])
                );
            }
        }
    }
}

/// Recall on the natural corpus's true pairs, by resemblance floor, with and without the
/// excluded sources.
pub(crate) fn natural_recall(nat: &Natural, fnat: &[Fingerprint], excluded: &[bool]) -> Rows {
    let mut natural = Vec::new();
    for (label, lo, without) in [
        ("J>=0.8", 0.8f32, false),
        ("J>=0.9", 0.9, false),
        ("J>=0.8 without excluded", 0.8, true),
        ("J>=0.9 without excluded", 0.9, true),
    ] {
        let d: Vec<u32> = nat
            .truth
            .iter()
            .filter(|(&(a, b), &j)| {
                j >= lo && !(without && (excluded[a as usize] || excluded[b as usize]))
            })
            .map(|(&(a, b), _)| fnat[a as usize].distance(fnat[b as usize]))
            .collect();
        natural.push((label.to_string(), d.len(), cumulative(&d)));
    }
    natural
}

/// Precision on the natural corpus: every pair within KMAX, brute force, with and without the
/// excluded sources; and the (pairs not in the truth, false positives per k) of all sources.
pub(crate) fn natural_precision(
    nat: &Natural,
    fnat: &[Fingerprint],
    excluded: &[bool],
) -> (PrecisionRows, (u64, [u64; KMAX + 1])) {
    let n = fnat.len();
    let found: Vec<(u32, u32, u32)> = (0..n)
        .into_par_iter()
        .flat_map_iter(|i| {
            (i + 1..n).filter_map(move |j| {
                let d = fnat[i].distance(fnat[j]);
                (d as usize <= KMAX).then_some((i as u32, j as u32, d))
            })
        })
        .collect();
    let mut precision = Vec::new();
    for (label, without) in [("all", false), ("without excluded", true)] {
        let mut within = [0u64; KMAX + 1];
        let mut fp = [0u64; KMAX + 1];
        for &(a, b, d) in &found {
            if without && (excluded[a as usize] || excluded[b as usize]) {
                continue;
            }
            let is_fp = !nat.truth.contains_key(&(a, b));
            for k in d as usize..=KMAX {
                within[k] += 1;
                if is_fp {
                    fp[k] += 1;
                }
            }
        }
        precision.push((label.to_string(), within, fp));
    }
    let total_pairs = (n as u64) * (n as u64).saturating_sub(1) / 2 - nat.truth.len() as u64;
    let mut nat_fp = [0u64; KMAX + 1];
    if let Some((_, _, fpk)) = precision.first() {
        nat_fp = *fpk;
    }
    (precision, (total_pairs, nat_fp))
}

/// Recall across scripts (simplified and traditional Chinese), by t2s resemblance floor.
pub(crate) fn cross_script_recall(scheme: &Candidate, c: &Cross) -> Rows {
    let (fc, ft) = (fingerprints(scheme, &c.cn), fingerprints(scheme, &c.tw));
    let mut cross = Vec::new();
    for (label, lo) in [
        ("t2s J>=0.5", 0.5f32),
        ("t2s J>=0.8", 0.8),
        ("all pairs", -1.0),
    ] {
        let d: Vec<u32> = (0..fc.len())
            .filter(|&i| c.t2s[i] >= lo)
            .map(|i| fc[i].distance(ft[i]))
            .collect();
        cross.push((label.to_string(), d.len(), cumulative(&d)));
    }
    cross
}

pub(crate) fn evaluate(scheme: &Candidate, lang: &Lang, list_random: Option<u32>) -> Report {
    let t = Instant::now();
    let mut bytes = 0usize;
    let mut texts = |pairs: &[Pair]| -> (Vec<String>, Vec<String>) {
        let a: Vec<String> = pairs.iter().map(|p| p.a.full()).collect();
        let b: Vec<String> = pairs.iter().map(|p| p.b.full()).collect();
        bytes += a.iter().chain(&b).map(String::len).sum::<usize>();
        (a, b)
    };
    let (sa, sb) = texts(&lang.synthetic);
    let (ha, hb) = texts(&lang.hardneg);
    let (fsa, fsb) = (fingerprints(scheme, &sa), fingerprints(scheme, &sb));
    let (fha, fhb) = (fingerprints(scheme, &ha), fingerprints(scheme, &hb));
    let recall = synthetic_recall(lang, &fsa, &fsb);
    let hardneg = by_group(&lang.hardneg, &fha, &fhb, |p| p.recipe.as_str());

    // Random pairs: the `a` documents of all synthetic and hard-negative pairs, skipping pairs
    // that share a source document.
    let srcs: Vec<HashSet<&str>> = lang
        .synthetic
        .iter()
        .chain(&lang.hardneg)
        .map(|p| p.src.iter().map(String::as_str).collect())
        .collect();
    let fr: Vec<Fingerprint> = fsa.iter().chain(&fha).copied().collect();
    let random = random_pairs(&fr, |i, j| !srcs[i].is_disjoint(&srcs[j]));
    if let Some(k) = list_random {
        list_random_pairs(lang, &fr, &srcs, k);
    }

    // Natural corpus.
    let nat = &lang.natural;
    let ntexts: Vec<String> = nat.docs.iter().map(Doc::full).collect();
    bytes += ntexts.iter().map(String::len).sum::<usize>();
    let fnat = fingerprints(scheme, &ntexts);
    let excluded: Vec<bool> = nat
        .docs
        .iter()
        .map(|d| lang.excluded_sources.contains(&d.source.as_str()))
        .collect();
    let natural = natural_recall(nat, &fnat, &excluded);
    let (precision, natural_random) = natural_precision(nat, &fnat, &excluded);

    let mut cross = Vec::new();
    if let Some(c) = &lang.cross {
        bytes += c.cn.iter().chain(&c.tw).map(String::len).sum::<usize>();
        cross = cross_script_recall(scheme, c);
    }
    Report {
        recall,
        hardneg,
        random,
        natural,
        precision,
        natural_random,
        cross,
        seconds: t.elapsed().as_secs_f64(),
        mbytes: bytes as f64 / 1e6,
    }
}

pub(crate) fn candidates() -> Vec<(&'static str, Candidate)> {
    let b = Scheme::builder;
    let mk = |r: tantivy_simhash::Result<Scheme>| match r {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bad candidate: {e}");
            std::process::exit(2)
        }
    };
    let ours = vec![
        ("default", Scheme::default()),
        (
            "words-binary",
            mk(b()
                .features(Features::words())
                .term_weight(TermWeight::Binary)
                .build()),
        ),
        (
            "words+sh2",
            mk(b().features(Features::words_and_shingles(2, 1.0)).build()),
        ),
        (
            "words+sh2x0.5",
            mk(b().features(Features::words_and_shingles(2, 0.5)).build()),
        ),
        (
            "words+sh3",
            mk(b().features(Features::words_and_shingles(3, 1.0)).build()),
        ),
        (
            "sh2",
            mk(b()
                .features(Features {
                    words: 0.0,
                    ..Features::words_and_shingles(2, 1.0)
                })
                .build()),
        ),
        (
            "sh3",
            mk(b()
                .features(Features {
                    words: 0.0,
                    ..Features::words_and_shingles(3, 1.0)
                })
                .build()),
        ),
        (
            "hanchars+sh2",
            mk(b()
                .tokenization(Tokenization::Builtin {
                    han: HanSegmentation::Chars,
                })
                .features(Features::words_and_shingles(2, 1.0))
                .build()),
        ),
        ("char4", mk(b().features(Features::char_ngrams(4)).build())),
        (
            "words-stop0.2",
            mk(b().features(Features::words()).stopword_weight(0.2).build()),
        ),
        ("words-line4", mk(b().short_line(4).build())),
        ("words-line8", mk(b().short_line(8).build())),
        ("words-line12", mk(b().short_line(12).build())),
        (
            "words+sh2x0.5-line8",
            mk(b()
                .features(Features::words_and_shingles(2, 0.5))
                .short_line(8)
                .build()),
        ),
    ];
    let mut all: Vec<(&'static str, Candidate)> = ours
        .into_iter()
        .map(|(n, s)| (n, Candidate::Scheme(s)))
        .collect();
    all.push(("peer-py-simhash", Candidate::PySimhash));
    all
}

/// The Python simhash reimplementation must give the package's fingerprints.
pub(crate) fn check_py_simhash() -> Res<()> {
    for (text, want) in PY_SIMHASH_GOLDEN {
        let got = py_simhash(text).0;
        if got != want {
            return Err(format!(
                "the Python simhash reimplementation gives {got:016x} for {text:?}, the package \
                 {want:016x}"
            )
            .into());
        }
    }
    Ok(())
}
