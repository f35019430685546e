//! Lookups by the match rule through the index (DedupWriter, several commits, deletes) find
//! exactly what a brute-force scan with `MatchRule::matches` finds over the live documents.

mod common;

use common::{ram_index, Rng};
use std::collections::{BTreeMap, BTreeSet};
use tantivy::schema::Value;
use tantivy::{Directory, TantivyDocument, Term};
use tantivy_simhash::{BlockLayout, Policy, Signature};

const WORDS: [&str; 24] = [
    "index", "segment", "term", "posting", "query", "score", "field", "token", "merge", "commit",
    "reader", "writer", "page", "site", "menu", "footer", "copy", "mirror", "软件", "开发", "过程",
    "需求", "分析", "设计",
];

/// Base texts and edited copies (a few words changed), so both branches of the rule fire.
fn texts(seed: u64, n: usize) -> Vec<String> {
    let mut rng = Rng(seed);
    let mut out: Vec<Vec<&str>> = Vec::new();
    for _ in 0..n {
        if !out.is_empty() && rng.below(2) == 0 {
            let mut d = out[rng.below(out.len() as u64) as usize].clone();
            for _ in 0..rng.below(d.len() as u64 / 6 + 1) {
                let at = rng.below(d.len() as u64) as usize;
                d[at] = WORDS[rng.below(WORDS.len() as u64) as usize];
            }
            out.push(d);
        } else {
            let len = 5 + rng.below(120) as usize;
            out.push(
                (0..len)
                    .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize])
                    .collect(),
            );
        }
    }
    out.into_iter().map(|d| d.join(" ")).collect()
}

#[test]
fn rule_lookup_equals_brute_force_across_segments_and_deletes() {
    let t = ram_index(BlockLayout::default());
    let rule = t.index.rule().clone();
    let mut signer = rule.signer(t.index.scheme());
    let texts = texts(11, 240);
    let sigs: Vec<Signature> = texts.iter().map(|x| signer.sign(x)).collect();
    let mut writer = t.index.writer(30_000_000, Policy::Off).unwrap();
    // Several segments, deterministically: no background merges.
    writer
        .index_writer()
        .set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
    for (i, text) in texts.iter().enumerate() {
        let mut doc = TantivyDocument::default();
        doc.add_text(t.id, format!("d{i}"));
        doc.add_text(t.body, text);
        writer.add_document(doc).unwrap();
        if i % 60 == 59 {
            writer.commit().unwrap();
        }
    }
    let deleted: BTreeSet<usize> = (0..texts.len()).filter(|i| i % 9 == 4).collect();
    for &i in &deleted {
        writer.delete_term(Term::from_field_text(t.id, &format!("d{i}")));
    }
    writer.commit().unwrap();
    let searcher = t.index.lookups().unwrap();
    assert!(searcher.searcher().segment_readers().len() >= 2);
    let id_of = |a: tantivy::DocAddress| -> usize {
        let doc: TantivyDocument = searcher.searcher().doc(a).unwrap();
        doc.get_first(t.id).and_then(|v| v.as_str()).unwrap()[1..]
            .parse()
            .unwrap()
    };
    let (mut simhash, mut resemblance) = (0, 0);
    for (q, query) in sigs.iter().enumerate() {
        let oracle: BTreeMap<usize, _> = (0..sigs.len())
            .filter(|i| !deleted.contains(i))
            .filter_map(|i| rule.matches(query, &sigs[i]).map(|e| (i, e)))
            .collect();
        let found = searcher.lookup_signature(query).unwrap();
        let got: BTreeMap<usize, _> = found.iter().map(|&(a, e)| (id_of(a), e)).collect();
        assert_eq!(got.len(), found.len(), "query {q}: a document twice");
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            oracle.keys().collect::<Vec<_>>(),
            "query {q}"
        );
        for (i, e) in &got {
            assert_eq!(rule.matches(query, &sigs[*i]), Some(*e));
            match e {
                tantivy_simhash::Evidence::Simhash { .. } => simhash += 1,
                tantivy_simhash::Evidence::Resemblance { .. } => resemblance += 1,
            }
        }
        // The text path signs the same way.
        let by_text = searcher.lookup_signature(&t.index.sign(&texts[q])).unwrap();
        assert_eq!(by_text, found);
    }
    assert!(simhash > 0 && resemblance > 0, "{simhash} / {resemblance}");
}

/// An index whose record says it was written by the previous version (no signatures) is refused
/// with a message that says to rebuild it.
#[test]
fn an_index_of_the_previous_format_is_refused_with_a_rebuild_message() {
    let t = ram_index(BlockLayout::default());
    let tantivy_index = t.index.index().clone();
    let dir = tantivy_index.directory();
    // The record file's name, as the schema module documents it.
    let path = std::path::Path::new(".tantivy-simhash.json");
    let record = String::from_utf8(dir.atomic_read(path).unwrap()).unwrap();
    assert!(record.contains("tantivy-simhash/2"), "{record}");
    let old = record.replace("tantivy-simhash/2", "tantivy-simhash/1");
    dir.atomic_write(path, old.as_bytes()).unwrap();
    let err = tantivy_simhash::NearDupIndex::open_recorded(tantivy_index)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("tantivy-simhash/1") && err.contains("rebuild"),
        "{err}"
    );
}
