//! Why two documents are near-duplicates, or why not: the user-facing account is on
//! [`Explanation`].

mod words;

pub use words::{Alignment, Run, RunKind, ALIGNMENT_DEADLINE, MIN_MOVED_WORDS};

use crate::error::{Error, Result};
use crate::fingerprint::Scheme;
use crate::lookup::NearDupLookup;
use crate::schema::NearDupIndex;
use crate::signature::{Evidence, MatchRule, Signature};
use serde::Serialize;
use std::collections::HashSet;
use tantivy::schema::Value;
use tantivy::TantivyDocument;
use words::{align, jaccard, Words};

/// The simhash branch of the rule for one pair.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimhashPart {
    /// The two fingerprints, as 16 hex digits.
    pub fingerprints: [String; 2],
    /// Their Hamming distance.
    pub distance: u32,
    /// The rule's `k`: the branch matches at `distance <= k`.
    pub max_distance: u32,
    /// The layout's block keys (one per combination of blocks).
    pub keys: usize,
    /// The combinations whose keys the two share (every pair within `k` shares one).
    pub shared_keys: Vec<usize>,
    /// Whether the branch matches.
    pub matched: bool,
}

/// The MinHash branch of the rule for one pair.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MinHashPart {
    /// The rule's bands.
    pub bands: u32,
    /// The bands the sketches share (all `rows x bits` bits equal).
    pub shared_bands: Vec<u32>,
    /// The sketches' resemblance estimate (0 when a sketch is empty).
    pub estimate: f32,
    /// Bins whose values agree, of all bins.
    pub agreeing_bins: [u32; 2],
    /// The rule's threshold on the estimate.
    pub min_resemblance: f32,
    /// The rule's optional distance vote: the branch also needs `distance <= this`.
    pub band_max_distance: Option<u32>,
    /// Whether each sketch is empty (a text without shingles).
    pub empty: [bool; 2],
    /// Whether the branch matches.
    pub matched: bool,
}

/// A resemblance computed exactly from two shingle sets.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShingleResemblance {
    /// Distinct shingles of each text.
    pub shingles: [usize; 2],
    /// Shingles both have.
    pub shared: usize,
    /// Jaccard: shared / all distinct (1 when both are empty).
    pub resemblance: f64,
}

/// A line of a text that the rule's shingles leave out as site chrome.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChromeLine {
    /// The line's number, from 0 (lines split at `\n`).
    pub line: usize,
    /// The line.
    pub text: String,
    /// `true` when only the line's tail (a title's site-name suffix) is chrome.
    pub suffix_only: bool,
}

/// One branch of the rule, as a sentence: what it needs, what the pair has, by how much it
/// passes or fails.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Branch {
    /// `simhash` or `minhash`.
    pub name: &'static str,
    /// Whether it matched.
    pub matched: bool,
    /// Why: "distance 7 > k = 3 (by 4 bits)", "no band shared (0 of 12)", "estimate 0.41 <
    /// 0.55 (by 0.14)".
    pub reason: String,
}

/// Everything the rule decided for a pair, and what it looked at: why two documents are
/// near-duplicates, or why not.
///
/// The index's verdict is two numbers (`d=6`, `r=0.93`). A person checking a decision needs
/// every part of the [`MatchRule`] laid out, and the texts side by side:
///
/// - **simhash**: the two fingerprints, their Hamming distance against the rule's `k`, and
///   which of the layout's block keys they share (the keys a lookup finds them under);
/// - **MinHash**: which of the rule's bands the sketches share, the sketches' resemblance
///   estimate against the rule's threshold, and the optional distance vote;
/// - **shingles**: the exact resemblance (Jaccard) of the two texts' shingles as the rule
///   defines them (the units the sketch hashes: the scheme's tokens, Han characters one by
///   one, site chrome left out), which the sketch only estimates; and the evaluation's own
///   resemblance (word 3-shingles of the whole text, `tools/shingles.py` of the evaluation
///   data), which is what "near-duplicate" is measured by;
/// - **chrome**: the lines of each text the rule's shingles leave out as site chrome;
/// - **alignment**: a word-level diff of the two texts (common runs, deletions, insertions,
///   moved blocks) by the [`similar`] crate, with the byte ranges of each word.
///
/// A non-match says which branch failed and by how much ([`Branch`]).
///
/// ```
/// use tantivy_simhash::Explanation;
/// use tantivy_simhash::{MatchRule, Scheme};
///
/// let rule = MatchRule::default();
/// let scheme = Scheme::default();
/// let a = "Simhash maps a weighted feature set to 64 bits, and near-duplicate documents get \
///          fingerprints that differ in only a few bits, so a crawler can find them quickly.";
/// let b = "Simhash maps a weighted feature set to 64 bits, and near-duplicate pages get \
///          fingerprints that differ in only a few bits, so a crawler can find them quickly.";
/// let e = Explanation::of_texts(&rule, &scheme, a, b);
/// assert_eq!(e.verdict.is_some(), rule.matches(&e.signatures[0], &e.signatures[1]).is_some());
/// assert_eq!(e.alignment.counts().1, 1); // "documents" deleted
/// assert!(e.words.resemblance > 0.7);
/// println!("{}", e.summary());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Explanation {
    /// The rule's verdict: the evidence of a match ([`MatchRule::matches`]), `None` for a
    /// non-match. In JSON ([`to_json`](Self::to_json)): `{"match": "simhash" | "resemblance",
    /// "distance", "band", "resemblance"}` or `null`.
    #[serde(skip)]
    pub verdict: Option<Evidence>,
    /// The rule, in words.
    pub rule: String,
    /// Each branch, with the reason it matched or failed.
    pub branches: Vec<Branch>,
    /// The simhash branch.
    pub simhash: SimhashPart,
    /// The MinHash branch.
    pub minhash: MinHashPart,
    /// Exact resemblance of the rule's shingles (what the sketch estimates).
    pub shingles: ShingleResemblance,
    /// Exact resemblance of the evaluation's word 3-shingles over the whole texts.
    pub words: ShingleResemblance,
    /// Lines of each text left out of the rule's shingles as site chrome.
    pub chrome: [Vec<ChromeLine>; 2],
    /// Word-level alignment of the two texts.
    pub alignment: Alignment,
    /// The signatures the verdict was computed from (the index's stored ones, or the texts'
    /// when explaining texts).
    #[serde(skip)]
    pub signatures: [Signature; 2],
    /// Whether each signature is the one the text signs to today (`false`: the stored
    /// signature was made from another text, or by another version).
    pub signature_of_text: [bool; 2],
}

impl Explanation {
    /// Explains two texts under `rule` and `scheme`: signs both, then [`of_signed`]. Cost:
    /// two signings, two analyses for the shingles, the word split of both texts and a diff
    /// (at most [`ALIGNMENT_DEADLINE`]). Never fails.
    ///
    /// [`of_signed`]: Self::of_signed
    pub fn of_texts(rule: &MatchRule, scheme: &Scheme, a: &str, b: &str) -> Explanation {
        let mut signer = rule.signer(scheme);
        let sa = signer.sign(a);
        let sb = signer.sign(b);
        Explanation::of_signed(rule, scheme, [a, b], [sa, sb])
    }

    /// Explains two texts whose signatures are known (an index's stored ones): the verdict
    /// and the branches come from `signatures`; the shingles, chrome and alignment from the
    /// texts. Cost and failures as [`of_texts`](Self::of_texts).
    pub fn of_signed(
        rule: &MatchRule,
        scheme: &Scheme,
        texts: [&str; 2],
        signatures: [Signature; 2],
    ) -> Explanation {
        let [a, b] = &signatures;
        let spec = rule.spec();
        let config = rule.minhash();
        let k = rule.layout().max_distance();
        let distance = a.fingerprint.distance(b.fingerprint);
        let (keys_a, keys_b) = (
            rule.layout().keys(a.fingerprint),
            rule.layout().keys(b.fingerprint),
        );
        let shared_keys: Vec<usize> = (0..keys_a.len())
            .filter(|&i| keys_a[i] == keys_b[i])
            .collect();
        let empty = [a.sketch.is_empty(), b.sketch.is_empty()];
        let shared_bands: Vec<u32> = if empty[0] || empty[1] {
            Vec::new()
        } else {
            (0..config.bands)
                .filter(|&i| a.sketch.band(config, i) == b.sketch.band(config, i))
                .collect()
        };
        let estimate = a.sketch.resemblance(&b.sketch, config);
        let (agree, bins) = a.sketch.agreeing_bins(&b.sketch, config);
        let verdict = rule.matches(a, b);
        let simhash_matched = distance <= k;
        let vote_ok = spec.band_max_distance.is_none_or(|k2| distance <= k2);
        let minhash_matched =
            !shared_bands.is_empty() && estimate >= spec.min_resemblance && vote_ok;

        let simhash_reason = if simhash_matched {
            format!("distance {distance} <= k = {k}")
        } else {
            format!(
                "distance {distance} > k = {k} (by {} bit{})",
                distance - k,
                if distance - k == 1 { "" } else { "s" }
            )
        };
        let minhash_reason = if empty[0] || empty[1] {
            "a text has no shingles (empty sketch): the branch cannot match".to_string()
        } else if shared_bands.is_empty() {
            format!(
                "no band shared (0 of {}); estimate {estimate:.2}",
                config.bands
            )
        } else if !vote_ok {
            let k2 = spec.band_max_distance.unwrap_or(0);
            format!(
                "{} of {} bands shared, but distance {distance} > {k2} (the rule's vote, by {})",
                shared_bands.len(),
                config.bands,
                distance - k2
            )
        } else if estimate < spec.min_resemblance {
            format!(
                "{} of {} bands shared; estimate {estimate:.2} < {} (by {:.2})",
                shared_bands.len(),
                config.bands,
                spec.min_resemblance,
                spec.min_resemblance - estimate
            )
        } else {
            format!(
                "{} of {} bands shared; estimate {estimate:.2} >= {}",
                shared_bands.len(),
                config.bands,
                spec.min_resemblance
            )
        };

        let mut signer = rule.signer(scheme);
        let set = |v: Vec<u64>| v.into_iter().collect::<HashSet<u64>>();
        let (sh_a, sh_b) = (
            set(signer.shingles(texts[0])),
            set(signer.shingles(texts[1])),
        );
        let (r, shared) = jaccard(&sh_a, &sh_b);
        let shingles = ShingleResemblance {
            shingles: [sh_a.len(), sh_b.len()],
            shared,
            resemblance: r,
        };
        let signature_of_text = [signer.sign(texts[0]) == *a, signer.sign(texts[1]) == *b];
        let (wa, wb) = (Words::of(texts[0]), Words::of(texts[1]));
        let (swa, swb) = (wa.shingles(), wb.shingles());
        let (r, shared) = jaccard(&swa, &swb);
        let words = ShingleResemblance {
            shingles: [swa.len(), swb.len()],
            shared,
            resemblance: r,
        };
        let chrome = if spec.shingling.chrome {
            [chrome_of(texts[0]), chrome_of(texts[1])]
        } else {
            [Vec::new(), Vec::new()]
        };
        Explanation {
            verdict,
            rule: rule.to_string(),
            branches: vec![
                Branch {
                    name: "simhash",
                    matched: simhash_matched,
                    reason: simhash_reason,
                },
                Branch {
                    name: "minhash",
                    matched: minhash_matched,
                    reason: minhash_reason,
                },
            ],
            simhash: SimhashPart {
                fingerprints: [
                    format!("{:016x}", a.fingerprint.0),
                    format!("{:016x}", b.fingerprint.0),
                ],
                distance,
                max_distance: k,
                keys: keys_a.len(),
                shared_keys,
                matched: simhash_matched,
            },
            minhash: MinHashPart {
                bands: config.bands,
                shared_bands,
                estimate,
                agreeing_bins: [agree, bins],
                min_resemblance: spec.min_resemblance,
                band_max_distance: spec.band_max_distance,
                empty,
                matched: minhash_matched,
            },
            shingles,
            words,
            chrome,
            alignment: align(&wa, &wb),
            signatures,
            signature_of_text,
        }
    }

    /// One line: the verdict and the branch that decided it (or why both failed).
    pub fn summary(&self) -> String {
        match &self.verdict {
            Some(e) => format!("near-duplicates: {e}"),
            None => {
                let reasons: Vec<String> = self
                    .branches
                    .iter()
                    .map(|b| format!("{}: {}", b.name, b.reason))
                    .collect();
                format!("not near-duplicates: {}", reasons.join("; "))
            }
        }
    }

    /// The explanation as a JSON value (what `neardup explain --json` prints). Never fails.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or(serde_json::Value::Null);
        if let Some(obj) = v.as_object_mut() {
            obj.insert("summary".into(), self.summary().into());
            obj.insert(
                "verdict".into(),
                match &self.verdict {
                    None => serde_json::Value::Null,
                    Some(Evidence::Simhash { distance }) => {
                        serde_json::json!({"match": "simhash", "distance": distance})
                    }
                    Some(Evidence::Resemblance {
                        band,
                        resemblance,
                        distance,
                    }) => serde_json::json!({
                        "match": "resemblance", "band": band,
                        "resemblance": resemblance, "distance": distance
                    }),
                },
            );
        }
        v
    }
}

/// The evaluation's resemblance of two texts: Jaccard of their word 3-shingles after NFKC and
/// case folding, every Han ideograph a word (the truth files' measure, [`Explanation::words`]).
/// 1 when neither text has a word. Cost: one pass over each text and a hash set of its
/// shingles.
///
/// ```
/// use tantivy_simhash::word_resemblance;
/// assert_eq!(word_resemblance("One two three four", "one TWO three four"), 1.0);
/// assert_eq!(word_resemblance("one two three four", "one two three five"), 1.0 / 3.0);
/// ```
pub fn word_resemblance(a: &str, b: &str) -> f64 {
    jaccard(&Words::of(a).shingles(), &Words::of(b).shingles()).0
}

/// The lines of `text` the rule's chrome detection marks, as the signer removes them (none
/// when every line with words is chrome: then the signer keeps everything).
fn chrome_of(text: &str) -> Vec<ChromeLine> {
    use crate::signature::chrome::{chrome_lines, LineChrome};
    let Some(marks) = chrome_lines(text) else {
        return Vec::new();
    };
    let lines: Vec<&str> = text.split('\n').collect();
    let has_words = |l: &str| l.chars().any(char::is_alphanumeric);
    let all_chrome = lines
        .iter()
        .zip(&marks)
        .filter(|(l, _)| has_words(l))
        .all(|(_, m)| *m == LineChrome::Chrome);
    if all_chrome {
        return Vec::new();
    }
    lines
        .iter()
        .zip(&marks)
        .enumerate()
        .filter(|(_, (_, m))| **m != LineChrome::Content)
        .map(|(i, (l, m))| ChromeLine {
            line: i,
            text: l.to_string(),
            suffix_only: matches!(m, LineChrome::NameSuffix { .. }),
        })
        .collect()
}

impl NearDupIndex {
    /// Explains the pair of documents `id_a` and `id_b` of `searcher`'s index: the verdict from
    /// their stored signatures, the texts (the configured text fields joined by line breaks,
    /// as they were signed) read from the doc store. See [`Explanation`].
    ///
    /// Cost: two id lookups, two doc-store reads and [`Explanation::of_signed`]. Errors:
    /// [`Error::Document`] when an id is not in the index or has no signature;
    /// [`Error::Schema`] when a text field is not stored (there is no text to show);
    /// [`Error::Tantivy`] when reading fails.
    pub fn explain_ids(
        &self,
        searcher: &NearDupLookup,
        id_a: &str,
        id_b: &str,
    ) -> Result<Explanation> {
        let [ta, tb] = [id_a, id_b].map(|id| self.stored_text(searcher, id));
        let (ta, tb) = (ta?, tb?);
        let sig = |id: &str| -> Result<Signature> {
            searcher.signature_of_id(id)?.ok_or_else(|| {
                Error::Document(format!(
                    "the document `{id}` has no signature (added around the writer); add it \
                     through DedupWriter"
                ))
            })
        };
        Ok(Explanation::of_signed(
            self.rule(),
            self.scheme(),
            [&ta, &tb],
            [sig(id_a)?, sig(id_b)?],
        ))
    }

    /// The text document `id` was signed from: its text fields' stored values joined by line
    /// breaks. Errors as [`explain_ids`](Self::explain_ids).
    pub fn stored_text(&self, searcher: &NearDupLookup, id: &str) -> Result<String> {
        let address = searcher.address_of_id(id)?.ok_or_else(|| {
            Error::Document(format!(
                "no live document has id `{id}`; check the id (ids are exact strings)"
            ))
        })?;
        let schema = searcher.searcher().schema();
        let mut fields = Vec::new();
        for name in self.config().text_fields() {
            let field = schema.get_field(name)?;
            if !schema.get_field_entry(field).is_stored() {
                return Err(Error::Schema {
                    field: name.clone(),
                    problem: "is not stored, so there is no text to explain; index the text \
                              fields with STORED, or explain the two texts"
                        .into(),
                });
            }
            fields.push(field);
        }
        let doc: TantivyDocument = searcher.searcher().doc(address)?;
        let mut text = String::new();
        for &f in &fields {
            for v in doc.get_all(f) {
                if let Some(s) = v.as_str() {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(s);
                }
            }
        }
        Ok(text)
    }
}
