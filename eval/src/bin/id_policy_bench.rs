//! What an [`IdPolicy`] costs per document, against [`IdPolicy::Off`] measured in the same run.
//!
//! ```text
//! cargo run --release -p tantivy-simhash-eval --bin id_policy_bench [-- --base N --docs N --rounds N]
//! ```
//!
//! Each round builds an index of `--base` committed documents (in a few segments), then times
//! `add_documents` + `commit` of `--docs` new documents under each id policy (new ids: every
//! document is checked and added), and a rerun of those documents (every id taken: `keep`
//! skips them unsigned, `off` adds them again, `replace` replaces them). The near-duplicate
//! policy is `Reject`, as in `neardup index`. Prints the median per-document time of each case
//! and its ratio to `off`. Texts are random words (no data files needed).

use std::time::Instant;
use tantivy::schema::{Schema, FAST, STRING, TEXT};
use tantivy::{doc, Index, TantivyDocument};
use tantivy_simhash::{IdPolicy, NearDupConfig, NearDupIndex, Policy};

struct Args {
    base: usize,
    docs: usize,
    rounds: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        base: 20_000,
        docs: 5_000,
        rounds: 3,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value"))?
            .parse::<usize>()
            .map_err(|e| format!("{flag}: {e}"))?;
        match flag.as_str() {
            "--base" => args.base = value,
            "--docs" => args.docs = value,
            "--rounds" => args.rounds = value.max(1),
            other => {
                return Err(format!(
                    "unknown flag {other}; expected --base, --docs, --rounds"
                ))
            }
        }
    }
    Ok(args)
}

/// splitmix64, for reproducible texts.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n
    }
}

fn text(rng: &mut Rng) -> String {
    (0..200)
        .map(|_| format!("w{}", rng.below(20_000)))
        .collect::<Vec<_>>()
        .join(" ")
}

struct Bench {
    index: NearDupIndex,
    id: tantivy::schema::Field,
    body: tantivy::schema::Field,
}

impl Bench {
    fn new(base: &[(String, String)]) -> tantivy_simhash::Result<Bench> {
        let config = NearDupConfig::new("id", ["body"]);
        let mut builder = Schema::builder();
        let id = builder.add_text_field("id", STRING | FAST);
        let body = builder.add_text_field("body", TEXT);
        config.add_fields(&mut builder);
        let index = NearDupIndex::create(Index::create_in_ram(builder.build()), config)?;
        let bench = Bench { index, id, body };
        let mut writer = bench.index.writer(100_000_000, Policy::Off)?;
        // A few commits: a few segments to look ids up in, as a growing index has.
        for chunk in base.chunks(base.len().div_ceil(4).max(1)) {
            writer.add_documents(bench.docs(chunk))?;
            writer.commit()?;
        }
        Ok(bench)
    }

    fn docs(&self, docs: &[(String, String)]) -> Vec<TantivyDocument> {
        docs.iter()
            .map(|(i, t)| doc!(self.id => i.as_str(), self.body => t.as_str()))
            .collect()
    }

    /// Seconds per document of `add_documents` + `commit` of `docs` under `id_policy`, and the
    /// same again (the rerun).
    fn time(
        &self,
        id_policy: IdPolicy,
        docs: &[(String, String)],
    ) -> tantivy_simhash::Result<(f64, f64)> {
        let mut writer = self
            .index
            .writer(100_000_000, Policy::Reject)?
            .with_id_policy(id_policy);
        let mut seconds = [0.0; 2];
        for s in &mut seconds {
            let batch = self.docs(docs);
            let start = Instant::now();
            for chunk in batch.chunks(256) {
                writer.add_documents(chunk.to_vec())?;
            }
            writer.commit()?;
            *s = start.elapsed().as_secs_f64() / docs.len() as f64;
        }
        Ok((seconds[0], seconds[1]))
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Report fails on the rerun: times the fresh adds only (seconds per document).
fn time_report(bench: &Bench, new: &[(String, String)]) -> Result<f64, Box<dyn std::error::Error>> {
    let mut w = bench
        .index
        .writer(100_000_000, Policy::Reject)?
        .with_id_policy(IdPolicy::Report);
    let batch = bench.docs(new);
    let start = Instant::now();
    for chunk in batch.chunks(256) {
        w.add_documents(chunk.to_vec())?;
    }
    w.commit()?;
    Ok(start.elapsed().as_secs_f64() / new.len() as f64)
}

/// Medians per policy, fresh adds and reruns, against `Off` (the first policy).
fn print_table(policies: &[IdPolicy], fresh: &[Vec<f64>], rerun: &[Vec<f64>]) {
    let off_fresh = median(fresh[0].clone());
    let off_rerun = median(rerun[0].clone());
    println!(
        "{:<8} {:>14} {:>10} {:>14} {:>10}",
        "ids", "new us/doc", "vs off", "rerun us/doc", "vs off"
    );
    for (p, policy) in policies.iter().enumerate() {
        let f = median(fresh[p].clone());
        let r = median(rerun[p].clone());
        println!(
            "{:<8} {:>14.2} {:>10.3} {:>14.2} {:>10.3}",
            policy.name(),
            f * 1e6,
            f / off_fresh,
            r * 1e6,
            r / off_rerun
        );
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    let mut rng = Rng(42);
    let base: Vec<(String, String)> = (0..args.base)
        .map(|i| (format!("base{i}"), text(&mut rng)))
        .collect();
    let new: Vec<(String, String)> = (0..args.docs)
        .map(|i| (format!("new{i}"), text(&mut rng)))
        .collect();
    let policies = [
        IdPolicy::Off,
        IdPolicy::KeepFirst,
        IdPolicy::Replace,
        IdPolicy::Report,
    ];
    let mut fresh: Vec<Vec<f64>> = vec![Vec::new(); policies.len()];
    let mut rerun: Vec<Vec<f64>> = vec![Vec::new(); policies.len()];
    for round in 0..args.rounds {
        // Rotate the order, so no policy always runs first in a round.
        for k in 0..policies.len() {
            let p = (k + round) % policies.len();
            let bench = Bench::new(&base)?;
            let (first, again) = match policies[p] {
                // Report fails on the rerun: time the fresh adds only.
                IdPolicy::Report => (time_report(&bench, &new)?, f64::NAN),
                p => bench.time(p, &new)?,
            };
            fresh[p].push(first);
            rerun[p].push(again);
        }
    }
    println!(
        "{} committed documents, {} added per case, {} rounds (median), policy Reject",
        args.base, args.docs, args.rounds
    );
    print_table(&policies, &fresh, &rerun);
    Ok(())
}
