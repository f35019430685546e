//! Reading the signature section: a document's words are at an offset.

use super::{u64_at, ComponentFile, HEADER_BYTES};
use crate::fingerprint::Fingerprint;
use crate::signature::Signature;
use tantivy::DocId;

impl ComponentFile {
    /// Whether `doc` has a signature.
    pub(crate) fn has_signature(&self, doc: DocId) -> bool {
        if doc >= self.max_doc {
            return false;
        }
        let word = u64_at(
            self.bytes.as_slice(),
            self.present + (doc as usize / 64) * 8,
        );
        word.is_some_and(|w| w >> (doc % 64) & 1 == 1)
    }

    /// The raw words of `doc` (fingerprint, then sketch), if it has a signature.
    fn raw(&self, doc: DocId) -> Option<&[u8]> {
        if !self.has_signature(doc) {
            return None;
        }
        let at = HEADER_BYTES + doc as usize * self.words * 8;
        self.bytes.as_slice().get(at..at + self.words * 8)
    }

    /// The words of `doc` (the fingerprint, then the sketch), if it has a signature.
    pub(crate) fn words(&self, doc: DocId) -> Option<impl Iterator<Item = u64> + '_> {
        let raw = self.raw(doc)?;
        let missing = self.full_words - self.words;
        Some(
            raw.chunks_exact(8)
                .map(|c| u64_at(c, 0).unwrap_or(0))
                .chain(std::iter::repeat_n(0, missing)),
        )
    }

    /// Word `w` of `doc` (0 is the fingerprint); 0 for a document without a signature.
    pub(crate) fn word(&self, doc: DocId, w: usize) -> u64 {
        if w >= self.words || doc >= self.max_doc {
            return 0;
        }
        u64_at(
            self.bytes.as_slice(),
            HEADER_BYTES + (doc as usize * self.words + w) * 8,
        )
        .unwrap_or(0)
    }

    /// The fingerprint of `doc`, if it has a signature.
    pub(crate) fn fingerprint(&self, doc: DocId) -> Option<Fingerprint> {
        self.has_signature(doc)
            .then(|| Fingerprint(self.word(doc, 0)))
    }

    /// Appends `doc`'s sketch words (all of the rule's, zero where the file keeps none) to
    /// `out`; `false`, appending nothing, when it has no signature.
    pub(crate) fn sketch_words_into(&self, doc: DocId, out: &mut Vec<u64>) -> bool {
        let Some(raw) = self.raw(doc) else {
            return false;
        };
        let stored = raw.get(8..).unwrap_or(&[]);
        out.extend(stored.chunks_exact(8).map(|c| u64_at(c, 0).unwrap_or(0)));
        out.resize(out.len() + (self.full_words - self.words), 0);
        true
    }

    /// Reads `doc`'s signature into `out`; `false` when it has none.
    pub(crate) fn read_into(&self, doc: DocId, out: &mut Signature) -> bool {
        let Some(mut words) = self.words(doc) else {
            return false;
        };
        out.fingerprint = Fingerprint(words.next().unwrap_or(0));
        out.sketch.words.clear();
        out.sketch.words.extend(words);
        true
    }
}
