//! Sections 1 and 3: lookup latency against the in-memory pigeonhole table and brute force, the
//! first lookup of a fresh handle, and the bytes per document.

use super::*;

pub(crate) fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

pub(crate) struct Stats {
    pub(crate) p50: f64,
    pub(crate) p99: f64,
    pub(crate) mean: f64,
}

pub(crate) fn stats(mut v: Vec<Duration>) -> Stats {
    v.sort_unstable();
    let at = |q: f64| us(v[((v.len() as f64 * q) as usize).min(v.len() - 1)]);
    Stats {
        p50: at(0.50),
        p99: at(0.99),
        mean: v.iter().map(|d| us(*d)).sum::<f64>() / v.len() as f64,
    }
}

pub(crate) fn lookup_config() -> NearDupConfig {
    NearDupConfig::new("id", Vec::<String>::new()).with_group_field(None)
}

/// The first lookup of a fresh handle on the index in `dir` (every searcher of the old one
/// dropped by the caller; the key tables are read in place, nothing is built): opening, the
/// first lookup without ids (the tables and signatures), the same lookup with ids (the id
/// column's first reads), then a second lookup.
pub(crate) fn first_lookup(dir: &Path, q: Fingerprint) -> Res<()> {
    let t = Instant::now();
    let index = NearDupIndex::open_recorded(Index::open_in_dir(dir)?)?;
    let s = index.lookups()?;
    let open = t.elapsed();
    let k = s.fields().layout().max_distance();
    let t = Instant::now();
    s.lookup_addresses(q, k)?;
    let first = t.elapsed();
    let t = Instant::now();
    s.lookup(q)?;
    let ids = t.elapsed();
    let t = Instant::now();
    s.lookup(q)?;
    let second = t.elapsed();
    println!(
        "fresh handle: open {:.2} ms, first lookup {:.2} ms without ids, then {:.2} ms with ids, second lookup {:.1} us",
        us(open) / 1e3,
        us(first) / 1e3,
        us(ids) / 1e3,
        us(second)
    );
    Ok(())
}

/// Indexes `fps` in 8 commits (no merges) in a temporary directory, and drops the writer and
/// the index (for a fresh handle); returns the directory.
pub(crate) fn build_lookup_index(fps: &[u64]) -> Res<tempfile::TempDir> {
    build_in_eight_commits(fps, lookup_config(), "fingerprints", |w, doc, &fp| {
        w.add_document_with_fingerprint(doc, Fingerprint(fp))
            .map(|_| ())
    })
}

/// Indexes `items` under `config`, one document each (an id and what `add` gives it), in 8
/// commits without merges in a temporary directory; drops the writer and the index, so the
/// next handle is fresh, and returns the directory.
pub(crate) fn build_in_eight_commits<T>(
    items: &[T],
    config: NearDupConfig,
    what: &str,
    mut add: impl FnMut(
        &mut tantivy_simhash::DedupWriter,
        TantivyDocument,
        &T,
    ) -> tantivy_simhash::Result<()>,
) -> Res<tempfile::TempDir> {
    let n = items.len();
    let dir = tempfile::tempdir()?;
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING | FAST);
    config.add_fields(&mut builder);
    let index = NearDupIndex::create(Index::create_in_dir(dir.path(), builder.build())?, config)?;
    let t = Instant::now();
    let mut w = index.writer_with_num_threads(1, 200_000_000, Policy::Off)?;
    w.index_writer_mut()
        .set_merge_policy(Box::new(NoMergePolicy));
    let per_segment = n.div_ceil(8);
    for (i, item) in items.iter().enumerate() {
        add(&mut w, doc!(id => format!("d{i:07}")), item)?;
        if (i + 1) % per_segment == 0 || i + 1 == n {
            w.commit()?;
        }
    }
    println!(
        "indexed {n} {what} (Policy::Off, 1 thread, 8 commits) in {:.2} s",
        t.elapsed().as_secs_f64()
    );
    // The writer holds a searcher of the segments: drop it for the fresh handle.
    drop(w);
    drop(index);
    Ok(dir)
}

pub(crate) fn lookup_bench(n: usize, n_queries: usize) -> Res<()> {
    let layout = BlockLayout::default();
    let k = layout.max_distance();
    println!("\n## Lookup, N = {n}, layout {} (k = {k})", layout.id());
    let fps = corpus(n, 42);
    let qs = queries(&fps, n_queries, k, 7);

    let t = Instant::now();
    let table = PigeonholeTable::new(&layout, &fps)?;
    println!(
        "pigeonhole table built in {:.2} s",
        t.elapsed().as_secs_f64()
    );

    let dir = build_lookup_index(&fps)?;
    first_lookup(dir.path(), Fingerprint(qs[0]))?;
    let index = NearDupIndex::open_recorded(Index::open_in_dir(dir.path())?)?;
    let mut w = index.writer_with_num_threads(1, 200_000_000, Policy::Off)?;
    w.index_writer_mut()
        .set_merge_policy(Box::new(NoMergePolicy));

    let searcher = index.lookups()?;
    bytes_per_doc(&searcher, "random fingerprints")?;
    run_lookups(&searcher, &fps, &qs, &table, k)?;

    let segs = index.index().searchable_segment_ids()?;
    let t = Instant::now();
    w.index_writer_mut().merge(&segs).wait()?;
    w.commit()?;
    w.wait_merging_threads()?;
    println!(
        "merged to one segment in {:.2} s",
        t.elapsed().as_secs_f64()
    );
    drop((searcher, index));
    first_lookup(dir.path(), Fingerprint(qs[0]))?;
    let index = NearDupIndex::open_recorded(Index::open_in_dir(dir.path())?)?;
    let searcher = index.lookups()?;
    bytes_per_doc(&searcher, "random fingerprints, merged")?;
    run_lookups(&searcher, &fps, &qs, &table, k)?;
    Ok(())
}

/// The bytes of the segment component's files (signatures and key tables) per document.
pub(crate) fn component_report(s: &NearDupLookup) -> Res<()> {
    let (bytes, docs) = component_bytes(s.searcher())?;
    println!(
        "segment component: {} segment(s), {docs} documents, {:.1} MB = {:.1} B per document \
         (signatures and key tables; read in place, nothing built)",
        s.searcher().segment_readers().len(),
        bytes as f64 / 1e6,
        bytes as f64 / docs.max(1) as f64,
    );
    Ok(())
}

/// The bytes of the segment component's files and the documents of their segments (deleted
/// ones included).
pub(crate) fn component_bytes(searcher: &tantivy::Searcher) -> Res<(u64, u64)> {
    let (mut bytes, mut docs) = (0u64, 0u64);
    for seg in searcher.segment_readers() {
        let file = seg.open_read(tantivy::index::SegmentComponent::Custom(
            tantivy_simhash::COMPONENT_EXTENSION.into(),
        ))?;
        bytes += tantivy::HasLen::len(&file) as u64;
        docs += u64::from(seg.max_doc());
    }
    Ok((bytes, docs))
}

/// Times `f` on each query (the call alone); returns the latencies' stats and the sum of the
/// result sizes.
pub(crate) fn time_queries<'q>(
    qs: impl Iterator<Item = &'q u64>,
    mut f: impl FnMut(Fingerprint) -> Res<usize>,
) -> Res<(Stats, usize)> {
    let mut times = Vec::new();
    let mut found = 0;
    for &q in qs {
        let t = Instant::now();
        let n = f(Fingerprint(q))?;
        times.push(t.elapsed());
        found += n;
    }
    Ok((stats(times), found))
}

/// Expected result sizes, from brute force; also warms every path once.
pub(crate) fn expected_sizes(
    s: &NearDupLookup,
    fps: &[u64],
    qs: &[u64],
    k: u32,
) -> Res<Vec<usize>> {
    let mut want = Vec::with_capacity(qs.len());
    let mut buf = Vec::new();
    for &q in qs {
        buf.clear();
        brute_force(fps, Fingerprint(q), k, &mut buf);
        want.push(buf.len());
        s.lookup(Fingerprint(q))?;
        s.searcher().search(
            &NearDupQuery::new(s.fields(), Fingerprint(q)),
            &DocSetCollector,
        )?;
    }
    Ok(want)
}

/// The lookup table: latencies, ratios to the in-memory table (row 3), recall against the
/// expected matches (`expected[i]` for row `i`).
pub(crate) fn print_lookup_rows(rows: &[(&str, Stats, usize)], expected: impl Fn(usize) -> usize) {
    let table_p50 = rows[3].1.p50;
    let table_p99 = rows[3].1.p99;
    println!(
        "| method | p50 us | p99 us | mean us | p50 / table | p99 / table | recall |\n|---|---|---|---|---|---|---|"
    );
    for (i, (name, st, found)) in rows.iter().enumerate() {
        let expected = expected(i);
        println!(
            "| {name} | {:.1} | {:.1} | {:.1} | {:.1}x | {:.1}x | {} |",
            st.p50,
            st.p99,
            st.mean,
            st.p50 / table_p50,
            st.p99 / table_p99,
            if *found == expected {
                "100%".to_string()
            } else {
                format!("{found} of {expected}")
            }
        );
    }
}

pub(crate) fn run_lookups(
    s: &NearDupLookup,
    fps: &[u64],
    qs: &[u64],
    table: &PigeonholeTable,
    k: u32,
) -> Res<()> {
    let segments = s.searcher().segment_readers().len();
    let t = Instant::now();
    let reopened = NearDupLookup::new(s.fields(), s.searcher())?;
    let open_cost = t.elapsed();
    drop(reopened);
    println!(
        "\n{segments} segment(s), {} queries; opening a NearDupLookup: {:.1} us",
        qs.len(),
        us(open_cost)
    );
    component_report(s)?;

    let want = expected_sizes(s, fps, qs, k)?;
    let total: usize = want.iter().sum();

    let mut rows: Vec<(&str, Stats, usize)> = Vec::new();
    let (st, found) = time_queries(qs.iter(), |q| Ok(s.lookup(q)?.len()))?;
    rows.push(("NearDupLookup::lookup (with ids)", st, found));
    let (st, found) = time_queries(qs.iter(), |q| Ok(s.lookup_addresses(q, k)?.len()))?;
    rows.push(("NearDupLookup::lookup_addresses (no ids)", st, found));
    let (st, found) = time_queries(qs.iter(), |q| {
        let query = NearDupQuery::new(s.fields(), q);
        Ok(s.searcher().search(&query, &DocSetCollector)?.len())
    })?;
    rows.push(("NearDupQuery + DocSetCollector", st, found));
    let mut buf = Vec::new();
    let (st, found) = time_queries(qs.iter(), |q| {
        buf.clear();
        table.lookup(q, k, &mut buf)?;
        Ok(buf.len())
    })?;
    rows.push(("in-memory pigeonhole table", st, found));
    // Brute force is slow: a quarter of the queries is plenty for its percentiles.
    let (st, found) = time_queries(qs.iter().step_by(4), |q| {
        buf.clear();
        brute_force(fps, q, k, &mut buf);
        Ok(buf.len())
    })?;
    rows.push(("brute-force scan (1/4 of the queries)", st, found));
    let expected_bf: usize = want.iter().step_by(4).sum();

    print_lookup_rows(&rows, |i| match i {
        4 => expected_bf,
        _ => total,
    });
    println!("({total} matches over all queries)");
    Ok(())
}

pub(crate) fn bytes_per_doc(s: &NearDupLookup, what: &str) -> Res<()> {
    let usage = s.searcher().space_usage()?;
    let (component, docs) = component_bytes(s.searcher())?;
    let per = |b: u64| b as f64 / docs.max(1) as f64;
    println!(
        "bytes per document ({what}, {} segment(s)): near-duplicate data {:.1} B (the segment \
         component: signatures and key tables); whole index {:.1} B",
        usage.segments().len(),
        per(component),
        per(usage.total().get_bytes())
    );
    Ok(())
}
