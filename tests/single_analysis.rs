//! DedupWriter analyses text once: fields indexed with the scheme's tokenizer receive the
//! tokens the fingerprint was made from. Oracle: the same documents indexed by plain tantivy
//! (which runs the registered analyzer itself) give the same terms, documents, positions and
//! stored values, and the same fingerprints as `Scheme::fingerprint` of the joined text.

use proptest::prelude::*;
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, FAST, STORED, STRING,
};
use tantivy::{Index, IndexWriter, TantivyDocument, Term};
use tantivy_simhash::{
    register_tokenizer, NearDupConfig, NearDupIndex, Policy, Scheme, SIMHASH_TOKENIZER_NAME,
};

struct Fields {
    id: Field,
    title: Field,
    body: Field,
    tags: Field,
}

fn schema(config: &NearDupConfig) -> (Schema, Fields) {
    let mut b = Schema::builder();
    let by_scheme = TextOptions::default()
        .set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(SIMHASH_TOKENIZER_NAME)
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        )
        .set_stored();
    let id = b.add_text_field("id", STRING | FAST | STORED);
    let title = b.add_text_field("title", by_scheme.clone());
    let body = b.add_text_field("body", by_scheme);
    // Indexed with tantivy's default tokenizer: not pre-tokenized, analysed by tantivy.
    let tags = b.add_text_field("tags", tantivy::schema::TEXT | STORED);
    config.add_fields(&mut b);
    (
        b.build(),
        Fields {
            id,
            title,
            body,
            tags,
        },
    )
}

type Postings = Vec<(Vec<u8>, Vec<(u32, Vec<u32>)>)>;

/// Every term of `field` with its documents and positions (one segment).
fn postings(index: &Index, field: Field) -> Postings {
    let reader = index.reader().unwrap();
    let searcher = reader.searcher();
    assert_eq!(searcher.segment_readers().len(), 1);
    let inverted = searcher.segment_reader(0).inverted_index(field).unwrap();
    let mut out = Vec::new();
    let mut terms = inverted.terms().stream().unwrap();
    while terms.advance() {
        let term = Term::from_field_bytes(field, terms.key());
        let mut list = Vec::new();
        if let Some(mut p) = inverted
            .read_postings(&term, IndexRecordOption::WithFreqsAndPositions)
            .unwrap()
        {
            use tantivy::DocSet;
            while p.doc() != tantivy::TERMINATED {
                let mut positions = Vec::new();
                tantivy::postings::Postings::positions(&mut p, &mut positions);
                list.push((p.doc(), positions));
                p.advance();
            }
        }
        out.push((terms.key().to_vec(), list));
    }
    out
}

fn stored(index: &Index, fields: &Fields) -> Vec<Vec<String>> {
    let reader = index.reader().unwrap();
    let searcher = reader.searcher();
    let mut out = Vec::new();
    for doc in 0..searcher.segment_reader(0).max_doc() {
        let d: TantivyDocument = searcher.doc(tantivy::DocAddress::new(0, doc)).unwrap();
        let mut values = Vec::new();
        for f in [fields.id, fields.title, fields.body, fields.tags] {
            for v in d.get_all(f) {
                values.push(v.as_str().unwrap_or("<not a string>").to_string());
            }
        }
        out.push(values);
    }
    out
}

/// (title values, body values, tags) of one document.
type Doc = (Vec<String>, Vec<String>, String);

fn check(docs: &[Doc], batch: bool) {
    let config = NearDupConfig::new("id", ["title", "body"]);
    let (schema, f) = schema(&config);
    let make = |n: usize, d: &Doc| {
        let mut doc = TantivyDocument::new();
        doc.add_text(f.tags, &d.2); // first, so field order differs from config order
        doc.add_text(f.id, format!("d{n}"));
        for t in &d.0 {
            doc.add_text(f.title, t);
        }
        for b in &d.1 {
            doc.add_text(f.body, b);
        }
        doc
    };

    let ours = NearDupIndex::create(Index::create_in_ram(schema.clone()), config.clone()).unwrap();
    let mut writer = ours
        .writer_with_num_threads(1, 15_000_000, Policy::Off)
        .unwrap();
    let docs_in: Vec<TantivyDocument> = docs.iter().enumerate().map(|(n, d)| make(n, d)).collect();
    let outcomes = if batch {
        writer.add_documents(docs_in).unwrap()
    } else {
        docs_in
            .into_iter()
            .map(|d| writer.add_document(d).unwrap())
            .collect()
    };
    writer.commit().unwrap();

    // The oracle: plain tantivy analyses every value itself.
    let plain = Index::create_in_ram(schema);
    register_tokenizer(&plain, &Scheme::default());
    let mut plain_writer: IndexWriter = plain.writer_with_num_threads(1, 15_000_000).unwrap();
    let scheme = Scheme::default();
    for ((n, d), outcome) in docs.iter().enumerate().zip(&outcomes) {
        let joined: Vec<&str> = d.0.iter().chain(&d.1).map(String::as_str).collect();
        let fp = scheme.fingerprint(&joined.join("\n"));
        assert_eq!(outcome.fingerprint(), fp, "document {n}");
        let mut doc = make(n, d);
        ours.add_fingerprint_to(&mut doc, fp);
        plain_writer.add_document(doc).unwrap();
    }
    plain_writer.commit().unwrap();

    for field in [f.title, f.body, f.tags] {
        assert_eq!(postings(ours.index(), field), postings(&plain, field));
    }
    assert_eq!(stored(ours.index(), &f), stored(&plain, &f));
}

fn doc(title: &[&str], body: &[&str], tags: &str) -> Doc {
    (
        title.iter().map(|s| s.to_string()).collect(),
        body.iter().map(|s| s.to_string()).collect(),
        tags.to_string(),
    )
}

#[test]
fn fixed_documents_index_as_plain_tantivy_does() {
    let docs = vec![
        doc(
            &["Release notes"],
            &["The quick brown fox jumps over the lazy dog, twice: fox fox."],
            "a b",
        ),
        doc(
            &["软件开发"],
            &["软件开发的过程包括需求分析、设计、编码、测试和维护。"],
            "zh",
        ),
        // A Han run continues from the title into the body: the writer falls back to plain values.
        doc(&["需求分析"], &["设计编码测试和维护的方法与工具"], "joint"),
        doc(
            &["Mixed 中文 text"],
            &["English then 中文然后 English again &amp; entities &#39;"],
            "mix",
        ),
        doc(&[], &["only a body", "and a second body value"], ""),
        doc(&["two", "titles"], &[], "t"),
        doc(&[""], &["   "], "empty values"),
        doc(&["Le café crème"], &["déjà vu à Genève ÉTÉ"], "accents"),
        doc(
            &["x"],
            &[&"a".repeat(200)],
            "a long word is split into pieces",
        ),
    ];
    check(&docs, false);
    check(&docs, true);
}

fn text() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "the", "Quick", "fox", "软件", "开发", "测试", "中文", " ", "\n", ", ", "。", "&amp;",
        "x1", "ÉTÉ", "ﬁ", "  ", "-",
    ]);
    prop::collection::vec(pieces, 0..24).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn generated_documents_index_as_plain_tantivy_does(
        docs in prop::collection::vec(
            (prop::collection::vec(text(), 0..3), prop::collection::vec(text(), 0..3), text()),
            1..6,
        ),
        batch in any::<bool>(),
    ) {
        check(&docs, batch);
    }
}
