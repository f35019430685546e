//! Splitting a signing pass's tokens back into the document's text values, cutting again the
//! Han runs that cross the line break joining two values.

use super::staged::{
    LoggedToken, StagedTokens, StagedValue, StagingBuffers, StagingPool, TokenLog, ValueSpan,
};
use crate::fingerprint::is_han;
use std::ops::Range;
use std::sync::Arc;

/// Cuts `text` as the built-in tokenizer does, calling the sink with each token and its byte
/// offsets in `text`.
pub(super) type Retokenize<'a> = &'a mut dyn FnMut(&str, &mut dyn FnMut(&str, usize, usize));

/// Splits the tokens of the joined `text` back into its values, for the values whose field is
/// indexed with the replaying tokenizer. A value gets exactly the tokens analysing it alone
/// gives: the built-in tokenizer cuts text run by run, and only a Han run can continue across
/// the line break that joins two values (a wrapped line), where jieba cuts the joined run as a
/// whole; such a run is cut again within the value alone (`retokenize`, a few characters up
/// to the next punctuation), every other token is taken from the log. `None` when no value is
/// staged.
pub(super) fn stage(
    analysis: u64,
    text: String,
    spans: &[ValueSpan],
    log: TokenLog,
    mut values: Vec<StagedValue>,
    pool: &Arc<StagingPool>,
    retokenize: Retokenize<'_>,
) -> Option<Arc<StagedTokens>> {
    if log.overflow || !spans.iter().any(|s| s.replayable) {
        pool.give(StagingBuffers {
            text,
            token_text: log.text,
            tokens: log.tokens,
            values,
        });
        return None;
    }
    let logged = log.tokens.len();
    values.clear();
    let mut staging = Staging {
        token_text: log.text,
        tokens: log.tokens,
        values,
    };
    let mut next = 0;
    for span in spans {
        // The logged tokens that start in this value (spans and tokens are in text order).
        let r = &span.range;
        while next < logged && (staging.tokens[next].from as usize) < r.start {
            next += 1;
        }
        let first = next;
        while next < logged && (staging.tokens[next].from as usize) < r.end {
            next += 1;
        }
        if span.replayable {
            staging.value(&text, r.clone(), first..next, retokenize);
        }
    }
    // Dropped at once when no value is staged: the buffers go back to the pool.
    let staged = StagedTokens {
        analysis,
        text,
        values: staging.values,
        token_text: staging.token_text,
        tokens: staging.tokens,
        pool: Arc::clone(pool),
    };
    (!staged.values.is_empty()).then(|| Arc::new(staged))
}

/// The tokens [`stage`] has split so far.
struct Staging {
    token_text: String,
    /// The log, then the tokens cut again.
    tokens: Vec<LoggedToken>,
    values: Vec<StagedValue>,
}

impl Staging {
    /// Stages the value at `r` of the joined `text` with its own tokens: the logged ones
    /// (`logged`, indices of those that start in it), except that a Han run continued across
    /// either end is cut again within the value. Nothing is staged for it when an offset does
    /// not fit in 32 bits.
    fn value(
        &mut self,
        text: &str,
        r: Range<usize>,
        logged: Range<usize>,
        retokenize: Retokenize<'_>,
    ) {
        let Ok(base) = u32::try_from(r.start) else {
            return;
        };
        let value = &text[r.clone()];
        let (lead, trail) = han_run_crosses(text, &r);
        // The part of the value whose logged tokens are its own: after a Han run continued
        // from the previous value, before one continued into the next.
        let own_from = if lead { leading_han_run_end(value) } else { 0 };
        let own_to = if trail {
            trailing_han_run_start(value)
        } else {
            value.len()
        };
        let appended = self.tokens.len();
        let none = (0, 0);
        let parts = if own_from >= own_to && (lead || trail) {
            // One Han run from end to end: cut the whole value again.
            self.cut_again(value, r.start, 0..value.len(), retokenize)
                .map(|all| [all, none, none])
        } else {
            let head = if lead {
                self.cut_again(value, r.start, 0..own_from, retokenize)
            } else {
                Some(none)
            };
            let own = self.own_logged(logged, r.start + own_from..r.start + own_to);
            let tail = if trail {
                self.cut_again(value, r.start, own_to..value.len(), retokenize)
            } else {
                Some(none)
            };
            head.zip(own).zip(tail).map(|((h, o), t)| [h, o, t])
        };
        match parts {
            Some(parts) => self.values.push(StagedValue {
                text: r,
                base,
                parts,
            }),
            None => self.tokens.truncate(appended),
        }
    }

    /// Tokens of `value[piece]` by analysing it again, appended with offsets in the joined
    /// text (the value starts at `start`); their run, or `None` when an offset does not fit in
    /// 32 bits.
    fn cut_again(
        &mut self,
        value: &str,
        start: usize,
        piece: Range<usize>,
        retokenize: Retokenize<'_>,
    ) -> Option<(u32, u32)> {
        let mut fits = true;
        let first = self.tokens.len();
        let Staging {
            token_text, tokens, ..
        } = self;
        let at = start + piece.start;
        retokenize(&value[piece], &mut |t, from, to| {
            let text_at = token_text.len();
            token_text.push_str(t);
            match (
                u32::try_from(text_at),
                u32::try_from(token_text.len()),
                u32::try_from(at + from),
                u32::try_from(at + to),
            ) {
                (Ok(a), Ok(b), Ok(from), Ok(to)) => tokens.push(LoggedToken {
                    text: (a, b),
                    from,
                    to,
                }),
                _ => fits = false,
            }
        });
        let run = (
            u32::try_from(first).ok()?,
            u32::try_from(tokens.len()).ok()?,
        );
        fits.then_some(run)
    }

    /// The run of `logged` (indices of the logged tokens starting in the value) that starts in
    /// `own` (offsets in the joined text); `None` if one runs past `own`'s end.
    fn own_logged(&self, logged: Range<usize>, own: Range<usize>) -> Option<(u32, u32)> {
        let tokens = &self.tokens[logged.clone()];
        // Tokens are in text order: those before `own` belong to a Han run cut again.
        let skip = tokens.partition_point(|t| (t.from as usize) < own.start);
        let take = tokens[skip..].partition_point(|t| (t.from as usize) < own.end);
        let run = &tokens[skip..skip + take];
        // A token of the log across the end of this value's own part: only a Han run does
        // that, and it is cut again. Never expected; be safe.
        if run.iter().any(|t| t.to as usize > own.end) {
            return None;
        }
        let first = logged.start + skip;
        Some((
            u32::try_from(first).ok()?,
            u32::try_from(first + take).ok()?,
        ))
    }
}

/// Whether a Han run continues across the start and across the end of `range` in `text`
/// (over whitespace, as the built-in tokenizer joins a wrapped line).
fn han_run_crosses(text: &str, range: &Range<usize>) -> (bool, bool) {
    let inner = &text[range.clone()];
    let solid = |c: &char| !c.is_whitespace();
    let first = inner.chars().find(solid);
    let last = inner.chars().rev().find(solid);
    let before = text[..range.start].chars().rev().find(solid);
    let after = text[range.end..].chars().find(solid);
    (
        first.is_some_and(is_han) && before.is_some_and(is_han),
        last.is_some_and(is_han) && after.is_some_and(is_han),
    )
}

/// The byte after the last Han character of the Han run (Han characters and whitespace) that
/// starts `value`.
fn leading_han_run_end(value: &str) -> usize {
    let mut end = 0;
    for (i, c) in value.char_indices() {
        if is_han(c) {
            end = i + c.len_utf8();
        } else if !c.is_whitespace() {
            break;
        }
    }
    end
}

/// The first byte of the Han run that ends `value`.
fn trailing_han_run_start(value: &str) -> usize {
    let mut start = value.len();
    for (i, c) in value.char_indices().rev() {
        if is_han(c) {
            start = i;
        } else if !c.is_whitespace() {
            break;
        }
    }
    start
}
