//! The mirror finder's unit tests.

use super::*;
use crate::signature::Evidence;

#[test]
fn chrome_lines_are_removed_before_fingerprinting() {
    let scheme = Scheme::default();
    let finder = MirrorFinder::new(scheme.clone(), MirrorConfig::default()).unwrap();
    let content = [
        "Photosynthesis converts light energy into chemical energy stored in glucose molecules \
         inside the chloroplasts of green plants and algae during the long summer days",
        "Plate tectonics explains how the rigid outer shell of the earth moves slowly over the \
         mantle and builds mountains along colliding boundaries over millions of years",
        "Supply and demand determine the market price of a good when buyers and sellers trade \
         freely and no single party controls the quantity on offer in that market",
    ];
    // Titles long enough that their shingles outnumber the breadcrumb's own (a breadcrumb
    // around a two-word title is kept: a few tokens of noise).
    let titles = [
        "How green plants turn light into sugar",
        "Why the plates of the earth keep moving",
        "What sets the price of a traded good",
    ];
    let pages: Vec<(String, String)> = (0..3)
        .map(|i| {
            let related = titles[(i + 1) % 3];
            let text = format!(
                "Example Site  knowledge for everyone\n\
                 Home | News | About\n\
                 Home › Science › {title}\n\
                 {title}\n\
                 {body}\n\
                 Updated 2021-0{m}-1{d}\n\
                 Related: {related}\n\
                 Copyright 2024 Example Site",
                title = titles[i],
                body = content[i],
                m = i + 1,
                d = i + 2,
            );
            (format!("p{i}"), text)
        })
        .collect();
    let out = finder.host_content(&pages);
    for (i, c) in content.iter().enumerate() {
        // Every line but the content is chrome: repeated, numbers only, or other pages' titles
        // (the title and breadcrumb recur in the related links of another page).
        assert_eq!(
            out.fingerprints[i].as_ref().map(|s| s.fingerprint),
            Some(scheme.fingerprint(c)),
            "page {i}"
        );
        assert_eq!(out.han_shares[i], 0.0);
    }
    let total: usize = pages
        .iter()
        .map(|(_, t)| scheme.fingerprint_details(t).tokens)
        .sum();
    let kept: usize = content
        .iter()
        .map(|c| scheme.fingerprint_details(c).tokens)
        .sum();
    assert_eq!(out.tokens, total as u64);
    assert_eq!(out.chrome_tokens, (total - kept) as u64);
}

#[test]
fn near_pairs_matches_brute_force() {
    let mut state = 0x1234_5678_u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state
    };
    let rule = MatchRule::new(RuleSpec {
        layout: BlockLayout::for_distance(6).unwrap(),
        ..RuleSpec::default()
    })
    .unwrap();
    let mut signer = rule.signer(&Scheme::default());
    let words = [
        "mirror", "page", "copy", "host", "content", "chrome", "footer", "site", "text", "index",
        "word", "line",
    ];
    // Texts and copies with a few words changed or a tail added: both branches fire.
    let mut texts: Vec<Vec<&str>> = Vec::new();
    for i in 0..200usize {
        let t = if i % 3 == 0 || texts.is_empty() {
            (0..30 + next() % 40)
                .map(|_| words[(next() % 12) as usize])
                .collect()
        } else {
            let mut t = texts[(next() % texts.len() as u64) as usize].clone();
            for _ in 0..next() % 4 {
                let at = (next() % t.len() as u64) as usize;
                t[at] = words[(next() % 12) as usize];
            }
            if next() % 2 == 0 {
                t.extend((0..t.len() / 3).map(|_| words[(next() % 12) as usize]));
            }
            t
        };
        texts.push(t);
    }
    let sigs: Vec<Signature> = texts.iter().map(|t| signer.sign(&t.join(" "))).collect();
    let items: Vec<(u32, &Signature)> = sigs
        .iter()
        .enumerate()
        .map(|(i, s)| (i as u32, s))
        .collect();
    for by_resemblance in [true, false] {
        let got = near_pairs(&rule, by_resemblance, &items);
        let mut want = Vec::new();
        for x in 0..sigs.len() {
            for y in x + 1..sigs.len() {
                match rule.matches(&sigs[x], &sigs[y]) {
                    Some(Evidence::Resemblance { .. }) if !by_resemblance => {}
                    Some(e) => want.push((x as u32, y as u32, e.distance())),
                    None => {}
                }
            }
        }
        want.sort_unstable();
        assert!(want.iter().any(|p| p.2 > 0 && p.2 <= 6));
        if by_resemblance {
            assert!(want.iter().any(|p| p.2 > 6), "no resemblance-only pair");
        }
        assert_eq!(got, want);
    }
}
