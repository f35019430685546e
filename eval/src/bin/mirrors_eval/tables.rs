//! The printed curves and tables: thresholds, k, chrome, the estimate's quality, misses and false
//! positives.

use super::*;

/// The curve over the score threshold (1 = the mirror rule), default settings.
pub(crate) fn print_threshold_curve(scorer: &Scorer, report: &MirrorReport) {
    println!("\nscore threshold (default settings; 1.0 is the rule S >= 10 or S >= 0.2 x min)\n");
    println!("| threshold | predicted | precision | recall |\n|---|---|---|---|");
    for t in [0.2, 0.3, 0.5, 0.7, 0.85, 1.0, 1.2, 1.5, 2.0, 3.0, 5.0] {
        let s = scorer.score(report, t);
        println!(
            "| {t:.2} | {} | {:.3} | {:.3} |",
            s.predicted, s.precision, s.recall
        );
    }
}

/// Estimated S over true S, per mirror pair of the truth: (min, median).
pub(crate) fn s_ratio(r: &MirrorReport, true_s: &HashMap<(String, String), u32>) -> (f64, f64) {
    let est: HashMap<(String, String), u32> = r
        .pairs
        .iter()
        .map(|p| (key(&p.host_a, &p.host_b), p.shared_pages))
        .collect();
    let mut v: Vec<f64> = true_s
        .iter()
        .map(|(k, &s)| f64::from(est.get(k).copied().unwrap_or(0)) / f64::from(s))
        .collect();
    v.sort_by(f64::total_cmp);
    (
        v.first().copied().unwrap_or(f64::NAN),
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN),
    )
}

/// The curve over k (chrome removed, counterpart groups or direct pairs, rule threshold).
pub(crate) fn print_k_curves(
    runner: &Runner,
    scorer: &Scorer,
    true_s: &HashMap<(String, String), u32>,
) -> Res<()> {
    for transitive in [true, false] {
        println!(
            "\nmax_distance k (chrome removed, {}, threshold 1.0)\n",
            if transitive {
                "counterpart groups"
            } else {
                "direct pairs"
            }
        );
        println!("| k | predicted | precision | recall | est. S / true S: min, median | highest non-mirror score | cross-host page pairs | largest group | seconds |\n|---|---|---|---|---|---|---|---|---|");
        for k in 0..=9 {
            let (r, secs) = runner.run(MirrorConfig {
                max_distance: k,
                transitive,
                ..MirrorConfig::default()
            })?;
            let s = scorer.score(&r, 1.0);
            let (lo, med) = s_ratio(&r, true_s);
            let worst = r
                .pairs
                .iter()
                .filter(|p| !true_s.contains_key(&key(&p.host_a, &p.host_b)))
                .map(|p| p.score)
                .fold(0.0, f64::max);
            println!(
                "| {k} | {} | {:.3} | {:.3} | {lo:.2}, {med:.2} | {worst:.2} | {} | {} | {secs:.1} |",
                s.predicted, s.precision, s.recall, r.stats.page_pairs, r.stats.largest_group
            );
        }
    }
    Ok(())
}

/// The curve over the chrome removal threshold.
pub(crate) fn print_chrome_curve(runner: &Runner, scorer: &Scorer) -> Res<()> {
    println!("\nchrome_min_pages (k = 8, counterpart groups, threshold 1.0)\n");
    println!("| chrome_min_pages | predicted | precision | recall | chrome share of tokens |\n|---|---|---|---|---|");
    for m in [2, 3, 5, 10] {
        let (r, _) = runner.run(MirrorConfig {
            chrome_min_pages: m,
            ..MirrorConfig::default()
        })?;
        let s = scorer.score(&r, 1.0);
        println!(
            "| {m} | {} | {:.3} | {:.3} | {:.3} |",
            s.predicted, s.precision, s.recall, r.stats.chrome_share
        );
    }
    Ok(())
}

pub(crate) fn print_table(header: &str, rows: &[String]) {
    println!("\n{header}");
    for r in rows {
        println!("{r}");
    }
}

/// What a caller sees for one host: its copies, best first, one JSON line each.
pub(crate) fn print_copies_example(report: &MirrorReport) -> Res<()> {
    if let Some(first) = report.pairs.first() {
        println!("\ncopies_of({:?}), first 3 as JSON lines:", first.host_a);
        for pair in report.copies_of(&first.host_a).iter().take(3) {
            println!("{}", serde_json::to_string(pair)?);
        }
    }
    Ok(())
}

/// The mirror pairs whose estimated S is lowest against the true S.
pub(crate) fn print_lowest_ratios(report: &MirrorReport, true_s: &HashMap<(String, String), u32>) {
    let mut low: Vec<(f64, String)> = report
        .pairs
        .iter()
        .filter_map(|p| {
            let k = key(&p.host_a, &p.host_b);
            true_s.get(&k).map(|&s| {
                (
                    f64::from(p.shared_pages) / f64::from(s),
                    format!("{} {} S={}/{}", k.0, k.1, p.shared_pages, s),
                )
            })
        })
        .collect();
    low.sort_by(|a, b| a.0.total_cmp(&b.0));
    println!(
        "lowest estimated S / true S: {:?}",
        low.iter()
            .take(6)
            .map(|(r, p)| format!("{r:.2} {p}"))
            .collect::<Vec<_>>()
    );
}

/// How close the estimate of S is to the truth, and how far the non-mirrors stay below.
pub(crate) fn print_estimate_quality(
    report: &MirrorReport,
    scorer: &Scorer,
    true_s: &HashMap<(String, String), u32>,
) {
    let mut ratios: Vec<f64> = Vec::new();
    let mut gold_scores: Vec<f64> = Vec::new();
    let mut other_scores: Vec<(f64, String)> = Vec::new();
    for p in &report.pairs {
        let k = key(&p.host_a, &p.host_b);
        match true_s.get(&k) {
            Some(&s) => {
                ratios.push(f64::from(p.shared_pages) / f64::from(s));
                gold_scores.push(p.score);
            }
            None => other_scores.push((
                p.score,
                format!(
                    "{} {} {} S={} pages {}/{}",
                    scorer.negatives.get(&k).map_or("other", |s| s.as_str()),
                    k.0,
                    k.1,
                    p.shared_pages,
                    p.pages_a,
                    p.pages_b
                ),
            )),
        }
    }
    print_lowest_ratios(report, true_s);
    ratios.sort_by(f64::total_cmp);
    gold_scores.sort_by(f64::total_cmp);
    other_scores.sort_by(|a, b| b.0.total_cmp(&a.0));
    let q = |v: &[f64], p: f64| {
        v.get(((v.len() as f64 - 1.0) * p) as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    println!(
        "\nestimated S / true S over the mirror pairs: min {:.3}, p10 {:.3}, median {:.3}, max {:.3}",
        q(&ratios, 0.0), q(&ratios, 0.1), q(&ratios, 0.5), q(&ratios, 1.0)
    );
    println!(
        "lowest scores of mirror pairs: {:?}",
        gold_scores
            .iter()
            .take(5)
            .map(|s| format!("{s:.2}"))
            .collect::<Vec<_>>()
    );
    println!(
        "highest scores of other host pairs (kind): {:?}",
        other_scores
            .iter()
            .take(5)
            .map(|(s, k)| format!("{s:.2} {k}"))
            .collect::<Vec<_>>()
    );
}

/// Misses and false positives of the default, for reading.
pub(crate) fn print_misses_and_false_positives(report: &MirrorReport, scorer: &Scorer) {
    println!("\ndefault: missed mirror pairs and false positives\n");
    let found: HashMap<(String, String), &tantivy_simhash::HostPair> = report
        .pairs
        .iter()
        .map(|p| (key(&p.host_a, &p.host_b), p))
        .collect();
    let mut gold: Vec<_> = scorer.gold.iter().collect();
    gold.sort();
    for (k, kind) in gold {
        match found.get(k) {
            Some(p) if p.is_mirror => {}
            Some(p) => println!(
                "missed {kind} {} {}: S={} score={:.2} pages {}/{}",
                k.0, k.1, p.shared_pages, p.score, p.pages_a, p.pages_b
            ),
            None => println!("missed {kind} {} {}: no shared page", k.0, k.1),
        }
    }
    for p in report.mirror_pairs() {
        let k = key(&p.host_a, &p.host_b);
        if !scorer.gold.contains_key(&k) {
            println!(
                "false positive ({}) {} {}: S={} score={:.2} pages {}/{} examples {:?}",
                scorer.negatives.get(&k).map_or("other", |s| s.as_str()),
                p.host_a,
                p.host_b,
                p.shared_pages,
                p.score,
                p.pages_a,
                p.pages_b,
                p.examples
            );
        }
    }
}
