//! One analysis per document: what `DedupWriter` stores and what tantivy indexes, checked
//! against independent oracles (`Signer::sign` of the joined text; a plain tantivy index of the
//! same documents analysed by the built-in tokenizer), for every policy, with two indexing
//! threads, several segments, deletes and a merge.

mod common;

use common::Rng;
use std::collections::{BTreeMap, HashMap};
use tantivy::indexer::NoMergePolicy;
use tantivy::postings::Postings;
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, STORED, STRING,
};
use tantivy::{doc, DocSet, Index, IndexWriter, TantivyDocument, Term, TERMINATED};
use tantivy_simhash::{
    AnalysisCounts, NearDupConfig, NearDupIndex, Outcome, Policy, Scheme, Signature,
    SimhashTokenizer, SIMHASH_TOKENIZER_NAME,
};

const EN: [&str; 24] = [
    "the",
    "report",
    "shows",
    "growth",
    "in",
    "every",
    "region",
    "cloud",
    "services",
    "demand",
    "permission",
    "granted",
    "free",
    "charge",
    "software",
    "copy",
    "modify",
    "merge",
    "rights",
    "quarterly",
    "hardware",
    "spring",
    "recovery",
    "sales",
];
const ZH: [&str; 12] = [
    "北京大学",
    "学习",
    "计算机",
    "科學",
    "我们",
    "軟體",
    "开发",
    "中文",
    "研究",
    "报告",
    "增长",
    "地区",
];

fn sentence(rng: &mut Rng, words: usize) -> String {
    let mut s = String::new();
    for i in 0..words {
        if rng.below(4) == 0 {
            s.push_str(ZH[rng.below(ZH.len() as u64) as usize]);
        } else {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(EN[rng.below(EN.len() as u64) as usize]);
        }
        if rng.below(9) == 0 {
            s.push_str(if rng.below(2) == 0 { ".\n" } else { ", " });
        }
    }
    s
}

struct Docs {
    /// id -> (title, body values)
    texts: Vec<(String, String, Vec<String>)>,
}

/// 400 documents: random, near-duplicates of earlier ones (a word changed), exact copies,
/// empty and multi-valued bodies, and one whose Han run continues from title into body.
fn documents() -> Docs {
    let mut rng = Rng(7);
    let mut texts: Vec<(String, String, Vec<String>)> = Vec::new();
    for i in 0..400 {
        let id = format!("d{i:03}");
        let (title, body) = match i % 10 {
            3 | 7 if i > 10 => {
                let (_, t, b) = texts[rng.below(i as u64) as usize].clone();
                let mut b = b;
                if i % 10 == 3 {
                    b.push(EN[rng.below(EN.len() as u64) as usize].to_string());
                }
                (t, b)
            }
            5 => (sentence(&mut rng, 4), Vec::new()),
            9 => (
                sentence(&mut rng, 5),
                vec![
                    sentence(&mut rng, 30),
                    String::new(),
                    sentence(&mut rng, 20),
                ],
            ),
            _ => (sentence(&mut rng, 6), vec![sentence(&mut rng, 60)]),
        };
        texts.push((id, title, body));
    }
    texts.push((
        "han-across".into(),
        "A title ending in 北京大".into(),
        vec!["学 starts the body of a unique document about nothing in particular".into()],
    ));
    Docs { texts }
}

fn schema(config: &NearDupConfig) -> (Schema, Field, Field, Field) {
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING | FAST | STORED);
    let analysed = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(SIMHASH_TOKENIZER_NAME)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let title = builder.add_text_field("title", analysed.clone());
    let body = builder.add_text_field("body", analysed);
    config.add_fields(&mut builder);
    (builder.build(), id, title, body)
}

fn tantivy_doc(
    id: Field,
    title: Field,
    body: Field,
    d: &(String, String, Vec<String>),
) -> TantivyDocument {
    let mut doc = doc!(id => d.0.clone(), title => d.1.clone());
    for b in &d.2 {
        doc.add_text(body, b);
    }
    doc
}

/// (id, field, term bytes) -> positions, over live documents.
type Postings_ = BTreeMap<(String, u32, Vec<u8>), Vec<u32>>;

fn postings(index: &Index, fields: &[Field]) -> Postings_ {
    let searcher = index.reader().unwrap().searcher();
    let mut out = BTreeMap::new();
    for seg in searcher.segment_readers() {
        let ids = seg.fast_fields().str("id").unwrap().unwrap();
        let alive = seg.alive_bitset();
        let id_of = |doc| {
            let ord = ids.term_ords(doc).next().unwrap();
            let mut s = String::new();
            ids.ord_to_str(ord, &mut s).unwrap();
            s
        };
        for &field in fields {
            let inv = seg.inverted_index(field).unwrap();
            let mut terms = inv.terms().stream().unwrap();
            while terms.advance() {
                let mut p = inv
                    .read_postings_from_terminfo(
                        terms.value(),
                        IndexRecordOption::WithFreqsAndPositions,
                    )
                    .unwrap();
                let mut doc = p.doc();
                while doc != TERMINATED {
                    if alive.is_none_or(|a| a.is_alive(doc)) {
                        let mut positions = Vec::new();
                        p.positions(&mut positions);
                        let key = (id_of(doc), field.field_id(), terms.key().to_vec());
                        assert!(out.insert(key, positions).is_none(), "one id per live doc");
                    }
                    doc = p.advance();
                }
            }
        }
    }
    out
}

fn stored_signatures(index: &NearDupIndex) -> HashMap<String, Signature> {
    let lookups = index.lookups().unwrap();
    let mut out = HashMap::new();
    for (ord, seg) in lookups.searcher().segment_readers().iter().enumerate() {
        for doc in seg.doc_ids_alive() {
            let address = tantivy::DocAddress::new(ord as u32, doc);
            let id = lookups.id_of(address).unwrap().expect("an id");
            let signature = lookups.signature_at(address).expect("a stored signature");
            out.insert(id, signature);
        }
    }
    out
}

#[test]
fn single_analysis_stores_the_signature_and_indexes_the_tokens_of_two_analyses() {
    let docs = documents();
    let scheme = Scheme::default();
    let config = NearDupConfig::new("id", ["title", "body"]);
    let rule = config.rule().unwrap();
    let joined = |d: &(String, String, Vec<String>)| {
        // The text `Signer::sign` sees: the values joined by line breaks, empty ones included
        // after the first non-empty one.
        let mut text = String::new();
        for v in std::iter::once(&d.1).chain(&d.2) {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(v);
        }
        text
    };
    let mut signer = rule.signer(&scheme);
    let expected: HashMap<&str, Signature> = docs
        .texts
        .iter()
        .map(|d| (d.0.as_str(), signer.sign(&joined(d))))
        .collect();

    for policy in [Policy::Off, Policy::Reject, Policy::Tag, Policy::Replace] {
        let (schema, id, title, body) = schema(&config);
        let index =
            NearDupIndex::create(Index::create_in_ram(schema.clone()), config.clone()).unwrap();
        assert_eq!(index.replayed_fields(), [title, body]);
        let mut w = index
            .writer_with_num_threads(2, 40_000_000, policy)
            .unwrap();
        w.index_writer().set_merge_policy(Box::new(NoMergePolicy));
        let mut added_values = 0u64;
        let mut deleted = Vec::new();
        for (chunk_no, chunk) in docs.texts.chunks(50).enumerate() {
            let batch: Vec<TantivyDocument> = chunk
                .iter()
                .map(|d| tantivy_doc(id, title, body, d))
                .collect();
            // Alternate the one-by-one and the batch paths.
            let outcomes = if chunk_no % 2 == 0 {
                batch
                    .into_iter()
                    .map(|d| w.add_document(d).unwrap())
                    .collect()
            } else {
                w.add_documents(batch).unwrap()
            };
            for (d, o) in chunk.iter().zip(&outcomes) {
                // Under `Off` tantivy's indexing thread signs the document (checked below
                // against the stored signatures); the other policies sign it first.
                let reported = match policy {
                    Policy::Off => {
                        (o == &Outcome::Queued).then_some(expected[d.0.as_str()].fingerprint)
                    }
                    _ => o.fingerprint(),
                };
                assert_eq!(
                    reported,
                    Some(expected[d.0.as_str()].fingerprint),
                    "{policy:?} {}: {o:?}",
                    d.0
                );
                if o.is_added() {
                    added_values += 1 + d.2.len() as u64;
                }
            }
            // Delete one document per chunk by id.
            let victim = &chunk[chunk.len() / 2].0;
            w.delete_term(Term::from_field_text(id, victim));
            deleted.push(victim.clone());
            w.commit().unwrap();
        }
        assert!(index.index().searchable_segment_ids().unwrap().len() > 1);
        let counts = index
            .analysis_counts()
            .expect("this handle registered the tokenizer");
        // Every value of every added document is indexed from the writer's tokens, none is
        // analysed again. This fails if tantivy stops reading a document's values before
        // tokenizing them on the same thread.
        assert_eq!(
            counts,
            AnalysisCounts {
                replayed: added_values,
                analysed: 0,
            },
            "{policy:?}"
        );
        let segs = index.index().searchable_segment_ids().unwrap();
        w.index_writer_mut().merge(&segs).wait().unwrap();
        w.commit().unwrap();
        w.wait_merging_threads().unwrap();

        // Oracle 1: stored signatures equal `Signer::sign` of the joined text.
        let stored = stored_signatures(&index);
        assert!(stored.len() > 100, "{policy:?}: {} live", stored.len());
        for (id_text, sig) in &stored {
            assert_eq!(sig, &expected[id_text.as_str()], "{policy:?} {id_text}");
            assert!(!deleted.contains(id_text));
        }

        // Oracle 2: the postings equal those of a plain tantivy index of the same live
        // documents, analysed by the built-in tokenizer (no replay).
        let plain = Index::create_in_ram(schema.clone());
        plain.tokenizers().register(
            SIMHASH_TOKENIZER_NAME,
            tantivy::tokenizer::TextAnalyzer::from(SimhashTokenizer::default()),
        );
        let mut pw: IndexWriter = plain.writer_with_num_threads(1, 20_000_000).unwrap();
        for d in docs.texts.iter().filter(|d| stored.contains_key(&d.0)) {
            pw.add_document(tantivy_doc(id, title, body, d)).unwrap();
        }
        pw.commit().unwrap();
        let ours = postings(index.index(), &[title, body]);
        let theirs = postings(&plain, &[title, body]);
        assert!(ours.len() > 1000);
        assert_eq!(ours, theirs, "{policy:?}");
    }
}

/// Under `Off` tantivy's indexing thread signs each document as it cuts its text with the
/// tokenizer registered under the scheme's name. When that tokenizer is the user's own, it
/// never sees the signing session: the segment component signs the joined text itself. Oracle:
/// `Signer::sign` of the joined text, for every stored document.
#[test]
fn off_signs_the_joined_text_when_the_users_tokenizer_cuts_the_values() {
    let docs = documents();
    let scheme = Scheme::default();
    let config = NearDupConfig::new("id", ["title", "body"]);
    let mut signer = config.rule().unwrap().signer(&scheme);
    let (schema, id, title, body) = schema(&config);
    let index = Index::create_in_ram(schema);
    index.tokenizers().register(
        SIMHASH_TOKENIZER_NAME,
        tantivy::tokenizer::TextAnalyzer::from(tantivy::tokenizer::SimpleTokenizer::default()),
    );
    let index = NearDupIndex::create(index, config).unwrap();
    assert!(
        index.analysis_counts().is_none(),
        "the user's tokenizer stays"
    );
    let mut w = index
        .writer_with_num_threads(2, 40_000_000, Policy::Off)
        .unwrap();
    let sample = &docs.texts[..120];
    for d in sample {
        assert_eq!(
            w.add_document(tantivy_doc(id, title, body, d)).unwrap(),
            Outcome::Queued
        );
    }
    w.commit().unwrap();
    let stored = stored_signatures(&index);
    assert_eq!(stored.len(), sample.len());
    for d in sample {
        let mut joined = String::new();
        for v in std::iter::once(&d.1).chain(&d.2) {
            if !joined.is_empty() {
                joined.push('\n');
            }
            joined.push_str(v);
        }
        assert_eq!(stored[d.0.as_str()], signer.sign(&joined), "{}", d.0);
    }
}
