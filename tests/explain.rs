//! `explain` against independent oracles: the verdict against the index's lookups and
//! `MatchRule::matches` on the stored signatures, the word resemblance against a separate
//! implementation of the evaluation's measure, the rule's shingle resemblance against the
//! signer's shingles, and the alignment against the two word sequences it aligns
//! (cli/tests/explain.rs checks the command line's `explain` against the library).

mod common;

use common::{edited_texts_under_chrome, stored_index};
use std::collections::HashSet;
use tantivy::doc;
use tantivy_simhash::{Explanation, RunKind};
use tantivy_simhash::{Policy, Scheme};

/// The evaluation's resemblance, written out again from its definition (NFKC of the whole
/// text, case folding, Han ideographs one by one, other runs of word characters, 3-shingles as
/// strings; fewer words: one shingle).
fn truth_resemblance(a: &str, b: &str) -> f64 {
    fn shingles(text: &str) -> HashSet<String> {
        use unicode_normalization::UnicodeNormalization;
        let norm: String = text.nfkc().collect();
        let norm = caseless::default_case_fold_str(&norm);
        let han = |c: char| matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2EBEF);
        let mut tokens: Vec<String> = Vec::new();
        let mut cur = String::new();
        for c in norm.chars() {
            if han(c) || !(c.is_alphanumeric() || c == '_') {
                if !cur.is_empty() {
                    tokens.push(std::mem::take(&mut cur));
                }
                if han(c) {
                    tokens.push(c.to_string());
                }
            } else {
                cur.push(c);
            }
        }
        if !cur.is_empty() {
            tokens.push(cur);
        }
        if tokens.len() < 3 {
            return if tokens.is_empty() {
                HashSet::new()
            } else {
                std::iter::once(tokens.join(" ")).collect()
            };
        }
        tokens.windows(3).map(|w| w.join(" ")).collect()
    }
    let (x, y) = (shingles(a), shingles(b));
    if x.is_empty() && y.is_empty() {
        return 1.0;
    }
    let shared = x.intersection(&y).count();
    shared as f64 / (x.len() + y.len() - shared) as f64
}

/// The words each side of the alignment covers, in run order: `a` by equal, deleted and
/// moved-away runs, `b` by equal, inserted and moved-here runs; each must be 0..n in order.
fn check_alignment(e: &Explanation, a: &str, b: &str) {
    let al = &e.alignment;
    let (mut next_a, mut next_b) = (0, 0);
    let word = |text: &str, r: &std::ops::Range<usize>| text[r.clone()].to_lowercase();
    for r in &al.runs {
        match r.kind {
            RunKind::Equal => {
                assert_eq!((r.a.start, r.b.start), (next_a, next_b), "{:?}", al.runs);
                assert_eq!(r.a.len(), r.b.len());
                for (i, j) in r.a.clone().zip(r.b.clone()) {
                    assert_eq!(word(a, &al.a[i]), word(b, &al.b[j]));
                }
                next_a = r.a.end;
                next_b = r.b.end;
            }
            RunKind::Delete | RunKind::MoveFrom => {
                assert_eq!(r.a.start, next_a);
                next_a = r.a.end;
            }
            RunKind::Insert | RunKind::MoveTo => {
                assert_eq!(r.b.start, next_b);
                next_b = r.b.end;
            }
        }
        if matches!(r.kind, RunKind::MoveFrom | RunKind::MoveTo) {
            assert_eq!(r.a.len(), r.b.len());
            for (i, j) in r.a.clone().zip(r.b.clone()) {
                assert_eq!(word(a, &al.a[i]), word(b, &al.b[j]));
            }
        }
    }
    assert_eq!((next_a, next_b), (al.a.len(), al.b.len()));
    let (equal, deleted, inserted, moved) = al.counts();
    assert_eq!(equal + deleted + moved, al.a.len());
    assert_eq!(equal + inserted + moved, al.b.len());
}

#[test]
fn explain_agrees_with_the_rule_and_the_oracles_on_every_pair() {
    let (index, id, body) = stored_index();
    let texts = edited_texts_under_chrome(11, 70);
    let mut w = index.writer(50_000_000, Policy::Off).unwrap();
    for (i, t) in texts.iter().enumerate() {
        w.add_document(doc!(id => format!("t{i:03}"), body => t.clone()))
            .unwrap();
        if i == 30 {
            w.commit().unwrap();
        }
    }
    w.commit().unwrap();
    let searcher = index.lookups().unwrap();
    let rule = index.rule();
    let mut signer = rule.signer(index.scheme());
    let (mut matched, mut by_resemblance, mut chrome_seen, mut moved_seen) = (0, 0, 0, 0);
    for i in 0..texts.len() {
        let a_id = format!("t{i:03}");
        let lookup: HashSet<String> = searcher
            .lookup_id(&a_id)
            .unwrap()
            .into_iter()
            .map(|m| m.id)
            .collect();
        for j in 0..texts.len() {
            if i == j {
                continue;
            }
            let b_id = format!("t{j:03}");
            let e = index.explain_ids(&searcher, &a_id, &b_id).unwrap();
            let (sa, sb) = (
                searcher.signature_of_id(&a_id).unwrap().unwrap(),
                searcher.signature_of_id(&b_id).unwrap().unwrap(),
            );
            assert_eq!(e.verdict, rule.matches(&sa, &sb), "{a_id} {b_id}");
            assert_eq!(e.verdict.is_some(), lookup.contains(&b_id), "{a_id} {b_id}");
            assert_eq!(e.verdict.is_some(), e.simhash.matched || e.minhash.matched);
            assert_eq!(e.simhash.distance, sa.fingerprint.distance(sb.fingerprint));
            assert!(e.signature_of_text.iter().all(|&x| x));
            // Not a match: each branch says by how much it failed.
            if e.verdict.is_none() {
                let k = rule.layout().max_distance();
                assert!(e.branches[0]
                    .reason
                    .contains(&format!("(by {} bit", e.simhash.distance - k)));
            }
            let truth = truth_resemblance(&texts[i], &texts[j]);
            assert!((e.words.resemblance - truth).abs() < 1e-12, "{a_id} {b_id}");
            let (x, y): (HashSet<u64>, HashSet<u64>) = (
                signer.shingles(&texts[i]).into_iter().collect(),
                signer.shingles(&texts[j]).into_iter().collect(),
            );
            let shared = x.intersection(&y).count();
            let exact = shared as f64 / (x.len() + y.len() - shared).max(1) as f64;
            assert!((e.shingles.resemblance - exact).abs() < 1e-12);
            check_alignment(&e, &texts[i], &texts[j]);
            matched += usize::from(e.verdict.is_some());
            by_resemblance += usize::from(e.verdict.is_some() && !e.simhash.matched);
            chrome_seen += usize::from(!e.chrome[0].is_empty());
            moved_seen += usize::from(e.alignment.counts().3 > 0);
        }
    }
    // Both branches, chrome and moves occur: the checks above are not vacuous.
    assert!(
        matched > 20 && by_resemblance > 0,
        "{matched} {by_resemblance}"
    );
    assert!(chrome_seen > 0);
    let _ = moved_seen;
}

#[test]
fn explain_names_chrome_lines_and_moved_blocks() {
    let scheme = Scheme::default();
    let rule = tantivy_simhash::MatchRule::default();
    let p1 = "The first paragraph says how the index stores signatures in columns per segment.";
    let p2 = "The second paragraph explains the band keys and why a hot key is bounded in work.";
    let p3 = "The third paragraph lists the costs of every lookup and of the batch join today.";
    let a = format!("Install guide | Daily Dev\nDaily Dev\nHome | Docs | Blog | Contact\n\n{p1}\n\n{p2}\n\n{p3}");
    let b = format!("{p1}\n\n{p3}\n\n{p2}");
    let e = Explanation::of_texts(&rule, &scheme, &a, &b);
    let lines: Vec<(usize, bool)> = e.chrome[0]
        .iter()
        .map(|c| (c.line, c.suffix_only))
        .collect();
    assert_eq!(lines, [(0, true), (1, false), (2, false)]);
    assert!(e.chrome[1].is_empty());
    assert!(e.verdict.is_some());
    let (_, _, _, moved) = e.alignment.counts();
    assert!(moved >= 14, "{:?}", e.alignment.runs);
    check_alignment(&e, &a, &b);
    // JSON carries every part.
    let v = e.to_json();
    for key in [
        "verdict",
        "branches",
        "simhash",
        "minhash",
        "shingles",
        "words",
        "chrome",
        "alignment",
        "summary",
    ] {
        assert!(v.get(key).is_some(), "{key}");
    }
    assert_eq!(v["verdict"]["match"], "resemblance");
}
