//! Chrome removal's unit tests.

use super::*;

/// The char-by-char definition `has_spaced_separator` must agree with.
fn spaced_separator_by_chars(s: &str) -> bool {
    let mut prev_space = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if prev_space && SEPARATORS.contains(&c) && chars.peek().is_some_and(|n| n.is_whitespace())
        {
            return true;
        }
        prev_space = c.is_whitespace();
    }
    false
}

/// The vector pre-filter never skips a spaced separator: every whitespace character ends
/// with a byte it accepts, every separator starts with one.
#[test]
fn the_skip_filter_accepts_every_separator_and_space() {
    let mut buf = [0u8; 4];
    for c in (0..=u32::from(char::MAX)).filter_map(char::from_u32) {
        let bytes = c.encode_utf8(&mut buf).as_bytes();
        if c.is_whitespace() {
            assert!(may_end_space(bytes[bytes.len() - 1]), "{c:?}");
            assert!(may_start_space(bytes[0]), "{c:?}");
        }
        if SEPARATORS.contains(&c) {
            assert_eq!(is_ascii_separator(bytes[0]), c.is_ascii(), "{c:?}");
            assert!(
                c.is_ascii() || may_start_wide_separator(bytes[0], bytes[1]),
                "{c:?}"
            );
            assert!(MAY_START_SEPARATOR[usize::from(bytes[0])], "{c:?}");
        }
    }
    for b in 0..=255u8 {
        let ascii_separator = b.is_ascii() && SEPARATORS.contains(&char::from(b));
        assert_eq!(is_ascii_separator(b), ascii_separator, "{b:#x}");
        let may = is_ascii_separator(b) || (0..=255u8).any(|n| may_start_wide_separator(b, n));
        assert!(!MAY_START_SEPARATOR[usize::from(b)] || may, "{b:#x}");
    }
}

proptest! {
    /// The memchr line splitter cuts as `str::split('\n')` does.
    #[test]
    fn lines_are_split_at_line_breaks(text in "(a|\n|é|数| |\r){0,40}") {
        prop_assert_eq!(lines(&text).collect::<Vec<_>>(), text.split('\n').collect::<Vec<_>>());
    }
}

proptest! {
    #[test]
    fn spaced_separators_by_bytes_match_the_char_definition(
        parts in proptest::collection::vec(
            prop_oneof![
                Just(" ".to_string()), Just("\u{3000}".to_string()), Just("\u{a0}".to_string()),
                Just("\n".to_string()), Just("a".to_string()), Just("数据".to_string()),
                Just("é".to_string()), Just("\u{2028}".to_string()), Just("\u{b6}".to_string()),
                Just("，".to_string()), Just("“".to_string()), Just("\u{ff41}".to_string()),
                proptest::sample::select(SEPARATORS.to_vec()).prop_map(String::from),
                any::<char>().prop_map(String::from),
            ],
            0..60,
        )
    ) {
        let text: String = parts.concat();
        prop_assert_eq!(has_spaced_separator(&text), spaced_separator_by_chars(&text), "{:?}", text);
    }
}

/// The straightforward definitions the scanning code above must agree with (the code of
/// `4d042be`, allocation per line and all): the oracle of the property tests below.
mod reference {
    use super::super::{
        contains_item, ends_with_name, has_sentence_punctuation, shares_a_word, LineChrome,
        NAME_LINE_WORDS, SEPARATORS, SHORT_ITEM_WORDS,
    };
    use super::spaced_separator_by_chars as has_spaced_separator;
    use crate::fingerprint::is_han;

    pub(super) fn words(s: &str) -> usize {
        let (mut runs, mut han, mut in_run) = (0usize, 0usize, false);
        for c in s.chars() {
            if is_han(c) {
                han += 1;
                in_run = false;
            } else if c.is_alphanumeric() {
                if !in_run {
                    runs += 1;
                }
                in_run = true;
            } else {
                in_run = false;
            }
        }
        runs + han.div_ceil(2)
    }

    pub(super) fn items(line: &str) -> Vec<&str> {
        let chars: Vec<(usize, char)> = line.char_indices().collect();
        let space = |j: usize| chars.get(j).is_some_and(|&(_, c)| c.is_whitespace());
        let byte_at = |j: usize| chars.get(j).map_or(line.len(), |&(b, _)| b);
        let (mut out, mut start, mut i) = (Vec::new(), 0, 0);
        while i < chars.len() {
            if !space(i) {
                i += 1;
                continue;
            }
            let mut j = i;
            while space(j) {
                j += 1;
            }
            let separated =
                chars.get(j).is_some_and(|&(_, s)| SEPARATORS.contains(&s)) && space(j + 1);
            if separated {
                out.push(&line[start..byte_at(i)]);
                j += 1;
                while space(j) {
                    j += 1;
                }
                start = byte_at(j);
            }
            i = j;
        }
        out.push(&line[start..]);
        out.retain(|s| !s.trim().is_empty());
        out
    }

    /// Brackets by definition: the depth after each bracket, over the item with its wrapping
    /// bracket (if any) left out.
    fn closes_brackets(s: &str) -> bool {
        let mut depth = 0i64;
        for c in s.chars() {
            depth += match c {
                '(' | '[' | '{' => 1,
                ')' | ']' | '}' => -1,
                _ => 0,
            };
            if depth < 0 {
                return false;
            }
        }
        depth == 0
    }

    fn is_link_list(line: &str) -> bool {
        let items = items(line);
        let last = items.len().saturating_sub(1);
        items.len() >= 3
            && items.iter().enumerate().all(|(n, it)| {
                let w = words(it);
                let label_ok = n == 0 && it.contains([':', '：']);
                let it_trim = it.trim();
                let bracketed = closes_brackets(it_trim)
                    || (n == 0
                        && it_trim.starts_with(['(', '[', '{'])
                        && closes_brackets(&it_trim[1..]))
                    || (n == last
                        && it_trim.ends_with([')', ']', '}'])
                        && closes_brackets(&it_trim[..it_trim.len() - 1]));
                bracketed
                    && w <= SHORT_ITEM_WORDS + usize::from(label_ok) * 2
                    && !has_sentence_punctuation(it)
            })
    }

    pub(super) fn chrome_lines(text: &str) -> Option<Vec<LineChrome>> {
        if !has_spaced_separator(text) {
            return None;
        }
        let lines: Vec<&str> = text.split('\n').map(str::trim).collect();
        let mut out: Vec<LineChrome> = lines
            .iter()
            .map(|l| {
                if has_spaced_separator(l) && is_link_list(l) {
                    LineChrome::Chrome
                } else {
                    LineChrome::Content
                }
            })
            .collect();
        site_name(&lines, &mut out);
        out.iter().any(|&c| c != LineChrome::Content).then_some(out)
    }

    fn site_name(lines: &[&str], out: &mut [LineChrome]) {
        let Some(title) = lines.iter().position(|l| !l.is_empty()) else {
            return;
        };
        if out[title] != LineChrome::Content || !has_spaced_separator(lines[title]) {
            return;
        }
        let title_lc = lines[title].to_lowercase();
        let short = |l: &str| {
            let w = words(l);
            w > 0 && w <= SHORT_ITEM_WORDS && !has_sentence_punctuation(l)
        };
        let found = lines.iter().enumerate().find_map(|(j, l)| {
            if j == title || !short(l) {
                return None;
            }
            let name = l.to_lowercase();
            (ends_with_name(&title_lc, &name)
                && !shares_a_word(&title_lc[..title_lc.len() - name.len()], &name))
            .then_some((j, name))
        });
        let Some((name_line, name)) = found else {
            return;
        };
        out[title] = LineChrome::NameSuffix {
            name_line: name_line as u32,
        };
        for (i, line) in lines.iter().enumerate() {
            if i != title
                && out[i] == LineChrome::Content
                && words(line) <= NAME_LINE_WORDS
                && contains_item(&line.to_lowercase(), &name)
            {
                out[i] = LineChrome::Chrome;
            }
        }
    }
}

/// Pieces of chrome-like text: separators with and without spaces, every kind of
/// whitespace, Han, letters with case mappings that change length, punctuation.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(" ".to_string()),
        Just("\n".to_string()),
        Just("\u{3000}".to_string()),
        Just("\u{a0}".to_string()),
        Just("\u{85}".to_string()),
        Just("\t".to_string()),
        Just("\u{b}".to_string()),
        proptest::sample::select(SEPARATORS.to_vec()).prop_map(|c| format!(" {c} ")),
        proptest::sample::select(SEPARATORS.to_vec()).prop_map(String::from),
        proptest::sample::select(vec![
            "Home",
            "Docs",
            "Daily Dev",
            "daily dev",
            "DAILY DEV",
            "数据知识站",
            "首页",
            "房间很不错",
            "İstanbul",
            "ΣΟΦΟΣ",
            "\u{212a}elvin",
            "a",
            "3.11",
            "example.org",
            "end.",
            "q, r",
            "You are here:",
            "当前位置：",
            "©",
            "2009-2024",
            "All rights reserved.",
            "x",
            "(",
            ")",
            "[",
            "]",
            "{",
            "}",
            "[ Home",
            "Blog ]",
            "-j[son]",
            "(beta)",
        ])
        .prop_map(String::from),
        any::<char>().prop_map(String::from),
    ]
}

fn site_name_strategy() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(vec![
        "Daily Dev",
        "daily dev",
        "DAILY DEV",
        "数据知识站",
        "ΣΟΦΟΣ",
        "İstanbul",
        "Dev",
        "a b c",
    ])
}

fn spacing() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(vec![" ", "  ", "\u{3000}", "\t", ""])
}

/// A title that may end in a site name after a separator.
fn site_title() -> impl Strategy<Value = String> {
    (
        proptest::collection::vec(piece(), 1..4),
        spacing(),
        proptest::sample::select(SEPARATORS.to_vec()),
        spacing(),
        site_name_strategy(),
    )
        .prop_map(|(head, a, sep, b, name)| format!("{}{a}{sep}{b}{name}", head.concat()))
}

/// Lines of a page: free pieces, or a title ending in a site name, the name alone, a footer
/// repeating it (in varied case and spacing).
fn page_line() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::collection::vec(piece(), 0..8).prop_map(|p| p.concat()),
        site_title(),
        (spacing(), site_name_strategy(), spacing())
            .prop_map(|(a, name, b)| format!("{a}{name}{b}")),
        site_name_strategy().prop_map(|name| format!("© 2009-2024 {name}. All rights reserved.")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// As below, on texts made of page-like lines (site names found).
    #[test]
    fn chrome_lines_of_pages_match_the_line_by_line_definition(
        first in site_title(),
        lines in proptest::collection::vec(page_line(), 0..10),
        titled in any::<bool>(),
    ) {
        // Often a title first, so that site names are found.
        let text = if titled { format!("{first}\n{}", lines.join("\n")) } else { lines.join("\n") };
        prop_assert_eq!(chrome_lines(&text), reference::chrome_lines(&text), "{:?}", text);
    }

    /// The scanning `chrome_lines` (one pass for separators, lines read only where a
    /// separator or the site name can be) equals the line-by-line definition.
    #[test]
    fn chrome_lines_match_the_line_by_line_definition(
        parts in proptest::collection::vec(piece(), 0..40)
    ) {
        let text: String = parts.concat();
        prop_assert_eq!(chrome_lines(&text), reference::chrome_lines(&text), "{:?}", text);
        for line in text.split('\n') {
            let w = reference::words(line);
            for limit in [0, 1, 4, 16] {
                prop_assert_eq!(words_within(line, limit), (w <= limit).then_some(w), "{:?}", line);
            }
            let mut items = Vec::new();
            for_each_item(line, |it| {
                if !it.trim().is_empty() {
                    items.push(it);
                }
                true
            });
            prop_assert_eq!(items, reference::items(line), "{:?}", line);
        }
    }
}

#[test]
fn chrome_lines_match_the_definition_on_pages() {
    for zh in [false, true] {
        for sep in 0..5 {
            let (bare, page) = pages(
                zh,
                &(0..40).collect::<Vec<_>>(),
                (1, 2),
                &[0, 1, 2, 3],
                sep,
                sep % 2 == 1,
            );
            for text in [bare, page] {
                assert_eq!(
                    chrome_lines(&text),
                    reference::chrome_lines(&text),
                    "{text:?}"
                );
            }
        }
    }
}

#[test]
fn link_lists_and_site_names_are_chrome() {
    let page = "Install guide | Daily Dev\nDaily Dev\nHome | Docs | Blog | Contact\n\
                You are here: Home > Docs > Install\n\nRun the installer, then restart.\n\
                © 2009-2024 Daily Dev. All rights reserved.";
    let c = chrome_lines(page).unwrap();
    assert_eq!(c[0], LineChrome::NameSuffix { name_line: 1 });
    assert_eq!(&c[1..4], &[LineChrome::Chrome; 3]);
    assert_eq!(c[4], LineChrome::Content); // blank
    assert_eq!(c[5], LineChrome::Content);
    assert_eq!(c[6], LineChrome::Chrome);
    let zh = "房间很不错 - 数据知识站\n数据知识站\n首页 · 新闻 · 文档\n当前位置：首页 > 文档 > 下载\n\n房间很不错，还是套间。";
    let c = chrome_lines(zh).unwrap();
    assert_eq!(c[0], LineChrome::NameSuffix { name_line: 1 });
    assert_eq!(&c[1..4], &[LineChrome::Chrome; 3]);
    assert_eq!(c[5], LineChrome::Content);
    // Brackets that items close, or that wrap the whole list, leave it a list.
    for line in [
        "[ Home | Docs | Blog ]",
        "{ Home | Docs | Blog }",
        "Home | Docs (beta) | Blog [3]",
        "( Home | Docs (beta) | Blog )",
    ] {
        assert_eq!(chrome_lines(line), Some(vec![LineChrome::Chrome]), "{line}");
    }
}

#[test]
fn prose_paths_and_options_are_content() {
    for line in [
        "The quick brown fox jumps over the lazy dog, again and again.",
        "usr/share/doc/foo/copyright",
        "ls [-a|-b|-c] [FILE]...",
        // Separators inside brackets: an alternation of a grammar or a command synopsis. The
        // first is a truncated copy's line of a man page (synthetic-en), which was chrome
        // before and cut the rule's shingles of the copy to 0.517 of the original's.
        "OPTIONS := {  -j[son] | -p[retty] | -i[ec] }  devlink port",
        "OBJECT := { link | address | route | rule }",
        "ip { link | addr } show | help",
        "Home | Docs ] | Blog | About",
        "[ Home | Docs ] | Blog | About",
        "Home | [ Docs | Blog ]",
        "git-log - Show commit logs",
        "Files: debian/*",
        "types-foo 1.0 - Typing stubs for foo\nTyping stubs for foo",
        "一个 二个 三个",
    ] {
        assert_eq!(chrome_lines(line), None, "{line}");
    }
}

use crate::{MatchRule, Scheme};
use proptest::prelude::*;

const WORDS: [&str; 16] = [
    "install", "the", "package", "then", "restart", "server", "config", "file", "reads", "every",
    "option", "before", "it", "starts", "q&a", "logs",
];
const HAN: [&str; 12] = [
    "房间", "很", "不错", "还是", "套间", "前台", "服务", "设施", "安静", "早餐", "价格", "位置",
];
const SITE: [&str; 8] = [
    "Daily", "Dev", "Hub", "Notes", "数据", "知识", "社区", "在线",
];
const NAV: [&str; 8] = [
    "Home", "Docs", "Blog", "About", "首页", "新闻", "下载", "论坛",
];
const SEPS: [&str; 5] = [" | ", " · ", " / ", " - ", " > "];

/// A bare page (`title\ncontent`) and the same page inside a site's chrome.
fn pages(
    zh: bool,
    picks: &[usize],
    name: (usize, usize),
    nav: &[usize],
    sep: usize,
    wrap: bool,
) -> (String, String) {
    let word = |i: usize| {
        if zh {
            HAN[i % HAN.len()]
        } else {
            WORDS[i % WORDS.len()]
        }
    };
    let glue = if zh { "" } else { " " };
    // Re-wrapped: a line break after every sentence instead of a space.
    let stop = match (zh, wrap) {
        (true, false) => "。",
        (true, true) => "。\n",
        (false, false) => ". ",
        (false, true) => ".\n",
    };
    let title: Vec<&str> = picks.iter().take(4).map(|&i| word(i)).collect();
    let mut content = String::new();
    for (n, sentence) in picks.chunks(7).enumerate() {
        if n > 0 && n % 3 == 0 {
            content.push_str("\n\n");
        }
        content.push_str(
            &sentence
                .iter()
                .map(|&i| word(i))
                .collect::<Vec<_>>()
                .join(glue),
        );
        content.push_str(stop);
    }
    let title = title.join(glue);
    // Site words never occur in the content (a site name is independent of the page).
    let name = format!(
        "{}{}{}",
        SITE[name.0 % 4 + 4 * usize::from(zh)],
        glue,
        SITE[(name.1 % 3 + name.0 % 4 + 1) % 4 + 4 * usize::from(zh)]
    );
    let sep = SEPS[sep % SEPS.len()];
    let nav: Vec<&str> = nav
        .iter()
        .map(|&i| NAV[i % 4 + 4 * usize::from(zh)])
        .collect();
    let bare = format!("{title}\n{content}");
    let page = format!(
        "{title}{sep}{name}\n{name}\n{}\n\n{content}\n\n© 2009-2024 {name}. All rights reserved.",
        nav.join(sep)
    );
    (bare, page)
}

proptest! {
    /// Oracle: the bare page. Chrome by shape removes exactly the header, navigation, title
    /// suffix and footer, so the page's sketch is the bare page's, and a re-formatted copy
    /// (case, full width, quotes, entities, re-wrapped lines) keeps both fingerprint and
    /// sketch.
    #[test]
    fn a_page_in_chrome_signs_like_the_bare_page(
        zh in any::<bool>(),
        picks in proptest::collection::vec(0usize..64, 12..60),
        name in (0usize..8, 0usize..8),
        nav in proptest::collection::vec(0usize..8, 3..7),
        sep in 0usize..5,
    ) {
        let rule = MatchRule::default();
        let mut signer = rule.signer(&Scheme::default());
        let (bare, page) = pages(zh, &picks, name, &nav, sep, false);
        let (b, p) = (signer.sign(&bare), signer.sign(&page));
        prop_assert_eq!(&b.sketch, &p.sketch, "{}\n---\n{}", bare, page);
        prop_assert!(rule.matches(&b, &p).is_some());

        let reformatted = pages(zh, &picks, name, &nav, sep, true)
            .1
            .to_uppercase()
            .replace("。", "．")
            .replace("PACKAGE", "\u{201c}PACKAGE\u{201d}")
            .replace('&', "&amp;")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { char::from_u32(c as u32 + 0xFEE0).unwrap_or(c) } else { c })
            .collect::<String>();
        let r = signer.sign(&reformatted);
        prop_assert_eq!(r.fingerprint, p.fingerprint, "{}", reformatted);
        prop_assert_eq!(&r.sketch, &p.sketch, "{}", reformatted);
    }
}

#[test]
fn without_the_option_chrome_counts() {
    let (bare, page) = pages(
        false,
        &(0..30).collect::<Vec<_>>(),
        (0, 1),
        &[0, 1, 2],
        0,
        false,
    );
    let mut spec = *MatchRule::default().spec();
    spec.shingling.chrome = false;
    let rule = MatchRule::new(spec).unwrap();
    let mut signer = rule.signer(&Scheme::default());
    assert_ne!(signer.sign(&bare).sketch, signer.sign(&page).sketch);
    assert!(!rule.id().contains("chrome"));
    assert!(MatchRule::default().id().contains(";chrome1"));
}

#[test]
fn a_record_written_before_the_option_reads_as_off() {
    let old =
        r#"{"width":3,"min_line_words":0,"min_content_shingles":16,"min_content_percent":50}"#;
    let s: crate::Shingling = serde_json::from_str(old).unwrap();
    assert!(!s.chrome);
}
