//! [`IdPolicy`]: what [`DedupWriter`](super::DedupWriter) does with a document whose id is
//! already in the index (tantivy has no primary key), and the writer's table of uncommitted ids.

use crate::columns::for_each_posting;
use crate::error::Result;
use crate::lookup::NearDupLookup;
use std::collections::hash_map::RandomState;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

/// The ids a document replaced under [`Policy::Replace`](super::Policy::Replace), directly or
/// through the documents it replaced. Shared, not copied: a replacement carries the chains of
/// what it replaced, and every check that finds a pending document reads its chain, so along
/// a chain of replacements copying ids would cost a string allocation per id per step.
/// Every chain has each id once and never its owner's id (the writer builds chains that way
/// and reads committed ones into that form), so extending a single chain needs no
/// de-duplication.
pub(super) type Chain = Arc<[Arc<str>]>;
use tantivy::{DocAddress, Term};

/// What [`DedupWriter`](super::DedupWriter) does with a document whose id is already taken:
/// tantivy has no primary key, so without a policy re-ingesting a document stores it twice.
///
/// An id is **taken** when a live document has it: a committed one (as of the writer's last
/// commit, minus the ids deleted since through [`delete_term`](super::DedupWriter::delete_term)
/// on the id field or by [`Policy::Replace`](super::Policy::Replace)) or one added since the
/// last commit. For [`KeepFirst`](Self::KeepFirst) and [`Report`](Self::Report) an id is also
/// taken when a live document records that it replaced that id under
/// [`Policy::Replace`](super::Policy::Replace) (the near-duplicate policy), so a rerun over the
/// same input does not bring back a copy a newer near-duplicate replaced
/// ([`NearDupLookup::is_replaced`]).
///
/// **Order**: the id check, the near-duplicate check and the insertion are one step under the
/// writer's lock, so of documents with one id added at once from several threads exactly one
/// wins: the first to take the lock under `KeepFirst` (the others are skipped or reported), the
/// last under `Replace` (each deletes the one before). That order is the order of their
/// sequence numbers ([`SEQUENCE_FIELD`](crate::schema::SEQUENCE_FIELD)); within one thread, and
/// within one [`add_documents`](super::DedupWriter::add_documents) call, it is the call order.
/// [`rollback`](super::DedupWriter::rollback) forgets the uncommitted ids with the documents.
///
/// **Cost per document** (all but `Off`): one term lookup of the id per committed segment (and
/// one in the replaced-ids field when the schema has it, for `KeepFirst` and `Report`), made
/// outside the lock, plus two hash-table probes and one copy of the id under it; a document
/// skipped or reported by id is not signed, so skipping costs less than adding. `Off` keeps
/// only the copy of the id. The uncommitted ids take about their bytes + 48 B each until the
/// next commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IdPolicy {
    /// No id checks: a document is added whatever its id (tantivy's behaviour, and the
    /// default: the check costs term lookups).
    #[default]
    Off,
    /// Keep the document already there: a document whose id is taken is not added
    /// ([`Outcome::IdTaken`](super::Outcome::IdTaken), nothing written, not signed).
    KeepFirst,
    /// Replace the old version: the live documents with the id are deleted (by id term) and the
    /// new one is added. The near-duplicate [`Policy`](super::Policy) then judges the new
    /// version against the other documents only, never against the version it replaces (an
    /// edit is not a near-duplicate of itself): if that policy rejects it
    /// ([`Outcome::Duplicate`](super::Outcome::Duplicate)), nothing is written and the old
    /// version stays. [`DedupWriter::ids_replaced`](super::DedupWriter::ids_replaced) counts
    /// the versions replaced.
    Replace,
    /// Fail on a taken id: [`Error::IdTaken`](crate::Error::IdTaken), nothing written (in
    /// [`add_documents`](super::DedupWriter::add_documents), the documents before it are
    /// added, as for any error).
    Report,
}

impl IdPolicy {
    /// The policies in the order front ends list them.
    pub const ALL: [IdPolicy; 4] = [
        IdPolicy::Off,
        IdPolicy::KeepFirst,
        IdPolicy::Replace,
        IdPolicy::Report,
    ];

    /// The policy's name: `off`, `keep`, `replace` or `report`. Cost: none; cannot fail.
    pub fn name(self) -> &'static str {
        match self {
            IdPolicy::Off => "off",
            IdPolicy::KeepFirst => "keep",
            IdPolicy::Replace => "replace",
            IdPolicy::Report => "report",
        }
    }

    /// The policy named `name` (as [`name`](Self::name) gives it, in any case); `None` for
    /// any other name (front ends turn it into an error listing the names). Cost: a few string
    /// comparisons.
    pub fn from_name(name: &str) -> Option<IdPolicy> {
        IdPolicy::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }
}

/// What the last commit says about an id: read outside the writer's lock (the committed
/// snapshot changes only at a commit, which takes the writer mutably).
#[derive(Clone, Debug, Default)]
pub(super) struct CommittedId {
    /// A committed document with a fingerprint has the id (deletes since the commit not
    /// applied).
    pub(super) live: bool,
    /// The ids of the committed documents that record they replaced the id (read only when
    /// no committed document has it, and not for [`IdPolicy::Replace`]).
    pub(super) replaced_by: Vec<String>,
}

impl CommittedId {
    /// Looks `id` up in the last commit: what `policy` needs, nothing under `Off`.
    pub(super) fn read(searcher: &NearDupLookup, policy: IdPolicy, id: &str) -> Result<Self> {
        if policy == IdPolicy::Off || searcher.searcher().num_docs() == 0 {
            return Ok(CommittedId::default());
        }
        let live = searcher.address_of_id(id)?.is_some();
        let replaced_by = if live || policy == IdPolicy::Replace {
            Vec::new()
        } else {
            replaced_by(searcher, id)?
        };
        Ok(CommittedId { live, replaced_by })
    }
}

/// The ids of the live documents of `searcher` that record they replaced `id`: one term lookup
/// per segment, and an id read per recorder.
fn replaced_by(searcher: &NearDupLookup, id: &str) -> Result<Vec<String>> {
    let Some(field) = searcher.fields().replaced else {
        return Ok(Vec::new());
    };
    let term = Term::from_field_text(field, id);
    let mut recorders = Vec::new();
    for (ord, segment) in searcher.searcher().segment_readers().iter().enumerate() {
        let inverted = segment.inverted_index(field)?;
        let mut docs = Vec::new();
        for_each_posting(&inverted, &term, |doc| {
            if !segment.is_deleted(doc) {
                docs.push(doc);
            }
        })?;
        for doc in docs {
            recorders.extend(searcher.id_of(DocAddress::new(ord as u32, doc))?);
        }
    }
    Ok(recorders)
}

/// Why an id is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Taken {
    /// A live document has it.
    Live,
    /// A live document records that it replaced it.
    Replaced,
}

/// Hashes the writer's ids: xxh3 of the bytes, seeded per writer from the standard library's
/// random keys (SipHash, the std default, cost a tenth of a check per document; the seed keeps
/// chosen ids from piling into one bucket as a fixed hash would let them).
#[derive(Clone, Copy)]
pub(super) struct IdHashing {
    seed: u64,
}

impl Default for IdHashing {
    fn default() -> Self {
        IdHashing {
            seed: RandomState::new().build_hasher().finish(),
        }
    }
}

impl BuildHasher for IdHashing {
    type Hasher = IdHasher;

    fn build_hasher(&self) -> IdHasher {
        IdHasher(self.seed)
    }
}

pub(super) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = xxhash_rust::xxh3::xxh3_64_with_seed(bytes, self.0);
    }

    /// The terminator `str` hashes after its bytes: a bijection of the state is enough.
    fn write_u8(&mut self, byte: u8) {
        self.0 ^= u64::from(byte);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The pending-table places of the live documents with one id: the first inline (an id is
/// usually added once), so recording an id allocates no list.
#[derive(Default)]
pub(super) struct Places {
    first: Option<u32>,
    more: Vec<u32>,
}

impl Places {
    fn push(&mut self, place: u32) {
        match self.first {
            None => self.first = Some(place),
            Some(_) => self.more.push(place),
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.first.into_iter().chain(self.more.iter().copied())
    }
}

/// The ids of the documents added since the last commit.
#[derive(Default)]
pub(super) struct PendingIds {
    /// Live uncommitted ids, each with its documents' places in the pending table (none when
    /// the near-duplicate policy keeps no table).
    live: HashMap<Arc<str>, Places, IdHashing>,
    /// What each uncommitted document records it replaced: its id and its chain, both
    /// shared with the pending table (no copy), in the order added.
    replaced_log: Vec<(Arc<str>, Chain)>,
    /// `replaced_log` by replaced id (with the ids of the recorders), up to its first
    /// `replaced_indexed` entries: caught up only when an id policy asks whether an id was
    /// replaced (`KeepFirst`, `Report`), so that the others never hash every id of every chain
    /// (a chain of replacements records every id of the chain again).
    replaced_by: HashMap<Arc<str>, Vec<Arc<str>>, IdHashing>,
    replaced_indexed: usize,
    /// Committed ids deleted since the last commit.
    deleted: HashSet<String, IdHashing>,
}

impl PendingIds {
    pub(super) fn clear(&mut self) {
        self.live.clear();
        self.replaced_log.clear();
        self.replaced_by.clear();
        self.replaced_indexed = 0;
        self.deleted.clear();
    }

    /// Records a document added with `id`, at `place` in the pending table if it has one.
    pub(super) fn insert(&mut self, id: &Arc<str>, place: Option<u32>) {
        // One hash: cloning the `Arc` for an id already there costs less than a second probe.
        let places = self.live.entry(Arc::clone(id)).or_default();
        if let Some(place) = place {
            places.push(place);
        }
    }

    /// Records that the document `by` replaced the ids `replaced` (sharing both).
    pub(super) fn insert_replaced(&mut self, by: &Arc<str>, replaced: &Chain) {
        if !replaced.is_empty() {
            self.replaced_log
                .push((Arc::clone(by), Arc::clone(replaced)));
        }
    }

    /// Brings `replaced_by` up to date with `replaced_log`.
    fn index_replaced(&mut self) {
        for (by, chain) in &self.replaced_log[self.replaced_indexed..] {
            for r in chain.iter() {
                match self.replaced_by.get_mut(&**r) {
                    Some(recorders) => recorders.push(Arc::clone(by)),
                    None => {
                        self.replaced_by.insert(Arc::clone(r), vec![Arc::clone(by)]);
                    }
                }
            }
        }
        self.replaced_indexed = self.replaced_log.len();
    }

    /// Forgets `id` as a live id; returns the pending-table places of its documents.
    pub(super) fn delete(&mut self, id: &str) -> Places {
        self.deleted.insert(id.to_string());
        self.live.remove(id).unwrap_or_default()
    }

    /// Whether committed documents with `id` were deleted since the last commit.
    pub(super) fn is_deleted(&self, id: &str) -> bool {
        self.deleted.contains(id)
    }

    /// Whether `id` is taken, given what the last commit says about it. Cost: two or three
    /// hash-table probes, and the first time after documents recorded replaced ids, indexing
    /// those ids.
    pub(super) fn taken(&mut self, id: &str, committed: &CommittedId) -> Option<Taken> {
        if self.live.contains_key(id) || (committed.live && !self.deleted.contains(id)) {
            return Some(Taken::Live);
        }
        self.index_replaced();
        let replaced_pending = self
            .replaced_by
            .get(id)
            .is_some_and(|by| by.iter().any(|b| self.live.contains_key(&**b)));
        // A committed recorder deleted since the commit no longer takes the id (unless it was
        // added again, which the pending check above sees).
        let replaced_committed = committed
            .replaced_by
            .iter()
            .any(|b| !self.deleted.contains(b));
        (replaced_pending || replaced_committed).then_some(Taken::Replaced)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    /// What `PendingIds::taken` must answer, by scanning everything recorded since the last
    /// clear: live ids as a list, replaced ids as each recorder's chain.
    #[derive(Default)]
    struct Naive {
        live: Vec<String>,
        places: Vec<(String, u32)>,
        log: Vec<(String, Vec<String>)>,
        deleted: Vec<String>,
    }

    impl Naive {
        fn taken(&self, id: &str, committed: &CommittedId) -> Option<Taken> {
            let deleted = |i: &str| self.deleted.iter().any(|d| d == i);
            if self.live.iter().any(|l| l == id) || (committed.live && !deleted(id)) {
                return Some(Taken::Live);
            }
            let pending = self.log.iter().any(|(by, chain)| {
                chain.iter().any(|r| r == id) && self.live.iter().any(|l| l == by)
            });
            let committed = committed.replaced_by.iter().any(|b| !deleted(b));
            (pending || committed).then_some(Taken::Replaced)
        }
    }

    /// Inserts, replaced-id records, deletes and clears in random order, with the questions
    /// sometimes many records apart (the index of replaced ids catches up lazily) and sometimes
    /// after every record: every answer equals the scan's.
    #[test]
    fn taken_equals_a_scan_of_everything_recorded() {
        for seed in [3u64, 5, 9] {
            let mut rng = Rng(seed);
            let name = |rng: &mut Rng| format!("d{}", rng.below(30));
            let (mut ids, mut naive) = (PendingIds::default(), Naive::default());
            let (mut asked, mut replaced) = (0, 0);
            for step in 0..3000 {
                match rng.below(20) {
                    0..=7 => {
                        let id = name(&mut rng);
                        let chain: Vec<String> =
                            (0..rng.below(4)).map(|_| name(&mut rng)).collect();
                        let by: Arc<str> = Arc::from(id.as_str());
                        // No place now and then: a writer without a pending table.
                        let place = (rng.below(5) != 0).then_some(step);
                        ids.insert(&by, place);
                        naive.places.extend(place.map(|p| (id.clone(), p)));
                        let shared: Chain = chain.iter().map(|r| Arc::from(r.as_str())).collect();
                        ids.insert_replaced(&by, &shared);
                        naive.live.push(id.clone());
                        naive.log.push((id, chain));
                    }
                    8..=9 => {
                        let id = name(&mut rng);
                        // The places of the id's documents, in the order added.
                        let want: Vec<u32> = naive
                            .places
                            .iter()
                            .filter(|(i, _)| *i == id)
                            .map(|&(_, p)| p)
                            .collect();
                        let got: Vec<u32> = ids.delete(&id).iter().collect();
                        assert_eq!(got, want, "seed {seed} step {step}");
                        naive.places.retain(|(i, _)| *i != id);
                        naive.live.retain(|l| *l != id);
                        naive.deleted.push(id);
                    }
                    10 if rng.below(20) == 0 => {
                        ids.clear();
                        naive = Naive::default();
                    }
                    _ => {
                        // Ask now and then, or after every step for a while.
                        let questions = if rng.below(3) == 0 { 5 } else { 1 };
                        for _ in 0..questions {
                            let id = name(&mut rng);
                            let committed = CommittedId {
                                live: rng.below(4) == 0,
                                replaced_by: (0..rng.below(2)).map(|_| name(&mut rng)).collect(),
                            };
                            let want = naive.taken(&id, &committed);
                            assert_eq!(ids.taken(&id, &committed), want, "seed {seed} step {step}");
                            asked += 1;
                            replaced += usize::from(want == Some(Taken::Replaced));
                        }
                    }
                }
            }
            // The walk reaches the answer that the lazy index gives.
            assert!(replaced > asked / 20, "seed {seed}: {replaced} of {asked}");
        }
    }
}
