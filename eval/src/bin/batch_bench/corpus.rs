//! The planted corpus of signatures (near-duplicates, resemblance neighbours, hot duplicate
//! groups) and the index built from it, or reused.

use super::*;

/// The documents: fingerprints and where each sketch comes from.
pub(crate) struct Corpus {
    pub(crate) fps: Vec<u64>,
    /// Per document: the seed of its sketch's words, and of the few words it changes (0: none).
    pub(crate) sketches: Vec<(u32, u32)>,
}

pub(crate) fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Corpus {
    pub(crate) fn signature(&self, i: usize, words: usize) -> Signature {
        let (base, edit) = self.sketches[i];
        let mut sketch: Vec<u64> = (0..words as u64)
            .map(|w| splitmix(u64::from(base) << 8 | w))
            .collect();
        if edit != 0 {
            // Three words beyond the band words (the first five) change: the bands stay.
            for e in 0..3u64 {
                let r = splitmix(u64::from(edit) << 8 | (100 + e));
                let w = 5 + (r % (words as u64 - 5)) as usize;
                sketch[w] = splitmix(r);
            }
        }
        Signature {
            fingerprint: Fingerprint(self.fps[i]),
            sketch: Sketch { words: sketch },
        }
    }
}

pub(crate) fn corpus(n: usize, seed: u64) -> Corpus {
    let mut rng = Rng(seed);
    let hot: Vec<(u64, usize)> = [1000, 3333, 10_000]
        .iter()
        .map(|&per| (rng.next_u64(), (n / per).max(2)))
        .collect();
    let mut out: Vec<(u64, (u32, u32))> = Vec::with_capacity(n);
    let mut next_seed = 1u32;
    let mut fresh = || {
        next_seed += 1;
        next_seed
    };
    for &(fp, count) in &hot {
        let s = fresh();
        out.extend(std::iter::repeat_n((fp, (s, 0)), count.min(n / 4)));
    }
    while out.len() < n {
        let roll = rng.below(100);
        if out.len() > 10 && roll < 6 {
            let (base, (s, _)) = out[rng.below(out.len() as u64) as usize];
            if roll < 5 {
                let d = 1 + rng.below(3) as u32;
                out.push((rng.flip(base, d), (s, fresh())));
            } else {
                out.push((rng.next_u64(), (s, fresh())));
            }
        } else {
            out.push((rng.next_u64(), (fresh(), 0)));
        }
    }
    out.truncate(n);
    // Shuffle so hot groups and planted pairs spread over segments.
    for i in (1..out.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        out.swap(i, j);
    }
    Corpus {
        fps: out.iter().map(|x| x.0).collect(),
        sketches: out.iter().map(|x| x.1).collect(),
    }
}

/// Builds the index of `fps` in `--index DIR` (or a temporary directory), or reuses the one
/// DIR holds; returns the temporary directory (kept alive by the caller), the index and the
/// build seconds (0 when reused).
pub(crate) fn open_or_build_index(
    args: &Args,
    corpus: &Corpus,
    threads: usize,
) -> Res<(tempfile::TempDir, NearDupIndex, f64)> {
    let n = corpus.fps.len();
    let tmp = tempfile::tempdir()?;
    let dir = args
        .index
        .clone()
        .unwrap_or_else(|| tmp.path().to_path_buf());
    let config = NearDupConfig::new("id", Vec::<String>::new()).with_group_field(None);
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING | FAST);
    config.add_fields(&mut builder);
    if dir.join("meta.json").exists() {
        // Reuse an index built by an earlier run with the same --docs: the peak memory of the
        // batch job is then measured in a process that never held an index writer.
        println!("build: skipped, reusing the index in --index");
        let index = NearDupIndex::open(Index::open_in_dir(&dir)?, config)?;
        return Ok((tmp, index, 0.0));
    }
    std::fs::create_dir_all(&dir)?;
    let index = NearDupIndex::create(Index::create_in_dir(&dir, builder.build())?, config)?;
    let t = Instant::now();
    {
        let mut w = index.writer_with_num_threads(threads.min(2), 400_000_000, Policy::Off)?;
        w.index_writer_mut()
            .set_merge_policy(Box::new(NoMergePolicy));
        let per_segment = n.div_ceil(args.segments);
        let words = index.rule().minhash().sketch_words();
        for i in 0..n {
            w.add_document_with_signature(
                doc!(id => format!("d{i:08}")),
                corpus.signature(i, words),
            )?;
            if (i + 1) % per_segment == 0 || i + 1 == n {
                w.commit()?;
            }
        }
        w.wait_merging_threads()?;
    }
    let build = secs(t);
    let build_peak = peak_mb();
    println!(
        "build: {build:.2} s (DedupWriter, Policy::Off, {} indexing threads), peak RSS so far \
         {build_peak:.0} MB",
        threads.min(2)
    );
    Ok((tmp, index, build))
}
