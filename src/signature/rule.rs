//! The match rule: when two documents are near-duplicates, and the keys that find every match.

use super::minhash::MinHashConfig;
use super::shingles::Shingling;
use super::Signature;
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use crate::layout::BlockLayout;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Key tag of the band family: keys `(0x8000 | band) << 48 | low key_bits of the band`. Simhash
/// block keys use tags below 0x8000 (their combination index), so both families share one keys
/// field.
pub(crate) const BAND_KEY_TAG: u64 = 0x8000;
const TAG_SHIFT: u32 = 48;

/// The parameters of a [`MatchRule`], as indexes record them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RuleSpec {
    /// Simhash branch: any pair within `layout.max_distance()` matches (and shares a block key).
    pub layout: BlockLayout,
    /// Which shingles the MinHash sketch sees.
    pub shingling: Shingling,
    /// Sketch and band keys.
    pub minhash: MinHashConfig,
    /// Resemblance branch: a pair that shares a band matches when the sketches estimate at least
    /// this resemblance.
    pub min_resemblance: f32,
    /// And, when set, when the simhash distance is at most this (a second, order-free vote).
    pub band_max_distance: Option<u32>,
}

impl Default for RuleSpec {
    fn default() -> Self {
        RuleSpec {
            layout: BlockLayout::default(),
            shingling: Shingling::default(),
            minhash: MinHashConfig::default(),
            // 0.5 is where the truth's convention starts to call a pair a false positive; the
            // estimate of 256 bins of 4 bits has a standard deviation of ~0.033 there, so the
            // threshold sits 1.5 deviations above it (docs/QUALITY.md shows the curve).
            min_resemblance: 0.55,
            band_max_distance: None,
        }
    }
}

/// Why two documents match: the evidence [`MatchRule::matches`] found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Evidence {
    /// Simhash fingerprints within the layout's distance.
    Simhash {
        /// Hamming distance.
        distance: u32,
    },
    /// A shared MinHash band and enough estimated resemblance.
    Resemblance {
        /// The first band both share.
        band: u32,
        /// The sketches' estimate of the resemblance of the shingle sets.
        resemblance: f32,
        /// Hamming distance of the fingerprints.
        distance: u32,
    },
}

impl Evidence {
    /// The Hamming distance of the two fingerprints (whichever branch matched).
    pub fn distance(&self) -> u32 {
        match *self {
            Evidence::Simhash { distance } | Evidence::Resemblance { distance, .. } => distance,
        }
    }

    /// The sketches' resemblance estimate, for a match by the resemblance branch (`None` for a
    /// simhash match, where it was not computed).
    pub fn resemblance(&self) -> Option<f32> {
        match *self {
            Evidence::Simhash { .. } => None,
            Evidence::Resemblance { resemblance, .. } => Some(resemblance),
        }
    }

    /// Orders evidence **strongest first**: simhash matches before resemblance matches (the
    /// simhash branch is the stricter one: within `k` bits), simhash matches by distance
    /// (nearest first), resemblance matches by their estimate (highest first), then by
    /// distance. `Ordering::Equal` only for equal evidence (the band is not compared). Lookups
    /// rank their results this way, and [`crate::DedupWriter`] picks "the nearest"
    /// near-duplicate this way (then the earliest added).
    pub fn cmp_strength(&self, other: &Evidence) -> std::cmp::Ordering {
        let key = |e: &Evidence| match *e {
            Evidence::Simhash { distance } => (0u8, 0.0f32, distance),
            Evidence::Resemblance {
                resemblance,
                distance,
                ..
            } => (1, -resemblance, distance),
        };
        let (a, b) = (key(self), key(other));
        a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(&b.2))
    }
}

impl fmt::Display for Evidence {
    /// `simhash distance 2`, or `resemblance 0.71 (simhash distance 19)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Evidence::Simhash { distance } => write!(f, "simhash distance {distance}"),
            Evidence::Resemblance {
                resemblance,
                distance,
                ..
            } => write!(
                f,
                "resemblance {resemblance:.2} (simhash distance {distance})"
            ),
        }
    }
}

/// The one definition of a near-duplicate that every consumer uses:
///
/// > two documents match when their simhash fingerprints are within `k` (the layout's
/// > distance), **or** when they share a MinHash band and their sketches estimate a
/// > resemblance of at least `t` (and, when set, their fingerprints are within `k2`).
///
/// Both branches are guaranteed to share a key ([`MatchRule::keys`]): simhash pairs share a block
/// key (pigeonhole), resemblance pairs share their band's key. So a lookup of a document's keys,
/// verified by [`MatchRule::matches`], finds exactly the documents the rule matches.
///
/// By default the sketch's shingles leave out site chrome recognised by its shape
/// ([`Shingling::chrome`]: link lists and breadcrumbs, the site name that also ends the title,
/// short lines repeating it), so a page under another site's header and footer estimates the
/// resemblance of the content. Cost: one scan of the text for a spaced separator (`a | b`),
/// more only on the lines that have one.
///
/// ```
/// use tantivy_simhash::{MatchRule, Scheme};
///
/// let rule = MatchRule::default();
/// let mut signer = rule.signer(&Scheme::default());
/// let body = "Simhash maps a weighted feature set to 64 bits, and near-duplicate documents get \
///             fingerprints that differ in only a few bits. A crawler can therefore find them among \
///             billions of pages with a handful of table lookups, as Manku and his colleagues showed.";
/// let page = signer.sign(body);
/// let copy = signer.sign(&format!("Daily Dev\nHome | Docs | Blog | Contact\n\n{body}\n\n© 2024 Daily Dev"));
/// let other = signer.sign("The quarterly report shows revenue growth in every region, led by strong \
///                          demand for cloud services and a recovery in hardware sales since spring.");
/// assert!(rule.matches(&page, &copy).is_some());
/// assert!(rule.matches(&page, &other).is_none());
/// println!("{rule}");
/// ```
///
/// Signatures: more than one simhash per document, and one rule to match them.
///
/// A document's [`Signature`] is its simhash [`Fingerprint`] plus a b-bit one-permutation MinHash
/// [`Sketch`](crate::Sketch) of its chrome-aware word 3-shingles ([`Shingling`](crate::Shingling)),
/// both from one pass of the scheme's own analysis (normalisation, script folding, tokens).
/// [`MatchRule`] says when two signatures match and which `u64` keys find every match:
///
/// - simhash block keys ([`crate::BlockLayout`]): pairs within `k`;
/// - MinHash band keys: pairs that share a band, verified by the sketch's resemblance estimate.
///
/// | part | bytes per document (default), in the segment component |
/// |---|---|
/// | fingerprint | 8 |
/// | sketch: 12 band keys of 20 bits, 256 bins x 4 bits | 32 + 128 |
/// | tables: 4 simhash block keys + 12 band keys | 16 entries of 3 B, and a directory |
///
/// ```
/// use tantivy_simhash::{MatchRule, Scheme};
///
/// let rule = MatchRule::default();
/// let mut signer = rule.signer(&Scheme::default());
/// let a = signer.sign("One document, long enough to have shingles, about near-duplicate detection.");
/// assert_eq!(rule.keys(&a).len(), rule.keys_per_document());
/// assert!(rule.matches(&a, &a).is_some());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MatchRule {
    spec: RuleSpec,
}

impl TryFrom<RuleSpec> for MatchRule {
    type Error = Error;
    fn try_from(spec: RuleSpec) -> Result<Self> {
        MatchRule::new(spec)
    }
}

impl MatchRule {
    /// A rule from its parameters. Cost: a few checks. Errors with [`Error::InvalidConfig`]
    /// when the MinHash parameters are unusable, the resemblance threshold is not in 0..=1,
    /// the layout has too many keys for the tags, or the shingle width is not 1 to 8.
    pub fn new(spec: RuleSpec) -> Result<MatchRule> {
        spec.minhash
            .check()
            .map_err(|e| Error::InvalidConfig(format!("match rule: {e}")))?;
        if !(spec.min_resemblance.is_finite() && (0.0..=1.0).contains(&spec.min_resemblance)) {
            return Err(Error::InvalidConfig(format!(
                "match rule: min_resemblance = {}; expected a number in 0..=1",
                spec.min_resemblance
            )));
        }
        if spec.layout.num_keys() as u64 >= BAND_KEY_TAG {
            return Err(Error::InvalidConfig(format!(
                "match rule: the layout has {} keys; expected fewer than {BAND_KEY_TAG}",
                spec.layout.num_keys()
            )));
        }
        if spec.shingling.width == 0 || spec.shingling.width > 8 {
            return Err(Error::InvalidConfig(format!(
                "match rule: shingle width {}; expected 1 to 8",
                spec.shingling.width
            )));
        }
        Ok(MatchRule { spec })
    }

    /// The parameters.
    pub fn spec(&self) -> &RuleSpec {
        &self.spec
    }

    /// The simhash block layout.
    pub fn layout(&self) -> &BlockLayout {
        &self.spec.layout
    }

    /// The MinHash parameters.
    pub fn minhash(&self) -> &MinHashConfig {
        &self.spec.minhash
    }

    /// A stable identifier of every parameter, recorded by indexes.
    pub fn id(&self) -> String {
        let s = &self.spec;
        let vote = s
            .band_max_distance
            .map_or(String::new(), |k| format!(";vote<={k}"));
        format!(
            "rule-v1;{};{};{};t>={}{vote}",
            s.layout.id(),
            s.shingling.id(),
            s.minhash.id(),
            s.min_resemblance
        )
    }

    /// Keys per document: simhash block keys plus band keys (none for an empty document).
    pub fn keys_per_document(&self) -> usize {
        self.spec.layout.num_keys() + self.spec.minhash.bands as usize
    }

    /// Appends the keys of `signature` to `out`: the layout's block keys, then one key per band
    /// (none for an empty sketch). Cost: [`keys_per_document`](Self::keys_per_document) keys
    /// computed from the signature in memory; allocates only if `out` must grow.
    pub fn keys_into(&self, signature: &Signature, out: &mut Vec<u64>) {
        self.spec.layout.keys_into(signature.fingerprint, out);
        if signature.sketch.is_empty() {
            return;
        }
        for b in 0..self.spec.minhash.bands {
            let bits = signature.sketch.band(&self.spec.minhash, b);
            out.push(band_key(b, bits, self.spec.minhash.key_bits));
        }
    }

    /// How many keys [`keys_into`](Self::keys_into) appends for `signature`, without computing
    /// them: the block keys, and the band keys unless the sketch is empty. Cost: a scan of the
    /// sketch words for a non-zero one (usually the first).
    pub fn key_count(&self, signature: &Signature) -> usize {
        let bands = if signature.sketch.is_empty() {
            0
        } else {
            self.spec.minhash.bands as usize
        };
        self.spec.layout.num_keys() + bands
    }

    /// The keys of `signature`. Cost: as [`keys_into`](Self::keys_into), plus one vector;
    /// reuse a buffer with `keys_into` in loops.
    pub fn keys(&self, signature: &Signature) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.keys_per_document());
        self.keys_into(signature, &mut out);
        out
    }

    /// Whether `key` is a band key (else a simhash block key).
    pub fn is_band_key(key: u64) -> bool {
        key >> TAG_SHIFT >= BAND_KEY_TAG
    }

    /// Whether `a` and `b` match, and why. The single definition every consumer uses. Cost: a
    /// popcount, and for pairs beyond the simhash radius one pass over the sketches.
    pub fn matches(&self, a: &Signature, b: &Signature) -> Option<Evidence> {
        self.matches_within(a, b, self.spec.layout.max_distance())
    }

    /// [`matches`](Self::matches) with the simhash branch narrowed to `max_distance` (a
    /// consumer's own `k`; the resemblance branch is unchanged). Only a `max_distance` up to the
    /// layout's keeps the guarantee that every match shares a key (callers check it with
    /// [`crate::BlockLayout::max_distance`]). Cost: as `matches`.
    pub fn matches_within(
        &self,
        a: &Signature,
        b: &Signature,
        max_distance: u32,
    ) -> Option<Evidence> {
        self.matches_by(
            a.fingerprint.distance(b.fingerprint),
            max_distance,
            // `None` for an empty sketch, so both are known not to be empty.
            || a.sketch.first_shared_band(&b.sketch, &self.spec.minhash),
            || (&a.sketch.words, &b.sketch.words),
        )
    }

    /// The rule for two documents whose fingerprints are `distance` apart, for callers that
    /// keep band keys their own way: a simhash match within `max_distance`; otherwise, where
    /// the rule's band distance allows, a resemblance match through `first_shared_band` (asked
    /// only then; `None` when they share none), verified on the sketch words `words` gives
    /// (read only for a pair sharing a band). The one decision [`matches_within`],
    /// [`matches_within_bands`] and the collapse's fold make.
    ///
    /// [`matches_within`]: Self::matches_within
    /// [`matches_within_bands`]: Self::matches_within_bands
    pub(crate) fn matches_by<'w>(
        &self,
        distance: u32,
        max_distance: u32,
        first_shared_band: impl FnOnce() -> Option<u32>,
        words: impl FnOnce() -> (&'w [u64], &'w [u64]),
    ) -> Option<Evidence> {
        if distance <= max_distance {
            return Some(Evidence::Simhash { distance });
        }
        if self.spec.band_max_distance.is_some_and(|k| distance > k) {
            return None;
        }
        let band = first_shared_band()?;
        let (a, b) = words();
        self.matches_sharing_band(a, b, band, distance)
    }

    /// [`matches_within`](Self::matches_within) for a caller that keeps each signature's band
    /// keys (as [`bands_into`](Self::bands_into) takes them, which fit in 32 bits; none for an
    /// empty sketch, which shares no band): the keys are compared, not extracted again from
    /// the packed words. `a` and `b` are a fingerprint, its sketch's words and its band keys.
    /// Cost: a popcount, `bands` comparisons without a branch (most pairs share no band), and
    /// for a pair sharing a band one pass over the sketches.
    pub(crate) fn matches_within_bands(
        &self,
        a: (Fingerprint, &[u64], &[u32]),
        b: (Fingerprint, &[u64], &[u32]),
        max_distance: u32,
    ) -> Option<Evidence> {
        let first_shared_band = || {
            let shared =
                a.2.iter()
                    .zip(b.2)
                    .fold(false, |any, (x, y)| any | (x == y));
            if !shared {
                return None;
            }
            let band = a.2.iter().zip(b.2).position(|(x, y)| x == y)?;
            Some(band as u32)
        };
        self.matches_by(a.0.distance(b.0), max_distance, first_shared_band, || {
            (a.1, b.1)
        })
    }

    /// Appends the bands (all `rows * bits` bits of each) of the sketch `words` to `out`, one
    /// per band of the rule: two sketches share a band when these are equal. Cost: one or two
    /// word reads per band.
    pub(crate) fn bands_into(&self, words: &[u64], out: &mut Vec<u64>) {
        let config = &self.spec.minhash;
        out.extend((0..config.bands).map(|b| super::minhash::band_of(words, config, b)));
    }

    /// What [`matches`](Self::matches) returns for a pair beyond the simhash radius
    /// (`distance > layout.max_distance()`) whose sketches (packed words, neither empty) share
    /// `band` first, as a caller that keeps every document's bands finds it: the optional
    /// distance vote, then the resemblance, without scanning the bands or the words for
    /// emptiness again. Cost: one pass over the sketch words.
    pub(crate) fn matches_sharing_band(
        &self,
        a: &[u64],
        b: &[u64],
        band: u32,
        distance: u32,
    ) -> Option<Evidence> {
        if self.spec.band_max_distance.is_some_and(|k| distance > k) {
            return None;
        }
        let resemblance = super::minhash::resemblance_of(a, b, &self.spec.minhash);
        (resemblance >= self.spec.min_resemblance).then_some(Evidence::Resemblance {
            band,
            resemblance,
            distance,
        })
    }

    /// Sketch bytes per document (the verifier), besides the 8-byte fingerprint.
    pub fn sketch_bytes(&self) -> usize {
        self.spec.minhash.sketch_words() * 8
    }

    /// A [`super::Signer`] for `scheme` under this rule. Cost as [`super::Signer::new`].
    pub fn signer(&self, scheme: &crate::Scheme) -> super::Signer {
        super::Signer::new(scheme, self)
    }
}

/// The key of band `band` with bits `bits`, of which the low `key_bits` are kept.
pub(crate) fn band_key(band: u32, bits: u64, key_bits: u32) -> u64 {
    ((BAND_KEY_TAG | u64::from(band)) << TAG_SHIFT) | (bits & ((1u64 << key_bits) - 1))
}

impl fmt::Display for MatchRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.spec;
        write!(
            f,
            "simhash within {}, or shares one of {} MinHash bands ({} bins each) and the \
             {}-bin sketch of {} bits estimates resemblance >= {}",
            s.layout.max_distance(),
            s.minhash.bands,
            s.minhash.rows,
            s.minhash.slots,
            s.minhash.bits,
            s.min_resemblance
        )?;
        if s.shingling.chrome {
            f.write_str(" (shingles without site chrome: link lists, the site name)")?;
        }
        if let Some(k) = s.band_max_distance {
            write!(f, " and simhash within {k}")?;
        }
        Ok(())
    }
}
