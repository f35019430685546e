//! Bad and unusual input never panics and gives sane results.
//!
//! Every text goes through [`check`]: fingerprinting twice (a fresh and a reused fingerprinter)
//! gives the same result, the analyzer's tokens have valid offsets (character boundaries,
//! `offset_from < offset_to <= len`), and the details agree with the analyzer and the
//! minimum-features guard. Where an oracle exists (formatting-only and script-only changes),
//! the tests assert the fingerprints agree.

// The unit tests' generator (xorshift64), so a test case is a seed here too.
#[path = "../src/test_rng.rs"]
mod test_rng;

use proptest::prelude::*;
use tantivy::tokenizer::{Token, TokenStream};
use tantivy_simhash::{Fingerprint, FingerprintDetails, FingerprintKind, Scheme};
use test_rng::Rng;

fn tokens(scheme: &Scheme, text: &str) -> Vec<Token> {
    let mut analyzer = scheme.text_analyzer();
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while stream.advance() {
        out.push(stream.token().clone());
    }
    out
}

fn words(scheme: &Scheme, text: &str) -> Vec<String> {
    tokens(scheme, text).into_iter().map(|t| t.text).collect()
}

/// Panics with a useful message when a token's offsets do not fit `text`.
fn check_offsets(text: &str, tokens: &[Token]) {
    let mut last_position = 0;
    for (n, t) in tokens.iter().enumerate() {
        let at = || format!("token {n} {:?} of a text of {} bytes", t, text.len());
        assert!(!t.text.is_empty(), "empty {}", at());
        assert!(
            t.offset_from < t.offset_to && t.offset_to <= text.len(),
            "bad offsets: {}",
            at()
        );
        assert!(
            text.is_char_boundary(t.offset_from) && text.is_char_boundary(t.offset_to),
            "offsets inside a character: {}",
            at()
        );
        assert!(t.position >= last_position, "position goes back: {}", at());
        last_position = t.position;
    }
}

/// Fingerprints `text` twice, checks the tokens and the details, and returns the details.
fn check(scheme: &Scheme, text: &str) -> FingerprintDetails {
    let fresh = scheme.fingerprint_details(text);
    let mut reused = scheme.fingerprinter();
    reused.fingerprint("warm up with some other text 预热 文本");
    assert_eq!(reused.fingerprint_details(text), fresh, "not deterministic");
    let toks = tokens(scheme, text);
    check_offsets(text, &toks);
    assert_eq!(
        fresh.tokens,
        toks.len(),
        "details disagree with the analyzer"
    );
    assert_eq!(
        fresh.kind == FingerprintKind::Simhash,
        fresh.features >= scheme.min_features(),
        "kind {:?} with {} features (min {})",
        fresh.kind,
        fresh.features,
        scheme.min_features()
    );
    if fresh.tokens == 0 {
        assert_eq!(fresh.features, 0);
    }
    fresh
}

fn distance(scheme: &Scheme, a: &str, b: &str) -> u32 {
    scheme.fingerprint(a).distance(scheme.fingerprint(b))
}

/// A pseudo-word of 2 to 5 syllables: a large vocabulary, so long texts have many features.
fn push_word(rng: &mut Rng, out: &mut String) {
    const ONSETS: &[&str] = &[
        "b", "c", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t",
    ];
    const VOWELS: &[&str] = &["a", "e", "i", "o", "u", "ea", "ou"];
    for _ in 0..2 + rng.index(4) {
        out.push_str(ONSETS[rng.index(ONSETS.len())]);
        out.push_str(VOWELS[rng.index(VOWELS.len())]);
    }
}

const ZH_WORDS: &[&str] = &[
    "我们",
    "软件",
    "开发",
    "系统",
    "测试",
    "维护",
    "文件",
    "命令",
    "用户",
    "数据",
    "服务器",
    "配置",
    "北京",
    "大学",
    "学习",
    "计算机",
    "科学",
    "问题",
    "方法",
    "工具",
    "需要",
    "通过",
    "酒店",
    "房间",
    "非常",
    "不错",
    "价格",
    "位置",
    "的",
    "是",
    "在",
    "和",
    "了",
    "有",
];

#[test]
fn empty_and_separator_only_texts() {
    let scheme = Scheme::default();
    let empty = check(&scheme, "");
    assert_eq!(empty.kind, FingerprintKind::Exact);
    assert_eq!(empty.tokens, 0);
    for text in [
        " ",
        "\n\n\t\r\n   ",
        "\u{3000}\u{00a0}\u{2028}\u{200b}\u{feff}",
        "!!! ... --- ??? ;;; ,,, ()[]{}",
        "，。、！？：；「」『』（）【】……——",
        "&amp; &lt;&gt; &#39; &#x27; &nbsp;",
        "\u{0}\u{0}\u{0}\u{1}\u{7f}",
        "\u{fffd}\u{fffd}\u{fffd}",
        "\u{301}\u{301}\u{20e3}\u{fe0f}",
        "👍🏽🎉🇨🇳👨‍👩‍👧",
    ] {
        let d = check(&scheme, text);
        assert_eq!(
            d.tokens,
            0,
            "{text:?} gave tokens {:?}",
            words(&scheme, text)
        );
        assert_eq!(d, empty, "{text:?} is not fingerprinted as the empty text");
    }
}

#[test]
fn binary_junk_through_lossy_decoding() {
    let scheme = Scheme::default();
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for len in [1, 7, 100, 4096, 1 << 16, 1 << 20] {
        let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let text = String::from_utf8_lossy(&bytes);
        check(&scheme, &text);
    }
    // Runs of U+FFFD and NUL between words act as separators.
    let junk = String::from_utf8_lossy(b"alpha\xff\xfe\xfd\x00\x00beta\xc3\x28gamma\xe2\x82delta");
    check(&scheme, &junk);
    assert_eq!(words(&scheme, &junk), ["alpha", "beta", "gamma", "delta"]);
    let runs = "\u{fffd}".repeat(100_000) + &"\u{0}".repeat(100_000);
    assert_eq!(check(&scheme, &runs).tokens, 0);
}

#[test]
fn unpaired_surrogates_from_lossy_utf16() {
    let scheme = Scheme::default();
    let text = "Lossy decoding of UTF-16 with unpaired surrogates must still give the same words \
                as the text with a plain separator where each surrogate was, 中文也一样";
    let mut units: Vec<u16> = Vec::new();
    let mut plain = String::new();
    let surrogates = [0xd800u16, 0xdc00, 0xdbff, 0xdfff, 0xd83d];
    for (i, word) in text.split(' ').enumerate() {
        if i > 0 {
            units.push(surrogates[i % surrogates.len()]);
            plain.push('|');
        }
        units.extend(word.encode_utf16());
        plain.push_str(word);
    }
    let lossy = String::from_utf16_lossy(&units);
    assert!(lossy.contains('\u{fffd}'));
    let d = check(&scheme, &lossy);
    assert_eq!(d.kind, FingerprintKind::Simhash);
    assert_eq!(words(&scheme, &lossy), words(&scheme, &plain));
    assert_eq!(distance(&scheme, &lossy, &plain), 0);
    // Only surrogates, and a surrogate pair split by junk.
    check(&scheme, &String::from_utf16_lossy(&[0xd800; 1000]));
    check(
        &scheme,
        &String::from_utf16_lossy(&[0xd83d, 0x41, 0xde00, 0x4e2d, 0xd800, 0x6587]),
    );
}

#[test]
fn fifty_megabyte_document() {
    let scheme = Scheme::default();
    let mut rng = Rng(42);
    let mut text = String::with_capacity(50 << 20);
    while text.len() < 50 << 20 {
        for _ in 0..3 + rng.index(20) {
            push_word(&mut rng, &mut text);
            text.push(' ');
        }
        text.push_str(if rng.index(8) == 0 { ".\n\n" } else { ". " });
    }
    let mut fingerprinter = scheme.fingerprinter();
    let a = fingerprinter.fingerprint_details(&text);
    assert_eq!(a.kind, FingerprintKind::Simhash);
    assert!(a.tokens > 5_000_000, "{a:?}");
    let b = fingerprinter.fingerprint_details(&text);
    assert_eq!(a, b, "the same 50 MB text gave two fingerprints");
}

#[test]
fn one_enormous_word() {
    let scheme = Scheme::default();
    let mut rng = Rng(7);
    let ascii: String = (0..4 << 20)
        .map(|_| char::from(b'a' + rng.index(26) as u8))
        .collect();
    let d = check(&scheme, &ascii);
    assert_eq!(d.kind, FingerprintKind::Simhash);
    // Not ASCII: every character goes through NFKC and case folding.
    let cyrillic = "Ж".repeat(1 << 20);
    check(&scheme, &cyrillic);
    let fullwidth = "Ｗ".repeat(1 << 20);
    assert_eq!(
        words(&scheme, &fullwidth),
        words(&scheme, &"w".repeat(1 << 20))
    );
}

#[test]
fn a_megabyte_of_han_without_punctuation() {
    let scheme = Scheme::default();
    let mut rng = Rng(99);
    let mut text = String::new();
    while text.len() < 3 << 19 {
        text.push_str(ZH_WORDS[rng.index(ZH_WORDS.len())]);
    }
    let d = check(&scheme, &text);
    assert_eq!(d.kind, FingerprintKind::Simhash);
    // Wrapped every 37 characters (a line break inside words and sentences): the same cut.
    let wrapped: String = text
        .chars()
        .enumerate()
        .flat_map(|(i, c)| (i % 37 == 36).then_some('\n').into_iter().chain([c]))
        .collect();
    assert_eq!(distance(&scheme, &text, &wrapped), 0);
    // Rare ideographs (extension B and G, compatibility) in a long run.
    let rare: String = (0..300_000)
        .map(|i| match i % 4 {
            0 => char::from_u32(0x20000 + (i as u32 * 7919) % 0xa6d0).unwrap(),
            1 => char::from_u32(0x30000 + (i as u32 * 31) % 0x1340).unwrap(),
            2 => char::from_u32(0xf900 + (i as u32) % 0x100).unwrap(),
            _ => '中',
        })
        .collect();
    check(&scheme, &rare);
}

#[test]
fn mixed_scripts_emoji_marks_and_rtl() {
    let scheme = Scheme::default();
    for text in [
        "Rust 编程语言 (The Rust Programming Language) 第二版, ISBN 978-7-115-54636-0, ¥89.00",
        "日本語のテキストとカタカナ、ひらがな、漢字が混ざっています。東京都千代田区",
        "한국어 텍스트와 English words, 中文字符, Ελληνικά, русский язык",
        "مرحبا بالعالم، هذا نص عربي مع أرقام ١٢٣ و English",
        "שלום עולם \u{200f}זה טקסט בעברית\u{200e} with LTR",
        "हिन्दी में लिखा गया पाठ, தமிழ் உரை, ภาษาไทยไม่มีช่องว่างระหว่างคำ",
        "emoji 👍🏽 in 🎉 the 👨‍👩‍👧 middle 🇨🇳 of 1️⃣ words",
        "Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇ text with stacked combining marks",
        "\u{202e}reversed\u{202c} and \u{2066}isolated\u{2069} bidi controls",
        "tab\tseparated\u{b}vertical\u{c}form\u{85}next\u{2029}paragraph",
        "ﬁne ﬂour ① ② ㈱ ㍿ ℡ Ⅻ ½ x² H₂O",
    ] {
        check(&scheme, text);
    }
    // Emoji and bidi marks between words are separators.
    assert_eq!(
        distance(
            &scheme,
            "emoji 👍🏽 in 🎉 the 👨‍👩‍👧 middle 🇨🇳 of words and more words here",
            "emoji in the middle of words and more words here",
        ),
        0
    );
    assert_eq!(
        words(&scheme, "שלום \u{200f}עולם\u{200e} זה טקסט"),
        words(&scheme, "שלום עולם זה טקסט")
    );
    // Hangul: conjoining jamo compose under NFKC.
    let composed = "한국어 텍스트";
    let jamo: String = composed.chars().flat_map(decompose_hangul).collect();
    assert_ne!(jamo, composed);
    assert_eq!(words(&scheme, &jamo), words(&scheme, composed));
}

/// Canonical decomposition of a precomposed Hangul syllable into conjoining jamo.
fn decompose_hangul(c: char) -> Vec<char> {
    let s = c as u32;
    if !(0xac00..=0xd7a3).contains(&s) {
        return vec![c];
    }
    let i = s - 0xac00;
    let mut out = vec![
        char::from_u32(0x1100 + i / 588).unwrap(),
        char::from_u32(0x1161 + (i % 588) / 28).unwrap(),
    ];
    if !i.is_multiple_of(28) {
        out.push(char::from_u32(0x11a7 + i % 28).unwrap());
    }
    out
}

#[test]
fn decomposed_accents_equal_precomposed() {
    let scheme = Scheme::default();
    let precomposed = "Le café crème est très apprécié à Genève, même en été.";
    let decomposed: String = precomposed
        .chars()
        .flat_map(|c| match c {
            'é' => vec!['e', '\u{301}'],
            'è' => vec!['e', '\u{300}'],
            'ê' => vec!['e', '\u{302}'],
            'à' => vec!['a', '\u{300}'],
            _ => vec![c],
        })
        .collect();
    assert_eq!(
        words(&scheme, &decomposed),
        words(&scheme, precomposed),
        "NFKC should make the two spellings one word"
    );
}

#[test]
fn formatting_only_changes_give_distance_zero() {
    let scheme = Scheme::default();
    let en = "Permission is hereby granted, free of charge, to any person obtaining a copy of \
              this software and associated documentation files (the \"Software\"), to deal in \
              the Software without restriction. Tom & Jerry's \"quoted\" words and AT&T stay.";
    let en_reformatted = "PERMISSION is hereby  granted,\nfree of charge, to any person \
                          obtaining a copy of\r\n\r\nthis ｓｏｆｔｗａｒｅ and associated \
                          documentation files (the “Software”),\tto deal in the Software \
                          without restriction.  Tom &amp; Jerry’s “quoted” words and AT&amp;T \
                          stay .";
    assert_eq!(check(&scheme, en).kind, FingerprintKind::Simhash);
    assert_eq!(words(&scheme, en), words(&scheme, en_reformatted));
    assert_eq!(distance(&scheme, en, en_reformatted), 0);

    let zh = "我们的软件开发团队使用这个系统进行测试和维护，“质量”是第一位的。版本2.0在北京发布。";
    let zh_reformatted =
        "我们的软件开发团\n队使用这个系统进行\r\n  测试和维护，「质量」是第一位的。\
                          版本２．０在北\n京发布。";
    assert_eq!(check(&scheme, zh).kind, FingerprintKind::Simhash);
    assert_eq!(words(&scheme, zh), words(&scheme, zh_reformatted));
    assert_eq!(distance(&scheme, zh, zh_reformatted), 0);
}

#[test]
fn traditional_and_simplified_give_distance_zero() {
    let scheme = Scheme::default();
    for (simplified, traditional) in [
        ("软件开发", "軟件開發"),
        (
            "我们的软件开发团队使用这个系统进行测试和维护，每个阶段都有自己的方法和工具。",
            "我們的軟件開發團隊使用這個系統進行測試和維護，每個階段都有自己的方法和工具。",
        ),
        (
            "这家酒店的房间很干净，服务员态度也很好，价格实惠，交通方便，下次还会再来。",
            "這家酒店的房間很乾淨，服務員態度也很好，價格實惠，交通方便，下次還會再來。",
        ),
    ] {
        assert_eq!(
            words(&scheme, traditional),
            words(&scheme, simplified),
            "{traditional}"
        );
        assert_eq!(distance(&scheme, simplified, traditional), 0);
    }
}

/// Han (common, Traditional, rare, compatibility), Latin (with full-width and accents), digits,
/// punctuation, entity pieces, whitespace, marks, emoji and junk.
const MIXED: &[char] = &[
    '中',
    '文',
    '软',
    '軟',
    '件',
    '開',
    '发',
    '發',
    '的',
    '是',
    '北',
    '京',
    '大',
    '学',
    '學',
    '习',
    '\u{20000}',
    '\u{2a6d6}',
    '\u{30000}',
    '\u{f900}',
    '\u{2f800}',
    'a',
    'b',
    'e',
    'z',
    'A',
    'Z',
    'é',
    'ß',
    'İ',
    'Ａ',
    'ｚ',
    '0',
    '7',
    '２',
    '½',
    ',',
    '.',
    '!',
    '&',
    ';',
    '#',
    'x',
    '\'',
    '"',
    '“',
    '”',
    '，',
    '。',
    '、',
    ' ',
    ' ',
    ' ',
    '\n',
    '\t',
    '\r',
    '\u{3000}',
    '\u{a0}',
    '\u{301}',
    '\u{200b}',
    '\u{200f}',
    '\u{fe0f}',
    '👍',
    '\u{fffd}',
    '\u{0}',
    'ж',
    'ا',
    'ก',
    'あ',
    'ア',
    '한',
];

fn mixed_text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(MIXED), 0..300).prop_map(String::from_iter)
}

fn mixed_words() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        prop::sample::select(vec![
            "软件",
            "開發",
            "北京大学",
            "the",
            "Quick",
            "ＦＯＸ",
            "&amp;",
            "&#39;",
            "&",
            ";",
            " ",
            "\n",
            "，",
            "。",
            "2.0",
            "x",
            "學習",
            "😀",
            "\u{fffd}",
        ])
        .prop_map(String::from),
        "[a-z]{1,80}",
    ];
    prop::collection::vec(piece, 0..120).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_string_is_fingerprinted_sanely(text in any::<String>()) {
        check(&Scheme::default(), &text);
    }

    #[test]
    fn mixed_han_latin_text_is_fingerprinted_sanely(text in mixed_text()) {
        check(&Scheme::default(), &text);
    }

    #[test]
    fn mixed_words_are_fingerprinted_sanely(text in mixed_words()) {
        let scheme = Scheme::default();
        let d = check(&scheme, &text);
        // Tokens are all a text has: the same tokens separated by single spaces fingerprint alike.
        let joined = words(&scheme, &text).join(" ");
        if !joined.chars().any(is_han) {
            prop_assert_eq!(scheme.fingerprint(&joined), d.fingerprint);
        }
    }
}

#[test]
fn fingerprint_is_a_pure_function_of_the_text() {
    let scheme = Scheme::default();
    let texts = [
        "first text with several words in it for a simhash",
        "",
        "第二个文本",
    ];
    let want: Vec<Fingerprint> = texts.iter().map(|t| scheme.fingerprint(t)).collect();
    let mut f = scheme.fingerprinter();
    for _ in 0..3 {
        for (t, w) in texts.iter().zip(&want) {
            assert_eq!(f.fingerprint(t), *w);
        }
    }
}

/// Han ideographs (the CJK unified blocks and extensions, compatibility ideographs), written
/// out here from the Unicode blocks rather than taken from the crate.
fn is_han(c: char) -> bool {
    matches!(c as u32,
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2A6DF
        | 0x2A700..=0x2EBEF | 0x2F800..=0x2FA1F | 0x30000..=0x3134F)
}
