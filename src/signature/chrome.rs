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

/// `char::is_whitespace` of an ASCII byte.
#[inline]
fn is_ascii_space(b: u8) -> bool {
    matches!(b, b'\t'..=b'\r' | b' ')
}

/// Whether the character that ends at byte `i` of `s` is whitespace (`false` at the start).
#[inline]
fn space_before(s: &str, i: usize) -> bool {
    match i.checked_sub(1).and_then(|j| s.as_bytes().get(j)) {
        None => false,
        Some(&b) if b < 0x80 => is_ascii_space(b),
        Some(_) => s
            .get(..i)
            .and_then(|head| head.chars().next_back())
            .is_some_and(char::is_whitespace),
    }
}

/// Whether the character that starts at byte `i` of `s` is whitespace (`false` at the end).
#[inline]
fn space_at(s: &str, i: usize) -> bool {
    match s.as_bytes().get(i) {
        None => false,
        Some(&b) if b < 0x80 => is_ascii_space(b),
        Some(_) => s
            .get(i..)
            .and_then(|tail| tail.chars().next())
            .is_some_and(char::is_whitespace),
    }
}

/// The byte offset of the first separator character at or after byte `from` of `s` with
/// whitespace on both sides (the whitespace before it may lie before `from`).
///
/// Most of a text is skipped 16 bytes at a time by [`may_hold_spaced_separator`], which
/// compiles to vector compares; the rest is checked byte by byte by [`spaced_separator_at`]
/// (this scan runs on every text a signature is made of).
fn next_spaced_separator(s: &str, from: usize) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut i = from;
    if i == 0 {
        if spaced_separator_at(s, 0) {
            return Some(0);
        }
        i = 1;
    }
    // `bytes[i - 1..i + SKIP + 1]`: each byte with the ones before and after it.
    while let Some(window) = bytes
        .get(i - 1..i + SKIP + 1)
        .and_then(|w| w.try_into().ok())
    {
        if may_hold_spaced_separator(window) {
            if let Some(at) = (i..i + SKIP).find(|&j| spaced_separator_at(s, j)) {
                return Some(at);
            }
        }
        i += SKIP;
    }
    (i..bytes.len()).find(|&j| spaced_separator_at(s, j))
}

/// Bytes skipped at once by [`next_spaced_separator`].
const SKIP: usize = 16;

/// Whether a spaced separator may start at bytes `1..=SKIP` of `window`: right after a byte
/// that can end whitespace, an ASCII separator before a byte that can start whitespace, or the
/// first two bytes of a multi-byte separator. Never `false` where [`spaced_separator_at`] is
/// `true` (the ASCII test on both sides keeps options and paths, ` -v`, ` /usr`, from being read
/// again; the two-byte test keeps Han text and its full-width punctuation, which a test of the
/// lead byte alone would read byte by byte); branch-free over the whole window so that it
/// compiles to vector compares.
#[inline]
fn may_hold_spaced_separator(window: &[u8; SKIP + 2]) -> bool {
    let mut any = 0u8;
    for k in 0..SKIP {
        let (before, b, after) = (window[k], window[k + 1], window[k + 2]);
        let separator =
            (is_ascii_separator(b) & may_start_space(after)) | may_start_wide_separator(b, after);
        any |= u8::from(may_end_space(before)) & u8::from(separator);
    }
    any != 0
}

/// A byte that can end a whitespace character: any byte up to the ASCII space (a superset of
/// ASCII whitespace) or the last byte of a multi-byte one (U+0085, U+00A0, U+1680,
/// U+2000-200A, U+2028, U+2029, U+202F, U+205F, U+3000 end in 0x80-0x8a, 0x9f, 0xa0, 0xa8,
/// 0xa9 or 0xaf). Compares only (vectors).
#[inline]
fn may_end_space(b: u8) -> bool {
    (b <= b' ')
        | (b.wrapping_sub(0x80) <= 0x0a)
        | (b == 0x9f)
        | (b == 0xa0)
        | ((b & 0xfe) == 0xa8)
        | (b == 0xaf)
}

/// A byte that can start a whitespace character: any byte up to the ASCII space (a superset of
/// ASCII whitespace), or a lead byte of 0xc2 and up (no branch: vector compares).
#[inline]
fn may_start_space(b: u8) -> bool {
    (b <= b' ') | (b >= 0xc2)
}

/// Whether `b`, `next` can be the first two bytes of one of the multi-byte [`SEPARATORS`]:
/// U+00B7 and U+00BB start with 0xc2, U+2013, U+2014, U+2022 and U+203A with 0xe2 0x80,
/// U+FF5C with 0xef 0xbd (compares only: vectors).
#[inline]
fn may_start_wide_separator(b: u8, next: u8) -> bool {
    (b == 0xc2) | ((b == 0xe2) & (next == 0x80)) | ((b == 0xef) & (next == 0xbd))
}

/// One of the ASCII [`SEPARATORS`] (no branch: vector compares; `-` and `/`, `|` and `~`
/// differ only in bit 1, so setting it tests each pair at once).
#[inline]
fn is_ascii_separator(b: u8) -> bool {
    let pair = b | 0b10;
    (pair == b'/') | (pair == b'~') | (b == b'>') | (b == b'_')
}

/// Whether a separator character starts at byte `i` of `s` with whitespace on both sides.
#[inline]
fn spaced_separator_at(s: &str, i: usize) -> bool {
    let Some(&b) = s.as_bytes().get(i) else {
        return false;
    };
    if !MAY_START_SEPARATOR[usize::from(b)] {
        return false;
    }
    let len = if b < 0x80 {
        // Every ASCII byte of the table is a separator.
        1
    } else {
        // A lead byte, so `i` is a char boundary.
        match s.get(i..).and_then(|tail| tail.chars().next()) {
            Some(c) if SEPARATORS.contains(&c) => c.len_utf8(),
            _ => return false,
        }
    };
    space_before(s, i) && space_at(s, i + len)
}

/// A separator character with whitespace on both sides: every chrome shape needs one.
fn has_spaced_separator(s: &str) -> bool {
    next_spaced_separator(s, 0).is_some()
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

/// Words of `s` (letter/digit runs, plus one per two Han characters, rounded up), or `None` as
/// soon as there are more than `limit`: every caller compares with a small bound, and most
/// lines of prose pass it within their first words.
fn words_within(s: &str, limit: usize) -> Option<usize> {
    let (mut runs, mut han, mut in_run) = (0usize, 0usize, false);
    for c in s.chars() {
        // ASCII first: no Han look-up and no Unicode class table for most characters.
        let alphanumeric = if c.is_ascii() {
            c.is_ascii_alphanumeric()
        } else if is_han(c) {
            han += 1;
            in_run = false;
            if runs + han.div_ceil(2) > limit {
                return None;
            }
            continue;
        } else {
            c.is_alphanumeric()
        };
        if alphanumeric && !in_run {
            runs += 1;
            if runs + han.div_ceil(2) > limit {
                return None;
            }
        }
        in_run = alphanumeric;
    }
    Some(runs + han.div_ceil(2))
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

/// Calls `item` with each part of `line` between spaced separators (` | `, ` > `, ...), in
/// order, until it returns `false`; returns whether it never did. Runs of spaces alone do not
/// split: they are layout (a table's columns), which re-wrapping and width changes rewrite.
/// Parts may be blank. No allocation; linear: every step moves past what it read.
fn for_each_item<'a>(line: &'a str, mut item: impl FnMut(&'a str) -> bool) -> bool {
    let char_at = |j: usize| line.get(j..).and_then(|tail| tail.chars().next());
    let skip_spaces = |mut j: usize| {
        while let Some(c) = char_at(j).filter(|c| c.is_whitespace()) {
            j += c.len_utf8();
        }
        j
    };
    let (mut start, mut i) = (0, 0);
    while let Some(c) = char_at(i) {
        if !c.is_whitespace() {
            i += c.len_utf8();
            continue;
        }
        // Spaces, a separator character, a space: an item ends.
        let mut j = skip_spaces(i);
        if let Some(sep) = char_at(j).filter(|s| SEPARATORS.contains(s)) {
            let after = j + sep.len_utf8();
            if char_at(after).is_some_and(char::is_whitespace) {
                if !item(&line[start..i]) {
                    return false;
                }
                j = skip_spaces(after);
                start = j;
            }
        }
        i = j;
    }
    item(&line[start..])
}

/// At least 3 non-blank items, each of at most [`SHORT_ITEM_WORDS`] words and without
/// sentence punctuation (the first may be a label: `You are here:`, `当前位置：首页`).
fn is_link_list(line: &str) -> bool {
    let mut items = 0usize;
    let all_short = for_each_item(line, |item| {
        if item.trim().is_empty() {
            return true;
        }
        let label_ok = items == 0 && item.contains([':', '：']);
        items += 1;
        let limit = SHORT_ITEM_WORDS + usize::from(label_ok) * 2;
        words_within(item, limit).is_some() && !has_sentence_punctuation(item)
    });
    all_short && items >= 3
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

/// The lines of a text that are not content, sparsely: (0-based line, what it is), in line
/// order. Most texts have none.
type Marks = Vec<(usize, LineChrome)>;

fn marked(marks: &Marks, line: usize) -> bool {
    marks.binary_search_by_key(&line, |&(l, _)| l).is_ok()
}

/// Line numbers of byte offsets, read forwards: each newline is counted once however many
/// offsets are asked for.
struct LineCursor<'a> {
    bytes: &'a [u8],
    /// Bytes before this are counted.
    counted: usize,
    /// Newlines before `counted`.
    line: usize,
    /// Where the line holding `counted` starts.
    line_start: usize,
}

impl<'a> LineCursor<'a> {
    fn new(text: &'a str) -> Self {
        LineCursor {
            bytes: text.as_bytes(),
            counted: 0,
            line: 0,
            line_start: 0,
        }
    }

    /// The 0-based number and byte range (without its `\n`) of the line holding byte `at`
    /// (`at` not before the last offset asked for).
    fn line_of(&mut self, at: usize) -> (usize, usize, usize) {
        let at = at.clamp(self.counted, self.bytes.len());
        let skipped = &self.bytes[self.counted..at];
        if let Some(last) = memchr::memrchr(b'\n', skipped) {
            self.line += memchr::memchr_iter(b'\n', skipped).count();
            self.line_start = self.counted + last + 1;
        }
        self.counted = at;
        let end = memchr::memchr(b'\n', &self.bytes[at..]).map_or(self.bytes.len(), |n| at + n);
        (self.line, self.line_start, end)
    }
}

/// Per line of `text` (split at `\n`), whether it is chrome; `None` when no line is (most
/// texts: they cost one scan for a spaced separator).
///
/// Only the lines holding a spaced separator are read as link lists (one scan finds them), and
/// lines are split and measured one by one only when the title has one.
pub(crate) fn chrome_lines(text: &str) -> Option<Vec<LineChrome>> {
    let first = next_spaced_separator(text, 0)?;
    let mut marks = link_lists(text, first);
    site_name(text, &mut marks);
    if marks.is_empty() {
        return None;
    }
    let lines = memchr::memchr_iter(b'\n', text.as_bytes()).count() + 1;
    let mut out = vec![LineChrome::Content; lines];
    for (line, chrome) in marks {
        out[line] = chrome;
    }
    Some(out)
}

/// The link-list lines of `text`, whose first spaced separator is at byte `first`.
fn link_lists(text: &str, first: usize) -> Marks {
    let mut marks = Marks::new();
    let mut cursor = LineCursor::new(text);
    let mut hit = Some(first);
    while let Some(at) = hit {
        let (number, start, end) = cursor.line_of(at);
        // Three non-blank items need two separators, each spaced in the text too: a line
        // holding one (most hits: `git-log - Show commit logs`, a dash in prose) is no list,
        // and the next hit is found by the same scan.
        let next = next_spaced_separator(text, at + 1);
        if next.is_none_or(|n| n >= end) {
            hit = next;
            continue;
        }
        // The text's separator may have its spaces outside the trimmed line.
        let line = text[start..end].trim();
        if has_spaced_separator(line) && is_link_list(line) {
            marks.push((number, LineChrome::Chrome));
        }
        hit = next_spaced_separator(text, end);
    }
    marks
}

/// The title: the first non-blank line, trimmed, with its number.
fn title_line(text: &str) -> Option<(usize, &str)> {
    let at = text.find(|c: char| !c.is_whitespace())?;
    let (number, start, end) = LineCursor::new(text).line_of(at);
    Some((number, text[start..end].trim()))
}

/// Marks the site name (a short line that also ends the first line, the title, after a
/// separator), the title's suffix, and short lines that repeat the name.
fn site_name(text: &str, marks: &mut Marks) {
    let Some((title, title_text)) = title_line(text) else {
        return;
    };
    if marked(marks, title) || !has_spaced_separator(title_text) {
        return;
    }
    let title_lc = title_text.to_lowercase();
    let Some((name_line, name)) = find_site_name(text, title, &title_lc) else {
        return;
    };
    let mut named = vec![(
        title,
        LineChrome::NameSuffix {
            name_line: name_line as u32,
        },
    )];
    for (i, line) in lines(text).map(str::trim).enumerate() {
        if i != title
            && !marked(marks, i)
            && words_within(line, NAME_LINE_WORDS).is_some()
            && contains_item(&line.to_lowercase(), &name)
        {
            named.push((i, LineChrome::Chrome));
        }
    }
    marks.extend(named);
    marks.sort_unstable_by_key(|&(line, _)| line);
}

/// The first short line (not the title) whose case-folded text ends the case-folded title
/// after a spaced separator and shares no word with the rest of the title: its number and
/// case-folded text.
fn find_site_name(text: &str, title: usize, title_lc: &str) -> Option<(usize, String)> {
    lines(text)
        .map(str::trim)
        .enumerate()
        .find_map(|(j, line)| {
            // An ASCII line folds byte by byte: unless the title ends with it (ignoring ASCII
            // case), `ends_with_name` below is false. Most lines stop here, before the word
            // count and the folded copy (every record with a separator in its title reads
            // all its lines).
            if line.is_ascii() && !ascii_suffix_of(title_lc, line) {
                return None;
            }
            let short = words_within(line, SHORT_ITEM_WORDS).is_some_and(|w| w > 0)
                && !has_sentence_punctuation(line);
            if j == title || !short {
                return None;
            }
            let name = line.to_lowercase();
            (ends_with_name(title_lc, &name)
                && !shares_a_word(&title_lc[..title_lc.len() - name.len()], &name))
            .then_some((j, name))
        })
}

/// `text.split('\n')`, with the vector search of `memchr` (lines are short: the search's setup
/// per line counts).
fn lines(text: &str) -> impl Iterator<Item = &str> {
    let ends = memchr::memchr_iter(b'\n', text.as_bytes()).chain([text.len()]);
    let mut start = 0;
    ends.map(move |end| {
        // `\n` is a character of its own: both ends are character boundaries.
        let line = text.get(start..end).unwrap_or("");
        start = end + 1;
        line
    })
}

/// `folded` (case-folded) ends with the ASCII `line` folded, after a character boundary and
/// with something before it: what `ends_with_name(folded, &line.to_lowercase())` needs first.
fn ascii_suffix_of(folded: &str, line: &str) -> bool {
    folded.len() > line.len()
        && folded.as_bytes()[folded.len() - line.len()..].eq_ignore_ascii_case(line.as_bytes())
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

        fn is_link_list(line: &str) -> bool {
            let items = items(line);
            items.len() >= 3
                && items.iter().enumerate().all(|(n, it)| {
                    let w = words(it);
                    let label_ok = n == 0 && it.contains([':', '：']);
                    w <= SHORT_ITEM_WORDS + usize::from(label_ok) * 2
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
            site_name_strategy()
                .prop_map(|name| format!("© 2009-2024 {name}. All rights reserved.")),
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
