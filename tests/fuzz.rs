//! Fuzzing `Scheme::fingerprint` with arbitrary bytes (decoded lossily, as a crawler would) under
//! several schemes: no panic, and the same text always gives the same fingerprint, whether
//! through a fresh scheme call or a reused fingerprinter. The JSONL reader's fuzz test lives
//! with the reader (`cli/src/input.rs`).
//!
//! The normal suite runs a few hundred cases; the long run is ignored:
//!
//! ```sh
//! FUZZ_CASES=200000 cargo test --release --test fuzz -- --ignored
//! ```

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use tantivy::tokenizer::{Language, LowerCaser, SimpleTokenizer, Stemmer, TextAnalyzer};
use tantivy_simhash::{Features, HanSegmentation, Scheme, Tokenization};

fn schemes() -> Vec<(&'static str, Scheme)> {
    let stemmer = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(LowerCaser)
        .filter(Stemmer::new(Language::English))
        .build();
    vec![
        ("default", Scheme::default()),
        (
            "han-chars",
            Scheme::builder()
                .tokenization(Tokenization::Builtin {
                    han: HanSegmentation::Chars,
                })
                .build()
                .unwrap(),
        ),
        (
            "shingles",
            Scheme::builder()
                .features(Features::words_and_shingles(3, 0.5))
                .build()
                .unwrap(),
        ),
        (
            "stem-english",
            Scheme::builder()
                .analyzer("stem-english", stemmer)
                .build()
                .unwrap(),
        ),
    ]
}

/// Bytes that are mostly text of many scripts, markup and separators, with raw junk between:
/// arbitrary bytes alone rarely form words.
fn texty_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        any::<Vec<u8>>(),
        any::<String>().prop_map(String::into_bytes),
        prop::sample::select(vec![
            "软件開發",
            "the Quick ＦＯＸ",
            "&amp;",
            "&#x41;",
            "<p>",
            "ǅ",
            "İ",
            "ß",
            "\u{301}",
            "\u{200b}",
            "😀👍🏽",
            "한국어",
            "١٢٣",
            " ",
            "\n\n",
            "\u{feff}",
            "\u{fffd}",
            "\0",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

fn fuzz_fingerprints(cases: u32) {
    let schemes = schemes();
    // Reused across cases, as a writer reuses them: no state may leak from one text to the next.
    let fingerprinters: Vec<_> = schemes
        .iter()
        .map(|(_, s)| std::cell::RefCell::new(s.fingerprinter()))
        .collect();
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&texty_bytes(), |bytes| {
            let text = String::from_utf8_lossy(&bytes);
            for ((name, scheme), fpr) in schemes.iter().zip(&fingerprinters) {
                let fp = scheme.fingerprint(&text);
                prop_assert_eq!(fpr.borrow_mut().fingerprint(&text), fp, "{}", name);
                prop_assert_eq!(scheme.fingerprint(&text), fp, "{}", name);
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn fingerprints_of_arbitrary_bytes() {
    fuzz_fingerprints(300);
}

/// The long run (see the module docs); `FUZZ_CASES` sets the number of cases.
#[test]
#[ignore = "long: run with --ignored"]
fn fingerprints_of_arbitrary_bytes_long() {
    let cases = std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(200_000);
    fuzz_fingerprints(cases);
}
