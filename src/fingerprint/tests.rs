use super::*;

const GOLDEN_TEXTS: [&str; 6] = [
    "The quick brown fox jumps over the lazy dog. The dog sleeps in the sun all afternoon.",
    "Permission is hereby granted, free of charge, to any person obtaining a copy of this software",
    "我们在北京大学学习中文和计算机科学，每天都有很多新的知识。",
    "軟體開發的過程包括需求分析、設計、編碼、測試和維護。",
    "short text",
    "",
];

fn golden_print(scheme: &Scheme) -> Vec<String> {
    GOLDEN_TEXTS
        .iter()
        .map(|t| {
            let d = scheme.fingerprint_details(t);
            format!("{} {:?}", d.fingerprint, d.kind)
        })
        .collect()
}

/// Pins the default scheme: if this fails, the fingerprints of every index built with the
/// default scheme change. Change a scheme only deliberately, with a new SCHEME_VERSION.
#[test]
fn golden_default_scheme() {
    let got = golden_print(&Scheme::default());
    let want = GOLDEN_DEFAULT;
    assert_eq!(got, want, "default scheme fingerprints changed");
    assert_eq!(Scheme::default().id(), GOLDEN_DEFAULT_ID);
}

#[test]
fn golden_other_schemes() {
    let shingles = Scheme::builder()
        .features(Features::words_and_shingles(2, 0.5))
        .build()
        .unwrap();
    assert_eq!(golden_print(&shingles), GOLDEN_SHINGLES);
    let chars = Scheme::builder()
        .tokenization(Tokenization::Builtin {
            han: HanSegmentation::Chars,
        })
        .features(Features::char_ngrams(3))
        .term_weight(TermWeight::Binary)
        .seed(42)
        .build()
        .unwrap();
    assert_eq!(golden_print(&chars), GOLDEN_CHARS);
}

const GOLDEN_DEFAULT_ID: &str = "simhash64-v1;norm=nfkc+fold+t2s;tok=builtin-jieba;feat=w1;tf=log;idf=none;seed=7473696d68617368;min=8";
const GOLDEN_DEFAULT: [&str; 6] = [
    "3e09a15d0e6278d1 Simhash",
    "3d53c65f3c78763a Simhash",
    "033d6b4e48e1e3e9 Simhash",
    "245a60c25faa8c5a Simhash",
    "c96619bdd3af0d5b Exact",
    "6195c240611169af Exact",
];
const GOLDEN_SHINGLES: [&str; 6] = [
    "6e49a14d06727cd1 Simhash",
    "3d31565e3c58743a Simhash",
    "03bdebcf48e1f3ef Simhash",
    "247860435fba8c5a Simhash",
    "c96619bdd3af0d5b Exact",
    "6195c240611169af Exact",
];
const GOLDEN_CHARS: [&str; 6] = [
    "276c9d47c8a042aa Simhash",
    "09c0e2a22bca5d70 Simhash",
    "031d84ea5ba1080b Simhash",
    "f23ec220b9d7c63a Simhash",
    "35219ba3e308acc9 Simhash",
    "74148ea16b2ef6e1 Exact",
];

/// Reference implementation of simhash, written for clarity: f64 sums, bit by bit.
fn reference_simhash(tokens: &[&str], seed: u64) -> u64 {
    let mut tf: HashMap<&str, u32> = HashMap::new();
    for t in tokens {
        *tf.entry(t).or_default() += 1;
    }
    let mut v = [0f64; 64];
    for (t, n) in tf {
        let h = xxh3_64_with_seed(t.as_bytes(), seed ^ WORD_TAG);
        let w = 1.0 + f64::from(n).ln();
        for (i, x) in v.iter_mut().enumerate() {
            if (h >> i) & 1 == 1 {
                *x += w;
            } else {
                *x -= w;
            }
        }
    }
    v.iter()
        .enumerate()
        .fold(0, |fp, (i, &x)| if x > 0.0 { fp | (1 << i) } else { fp })
}

#[test]
fn matches_a_reference_implementation() {
    let scheme = Scheme::builder()
        .features(Features::words())
        .build()
        .unwrap();
    let text = "one two three four five six seven eight nine ten two three three ten ten ten";
    let tokens: Vec<&str> = text.split(' ').collect();
    assert_eq!(
        scheme.fingerprint(text).0,
        reference_simhash(&tokens, DEFAULT_SEED)
    );
}

#[test]
fn short_texts_fall_back_to_an_exact_hash() {
    let scheme = Scheme::default();
    let a = scheme.fingerprint_details("two words");
    assert_eq!(a.kind, FingerprintKind::Exact);
    assert_eq!(a.tokens, 2);
    // The same tokens after normalisation give the same fallback; other tokens do not.
    assert_eq!(
        scheme.fingerprint("TWO  Words!").0,
        a.fingerprint.0,
        "fallback hashes the normalised tokens"
    );
    assert_ne!(scheme.fingerprint("two word").0, a.fingerprint.0);
    let empty = scheme.fingerprint_details("");
    assert_eq!(empty.kind, FingerprintKind::Exact);
    assert_eq!(empty.fingerprint, scheme.fingerprint("  ... !!! "));
    let long = scheme.fingerprint_details("one two three four five six seven eight nine");
    assert_eq!(long.kind, FingerprintKind::Simhash);
}

#[test]
fn fingerprinter_reuse_gives_the_same_results() {
    let scheme = Scheme::default();
    let mut f = scheme.fingerprinter();
    for t in GOLDEN_TEXTS {
        assert_eq!(f.fingerprint(t), scheme.fingerprint(t));
    }
}

#[test]
fn scheme_ids_differ_when_parameters_differ() {
    let ids: Vec<String> = [
        Scheme::builder().build(),
        Scheme::builder().seed(1).build(),
        Scheme::builder().min_features(3).build(),
        Scheme::builder().term_weight(TermWeight::Binary).build(),
        Scheme::builder()
            .features(Features::words_and_shingles(2, 1.0))
            .build(),
        Scheme::builder().stopword_weight(0.5).build(),
        Scheme::builder()
            .normalization(Normalization {
                traditional_to_simplified: false,
                ..Normalization::default()
            })
            .build(),
    ]
    .into_iter()
    .map(|s| s.unwrap().id().to_string())
    .collect();
    let unique: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "{ids:#?}");
}

#[test]
fn builder_rejects_bad_settings() {
    assert!(Scheme::builder()
        .features(Features {
            words: 0.0,
            ..Features::words()
        })
        .build()
        .is_err());
    assert!(Scheme::builder()
        .features(Features {
            words: f32::NAN,
            ..Features::words()
        })
        .build()
        .is_err());
    assert!(Scheme::builder()
        .features(Features::words_and_shingles(9, 1.0))
        .build()
        .is_err());
    let idf = IdfTable::from_reader("a 1.0\nb 2.0\n".as_bytes(), 7).unwrap();
    assert!(Scheme::builder().idf(idf.clone()).build().is_err());
    assert!(Scheme::builder().seed(7).idf(idf).build().is_ok());
    assert!(IdfTable::from_reader("a x\n".as_bytes(), 7).is_err());
}

#[test]
fn idf_damps_common_words() {
    let text = "common common rare1 rare2 rare3 rare4 rare5 rare6 rare7 rare8";
    let plain = Scheme::builder().build().unwrap();
    let table = "common 0.01\nrare1 10\n";
    let idf = IdfTable::from_reader(table.as_bytes(), DEFAULT_SEED).unwrap();
    let with_idf = Scheme::builder().idf(idf).build().unwrap();
    assert_ne!(with_idf.id(), plain.id());
    // Removing the damped word barely moves the IDF fingerprint.
    let without = "rare1 rare2 rare3 rare4 rare5 rare6 rare7 rare8";
    assert!(
        with_idf
            .fingerprint(text)
            .distance(with_idf.fingerprint(without))
            <= plain.fingerprint(text).distance(plain.fingerprint(without))
    );
}

#[test]
fn custom_analyzer_sees_normalised_text() {
    use tantivy::tokenizer::{SimpleTokenizer, TextAnalyzer};
    let scheme = Scheme::builder()
        .analyzer("simple", TextAnalyzer::from(SimpleTokenizer::default()))
        .build()
        .unwrap();
    assert!(scheme.id().contains("tok=analyzer:simple"));
    let a = scheme.fingerprint("ＨＥＬＬＯ World one two three four five six seven");
    let b = scheme.fingerprint("hello world one two three four five six seven");
    assert_eq!(a, b);
}
