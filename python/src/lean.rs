//! The kernels of the Dask pipeline's lean shuffle (`tantivy_simhash.dask`): a document's
//! postings cross the shuffle as (group key, row) pairs, plus the fingerprint for the simhash
//! block keys, and its sketch crosses once per distinct candidate pair it is the first row of.
//!
//! Why this finds exactly the pairs of the exact single-machine join: two documents match when
//! their fingerprints are within the layout's distance (then they share a block key, by the
//! pigeonhole principle) or when they share a whole MinHash band and their sketches agree
//! enough. So every matching pair is either a pair of a block group within the distance (the
//! fingerprints in the postings decide it) or a pair of a band group (documents with equal
//! bands): those are the candidates, and each is verified by `MatchRule::matches` on the two
//! signatures. Group keys are 32 bits: a collision only adds candidates, which the
//! verification rejects.
//!
//! Self-contained on purpose (the rest of the binding is being refactored): the only thing it
//! takes from `rule.rs` is the rule of a `Rule`.

use crate::rule::Rule;
use crate::Failure;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tantivy_simhash::{Evidence, Fingerprint, MinHashConfig, Signature, Sketch};

/// A 64-bit key folded to 32 bits (the finaliser of splitmix64, then the high half).
fn fold32(key: u64) -> u32 {
    let mut z = key.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) >> 32) as u32
}

/// The group key of band `band` holding `value` (all `rows * bits` bits of it): the band and
/// its value packed exactly when they fit 32 bits (the default rule: 4 + 24 bits), else folded.
fn band_group(band: u32, value: u64, value_bits: u32, band_bits: u32) -> u32 {
    if value_bits + band_bits <= 32 {
        ((band as u64) << value_bits | value) as u32
    } else {
        fold32(value ^ (u64::from(band) << 48).rotate_left(7))
    }
}

/// Bits that number the bands (at least 1).
fn band_bits(bands: u32) -> u32 {
    (32 - bands.saturating_sub(1).leading_zeros()).max(1)
}

/// The lean postings of signed documents (the buffers of `Rule.sign_many`): ``(block_docs,
/// block_keys, band_docs, band_keys)``, little-endian u32 buffers: one block posting per
/// simhash block key of each document (its 64-bit key folded to 32 bits) and one band posting
/// per MinHash band of each document with tokens (the band's number and its whole value).
/// Cost: the keys of each document; 8 bytes per posting out.
#[pyfunction]
pub(crate) fn lean_postings<'py>(
    py: Python<'py>,
    rule: &Rule,
    fingerprints: &[u8],
    sketches: &[u8],
) -> PyResult<[Bound<'py, PyBytes>; 4]> {
    let rule = rule.match_rule();
    let fps = u64s(fingerprints, "fingerprints")?;
    let words = rule.minhash().sketch_words();
    let width = words * 8;
    if sketches.len() != fps.len() * width {
        return Err(Failure::Value(format!(
            "sketches has {} bytes for {} fingerprints; expected {} ({width} bytes per sketch \
             under this rule)",
            sketches.len(),
            fps.len(),
            fps.len() * width
        ))
        .into());
    }
    if fps.len() > u32::MAX as usize {
        return Err(Failure::Value(format!(
            "{} documents in one batch; expected at most {}",
            fps.len(),
            u32::MAX
        ))
        .into());
    }
    let out = py.detach(|| {
        let config = rule.minhash();
        let value_bits = config.key_bits;
        let nbits = band_bits(config.bands);
        let layout = rule.layout();
        let (mut block_docs, mut block_keys, mut band_docs, mut band_keys) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut keys = Vec::with_capacity(layout.num_keys());
        let mut words_buf = vec![0u64; words];
        for (i, &fp) in fps.iter().enumerate() {
            let doc = (i as u32).to_le_bytes();
            keys.clear();
            layout.keys_into(Fingerprint(fp), &mut keys);
            for &k in &keys {
                block_docs.extend_from_slice(&doc);
                block_keys.extend_from_slice(&fold32(k).to_le_bytes());
            }
            for (w, b) in words_buf
                .iter_mut()
                .zip(sketches[i * width..(i + 1) * width].chunks_exact(8))
            {
                *w = le_u64(b);
            }
            let sketch = Sketch {
                words: std::mem::take(&mut words_buf),
            };
            if !sketch.is_empty() {
                for band in 0..config.bands {
                    let value = sketch.band(config, band);
                    band_docs.extend_from_slice(&doc);
                    band_keys.extend_from_slice(
                        &band_group(band, value, value_bits, nbits).to_le_bytes(),
                    );
                }
            }
            words_buf = sketch.words;
        }
        (block_docs, block_keys, band_docs, band_keys)
    });
    Ok([
        PyBytes::new(py, &out.0),
        PyBytes::new(py, &out.1),
        PyBytes::new(py, &out.2),
        PyBytes::new(py, &out.3),
    ])
}

/// Candidate pairs of block postings grouped by key (every posting of a group in this call):
/// the pairs of a group whose fingerprints are within the rule's distance, each reported by the
/// group of its first shared block key only. ``keys`` u32, ``rows`` and ``fingerprints`` u64,
/// one entry per posting. Returns ``(row_a, row_b, largest_group)``: u64 buffers with ``row_a <
/// row_b``, and the most postings one group had. Cost: a popcount per pair of a group, so
/// quadratic in a group's size (the fingerprints of texts from one vocabulary crowd some block
/// values: the largest group is returned so a caller can see it).
#[pyfunction]
pub(crate) fn lean_block_candidates<'py>(
    py: Python<'py>,
    rule: &Rule,
    keys: &[u8],
    rows: &[u8],
    fingerprints: &[u8],
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>, usize)> {
    let rule = rule.match_rule();
    let keys = u32s(keys, "keys")?;
    let rows = u64s(rows, "rows")?;
    let fps = u64s(fingerprints, "fingerprints")?;
    same_length(keys.len(), rows.len(), "keys", "rows")?;
    same_length(keys.len(), fps.len(), "keys", "fingerprints")?;
    let (a, b, largest) = py.detach(|| {
        let layout = rule.layout();
        let max_distance = layout.max_distance();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let mut largest = 0;
        for run in group_runs(&keys, &rows) {
            largest = largest.max(run.len());
            let key = keys[run[0]];
            for (n, &x) in run.iter().enumerate() {
                let fx = Fingerprint(fps[x]);
                for &y in &run[n + 1..] {
                    let fy = Fingerprint(fps[y]);
                    if fx.distance(fy) > max_distance {
                        continue;
                    }
                    // Reported by the group of the first shared block key only.
                    let owner = layout
                        .first_shared_key(fx, fy)
                        .and_then(|p| layout.key(p, fx).ok())
                        .map(fold32);
                    if owner == Some(key) {
                        push_pair(&mut a, &mut b, rows[x], rows[y]);
                    }
                }
            }
        }
        (a, b, largest)
    });
    Ok((PyBytes::new(py, &a), PyBytes::new(py, &b), largest))
}

/// Candidate pairs of band postings grouped by key: every pair of each group (documents with
/// an equal band). ``keys`` u32 and ``rows`` u64, one entry per posting. Returns ``(row_a,
/// row_b, largest_group)`` as :func:`lean_block_candidates`. Cost: quadratic in a group's size.
#[pyfunction]
pub(crate) fn lean_band_candidates<'py>(
    py: Python<'py>,
    keys: &[u8],
    rows: &[u8],
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>, usize)> {
    let keys = u32s(keys, "keys")?;
    let rows = u64s(rows, "rows")?;
    same_length(keys.len(), rows.len(), "keys", "rows")?;
    let (a, b, largest) = py.detach(|| {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let mut largest = 0;
        for run in group_runs(&keys, &rows) {
            largest = largest.max(run.len());
            for (n, &x) in run.iter().enumerate() {
                for &y in &run[n + 1..] {
                    push_pair(&mut a, &mut b, rows[x], rows[y]);
                }
            }
        }
        (a, b, largest)
    });
    Ok((PyBytes::new(py, &a), PyBytes::new(py, &b), largest))
}

/// The verdict of the rule on candidate pairs: for each ``i``, document ``a`` (fingerprint
/// ``a_fingerprints[i]``, sketch ``i`` of ``a_sketches``) against document ``b`` (likewise).
/// Returns the matching ones as ``(row_a, row_b, distance, resemblance, band)``: u64, u64, u32,
/// f32 and i32 buffers (band -1 for simhash evidence), in the order given. Cost: one
/// `MatchRule::matches` per candidate.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(crate) fn lean_verify<'py>(
    py: Python<'py>,
    rule: &Rule,
    rows_a: &[u8],
    rows_b: &[u8],
    a_fingerprints: &[u8],
    a_sketches: &[u8],
    b_fingerprints: &[u8],
    b_sketches: &[u8],
) -> PyResult<[Bound<'py, PyBytes>; 5]> {
    let rule = rule.match_rule();
    let ra = u64s(rows_a, "rows_a")?;
    let rb = u64s(rows_b, "rows_b")?;
    let fa = u64s(a_fingerprints, "a_fingerprints")?;
    let fb = u64s(b_fingerprints, "b_fingerprints")?;
    same_length(ra.len(), rb.len(), "rows_a", "rows_b")?;
    same_length(ra.len(), fa.len(), "rows_a", "a_fingerprints")?;
    same_length(ra.len(), fb.len(), "rows_a", "b_fingerprints")?;
    let width = rule.sketch_bytes();
    for (name, buf) in [("a_sketches", a_sketches), ("b_sketches", b_sketches)] {
        if buf.len() != ra.len() * width {
            return Err(Failure::Value(format!(
                "{name} has {} bytes for {} candidates; expected {} ({width} bytes per sketch \
                 under this rule)",
                buf.len(),
                ra.len(),
                ra.len() * width
            ))
            .into());
        }
    }
    let out = py.detach(|| {
        let mut out: [Vec<u8>; 5] = Default::default();
        let signature = |fp: u64, sketch: &[u8]| Signature {
            fingerprint: Fingerprint(fp),
            sketch: Sketch {
                words: sketch.chunks_exact(8).map(le_u64).collect(),
            },
        };
        let minhash = rule.minhash();
        for i in 0..ra.len() {
            let sa = signature(fa[i], &a_sketches[i * width..(i + 1) * width]);
            let sb = signature(fb[i], &b_sketches[i * width..(i + 1) * width]);
            let Some(e) = rule.matches(&sa, &sb) else {
                continue;
            };
            let (distance, resemblance, band) = evidence(e, &sa, &sb, minhash);
            out[0].extend_from_slice(&ra[i].to_le_bytes());
            out[1].extend_from_slice(&rb[i].to_le_bytes());
            out[2].extend_from_slice(&distance.to_le_bytes());
            out[3].extend_from_slice(&resemblance.to_le_bytes());
            out[4].extend_from_slice(&band.to_le_bytes());
        }
        out
    });
    Ok(out.map(|column| PyBytes::new(py, &column)))
}

/// Distance, resemblance estimate (for both kinds) and band (-1 for simhash): what the
/// single-machine join reports for a pair.
fn evidence(e: Evidence, a: &Signature, b: &Signature, minhash: &MinHashConfig) -> (u32, f32, i32) {
    match e {
        Evidence::Simhash { distance } => (distance, a.sketch.resemblance(&b.sketch, minhash), -1),
        Evidence::Resemblance {
            band,
            resemblance,
            distance,
        } => (distance, resemblance, band as i32),
    }
}

/// Runs of postings with equal keys, each ordered by row; runs of one posting skipped.
fn group_runs(keys: &[u32], rows: &[u64]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_unstable_by_key(|&i| (keys[i], rows[i]));
    order
        .chunk_by(|&x, &y| keys[x] == keys[y])
        .filter(|run| run.len() > 1)
        .map(<[usize]>::to_vec)
        .collect()
}

fn push_pair(a: &mut Vec<u8>, b: &mut Vec<u8>, x: u64, y: u64) {
    a.extend_from_slice(&x.min(y).to_le_bytes());
    b.extend_from_slice(&x.max(y).to_le_bytes());
}

fn le_u64(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(b);
    u64::from_le_bytes(w)
}

fn u64s(bytes: &[u8], name: &str) -> Result<Vec<u64>, Failure> {
    if !bytes.len().is_multiple_of(8) {
        return Err(Failure::Value(format!(
            "{name} has {} bytes; expected a multiple of 8 (little-endian u64 values)",
            bytes.len()
        )));
    }
    Ok(bytes.chunks_exact(8).map(le_u64).collect())
}

fn u32s(bytes: &[u8], name: &str) -> Result<Vec<u32>, Failure> {
    if !bytes.len().is_multiple_of(4) {
        return Err(Failure::Value(format!(
            "{name} has {} bytes; expected a multiple of 4 (little-endian u32 values)",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

fn same_length(x: usize, y: usize, xn: &str, yn: &str) -> Result<(), Failure> {
    if x == y {
        Ok(())
    } else {
        Err(Failure::Value(format!(
            "{xn} has {x} entries but {yn} has {y}; expected one entry per posting in each"
        )))
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(lean_postings, m)?)?;
    m.add_function(wrap_pyfunction!(lean_block_candidates, m)?)?;
    m.add_function(wrap_pyfunction!(lean_band_candidates, m)?)?;
    m.add_function(wrap_pyfunction!(lean_verify, m)?)?;
    Ok(())
}
