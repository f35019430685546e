//! `Policy::Replace` (and `Reject`) decide the same whether the earlier documents are
//! committed or still pending, when a hot key's live holders stay within the bound: the
//! holders that a replacement deletes must not keep later documents out of the bounded
//! candidate lists (of the pending table, or of a committed segment's postings).
//!
//! The corpus is made of signatures, so that every pair of consecutive versions matches only
//! through one band key that every document holds (a template sentence fixing a MinHash band,
//! as the licence files of natural-en do): that key is hot (more holders than
//! `DEFAULT_MAX_POSTINGS_PER_KEY`), but under `Replace` each version deletes its predecessor,
//! so it never has more live holders than there are chains.

mod common;

use common::{ram_index, unmerged_writer, Rng};
use std::collections::{BTreeMap, BTreeSet};
use tantivy::doc;
use tantivy_simhash::{
    BlockLayout, Evidence, Fingerprint, MatchRule, Outcome, Policy, Signature, Sketch,
    DEFAULT_MAX_POSTINGS_PER_KEY,
};

const CHAINS: usize = 40;
const VERSIONS: usize = 15;
/// Bins of the sketch each version changes in its predecessor's own part.
const EDITS: usize = 10;

/// A sketch of `rule`'s MinHash configuration from its band keys and its 4-bit bins (the
/// layout `Sketch` documents: the packed keys, then the packed bins).
fn sketch_of(rule: &MatchRule, bands: &[u64], bins: &[u8]) -> Sketch {
    let m = rule.minhash();
    let mut sketch = Sketch::empty(m);
    let width = m.key_bits as usize;
    for (i, &key) in bands.iter().enumerate() {
        let at = i * width;
        sketch.words[at / 64] |= key << (at % 64);
        if at % 64 + width > 64 {
            sketch.words[at / 64 + 1] |= key >> (64 - at % 64);
        }
    }
    let first = m.band_words();
    for (i, &b) in bins.iter().enumerate() {
        sketch.words[first + i / 16] |= u64::from(b & 15) << (4 * (i % 16));
    }
    sketch
}

/// `VERSIONS` versions of `CHAINS` documents, version by version (chain 0 to 39, then their
/// next versions): every document's band 0 key is the same template; its other band keys are
/// its own (random); its bins are its chain's, with `EDITS` of them changed from the previous
/// version. Fingerprints are random (no simhash matches).
fn corpus(rule: &MatchRule) -> Vec<(String, Signature)> {
    let m = rule.minhash();
    assert_eq!(
        (m.slots, m.bits, m.key_bits),
        (256, 4, 20),
        "the corpus assumes the default sketch"
    );
    let mut rng = Rng(0xc0de);
    let nibble = |rng: &mut Rng| (rng.below(15) + 1) as u8;
    let mut chains: Vec<Vec<u8>> = (0..CHAINS)
        .map(|_| (0..256).map(|_| nibble(&mut rng)).collect())
        .collect();
    let mut docs = Vec::new();
    for version in 0..VERSIONS {
        for (c, own) in chains.iter_mut().enumerate() {
            if version > 0 {
                for _ in 0..EDITS {
                    let at = rng.below(256) as usize;
                    own[at] = nibble(&mut rng);
                }
            }
            let mut bands = vec![7u64];
            bands.extend((1..m.bands).map(|_| rng.below(1 << 20)));
            let signature = Signature {
                fingerprint: Fingerprint(rng.next_u64()),
                sketch: sketch_of(rule, &bands, own),
            };
            docs.push((format!("c{c}v{version}"), signature));
        }
    }
    docs
}

/// The brute-force oracle: a new document's matches are every live earlier one the rule
/// matches (strongest first, then the first added); `Replace` deletes them all, `Reject`
/// skips the new one. Returns the outcomes (the ids replaced, or the id rejected against),
/// the live ids at the end and the most documents live at once.
fn oracle(
    rule: &MatchRule,
    docs: &[(String, Signature)],
    policy: Policy,
) -> (Vec<Vec<String>>, BTreeSet<String>, usize) {
    let mut live: Vec<usize> = Vec::new();
    let mut most_live = 0;
    let mut outcomes = Vec::new();
    for (i, (_, signature)) in docs.iter().enumerate() {
        let mut found: Vec<(Evidence, usize)> = live
            .iter()
            .filter_map(|&j| rule.matches(signature, &docs[j].1).map(|e| (e, j)))
            .collect();
        found.sort_by(|a, b| a.0.cmp_strength(&b.0));
        let ids: Vec<String> = found.iter().map(|&(_, j)| docs[j].0.clone()).collect();
        match policy {
            Policy::Reject if !found.is_empty() => {
                outcomes.push(ids[..1].to_vec());
                continue;
            }
            _ => live.retain(|j| !found.iter().any(|&(_, f)| f == *j)),
        }
        live.push(i);
        most_live = most_live.max(live.len());
        outcomes.push(ids);
    }
    let live = live.into_iter().map(|j| docs[j].0.clone()).collect();
    (outcomes, live, most_live)
}

/// What an outcome names: the ids replaced, or the id rejected against.
fn named(outcome: &Outcome) -> Vec<String> {
    match outcome {
        Outcome::Replaced { replaced, .. } => replaced.clone(),
        Outcome::Duplicate { of, .. } => vec![of.clone()],
        _ => Vec::new(),
    }
}

#[test]
fn replace_and_reject_decide_like_the_oracle_over_a_hot_key_whatever_the_commits() {
    {
        let t = ram_index(BlockLayout::default());
        let rule = *t.index.rule();
        let docs = corpus(&rule);
        // The template's band key is hot: every document holds it.
        let template_key = rule.keys(&docs[0].1)[rule.layout().num_keys()];
        let holders = docs
            .iter()
            .filter(|(_, s)| rule.keys(s).contains(&template_key))
            .count();
        assert!(
            holders > 2 * DEFAULT_MAX_POSTINGS_PER_KEY,
            "{holders} holders"
        );
        for policy in [Policy::Replace, Policy::Reject] {
            let (want, want_live, most_live) = oracle(&rule, &docs, policy);
            // The hot key never has more live holders than the bound: a check that reads up
            // to `bound` live holders per key misses nothing.
            assert!(
                most_live < DEFAULT_MAX_POSTINGS_PER_KEY,
                "{policy:?}: {most_live}"
            );
            let decided = want.iter().filter(|w| !w.is_empty()).count();
            if policy == Policy::Replace {
                // Each version replaces its predecessor (through the template's band only).
                assert_eq!(decided, CHAINS * (VERSIONS - 1));
                assert_eq!(want_live.len(), CHAINS);
            } else {
                // A version is rejected while it resembles its chain's first version enough.
                assert!(decided > CHAINS * (VERSIONS - 1) / 2, "{decided} rejected");
            }
            // One commit at the end (every check against the pending table); commits that
            // keep each segment under the bound; commits that make segments larger than it.
            for commit_every in [usize::MAX, 100, 37, 300] {
                let label = format!("{policy:?}, a commit every {commit_every}");
                let t = ram_index(BlockLayout::default());
                let mut writer = unmerged_writer(&t.index, policy);
                for (i, (id, signature)) in docs.iter().enumerate() {
                    let d = doc!(t.id => id.as_str(), t.body => "text");
                    let outcome = writer
                        .add_document_with_signature(d, signature.clone())
                        .unwrap();
                    assert_eq!(named(&outcome), want[i], "{label}: {id}");
                    if (i + 1) % commit_every == 0 {
                        writer.commit().unwrap();
                    }
                }
                writer.commit().unwrap();
                let stored: BTreeMap<String, Option<String>> =
                    common::live_ids_and_groups(&t.index.lookups().unwrap());
                let stored: BTreeSet<String> = stored.into_keys().collect();
                assert_eq!(stored, want_live, "{label}");
            }
        }
    }
}
