//! One-permutation MinHash with densification, its band keys and its b-bit sketch.
//!
//! One hash per shingle (Li, Owen and Zhang, NIPS 2012): the hash picks one of `slots` bins and
//! the bin keeps the smallest value it sees. Empty bins borrow the value of a bin chosen by a
//! fixed probe sequence (Shrivastava, ICML 2017, "optimal densification"), so every bin is
//! filled and two documents agree in a bin with probability equal to their resemblance
//! (Jaccard of shingle sets).
//!
//! A [`Sketch`] is two parts, packed into 64-bit words:
//! - **Band keys** (the first [`MinHashConfig::band_words`] words): the first `bands * rows`
//!   bins are cut into `bands` bands of `rows` consecutive bins; a band's key is a hash of its
//!   bins' **full 32-bit values**, of which `key_bits` bits are kept. Two documents share band
//!   `i` with probability about `J^rows` (plus `2^-key_bits` by chance), so at least one band
//!   with `1 - (1 - J^rows)^bands`. The keys are taken at signing time, so the bins below can
//!   be as narrow as the estimate allows without changing which pairs share a band.
//! - **Bins** (the other [`MinHashConfig::bin_words`] words): the low `bits` bits of every
//!   bin (b-bit minwise hashing, Li and König, WWW 2010). Equal low bits happen with
//!   probability `J + (1 - J) / 2^bits`; [`Sketch::resemblance`] undoes that bias. The default,
//!   256 bins of 4 bits, estimates as well as 256 bins of 8 bits did in half the bytes
//!   (docs/QUALITY.md measures the curve).
//!
//! Whether two documents share a band is decided by their sketches alone: every consumer can
//! evaluate the rule from stored signatures.

use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

/// The MinHash parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MinHashConfig {
    /// Bins (one-permutation MinHash); a multiple of 64 / `bits`, at most 1024.
    pub slots: u32,
    /// Band keys per document; `bands * rows <= slots`.
    pub bands: u32,
    /// Bins per band.
    pub rows: u32,
    /// Bits per bin in the sketch: 1, 2, 4, 8 or 16.
    pub bits: u32,
    /// Bits of a band's key (16 to 32): the low bits of a hash of the band's full bin values.
    /// Two documents share a band when their keys are equal; unrelated documents do so by
    /// chance with probability `2^-key_bits` per band (the resemblance check then rejects
    /// them), and a lookup meets `bands * docs / 2^key_bits` such chance candidates.
    pub key_bits: u32,
}

impl Default for MinHashConfig {
    fn default() -> Self {
        MinHashConfig {
            // 256 bins of 4 bits (128 bytes) kept the quality figures of 256 bins of 8 bits
            // (256 bytes) on the public sets, where 512 bins of 2 bits lost cross-script recall
            // (0.78 against 0.82): short documents leave most of 512 bins to densification,
            // so more, narrower bins are not more samples (docs/QUALITY.md, "Sketch width").
            slots: 256,
            bands: 12,
            rows: 3,
            bits: 4,
            // 12 x 1M / 2^20 = ~11 chance candidates per lookup at 1M documents; 24 bits would
            // make ~12 M distinct terms there, 16 bits ~180 chance candidates.
            key_bits: 20,
        }
    }
}

impl MinHashConfig {
    pub(crate) fn id(&self) -> String {
        format!(
            "oph{};bands{}x{}h;b{};key{}",
            self.slots, self.bands, self.rows, self.bits, self.key_bits
        )
    }

    /// `Err(reason)` when the parameters are not usable.
    pub(crate) fn check(&self) -> Result<(), String> {
        if !matches!(self.bits, 1 | 2 | 4 | 8 | 16) {
            return Err(format!(
                "sketch bits = {}; expected 1, 2, 4, 8 or 16",
                self.bits
            ));
        }
        let per_word = 64 / self.bits;
        if self.slots == 0 || self.slots > 1024 || !self.slots.is_multiple_of(per_word) {
            return Err(format!(
                "MinHash slots = {}; expected a multiple of {per_word} (64 / bits) in 1..=1024",
                self.slots
            ));
        }
        if !(16..=32).contains(&self.key_bits) {
            return Err(format!(
                "band key bits = {}; expected 16 to 32 (fewer collide by chance, more do not \
                 fit a table entry)",
                self.key_bits
            ));
        }
        if self.rows == 0 {
            return Err("0 rows per band; expected at least 1".into());
        }
        if self.bands == 0 || self.bands * self.rows > self.slots {
            return Err(format!(
                "{} bands of {} rows need {} slots but there are {}; expected 1 <= bands * rows <= slots",
                self.bands,
                self.rows,
                self.bands * self.rows,
                self.slots
            ));
        }
        if self.bands > 4096 {
            return Err(format!("{} bands; expected at most 4096", self.bands));
        }
        Ok(())
    }

    /// Sketch size in 64-bit words: the band keys, then the bins.
    pub fn sketch_words(&self) -> usize {
        self.band_words() + self.bin_words()
    }

    /// Words of packed band keys (`bands * key_bits` bits) at the start of a sketch.
    pub fn band_words(&self) -> usize {
        (self.bands * self.key_bits).div_ceil(64) as usize
    }

    /// Words of packed `bits`-bit bins after the band keys.
    pub fn bin_words(&self) -> usize {
        (self.slots * self.bits / 64) as usize
    }

    /// The probability that two documents of resemblance `j` share at least one band key.
    pub fn band_probability(&self, j: f64) -> f64 {
        1.0 - (1.0 - j.powi(self.rows as i32)).powi(self.bands as i32)
    }
}

const EMPTY: u32 = u32::MAX;
const VALUE_SEED: u64 = 0x6f70_6820_7365_6564;
const BAND_SEED: u64 = 0x6261_6e64_206b_6579;

#[inline]
fn mix(mut x: u64) -> u64 {
    // splitmix64's finaliser: a bijection with full avalanche.
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The bins of one document's one-permutation MinHash, filled shingle by shingle. Reusable.
#[derive(Clone, Debug, Default)]
pub(crate) struct Bins {
    values: Vec<u32>,
    any: bool,
    /// The first [`PROBES`] bins each bin's densification probes, bin by bin (the sequences do
    /// not depend on the document: computed once per bin count and process, [`probe_table`]).
    probes: Option<Arc<[u16]>>,
}

/// Probes per bin kept in [`Bins::probes`]; a bin that needs more computes them (a document
/// with fewer shingles than bins / 8 or so).
const PROBES: usize = 32;

/// The known probes of every bin of `n` ([`Bins::probes`]), shared by every signer of the
/// process: a fresh signer (one per call of `NearDupFields::sign`, one per thread of a batch)
/// would otherwise compute `n * PROBES` of them before its first sketch. At most one table per
/// distinct bin count (a few, in practice one).
fn probe_table(n: usize) -> Arc<[u16]> {
    static TABLES: Mutex<Vec<Arc<[u16]>>> = Mutex::new(Vec::new());
    let build = || -> Arc<[u16]> {
        (0..n)
            .flat_map(|i| (1..=PROBES as u64).map(move |a| probe(i, a, n) as u16))
            .collect()
    };
    // A poisoned lock only loses the sharing.
    let Ok(mut tables) = TABLES.lock() else {
        return build();
    };
    if let Some(table) = tables.iter().find(|t| t.len() == n * PROBES) {
        return Arc::clone(table);
    }
    let table = build();
    tables.push(Arc::clone(&table));
    table
}

/// The bin that empty bin `i` of `n` probes at attempt `attempt` (1-based).
#[inline]
fn probe(i: usize, attempt: u64, n: usize) -> usize {
    (((mix(((i as u64) << 32) | attempt) >> 32) * n as u64) >> 32) as usize
}

impl Bins {
    /// Starts a document with `config.slots` empty bins.
    pub(crate) fn clear(&mut self, config: &MinHashConfig) {
        self.values.clear();
        self.values.resize(config.slots as usize, EMPTY);
        self.any = false;
    }

    /// One shingle hash: its bin keeps the smaller value.
    #[inline]
    pub(crate) fn add(&mut self, shingle: u64) {
        let h = mix(shingle ^ VALUE_SEED);
        let n = self.values.len() as u64;
        let bin = (((h >> 32) * n) >> 32) as usize;
        // EMPTY is u32::MAX: a value equal to it never wins, which only matters for 1 in 2^32.
        let v = h as u32;
        if let Some(b) = self.values.get_mut(bin) {
            *b = (*b).min(v);
        }
        self.any = true;
    }

    /// Fills the empty bins (densification); `false` when no shingle was added (the bins are
    /// then meaningless).
    pub(crate) fn finish(&mut self) -> bool {
        if !self.any {
            return false;
        }
        let n = self.values.len();
        let probes = match &self.probes {
            Some(table) if table.len() == n * PROBES => table,
            _ => self.probes.insert(probe_table(n)),
        };
        densify(&mut self.values, probes);
        true
    }

    pub(crate) fn values(&self) -> &[u32] {
        &self.values
    }
}

/// Fills `bins` (resized to `config.slots`) from the shingle hashes; `false` when there were
/// no shingles (the bins are then meaningless).
#[cfg(test)]
pub(crate) fn one_permutation(
    config: &MinHashConfig,
    shingles: &[u64],
    bins: &mut Vec<u32>,
) -> bool {
    let mut b = Bins::default();
    b.clear(config);
    for &s in shingles {
        b.add(s);
    }
    let any = b.finish();
    *bins = b.values;
    any
}

/// Optimal densification: empty bin i probes bins by a sequence seeded by i (and the attempt)
/// until it finds a filled one. Both documents use the same sequences. `probes` holds the first
/// [`PROBES`] of each bin's sequence (at most 1024 bins, so a bin fits in `u16`).
///
/// Per-document cost matters here (a record of a few dozen shingles leaves most bins empty,
/// each probing ~`bins / filled` times): the filled bins become a bit set eight at a time, only
/// the empty bins are visited (the bit set's zeros), and each tests its known probes 4 at a
/// time (8 when fewer than a quarter of the bins are filled) into a bit mask without a branch
/// per probe, whose lowest set bit is the first hit (the same bin the one-by-one search finds:
/// `densify_is_the_first_filled_probe` checks it against [`densify_reference`]).
fn densify(bins: &mut [u32], probes: &[u16]) {
    let n = bins.len();
    // Bins filled by shingles, as a bit set (at most 1024 bins: 16 words, no allocation).
    let mut filled = [0u64; 16];
    for (word, chunk) in filled.iter_mut().zip(bins.chunks(64)) {
        // Eight bins a byte, each at a fixed shift (vector compares and a mask move).
        *word = chunk.chunks(8).enumerate().fold(0, |m, (k, eight)| {
            let byte = eight
                .iter()
                .enumerate()
                .fold(0u64, |b, (t, &v)| b | u64::from(v != EMPTY) << t);
            m | byte << (8 * k)
        });
    }
    // The fewer bins are filled, the more probes an empty one needs: tested in larger chunks.
    let filled_bins: u32 = filled.iter().map(|w| w.count_ones()).sum();
    // Shingles were added but every one's value was EMPTY's (u32::MAX, 1 in 2^32 each): no bin
    // reads as filled, so no probe would ever stop. Every bin keeps that value, the one every
    // bin would borrow.
    if filled_bins == 0 {
        return;
    }
    // (Measured on 256 bins: 4 at a time is faster from a quarter filled, 8 below.)
    if filled_bins as usize * 4 >= n {
        fill_empty::<4>(bins, probes, &filled);
    } else {
        fill_empty::<8>(bins, probes, &filled);
    }
}

/// Fills each empty bin of `bins` (the zeros of `filled`), testing its known probes `CHUNK`
/// at a time ([`densify`]).
fn fill_empty<const CHUNK: usize>(bins: &mut [u32], probes: &[u16], filled: &[u64; 16]) {
    let n = bins.len();
    let is_filled = |j: usize| filled[(j / 64) % 16] >> (j % 64) & 1 == 1;
    for (w, &word) in filled.iter().enumerate().take(n.div_ceil(64)) {
        let in_range = if (w + 1) * 64 <= n {
            u64::MAX
        } else {
            (1u64 << (n % 64)) - 1
        };
        let mut empty = !word & in_range;
        while empty != 0 {
            let i = w * 64 + empty.trailing_zeros() as usize;
            empty &= empty - 1;
            let known = probes.get(i * PROBES..(i + 1) * PROBES).unwrap_or(&[]);
            let hit = known.chunks(CHUNK).find_map(|chunk| {
                let mask = chunk.iter().enumerate().fold(0u32, |m, (k, &j)| {
                    m | u32::from(is_filled(usize::from(j))) << k
                });
                (mask != 0).then(|| chunk[mask.trailing_zeros() as usize])
            });
            let j = match hit {
                Some(j) => usize::from(j),
                None => {
                    let mut attempt = known.len() as u64;
                    loop {
                        attempt += 1;
                        let j = probe(i, attempt, n);
                        if is_filled(j) {
                            break j;
                        }
                    }
                }
            };
            bins[i] = bins[j];
        }
    }
}

/// [`densify`] as defined, probe by probe (the oracle of its property test).
#[cfg(test)]
fn densify_reference(bins: &mut [u32]) {
    let n = bins.len();
    let original = bins.to_vec();
    for i in 0..n {
        if original[i] != EMPTY {
            continue;
        }
        let mut attempt = 0;
        bins[i] = loop {
            attempt += 1;
            let j = probe(i, attempt, n);
            if original[j] != EMPTY {
                break original[j];
            }
        };
    }
}

/// A MinHash sketch: the band keys, then the low `bits` bits of every bin, packed into 64-bit
/// words (band 0 in the lowest bits of word 0, bin 0 in the lowest bits of the first bin word;
/// the module's documentation gives the layout). All zero for a document without tokens (a real
/// sketch is all zero with probability 2^-(slots x bits)).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Sketch {
    /// The packed words ([`MinHashConfig::sketch_words`] of them).
    pub words: Vec<u64>,
}

impl Sketch {
    /// The sketch of a document without tokens. Cost: one allocation of
    /// [`MinHashConfig::sketch_words`] zero words.
    pub fn empty(config: &MinHashConfig) -> Sketch {
        Sketch {
            words: vec![0; config.sketch_words()],
        }
    }

    pub(crate) fn from_bins(config: &MinHashConfig, bins: &[u32]) -> Sketch {
        let mut words = vec![0u64; config.sketch_words()];
        let (keys, rest) = words.split_at_mut(config.band_words());
        for band in 0..config.bands {
            let at = (band * config.rows) as usize;
            let values = bins.get(at..at + config.rows as usize).unwrap_or(&[]);
            put_field(
                keys,
                band as usize,
                config.key_bits,
                band_hash(band, values),
            );
        }
        // The width known at compile time: each word's bins pack in a fixed, unrolled loop.
        match config.bits {
            1 => pack::<1>(bins, rest),
            2 => pack::<2>(bins, rest),
            4 => pack::<4>(bins, rest),
            8 => pack::<8>(bins, rest),
            _ => pack::<16>(bins, rest),
        }
        Sketch { words }
    }

    /// Whether the document had no tokens (no band keys; the resemblance branch never fires).
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// The key of band `band` (`key_bits` bits of the hash of bins `band * rows ..`). Cost:
    /// reads one or two words; no allocation.
    pub fn band(&self, config: &MinHashConfig, band: u32) -> u64 {
        band_of(&self.words, config, band)
    }

    /// The first band both sketches agree on, if any (never for an empty sketch). Cost: at
    /// most `bands` band comparisons; no allocation.
    pub fn first_shared_band(&self, other: &Sketch, config: &MinHashConfig) -> Option<u32> {
        if self.is_empty() || other.is_empty() {
            return None;
        }
        (0..config.bands).find(|&b| self.band(config, b) == other.band(config, b))
    }

    /// Bins whose low bits agree, and all bins (`(0, 0)` when the sketches differ in length or
    /// are empty). Cost: a few bit operations per sketch word; no allocation.
    pub fn agreeing_bins(&self, other: &Sketch, config: &MinHashConfig) -> (u32, u32) {
        agreeing_bins_of(
            bin_words(&self.words, config),
            bin_words(&other.words, config),
            config.bits,
        )
    }

    /// The estimated resemblance (Jaccard of shingle sets), corrected for chance agreement of
    /// `bits`-bit values and clamped to 0..=1; 0 when either sketch is empty. Cost: one pass
    /// over the bin words (16 for the default sketch), no allocation.
    pub fn resemblance(&self, other: &Sketch, config: &MinHashConfig) -> f32 {
        if self.is_empty() || other.is_empty() {
            return 0.0;
        }
        resemblance_of(&self.words, &other.words, config)
    }
}

/// [`Sketch::band`] of a sketch's packed words (missing words read as zero).
pub(crate) fn band_of(words: &[u64], config: &MinHashConfig, band: u32) -> u64 {
    band_from_words(config, band, |w| words.get(w).copied().unwrap_or(0))
}

/// The key of band `band`, reading sketch word `w` through `word(w)` (only the one or two words
/// that hold it): the packed words in memory or a document's stored words.
pub(crate) fn band_from_words(
    config: &MinHashConfig,
    band: u32,
    word: impl Fn(usize) -> u64,
) -> u64 {
    // `key_bits` is at most 32 (`MinHashConfig::check`), so a key spans at most two words.
    let width = config.key_bits as usize;
    let at = band as usize * width;
    let (w, off) = (at / 64, at % 64);
    let mut v = word(w) >> off;
    if off + width > 64 {
        v |= word(w + 1) << (64 - off);
    }
    v & low_mask(width)
}

/// The key of a band from its bins' full values: `key_bits` of a hash seeded by the band.
fn band_hash(band: u32, values: &[u32]) -> u64 {
    values
        .iter()
        .fold(mix(u64::from(band) ^ BAND_SEED), |h, &v| {
            mix(h ^ u64::from(v))
        })
}

/// Writes the low `width` bits of `value` as field `index` of `width`-bit fields packed from
/// bit 0 of `words[0]` (a field may span two words).
fn put_field(words: &mut [u64], index: usize, width: u32, value: u64) {
    let width = width as usize;
    let value = value & low_mask(width);
    let at = index * width;
    let (w, off) = (at / 64, at % 64);
    if let Some(word) = words.get_mut(w) {
        *word |= value << off;
    }
    if off + width > 64 {
        if let Some(word) = words.get_mut(w + 1) {
            *word |= value >> (64 - off);
        }
    }
}

/// The bin words of a sketch's words (after the band keys); empty when there are too few.
fn bin_words<'a>(words: &'a [u64], config: &MinHashConfig) -> &'a [u64] {
    words.get(config.band_words()..).unwrap_or(&[])
}

/// [`Sketch::agreeing_bins`] of two sketches' packed words.
pub(crate) fn agreeing_bins_of(a: &[u64], b: &[u64], bits: u32) -> (u32, u32) {
    if a.len() != b.len() || a.is_empty() {
        return (0, 0);
    }
    let per_word = 64 / bits;
    // The top bit of every bin, and the bits below it. A bin of `a ^ b` differs when its top
    // bit is set or its lower bits are not all zero; adding `below` to those lower bits sets
    // the top bit exactly then, and cannot carry into the next bin (at most 2 x (2^(bits-1) -
    // 1) < 2^bits). So each word costs a few operations whatever `bits` is (for 1 bit,
    // `below` is 0 and a bin differs when its bit is set).
    let top: u64 = (0..per_word).fold(0, |m, i| m | (1u64 << (i * bits + bits - 1)));
    let below = !top;
    let mut differing = 0u32;
    for (&a, &b) in a.iter().zip(b) {
        let x = a ^ b;
        differing += ((((x & below) + below) | x) & top).count_ones();
    }
    let total = per_word * a.len() as u32;
    (total - differing, total)
}

/// [`Sketch::resemblance`] of two sketches' packed words (band keys and bins), both known not
/// to be empty (the caller knows it, so the words are not scanned for it).
pub(crate) fn resemblance_of(a: &[u64], b: &[u64], config: &MinHashConfig) -> f32 {
    let bits = config.bits;
    let (agree, total) = agreeing_bins_of(bin_words(a, config), bin_words(b, config), bits);
    if total == 0 {
        return 0.0;
    }
    let chance = 1.0 / (1u64 << bits) as f64;
    let raw = f64::from(agree) / f64::from(total);
    (((raw - chance) / (1.0 - chance)).clamp(0.0, 1.0)) as f32
}

/// The low `BITS` bits of every bin into `words`, bin 0 in the lowest bits of word 0.
fn pack<const BITS: usize>(bins: &[u32], words: &mut [u64]) {
    let mask = (1u64 << BITS) - 1;
    for (word, chunk) in words.iter_mut().zip(bins.chunks(64 / BITS)) {
        *word = chunk
            .iter()
            .enumerate()
            .fold(0, |w, (k, &v)| w | (u64::from(v) & mask) << (k * BITS));
    }
}

pub(crate) fn low_mask(width: usize) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The inverse of [`mix`] (splitmix64's finaliser): each xor-shift undone by repeating it,
    /// each multiplier by its inverse modulo 2^64.
    fn unmix(mut x: u64) -> u64 {
        x ^= (x >> 31) ^ (x >> 62);
        x = x.wrapping_mul(0x3196_42b2_d24d_8ec3);
        x ^= (x >> 27) ^ (x >> 54);
        x = x.wrapping_mul(0x96de_1b17_3f11_9089);
        x ^ (x >> 30) ^ (x >> 60)
    }

    proptest! {
        /// Densification by chunks of known probes fills every empty bin from the bin its
        /// probe sequence reaches first, as probing one by one does; from a single shingle
        /// (past the known probes, into computed ones) to more shingles than bins, with one
        /// `Bins` reused across documents as a signer does.
        #[test]
        fn densify_is_the_first_filled_probe(
            slots in prop_oneof![Just(64u32), Just(128), Just(256), Just(320), Just(1024)],
            documents in proptest::collection::vec(
                proptest::collection::vec(any::<u64>(), 1..700), 1..4),
        ) {
            let config = MinHashConfig { slots, ..MinHashConfig::default() };
            let mut bins = Bins::default();
            for shingles in &documents {
                bins.clear(&config);
                for &s in shingles {
                    bins.add(s);
                }
                let mut expected = bins.values().to_vec();
                densify_reference(&mut expected);
                prop_assert!(bins.finish());
                prop_assert_eq!(bins.values(), &expected[..]);
                prop_assert!(bins.values().iter().all(|&v| v != EMPTY));
            }
        }

        /// A document whose every shingle's value is `u32::MAX` (EMPTY's bit pattern; found
        /// by inverting the value hash) is densified to that value in every bin (it probed
        /// forever before: no bin read as filled).
        #[test]
        fn shingles_of_the_empty_value_fill_every_bin(
            slots in prop_oneof![Just(64u32), Just(256), Just(1024)],
            highs in proptest::collection::vec(any::<u32>(), 1..4),
        ) {
            let config = MinHashConfig { slots, ..MinHashConfig::default() };
            let mut bins = Bins::default();
            bins.clear(&config);
            for high in highs {
                let value = (u64::from(high) << 32) | u64::from(EMPTY);
                let shingle = unmix(value) ^ VALUE_SEED;
                prop_assert_eq!(mix(shingle ^ VALUE_SEED), value);
                bins.add(shingle);
            }
            prop_assert!(bins.finish());
            prop_assert!(bins.values().iter().all(|&v| v == EMPTY));
        }

        /// The packed sketch holds each bin's low bits at bit `bin * bits`, and each band's
        /// key (of every width, so keys that straddle two words) reads back as its hash.
        #[test]
        fn sketches_pack_the_low_bits_of_every_bin(
            bits in prop_oneof![Just(1u32), Just(2), Just(4), Just(8), Just(16)],
            key_bits in 16u32..=32,
            values in proptest::collection::vec(any::<u32>(), 1024),
        ) {
            let config = MinHashConfig { slots: 1024, bits, key_bits, ..MinHashConfig::default() };
            let sketch = Sketch::from_bins(&config, &values);
            prop_assert_eq!(sketch.words.len(), config.sketch_words());
            let bins = &sketch.words[config.band_words()..];
            for (i, &v) in values.iter().enumerate() {
                let at = i * bits as usize;
                let read = (bins[at / 64] >> (at % 64)) & low_mask(bits as usize);
                prop_assert_eq!(read, u64::from(v) & low_mask(bits as usize), "bin {}", i);
            }
            for band in 0..config.bands {
                let at = (band * config.rows) as usize;
                let expected = band_hash(band, &values[at..at + config.rows as usize])
                    & low_mask(config.key_bits as usize);
                prop_assert_eq!(sketch.band(&config, band), expected, "band {}", band);
            }
        }
    }
}
