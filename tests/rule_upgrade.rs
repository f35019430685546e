//! The default sketch went from 128 to 256 bins (of 4 bits since issue 24). An index built with
//! the 128-bin rule keeps it:
//! opened from its record it reads and matches with 128 bins (checked against brute force with
//! that rule), and opened with today's default configuration it is refused with a message that
//! names both rules.

mod common;

use common::{add_committing, config, doc_number, edited_texts, ram_index_with};
use std::collections::BTreeSet;
use tantivy::TantivyDocument;
use tantivy_simhash::{
    BlockLayout, Error, MatchRule, MinHashConfig, NearDupConfig, NearDupIndex, Policy, RuleSpec,
    Signature,
};

fn rule_128() -> MatchRule {
    let spec = RuleSpec {
        minhash: MinHashConfig {
            slots: 128,
            ..MinHashConfig::default()
        },
        ..RuleSpec::default()
    };
    MatchRule::new(spec).unwrap()
}

#[test]
fn an_index_of_the_128_bin_rule_keeps_it_and_refuses_the_new_default() {
    assert_eq!(MatchRule::default().spec().minhash.slots, 256);
    let old_rule = rule_128();
    let t = ram_index_with(config(BlockLayout::default()).with_rule(old_rule));
    let texts = edited_texts(5, 120);
    let mut writer = t.index.writer(30_000_000, Policy::Off).unwrap();
    let docs = texts.iter().enumerate().map(|(i, text)| {
        let mut doc = TantivyDocument::default();
        doc.add_text(t.id, format!("d{i}"));
        doc.add_text(t.body, text);
        (doc, None)
    });
    add_committing(&mut writer, docs, usize::MAX);
    let tantivy_index = t.index.index().clone();

    // Today's default configuration: refused, naming both rules.
    let err =
        NearDupIndex::open(tantivy_index.clone(), config(BlockLayout::default())).unwrap_err();
    match &err {
        Error::IndexMismatch {
            what,
            found,
            expected,
        } => {
            assert_eq!(*what, "match rule");
            assert!(found.contains("oph128"), "{found}");
            assert!(expected.contains("oph256"), "{expected}");
        }
        other => panic!("expected IndexMismatch, got {other:?}"),
    }
    assert!(err.to_string().contains("oph128"), "{err}");

    // From its record: the 128-bin rule, and lookups equal to brute force with it.
    let reopened = NearDupIndex::open_recorded(tantivy_index).unwrap();
    assert_eq!(reopened.rule().spec(), old_rule.spec());
    let sigs: Vec<Signature> = {
        let mut signer = old_rule.signer(reopened.scheme());
        texts.iter().map(|x| signer.sign(x)).collect()
    };
    // 4 words of 12 packed 20-bit band keys, then 128 bins of 4 bits.
    assert_eq!(sigs[0].sketch.words.len(), 4 + 128 * 4 / 64);
    let searcher = reopened.lookups().unwrap();
    let mut resemblance_matches = 0;
    for (q, query) in sigs.iter().enumerate() {
        let oracle: BTreeSet<usize> = (0..sigs.len())
            .filter(|&i| old_rule.matches(query, &sigs[i]).is_some())
            .collect();
        let found: BTreeSet<usize> = searcher
            .lookup_signature_addresses(query)
            .unwrap()
            .into_iter()
            .map(|(a, e)| {
                if !matches!(e, tantivy_simhash::Evidence::Simhash { .. }) {
                    resemblance_matches += 1;
                }
                doc_number(&searcher, &t, a)
            })
            .collect();
        assert_eq!(found, oracle, "query {q}");
    }
    assert!(
        resemblance_matches > 0,
        "the test needs resemblance matches"
    );
    // And the configuration the record rebuilds opens it too.
    let _: NearDupConfig = reopened.config().clone();
}
