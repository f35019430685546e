//! Words of a text with their place in it, the evaluation's resemblance over them, and a
//! word-level alignment of two texts.
//!
//! The words are those of the evaluation's resemblance (its `tools/shingles.py`): after NFKC
//! and case folding, every Han ideograph is a word and so is every other run of word
//! characters (letters, digits, `_`). They are read from the normalised text, and each keeps
//! the byte range of the original text it came from, so an alignment can be shown on the text
//! as written.

use serde::Serialize;
use similar::{Algorithm, DiffOp};
use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::time::{Duration, Instant};
use unicode_normalization::char::canonical_combining_class;
use unicode_normalization::UnicodeNormalization;
use xxhash_rust::xxh3::xxh3_64;

/// The Han ideographs the evaluation's tokeniser splits one by one (its `_HAN` class).
fn is_han(c: char) -> bool {
    matches!(c as u32,
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2EBEF)
}

/// A character of a word run (Python's `\w`, approximately: letters, digits, `_`).
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The words of a text: normalised forms, and where each lies in the original text.
#[derive(Clone, Debug, Default)]
pub(crate) struct Words {
    /// The normalised words.
    pub(crate) words: Vec<String>,
    /// Byte range of each word in the original text.
    pub(crate) spans: Vec<Range<usize>>,
}

impl Words {
    /// Splits `text`. Normalisation runs per segment of the original text that starts at a
    /// character of combining class 0 (so a combining mark normalises with its base, and
    /// every normalised character maps back to the segment it came from). Cost: one pass,
    /// a few allocations per word.
    pub(crate) fn of(text: &str) -> Words {
        Words::split(text, true)
    }

    /// [`Words::of`], with or without its shortcut for ASCII characters (the tests compare
    /// the two).
    fn split(text: &str, ascii_shortcut: bool) -> Words {
        let mut out = Words::default();
        let mut current = String::new();
        let mut current_span: Option<Range<usize>> = None;
        let mut segment = String::new();
        let mut chars = text.char_indices().peekable();
        while let Some((start, c)) = chars.next() {
            let mut end = start + c.len_utf8();
            while let Some(&(i, next)) = chars.peek() {
                if canonical_combining_class(next) == 0 {
                    break;
                }
                end = i + next.len_utf8();
                chars.next();
            }
            let mut take = |n: char| {
                if is_han(n) {
                    out.end_word(&mut current, &mut current_span);
                    out.words.push(n.to_string());
                    out.spans.push(start..end);
                } else if is_word(n) {
                    current.push(n);
                    match &mut current_span {
                        Some(s) => s.end = end,
                        None => current_span = Some(start..end),
                    }
                } else {
                    out.end_word(&mut current, &mut current_span);
                }
            };
            if ascii_shortcut && c.is_ascii() && end == start + 1 {
                // NFKC leaves an ASCII character as it is and case folding lowercases it: no
                // allocation for most characters of most texts (the general path was a seventh
                // of the CPU time of the report of natural-en).
                take(c.to_ascii_lowercase());
                continue;
            }
            segment.clear();
            let nfkc: String = text[start..end].nfkc().collect();
            segment.push_str(&caseless::default_case_fold_str(&nfkc));
            for n in segment.chars() {
                take(n);
            }
        }
        out.end_word(&mut current, &mut current_span);
        out
    }

    /// Ends the word being read, if any.
    fn end_word(&mut self, current: &mut String, span: &mut Option<Range<usize>>) {
        if let Some(s) = span.take() {
            self.words.push(std::mem::take(current));
            self.spans.push(s);
        }
    }

    /// The word 3-shingles, hashed (a text of fewer words has one shingle: all of them).
    pub(crate) fn shingles(&self) -> HashSet<u64> {
        let hash = |w: &[String]| xxh3_64(w.join(" ").as_bytes());
        if self.words.is_empty() {
            HashSet::new()
        } else if self.words.len() < 3 {
            std::iter::once(hash(&self.words)).collect()
        } else {
            self.words.windows(3).map(hash).collect()
        }
    }
}

/// Jaccard of two sets (1 when both are empty, as the evaluation defines it), and the size of
/// their intersection.
pub(crate) fn jaccard(a: &HashSet<u64>, b: &HashSet<u64>) -> (f64, usize) {
    if a.is_empty() && b.is_empty() {
        return (1.0, 0);
    }
    let shared = a.intersection(b).count();
    (shared as f64 / (a.len() + b.len() - shared) as f64, shared)
}

/// What a run of an [`Alignment`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    /// The same words on both sides.
    Equal,
    /// Words of `a` that `b` lacks.
    Delete,
    /// Words of `b` that `a` lacks.
    Insert,
    /// Words of `a` that `b` has at another place (`b` says where): a block moved away.
    MoveFrom,
    /// Words of `b` that `a` has at another place (`a` says where): a block moved here.
    MoveTo,
}

/// A run of an alignment: word ranges of each side (an empty range on the side a run does not
/// touch, placed where it would be).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Run {
    /// What the run is.
    pub kind: RunKind,
    /// Words of `a` (indexes into [`Alignment::a`]; JSON: `[start, end]`).
    #[serde(serialize_with = "pair")]
    pub a: Range<usize>,
    /// Words of `b`.
    #[serde(serialize_with = "pair")]
    pub b: Range<usize>,
}

fn pair<S: serde::Serializer>(r: &Range<usize>, s: S) -> Result<S::Ok, S::Error> {
    [r.start, r.end].serialize(s)
}

fn pairs<S: serde::Serializer>(v: &[Range<usize>], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let mut seq = s.serialize_seq(Some(v.len()))?;
    for r in v {
        seq.serialize_element(&[r.start, r.end])?;
    }
    seq.end()
}

/// A word-level alignment of two texts, by the `similar` crate's diff (patience, with a time
/// bound); a run of at least [`MIN_MOVED_WORDS`] words that one side deleted and the other
/// inserted elsewhere, word for word, is marked [`RunKind::MoveFrom`] where `a` has it and
/// [`RunKind::MoveTo`] where `b` has it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Alignment {
    /// Byte ranges, in text `a`, of its words (JSON: `[start, end]` pairs).
    #[serde(serialize_with = "pairs")]
    pub a: Vec<Range<usize>>,
    /// Byte ranges, in text `b`, of its words.
    #[serde(serialize_with = "pairs")]
    pub b: Vec<Range<usize>>,
    /// The runs, in the order of `a` then `b` (as the diff reports them).
    pub runs: Vec<Run>,
    /// Whether the diff hit its time bound ([`ALIGNMENT_DEADLINE`]); the alignment is then
    /// valid but coarser (longer delete and insert runs) than the best.
    pub timed_out: bool,
}

impl Alignment {
    /// Words in runs of each kind: `(equal, deleted, inserted, moved)`, a moved block
    /// counted once.
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        let mut c = (0, 0, 0, 0);
        for r in &self.runs {
            match r.kind {
                RunKind::Equal => c.0 += r.a.len(),
                RunKind::Delete => c.1 += r.a.len(),
                RunKind::Insert => c.2 += r.b.len(),
                RunKind::MoveFrom => c.3 += r.a.len(),
                RunKind::MoveTo => {}
            }
        }
        c
    }

    /// For each side, the word indexes an alignment marks as changed: `a`'s deleted or
    /// moved-away words, `b`'s inserted or moved-here words, each with its kind, in order.
    pub fn marked_words(&self) -> [Vec<(usize, RunKind)>; 2] {
        let mut out = [Vec::new(), Vec::new()];
        for r in &self.runs {
            match r.kind {
                RunKind::Delete | RunKind::MoveFrom => {
                    out[0].extend(r.a.clone().map(|i| (i, r.kind)))
                }
                RunKind::Insert | RunKind::MoveTo => {
                    out[1].extend(r.b.clone().map(|i| (i, r.kind)))
                }
                RunKind::Equal => {}
            }
        }
        out
    }
}

/// Moved runs need at least this many words: shorter common runs ("of the") are everywhere.
pub const MIN_MOVED_WORDS: usize = 4;

/// The time bound of one alignment's diff; beyond it `similar` falls back to a coarser one.
pub const ALIGNMENT_DEADLINE: Duration = Duration::from_millis(200);

/// Aligns the words of two texts.
pub(crate) fn align(a: &Words, b: &Words) -> Alignment {
    let started = Instant::now();
    let deadline = started + ALIGNMENT_DEADLINE;
    let ops = similar::capture_diff_slices_deadline(
        Algorithm::Patience,
        &a.words,
        &b.words,
        Some(deadline),
    );
    let timed_out = Instant::now() >= deadline;
    let mut runs: Vec<Run> = Vec::with_capacity(ops.len());
    for op in ops {
        match op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => runs.push(Run {
                kind: RunKind::Equal,
                a: old_index..old_index + len,
                b: new_index..new_index + len,
            }),
            DiffOp::Delete {
                old_index,
                old_len,
                new_index,
            } => runs.push(Run {
                kind: RunKind::Delete,
                a: old_index..old_index + old_len,
                b: new_index..new_index,
            }),
            DiffOp::Insert {
                old_index,
                new_index,
                new_len,
            } => runs.push(Run {
                kind: RunKind::Insert,
                a: old_index..old_index,
                b: new_index..new_index + new_len,
            }),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                runs.push(Run {
                    kind: RunKind::Delete,
                    a: old_index..old_index + old_len,
                    b: new_index..new_index,
                });
                runs.push(Run {
                    kind: RunKind::Insert,
                    a: old_index + old_len..old_index + old_len,
                    b: new_index..new_index + new_len,
                });
            }
        }
    }
    mark_moves(&mut runs, a, b);
    Alignment {
        a: a.spans.clone(),
        b: b.spans.clone(),
        runs,
        timed_out,
    }
}

/// Finds moved blocks: stretches of at least [`MIN_MOVED_WORDS`] words of a deleted run that
/// an inserted run holds word for word (wherever the diff put the runs' edges), and splits
/// the runs so that those stretches become [`RunKind::MoveFrom`] (in `a`) and
/// [`RunKind::MoveTo`] (in `b`). Each inserted word is used by one move at most. Cost: a hash
/// of each window of [`MIN_MOVED_WORDS`] inserted words, one lookup per deleted word.
fn mark_moves(runs: &mut Vec<Run>, a: &Words, b: &Words) {
    const W: usize = MIN_MOVED_WORDS;
    // Which inserted run each word of `b` is in (usize::MAX: none).
    let mut run_of_b = vec![usize::MAX; b.words.len()];
    let mut windows: HashMap<&[String], Vec<usize>> = HashMap::new();
    for (i, r) in runs.iter().enumerate() {
        if r.kind == RunKind::Insert && r.b.len() >= W {
            for j in r.b.clone() {
                run_of_b[j] = i;
            }
            for j in r.b.start..=r.b.end - W {
                windows.entry(&b.words[j..j + W]).or_default().push(j);
            }
        }
    }
    if windows.is_empty() {
        return;
    }
    let mut used = vec![false; b.words.len()];
    // Moves as (a range, b range).
    let mut moves: Vec<(Range<usize>, Range<usize>)> = Vec::new();
    for r in runs.iter() {
        if r.kind != RunKind::Delete || r.a.len() < W {
            continue;
        }
        let mut i = r.a.start;
        while i + W <= r.a.end {
            let hit = windows.get(&a.words[i..i + W]).and_then(|starts| {
                starts
                    .iter()
                    .copied()
                    .find(|&j| (j..j + W).all(|x| !used[x]))
            });
            let Some(j) = hit else {
                i += 1;
                continue;
            };
            let run = run_of_b[j];
            let mut len = W;
            while i + len < r.a.end
                && j + len < b.words.len()
                && run_of_b[j + len] == run
                && !used[j + len]
                && a.words[i + len] == b.words[j + len]
            {
                len += 1;
            }
            used[j..j + len].iter_mut().for_each(|u| *u = true);
            moves.push((i..i + len, j..j + len));
            i += len;
        }
    }
    if moves.is_empty() {
        return;
    }
    let mut by_a = moves.clone();
    by_a.sort_by_key(|m| m.0.start);
    let mut by_b = moves;
    by_b.sort_by_key(|m| m.1.start);
    let mut out = Vec::with_capacity(runs.len() + 2 * by_a.len());
    for r in runs.drain(..) {
        match r.kind {
            RunKind::Delete => {
                let mut at = r.a.start;
                for (ma, mb) in by_a
                    .iter()
                    .filter(|m| m.0.start >= r.a.start && m.0.end <= r.a.end)
                {
                    if ma.start > at {
                        out.push(Run {
                            kind: RunKind::Delete,
                            a: at..ma.start,
                            b: r.b.clone(),
                        });
                    }
                    out.push(Run {
                        kind: RunKind::MoveFrom,
                        a: ma.clone(),
                        b: mb.clone(),
                    });
                    at = ma.end;
                }
                if at < r.a.end {
                    out.push(Run {
                        kind: RunKind::Delete,
                        a: at..r.a.end,
                        b: r.b.clone(),
                    });
                }
            }
            RunKind::Insert => {
                let mut at = r.b.start;
                for (ma, mb) in by_b
                    .iter()
                    .filter(|m| m.1.start >= r.b.start && m.1.end <= r.b.end)
                {
                    if mb.start > at {
                        out.push(Run {
                            kind: RunKind::Insert,
                            a: r.a.clone(),
                            b: at..mb.start,
                        });
                    }
                    out.push(Run {
                        kind: RunKind::MoveTo,
                        a: ma.clone(),
                        b: mb.clone(),
                    });
                    at = mb.end;
                }
                if at < r.b.end {
                    out.push(Run {
                        kind: RunKind::Insert,
                        a: r.a.clone(),
                        b: at..r.b.end,
                    });
                }
            }
            _ => out.push(r),
        }
    }
    *runs = out;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ascii_shortcut_changes_nothing() {
        let alphabet: Vec<char> = "aZ09 _-.,\n\tÉé\u{301}\u{308}ﬁＡ软件ß İ½①"
            .chars()
            .collect();
        let mut rng = crate::test_rng::Rng(3);
        for _ in 0..2000 {
            let len = rng.below(24) as usize;
            let text: String = (0..len)
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect();
            let (fast, general) = (Words::split(&text, true), Words::split(&text, false));
            assert_eq!(fast.words, general.words, "{text:?}");
            assert_eq!(fast.spans, general.spans, "{text:?}");
        }
    }

    #[test]
    fn words_follow_the_evaluation_tokeniser_and_keep_original_spans() {
        let text = "Ｈｅｌｌｏ, World_2! 软件开发 e\u{301}te";
        let w = Words::of(text);
        assert_eq!(w.words, ["hello", "world_2", "软", "件", "开", "发", "éte"]);
        let shown: Vec<&str> = w.spans.iter().map(|s| &text[s.clone()]).collect();
        assert_eq!(
            shown,
            [
                "Ｈｅｌｌｏ",
                "World_2",
                "软",
                "件",
                "开",
                "发",
                "e\u{301}te"
            ]
        );
    }

    #[test]
    fn alignment_finds_edits_and_moves() {
        let a = Words::of("one two three four five six seven eight nine ten eleven twelve");
        let b = Words::of("one two three four nine ten eleven twelve five six seven eight");
        let al = align(&a, &b);
        let moved: Vec<&Run> = al
            .runs
            .iter()
            .filter(|r| matches!(r.kind, RunKind::MoveFrom | RunKind::MoveTo))
            .collect();
        assert_eq!(moved.len(), 2, "{:?}", al.runs);
        assert_eq!(al.counts(), (8, 0, 0, 4));
        assert!(moved
            .iter()
            .all(|r| a.words[r.a.clone()] == b.words[r.b.clone()]));
        let c = Words::of("one two three four");
        let d = Words::of("one 2 three four five");
        let al = align(&c, &d);
        assert_eq!(al.counts(), (3, 1, 2, 0));
    }
}
