//! The writer's pending table: the signatures, ids and groups of the documents added since the
//! last commit, indexed by the rule's keys, and the near-duplicate check against it and the
//! committed index.

pub(super) use super::id_policy::Chain;
use super::id_policy::PendingIds;
use crate::error::Result;
use crate::fingerprint::Fingerprint;
use crate::id_table::StrColumns;
use crate::lookup::NearDupLookup;
use crate::signature::{band_from_words, Evidence, MatchRule, Signature};
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// What the writer keeps of an uncommitted document besides its signature (which the table
/// keeps in flat arrays: [`Slot`], `Pending::sketches`).
pub(super) struct PendingDoc {
    pub(super) id: Arc<str>,
    pub(super) group: Option<Arc<str>>,
    /// The ids it replaced, directly or through the documents it replaced.
    pub(super) replaced: Chain,
}

/// What a check reads first of each pending candidate, kept dense (one per document, by
/// place): most candidates are settled by their fingerprint without touching the document.
#[derive(Clone, Copy)]
struct Slot {
    fingerprint: Fingerprint,
    alive: bool,
    /// Whether it has a sketch (not all zero): only then can it match by resemblance.
    sketched: bool,
}

/// Mixes a key (already a hash-like value, but its blocks and band tags sit in fixed bits) into
/// a table hash: SipHash (the std default) cost more than the rest of an insertion.
#[derive(Default, Clone, Copy)]
pub(super) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, key: u64) {
        // splitmix64's finaliser: every input bit reaches the low bits (the bucket) and the
        // high bits (the control byte).
        let mut x = self.0 ^ key;
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        self.0 = x ^ (x >> 31);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The pending documents holding one key, in the order they were added: the first inline, the
/// others in a list of `Pending::more_holders`, so the common key held by one document costs no
/// allocation and its entry in the key table 16 bytes with the key (the table holds every key
/// of every pending document: a check probes it once per key, mostly out of cache).
#[derive(Clone, Copy)]
struct KeyHolders {
    first: u32,
    /// The index of the list of the other holders in `Pending::more_holders` ([`NO_MORE`]
    /// when none was needed yet), and in bit 31 ([`OVERFLOWED`]) whether a document holding
    /// the key was left out (the list was full of live holders): until then the holders are
    /// every live document with the key, which lets a check read which bands a candidate
    /// shares from the lists it was found in.
    more: u32,
}

const OVERFLOWED: u32 = 1 << 31;
const NO_MORE: u32 = OVERFLOWED - 1;

impl KeyHolders {
    fn new(first: u32) -> KeyHolders {
        KeyHolders {
            first,
            more: NO_MORE,
        }
    }

    fn overflowed(self) -> bool {
        self.more & OVERFLOWED != 0
    }

    /// The holders after the first (none when the list was never needed).
    fn more(self, lists: &[Vec<u32>]) -> &[u32] {
        lists.get((self.more & NO_MORE) as usize).map_or(&[], |l| l)
    }

    /// Adds holder `i` at the end (a list is made for the key the first time).
    fn push(&mut self, lists: &mut Vec<Vec<u32>>, i: u32) {
        match lists.get_mut((self.more & NO_MORE) as usize) {
            Some(list) => list.push(i),
            None => {
                self.more = (self.more & OVERFLOWED) | lists.len() as u32;
                lists.push(vec![i]);
            }
        }
    }

    /// Drops the holders that died (replaced or deleted by id), keeping the order; `false`
    /// when none is left.
    fn retain_live(&mut self, lists: &mut [Vec<u32>], slots: &[Slot]) -> bool {
        let alive = |i: u32| slots[i as usize].alive;
        let Some(more) = lists.get_mut((self.more & NO_MORE) as usize) else {
            return alive(self.first);
        };
        more.retain(|&i| alive(i));
        if alive(self.first) {
            return true;
        }
        if more.is_empty() {
            return false;
        }
        self.first = more.remove(0);
        true
    }
}

/// What the writer knows that the last commit does not.
pub(super) struct Pending {
    pub(super) docs: Vec<PendingDoc>,
    slots: Vec<Slot>,
    /// The sketch words of each document, by place (`sketch_words` each, as the index stores
    /// them: extra words cut, missing ones zero), so that a resemblance estimate reads one
    /// contiguous run instead of following a pointer per document. The band keys are the first
    /// words' bit fields: a candidate beyond the simhash radius is compared band by band there
    /// (its first cache line), the rest of its sketch read only when a band is equal.
    sketches: Vec<u64>,
    /// The rule's keys (block and band keys) of the pending documents; each list holds at most
    /// `max_postings_per_key` documents in the order added. A document joins a list while it
    /// has fewer live holders than that (dead ones are dropped when the list is full), so
    /// holders that `Replace` deleted do not keep their successors out of a hot key's list.
    by_key: HashMap<u64, KeyHolders, BuildHasherDefault<KeyHasher>>,
    /// The holders after the first of the keys that have more than one ([`KeyHolders`]).
    more_holders: Vec<Vec<u32>>,
    /// The uncommitted ids, and the ids deleted since the last commit (committed documents
    /// with these ids are ignored).
    pub(super) ids: PendingIds,
    /// The committed groups and replaced ids, read through the writer's searcher's string tables.
    groups: StrColumns,
    replaced: StrColumns,
    keys: Vec<u64>,
    /// The candidates of the check under way, each once, in the order first met (not the order
    /// added), with the bands (bit `b`: band `b`) in whose key lists each was found.
    candidates: Vec<u32>,
    candidate_bands: Vec<u64>,
    /// Per pending document, the check that last met it and its place in `candidates` then:
    /// de-duplicates the candidates without sorting every list entry.
    met: Vec<(u32, u32)>,
    check_number: u32,
    /// The bands whose key list (of the document being checked) left holders out: a
    /// candidate's bands below the first of these are known from the lists alone.
    overflowed_bands: u64,
    /// The sketch words of the document being checked, in the form `sketches` keeps them, and
    /// whether they are not all zero (only then has it bands).
    query_words: Vec<u64>,
    query_sketched: bool,
    /// The sequence number of the next document added ([`SEQUENCE_FIELD`]); it survives
    /// commits, so it grows over the writer's life.
    ///
    /// [`SEQUENCE_FIELD`]: crate::schema::SEQUENCE_FIELD
    pub(super) next_sequence: u64,
    pub(super) max_postings_per_key: usize,
    /// Candidates verified by the near-duplicate checks, committed and pending, over the
    /// writer's life.
    pub(super) verified: u64,
    /// Old versions deleted by [`IdPolicy::Replace`](super::IdPolicy::Replace) over the
    /// writer's life.
    pub(super) ids_replaced: u64,
}

/// A match among committed or pending documents.
pub(super) struct Found {
    pub(super) id: Arc<str>,
    pub(super) group: Option<Arc<str>>,
    pub(super) evidence: Evidence,
    /// What it replaced (read only when every match is wanted).
    pub(super) replaced: Chain,
}

/// What a check reads besides the strongest match's id and evidence.
#[derive(Clone, Copy)]
pub(super) struct Wanted {
    /// Every match, with what each replaced ([`Policy::Replace`](super::Policy::Replace));
    /// otherwise only the strongest is guaranteed.
    pub(super) all: bool,
    /// The matches' groups ([`Policy::Tag`](super::Policy::Tag)).
    pub(super) groups: bool,
}

impl Pending {
    pub(super) fn new(next_sequence: u64, max_postings_per_key: usize) -> Pending {
        Pending {
            docs: Vec::new(),
            slots: Vec::new(),
            sketches: Vec::new(),
            by_key: HashMap::default(),
            more_holders: Vec::new(),
            ids: PendingIds::default(),
            groups: StrColumns::default(),
            replaced: StrColumns::default(),
            keys: Vec::new(),
            candidates: Vec::new(),
            candidate_bands: Vec::new(),
            met: Vec::new(),
            check_number: 0,
            overflowed_bands: 0,
            query_words: Vec::new(),
            query_sketched: false,
            next_sequence,
            max_postings_per_key,
            verified: 0,
            ids_replaced: 0,
        }
    }

    /// Follows the writer's searcher of a new commit: the string columns of its segments. Errors: [`crate::Error::Tantivy`] when a column cannot be
    /// opened.
    pub(super) fn follow(&mut self, searcher: &NearDupLookup) -> Result<()> {
        // Opened first, so that a failure leaves nothing half-followed.
        let tables = searcher.id_tables();
        let groups = StrColumns::open(searcher.searcher(), searcher.fields().group, tables)?;
        let replaced = StrColumns::open(searcher.searcher(), searcher.fields().replaced, tables)?;
        self.groups = groups;
        self.replaced = replaced;
        Ok(())
    }

    pub(super) fn clear(&mut self) {
        self.docs.clear();
        self.slots.clear();
        self.sketches.clear();
        self.by_key.clear();
        self.more_holders.clear();
        self.met.clear();
        self.ids.clear();
    }

    /// Live matches of `signature` by `rule`, committed and pending, strongest evidence first;
    /// among equally strong ones the first added first (committed documents by their sequence
    /// number, then pending ones in the order they were added), so the result does not depend
    /// on how tantivy's threads split documents into segments. Without `wanted.all` only the
    /// strongest is guaranteed: reading a committed id decompresses a dictionary block, so ids
    /// of weaker committed matches are not read, and weaker pending candidates are not
    /// verified past their fingerprints. Documents with the id `replacing` (the old versions
    /// of a document an [`IdPolicy::Replace`](super::IdPolicy::Replace) adds) are not matches.
    pub(super) fn matches(
        &mut self,
        searcher: &NearDupLookup,
        rule: &MatchRule,
        signature: &Signature,
        wanted: Wanted,
        replacing: Option<&str>,
    ) -> Result<Vec<Found>> {
        let pending = self.pending_matches(rule, signature, wanted.all, replacing);
        let best_pending = pending.first().map(|&(e, _)| e);
        let mut found =
            self.committed_matches(searcher, rule, signature, wanted, replacing, best_pending)?;
        found.extend(pending.into_iter().map(|(evidence, i)| {
            let p = &self.docs[i as usize];
            Found {
                id: p.id.clone(),
                group: p.group.clone(),
                evidence,
                replaced: if wanted.all {
                    Arc::clone(&p.replaced)
                } else {
                    Chain::default()
                },
            }
        }));
        // Stable: committed documents (added earlier) stay before pending ones at one strength.
        found.sort_by(|a, b| a.evidence.cmp_strength(&b.evidence));
        Ok(found)
    }

    /// The pending documents sharing a key with `signature` (each key's list is bounded), each
    /// once, into `self.candidates`, with the bands whose lists each was found in
    /// (`self.candidate_bands`) and the bands whose lists left holders out
    /// (`self.overflowed_bands`).
    fn collect_candidates(&mut self, rule: &MatchRule, signature: &Signature) {
        self.keys.clear();
        rule.keys_into(signature, &mut self.keys);
        self.candidates.clear();
        self.candidate_bands.clear();
        self.check_number = self.check_number.wrapping_add(1);
        if self.check_number == 0 {
            self.met.fill((0, 0));
            self.check_number = 1;
        }
        // `keys_into` gives the block keys, then band 0, 1, ... Bands past 64 have no bit: as
        // if every list overflowed, so the sketches settle them.
        let blocks = rule.layout().num_keys();
        self.overflowed_bands = if rule.minhash().bands > 64 {
            u64::MAX
        } else {
            0
        };
        for (k, key) in self.keys.iter().enumerate() {
            let Some(&holders) = self.by_key.get(key) else {
                continue;
            };
            let band_bit = match k.checked_sub(blocks) {
                Some(b) if b < 64 => 1u64 << b,
                _ => 0,
            };
            if holders.overflowed() {
                self.overflowed_bands |= band_bit;
            }
            let more = holders.more(&self.more_holders);
            for &i in std::iter::once(&holders.first).chain(more) {
                let met = &mut self.met[i as usize];
                if met.0 == self.check_number {
                    self.candidate_bands[met.1 as usize] |= band_bit;
                } else {
                    *met = (self.check_number, self.candidates.len() as u32);
                    self.candidates.push(i);
                    self.candidate_bands.push(band_bit);
                }
            }
        }
        self.query_words.clear();
        self.query_words.resize(rule.minhash().sketch_words(), 0);
        self.query_sketched = stored_sketch(signature, &mut self.query_words);
    }

    /// Live pending matches, strongest first, equally strong ones in the order they were added.
    /// With `all == false`, only the strongest (the first of that order), found in two passes
    /// (see [`strongest_pending`](Self::strongest_pending)). Every live candidate counts as
    /// verified, once.
    fn pending_matches(
        &mut self,
        rule: &MatchRule,
        signature: &Signature,
        all: bool,
        replacing: Option<&str>,
    ) -> Vec<(Evidence, u32)> {
        self.collect_candidates(rule, signature);
        let mut pending = if all {
            self.every_pending(rule, signature, replacing)
        } else {
            self.strongest_pending(rule, signature, replacing)
        };
        // Equally strong pending documents in the order they were added (their places).
        pending.sort_by(|a, b| a.0.cmp_strength(&b.0).then(a.1.cmp(&b.1)));
        pending
    }

    /// Whether pending document `i` is a candidate at all: alive, and not an old version of
    /// the document being added.
    fn is_live(&self, i: u32, replacing: Option<&str>) -> bool {
        self.slots[i as usize].alive && replacing.is_none_or(|r| *self.docs[i as usize].id != *r)
    }

    /// The evidence of candidate `i` at simhash `distance`, found in the key lists of the bands
    /// `listed`: what [`MatchRule::matches`] gives for the two signatures as the index stores
    /// them. Beyond the simhash radius only a candidate that shares a band can match, and the
    /// first band equal in both is the evidence's band: the lists tell it without reading the
    /// sketch unless a list that left holders out could hide an earlier one (then it is read
    /// from the band keys at the front of the sketches); only then is the rest of the sketch
    /// compared.
    fn evidence_of(
        &self,
        rule: &MatchRule,
        i: u32,
        listed: u64,
        distance: u32,
    ) -> Option<Evidence> {
        if distance <= rule.layout().max_distance() {
            return Some(Evidence::Simhash { distance });
        }
        if !self.slots[i as usize].sketched || !self.query_sketched {
            return None;
        }
        let words = self.query_words.len();
        let sketch = &self.sketches[i as usize * words..][..words];
        let query = &self.query_words;
        let band = match first_band_from_lists(listed, self.overflowed_bands) {
            Some(band) => band?,
            None => {
                let config = rule.minhash();
                // A band key is a bit field of the words: equal in both where the words' XOR
                // is zero in that field (what `MatchRule::bands_into` of each would compare,
                // without a copy).
                let word = |w: usize| {
                    query.get(w).copied().unwrap_or(0) ^ sketch.get(w).copied().unwrap_or(0)
                };
                (0..config.bands).find(|&b| band_from_words(config, b, word) == 0)?
            }
        };
        rule.matches_sharing_band(query, sketch, band, distance)
    }

    /// Every live pending match, in the order the candidates were met.
    fn every_pending(
        &mut self,
        rule: &MatchRule,
        signature: &Signature,
        replacing: Option<&str>,
    ) -> Vec<(Evidence, u32)> {
        let mut found = Vec::new();
        for (&i, &listed) in self.candidates.iter().zip(&self.candidate_bands) {
            if !self.is_live(i, replacing) {
                continue;
            }
            self.verified += 1;
            let distance = signature
                .fingerprint
                .distance(self.slots[i as usize].fingerprint);
            if let Some(evidence) = self.evidence_of(rule, i, listed, distance) {
                found.push((evidence, i));
            }
        }
        found
    }

    /// The strongest live pending match (of equally strong ones the first added), if any. Any
    /// simhash match is stronger than any resemblance match, and simhash matches rank by
    /// distance, so a first pass over the fingerprints alone settles it when some candidate is
    /// within the simhash radius: the first added at the smallest distance, no sketch read.
    /// Only when none is, a second pass compares the sketches of the candidates that share a
    /// band key and keeps the strongest resemblance (the first added of equal ones).
    fn strongest_pending(
        &mut self,
        rule: &MatchRule,
        signature: &Signature,
        replacing: Option<&str>,
    ) -> Vec<(Evidence, u32)> {
        let max_distance = rule.layout().max_distance();
        let mut nearest: Option<(u32, u32)> = None;
        let mut live = 0u64;
        for &i in &self.candidates {
            if !self.is_live(i, replacing) {
                continue;
            }
            live += 1;
            let distance = signature
                .fingerprint
                .distance(self.slots[i as usize].fingerprint);
            if distance <= max_distance && nearest.is_none_or(|nearest| (distance, i) < nearest) {
                nearest = Some((distance, i));
            }
        }
        self.verified += live;
        if let Some((distance, i)) = nearest {
            return vec![(Evidence::Simhash { distance }, i)];
        }
        let mut strongest: Option<(Evidence, u32)> = None;
        for (&i, &listed) in self.candidates.iter().zip(&self.candidate_bands) {
            if !self.is_live(i, replacing) {
                continue;
            }
            let distance = signature
                .fingerprint
                .distance(self.slots[i as usize].fingerprint);
            let Some(evidence) = self.evidence_of(rule, i, listed, distance) else {
                continue;
            };
            let stronger =
                |(best, j): (Evidence, u32)| evidence.cmp_strength(&best).then(i.cmp(&j)).is_lt();
            if strongest.is_none_or(stronger) {
                strongest = Some((evidence, i));
            }
        }
        strongest.into_iter().collect()
    }

    /// Live committed matches, strongest first, ties by sequence number; without `wanted.all`
    /// only the strongest, and none when it is weaker than `best_pending`.
    fn committed_matches(
        &mut self,
        searcher: &NearDupLookup,
        rule: &MatchRule,
        signature: &Signature,
        wanted: Wanted,
        replacing: Option<&str>,
        best_pending: Option<Evidence>,
    ) -> Result<Vec<Found>> {
        // Nothing committed yet (a first batch): no table to probe, no buffers to set up.
        if searcher.searcher().segment_readers().is_empty() {
            return Ok(Vec::new());
        }
        let mut committed = Vec::new();
        self.verified += searcher.signature_reader().for_each_match_evidence(
            rule,
            signature,
            self.max_postings_per_key,
            |address, evidence| {
                // Without a sequence field (an older index), ties follow segment order.
                let sequence = searcher.sequence_of(address).unwrap_or(u64::MAX);
                committed.push((evidence, sequence, address));
            },
        )?;
        committed.sort_by(|a, b| a.0.cmp_strength(&b.0).then((a.1, a.2).cmp(&(b.1, b.2))));
        let mut found = Vec::new();
        for (evidence, _, address) in committed {
            // Committed documents were added before pending ones: at equal strength they win.
            let weaker_than_pending =
                best_pending.is_some_and(|b| evidence.cmp_strength(&b).is_gt());
            if !wanted.all && (!found.is_empty() || weaker_than_pending) {
                break;
            }
            let Some(id) = searcher.id_of(address)? else {
                continue;
            };
            if self.ids.is_deleted(&id) || replacing == Some(id.as_str()) {
                continue;
            }
            let group = if wanted.groups {
                self.groups.first(address)?.map(Arc::from)
            } else {
                None
            };
            let replaced = if wanted.all {
                chain_of(&id, self.replaced.all(address)?)
            } else {
                Chain::default()
            };
            found.push(Found {
                id: Arc::from(id),
                group,
                evidence,
                replaced,
            });
        }
        Ok(found)
    }

    pub(super) fn insert(&mut self, rule: &MatchRule, signature: &Signature, doc: PendingDoc) {
        let i = self.docs.len() as u32;
        self.keys.clear();
        rule.keys_into(signature, &mut self.keys);
        for &key in &self.keys {
            match self.by_key.get_mut(&key) {
                // A hot key keeps `max_postings_per_key` documents only, so a check costs at
                // most keys x max_postings_per_key verifications; the dead ones make room.
                Some(holders) => {
                    let bound = self.max_postings_per_key;
                    let len = |h: &KeyHolders, lists: &[Vec<u32>]| 1 + h.more(lists).len();
                    if len(holders, &self.more_holders) >= bound
                        && !holders.retain_live(&mut self.more_holders, &self.slots)
                    {
                        holders.first = i;
                    } else if len(holders, &self.more_holders) < bound {
                        holders.push(&mut self.more_holders, i);
                    } else {
                        holders.more |= OVERFLOWED;
                    }
                }
                None => {
                    self.by_key.insert(key, KeyHolders::new(i));
                }
            }
        }
        let start = self.sketches.len();
        self.sketches
            .resize(start + rule.minhash().sketch_words(), 0);
        let sketched = stored_sketch(signature, &mut self.sketches[start..]);
        self.slots.push(Slot {
            fingerprint: signature.fingerprint,
            alive: true,
            sketched,
        });
        self.met.push((0, 0));
        self.ids.insert(&doc.id, Some(i));
        self.ids.insert_replaced(&doc.id, &doc.replaced);
        self.docs.push(doc);
    }

    pub(super) fn delete_id(&mut self, id: &str) {
        for place in self.ids.delete(id).iter() {
            if let Some(slot) = self.slots.get_mut(place as usize) {
                slot.alive = false;
            }
        }
    }
}

/// The first band a candidate shares with the checked document, from the bands whose key lists
/// it was found in (`listed`), when the lists settle it: a list that never left a holder out
/// holds every live document with its key, so the candidate shares exactly the listed bands
/// among those. `None` when a list that left holders out (`overflowed`) comes before the first
/// listed band (or there is none listed): then only the sketches tell.
fn first_band_from_lists(listed: u64, overflowed: u64) -> Option<Option<u32>> {
    let before_first = if listed == 0 {
        u64::MAX
    } else {
        (listed & listed.wrapping_neg()) - 1
    };
    (overflowed & before_first == 0).then(|| (listed != 0).then(|| listed.trailing_zeros()))
}

/// Copies the sketch words of `signature` into `out` (zeros, the rule's number of words) as
/// the index stores them: extra words cut, missing ones zero. Whether they are not all zero
/// (the document has a sketch, so it has bands).
fn stored_sketch(signature: &Signature, out: &mut [u64]) -> bool {
    for (o, &w) in out.iter_mut().zip(&signature.sketch.words) {
        *o = w;
    }
    out.iter().any(|&w| w != 0)
}

/// The ids a [`Policy::Replace`](super::Policy::Replace) document deletes (its matches, each
/// once, nearest first) and the ids it records as replaced: those, then what each match had
/// replaced, each once, without its own `id`.
pub(super) fn replaced_and_carried(found: &[Found], id: &str) -> (Vec<String>, Chain) {
    // One match, the common case (a replacement deletes what it matches, so a cluster keeps
    // one live member): its chain has each id once and not its owner's (the invariant of
    // `Chain`), so nothing needs de-duplicating, and no id is hashed.
    if let [f] = found {
        let carried: Vec<Arc<str>> = std::iter::once(&f.id)
            .chain(f.replaced.iter())
            .filter(|r| ***r != *id)
            .cloned()
            .collect();
        return (vec![f.id.to_string()], carried.into());
    }
    let mut seen: HashSet<&str> = HashSet::with_capacity(found.len());
    let mut carried: Vec<Arc<str>> = Vec::with_capacity(found.len());
    for f in found {
        if seen.insert(&f.id) {
            carried.push(Arc::clone(&f.id));
        }
    }
    let replaced = carried.iter().map(|r| r.to_string()).collect();
    for f in found {
        for r in f.replaced.iter() {
            if seen.insert(r) {
                carried.push(Arc::clone(r));
            }
        }
    }
    carried.retain(|r| **r != *id);
    (replaced, carried.into())
}

/// The chain of `owner` as read from the index, in the form of a pending document's chain:
/// each id once (where it first appears), never `owner`'s own id.
fn chain_of(owner: &str, ids: Vec<String>) -> Chain {
    let mut seen: HashSet<String> = HashSet::with_capacity(ids.len());
    let mut chain: Vec<Arc<str>> = Vec::with_capacity(ids.len());
    for r in ids {
        if r != owner && seen.insert(r.clone()) {
            chain.push(Arc::from(r));
        }
    }
    chain.into()
}

#[cfg(test)]
mod tests;
