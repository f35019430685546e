//! The match rule from Python: signatures, the rule's verdict on a pair, and the batch kernels a
//! distributed pipeline (`tantivy_simhash.dask`) runs inside its partitions.
//!
//! The batch kernels take and return columns as little-endian byte buffers (`numpy`'s
//! `tobytes()` / `frombuffer`), so a partition crosses into Rust with one copy per column and no
//! Python object per row; they run with the GIL released and on the calling thread only (the
//! engine's workers are the parallelism).

use crate::Failure;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::collections::HashSet;
use std::sync::Mutex;
use tantivy_simhash::{pairs_in_key_group, pairs_in_memory, PairStats};
use tantivy_simhash::{
    Evidence as RustEvidence, Fingerprint, MatchRule, MinHashConfig, Signature as RustSignature,
    Signer, Sketch,
};

/// A document's signature under a :class:`Rule`: its simhash fingerprint, its MinHash sketch
/// and the keys that find every document it matches.
#[pyclass(module = "tantivy_simhash", frozen)]
pub(crate) struct Signature {
    signature: RustSignature,
    keys: Vec<u64>,
}

#[pymethods]
impl Signature {
    /// The simhash fingerprint (unsigned 64-bit int).
    #[getter]
    fn fingerprint(&self) -> u64 {
        self.signature.fingerprint.0
    }

    /// The b-bit MinHash sketch: the rule's sketch words as little-endian bytes (all zero for
    /// a text without tokens).
    #[getter]
    fn sketch<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &words_to_bytes(&self.signature.sketch.words))
    }

    /// The keys (simhash block keys, then one key per MinHash band; no band keys for a text
    /// without tokens): two documents the rule matches share at least one.
    #[getter]
    fn keys(&self) -> Vec<u64> {
        self.keys.clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "Signature(fingerprint={:#018x}, keys={})",
            self.signature.fingerprint.0,
            self.keys.len()
        )
    }

    fn __eq__(&self, other: &Signature) -> bool {
        self.signature == other.signature
    }
}

/// Why two signatures match (what :meth:`Rule.matches` found).
#[pyclass(module = "tantivy_simhash", frozen, get_all)]
pub(crate) struct Evidence {
    /// ``"simhash"`` (fingerprints within the rule's distance) or ``"resemblance"`` (a shared
    /// MinHash band and enough estimated resemblance).
    kind: &'static str,
    /// Hamming distance of the fingerprints.
    distance: u32,
    /// The sketches' resemblance estimate (computed for both kinds).
    resemblance: f32,
    /// The first shared band (``None`` for ``"simhash"``).
    band: Option<u32>,
}

#[pymethods]
impl Evidence {
    fn __repr__(&self) -> String {
        format!(
            "Evidence(kind={:?}, distance={}, resemblance={:.3}, band={})",
            self.kind,
            self.distance,
            self.resemblance,
            self.band.map_or("None".to_string(), |b| b.to_string())
        )
    }
}

/// The product's definition of a near-duplicate, with the scheme that signs texts for it:
/// two documents match when their simhash fingerprints are within 3 bits, or when they share one
/// of 12 MinHash bands and their 256-bin x 4-bit sketches estimate a resemblance of at least
/// 0.55. ``language`` takes :class:`Scheme`'s values. ``key_bits`` (16 to 32, default 20: the
/// index's rule) is the width of a band's key: unrelated documents share a band by chance with
/// probability ``2**-key_bits`` per band, so a join meets ``12 * n / 2**key_bits`` chance
/// candidates per document (~11 at 1M with 20 bits, 0.003 with 32); a wider key is more bits of
/// the same hash, so a wider rule's pairs are a subset of a narrower one's. ``fold_scripts``
/// (default ``True``, as every index): Traditional Chinese is folded to Simplified before
/// signing, so a page and its other-script edition match; ``False`` signs the characters as
/// written, for a caller whose resemblance does not fold scripts (the evaluation data's, for one).
#[pyclass(module = "tantivy_simhash", frozen)]
pub(crate) struct Rule {
    rule: MatchRule,
    language: String,
    fold_scripts: bool,
    signer: Mutex<Signer>,
}

impl Rule {
    /// The rule itself (for the Dask pipeline's kernels in `lean.rs`).
    pub(crate) fn match_rule(&self) -> &MatchRule {
        &self.rule
    }

    fn words(&self) -> usize {
        self.rule.minhash().sketch_words()
    }

    fn signer(&self) -> std::sync::MutexGuard<'_, Signer> {
        self.signer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Fingerprints and sketches from their buffers, checked against each other and the rule,
    /// read one signature at a time (most postings of a corpus are never compared).
    fn columns<'a>(&self, fingerprints: &[u8], sketches: &'a [u8]) -> Result<Columns<'a>, Failure> {
        let fps = u64s(fingerprints, "fingerprints")?;
        let width = self.words() * 8;
        if sketches.len() != fps.len() * width {
            return Err(Failure::Value(format!(
                "sketches has {} bytes for {} fingerprints; expected {} ({} bytes per sketch under \
                 this rule)",
                sketches.len(),
                fps.len(),
                fps.len() * width,
                width
            )));
        }
        Ok(Columns {
            fps,
            sketches,
            width,
        })
    }

    /// Fingerprints and sketches from their buffers, checked against each other and the rule.
    fn signatures(
        &self,
        fingerprints: &[u8],
        sketches: &[u8],
    ) -> Result<Vec<RustSignature>, Failure> {
        let fps = u64s(fingerprints, "fingerprints")?;
        let width = self.words() * 8;
        if sketches.len() != fps.len() * width {
            return Err(Failure::Value(format!(
                "sketches has {} bytes for {} fingerprints; expected {} ({} bytes per sketch under \
                 this rule)",
                sketches.len(),
                fps.len(),
                fps.len() * width,
                width
            )));
        }
        Ok(fps
            .iter()
            .zip(sketches.chunks_exact(width.max(1)))
            .map(|(&fp, s)| RustSignature {
                fingerprint: Fingerprint(fp),
                sketch: Sketch {
                    words: s.chunks_exact(8).map(le_u64).collect(),
                },
            })
            .collect())
    }
}

#[pymethods]
impl Rule {
    #[new]
    #[pyo3(signature = (language = "auto", *, key_bits = DEFAULT_KEY_BITS, fold_scripts = true))]
    fn new(language: &str, key_bits: u32, fold_scripts: bool) -> PyResult<Self> {
        let normalization = tantivy_simhash::Normalization {
            traditional_to_simplified: fold_scripts,
            ..Default::default()
        };
        let scheme = tantivy_simhash::app::scheme_with(language, normalization)
            .map_err(crate::Failure::from)?;
        let rule = rule_with_key_bits(key_bits)?;
        let signer = Mutex::new(rule.signer(&scheme));
        Ok(Rule {
            rule,
            language: language.to_string(),
            fold_scripts,
            signer,
        })
    }

    /// The signature of ``text``. Cost: one analysis of the text, with the GIL released.
    fn sign(&self, py: Python<'_>, text: &str) -> Signature {
        let text = text.to_owned();
        py.detach(|| {
            let signature = self.signer().sign(&text);
            let keys = self.rule.keys(&signature);
            Signature { signature, keys }
        })
    }

    /// Whether ``a`` and ``b`` match, and why: an :class:`Evidence`, or ``None``. Cost: a
    /// popcount, and for pairs beyond the simhash distance one pass over the sketches.
    fn matches(&self, a: &Signature, b: &Signature) -> PyResult<Option<Evidence>> {
        for s in [a, b] {
            if s.signature.sketch.words.len() != self.words() {
                return Err(Failure::Value(format!(
                    "a signature has {} sketch words; this rule expects {}: sign with the same rule",
                    s.signature.sketch.words.len(),
                    self.words()
                ))
                .into());
            }
        }
        Ok(self
            .rule
            .matches(&a.signature, &b.signature)
            .map(|e| evidence(e, &a.signature, &b.signature, self.rule.minhash())))
    }

    /// Signs every text of ``texts`` (an iterable of str) on this thread with the GIL released.
    /// Returns ``(fingerprints, sketches)``: ``8 * n`` bytes of little-endian u64 and
    /// ``sketch_bytes * n`` bytes (:attr:`sketch_bytes` per document, in input order).
    fn sign_many<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        let mut owned = Vec::new();
        for item in texts.try_iter()? {
            owned.push(item?.extract::<String>()?);
        }
        let capacity = (owned.len() * 8, owned.len() * self.words() * 8);
        Ok(two_columns(py, capacity, |fps, sketches| {
            let mut signer = self.signer();
            for text in &owned {
                let sig = signer.sign(text);
                fps.extend_from_slice(&sig.fingerprint.0.to_le_bytes());
                for w in &sig.sketch.words {
                    sketches.extend_from_slice(&w.to_le_bytes());
                }
            }
        }))
    }

    /// The keys of signed documents (the buffers of :meth:`sign_many`), as postings:
    /// ``(documents, keys)``, little-endian u32 document indexes and u64 keys, one entry per
    /// key of each document (:attr:`keys_per_document`, fewer for a text without tokens).
    fn postings<'py>(
        &self,
        py: Python<'py>,
        fingerprints: &[u8],
        sketches: &[u8],
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        let sigs = self.signatures(fingerprints, sketches)?;
        if sigs.len() > u32::MAX as usize {
            return Err(Failure::Value(format!(
                "{} documents in one batch; expected at most {}",
                sigs.len(),
                u32::MAX
            ))
            .into());
        }
        let per_doc = self.rule.keys_per_document();
        let capacity = (sigs.len() * 4 * per_doc, sigs.len() * 8 * per_doc);
        Ok(two_columns(py, capacity, |docs, keys| {
            let mut buf = Vec::new();
            for (i, sig) in sigs.iter().enumerate() {
                buf.clear();
                self.rule.keys_into(sig, &mut buf);
                for k in &buf {
                    docs.extend_from_slice(&(i as u32).to_le_bytes());
                    keys.extend_from_slice(&k.to_le_bytes());
                }
            }
        }))
    }

    /// The hot keys among postings grouped by key (every posting of a key in this call): the
    /// keys held by more than ``max_postings_per_key`` distinct signatures, as little-endian
    /// u64 bytes. ``keys``, ``fingerprints`` (u64) and ``sketches`` are one entry per posting.
    fn hot_keys<'py>(
        &self,
        py: Python<'py>,
        keys: &[u8],
        fingerprints: &[u8],
        sketches: &[u8],
        max_postings_per_key: u64,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let keys = u64s(keys, "keys")?;
        let sigs = self.columns(fingerprints, sketches)?;
        same_length(keys.len(), sigs.fps.len(), "keys", "fingerprints")?;
        let cap = cap_of(max_postings_per_key);
        let hot = py.detach(|| {
            let mut out = Vec::new();
            let order = key_order(&keys);
            for run in order.chunk_by(|&x, &y| keys[x] == keys[y]) {
                if run.len() <= cap {
                    continue;
                }
                let owned: Vec<RustSignature> = run.iter().map(|&i| sigs.get(i)).collect();
                let members: Vec<&RustSignature> = owned.iter().collect();
                if tantivy_simhash::distinct_signatures(&members) > cap {
                    out.extend_from_slice(&keys[run[0]].to_le_bytes());
                }
            }
            out
        });
        Ok(PyBytes::new(py, &hot))
    }

    /// The matching pairs of postings grouped by key (every posting of a key in this call), as
    /// :func:`pairs_in_memory` over the whole input would report them, each once
    /// (``tantivy_simhash::pairs_in_key_group`` per key). ``rows`` number documents
    /// in input order (u64); ``hot_keys`` are the input's hot keys (:meth:`hot_keys` of every
    /// group, any order). Returns ``(row_a, row_b, distance, resemblance, band, stats)``:
    /// u64, u64, u32, f32 and i32 buffers (band -1 for simhash evidence), ``row_a < row_b``,
    /// and ``stats`` a dict of ``pairs``, ``comparisons``, ``hot_keys``. ``min_resemblance``:
    /// :meth:`pairs_in_memory`'s opt-in (``stats["pairs"]`` counts the pairs reported).
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (keys, rows, fingerprints, sketches, max_postings_per_key, hot_keys, *, min_resemblance = None))]
    fn verify_groups<'py>(
        &self,
        py: Python<'py>,
        keys: &[u8],
        rows: &[u8],
        fingerprints: &[u8],
        sketches: &[u8],
        max_postings_per_key: u64,
        hot_keys: &[u8],
        min_resemblance: Option<f32>,
    ) -> PyResult<(PairColumns<'py>, Bound<'py, PyAny>)> {
        check_min_resemblance(min_resemblance)?;
        let keys = u64s(keys, "keys")?;
        let rows = u64s(rows, "rows")?;
        let sigs = self.columns(fingerprints, sketches)?;
        same_length(keys.len(), sigs.fps.len(), "keys", "fingerprints")?;
        same_length(keys.len(), rows.len(), "keys", "rows")?;
        let hot: HashSet<u64> = u64s(hot_keys, "hot_keys")?.into_iter().collect();
        let cap = cap_of(max_postings_per_key);
        let bits = self.rule.minhash();
        let result = py.detach(|| -> Result<(PairBuffers, PairStats), Failure> {
            let mut out = PairBuffers::default();
            let mut stats = PairStats::default();
            let mut postings: Vec<(u64, RustSignature)> = Vec::new();
            let mut by_row: std::collections::HashMap<u64, usize> = Default::default();
            let order = key_order(&keys);
            // A key held by one document pairs nothing: most keys of a corpus.
            for run in order.chunk_by(|&x, &y| keys[x] == keys[y]) {
                if run.len() < 2 {
                    continue;
                }
                postings.clear();
                by_row.clear();
                for &i in run {
                    by_row.insert(rows[i], postings.len());
                    postings.push((rows[i], sigs.get(i)));
                }
                let mut below = 0;
                let mut s = pairs_in_key_group(
                    &self.rule,
                    keys[run[0]],
                    &postings,
                    cap,
                    |k| hot.contains(&k),
                    |a, b, e| {
                        let (sa, sb) = (&postings[by_row[&a]].1, &postings[by_row[&b]].1);
                        let ev = evidence(e, sa, sb, bits);
                        if below_min_resemblance(min_resemblance, sa, sb, ev.resemblance) {
                            below += 1;
                        } else {
                            out.push_evidence(a, b, &ev);
                        }
                    },
                )?;
                s.pairs -= below;
                stats.add(s);
            }
            Ok((out, stats))
        });
        let (out, stats) = result?;
        Ok((out.into_py(py), stats_dict(py, stats)?))
    }

    /// Every matching pair of signed documents (the buffers of :meth:`sign_many`) on this
    /// machine: ``tantivy_simhash::pairs_in_memory``, the single-machine join the
    /// distributed pipeline reproduces. Same return value as :meth:`verify_groups`, with
    /// document indexes for rows. Memory: the keys of every distinct signature.
    ///
    /// ``min_resemblance`` (opt-in, 0 to 1): report only the rule's pairs whose sketches
    /// estimate at least this resemblance, **whichever branch matched them** (the rule verifies
    /// only its band branch; a simhash match within 3 is a cosine test of the scheme's weighted
    /// tokens and can have a resemblance well under 0.5). A pair with an empty sketch (a text
    /// without shingles) has no estimate and stays. For a caller that scores pairs against a
    /// resemblance threshold above the rule's 0.55; the rule, its keys and the index are
    /// unchanged. ``stats["pairs"]`` counts the pairs reported and ``stats["below_min_resemblance"]``
    /// those left out. Cost: one pass over the two sketches per simhash pair.
    #[pyo3(signature = (fingerprints, sketches, max_postings_per_key, *, min_resemblance = None))]
    fn pairs_in_memory<'py>(
        &self,
        py: Python<'py>,
        fingerprints: &[u8],
        sketches: &[u8],
        max_postings_per_key: u64,
        min_resemblance: Option<f32>,
    ) -> PyResult<(PairColumns<'py>, Bound<'py, PyAny>)> {
        check_min_resemblance(min_resemblance)?;
        let sigs = self.signatures(fingerprints, sketches)?;
        let cap = cap_of(max_postings_per_key);
        let bits = self.rule.minhash();
        let (out, mut stats, below) = py.detach(|| {
            let mut out = PairBuffers::default();
            let mut below = 0u64;
            let stats = pairs_in_memory(&self.rule, &sigs, cap, |i, j, e| {
                let (a, b) = (&sigs[i], &sigs[j]);
                let ev = evidence(e, a, b, bits);
                if below_min_resemblance(min_resemblance, a, b, ev.resemblance) {
                    below += 1;
                } else {
                    out.push_evidence(i as u64, j as u64, &ev);
                }
            });
            (out, stats, below)
        });
        stats.pairs -= below;
        let dict = stats_dict(py, stats)?;
        if min_resemblance.is_some() {
            dict.set_item("below_min_resemblance", below)?;
        }
        Ok((out.into_py(py), dict))
    }

    /// Keys per document (simhash block keys plus band keys).
    #[getter]
    fn keys_per_document(&self) -> usize {
        self.rule.keys_per_document()
    }

    /// MinHash bands (band keys of a document with tokens; the rest of its keys are simhash
    /// block keys).
    #[getter]
    fn bands(&self) -> u32 {
        self.rule.minhash().bands
    }

    /// Bytes of one sketch (the verifier), besides the 8-byte fingerprint.
    #[getter]
    fn sketch_bytes(&self) -> usize {
        self.rule.sketch_bytes()
    }

    /// The rule's stable identifier (every parameter).
    #[getter]
    fn id(&self) -> String {
        self.rule.id()
    }

    /// The language of the scheme that signs texts.
    #[getter]
    fn language(&self) -> String {
        self.language.clone()
    }

    /// Whether Traditional Chinese is folded to Simplified before signing.
    #[getter]
    fn fold_scripts(&self) -> bool {
        self.fold_scripts
    }

    fn __str__(&self) -> String {
        self.rule.to_string()
    }

    /// Bits of a band key (16 to 32): two unrelated documents share a band by chance with
    /// probability `2^-key_bits` per band.
    #[getter]
    fn key_bits(&self) -> u32 {
        self.rule.minhash().key_bits
    }

    fn __repr__(&self) -> String {
        format!(
            "Rule(language={:?}, key_bits={}, fold_scripts={})",
            self.language,
            self.rule.minhash().key_bits,
            if self.fold_scripts { "True" } else { "False" }
        )
    }
}

/// Checks `min_resemblance` (the opt-in of [`Rule::pairs_in_memory`] and of the Dask pipeline's
/// verification): `ValueError` unless it is a number in 0..=1.
pub(crate) fn check_min_resemblance(min_resemblance: Option<f32>) -> Result<(), Failure> {
    match min_resemblance {
        Some(t) if !(t.is_finite() && (0.0..=1.0).contains(&t)) => Err(Failure::Value(format!(
            "min_resemblance = {t}; expected a number in 0..=1 (or None for every pair of the \
             rule)"
        ))),
        _ => Ok(()),
    }
}

/// Whether the opt-in `min_resemblance` leaves out a pair of the rule whose sketches estimate
/// `resemblance`: only when both sketches have an estimate (a text without shingles has none,
/// and its pairs stay) and it is below the floor, whichever branch matched.
pub(crate) fn below_min_resemblance(
    min_resemblance: Option<f32>,
    a: &RustSignature,
    b: &RustSignature,
    resemblance: f32,
) -> bool {
    let estimable = !(a.sketch.is_empty() || b.sketch.is_empty());
    min_resemblance.is_some_and(|t| estimable && resemblance < t)
}

/// The band key width of the default rule (the index's).
const DEFAULT_KEY_BITS: u32 = 20;

/// The default rule with band keys of `key_bits` bits: the same bins, the same estimate and the
/// same threshold, band keys taken from more bits of the same hash of each band's bins (so two
/// sketches that share a `key_bits`-bit key share every narrower one). Errors (``ValueError``)
/// outside 16..=32.
fn rule_with_key_bits(key_bits: u32) -> Result<MatchRule, Failure> {
    let spec = tantivy_simhash::RuleSpec {
        minhash: MinHashConfig {
            key_bits,
            ..MinHashConfig::default()
        },
        ..tantivy_simhash::RuleSpec::default()
    };
    MatchRule::new(spec).map_err(|e| {
        Failure::Value(format!(
            "Rule(key_bits={key_bits}): {e}; pass 20 (the index's rule) or up to 32 (fewer chance \
             band candidates on large corpora)"
        ))
    })
}

/// The connected components of the graph whose edges are ``(a[i], b[i])`` (little-endian u64
/// buffers of equal length): ``(nodes, labels)``, every node met in an edge once (ascending)
/// and the smallest node of its component (the library's ``batch::edge_components``). The GIL
/// is released meanwhile.
#[pyfunction]
pub(crate) fn components<'py>(
    py: Python<'py>,
    a: &[u8],
    b: &[u8],
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    edge_labels(py, a, b, tantivy_simhash::edge_components)
}

/// Leader clustering of the graph whose edges are ``(a[i], b[i])`` (little-endian u64 buffers
/// of equal length), nodes in numeric order as the input order: ``(nodes, labels)``, every
/// node of a cluster of at least two (ascending) and its leader, the smallest earlier leader
/// it has an edge to (the library's ``batch::edge_leaders``). The GIL is released meanwhile.
#[pyfunction]
pub(crate) fn leaders<'py>(
    py: Python<'py>,
    a: &[u8],
    b: &[u8],
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    edge_labels(py, a, b, tantivy_simhash::edge_leaders)
}

/// A library function from edge lists to `(nodes, labels)`.
type EdgeLabelling = fn(&[u64], &[u64]) -> tantivy_simhash::Result<(Vec<u64>, Vec<u64>)>;

/// `label` (a library function of edge lists) over the edges in `a` and `b` (little-endian
/// u64 buffers of equal length), with the GIL released: ``(nodes, labels)`` as bytes.
fn edge_labels<'py>(
    py: Python<'py>,
    a: &[u8],
    b: &[u8],
    label: EdgeLabelling,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let a = u64s(a, "a")?;
    let b = u64s(b, "b")?;
    same_length(a.len(), b.len(), "a", "b")?;
    let (nodes, labels) = py.detach(|| label(&a, &b)).map_err(Failure::from)?;
    let (nodes, labels) = (words_to_bytes(&nodes), words_to_bytes(&labels));
    Ok((PyBytes::new(py, &nodes), PyBytes::new(py, &labels)))
}

/// Signature columns as buffers, read on demand.
struct Columns<'a> {
    fps: Vec<u64>,
    sketches: &'a [u8],
    width: usize,
}

impl Columns<'_> {
    fn get(&self, i: usize) -> RustSignature {
        let at = i * self.width;
        RustSignature {
            fingerprint: Fingerprint(self.fps[i]),
            sketch: Sketch {
                words: self.sketches[at..at + self.width]
                    .chunks_exact(8)
                    .map(le_u64)
                    .collect(),
            },
        }
    }
}

type PairColumns<'py> = (
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
);

/// Pairs as column buffers.
#[derive(Default)]
struct PairBuffers {
    a: Vec<u8>,
    b: Vec<u8>,
    distance: Vec<u8>,
    resemblance: Vec<u8>,
    band: Vec<u8>,
}

impl PairBuffers {
    fn push_evidence(&mut self, a: u64, b: u64, ev: &Evidence) {
        self.a.extend_from_slice(&a.to_le_bytes());
        self.b.extend_from_slice(&b.to_le_bytes());
        self.distance.extend_from_slice(&ev.distance.to_le_bytes());
        self.resemblance
            .extend_from_slice(&ev.resemblance.to_le_bytes());
        let band = ev.band.map_or(-1i32, |b| b as i32);
        self.band.extend_from_slice(&band.to_le_bytes());
    }

    fn into_py(self, py: Python<'_>) -> PairColumns<'_> {
        (
            PyBytes::new(py, &self.a),
            PyBytes::new(py, &self.b),
            PyBytes::new(py, &self.distance),
            PyBytes::new(py, &self.resemblance),
            PyBytes::new(py, &self.band),
        )
    }
}

fn evidence(
    e: RustEvidence,
    a: &RustSignature,
    b: &RustSignature,
    bits: &MinHashConfig,
) -> Evidence {
    match e {
        RustEvidence::Simhash { distance } => Evidence {
            kind: "simhash",
            distance,
            resemblance: a.sketch.resemblance(&b.sketch, bits),
            band: None,
        },
        RustEvidence::Resemblance {
            band,
            resemblance,
            distance,
        } => Evidence {
            kind: "resemblance",
            distance,
            resemblance,
            band: Some(band),
        },
    }
}

fn stats_dict(py: Python<'_>, stats: PairStats) -> PyResult<Bound<'_, PyAny>> {
    let d = pyo3::types::PyDict::new(py);
    d.set_item("pairs", stats.pairs)?;
    d.set_item("comparisons", stats.comparisons)?;
    d.set_item("hot_keys", stats.hot_keys)?;
    Ok(d.into_any())
}

/// Indexes into `keys` ordered by key (runs of equal keys, each ascending).
fn key_order(keys: &[u64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_unstable_by_key(|&i| (keys[i], i));
    order
}

/// 0 means no bound, as does anything beyond the address space.
fn cap_of(max_postings_per_key: u64) -> usize {
    if max_postings_per_key == 0 {
        usize::MAX
    } else {
        usize::try_from(max_postings_per_key).unwrap_or(usize::MAX)
    }
}

fn le_u64(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(b);
    u64::from_le_bytes(w)
}

/// Two byte columns filled by `fill` with the GIL released (starting with `capacity` bytes
/// each), returned as Python bytes: the answer of every method that returns two columns.
fn two_columns<'py>(
    py: Python<'py>,
    capacity: (usize, usize),
    fill: impl FnOnce(&mut Vec<u8>, &mut Vec<u8>) + Send,
) -> (Bound<'py, PyBytes>, Bound<'py, PyBytes>) {
    let (a, b) = py.detach(|| {
        let mut a = Vec::with_capacity(capacity.0);
        let mut b = Vec::with_capacity(capacity.1);
        fill(&mut a, &mut b);
        (a, b)
    });
    (PyBytes::new(py, &a), PyBytes::new(py, &b))
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

fn same_length(x: usize, y: usize, xn: &str, yn: &str) -> Result<(), Failure> {
    if x == y {
        Ok(())
    } else {
        Err(Failure::Value(format!(
            "{xn} has {x} entries but {yn} has {y}; expected one entry per posting in each"
        )))
    }
}

fn words_to_bytes(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Rule>()?;
    m.add_class::<Signature>()?;
    m.add_class::<Evidence>()?;
    m.add_function(wrap_pyfunction!(components, m)?)?;
    m.add_function(wrap_pyfunction!(leaders, m)?)?;
    Ok(())
}
