use super::minhash::one_permutation;
use super::*;
use crate::fingerprint::Fingerprint;
use crate::test_rng::Rng;
use proptest::prelude::*;
use std::collections::BTreeSet;

const WORDS: [&str; 40] = [
    "index", "segment", "term", "posting", "query", "score", "field", "token", "merge", "commit",
    "reader", "writer", "schema", "fast", "column", "block", "key", "hash", "page", "site", "menu",
    "footer", "header", "copy", "mirror", "crawler", "web", "text", "word", "line", "软件", "开发",
    "过程", "需求", "分析", "设计", "编码", "测试", "维护", "方法",
];

/// Base documents and edited copies of them: pairs across the whole range of resemblance.
fn corpus(seed: u64, docs: usize) -> Vec<String> {
    let mut rng = Rng(seed | 1);
    let mut out: Vec<Vec<&str>> = Vec::new();
    for _ in 0..docs {
        if !out.is_empty() && rng.index(3) > 0 {
            let mut d = out[rng.index(out.len())].clone();
            for _ in 0..rng.index(d.len() / 4 + 1) {
                let at = rng.index(d.len());
                match rng.index(3) {
                    0 => d[at] = WORDS[rng.index(WORDS.len())],
                    1 => d.insert(at, WORDS[rng.index(WORDS.len())]),
                    _ => {
                        d.remove(at);
                    }
                }
            }
            if d.is_empty() {
                d.push("word");
            }
            out.push(d);
        } else {
            let len = 1 + rng.index(80);
            out.push((0..len).map(|_| WORDS[rng.index(WORDS.len())]).collect());
        }
    }
    out.into_iter()
        .map(|d| {
            // Some lines, so chrome-aware variants see short and long lines.
            d.chunks(1 + (d.len() % 9))
                .map(|c| c.join(" "))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

fn brute_force(rule: &MatchRule, sigs: &[Signature]) -> BTreeSet<(usize, usize)> {
    let mut out = BTreeSet::new();
    for i in 0..sigs.len() {
        for j in i + 1..sigs.len() {
            if rule.matches(&sigs[i], &sigs[j]).is_some() {
                out.insert((i, j));
            }
        }
    }
    out
}

fn rules() -> Vec<MatchRule> {
    let chrome = RuleSpec {
        shingling: Shingling {
            min_line_words: 6,
            ..Shingling::default()
        },
        min_resemblance: 0.3,
        ..RuleSpec::default()
    };
    let four_bit = RuleSpec {
        minhash: MinHashConfig {
            slots: 128,
            bands: 16,
            rows: 8,
            bits: 4,
            key_bits: 16,
        },
        band_max_distance: Some(20),
        ..RuleSpec::default()
    };
    vec![
        MatchRule::default(),
        MatchRule::new(chrome).unwrap(),
        MatchRule::new(four_bit).unwrap(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The rule's promise: every pair it matches shares a key, so a lookup finds it; and the
    /// in-memory join reports exactly the brute-force pairs.
    #[test]
    fn every_match_shares_a_key_and_the_join_is_exact(seed in any::<u64>()) {
        let texts = corpus(seed, 60);
        for rule in rules() {
            let mut signer = rule.signer(&crate::Scheme::default());
            let sigs: Vec<Signature> = texts.iter().map(|t| signer.sign(t)).collect();
            let oracle = brute_force(&rule, &sigs);
            for &(i, j) in &oracle {
                let (a, b): (BTreeSet<u64>, BTreeSet<u64>) =
                    (rule.keys(&sigs[i]).into_iter().collect(), rule.keys(&sigs[j]).into_iter().collect());
                prop_assert!(a.intersection(&b).next().is_some(), "pair {i},{j} matches without a shared key");
            }
            let mut found = Vec::new();
            pairs_in_memory(&rule, &sigs, usize::MAX, |i, j, e| {
                assert_eq!(rule.matches(&sigs[i], &sigs[j]), Some(e));
                found.push((i, j));
            });
            let set: BTreeSet<_> = found.iter().copied().collect();
            prop_assert_eq!(set.len(), found.len(), "a pair was reported twice");
            prop_assert_eq!(set, oracle);
        }
    }

    /// Sketch agreement counted with bit tricks equals a bin-by-bin count.
    #[test]
    fn agreeing_bins_counts_equal_bins(a in proptest::collection::vec(any::<u64>(), 1..300),
                                       b in proptest::collection::vec(any::<u64>(), 1..300),
                                       bits in prop_oneof![Just(1u32), Just(2), Just(4), Just(8), Just(16)]) {
        let config = MinHashConfig { slots: 128, bands: 4, rows: 3, bits, key_bits: 32 };
        let (mut ba, mut bb) = (Vec::new(), Vec::new());
        one_permutation(&config, &a, &mut ba);
        one_permutation(&config, &b, &mut bb);
        let (sa, sb) = (Sketch::from_bins(&config, &ba), Sketch::from_bins(&config, &bb));
        let mask = (1u32 << bits) - 1;
        let naive = ba.iter().zip(&bb).filter(|(x, y)| *x & mask == *y & mask).count() as u32;
        prop_assert_eq!(sa.agreeing_bins(&sb, &config), (naive, 128));
        // Band keys are hashes of the bins' full values (32 bits kept: a chance collision is
        // 2^-32 per band).
        for band in 0..config.bands {
            let r = (band * config.rows) as usize..((band + 1) * config.rows) as usize;
            let equal = ba[r.clone()] == bb[r];
            prop_assert_eq!(sa.band(&config, band) == sb.band(&config, band), equal);
        }
    }
}

/// The sketch estimates the resemblance of the shingle sets it was made from.
#[test]
fn sketch_estimates_the_resemblance() {
    let config = MinHashConfig::default();
    let base: Vec<u64> = (0..2000u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .collect();
    for shared in [200usize, 1000, 1600, 2000] {
        // a = base[..], b = base[..shared] + fresh: J = shared / (4000 - shared).
        let b: Vec<u64> = base[..shared]
            .iter()
            .copied()
            .chain((0..(2000 - shared) as u64).map(|i| !i))
            .collect();
        let (mut ba, mut bb) = (Vec::new(), Vec::new());
        one_permutation(&config, &base, &mut ba);
        one_permutation(&config, &b, &mut bb);
        let est =
            Sketch::from_bins(&config, &ba).resemblance(&Sketch::from_bins(&config, &bb), &config);
        let truth = shared as f32 / (4000 - shared) as f32;
        // Four standard deviations of a 128-bin estimate at worst.
        assert!((est - truth).abs() < 0.18, "J = {truth}, estimated {est}");
    }
}

#[test]
fn formatting_only_copies_match_and_unrelated_texts_do_not() {
    let rule = MatchRule::default();
    let mut signer = rule.signer(&crate::Scheme::default());
    let a = signer.sign("The quick brown fox jumps over the lazy dog near the river bank today,\nand then it runs home.");
    let b = signer.sign("the QUICK brown fox  jumps over the lazy dog, near the river bank today! and then it runs home");
    assert_eq!(
        rule.matches(&a, &b),
        Some(Evidence::Simhash { distance: 0 })
    );
    let c =
        signer.sign("Quarterly revenue grew in every region, led by cloud services and hardware.");
    assert_eq!(rule.matches(&a, &c), None);
}

#[test]
fn empty_documents_have_no_band_keys_and_match_only_by_simhash() {
    let rule = MatchRule::default();
    let mut signer = rule.signer(&crate::Scheme::default());
    let empty = signer.sign("  ... !!! ");
    assert!(empty.sketch.is_empty());
    assert_eq!(rule.keys(&empty).len(), rule.layout().num_keys());
    assert_eq!(rule.key_count(&empty), rule.layout().num_keys());
    let also_empty = signer.sign("");
    assert!(rule.matches(&empty, &also_empty).is_some());
    let text = signer.sign("a real sentence with several words in it");
    assert!(!text.sketch.is_empty());
    assert_eq!(rule.key_count(&text), rule.keys(&text).len());
    assert!(rule.matches(&empty, &text).is_none());
}

#[test]
fn invalid_rules_are_refused_with_the_reason() {
    for (spec, needle) in [
        (
            RuleSpec {
                min_resemblance: 1.5,
                ..RuleSpec::default()
            },
            "min_resemblance",
        ),
        (
            RuleSpec {
                minhash: MinHashConfig {
                    slots: 100,
                    bands: 16,
                    rows: 4,
                    bits: 8,
                    key_bits: 20,
                },
                ..RuleSpec::default()
            },
            "slots",
        ),
        (
            RuleSpec {
                minhash: MinHashConfig {
                    slots: 128,
                    bands: 40,
                    rows: 4,
                    bits: 8,
                    key_bits: 20,
                },
                ..RuleSpec::default()
            },
            "bands",
        ),
        (
            RuleSpec {
                minhash: MinHashConfig {
                    slots: 128,
                    bands: 16,
                    rows: 2,
                    bits: 8,
                    key_bits: 40,
                },
                ..RuleSpec::default()
            },
            "band key",
        ),
    ] {
        let err = MatchRule::new(spec).unwrap_err().to_string();
        assert!(err.contains(needle), "{err}");
    }
}

/// 5,000 distinct documents behind one hot key: the work per key is bounded, every reported pair
/// matches, and every matching pair with a non-hot shared key is still reported.
#[test]
fn a_hot_key_is_bounded() {
    let rule = MatchRule::default();
    let mut rng = Rng(7);
    let n = 5000;
    let cap = 64;
    // Same low 16 bits (block key 0 is hot), random elsewhere; random sketches; every 10th
    // document is a near copy (distance 1) of the previous one.
    let mut sigs: Vec<Signature> = Vec::new();
    for i in 0..n {
        let fp = if i % 10 == 9 {
            Fingerprint(sigs[i - 1].fingerprint.0 ^ (1 << 40))
        } else {
            Fingerprint((rng.next() & !0xffff) | 0x1234)
        };
        let words: Vec<u64> = (0..16).map(|_| rng.next()).collect();
        sigs.push(Signature {
            fingerprint: fp,
            sketch: Sketch { words },
        });
    }
    let oracle = brute_force(&rule, &sigs);
    let mut found = BTreeSet::new();
    let stats = pairs_in_memory(&rule, &sigs, cap, |i, j, _| {
        assert!(rule.matches(&sigs[i], &sigs[j]).is_some());
        assert!(found.insert((i, j)), "pair reported twice");
    });
    assert!(stats.hot_keys >= 1);
    let keys = rule.keys_per_document() as u64;
    assert!(
        stats.comparisons <= n as u64 * cap as u64 * keys,
        "{} comparisons",
        stats.comparisons
    );
    // Quadratic would be n^2 / 2 = 12.5 M comparisons on the hot key alone.
    assert!(stats.comparisons < (n * n / 20) as u64, "{stats:?}");
    assert!(found.is_subset(&oracle));
    // The near copies share keys besides the hot one (blocks 1..3 agree): none is lost.
    assert_eq!(found, oracle);
    assert_eq!(oracle.len(), n / 10);
}

/// The property test's corpus exercises both branches of the rule (it is not vacuous).
#[test]
fn the_test_corpus_has_matches_of_both_kinds() {
    let texts = corpus(12345, 60);
    let rule = MatchRule::default();
    let mut signer = rule.signer(&crate::Scheme::default());
    let sigs: Vec<Signature> = texts.iter().map(|t| signer.sign(t)).collect();
    let (mut simhash, mut resemblance) = (0, 0);
    for i in 0..sigs.len() {
        for j in i + 1..sigs.len() {
            match rule.matches(&sigs[i], &sigs[j]) {
                Some(Evidence::Simhash { .. }) => simhash += 1,
                Some(Evidence::Resemblance { .. }) => resemblance += 1,
                None => {}
            }
        }
    }
    assert!(simhash > 0 && resemblance > 0, "{simhash} / {resemblance}");
}

/// Lookups through the index (several segments, deletes) find exactly what brute force finds.
#[test]
fn index_lookup_equals_brute_force_across_segments_and_deletes() {
    use crate::component::reader::SignatureReader;

    for (seed, rule) in [(3u64, MatchRule::default()), (4, rules().remove(1))] {
        let texts = corpus(seed, 150);
        let mut signer = rule.signer(&crate::Scheme::default());
        let sigs: Vec<Signature> = texts.iter().map(|t| signer.sign(t)).collect();
        // Deletes reach into committed segments.
        let (index, _fields, deleted) = signature_index(&rule, &sigs, 50, |i| i % 7 == 3);
        let reader = index.reader().unwrap();
        let searcher = reader.searcher();
        assert!(searcher.segment_readers().len() >= 3);
        let lookups = SignatureReader::new(&searcher, &rule).unwrap();
        let ids: Vec<_> = searcher
            .segment_readers()
            .iter()
            .map(|s| s.fast_fields().u64("n").unwrap())
            .collect();
        let (mut total, mut capped_total) = (0, 0);
        for (q, query) in sigs.iter().enumerate() {
            let oracle: BTreeSet<usize> = (0..sigs.len())
                .filter(|i| !deleted.contains(i) && rule.matches(query, &sigs[*i]).is_some())
                .collect();
            let mut found = Vec::new();
            lookups
                .for_each_match(&rule, query, usize::MAX, |m| {
                    let a = m.address;
                    let i = ids[a.segment_ord as usize].first(a.doc_id).unwrap() as usize;
                    assert_eq!(m.signature, &sigs[i]);
                    assert_eq!(rule.matches(query, m.signature), Some(m.evidence));
                    found.push(i);
                })
                .unwrap();
            let set: BTreeSet<usize> = found.iter().copied().collect();
            assert_eq!(
                set.len(),
                found.len(),
                "query {q}: a document reported twice"
            );
            assert_eq!(set, oracle, "query {q}");
            total += set.len();
            // A bound of 1 posting per key still reports only true matches.
            let mut capped = BTreeSet::new();
            lookups
                .for_each_match(&rule, query, 1, |m| {
                    let a = m.address;
                    capped.insert(ids[a.segment_ord as usize].first(a.doc_id).unwrap() as usize);
                })
                .unwrap();
            assert!(capped.is_subset(&oracle));
            capped_total += capped.len();
        }
        assert!(
            total > sigs.len(),
            "the corpus must have matches beyond self-matches"
        );
        assert!(capped_total <= total);
    }
}

/// Simulates a shuffle on key: every `(row, signature)` under each of its keys, each group in a
/// scrambled order, the hot keys found per group as an engine would; then joins each group with
/// [`pairs_in_key_group`]. Rows are sparse but ascending in input order (partition << 32 | i).
fn pairs_by_key_groups(
    rule: &MatchRule,
    sigs: &[Signature],
    cap: usize,
    seed: u64,
) -> (Vec<(u64, u64, String)>, PairStats) {
    let row = |i: usize| ((i / 7) as u64) << 32 | (i % 7) as u64;
    let mut groups: std::collections::BTreeMap<u64, Vec<(u64, Signature)>> = Default::default();
    for (i, sig) in sigs.iter().enumerate() {
        for key in rule.keys(sig) {
            groups.entry(key).or_default().push((row(i), sig.clone()));
        }
    }
    let mut rng = Rng(seed | 1);
    for postings in groups.values_mut() {
        for i in (1..postings.len()).rev() {
            postings.swap(i, rng.index(i + 1));
        }
    }
    let hot: std::collections::HashSet<u64> = groups
        .iter()
        .filter(|(_, p)| distinct_signatures(&p.iter().map(|x| &x.1).collect::<Vec<_>>()) > cap)
        .map(|(k, _)| *k)
        .collect();
    let mut found = Vec::new();
    let mut stats = PairStats::default();
    for (key, postings) in &groups {
        let s = pairs_in_key_group(
            rule,
            *key,
            postings,
            cap,
            |k| hot.contains(&k),
            |a, b, e| found.push((a, b, format!("{e:?}"))),
        )
        .unwrap();
        stats.add(s);
    }
    found.sort();
    let mut expected = Vec::new();
    let in_memory = pairs_in_memory(rule, sigs, cap, |i, j, e| {
        expected.push((row(i), row(j), format!("{e:?}")))
    });
    expected.sort();
    assert_eq!(found, expected, "cap {cap}");
    assert_eq!(stats, in_memory, "cap {cap}");
    (found, stats)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Joining key group by key group (any order inside a group) reports exactly the pairs of the
    /// in-memory join, with the same evidence and counts, exact or with hot keys bounded.
    #[test]
    fn the_key_group_join_equals_the_in_memory_join(seed in any::<u64>()) {
        let texts = corpus(seed, 80);
        for rule in rules() {
            let mut signer = rule.signer(&crate::Scheme::default());
            let sigs: Vec<Signature> = texts.iter().map(|t| signer.sign(t)).collect();
            for cap in [usize::MAX, 1, 2, 3, 8] {
                pairs_by_key_groups(&rule, &sigs, cap, seed);
            }
        }
    }
}

/// The hot key of `a_hot_key_is_bounded`, joined group by group: the same pairs and work.
#[test]
fn the_key_group_join_bounds_a_hot_key_like_the_in_memory_join() {
    let rule = MatchRule::default();
    let mut rng = Rng(11);
    let mut sigs: Vec<Signature> = Vec::new();
    for i in 0..3000 {
        let fp = if i % 10 == 9 {
            Fingerprint(sigs[i - 1].fingerprint.0 ^ (1 << 40))
        } else {
            Fingerprint((rng.next() & !0xffff) | 0x1234)
        };
        let sketch = Sketch {
            words: (0..rule.spec().minhash.sketch_words())
                .map(|_| rng.next())
                .collect(),
        };
        // Exact copies too: their pairs come from the identical groups.
        let copies = if i % 100 == 0 { 3 } else { 1 };
        for _ in 0..copies {
            sigs.push(Signature {
                fingerprint: fp,
                sketch: sketch.clone(),
            });
        }
    }
    let (found, stats) = pairs_by_key_groups(&rule, &sigs, 64, 5);
    assert_eq!(stats.hot_keys, 1);
    assert!(found.len() >= 300 + 3 * 30, "{}", found.len());
}

#[test]
fn a_key_group_with_foreign_postings_is_refused() {
    let rule = MatchRule::default();
    let mut signer = rule.signer(&crate::Scheme::default());
    let a = signer.sign("one document with several words in it for its shingles and keys");
    let b = signer.sign("a different document whose keys are all different from the first");
    let key = rule.keys(&a)[0];
    let err = pairs_in_key_group(
        &rule,
        key,
        &[(0, a.clone()), (1, b)],
        usize::MAX,
        |_| false,
        |_, _, _| {},
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("does not hold key"), "{err}");
    let short = Signature {
        fingerprint: a.fingerprint,
        sketch: Sketch { words: vec![1; 3] },
    };
    let err = pairs_in_key_group(
        &rule,
        key,
        &[(0, a), (1, short)],
        usize::MAX,
        |_| false,
        |_, _, _| {},
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("3 sketch words"), "{err}");
}

/// How a member of a [`families`] family differs from its base.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kin {
    /// 1-3 fingerprint bits flipped, the same sketch: a simhash match.
    SimhashNeighbour,
    /// A far fingerprint, a few sketch words (beyond the band words) changed: a resemblance
    /// match.
    ResemblanceNeighbour,
    /// A far fingerprint, the band words kept and the rest changed: met under every band key,
    /// never a match.
    BandStranger,
    /// The base itself.
    Copy,
}

/// Signatures in families around random bases, for the lookup and join tests: per base, one
/// member of each of `kin` in turn, then the base; whole families until at least `n`
/// signatures.
pub(crate) fn families(rng: &mut Rng, rule: &MatchRule, n: usize, kin: &[Kin]) -> Vec<Signature> {
    let words = rule.minhash().sketch_words();
    let mut sigs: Vec<Signature> = Vec::new();
    while sigs.len() < n {
        let base = Signature {
            fingerprint: Fingerprint(rng.next()),
            sketch: Sketch {
                words: (0..words).map(|_| rng.next()).collect(),
            },
        };
        for kin in kin {
            let mut s = base.clone();
            match kin {
                Kin::SimhashNeighbour => s.fingerprint.0 ^= 1 << rng.below(64) | 1 << rng.below(64),
                Kin::ResemblanceNeighbour => {
                    s.fingerprint = Fingerprint(rng.next());
                    for _ in 0..3 {
                        let w = 5 + rng.index(words - 5);
                        s.sketch.words[w] = rng.next();
                    }
                }
                Kin::BandStranger => {
                    s.fingerprint = Fingerprint(rng.next());
                    for w in &mut s.sketch.words[5..] {
                        *w = rng.next();
                    }
                }
                Kin::Copy => {}
            }
            sigs.push(s);
        }
        sigs.push(base);
    }
    sigs
}

/// An index of `sigs` (u64 field `n`, indexed and fast, holds each one's position; the signature
/// fields, stored by the segment component), committed every `commit_every`
/// documents, then the positions `delete` selects deleted and committed: several segments and
/// deletes reaching into them, for the lookup tests. Returns the deleted positions.
pub(crate) fn signature_index(
    rule: &MatchRule,
    sigs: &[Signature],
    commit_every: usize,
    delete: impl Fn(usize) -> bool,
) -> (
    tantivy::Index,
    crate::component::reader::ResolvedSignatureFields,
    BTreeSet<usize>,
) {
    use crate::component::reader::SignatureFields;
    use tantivy::indexer::NoMergePolicy;
    use tantivy::schema::{Schema, FAST, INDEXED};
    use tantivy::{Index, IndexWriter, TantivyDocument, Term};

    let names = SignatureFields::new("fp", rule);
    let mut builder = Schema::builder();
    let n_field = builder.add_u64_field("n", INDEXED | FAST);
    names.add_to_schema(&mut builder);
    let component = crate::component::NearDupComponent::new(
        *rule,
        names.fingerprint.clone(),
        names.sketch.clone(),
    );
    let index = Index::builder()
        .schema(builder.build())
        .register_plugin(std::sync::Arc::new(component))
        .create_in_ram()
        .unwrap();
    let fields = names.resolve(&index.schema()).unwrap();
    let mut writer: IndexWriter = index.writer_with_num_threads(1, 20_000_000).unwrap();
    writer.set_merge_policy(Box::new(NoMergePolicy));
    for (i, sig) in sigs.iter().enumerate() {
        let mut doc = TantivyDocument::default();
        doc.add_u64(n_field, i as u64);
        fields.add_to_document(rule, sig, &mut doc);
        writer.add_document(doc).unwrap();
        if i % commit_every == commit_every - 1 {
            writer.commit().unwrap();
        }
    }
    let deleted: BTreeSet<usize> = (0..sigs.len()).filter(|&i| delete(i)).collect();
    for &i in &deleted {
        writer.delete_term(Term::from_field_u64(n_field, i as u64));
    }
    writer.commit().unwrap();
    (index, fields, deleted)
}
