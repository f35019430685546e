//! The file's tables against an older format's and against the fingerprints they index.

use super::write::write_version;
use super::*;
use crate::error::Result;
use crate::fingerprint::Fingerprint;
use crate::signature::Signature;
use crate::test_rng::Rng;
use std::collections::BTreeSet;
use tantivy::DocId;

/// Documents given as rows of words (`None`: no signature).
struct Rows(Vec<Option<Vec<u64>>>);

impl SignatureSource for Rows {
    fn max_doc(&self) -> u32 {
        self.0.len() as u32
    }

    fn for_each(&self, f: &mut dyn FnMut(DocId, Option<&[u64]>)) -> Result<()> {
        for (doc, row) in self.0.iter().enumerate() {
            f(doc as DocId, row.as_deref());
        }
        Ok(())
    }
}

/// Fingerprints in clusters (a base and neighbours 1 to 6 bits away), some documents without
/// a signature.
fn clustered(seed: u64, n: usize) -> Vec<Option<u64>> {
    let mut rng = Rng(seed);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let base = rng.next();
        out.push(Some(base));
        for _ in 0..rng.below(6) {
            let flips = 1 + rng.below(6);
            let near = (0..flips).fold(base, |fp, _| fp ^ 1 << rng.below(64));
            out.push(Some(near));
        }
        if rng.below(10) == 0 {
            out.push(None);
        }
    }
    out.truncate(n);
    out
}

fn file(rule: &MatchRule, rows: &Rows, version: u32) -> ComponentFile {
    let mut bytes = Vec::new();
    let words = 1 + rule.minhash().sketch_words();
    write_version(rule, words, rows, &mut bytes, version).unwrap();
    ComponentFile::parse(
        OwnedBytes::new(bytes),
        format!("v{version}"),
        rule,
        rows.max_doc(),
    )
    .unwrap()
}

/// A format-3 file (no filter bits) is still read, and holds the same documents under every
/// key as a format-4 file of the same signatures; the format-4 tables of the simhash keys
/// keep at least 16 filter bits, each entry's being its fingerprint's bits outside the key,
/// so they never put a document farther from a query than it is.
#[test]
fn filter_bits_change_no_run_and_never_overstate_a_distance() {
    let rule = MatchRule::default();
    let layout = rule.layout();
    let blocks = layout.num_keys();
    for (seed, n) in [(1, 40), (2, 3_000), (3, 20_000)] {
        let fps = clustered(seed, n);
        let rows = Rows(fps.iter().map(|fp| fp.map(|fp| vec![fp])).collect());
        let (old, new) = (file(&rule, &rows, 3), file(&rule, &rows, FORMAT_VERSION));
        for (p, (a, b)) in old.families.iter().zip(&new.families).enumerate() {
            assert_eq!(a.plan.filter_bits, 0);
            if p < blocks {
                assert!(b.plan.filter_bits >= MIN_FILTER_BITS, "{:?}", b.plan);
            } else {
                assert_eq!(a.plan, b.plan);
            }
        }
        let mut rng = Rng(seed + 100);
        let queries = fps
            .iter()
            .flatten()
            .copied()
            .step_by(7)
            .chain((0..50).map(|_| rng.next()));
        for q in queries {
            let keys = rule.keys(&Signature {
                fingerprint: Fingerprint(q),
                ..Signature::default()
            });
            for (p, &key) in keys.iter().enumerate().take(blocks) {
                let docs = |f: &ComponentFile| -> Vec<DocId> {
                    let run = f.run(p, key).unwrap();
                    run.docs_with_filter().map(|(d, _)| d).collect()
                };
                assert_eq!(docs(&old), docs(&new), "query {q:016x}, key {p}");
                let run = new.run(p, key).unwrap();
                let mask = low_mask(new.families[p].plan.filter_bits);
                for (doc, filter) in run.docs_with_filter() {
                    let Some(fp) = fps[doc as usize] else {
                        panic!("document {doc} has no signature but is in a table");
                    };
                    assert_eq!(filter, layout.combo_rest(p, Fingerprint(fp)) & mask);
                    let bound = (filter ^ layout.combo_rest(p, Fingerprint(q)) & mask).count_ones();
                    assert!(bound <= Fingerprint(q).distance(Fingerprint(fp)));
                }
            }
        }
        // The batch jobs' scan decodes the same (value, doc) entries from both.
        for p in 0..blocks {
            let entries = |f: &ComponentFile| -> BTreeSet<(u64, DocId)> {
                let mut set = BTreeSet::new();
                f.for_each_table_entry(p, 0, 0, |value, doc| {
                    set.insert((value, doc));
                })
                .unwrap();
                set
            };
            let want: usize = fps.iter().flatten().count();
            assert_eq!(entries(&new).len(), want);
            assert_eq!(entries(&old), entries(&new), "table {p}");
        }
    }
}
