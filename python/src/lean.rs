//! The kernels of the Dask pipeline's lean shuffle (`tantivy_simhash.dask`). Five steps, each a
//! kernel over one partition whose output is packed records addressed to partitions (one
//! buffer per destination, so the shuffles move the records' own bytes):
//!
//! 1. [`lean_post`] (at the signatures): postings, (block key, position, fingerprint) for each
//!    simhash block key and (band key, position) for each MinHash band, addressed to the group
//!    partition of the key (16 and 8 bytes);
//! 2. [`lean_candidates`] (at the key groups): the pairs of each block group within the rule's
//!    distance (owned by their first shared block key) and every pair of each band group,
//!    addressed to the partition of the first row (12 bytes: its position, the second row);
//! 3. [`lean_attach`] (at the first rows): duplicates dropped; a pair found by a block group
//!    matches for sure (simhash branch) and goes on bare; any other pair carries the first
//!    row's *screen*, bit 0 of each of its sketch's bins (32 bytes by default), to the
//!    partition of the second row;
//! 4. [`lean_screen`] (at the second rows): a screened pair whose bit-0 differences already
//!    leave fewer agreeing bins than the rule's threshold needs ([`min_agreeing_bins`]) is
//!    dropped; the rest go back to the first row with the second row's signature;
//! 5. [`lean_verify`] (at the first rows): `MatchRule::matches` on both signatures.
//!
//! Why this finds exactly the pairs of the single-machine join: a pair the rule matches is
//! within the distance (then it shares a block key, by the pigeonhole principle, and its owner
//! group names it) or shares a band (then a band group names it): the candidates hold every
//! match. A candidate no block group named is beyond the distance (a pair within it is named
//! by its block group, and both reach the partition of the first row), so it matches only by
//! the resemblance branch: its sketches must agree in at least `min_agreeing_bins` bins, and a
//! bin whose bit 0 differs does not agree, so the screen drops no match. Every survivor is
//! decided by `MatchRule::matches` itself. Block group keys are folded to 32 bits: a collision
//! only adds candidates, which the verification rejects. Band groups are exact (band, key):
//! see [`BandGroups`].

use crate::rule::{below_min_resemblance, check_min_resemblance, Rule};
use crate::Failure;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::collections::BTreeMap;
use tantivy_simhash::{Evidence, Fingerprint, MatchRule, MinHashConfig, Signature, Sketch};

/// A 64-bit key folded to 32 bits (the finaliser of splitmix64, then the high half).
fn fold32(key: u64) -> u32 {
    let mut z = key.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) >> 32) as u32
}

/// How band postings name their group (band, key): packed into the 32-bit key when the band's
/// number and its key fit (the default rule: 4 + 20 bits), else the key alone (up to 32 bits)
/// with the band's number in the top bits of the 32-bit position word. Either way a group is
/// exactly one (band, key), so a band group holds exactly the documents that share that band's
/// key: no chance candidates beyond the rule's own, at 8 bytes a posting.
#[derive(Clone, Copy)]
struct BandGroups {
    key_bits: u32,
    band_bits: u32,
}

impl BandGroups {
    fn of(config: &MinHashConfig) -> BandGroups {
        BandGroups {
            key_bits: config.key_bits,
            band_bits: band_bits(config.bands),
        }
    }

    /// Whether the band's number rides in the key (else in the position word).
    fn packed(self) -> bool {
        self.key_bits + self.band_bits <= 32
    }

    /// Documents a partition may hold: positions must leave room for the band's number when it
    /// rides in the position word.
    fn max_positions(self) -> u64 {
        if self.packed() {
            1 << 32
        } else {
            1 << (32 - self.band_bits)
        }
    }

    /// The posting `(key, position word)` of band `band` holding `value` at `pos`.
    fn posting(self, band: u32, value: u64, pos: u32) -> (u32, u32) {
        if self.packed() {
            ((u64::from(band) << self.key_bits | value) as u32, pos)
        } else {
            (value as u32, band << (32 - self.band_bits) | pos)
        }
    }

    /// The group (band and key, as one number) and the position of a posting.
    fn group(self, key: u32, word: u32) -> (u64, u32) {
        if self.packed() {
            (u64::from(key), word)
        } else {
            let shift = 32 - self.band_bits;
            (
                u64::from(key) << self.band_bits | u64::from(word >> shift),
                word & ((1 << shift) - 1),
            )
        }
    }
}

/// Bits that number the bands (at least 1).
fn band_bits(bands: u32) -> u32 {
    (32 - bands.saturating_sub(1).leading_zeros()).max(1)
}

/// The group partition of a 32-bit key (a multiplicative hash, so that packed band keys, whose
/// low bits are the band's value, spread evenly).
fn key_partition(key: u32, groups: u32) -> u32 {
    ((u64::from(key).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) % u64::from(groups)) as u32
}

/// Kinds of shards (the `kind` column of the pipeline's shard frames).
const BLOCK_POSTINGS: u8 = 0;
const BAND_POSTINGS: u8 = 1;
const BLOCK_PAIRS: u8 = 2;
const BAND_PAIRS: u8 = 3;
const SURE: u8 = 4;
const SCREENED: u8 = 5;
const SURVIVORS: u8 = 6;

/// Packed records addressed to partitions: one buffer per (destination, kind).
#[derive(Default)]
struct Shards(BTreeMap<(u32, u8), Vec<u8>>);

impl Shards {
    fn to(&mut self, part: u32, kind: u8) -> &mut Vec<u8> {
        self.0.entry((part, kind)).or_default()
    }

    /// ``(parts, kinds, blobs)`` for Python.
    fn into_py(self, py: Python<'_>) -> ShardsOut<'_> {
        let mut out = (Vec::new(), Vec::new(), Vec::new());
        for ((part, kind), blob) in self.0 {
            out.0.push(part);
            out.1.push(kind);
            out.2.push(PyBytes::new(py, &blob));
        }
        out
    }
}

type ShardsOut<'py> = (Vec<u32>, Vec<u8>, Vec<Bound<'py, PyBytes>>);
/// Shards and a count (the largest group, the pairs screened out).
type CountedShards<'py> = (Vec<u32>, Vec<u8>, Vec<Bound<'py, PyBytes>>, usize);

/// The signatures of one partition, as the pipeline keeps them: its number, fingerprints and
/// packed sketch words.
struct Local {
    number: u32,
    fps: Vec<u64>,
    words: Vec<u64>,
    width: usize,
}

impl Local {
    fn new(
        rule: &MatchRule,
        number: u32,
        fingerprints: &[u8],
        sketches: &[u8],
    ) -> Result<Local, Failure> {
        let fps = u64s(fingerprints, "fingerprints")?;
        let width = rule.minhash().sketch_words();
        let words = u64s(sketches, "sketches")?;
        if words.len() != fps.len() * width {
            return Err(Failure::Value(format!(
                "sketches has {} bytes for {} fingerprints; expected {} ({} bytes per sketch \
                 under this rule)",
                sketches.len(),
                fps.len(),
                fps.len() * width * 8,
                width * 8
            )));
        }
        Ok(Local {
            number,
            fps,
            words,
            width,
        })
    }

    fn sketch(&self, pos: u32) -> Result<&[u64], Failure> {
        let at = pos as usize;
        if at >= self.fps.len() {
            return Err(Failure::Value(format!(
                "a record names position {pos} of partition {}, which has {} documents; \
                 expected the shards of this pipeline's own signatures",
                self.number,
                self.fps.len()
            )));
        }
        Ok(&self.words[at * self.width..(at + 1) * self.width])
    }

    fn row(&self, pos: u32) -> u64 {
        u64::from(self.number) << 32 | u64::from(pos)
    }
}

fn partition_of(row: u64) -> u32 {
    (row >> 32) as u32
}

/// Step 1: the postings of one partition of signatures (the buffers of `Rule.sign_many`),
/// addressed to `groups` key-group partitions: per simhash block key `key u32, position u32,
/// fingerprint u64` (kind 0), per MinHash band of a document with tokens `key u32, position
/// u32` (kind 1; the band's number in one of them, [`BandGroups`]). Returns ``(parts, kinds,
/// blobs)``. Errors for a partition of more documents than the position word leaves room for
/// (2^28 with 32-bit band keys and 12 bands). Cost: the keys of each document.
#[pyfunction]
pub(crate) fn lean_post<'py>(
    py: Python<'py>,
    rule: &Rule,
    fingerprints: &[u8],
    sketches: &[u8],
    groups: u32,
) -> PyResult<ShardsOut<'py>> {
    let rule = rule.match_rule();
    let local = Local::new(rule, 0, fingerprints, sketches)?;
    if groups == 0 {
        return Err(
            Failure::Value("groups = 0; expected at least one key-group partition".into()).into(),
        );
    }
    let config = rule.minhash();
    let groups_of_bands = BandGroups::of(config);
    if local.fps.len() as u64 > groups_of_bands.max_positions() {
        return Err(Failure::Value(format!(
            "{} documents in one partition; expected at most {} under a rule of {} bands with \
             {}-bit band keys (the band's number shares the position's 32 bits): repartition \
             the input",
            local.fps.len(),
            groups_of_bands.max_positions(),
            config.bands,
            config.key_bits
        ))
        .into());
    }
    let shards = py.detach(|| {
        let layout = rule.layout();
        let mut shards = Shards::default();
        let mut keys = Vec::with_capacity(layout.num_keys());
        for (i, &fp) in local.fps.iter().enumerate() {
            let pos = (i as u32).to_le_bytes();
            keys.clear();
            layout.keys_into(Fingerprint(fp), &mut keys);
            for &k in &keys {
                let key = fold32(k);
                let out = shards.to(key_partition(key, groups), BLOCK_POSTINGS);
                out.extend_from_slice(&key.to_le_bytes());
                out.extend_from_slice(&pos);
                out.extend_from_slice(&fp.to_le_bytes());
            }
            let words = &local.words[i * local.width..(i + 1) * local.width];
            if words.iter().all(|&w| w == 0) {
                continue; // no tokens: no bands
            }
            let sketch = Sketch {
                words: words.to_vec(),
            };
            for band in 0..config.bands {
                let (key, word) =
                    groups_of_bands.posting(band, sketch.band(config, band), i as u32);
                let out = shards.to(key_partition(key, groups), BAND_POSTINGS);
                out.extend_from_slice(&key.to_le_bytes());
                out.extend_from_slice(&word.to_le_bytes());
            }
        }
        shards
    });
    Ok(shards.into_py(py))
}

/// The records of received shards of one kind, checked: `(source partitions, blobs)`.
fn records<'a>(
    kinds: &[u8],
    blobs: &'a [Bound<'_, PyBytes>],
    kind: u8,
    width: usize,
) -> Result<Vec<(usize, &'a [u8])>, Failure> {
    let mut out = Vec::new();
    for (n, (&k, blob)) in kinds.iter().zip(blobs).enumerate() {
        if k != kind {
            continue;
        }
        let bytes = blob.as_bytes();
        if !bytes.len().is_multiple_of(width) {
            return Err(Failure::Value(format!(
                "a shard of kind {kind} has {} bytes; expected a multiple of {width} (its \
                 records' width)",
                bytes.len()
            )));
        }
        out.push((n, bytes));
    }
    Ok(out)
}

fn check_shards(kinds: &[u8], srcs: Option<&[u32]>, blobs: usize) -> Result<(), Failure> {
    if kinds.len() != blobs || srcs.is_some_and(|s| s.len() != blobs) {
        return Err(Failure::Value(format!(
            "{} kinds and {} sources for {blobs} shards; expected one of each per shard",
            kinds.len(),
            srcs.map_or(blobs, <[u32]>::len)
        )));
    }
    Ok(())
}

/// Step 2: at a key-group partition, the candidate pairs of the postings it received (shards of
/// kinds 0 and 1 from source partitions `srcs`): block groups name their pairs within the
/// rule's distance, each by its first shared block key only (kind 2), band groups every pair
/// (kind 3, less those a block group here named), each pair once, addressed to the partition of
/// its first row as `position u32, second row u64`. Returns ``(parts, kinds, blobs,
/// largest_group)``. Cost: a sort of the postings, a popcount per pair of a block group and a
/// record per pair of a band group, so quadratic in a group's size.
#[pyfunction]
pub(crate) fn lean_candidates<'py>(
    py: Python<'py>,
    rule: &Rule,
    srcs: Vec<u32>,
    kinds: Vec<u8>,
    blobs: Vec<Bound<'py, PyBytes>>,
) -> PyResult<CountedShards<'py>> {
    let rule = rule.match_rule();
    check_shards(&kinds, Some(&srcs), blobs.len())?;
    let block = records(&kinds, &blobs, BLOCK_POSTINGS, 16)?;
    let band = records(&kinds, &blobs, BAND_POSTINGS, 8)?;
    let (shards, largest) = py.detach(|| {
        let row = |n: usize, r: &[u8]| u64::from(srcs[n]) << 32 | u64::from(le_u32(&r[4..8]));
        let mut postings: Vec<(u32, u64, u64)> = Vec::new();
        for &(n, bytes) in &block {
            for r in bytes.chunks_exact(16) {
                postings.push((le_u32(&r[..4]), row(n, r), le_u64(&r[8..16])));
            }
        }
        postings.sort_unstable();
        let layout = rule.layout();
        let max_distance = layout.max_distance();
        let mut largest = 0;
        let mut sure: Vec<(u64, u64)> = Vec::new();
        for run in postings.chunk_by(|x, y| x.0 == y.0) {
            largest = largest.max(run.len());
            for (n, &(key, x, fx)) in run.iter().enumerate() {
                for &(_, y, fy) in &run[n + 1..] {
                    let (fx, fy) = (Fingerprint(fx), Fingerprint(fy));
                    if fx.distance(fy) > max_distance {
                        continue;
                    }
                    // Named by the group of the first shared block key only.
                    let owner = layout
                        .first_shared_key(fx, fy)
                        .and_then(|p| layout.key(p, fx).ok())
                        .map(fold32);
                    if owner == Some(key) {
                        sure.push((x.min(y), x.max(y)));
                    }
                }
            }
        }
        drop(postings);
        let groups_of_bands = BandGroups::of(rule.minhash());
        let mut bands: Vec<(u64, u64)> = Vec::new();
        for &(n, bytes) in &band {
            for r in bytes.chunks_exact(8) {
                let (group, pos) = groups_of_bands.group(le_u32(&r[..4]), le_u32(&r[4..8]));
                bands.push((group, u64::from(srcs[n]) << 32 | u64::from(pos)));
            }
        }
        bands.sort_unstable();
        let mut others: Vec<(u64, u64)> = Vec::new();
        for run in bands.chunk_by(|x, y| x.0 == y.0) {
            largest = largest.max(run.len());
            for (n, &(_, x)) in run.iter().enumerate() {
                for &(_, y) in &run[n + 1..] {
                    others.push((x.min(y), x.max(y)));
                }
            }
        }
        drop(bands);
        sure.sort_unstable();
        sure.dedup();
        others.sort_unstable();
        others.dedup();
        let mut shards = Shards::default();
        for &(a, b) in &sure {
            pair_record(shards.to(partition_of(a), BLOCK_PAIRS), a, b);
        }
        for &(a, b) in &others {
            if sure.binary_search(&(a, b)).is_err() {
                pair_record(shards.to(partition_of(a), BAND_PAIRS), a, b);
            }
        }
        (shards, largest)
    });
    let (parts, kinds, blobs) = shards.into_py(py);
    Ok((parts, kinds, blobs, largest))
}

fn pair_record(out: &mut Vec<u8>, a: u64, b: u64) {
    out.extend_from_slice(&(a as u32).to_le_bytes());
    out.extend_from_slice(&b.to_le_bytes());
}

/// Step 3: at the partition `number` of first rows (its signatures given), the candidates it
/// received (kinds 2 and 3), each once: a pair a block group named (within the rule's
/// distance, so a match) goes on as `position u32, first row u64` (kind 4); any other as
/// `position u32, first row u64` and the first row's screen (kind 5, [`screen_words`] words),
/// both addressed to the partition of the second row. Returns ``(parts, kinds, blobs)``.
/// Cost: a sort of the candidates and a screen per pair of kind 5.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(crate) fn lean_attach<'py>(
    py: Python<'py>,
    rule: &Rule,
    number: u32,
    fingerprints: &[u8],
    sketches: &[u8],
    kinds: Vec<u8>,
    blobs: Vec<Bound<'py, PyBytes>>,
) -> PyResult<ShardsOut<'py>> {
    let rule = rule.match_rule();
    let local = Local::new(rule, number, fingerprints, sketches)?;
    check_shards(&kinds, None, blobs.len())?;
    let sure = records(&kinds, &blobs, BLOCK_PAIRS, 12)?;
    let others = records(&kinds, &blobs, BAND_PAIRS, 12)?;
    let shards = py.detach(|| -> Result<Shards, Failure> {
        let pairs = |shards: &[(usize, &[u8])]| {
            let mut v: Vec<(u32, u64)> = shards
                .iter()
                .flat_map(|&(_, bytes)| bytes.chunks_exact(12))
                .map(|r| (le_u32(&r[..4]), le_u64(&r[4..12])))
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let (sure, others) = (pairs(&sure), pairs(&others));
        let config = rule.minhash();
        let mut shards = Shards::default();
        for &(pos, b) in &sure {
            local.sketch(pos)?;
            pair_record(shards.to(partition_of(b), SURE), b, local.row(pos));
        }
        let mut screen = Vec::new();
        for &(pos, b) in &others {
            if sure.binary_search(&(pos, b)).is_ok() {
                continue;
            }
            let out = shards.to(partition_of(b), SCREENED);
            pair_record(out, b, local.row(pos));
            screen.clear();
            screen_into(local.sketch(pos)?, config, &mut screen);
            for w in &screen {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
        Ok(shards)
    })?;
    Ok(shards.into_py(py))
}

/// Words of a screen: one bit per bin.
fn screen_words(config: &MinHashConfig) -> usize {
    (config.slots as usize).div_ceil(64)
}

/// Appends the screen of a sketch (its packed words) to `out`: bit 0 of each bin, bin `j` at
/// bit `j % 64` of word `j / 64`. Two bins whose bit 0 differs do not agree, so the popcount of
/// two screens' XOR is a number of bins that certainly disagree.
fn screen_into(words: &[u64], config: &MinHashConfig, out: &mut Vec<u64>) {
    let bins = &words[config.band_words().min(words.len())..];
    let bits = config.bits as usize;
    let per_word = 64 / bits;
    let start = out.len();
    out.resize(start + screen_words(config), 0);
    for j in 0..config.slots as usize {
        let bit = bins
            .get(j / per_word)
            .map_or(0, |w| w >> ((j % per_word) * bits) & 1);
        out[start + j / 64] |= bit << (j % 64);
    }
}

/// The fewest agreeing bins (of `slots`) with which the rule's resemblance branch can match:
/// the smallest count whose estimate, computed by the rule's own estimator
/// (`Sketch::resemblance` of two sketches that agree in exactly that many bins), is at least
/// the rule's `min_resemblance`; `slots + 1` when none is. A pair whose sketches agree in fewer
/// bins does not match by resemblance, whether or not the estimator is monotone. Cost:
/// `slots + 1` estimates.
pub(crate) fn min_agreeing_bins(rule: &MatchRule) -> u32 {
    let config = rule.minhash();
    let threshold = rule.spec().min_resemblance;
    let (band_words, words) = (config.band_words(), config.sketch_words());
    let bits = config.bits as usize;
    let per_word = 64 / bits;
    let estimate = |agree: u32| {
        // Not empty: a band word set in both. Bins: 0 in `a`; 1 in `b` for the first
        // `slots - agree` bins, 0 after.
        let mut a = vec![0u64; words];
        let mut b = vec![0u64; words];
        a[0] = 1;
        b[0] = 1;
        for j in 0..(config.slots - agree) as usize {
            b[band_words + j / per_word] |= 1 << ((j % per_word) * bits);
        }
        Sketch { words: a }.resemblance(&Sketch { words: b }, config)
    };
    (0..=config.slots)
        .find(|&agree| estimate(agree) >= threshold)
        .unwrap_or(config.slots + 1)
}

/// Whether a screened pair can still match: the bins its screens do not prove different are at
/// least `least` ([`min_agreeing_bins`]).
fn passes(a: &[u64], b: &[u64], slots: u32, least: u32) -> bool {
    let differ: u32 = a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum();
    slots.saturating_sub(differ) >= least
}

/// Step 4: at the partition `number` of second rows (its signatures given), the pairs it
/// received: sure ones (kind 4) all, screened ones (kind 5) when [`passes`] says they can still
/// match, sent back to the partition of the first row as `position u32, second row u64,
/// fingerprint u64, sketch` of the second row (kind 6). Returns ``(parts, kinds, blobs,
/// screened_out)``. Cost: a screen per screened pair.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(crate) fn lean_screen<'py>(
    py: Python<'py>,
    rule: &Rule,
    number: u32,
    fingerprints: &[u8],
    sketches: &[u8],
    kinds: Vec<u8>,
    blobs: Vec<Bound<'py, PyBytes>>,
) -> PyResult<CountedShards<'py>> {
    let rule = rule.match_rule();
    let local = Local::new(rule, number, fingerprints, sketches)?;
    check_shards(&kinds, None, blobs.len())?;
    let config = rule.minhash();
    let screened_width = 12 + 8 * screen_words(config);
    let sure = records(&kinds, &blobs, SURE, 12)?;
    let screened = records(&kinds, &blobs, SCREENED, screened_width)?;
    let (shards, dropped) = py.detach(|| -> Result<(Shards, usize), Failure> {
        let least = min_agreeing_bins(rule);
        let mut shards = Shards::default();
        let mut send = |pos: u32, a: u64| -> Result<(), Failure> {
            let words = local.sketch(pos)?;
            let out = shards.to(partition_of(a), SURVIVORS);
            pair_record(out, a, local.row(pos));
            out.extend_from_slice(&local.fps[pos as usize].to_le_bytes());
            for w in words {
                out.extend_from_slice(&w.to_le_bytes());
            }
            Ok(())
        };
        for &(_, bytes) in &sure {
            for r in bytes.chunks_exact(12) {
                send(le_u32(&r[..4]), le_u64(&r[4..12]))?;
            }
        }
        let (mut mine, mut theirs) = (Vec::new(), Vec::new());
        let mut dropped = 0;
        for &(_, bytes) in &screened {
            for r in bytes.chunks_exact(screened_width) {
                let pos = le_u32(&r[..4]);
                mine.clear();
                screen_into(local.sketch(pos)?, config, &mut mine);
                theirs.clear();
                theirs.extend(r[12..].chunks_exact(8).map(le_u64));
                if passes(&theirs, &mine, config.slots, least) {
                    send(pos, le_u64(&r[4..12]))?;
                } else {
                    dropped += 1;
                }
            }
        }
        Ok((shards, dropped))
    })?;
    let (parts, kinds, blobs) = shards.into_py(py);
    Ok((parts, kinds, blobs, dropped))
}

/// Step 5: at the partition `number` of first rows (its signatures given), the rule's verdict
/// on each pair it received back (kind 6). Returns the matching ones as ``(row_a, row_b,
/// distance, resemblance, band)``: u64, u64, u32, f32 and i32 buffers (band -1 for simhash
/// evidence). ``min_resemblance``: the opt-in of ``Rule.pairs_in_memory`` (a matching pair
/// whose sketches both have an estimate below it is left out, whichever branch matched it);
/// ``ValueError`` outside 0..=1. Cost: one `MatchRule::matches` per pair.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (rule, number, fingerprints, sketches, kinds, blobs, *, min_resemblance = None))]
pub(crate) fn lean_verify<'py>(
    py: Python<'py>,
    rule: &Rule,
    number: u32,
    fingerprints: &[u8],
    sketches: &[u8],
    kinds: Vec<u8>,
    blobs: Vec<Bound<'py, PyBytes>>,
    min_resemblance: Option<f32>,
) -> PyResult<[Bound<'py, PyBytes>; 5]> {
    check_min_resemblance(min_resemblance)?;
    let rule = rule.match_rule();
    let local = Local::new(rule, number, fingerprints, sketches)?;
    check_shards(&kinds, None, blobs.len())?;
    let width = 20 + 8 * local.width;
    let back = records(&kinds, &blobs, SURVIVORS, width)?;
    let out = py.detach(|| -> Result<[Vec<u8>; 5], Failure> {
        let mut out: [Vec<u8>; 5] = Default::default();
        let minhash = rule.minhash();
        for &(_, bytes) in &back {
            for r in bytes.chunks_exact(width) {
                let pos = le_u32(&r[..4]);
                let sa = Signature {
                    fingerprint: Fingerprint(local.fps.get(pos as usize).copied().unwrap_or(0)),
                    sketch: Sketch {
                        words: local.sketch(pos)?.to_vec(),
                    },
                };
                let sb = Signature {
                    fingerprint: Fingerprint(le_u64(&r[12..20])),
                    sketch: Sketch {
                        words: r[20..].chunks_exact(8).map(le_u64).collect(),
                    },
                };
                let Some(e) = rule.matches(&sa, &sb) else {
                    continue;
                };
                let (distance, resemblance, band) = evidence(e, &sa, &sb, minhash);
                if below_min_resemblance(min_resemblance, &sa, &sb, resemblance) {
                    continue;
                }
                out[0].extend_from_slice(&local.row(pos).to_le_bytes());
                out[1].extend_from_slice(&r[4..12]);
                out[2].extend_from_slice(&distance.to_le_bytes());
                out[3].extend_from_slice(&resemblance.to_le_bytes());
                out[4].extend_from_slice(&band.to_le_bytes());
            }
        }
        Ok(out)
    })?;
    Ok(out.map(|column| PyBytes::new(py, &column)))
}

/// The bound of the screen and its verdict on sketch pairs, for tests: ``(least, passes)``:
/// [`min_agreeing_bins`] of the rule, and for each ``i`` whether sketch ``i`` of ``a_sketches``
/// and of ``b_sketches`` pass [`lean_screen`]'s test (one byte, 0 or 1, per pair). Cost: one
/// screen per pair.
#[pyfunction]
pub(crate) fn lean_screen_pairs<'py>(
    py: Python<'py>,
    rule: &Rule,
    a_sketches: &[u8],
    b_sketches: &[u8],
) -> PyResult<(u32, Bound<'py, PyBytes>)> {
    let rule = rule.match_rule();
    let config = rule.minhash();
    let a = u64s(a_sketches, "a_sketches")?;
    let b = u64s(b_sketches, "b_sketches")?;
    let width = config.sketch_words();
    if a.len() != b.len() || !a.len().is_multiple_of(width) {
        return Err(Failure::Value(format!(
            "a_sketches has {} bytes and b_sketches {}; expected equal multiples of {} (the \
             rule's sketch)",
            a_sketches.len(),
            b_sketches.len(),
            width * 8
        ))
        .into());
    }
    let least = min_agreeing_bins(rule);
    let (mut x, mut y) = (Vec::new(), Vec::new());
    let verdicts: Vec<u8> = a
        .chunks_exact(width)
        .zip(b.chunks_exact(width))
        .map(|(a, b)| {
            x.clear();
            y.clear();
            screen_into(a, config, &mut x);
            screen_into(b, config, &mut y);
            u8::from(passes(&x, &y, config.slots, least))
        })
        .collect();
    Ok((least, PyBytes::new(py, &verdicts)))
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

fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
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

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(lean_post, m)?)?;
    m.add_function(wrap_pyfunction!(lean_candidates, m)?)?;
    m.add_function(wrap_pyfunction!(lean_attach, m)?)?;
    m.add_function(wrap_pyfunction!(lean_screen, m)?)?;
    m.add_function(wrap_pyfunction!(lean_verify, m)?)?;
    m.add_function(wrap_pyfunction!(lean_screen_pairs, m)?)?;
    Ok(())
}
