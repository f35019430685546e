//! Site chrome by shape: which lines of a page (and which line tails) are navigation, a site
//! name or a footer that repeats it, read from the page alone (no corpus statistics).
//!
//! Three shapes, each one the way a page template writes chrome, none the way prose is written:
//!
//! - **Link lists**: a line of at least 3 short items separated by a spaced separator
//!   (`Home | Docs | Blog`, `首页 · 新闻 · 文档`, `You are here: Home > Docs > Install`), with no
//!   sentence punctuation in any item. Runs of spaces alone never separate items: spacing is
//!   layout (a table's columns), which re-wrapping and width changes rewrite.
//! - **Site name**: a short line whose exact text (case-folded, trimmed) also ends the first
//!   line (the title) after a spaced separator (`Install guide | Daily Dev` and a header line
//!   `Daily Dev`): the name line is chrome, and so is the title's suffix.
//! - **Lines that repeat the site name** as a whole item, not inside a word or a run of Han
//!   characters (`© 2009-2024 Daily Dev. All rights reserved.`), when they are short.
//!
//! Items and lines are measured in *words*: a run of letters or digits is one word, two Han
//! characters are one (a Chinese word is one to three characters), so `数据知识站` weighs as
//! much as `Data Hub`. Line breaks only matter where a line ends; re-wrapping prose never makes
//! it chrome: a wrapped line of prose carries sentence punctuation or words beyond the short
//! limits, and a short wrapped tail alone is not a list.

use crate::fingerprint::is_han;

/// An item of a link list, a site name: at most this many words.
const SHORT_ITEM_WORDS: usize = 4;
/// A line that repeats the site name is chrome when it has at most this many words.
const NAME_LINE_WORDS: usize = 16;
/// Spaced separators of link lists and title suffixes.
const SEPARATORS: &[char] = &[
    '|', '｜', '·', '•', '>', '»', '›', '/', '-', '–', '—', '_', '~',
];

/// What a line of the text is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LineChrome {
    Content,
    /// The whole line is chrome.
    Chrome,
    /// The line ends with the site name written on line `name_line` (its units are chrome).
    NameSuffix {
        name_line: u32,
    },
}

/// Words of `s`: letter/digit runs, plus one per two Han characters (rounded up).
fn words(s: &str) -> usize {
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

/// Sentence punctuation: prose has it, navigation does not. A period counts only before a
/// space or at the end (not in `3.11` or `example.org`).
fn has_sentence_punctuation(s: &str) -> bool {
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '。' | '！' | '？' | '；' | '，' | '、' | '!' | '?' | ';' | ',' => return true,
            '.' if chars.peek().is_none_or(|n| n.is_whitespace()) => return true,
            _ => {}
        }
    }
    false
}

/// Splits a line at spaced separators (` | `, ` > `, ...). Runs of spaces alone do not split:
/// they are layout (a table's columns), which re-wrapping and width changes rewrite.
fn items(line: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    let space = |j: usize| chars.get(j).is_some_and(|&(_, c)| c.is_whitespace());
    let byte_at = |j: usize| chars.get(j).map_or(line.len(), |&(b, _)| b);
    let (mut out, mut start, mut i) = (Vec::new(), 0, 0);
    while i < chars.len() {
        if !space(i) {
            i += 1;
            continue;
        }
        // Spaces, a separator character, a space: an item ends. Linear: every branch moves past
        // what it read.
        let mut j = i;
        while space(j) {
            j += 1;
        }
        let separated = chars.get(j).is_some_and(|&(_, s)| SEPARATORS.contains(&s)) && space(j + 1);
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

fn is_link_list(line: &str) -> bool {
    let items = items(line);
    items.len() >= 3
        && items.iter().enumerate().all(|(n, it)| {
            let w = words(it);
            // The first item may be a label ("You are here:", "当前位置：首页").
            let label_ok = n == 0 && it.contains([':', '：']);
            w <= SHORT_ITEM_WORDS + usize::from(label_ok) * 2 && !has_sentence_punctuation(it)
        })
}

/// `line` (trimmed, case-folded) ends with a spaced separator and then `name`.
fn ends_with_name(line: &str, name: &str) -> bool {
    if line.len() <= name.len() || !line.ends_with(name) {
        return false;
    }
    let head = line[..line.len() - name.len()].trim_end_matches(|c: char| c.is_whitespace());
    let gap = line.len() - name.len() - head.len();
    let Some(sep) = head.chars().last().filter(|c| SEPARATORS.contains(c)) else {
        return false;
    };
    gap >= 1 && head[..head.len() - sep.len_utf8()].ends_with(char::is_whitespace)
}

/// Words (letter/digit runs) and Han character pairs of `s` (a single Han character alone).
fn word_keys(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut run: Option<usize> = None;
    let chars: Vec<(usize, char)> = s.char_indices().collect();
    for (n, &(at, c)) in chars.iter().enumerate() {
        let end = at + c.len_utf8();
        if is_han(c) {
            if let Some(start) = run.take() {
                out.push(&s[start..at]);
            }
            let prev_han = n > 0 && is_han(chars[n - 1].1);
            let next_han = chars.get(n + 1).is_some_and(|&(_, d)| is_han(d));
            match chars.get(n + 1) {
                Some(&(_, d)) if is_han(d) => out.push(&s[at..end + d.len_utf8()]),
                _ if !prev_han && !next_han => out.push(&s[at..end]),
                _ => {}
            }
        } else if c.is_alphanumeric() {
            run.get_or_insert(at);
        } else if let Some(start) = run.take() {
            out.push(&s[start..at]);
        }
    }
    if let Some(start) = run {
        out.push(&s[start..]);
    }
    out
}

/// A site name is independent of the page it frames; a subtitle (`types-foo 1.0 - Typing stubs
/// for foo`) repeats the page's words.
fn shares_a_word(head: &str, name: &str) -> bool {
    let head = word_keys(head);
    word_keys(name).iter().any(|w| head.contains(w))
}

/// `line` contains `name` as a whole item: not inside a word or a run of Han characters
/// (`© 2024 Daily Dev.`, not `a daily development`).
fn contains_item(line: &str, name: &str) -> bool {
    let glued = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric());
    line.match_indices(name).any(|(at, _)| {
        !glued(line[..at].chars().next_back()) && !glued(line[at + name.len()..].chars().next())
    })
}

/// A separator character with whitespace on both sides: every chrome shape needs one.
///
/// Scans bytes, not chars: only the bytes that can start a separator (ASCII ones and the lead
/// bytes of the others) are decoded, with their neighbours; most of a text is skipped by one
/// table look-up per byte (this check runs on every text a signature is made of).
fn has_spaced_separator(s: &str) -> bool {
    s.bytes().enumerate().any(|(i, b)| {
        if !MAY_START_SEPARATOR[usize::from(b)] {
            return false;
        }
        // `b` is ASCII or a lead byte, so `i` is a char boundary.
        let (Some(before), Some(at)) = (s.get(..i), s.get(i..)) else {
            return false;
        };
        let mut rest = at.chars();
        rest.next().is_some_and(|c| SEPARATORS.contains(&c))
            && before.chars().next_back().is_some_and(char::is_whitespace)
            && rest.next().is_some_and(char::is_whitespace)
    })
}

/// The first bytes of the UTF-8 encodings of [`SEPARATORS`].
const MAY_START_SEPARATOR: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < SEPARATORS.len() {
        let mut buf = [0u8; 4];
        let encoded = SEPARATORS[i].encode_utf8(&mut buf);
        table[encoded.as_bytes()[0] as usize] = true;
        i += 1;
    }
    table
};

/// Per line of `text` (split at `\n`), whether it is chrome; `None` when no line is (most
/// texts: they cost one scan for a spaced separator).
pub(crate) fn chrome_lines(text: &str) -> Option<Vec<LineChrome>> {
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

/// Marks the site name (a short line that also ends the first line, the title, after a
/// separator), the title's suffix, and short lines that repeat the name.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The char-by-char definition `has_spaced_separator` must agree with.
    fn spaced_separator_by_chars(s: &str) -> bool {
        let mut prev_space = false;
        let mut chars = s.chars().peekable();
        while let Some(c) = chars.next() {
            if prev_space
                && SEPARATORS.contains(&c)
                && chars.peek().is_some_and(|n| n.is_whitespace())
            {
                return true;
            }
            prev_space = c.is_whitespace();
        }
        false
    }

    proptest! {
        #[test]
        fn spaced_separators_by_bytes_match_the_char_definition(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just(" ".to_string()), Just("\u{3000}".to_string()), Just("\u{a0}".to_string()),
                    Just("\n".to_string()), Just("a".to_string()), Just("数据".to_string()),
                    Just("é".to_string()), Just("\u{2028}".to_string()), Just("\u{b6}".to_string()),
                    proptest::sample::select(SEPARATORS.to_vec()).prop_map(String::from),
                    any::<char>().prop_map(String::from),
                ],
                0..12,
            )
        ) {
            let text: String = parts.concat();
            prop_assert_eq!(has_spaced_separator(&text), spaced_separator_by_chars(&text), "{:?}", text);
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
    }

    #[test]
    fn prose_paths_and_options_are_content() {
        for line in [
            "The quick brown fox jumps over the lazy dog, again and again.",
            "usr/share/doc/foo/copyright",
            "ls [-a|-b|-c] [FILE]...",
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
        "install", "the", "package", "then", "restart", "server", "config", "file", "reads",
        "every", "option", "before", "it", "starts", "q&a", "logs",
    ];
    const HAN: [&str; 12] = [
        "房间", "很", "不错", "还是", "套间", "前台", "服务", "设施", "安静", "早餐", "价格",
        "位置",
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
        let mut spec = MatchRule::default().spec().clone();
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
}
