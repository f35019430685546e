//! Section 2: lookups by the match rule against simhash-only lookups on one index of signatures,
//! with the rule's recall against brute force.

use super::*;

/// `sketch` with each 8-bit bin replaced by a random byte with probability `percent` / 100.
pub(crate) fn perturb(rng: &mut pigeonhole::Rng, sketch: &Sketch, percent: u64) -> Sketch {
    let mut words = sketch.words.clone();
    for w in &mut words {
        for bin in 0..8 {
            if rng.below(100) < percent {
                let shift = bin * 8;
                *w = (*w & !(0xff << shift)) | ((rng.next_u64() & 0xff) << shift);
            }
        }
    }
    Sketch { words }
}

/// The indexed signatures (the corpus's fingerprints with random sketches) and the queries: a
/// quarter near an indexed document, a quarter a copy under other chrome, half random.
pub(crate) fn rule_signatures(
    n: usize,
    n_queries: usize,
    rule: &MatchRule,
) -> (Vec<Signature>, Vec<Signature>) {
    let k = rule.layout().max_distance();
    let fps = corpus(n, 42);
    let words = rule.minhash().sketch_words();
    let mut rng = pigeonhole::Rng(11);
    let sigs: Vec<Signature> = fps
        .iter()
        .map(|&fp| Signature {
            fingerprint: Fingerprint(fp),
            sketch: Sketch {
                words: (0..words).map(|_| rng.next_u64()).collect(),
            },
        })
        .collect();
    let queries: Vec<Signature> = (0..n_queries)
        .map(|i| {
            let j = rng.below(n as u64) as usize;
            let bits = rng.below(u64::from(k) + 2) as u32;
            match i % 4 {
                0 => Signature {
                    fingerprint: Fingerprint(rng.flip(fps[j], bits)),
                    sketch: perturb(&mut rng, &sigs[j].sketch, 10),
                },
                1 => Signature {
                    fingerprint: Fingerprint(rng.next_u64()),
                    sketch: perturb(&mut rng, &sigs[j].sketch, 30),
                },
                _ => Signature {
                    fingerprint: Fingerprint(rng.next_u64()),
                    sketch: Sketch {
                        words: (0..words).map(|_| rng.next_u64()).collect(),
                    },
                },
            }
        })
        .collect();
    (sigs, queries)
}

/// Indexes `sigs` in 8 commits (no merges) in a temporary directory, and drops the writer and
/// the index (for a fresh handle); returns the directory.
pub(crate) fn build_rule_index(sigs: &[Signature], rule: &MatchRule) -> Res<tempfile::TempDir> {
    let config = lookup_config().with_rule(*rule);
    build_in_eight_commits(sigs, config, "signatures", |w, doc, sig| {
        w.add_document_with_signature(doc, sig.clone()).map(|_| ())
    })
}

pub(crate) type RuleMethod<'a> = (String, Box<dyn Fn(&Signature) -> Res<usize> + 'a>);

/// The methods of the rule table, pairs of simhash-only and rule rows.
pub(crate) fn rule_methods(s: &NearDupLookup, k: u32) -> Vec<RuleMethod<'_>> {
    vec![
        (
            "simhash-only: lookup (with ids)".into(),
            Box::new(|q: &Signature| Ok(s.lookup(q.fingerprint)?.len())),
        ),
        (
            "rule: lookup_signature (with ids)".into(),
            Box::new(|q: &Signature| Ok(s.lookup_signature(q)?.len())),
        ),
        (
            "simhash-only: lookup_addresses (no ids)".into(),
            Box::new(move |q: &Signature| Ok(s.lookup_addresses(q.fingerprint, k)?.len())),
        ),
        (
            "rule: lookup_signature_addresses (no ids)".into(),
            Box::new(|q: &Signature| Ok(s.lookup_signature_addresses(q)?.len())),
        ),
        (
            "simhash-only: NearDupQuery::new + DocSetCollector".into(),
            Box::new(|q: &Signature| {
                let query = NearDupQuery::new(s.fields(), q.fingerprint);
                Ok(s.searcher().search(&query, &DocSetCollector)?.len())
            }),
        ),
        (
            "rule: NearDupQuery::from_signature + DocSetCollector".into(),
            Box::new(|q: &Signature| {
                let query = NearDupQuery::from_signature(s.fields(), q.clone())
                    .with_max_postings_per_key(usize::MAX);
                Ok(s.searcher().search(&query, &DocSetCollector)?.len())
            }),
        ),
    ]
}

/// The rule table: latencies per method and ratios to the simhash-only row of the pair.
pub(crate) fn print_rule_rows(rows: &[(&str, Stats, usize)]) {
    println!(
        "| method | p50 us | p99 us | mean us | p50 / simhash-only | p99 / simhash-only | matches |\n|---|---|---|---|---|---|---|"
    );
    for (i, (name, st, found)) in rows.iter().enumerate() {
        let base = &rows[i - i % 2].1;
        println!(
            "| {name} | {:.1} | {:.1} | {:.1} | {:.2}x | {:.2}x | {found} |",
            st.p50,
            st.p99,
            st.mean,
            st.p50 / base.p50,
            st.p99 / base.p99,
        );
    }
}

/// Recall of the rule lookup against brute force, on a quarter of the queries (the near and
/// copy quarters).
pub(crate) fn rule_recall(
    rule: &MatchRule,
    sigs: &[Signature],
    queries: &[Signature],
    s: &NearDupLookup,
) -> Res<()> {
    let (mut want, mut got, mut by_resemblance) = (0usize, 0usize, 0usize);
    for q in queries
        .iter()
        .step_by(4)
        .chain(queries.iter().skip(1).step_by(4))
    {
        let expected: Vec<usize> = (0..sigs.len())
            .filter(|&i| rule.matches(q, &sigs[i]).is_some())
            .collect();
        want += expected.len();
        let hits = s.lookup_signature_addresses(q)?;
        by_resemblance += hits
            .iter()
            .filter(|(_, e)| e.resemblance().is_some())
            .count();
        got += hits.len();
    }
    println!(
        "rule lookup recall against brute force (the near and copy quarters): {got} of {want} \
         ({by_resemblance} by resemblance)"
    );
    Ok(())
}

pub(crate) fn rule_lookup_bench(n: usize, n_queries: usize) -> Res<()> {
    let rule = MatchRule::default();
    let k = rule.layout().max_distance();
    println!("\n## Lookup by the rule vs simhash-only, N = {n} ({rule})");
    let (sigs, queries) = rule_signatures(n, n_queries, &rule);
    let dir = build_rule_index(&sigs, &rule)?;
    let t = Instant::now();
    let index = NearDupIndex::open_recorded(Index::open_in_dir(dir.path())?)?;
    let fresh = index.lookups()?;
    let open = t.elapsed();
    let t = Instant::now();
    fresh.lookup_signature_addresses(&queries[0])?;
    let first = t.elapsed();
    let t = Instant::now();
    fresh.lookup_signature(&queries[0])?;
    println!(
        "fresh handle: open {:.2} ms, first lookup_signature_addresses {:.2} ms, then lookup_signature (ids) {:.2} ms",
        us(open) / 1e3,
        us(first) / 1e3,
        us(t.elapsed()) / 1e3
    );
    drop(fresh);
    let s = index.lookups()?.with_max_postings_per_key(usize::MAX);
    component_report(&s)?;
    // Warm every path once.
    for q in &queries {
        s.lookup(q.fingerprint)?;
        s.lookup_signature(q)?;
    }
    let methods = rule_methods(&s, k);
    // Each method runs every query in turn (as a service doing only that would: taking turns
    // query by query would measure each method with the others' data in the caches).
    let mut rows = Vec::new();
    for (name, f) in &methods {
        let mut times = Vec::with_capacity(queries.len());
        let mut found = 0;
        for q in &queries {
            let t = Instant::now();
            found += f(q)?;
            times.push(t.elapsed());
        }
        rows.push((name.as_str(), stats(times), found));
    }
    print_rule_rows(&rows);
    rule_recall(&rule, &sigs, &queries, &s)
}
