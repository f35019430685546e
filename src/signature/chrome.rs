//! Site chrome by shape: which lines of a page (and which line tails) are navigation, a site
//! name or a footer that repeats it, read from the page alone (no corpus statistics).
//!
//! Three shapes, each one the way a page template writes chrome, none the way prose is written:
//!
//! - **Link lists**: a line of at least 3 short items separated by a spaced separator
//!   (`Home | Docs | Blog`, `首页 · 新闻 · 文档`, `You are here: Home > Docs > Install`), with no
//!   sentence punctuation in any item, and each item closing the brackets it opens. Runs of
//!   spaces alone never separate items: spacing is layout (a table's columns), which
//!   re-wrapping and width changes rewrite. A separator inside brackets is syntax, an
//!   alternation in a grammar or a command synopsis (`OPTIONS := { -j[son] | -p[retty] }`),
//!   not navigation; a list wrapped whole in brackets (`[ Home | Docs | Blog ]`) is still one.
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

/// How an item of a line holds ASCII brackets (`()`, `[]`, `{}`, of any kind alike).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Brackets {
    /// Every bracket it opens it closes, and it closes none it did not open.
    Closed,
    /// Closed but for one opening bracket that starts it (`[ Home`: the first item of a list
    /// wrapped in brackets).
    OpensList,
    /// Closed but for one closing bracket that ends it (`Blog ]`: the last item of one).
    ClosesList,
    /// Anything else: a separator next to it lies inside brackets (`OPTIONS := { -j[son]`).
    Open,
}

/// How `item` (trimmed) holds brackets. Cost: one pass over its bytes (brackets are ASCII).
fn brackets(item: &str) -> Brackets {
    let item = item.trim();
    let depths = |s: &str| {
        let (mut depth, mut lowest) = (0i64, 0i64);
        for b in s.bytes() {
            match b {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                _ => continue,
            }
            lowest = lowest.min(depth);
        }
        (depth, lowest)
    };
    let (depth, lowest) = depths(item);
    if (depth, lowest) == (0, 0) {
        return Brackets::Closed;
    }
    let opens = item.starts_with(['(', '[', '{']);
    if opens && depths(&item[1..]) == (0, 0) {
        return Brackets::OpensList;
    }
    let closes = item.ends_with([')', ']', '}']);
    if closes && depths(&item[..item.len() - 1]) == (0, 0) {
        return Brackets::ClosesList;
    }
    Brackets::Open
}

/// At least 3 non-blank items, each of at most [`SHORT_ITEM_WORDS`] words and without
/// sentence punctuation (the first may be a label: `You are here:`, `当前位置：首页`), each
/// closing the brackets it opens ([`Brackets`]: but the first may open and the last close the
/// brackets around the whole list).
fn is_link_list(line: &str) -> bool {
    let mut items = 0usize;
    // The previous item closed the brackets around a list: it must be the last.
    let mut closed_list = false;
    let all_short = for_each_item(line, |item| {
        if item.trim().is_empty() {
            return true;
        }
        if closed_list {
            return false;
        }
        let label_ok = items == 0 && item.contains([':', '：']);
        let bracketed = match brackets(item) {
            Brackets::Closed => true,
            Brackets::OpensList => items == 0,
            Brackets::ClosesList => {
                closed_list = true;
                true
            }
            Brackets::Open => false,
        };
        items += 1;
        let limit = SHORT_ITEM_WORDS + usize::from(label_ok) * 2;
        bracketed && words_within(item, limit).is_some() && !has_sentence_punctuation(item)
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
mod tests;
