//! Text analysis for fingerprints: normalisation and tokenisation, as a tantivy tokenizer.
//!
//! [`SimhashTokenizer`] is the analysis stage of the built-in schemes. It is a plain tantivy
//! [`Tokenizer`], so the very same analysis can index a text field (register it under
//! [`SIMHASH_TOKENIZER_NAME`]): one notion of a word for search and for near-duplicates.
//!
//! What it does, per run of characters:
//! - a run of Han ideographs is folded to Simplified Chinese (character level, [`fast2s`]) and cut
//!   by jieba in default mode (no overlapping search-mode tokens), or into single characters;
//! - any other run of alphanumeric characters is one word, folded by Unicode NFKC and full case
//!   folding (so `ＡＢＣ`, `abc` and `ABC` are one word);
//! - everything else (spaces, punctuation, symbols, HTML entity names such as `&amp;`) separates
//!   tokens and is dropped, so formatting-only changes give the same tokens.
//!
//! Token offsets point into the original text (normalisation never moves a token), so the
//! tokenizer is fit for highlighting.

use caseless::default_case_fold_str;
use serde::{Deserialize, Serialize};
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// The name under which [`crate::register_tokenizer`] registers the built-in analysis.
pub const SIMHASH_TOKENIZER_NAME: &str = "simhash";

/// Words longer than this many characters are split into pieces of this length, so junk input
/// (a megabyte without a space) cannot make a token tantivy refuses to index.
pub(crate) const MAX_TOKEN_CHARS: usize = 64;

/// Han runs longer than this many bytes are cut by jieba in pieces, bounding its memory.
const MAX_JIEBA_RUN_BYTES: usize = 1 << 16;

/// How runs of Han ideographs are split into tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum HanSegmentation {
    /// jieba-rs, default (non-overlapping) mode, with its HMM for unknown words.
    #[default]
    Jieba,
    /// Every Han character is a token (as in the evaluation's resemblance measure).
    Chars,
}

/// Which normalisations run before features are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Normalization {
    /// Unicode NFKC (full-width letters and digits, ligatures, compatibility ideographs).
    pub nfkc: bool,
    /// Unicode full case folding (`Straße` and `STRASSE` agree).
    pub case_fold: bool,
    /// Traditional to Simplified Chinese, character level (fast2s, MIT licence).
    pub traditional_to_simplified: bool,
}

impl Default for Normalization {
    fn default() -> Self {
        Normalization {
            nfkc: true,
            case_fold: true,
            traditional_to_simplified: true,
        }
    }
}

impl Normalization {
    pub(crate) fn id(&self) -> String {
        let mut parts = Vec::new();
        if self.nfkc {
            parts.push("nfkc");
        }
        if self.case_fold {
            parts.push("fold");
        }
        if self.traditional_to_simplified {
            parts.push("t2s");
        }
        if parts.is_empty() {
            "none".to_string()
        } else {
            parts.join("+")
        }
    }

    /// Normalises a whole text (for user analyzers, which see the normalised text). Cost: one
    /// pass over the text per enabled step, each allocating a new string; cannot fail.
    pub fn apply(&self, text: &str) -> String {
        let mut s: String = if self.nfkc {
            text.nfkc().collect()
        } else {
            text.to_string()
        };
        if self.case_fold {
            s = default_case_fold_str(&s);
        }
        if self.traditional_to_simplified && s.chars().any(is_han) {
            s = fast2s::convert(&s);
        }
        s
    }

    fn word(&self, word: &str, out: &mut String) {
        out.clear();
        if word.is_ascii() {
            out.push_str(word);
            if self.case_fold {
                out.make_ascii_lowercase();
            }
            return;
        }
        if self.nfkc {
            let folded: String = word.nfkc().collect();
            if self.case_fold {
                out.push_str(&default_case_fold_str(&folded));
            } else {
                out.push_str(&folded);
            }
        } else if self.case_fold {
            out.push_str(&default_case_fold_str(word));
        } else {
            out.push_str(word);
        }
    }

    /// Normalises a Han run without changing its byte length, so offsets stay valid.
    fn han_run(&self, run: &str) -> String {
        let mut s = String::with_capacity(run.len());
        for c in run.chars() {
            let mut mapped = c;
            if self.nfkc && is_compat_ideograph(c) {
                let mut it = std::iter::once(c).nfkc();
                if let (Some(n), None) = (it.next(), it.next()) {
                    if n.len_utf8() == c.len_utf8() {
                        mapped = n;
                    }
                }
            }
            s.push(mapped);
        }
        if self.traditional_to_simplified {
            let converted = fast2s::convert(&s);
            if converted.len() == s.len() {
                return converted;
            }
        }
        s
    }
}

/// Whether `c` is a Han ideograph (CJK unified, extensions, compatibility).
pub(crate) fn is_han(c: char) -> bool {
    matches!(c as u32,
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2A6DF
        | 0x2A700..=0x2EBEF | 0x2F800..=0x2FA1F | 0x30000..=0x3134F)
}

fn is_compat_ideograph(c: char) -> bool {
    matches!(c as u32, 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

/// The built-in analysis as a tantivy tokenizer (the analysis of a [`Scheme`](crate::Scheme)).
///
/// ```
/// use tantivy::tokenizer::{TextAnalyzer, TokenStream};
/// use tantivy_simhash::SimhashTokenizer;
///
/// let mut analyzer = TextAnalyzer::from(SimhashTokenizer::default());
/// let mut stream = analyzer.token_stream("Ｈello, 軟體開發 &amp; WORLD!");
/// let mut words = Vec::new();
/// while let Some(token) = stream.next() {
///     words.push(token.text.clone());
/// }
/// assert_eq!(words, ["hello", "软体", "开发", "world"]);
/// ```
#[derive(Clone)]
pub struct SimhashTokenizer {
    normalization: Normalization,
    han: HanSegmentation,
    jieba: tantivy_jieba::JiebaTokenizer,
    /// Token buffers reused across texts: their strings keep their allocations.
    tokens: Vec<Token>,
    scratch: String,
}

impl Default for SimhashTokenizer {
    fn default() -> Self {
        SimhashTokenizer::new(Normalization::default(), HanSegmentation::default())
    }
}

impl std::fmt::Debug for SimhashTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimhashTokenizer")
            .field("normalization", &self.normalization)
            .field("han", &self.han)
            .finish()
    }
}

impl SimhashTokenizer {
    /// A tokenizer with the given normalisation and Han segmentation. Cheap: every tokenizer
    /// shares jieba's one global dictionary; its buffers are empty until the first text.
    pub fn new(normalization: Normalization, han: HanSegmentation) -> Self {
        SimhashTokenizer {
            normalization,
            han,
            // Shares jieba's global dictionary: cloning this tokenizer is cheap.
            jieba: tantivy_jieba::JiebaTokenizer::with_search_mode(false),
            tokens: Vec::new(),
            scratch: String::new(),
        }
    }

    /// Calls `sink(token, offset_from, offset_to)` for every token of `text`, in order: the
    /// tokens [`Tokenizer::token_stream`] gives, without building them (no allocation per
    /// token), for callers that only read them, such as fingerprinting.
    pub(crate) fn for_each_token(&mut self, text: &str, sink: &mut dyn FnMut(&str, usize, usize)) {
        let bytes = text.as_bytes();
        let mut iter = text.char_indices().peekable();
        while let Some((start, c)) = iter.next() {
            if is_han(c) {
                // A Han run continues across whitespace (a line wrapped inside a sentence), so
                // re-wrapping Chinese text does not change how jieba cuts it.
                let mut run = String::new();
                let mut origins = Vec::new();
                run.push(c);
                origins.push(start);
                let mut end = start + c.len_utf8();
                loop {
                    let mut ahead = iter.clone();
                    while ahead.peek().is_some_and(|&(_, d)| d.is_whitespace()) {
                        ahead.next();
                    }
                    match ahead.peek() {
                        Some(&(i, d)) if is_han(d) => {
                            run.push(d);
                            origins.push(i);
                            end = i + d.len_utf8();
                            ahead.next();
                            iter = ahead;
                        }
                        _ => break,
                    }
                }
                origins.push(end);
                self.han_run(&run, &origins, sink);
            } else if c.is_alphanumeric() {
                let mut end = start + c.len_utf8();
                while let Some(&(i, d)) = iter.peek() {
                    // A combining mark belongs to the word it follows: NFKC composes it
                    // with its base letter (e + U+0301 = é), so decomposed text is no change.
                    if is_han(d)
                        || !(d.is_alphanumeric() || (!d.is_ascii() && is_combining_mark(d)))
                    {
                        break;
                    }
                    end = i + d.len_utf8();
                    iter.next();
                }
                if is_entity_name(bytes, start, end) {
                    continue;
                }
                let mut word = std::mem::take(&mut self.scratch);
                self.normalization.word(&text[start..end], &mut word);
                emit(&word, start, end, sink);
                self.scratch = word;
            }
        }
    }

    /// `origins[i]` is the original byte offset of the run's i-th character (plus the end).
    fn han_run(&mut self, run: &str, origins: &[usize], sink: &mut dyn FnMut(&str, usize, usize)) {
        let normalized = self.normalization.han_run(run);
        match self.han {
            HanSegmentation::Chars => {
                for (n, c) in normalized.chars().enumerate() {
                    let mut buf = [0u8; 4];
                    let s: &str = c.encode_utf8(&mut buf);
                    emit(s, origins[n], origins[n] + c.len_utf8(), sink);
                }
            }
            HanSegmentation::Jieba => {
                let mut chunk_start = 0;
                let mut chars_before = 0;
                while chunk_start < normalized.len() {
                    let mut chunk_end = (chunk_start + MAX_JIEBA_RUN_BYTES).min(normalized.len());
                    while !normalized.is_char_boundary(chunk_end) {
                        chunk_end -= 1;
                    }
                    let chunk = &normalized[chunk_start..chunk_end];
                    let mut stream = self.jieba.token_stream(chunk);
                    let mut cut: Vec<(usize, usize)> = Vec::new();
                    while let Some(token) = stream.next() {
                        if token.text.chars().any(char::is_alphanumeric) {
                            cut.push((token.offset_from, token.offset_to));
                        }
                    }
                    let mut char_index = chars_before;
                    let mut last_byte = 0;
                    for (from, to) in cut {
                        char_index += chunk[last_byte..from].chars().count();
                        let n_chars = chunk[from..to].chars().count();
                        let (o_from, o_to) = (
                            origins[char_index],
                            origins[char_index + n_chars - 1]
                                + chunk[from..to].chars().last().map_or(0, char::len_utf8),
                        );
                        emit(&chunk[from..to], o_from, o_to, sink);
                        char_index += n_chars;
                        last_byte = to;
                    }
                    chars_before += chunk.chars().count();
                    chunk_start = chunk_end;
                }
            }
        }
    }
}

/// Gives `word` to `sink`, split into pieces of at most [`MAX_TOKEN_CHARS`] characters.
fn emit(word: &str, from: usize, to: usize, sink: &mut dyn FnMut(&str, usize, usize)) {
    let mut rest = word;
    while !rest.is_empty() {
        let end = rest
            .char_indices()
            .nth(MAX_TOKEN_CHARS)
            .map_or(rest.len(), |(i, _)| i);
        sink(&rest[..end], from, to);
        rest = &rest[end..];
    }
}

/// `&amp;`, `&#39;`, `&#x27;`: an entity name is encoding, not text.
fn is_entity_name(bytes: &[u8], start: usize, end: usize) -> bool {
    if end - start > 10 || bytes.get(end) != Some(&b';') {
        return false;
    }
    match start.checked_sub(1).map(|i| bytes[i]) {
        Some(b'&') => true,
        Some(b'#') => start >= 2 && bytes[start - 2] == b'&',
        _ => false,
    }
}

/// The token stream of [`SimhashTokenizer`].
pub struct SimhashTokenStream<'a> {
    tokens: &'a mut [Token],
    next: usize,
    // What `token()` shows before the first `advance()` or on an empty text.
    empty: Token,
}

impl TokenStream for SimhashTokenStream<'_> {
    fn advance(&mut self) -> bool {
        if self.next < self.tokens.len() {
            self.next += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &Token {
        match self.next.checked_sub(1) {
            Some(i) => &self.tokens[i],
            None => &self.empty,
        }
    }

    fn token_mut(&mut self) -> &mut Token {
        match self.next.checked_sub(1) {
            Some(i) => &mut self.tokens[i],
            None => &mut self.empty,
        }
    }
}

impl Tokenizer for SimhashTokenizer {
    type TokenStream<'a> = SimhashTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> SimhashTokenStream<'a> {
        self.token_stream_with(text, &mut |_, _, _| {})
    }
}

impl SimhashTokenizer {
    /// [`Tokenizer::token_stream`], also giving each token (its text and byte offsets in
    /// `text`) to `also` as it is cut: one analysis for the index and a signature
    /// (`crate::replay`'s signing on the indexing thread).
    pub(crate) fn token_stream_with<'a>(
        &'a mut self,
        text: &'a str,
        also: &mut dyn FnMut(&str, usize, usize),
    ) -> SimhashTokenStream<'a> {
        let mut tokens = std::mem::take(&mut self.tokens);
        let mut len = 0;
        self.for_each_token(text, &mut |word, from, to| {
            also(word, from, to);
            if len == tokens.len() {
                tokens.push(Token::default());
            }
            let t = &mut tokens[len];
            t.text.clear();
            t.text.push_str(word);
            (t.offset_from, t.offset_to, t.position, t.position_length) = (from, to, len, 1);
            len += 1;
        });
        self.tokens = tokens;
        SimhashTokenStream {
            tokens: &mut self.tokens[..len],
            next: 0,
            empty: Token::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str, han: HanSegmentation) -> Vec<String> {
        let mut t = SimhashTokenizer::new(Normalization::default(), han);
        let mut s = t.token_stream(text);
        let mut out = Vec::new();
        while let Some(tok) = s.next() {
            out.push(tok.text.clone());
        }
        out
    }

    #[test]
    fn formatting_only_changes_give_the_same_tokens() {
        let a = words("The “quick” brown fox, 2 times.", HanSegmentation::Jieba);
        let b = words(
            "the \"QUICK\"\r\n  brown   fox , ２ times",
            HanSegmentation::Jieba,
        );
        assert_eq!(a, b);
        assert_eq!(a, ["the", "quick", "brown", "fox", "2", "times"]);
    }

    #[test]
    fn entities_are_dropped() {
        assert_eq!(
            words("a &amp; b &#39;c&#x27; &nbsp;d", HanSegmentation::Jieba),
            ["a", "b", "c", "d"]
        );
        // Not an entity: no `&` before or no `;` after.
        assert_eq!(words("amp; &amp", HanSegmentation::Jieba), ["amp", "amp"]);
    }

    #[test]
    fn han_is_folded_and_segmented() {
        assert_eq!(
            words("我們的軟體", HanSegmentation::Chars),
            ["我", "们", "的", "软", "体"]
        );
        let jieba = words("我们在北京大学学习。", HanSegmentation::Jieba);
        assert!(jieba.contains(&"北京大学".to_string()), "{jieba:?}");
        assert_eq!(words("我們在北京大學學習", HanSegmentation::Jieba), jieba);
    }

    #[test]
    fn wrapped_chinese_is_cut_as_one_run() {
        let one = words("我们在北京大学学习计算机科学。", HanSegmentation::Jieba);
        let wrapped = words(
            "我们在北京大\n学学习计算机\r\n  科学。",
            HanSegmentation::Jieba,
        );
        assert_eq!(one, wrapped);
    }

    #[test]
    fn offsets_point_into_the_original_text() {
        let text = "Ｆoo 軟體開\n發 BAR 北京大学";
        let mut t = SimhashTokenizer::default();
        let mut s = t.token_stream(text);
        while let Some(tok) = s.next() {
            let original: String = text[tok.offset_from..tok.offset_to]
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            assert_eq!(Normalization::default().apply(&original), tok.text);
        }
    }

    #[test]
    fn long_words_are_split() {
        let long = "x".repeat(MAX_TOKEN_CHARS * 2 + 3);
        let w = words(&long, HanSegmentation::Jieba);
        assert_eq!(w.len(), 3);
        assert_eq!(w.concat(), long);
    }

    #[test]
    fn empty_and_junk_input() {
        assert!(words("", HanSegmentation::Jieba).is_empty());
        assert!(words("!!! ... ---\u{FFFD}\u{0}", HanSegmentation::Jieba).is_empty());
        let mut t = SimhashTokenizer::default();
        let mut s = t.token_stream("");
        assert!(!s.advance());
    }
}
