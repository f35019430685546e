//! Stdout for results: buffered, JSON lines or human text, and quiet on a closed pipe.

use super::{CliResult, Failure};
use serde::Serialize;
use std::fmt::Display;
use std::io::{self, BufWriter, Write};
use tantivy_simhash::{Evidence, MatchRule};

/// Why two documents match, as JSON output shows it (flattened into the object):
/// `"by": "simhash"` or `"resemblance"`, the simhash `distance`, and for a resemblance match
/// the sketches' `resemblance` estimate (3 decimals).
#[derive(Serialize)]
pub(crate) struct EvidenceJson {
    by: &'static str,
    distance: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    resemblance: Option<f64>,
}

impl From<Evidence> for EvidenceJson {
    fn from(e: Evidence) -> Self {
        EvidenceJson {
            by: match e {
                Evidence::Simhash { .. } => "simhash",
                Evidence::Resemblance { .. } => "resemblance",
            },
            distance: e.distance(),
            resemblance: e
                .resemblance()
                .map(|r| (f64::from(r) * 1000.0).round() / 1000.0),
        }
    }
}

/// Evidence in human output: `d=2`, or `r=0.71 d=19` for a resemblance match.
pub(crate) fn evidence_short(e: Evidence) -> String {
    match e.resemblance() {
        Some(r) => format!("r={r:.2} d={}", e.distance()),
        None => format!("d={}", e.distance()),
    }
}

/// Results go to stdout through this; a closed pipe turns into [`Failure::BrokenPipe`], which
/// ends the command quietly with status 0.
pub(crate) struct Out {
    inner: BufWriter<io::Stdout>,
    json: bool,
}

impl Out {
    /// `json`: results are printed as one JSON object per line.
    pub(crate) fn new(json: bool) -> Self {
        Out {
            inner: BufWriter::new(io::stdout()),
            json,
        }
    }

    /// Whether results are JSON lines.
    pub(crate) fn is_json(&self) -> bool {
        self.json
    }

    /// A line of human output.
    pub(crate) fn line(&mut self, line: impl Display) -> CliResult<()> {
        writeln!(self.inner, "{line}").map_err(Failure::from)
    }

    /// One JSON object on its own line.
    pub(crate) fn json_line(&mut self, value: &impl Serialize) -> CliResult<()> {
        serde_json::to_writer(&mut self.inner, value).map_err(|e| {
            if e.is_io() {
                Failure::from(io::Error::from(e))
            } else {
                Failure::Error(tantivy_simhash::Error::Json(e))
            }
        })?;
        self.inner.write_all(b"\n").map_err(Failure::from)
    }

    /// Flushes; call at the end of a command (drop would swallow the error).
    pub(crate) fn flush(&mut self) -> CliResult<()> {
        self.inner.flush().map_err(Failure::from)
    }
}

/// The first `max` characters of `s` on one line, with an ellipsis when cut.
pub(crate) fn one_line(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(max.min(s.len()) + 3);
    let mut n = 0;
    let mut space = false;
    for c in s.chars() {
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if space {
            if n + 1 >= max {
                out.push('…');
                return out;
            }
            out.push(' ');
            n += 1;
            space = false;
        }
        if n >= max {
            out.push('…');
            return out;
        }
        out.push(c);
        n += 1;
    }
    out
}

/// `n` and the noun, singular for one: "1 document", "2 documents".
pub(crate) fn count(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The rule in a few words, for the first line of `similar`, `pairs` and `clusters` (`neardup
/// stats` prints the whole of it once).
pub(crate) fn rule_brief(rule: &MatchRule) -> String {
    format!(
        "simhash within {}, or resemblance >= {}",
        rule.layout().max_distance(),
        rule.spec().min_resemblance
    )
}

#[cfg(test)]
mod tests {
    use super::{count, one_line};

    #[test]
    fn one_line_collapses_whitespace_and_cuts() {
        assert_eq!(one_line("  a\n\n b\tc  ", 10), "a b c");
        assert_eq!(one_line("abcdef", 3), "abc…");
        assert_eq!(one_line("ab cd", 3), "ab…");
        assert_eq!(one_line("", 3), "");
    }

    #[test]
    fn counts_agree_with_their_nouns() {
        assert_eq!(count(1u64, "document", "documents"), "1 document");
        assert_eq!(count(0u64, "pair", "pairs"), "0 pairs");
        assert_eq!(count(2u32, "pair", "pairs"), "2 pairs");
    }
}
