use super::staged::{POOLED_BUFFERS, POOLED_BYTES};
use super::tokenizer::ReplayTokenizer;
use super::*;
use crate::fingerprint::{HanSegmentation, Normalization, SimhashTokenizer};
use crate::replay::document_text;
use crate::signature::MatchRule;
use proptest::prelude::*;
use tantivy::schema::Document;
use tantivy::schema::{Schema, TEXT};
use tantivy::tokenizer::{TokenStream, Tokenizer};

/// Every token of `text` as the built-in tokenizer gives it: (text, from, to, position).
fn analysed(han: HanSegmentation, text: &str) -> Vec<(String, usize, usize, usize)> {
    let mut tokenizer = SimhashTokenizer::new(Normalization::default(), han);
    let mut stream = tokenizer.token_stream(text);
    let mut out = Vec::new();
    while let Some(t) = stream.next() {
        out.push((t.text.clone(), t.offset_from, t.offset_to, t.position));
    }
    out
}

fn replayed(tokenizer: &mut ReplayTokenizer, text: &str) -> Vec<(String, usize, usize, usize)> {
    let mut stream = tokenizer.token_stream(text);
    let mut out = Vec::new();
    while let Some(t) = stream.next() {
        out.push((t.text.clone(), t.offset_from, t.offset_to, t.position));
    }
    out
}

fn two_field_schema() -> (Field, Field) {
    let mut builder = Schema::builder();
    let title = builder.add_text_field("title", TEXT);
    let body = builder.add_text_field("body", TEXT);
    builder.build();
    (title, body)
}

/// Text from pieces that stress the tokenizer's context: Han (traditional and simplified, runs
/// wrapped across lines), Latin words, entities, combining marks, full-width letters, long words.
fn text_strategy() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "北京大学",
        "學習",
        "计算机",
        "科學",
        "我们",
        " ",
        "\n",
        "\r\n ",
        "word",
        "Ｈello",
        "e\u{301}",
        "&amp;",
        "&#39;",
        "amp;",
        "&",
        ";",
        "#",
        "2024",
        ",",
        "ß",
        "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    ]);
    prop::collection::vec(piece, 0..24).prop_map(|p| p.concat())
}

fn han_scheme(han: HanSegmentation) -> crate::Scheme {
    crate::Scheme::builder()
        .tokenization(crate::fingerprint::Tokenization::Builtin { han })
        .build()
        .unwrap()
}

fn staged_check(han: HanSegmentation, values: &[(bool, String)]) {
    let scheme = han_scheme(han);
    let mut signer = MatchRule::default().signer(&scheme);
    staged_check_with(&mut signer, han, values);
}

/// Stages `values` with `signer` (its pooled buffers, if any) and checks that each value
/// replays exactly as analysed alone; the staged tokens are dropped on return.
fn staged_check_with(signer: &mut Signer, han: HanSegmentation, values: &[(bool, String)]) {
    let scheme = han_scheme(han);
    let (title, body) = two_field_schema();
    let mut doc = TantivyDocument::new();
    for (in_title, v) in values {
        doc.add_text(if *in_title { title } else { body }, v);
    }
    let fields = [title, body];
    let analysis = analysis_id(&scheme);
    let (sig, staged) = sign_and_stage(signer, &Arc::default(), analysis, &doc, &fields, &fields);
    // The signature is the one of the joined text: exactly what `Signer::sign` gives.
    assert_eq!(sig, signer.sign(&document_text(&doc, &fields)));
    let (mut tokenizer, counters) = ReplayTokenizer::new(&scheme);
    let doc = AnalyzedDocument::with_tokens(doc, staged);
    // As tantivy does: read the values, then tokenize each.
    let _ = doc.iter_fields_and_values().count();
    for (_, v) in values {
        assert_eq!(replayed(&mut tokenizer, v), analysed(han, v), "value {v:?}");
    }
    // Every value is replayed: none is analysed again.
    assert_eq!(
        counters.get(),
        AnalysisCounts {
            replayed: values.len() as u64,
            analysed: 0
        }
    );
}

/// The tokens the writer stages for `doc` under the default rule and `scheme`: `fields` signed,
/// the values of `replay` staged.
fn stage_default(
    scheme: &crate::Scheme,
    doc: &TantivyDocument,
    fields: &[Field],
    replay: &[Field],
) -> Option<Arc<StagedTokens>> {
    let mut signer = MatchRule::default().signer(scheme);
    let (_, staged) = sign_and_stage(
        &mut signer,
        &Arc::default(),
        analysis_id(scheme),
        doc,
        fields,
        replay,
    );
    staged
}

/// Text for signing on the indexing thread: [`text_strategy`]'s pieces and site chrome (link
/// lists and a site name, which the signature drops by line), so both paths of the signer run.
fn chrome_text_strategy() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        text_strategy(),
        Just("Home | News | About | Contact".to_string()),
        Just("Page title - Example Site".to_string()),
        Just("Example Site".to_string()),
    ];
    prop::collection::vec(line, 0..4).prop_map(|lines| lines.join("\n"))
}

/// Signs the document of `values` as tantivy's indexing thread does under `Policy::Off`:
/// reads its values, cuts each fingerprinted value in field order with the replaying
/// tokenizer (`cut` false: a value tantivy does not cut with it), then the component takes the
/// signature. Oracles: `Signer::sign` of the joined text, and the built-in tokenizer on each
/// value alone. Returns whether the document was signed value by value (no token log).
fn deferred_check(
    tokenizer: &mut ReplayTokenizer,
    han: HanSegmentation,
    values: &[(bool, String)],
    cut: impl Fn(usize) -> bool,
) -> bool {
    let scheme = han_scheme(han);
    let rule = MatchRule::default();
    let (title, body) = two_field_schema();
    let mut doc = TantivyDocument::new();
    for (in_title, v) in values {
        doc.add_text(if *in_title { title } else { body }, v);
    }
    let fields = [title, body];
    let expected = rule.signer(&scheme).sign(&document_text(&doc, &fields));
    let signing = DeferredSigning::new(
        &scheme,
        &rule,
        &Arc::new(fields.to_vec()),
        &fields,
        &Arc::default(),
    )
    .expect("both fields are cut by the scheme's tokenizer");
    let doc = AnalyzedDocument::signed_when_indexed(doc, &signing);
    // As tantivy does: read the values (more than once), then cut them in field order.
    let _ = doc.iter_fields_and_values().count();
    let _ = doc.iter_fields_and_values().count();
    // Signed value by value, or (an empty document) at once, but not from a token log.
    let by_value = CURRENT.with(|c| c.borrow().staged.is_none());
    let in_field_order = values
        .iter()
        .filter(|v| v.0)
        .chain(values.iter().filter(|v| !v.0));
    for (i, (_, v)) in in_field_order.enumerate() {
        if cut(i) {
            assert_eq!(replayed(tokenizer, v), analysed(han, v), "value {v:?}");
        }
    }
    assert_eq!(take_signature(), Some(expected), "{values:?}");
    // Taken once: the next document starts afresh.
    assert_eq!(take_signature(), None);
    by_value
}

#[test]
fn documents_signed_on_the_indexing_thread_equal_the_joined_texts_signature() {
    let han = HanSegmentation::Jieba;
    let (mut tokenizer, counters) = ReplayTokenizer::new(&han_scheme(han));
    let all = |_| true;
    let plain = [
        (true, "A title".to_string()),
        (false, "The body, on two\nlines".to_string()),
        (false, String::new()),
        (false, "a second body value".to_string()),
    ];
    assert!(deferred_check(&mut tokenizer, han, &plain, all));
    let chrome = [
        (true, "Page title - Example Site".to_string()),
        (
            false,
            "Home | News | About | Contact\nThe text itself.\nExample Site".to_string(),
        ),
    ];
    assert!(deferred_check(&mut tokenizer, han, &chrome, all));
    // A Han run across the joining line break: signed at once and replayed instead.
    let across = [(true, "北京大".to_string()), (false, " 学的".to_string())];
    assert!(!deferred_check(&mut tokenizer, han, &across, all));
    assert!(deferred_check(&mut tokenizer, han, &[], all));
    // Every value was cut once, none analysed twice.
    assert_eq!(
        counters.get(),
        AnalysisCounts {
            replayed: 8,
            analysed: 0
        }
    );
    // A value tantivy does not cut with this tokenizer: the joined text is signed instead.
    assert!(deferred_check(&mut tokenizer, han, &plain, |i| i != 1));
}

#[test]
fn han_runs_cross_only_between_han_ends() {
    let crosses = |values: &[&str]| {
        let mut text = String::new();
        let mut ranges = Vec::new();
        for v in values {
            if !ranges.is_empty() {
                text.push('\n');
            }
            ranges.push(text.len()..text.len() + v.len());
            text.push_str(v);
        }
        signing::han_run_crosses(&text, &ranges)
    };
    assert!(crosses(&["北京", "大学"]));
    assert!(crosses(&["北京 ", "  ", "\t大学"]));
    assert!(!crosses(&["北京.", "大学"]));
    assert!(!crosses(&["北京", "word 大学"]));
    assert!(!crosses(&["word", "大学"]));
    assert!(!crosses(&["北京"]));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Oracle: the built-in tokenizer on each value alone. Whatever the values, a replayed
    /// value gives exactly the tokens (text, offsets, positions) analysis gives.
    #[test]
    fn replayed_tokens_equal_analysis_of_each_value(
        values in prop::collection::vec((any::<bool>(), text_strategy()), 0..5),
        chars in any::<bool>(),
    ) {
        let han = if chars { HanSegmentation::Chars } else { HanSegmentation::Jieba };
        staged_check(han, &values);
    }

    /// Oracle: `Signer::sign` of the joined text. Documents signed on one indexing thread one
    /// after another (its signer and buffers reused) each get exactly the joined text's
    /// signature, and tantivy indexes each value's own tokens, whichever path signs them.
    #[test]
    fn signing_on_the_indexing_thread_gives_the_joined_texts_signature(
        documents in prop::collection::vec(
            prop::collection::vec((any::<bool>(), chrome_text_strategy()), 0..4), 1..5),
        chars in any::<bool>(),
    ) {
        let han = if chars { HanSegmentation::Chars } else { HanSegmentation::Jieba };
        let (mut tokenizer, _) = ReplayTokenizer::new(&han_scheme(han));
        for values in &documents {
            deferred_check(&mut tokenizer, han, values, |_| true);
        }
    }

    /// One signer staging document after document reuses the buffers tantivy dropped (the
    /// pool), and every document still replays exactly as analysed: no token, text or value
    /// of an earlier document leaks into a later one.
    #[test]
    fn reused_buffers_replay_every_document_exactly(
        documents in prop::collection::vec(
            prop::collection::vec((any::<bool>(), text_strategy()), 1..4), 1..6),
        chars in any::<bool>(),
    ) {
        let han = if chars { HanSegmentation::Chars } else { HanSegmentation::Jieba };
        let mut signer = MatchRule::default().signer(&han_scheme(han));
        for values in &documents {
            staged_check_with(&mut signer, han, values);
        }
    }
}

#[test]
fn dropped_staged_tokens_return_their_buffers_to_the_signer() {
    let scheme = crate::Scheme::default();
    let (title, body) = two_field_schema();
    let mut doc = TantivyDocument::new();
    doc.add_text(title, "A title");
    doc.add_text(body, "and a body long enough to need room for its tokens");
    let fields = [title, body];
    let mut signer = MatchRule::default().signer(&scheme);
    let analysis = analysis_id(&scheme);
    let staging = Arc::new(StagingPool::default());
    let (_, staged) = sign_and_stage(&mut signer, &staging, analysis, &doc, &fields, &fields);
    assert!(staged.is_some());
    assert_eq!(staging.0.lock().unwrap().len(), 0);
    drop(staged);
    let pooled = staging.0.lock().unwrap().pop().expect("buffers pooled");
    assert!(pooled.text.is_empty() && pooled.tokens.is_empty() && pooled.values.is_empty());
    assert!(pooled.text.capacity() > 0 && pooled.tokens.capacity() > 0);
    // Full pools and oversized buffers are not kept.
    let pool = StagingPool::default();
    for _ in 0..POOLED_BUFFERS + 3 {
        pool.give(StagingBuffers::default());
    }
    assert_eq!(pool.0.lock().unwrap().len(), POOLED_BUFFERS);
    let big = StagingPool::default();
    big.give(StagingBuffers {
        text: String::with_capacity(POOLED_BYTES + 1),
        ..StagingBuffers::default()
    });
    assert!(big.0.lock().unwrap().is_empty());
}

#[test]
fn values_without_han_at_their_ends_are_all_replayed() {
    let scheme = crate::Scheme::default();
    let (title, body) = two_field_schema();
    let mut doc = TantivyDocument::new();
    doc.add_text(title, "A title, 北京 in it.");
    doc.add_text(body, "First body value.");
    doc.add_text(body, "");
    doc.add_text(body, "Second &amp; last");
    let fields = [title, body];
    let staged = stage_default(&scheme, &doc, &fields, &fields);
    let staged = staged.expect("tokens staged");
    assert_eq!(staged.values.len(), 4);
    // Only the body is indexed with the replaying analyzer: only its values are staged.
    let staged = stage_default(&scheme, &doc, &fields, &[body]);
    assert_eq!(staged.expect("body staged").values.len(), 3);
    // Nothing replayable: nothing staged.
    let staged = stage_default(&scheme, &doc, &fields, &[]);
    assert!(staged.is_none());
}

#[test]
fn a_han_run_across_values_is_cut_again_within_each() {
    let scheme = crate::Scheme::default();
    let (title, body) = two_field_schema();
    let mut doc = TantivyDocument::new();
    // Joined, "北京大\n学" is one Han run (a wrapped line): jieba cuts 北京大学; alone, the
    // title ends with its own run and the body starts with its own.
    doc.add_text(title, "Title 北京大");
    doc.add_text(body, "学 body text");
    doc.add_text(body, "plain");
    let fields = [title, body];
    let staged = stage_default(&scheme, &doc, &fields, &fields);
    let staged = staged.expect("staged");
    assert_eq!(staged.values.len(), 3);
    let texts = |v: usize| -> Vec<&str> {
        staged
            .value_tokens(v)
            .into_iter()
            .map(|(text, _, _)| text)
            .collect()
    };
    assert_eq!(texts(0), ["title", "北京", "大"]);
    assert_eq!(texts(1), ["学", "body", "text"]);
    for (in_title, values) in [
        (true, vec!["Title 北京大", "学 body text", "plain"]),
        // One Han run from end to end, continued on both sides.
        (false, vec!["我们", " 北京 \n 大学 ", "学习，word 研究"]),
        (false, vec!["研究", "", "  ", "大学"]),
    ] {
        let values: Vec<(bool, String)> = values
            .iter()
            .enumerate()
            .map(|(i, v)| (in_title && i == 0, v.to_string()))
            .collect();
        staged_check(HanSegmentation::Jieba, &values);
        staged_check(HanSegmentation::Chars, &values);
    }
}

#[test]
fn tokens_are_replayed_only_for_the_same_text_and_analysis() {
    let scheme = crate::Scheme::default();
    let (title, body) = two_field_schema();
    let mut doc = TantivyDocument::new();
    doc.add_text(body, "some body text");
    let fields = [title, body];
    let staged = stage_default(&scheme, &doc, &fields, &fields);
    let doc = AnalyzedDocument::with_tokens(doc, staged);
    let _ = doc.iter_fields_and_values().count();

    let (mut same, counters) = ReplayTokenizer::new(&scheme);
    replayed(&mut same, "some body text");
    // Another text: analysed.
    assert_eq!(
        replayed(&mut same, "other text"),
        analysed(HanSegmentation::Jieba, "other text")
    );
    assert_eq!(
        counters.get(),
        AnalysisCounts {
            replayed: 1,
            analysed: 1
        }
    );
    // Another scheme's tokenizer never replays this scheme's tokens, even for an equal text.
    let chars = crate::Scheme::builder()
        .tokenization(crate::fingerprint::Tokenization::Builtin {
            han: HanSegmentation::Chars,
        })
        .build()
        .unwrap();
    let (mut other, other_counters) = ReplayTokenizer::new(&chars);
    replayed(&mut other, "some body text");
    assert_eq!(other_counters.get().replayed, 0);
    // A plain document read on this thread clears the staged tokens.
    let plain = AnalyzedDocument::from(doc.into_document());
    let _ = plain.iter_fields_and_values().count();
    replayed(&mut same, "some body text");
    assert_eq!(counters.get().replayed, 1);
}
