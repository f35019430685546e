//! `neardup explain`: why two documents (or two texts) are near-duplicates, or why not.

use super::app::{self, Store};
use super::{CliResult, Failure, Out, Status};
use clap::{Args, ValueEnum};
use std::io::IsTerminal;
use std::path::PathBuf;
use tantivy_simhash::{Alignment, Explanation, RunKind};

#[derive(Debug, Args)]
pub(crate) struct ExplainArgs {
    /// The index directory.
    dir: PathBuf,
    /// Two document ids of the index (or none, with two --text).
    #[arg(value_name = "ID", num_args = 0..=2)]
    ids: Vec<String>,
    /// A text to explain instead of a document (give it twice: the two texts), signed with the
    /// index's scheme and rule.
    #[arg(long = "text", value_name = "TEXT", conflicts_with = "ids")]
    texts: Vec<String>,
    /// Words of common text kept around each difference in the human output (0: the whole
    /// texts).
    #[arg(long, value_name = "WORDS", default_value_t = 12)]
    context: usize,
    /// Colour for the differences: `auto` (when stdout is a terminal), `always`, `never`.
    #[arg(long, value_enum, value_name = "WHEN", default_value = "auto")]
    color: ColorWhen,
    /// One JSON object on stdout: every part of the explanation (see the library's
    /// `tantivy_simhash::Explanation`), the alignment as word byte ranges and runs.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ColorWhen {
    Auto,
    Always,
    Never,
}

pub(crate) fn run(args: &ExplainArgs) -> CliResult<Status> {
    let store = app::open(&args.dir)?;
    let (explanation, texts, labels) = match (args.ids.as_slice(), args.texts.as_slice()) {
        ([a, b], []) => explain_ids(&store, a, b)?,
        ([], [a, b]) => (
            Explanation::of_texts(store.index.rule(), store.index.scheme(), a, b),
            [a.clone(), b.clone()],
            ["text a".to_string(), "text b".to_string()],
        ),
        _ => {
            return Err(Failure::Usage(
                "give two document ids (`neardup explain DIR ID_A ID_B`) or two texts \
                 (`--text A --text B`)"
                    .into(),
            ))
        }
    };
    let mut out = Out::new(args.json);
    if args.json {
        let mut v = explanation.to_json();
        if let Some(obj) = v.as_object_mut() {
            obj.insert("a".into(), labels[0].clone().into());
            obj.insert("b".into(), labels[1].clone().into());
        }
        out.json_line(&v)?;
    } else {
        let colour = match args.color {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto => std::io::stdout().is_terminal(),
        };
        print_human(
            &explanation,
            &texts,
            &labels,
            args.context,
            colour,
            &mut out,
        )?;
    }
    out.flush()?;
    Ok(Status::Done)
}

type Explained = (Explanation, [String; 2], [String; 2]);

fn explain_ids(store: &Store, a: &str, b: &str) -> CliResult<Explained> {
    let searcher = store.index.lookups()?;
    let mut labels = [String::new(), String::new()];
    for (label, id) in labels.iter_mut().zip([a, b]) {
        let address = searcher.address_of_id(id)?.ok_or_else(|| {
            Failure::Message(format!(
                "no document has id `{id}` in {}",
                store.dir.display()
            ))
        })?;
        let doc = store.load_doc(searcher.searcher(), address)?;
        *label = if doc.title.is_empty() {
            id.to_string()
        } else {
            format!("{id}  {}", super::output::one_line(&doc.title, 60))
        };
    }
    let e = store.index.explain_ids(&searcher, a, b)?;
    let texts = [
        store.index.stored_text(&searcher, a)?,
        store.index.stored_text(&searcher, b)?,
    ];
    Ok((e, texts, labels))
}

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

fn print_human(
    e: &Explanation,
    texts: &[String; 2],
    labels: &[String; 2],
    context: usize,
    colour: bool,
    out: &mut Out,
) -> CliResult<()> {
    let paint = |code: &str, s: &str| {
        if colour {
            format!("{code}{s}{RESET}")
        } else {
            s.to_string()
        }
    };
    out.line(format_args!("a: {}", labels[0]))?;
    out.line(format_args!("b: {}", labels[1]))?;
    let verdict = if e.verdict.is_some() {
        paint(GREEN, &e.summary())
    } else {
        paint(RED, &e.summary())
    };
    out.line(format_args!("{}", paint(BOLD, &verdict)))?;
    out.line(format_args!("rule: {}", e.rule))?;
    let s = &e.simhash;
    let shared_keys = if s.shared_keys.is_empty() {
        format!("none of {}", s.keys)
    } else {
        format!(
            "{} of {} ({})",
            s.shared_keys.len(),
            s.keys,
            list(&s.shared_keys)
        )
    };
    out.line(format_args!(
        "  simhash   {}  {} ~ {}; block keys shared: {shared_keys}",
        mark(s.matched),
        s.fingerprints[0],
        s.fingerprints[1]
    ))?;
    out.line(format_args!("            {}", e.branches[0].reason))?;
    let m = &e.minhash;
    out.line(format_args!(
        "  minhash   {}  bands shared: {}; bins agreeing {} of {}",
        mark(m.matched),
        if m.shared_bands.is_empty() {
            format!("none of {}", m.bands)
        } else {
            format!(
                "{} of {} ({})",
                m.shared_bands.len(),
                m.bands,
                list(&m.shared_bands)
            )
        },
        m.agreeing_bins[0],
        m.agreeing_bins[1]
    ))?;
    out.line(format_args!("            {}", e.branches[1].reason))?;
    out.line(format_args!(
        "  shingles  the rule's (what the sketch estimates): {:.3} ({} shared of {} and {})",
        e.shingles.resemblance, e.shingles.shared, e.shingles.shingles[0], e.shingles.shingles[1]
    ))?;
    out.line(format_args!(
        "  words     word 3-shingles of the whole texts: {:.3} ({} shared of {} and {})",
        e.words.resemblance, e.words.shared, e.words.shingles[0], e.words.shingles[1]
    ))?;
    for (side, lines) in ["a", "b"].iter().zip(&e.chrome) {
        if lines.is_empty() {
            out.line(format_args!("  chrome    {side}: none"))?;
            continue;
        }
        out.line(format_args!(
            "  chrome    {side}: {} line{} left out of the rule's shingles",
            lines.len(),
            if lines.len() == 1 { "" } else { "s" }
        ))?;
        for l in lines.iter().take(8) {
            let what = if l.suffix_only { " (title suffix)" } else { "" };
            out.line(format_args!(
                "            {:>4}: {}{what}",
                l.line + 1,
                super::output::one_line(&l.text, 70)
            ))?;
        }
        if lines.len() > 8 {
            out.line(format_args!("            … {} more", lines.len() - 8))?;
        }
    }
    for (i, ok) in e.signature_of_text.iter().enumerate() {
        if !ok {
            out.line(format_args!(
                "  note      the stored signature of {} is not the one its text signs to today \
                 (indexed by another version?)",
                ["a", "b"][i]
            ))?;
        }
    }
    let (equal, deleted, inserted, moved) = e.alignment.counts();
    out.line(format_args!(
        "alignment: {equal} words in common, {} deleted, {} inserted, {} moved{}",
        paint(RED, &deleted.to_string()),
        paint(GREEN, &inserted.to_string()),
        paint(YELLOW, &moved.to_string()),
        if e.alignment.timed_out {
            " (the diff hit its time bound: coarser than the best)"
        } else {
            ""
        }
    ))?;
    if !colour {
        out.line("  [-deleted-] {+inserted+} [<moved away<] [>moved here>]")?;
    }
    out.line(render_alignment(&e.alignment, texts, context, colour))?;
    Ok(())
}

fn mark(matched: bool) -> &'static str {
    if matched {
        "match   "
    } else {
        "no match"
    }
}

fn list<T: ToString>(v: &[T]) -> String {
    let shown: Vec<String> = v.iter().take(12).map(T::to_string).collect();
    if v.len() > 12 {
        format!("{}, …", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// The two texts merged along the alignment: common runs once (long ones cut to `context`
/// words at each end), deletions and insertions marked (colour, or `[-…-]` and `{+…+}`).
fn render_alignment(al: &Alignment, texts: &[String; 2], context: usize, colour: bool) -> String {
    let mut s = String::new();
    // The text of words `r` of one side, with what follows the last word up to the next one.
    let slice = |side: usize, r: std::ops::Range<usize>| -> &str {
        let (spans, text) = if side == 0 {
            (&al.a, &texts[0])
        } else {
            (&al.b, &texts[1])
        };
        if r.is_empty() {
            return "";
        }
        let start = spans[r.start].start;
        let end = spans.get(r.end).map_or(text.len(), |n| n.start);
        text.get(start..end).unwrap_or("")
    };
    for (i, r) in al.runs.iter().enumerate() {
        let (o, c) = markers(r.kind, colour);
        match r.kind {
            RunKind::Equal => {
                let n = r.a.len();
                if context == 0 || n <= 2 * context {
                    s.push_str(slice(0, r.a.clone()));
                } else {
                    let head = if i == 0 { 0 } else { context };
                    let tail = if i + 1 == al.runs.len() { 0 } else { context };
                    s.push_str(slice(0, r.a.start..r.a.start + head));
                    let skipped = n - head - tail;
                    if colour {
                        s.push_str(&format!("{DIM}… {skipped} words …{RESET}"));
                    } else {
                        s.push_str(&format!("… {skipped} words …"));
                    }
                    s.push_str(if tail > 0 { " " } else { "" });
                    s.push_str(slice(0, r.a.end - tail..r.a.end));
                }
            }
            RunKind::Delete | RunKind::MoveFrom => {
                s.push_str(o);
                s.push_str(slice(0, r.a.clone()).trim_end());
                s.push_str(c);
                s.push(' ');
            }
            RunKind::Insert | RunKind::MoveTo => {
                s.push_str(o);
                s.push_str(slice(1, r.b.clone()).trim_end());
                s.push_str(c);
                s.push(' ');
            }
        }
    }
    s
}

fn markers(kind: RunKind, colour: bool) -> (&'static str, &'static str) {
    match (kind, colour) {
        (RunKind::Delete, true) => (RED, RESET),
        (RunKind::Insert, true) => (GREEN, RESET),
        (RunKind::MoveFrom | RunKind::MoveTo, true) => (YELLOW, RESET),
        (RunKind::Delete, false) => ("[-", "-]"),
        (RunKind::Insert, false) => ("{+", "+}"),
        (RunKind::MoveFrom, false) => ("[<", "<]"),
        (RunKind::MoveTo, false) => ("[>", ">]"),
        (RunKind::Equal, _) => ("", ""),
    }
}
