//! The printed tables and the summary JSON of both parts (schemes and matchers).

use super::*;

pub(crate) fn header(first: &str) {
    print!("| {first} | n |");
    for k in 0..=KMAX {
        print!(" k={k} |");
    }
    println!();
    print!("|---|---|");
    for _ in 0..=KMAX {
        print!("---|");
    }
    println!();
}

pub(crate) fn rows(rows: &[(String, usize, [f64; KMAX + 1])], percent: bool) {
    for (label, n, v) in rows {
        print!("| {label} | {n} |");
        for x in v {
            if percent {
                print!(" {:.1} |", 100.0 * x);
            } else {
                print!(" {:.3} |", x);
            }
        }
        println!();
    }
}

/// A row of false positives per million pairs at each k, after the number of pairs.
pub(crate) fn per_million_row(label: &str, (pairs, fp): (u64, [u64; KMAX + 1])) {
    print!("| {label} (per million) | {pairs} |");
    for c in fp {
        print!(" {:.2} |", 1e6 * c as f64 / pairs.max(1) as f64);
    }
    println!();
}

/// Per precision group: the precision at each k and the pairs within k.
pub(crate) fn precision_rows(precision: &PrecisionRows) {
    for (label, within, fp) in precision {
        print!("| {label}: precision | {} |", within[KMAX]);
        for k in 0..=KMAX {
            let p = if within[k] == 0 {
                1.0
            } else {
                1.0 - fp[k] as f64 / within[k] as f64
            };
            print!(" {:.3} |", p);
        }
        println!();
        print!("| {label}: pairs within k | |");
        for w in within {
            print!(" {w} |");
        }
        println!();
    }
}

pub(crate) fn full_tables(name: &str, lang: &Lang, r: &Report) {
    println!(
        "\n### {name}, {}: synthetic recall (fraction of pairs within k)\n",
        lang.name
    );
    header("recipe");
    rows(&r.recall, false);
    println!(
        "\n### {name}, {}: false-positive rate (%) on hard negatives and random pairs\n",
        lang.name
    );
    header("kind");
    rows(&r.hardneg, true);
    per_million_row("random pairs", r.random);
    per_million_row("natural non-pairs", r.natural_random);
    println!(
        "\n### {name}, {}: natural corpus recall (excluded = {:?})\n",
        lang.name, lang.excluded_sources
    );
    header("truth pairs");
    rows(&r.natural, false);
    println!(
        "\n### {name}, {}: natural corpus precision (pairs within k whose resemblance >= 0.5)\n",
        lang.name
    );
    header("pairs");
    precision_rows(&r.precision);
    if !r.cross.is_empty() {
        println!(
            "\n### {name}, {}: cross-script recall (zh-CN vs zh-TW pages)\n",
            lang.name
        );
        header("pairs");
        rows(&r.cross, false);
    }
}

pub(crate) const SUMMARY_K: [usize; 4] = [3, 4, 5, 6];

pub(crate) fn summary_line(name: &str, lang: &Lang, r: &Report) {
    let get = |rows: &[(String, usize, [f64; KMAX + 1])], label: &str, k: usize| {
        rows.iter()
            .find(|(l, _, _)| l == label)
            .map(|(_, _, v)| v[k])
            .unwrap_or(f64::NAN)
    };
    for k in SUMMARY_K {
        let prec = r
            .precision
            .iter()
            .map(|(_, within, fp)| {
                if within[k] == 0 {
                    1.0
                } else {
                    1.0 - fp[k] as f64 / within[k] as f64
                }
            })
            .collect::<Vec<_>>();
        print!(
            "| {name} | {} | {k} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.3} | {:.2} | {:.2} | {:.2} | {:.3} / {:.3} |",
            lang.name,
            get(&r.recall, "exact-format", k),
            get(&r.recall, "light", k),
            get(&r.recall, "boilerplate", k),
            get(&r.recall, "reorder", k),
            get(&r.recall, "medium", k),
            get(&r.recall, "truncate", k),
            get(&r.recall, "append", k),
            get(&r.recall, "heavy", k),
            100.0 * get(&r.hardneg, "all", k),
            1e6 * r.random.1[k] as f64 / r.random.0.max(1) as f64,
            get(&r.natural, "J>=0.8", k),
            get(&r.natural, "J>=0.8 without excluded", k),
            prec[0],
            prec[1],
        );
        if r.cross.is_empty() {
            println!(" - |");
        } else {
            println!(" {:.2} |", get(&r.cross, "t2s J>=0.5", k));
        }
    }
}

/// The matchers' table, one line per matcher and language; returns the default rule's
/// summary per language.
pub(crate) fn matcher_table(
    all_matchers: &[(String, AnyMatcher)],
    data: &[Lang],
) -> serde_json::Map<String, serde_json::Value> {
    if !all_matchers.is_empty() {
        println!("## Matchers side by side (recall as a fraction; hard-negative FP in %; natural precision all / without excluded)\n");
        println!("| matcher | lang | exact-format | light | boilerplate | reorder | medium | truncate | append | heavy | hard-neg FP % | worst family FP % | natural precision | natural J>=0.8 recall | cross-script t2s>=0.5 | bytes/doc | keys/doc |");
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    }
    let mut summary = serde_json::Map::new();
    for (name, m) in all_matchers {
        for lang in data {
            let r = run_matcher(m, lang);
            eprintln!(
                "{name} {}: {:.1} s, hottest natural key {} docs",
                lang.name, r.seconds, r.natural_hottest_key
            );
            matcher_line(name, lang, &r);
            if name == DEFAULT_RULE {
                summary.insert(lang.name.to_string(), summary_value(&r));
            }
        }
    }
    summary
}

/// Writes the default rule's summary (with the rule and its id) to `path`.
pub(crate) fn write_summary(
    path: &Path,
    all_matchers: &[(String, AnyMatcher)],
    mut summary: serde_json::Map<String, serde_json::Value>,
) -> Res<()> {
    if let Some((_, AnyMatcher::Rule(m))) = all_matchers.iter().find(|(n, _)| n == DEFAULT_RULE) {
        summary.insert("rule".into(), serde_json::Value::String(m.rule.to_string()));
        summary.insert("rule_id".into(), serde_json::Value::String(m.rule.id()));
    }
    if summary.is_empty() {
        return Err(format!("--summary-json: the default rule `{DEFAULT_RULE}` was not evaluated; keep it in --matchers").into());
    }
    std::fs::write(path, serde_json::to_string_pretty(&summary)?)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(())
}

/// The schemes' summary table (and with `--full` the full tables), then the schemes' ids.
pub(crate) fn scheme_tables(schemes: &[(&str, Candidate)], data: &[Lang], args: &Args) {
    println!();
    println!("## Summary (recall as a fraction; hard-negative FP in %; random FP per million pairs; natural precision all / without excluded)\n");
    println!("| scheme | lang | k | exact-format | light | boilerplate | reorder | medium | truncate | append | heavy | hard-neg FP % | random FP/1e6 | natural J>=0.8 | natural J>=0.8 w/o excl | natural precision | cross-script t2s>=0.5 |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut reports = Vec::new();
    for (name, scheme) in schemes {
        for lang in data {
            let r = evaluate(scheme, lang, args.list_random);
            eprintln!(
                "{name} {}: {:.1} MB in {:.1} s ({})",
                lang.name,
                r.mbytes,
                r.seconds,
                scheme.id()
            );
            summary_line(name, lang, &r);
            reports.push((name, lang, r));
        }
    }
    if args.full {
        for (name, lang, r) in &reports {
            if name.starts_with("default") || args.only.is_some() {
                full_tables(name, lang, r);
            }
        }
    }
    println!("\nScheme ids:\n");
    for (name, scheme) in schemes {
        println!("- {name}: `{}`", scheme.id());
    }
}

pub(crate) fn matcher_line(name: &str, lang: &Lang, r: &MatchReport) {
    let get = |rows: &[(String, usize, f64)], l: &str| {
        rows.iter()
            .find(|(x, _, _)| x == l)
            .map_or(f64::NAN, |(_, _, v)| *v)
    };
    let worst = r
        .hardneg
        .iter()
        .filter(|(l, _, _)| l != "all")
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .map_or(String::from("-"), |(l, _, v)| {
            format!("{:.1} ({l})", 100.0 * v)
        });
    println!(
        "| {name} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1} | {worst} | {:.3} / {:.3} | {:.2} | {} | {} | {:.1} |",
        lang.name,
        get(&r.recall, "exact-format"),
        get(&r.recall, "light"),
        get(&r.recall, "boilerplate"),
        get(&r.recall, "reorder"),
        get(&r.recall, "medium"),
        get(&r.recall, "truncate"),
        get(&r.recall, "append"),
        get(&r.recall, "heavy"),
        100.0 * get(&r.hardneg, "all"),
        r.natural_precision,
        r.natural_precision_without_excluded,
        r.natural_recall_j08,
        r.cross_script_recall.map_or("-".to_string(), |c| format!("{c:.2}")),
        r.bytes_per_doc,
        r.keys_per_doc,
    );
}

/// The figures `--summary-json` writes for one language.
pub(crate) fn summary_value(r: &MatchReport) -> serde_json::Value {
    let map = |rows: &[(String, usize, f64)]| -> serde_json::Map<String, serde_json::Value> {
        rows.iter()
            .map(|(l, _, v)| (l.clone(), serde_json::json!(v)))
            .collect()
    };
    serde_json::json!({
        "recall": map(&r.recall),
        "hard_negative_fp": map(&r.hardneg),
        "hard_negative_pairs": r.hardneg.iter().map(|(l, n, _)| (l.clone(), serde_json::json!(n))).collect::<serde_json::Map<_, _>>(),
        "natural_precision": r.natural_precision,
        "natural_precision_without_excluded": r.natural_precision_without_excluded,
        "natural_matched_pairs": r.natural_matched_pairs,
        "natural_false_positives": r.natural_false_positives,
        "natural_recall_j08": r.natural_recall_j08,
        "natural_recall_j09": r.natural_recall_j09,
        "natural_recall_j08_without_excluded": r.natural_recall_j08_without_excluded,
        "cross_script_recall_t2s_05": r.cross_script_recall,
        "bytes_per_doc": r.bytes_per_doc,
        "keys_per_doc": r.keys_per_doc,
        "natural_hottest_key_docs": r.natural_hottest_key,
    })
}
