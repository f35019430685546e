//! What the match rule's storage costs next to today's simhash-only storage, in one run.
//!
//! ```text
//! cargo run --release -p tantivy-simhash-eval --bin signature_bench                  # 1,000,000 documents
//! cargo run --release -p tantivy-simhash-eval --bin signature_bench -- --docs 100000 --queries 500
//! ```
//!
//! Builds two in-memory indexes of the same synthetic signatures (random fingerprints and
//! sketches; every 10th document a near copy of an earlier one: 2 fingerprint bits and a third
//! of the sketch bins changed): **today** stores the fingerprint and its 4 block keys, **rule**
//! stores the fingerprint, the 16 sketch words and the rule's 16 keys; each is merged into one
//! segment. It prints the indexing time of each, merge included (signatures given: the analysis
//! is timed by `fingerprint_speed`), and the p50
//! and p99 of `--queries` lookups of stored documents: today's (4 term look-ups, distance on
//! the fingerprint column) against the rule's (`SignatureReader::for_each_match`: 16 term
//! look-ups, `MatchRule::matches` on the signature columns), with their ratio.

use std::time::{Duration, Instant};
use tantivy::schema::{IndexRecordOption, NumericOptions, Schema, FAST};
use tantivy::{DocSet, Index, IndexWriter, TantivyDocument, Term, TERMINATED};
use tantivy_simhash::{BlockLayout, Fingerprint, MatchRule, Signature, Sketch};
use tantivy_simhash::{ResolvedSignatureFields, SignatureFields, SignatureReader};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn signatures(n: usize, words: usize) -> Vec<Signature> {
    let mut rng = Rng(0x5eed);
    let mut out: Vec<Signature> = Vec::with_capacity(n);
    for i in 0..n {
        if i % 10 == 9 {
            let src = &out[(rng.next() % i as u64) as usize];
            let mut s = src.clone();
            s.fingerprint = Fingerprint(s.fingerprint.0 ^ (1 << (rng.next() % 64)) ^ (1 << 5));
            for w in s.sketch.words.iter_mut() {
                // One byte in three replaced: about a third of the 8-bit bins.
                for b in 0..8 {
                    if rng.next().is_multiple_of(3) {
                        *w = (*w & !(0xff << (8 * b))) | ((rng.next() & 0xff) << (8 * b));
                    }
                }
            }
            out.push(s);
        } else {
            out.push(Signature {
                fingerprint: Fingerprint(rng.next()),
                sketch: Sketch {
                    words: (0..words).map(|_| rng.next()).collect(),
                },
            });
        }
    }
    out
}

/// Merges every segment into one (both indexes are compared with one segment each).
fn merge_all(index: &Index, mut writer: IndexWriter) -> tantivy::Result<()> {
    let ids = index.searchable_segment_ids()?;
    if ids.len() > 1 {
        writer.merge(&ids).wait()?;
    }
    writer.wait_merging_threads()
}

fn percentile(v: &mut [Duration], p: f64) -> Duration {
    v.sort_unstable();
    v[((v.len() - 1) as f64 * p) as usize]
}

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Each segment's fingerprint column and the inverted index of its key field, opened once, as a
/// searcher keeps them.
type Segments = Vec<(
    tantivy::columnar::Column<u64>,
    std::sync::Arc<tantivy::InvertedIndexReader>,
)>;

/// `--docs` and `--queries`.
fn parse_args() -> Res<(usize, usize)> {
    let (mut docs, mut queries) = (1_000_000usize, 2_000usize);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--docs" => docs = args.next().ok_or("--docs needs a number")?.parse()?,
            "--queries" => queries = args.next().ok_or("--queries needs a number")?.parse()?,
            _ => {
                return Err(format!(
                    "unknown argument {a}; usage: signature_bench [--docs N] [--queries Q]"
                )
                .into())
            }
        }
    }
    Ok((docs, queries))
}

/// Today's index: fingerprint + 4 block keys; returns the index, its key field and the
/// indexing time.
fn index_today(
    sigs: &[Signature],
    layout: &BlockLayout,
) -> Res<(Index, tantivy::schema::Field, Duration)> {
    let mut b = Schema::builder();
    let fp_field = b.add_u64_field("fp", FAST);
    let keys_field = b.add_u64_field("keys", NumericOptions::default().set_indexed());
    let today = Index::create_in_ram(b.build());
    let t = Instant::now();
    let mut w: IndexWriter = today.writer_with_num_threads(1, 200_000_000)?;
    for s in sigs {
        let mut d = TantivyDocument::default();
        d.add_u64(fp_field, s.fingerprint.0);
        for k in layout.keys(s.fingerprint) {
            d.add_u64(keys_field, k);
        }
        w.add_document(d)?;
    }
    w.commit()?;
    merge_all(&today, w)?;
    Ok((today, keys_field, t.elapsed()))
}

/// The rule's index: fingerprint + sketch words + 16 keys; returns the index, its fields and
/// the indexing time.
fn index_rule(
    sigs: &[Signature],
    rule: &MatchRule,
) -> Res<(Index, ResolvedSignatureFields, Duration)> {
    let names = SignatureFields::new("fp", "keys", rule);
    let mut b = Schema::builder();
    names.add_to_schema(&mut b);
    let ruled = Index::builder()
        .schema(b.build())
        .register_plugin(names.segment_component(rule))
        .create_in_ram()?;
    let fields = names.resolve(&ruled.schema())?;
    let t = Instant::now();
    let mut w: IndexWriter = ruled.writer_with_num_threads(1, 200_000_000)?;
    for s in sigs {
        let mut d = TantivyDocument::default();
        fields.add_to_document(rule, s, &mut d);
        w.add_document(d)?;
    }
    w.commit()?;
    merge_all(&ruled, w)?;
    Ok((ruled, fields, t.elapsed()))
}

fn open_segments(searcher: &tantivy::Searcher, keys: tantivy::schema::Field) -> Res<Segments> {
    Ok(searcher
        .segment_readers()
        .iter()
        .map(|seg| Ok((seg.fast_fields().u64("fp")?, seg.inverted_index(keys)?)))
        .collect::<tantivy::Result<_>>()?)
}

/// Today's lookup: the 4 block keys' postings, each candidate's distance checked and counted
/// under its first shared key only; returns the matches.
fn lookup_today(
    segments: &Segments,
    layout: &BlockLayout,
    keys_field: tantivy::schema::Field,
    query: &Signature,
) -> Res<usize> {
    let mut found = 0;
    for (col, inv) in segments {
        for (combo, key) in layout.keys(query.fingerprint).into_iter().enumerate() {
            let term = Term::from_field_u64(keys_field, key);
            let Some(mut p) = inv.read_postings(&term, IndexRecordOption::Basic)? else {
                continue;
            };
            let mut doc = p.doc();
            while doc != TERMINATED {
                if let Some(v) = col.first(doc) {
                    let other = Fingerprint(v);
                    if query.fingerprint.is_within(other, 3)
                        && layout.first_shared_key(query.fingerprint, other) == Some(combo)
                    {
                        found += 1;
                    }
                }
                doc = p.advance();
            }
        }
    }
    Ok(found)
}

/// The rule's 16 keys, postings read, nothing verified: the term dictionary's share; returns
/// the postings read.
fn read_rule_keys(
    segments: &Segments,
    rule: &MatchRule,
    fields: &ResolvedSignatureFields,
    query: &Signature,
) -> Res<usize> {
    let mut postings_read = 0;
    for (_, inv) in segments {
        for key in rule.keys(query) {
            let term = Term::from_field_u64(fields.keys_field(), key);
            if let Some(mut p) = inv.read_postings(&term, IndexRecordOption::Basic)? {
                while p.doc() != TERMINATED {
                    postings_read += 1;
                    p.advance();
                }
            }
        }
    }
    Ok(postings_read)
}

/// Latencies of the three lookups, one entry per query.
#[derive(Default)]
struct Latencies {
    today: Vec<Duration>,
    rule: Vec<Duration>,
    keys: Vec<Duration>,
}

fn print_latencies(
    lat: &mut Latencies,
    found: (usize, usize),
    postings_read: usize,
    queries: usize,
) {
    let (p50_t, p99_t) = (
        percentile(&mut lat.today, 0.5),
        percentile(&mut lat.today, 0.99),
    );
    let (p50_r, p99_r) = (
        percentile(&mut lat.rule, 0.5),
        percentile(&mut lat.rule, 0.99),
    );
    println!(
        "lookup p50: today {:.1} us, rule {:.1} us, ratio {:.2}; p99: today {:.1} us, rule {:.1} us",
        p50_t.as_secs_f64() * 1e6,
        p50_r.as_secs_f64() * 1e6,
        p50_r.as_secs_f64() / p50_t.as_secs_f64(),
        p99_t.as_secs_f64() * 1e6,
        p99_r.as_secs_f64() * 1e6
    );
    println!("matches found: today {}, rule {}", found.0, found.1);
    let p50_k = percentile(&mut lat.keys, 0.5);
    println!(
        "rule keys alone (16 term look-ups and postings, no verification): p50 {:.1} us, {:.1} postings per lookup",
        p50_k.as_secs_f64() * 1e6,
        postings_read as f64 / queries as f64
    );
}

fn main() -> Res<()> {
    let (docs, queries) = parse_args()?;
    let rule = MatchRule::default();
    let layout = BlockLayout::default();
    let sigs = signatures(docs, rule.minhash().sketch_words());
    println!("{docs} documents, {queries} lookups; rule: {rule}");

    let (today, keys_field, index_today) = index_today(&sigs, &layout)?;
    let (ruled, fields, index_rule) = index_rule(&sigs, &rule)?;
    println!(
        "indexing (signatures given): today {:.1} s, rule {:.1} s, ratio {:.2}",
        index_today.as_secs_f64(),
        index_rule.as_secs_f64(),
        index_rule.as_secs_f64() / index_today.as_secs_f64()
    );

    let (r_today, r_rule) = (today.reader()?, ruled.reader()?);
    let (s_today, s_rule) = (r_today.searcher(), r_rule.searcher());
    println!(
        "segments: today {}, rule {}",
        s_today.segment_readers().len(),
        s_rule.segment_readers().len()
    );
    let today_segments = open_segments(&s_today, keys_field)?;
    let lookups = SignatureReader::new(&s_rule, &rule)?;
    let mut rng = Rng(42);
    let picks: Vec<usize> = (0..queries)
        .map(|_| (rng.next() % docs as u64) as usize)
        .collect();
    let mut lat = Latencies::default();
    let rule_segments = open_segments(&s_rule, fields.keys_field())?;
    let mut postings_read = 0usize;
    let (mut found_today, mut found_rule) = (0usize, 0usize);
    // Alternate the two, query by query, so machine noise hits both alike.
    for &q in &picks {
        let query = &sigs[q];
        let t = Instant::now();
        found_today += lookup_today(&today_segments, &layout, keys_field, query)?;
        lat.today.push(t.elapsed());

        let t = Instant::now();
        postings_read += read_rule_keys(&rule_segments, &rule, &fields, query)?;
        lat.keys.push(t.elapsed());

        let t = Instant::now();
        lookups.for_each_match(&rule, query, usize::MAX, |_| found_rule += 1)?;
        lat.rule.push(t.elapsed());
    }
    print_latencies(&mut lat, (found_today, found_rule), postings_read, queries);
    println!(
        "bytes per document (stored values before compression): today 8 + 4 keys, rule {} + {} keys",
        8 + rule.sketch_bytes(),
        rule.keys_per_document()
    );
    Ok(())
}
