//! The streaming join: every pair the match rule matches, read from the segment component's
//! sorted key tables in place, with no gather of the signatures.
//!
//! Per key position of the rule, the segments' tables are merged in ranges of key values (all
//! segments' entries whose value has the same low bits, read from the memory-mapped files and
//! sorted: a few hundred entries), so that one key's documents across all segments form one
//! run; the pairs of a run are verified with the rule on signatures read from the files.
//! A pair is reported once, where its evidence puts it, with no set of seen pairs:
//!
//! - a pair within the simhash radius under its **first shared block key** (pigeonhole: it has
//!   one), identical fingerprints under the first key position;
//! - any other match under the key of the **first band its sketches share** (the band that
//!   [`Evidence::Resemblance`](crate::Evidence::Resemblance) names).
//!
//! **Hot keys.** A block key's run of more than `max_postings_per_key` distinct fingerprints
//! is split further, as Manku et al.'s tables do: within a run sharing one key, a pair within
//! `k` differs in at most `k` of the other bits, so it agrees on one of `k + 1` sub-blocks of
//! them; the run is joined per sub-block (the pair under its first shared sub-block), which is
//! exact. Identical fingerprints are grouped first (their pairs are output, not comparisons).
//! A band key's run first drops what other keys report (pairs within the radius, pairs sharing
//! an earlier band, a whole run that shares an earlier band) and groups documents of one
//! signature (verified once, reported as one item). A sub-block run or a band run that still
//! holds more than `max_postings_per_key` members compares each with the next
//! `max_postings_per_key` first; when at least a quarter of those comparisons match (a family
//! of near-duplicates, whose pairs are the output anyway) it compares the rest too, exactly;
//! otherwise (a template shared by unrelated documents) it stops there: counted in
//! [`PairStats::hot_keys`](crate::PairStats::hot_keys), a last resort.
//!
//! Files: [`pair_join`] (the public type), [`clusters`] (its leader clusters and connected
//! components), [`found`] (a task's pairs, compactly), [`runs`] (the comparisons within one
//! key's run).

mod clusters;
mod found;
mod pair_join;
mod runs;
#[cfg(test)]
mod tests;

pub(crate) use found::Found;
use found::Row;
pub use pair_join::PairJoin;
use runs::Scratch;

use crate::component::reader::SegmentSignatures;
use crate::error::Result;
use crate::fingerprint::Fingerprint;
use crate::signature::{MatchRule, PairStats};
use rayon::prelude::*;
use tantivy::Searcher;

/// Entries of one residue (one merge step) the planner aims at.
const ENTRIES_PER_RESIDUE: u64 = 64;
/// Residues per task (a unit of parallel work).
const RESIDUES_PER_TASK: u64 = 256;
/// The widest partition of a table (2^20 residues).
const MAX_PARTITION_BITS: u32 = 20;

/// One unit of parallel work: residues `residues` of key position `position`'s table,
/// partitioned by the low `bits` bits of the key value.
struct Task {
    position: usize,
    bits: u32,
    residues: std::ops::Range<u64>,
}

/// The join (see the [module docs](self)) over `segments` (those of `searcher`, in order):
/// `emit` gets each task's pairs, tasks in order. Returns the stats, `pairs` counting
/// document pairs. Errors: [`Error::DamagedFile`](crate::Error::DamagedFile) when a table is inconsistent.
pub(crate) fn join(
    segments: &[SegmentSignatures],
    searcher: &Searcher,
    rule: &MatchRule,
    max_distance: u32,
    max_postings_per_key: usize,
    min_resemblance: Option<f32>,
    mut emit: impl FnMut(&Found),
) -> Result<PairStats> {
    let mut ctx = Context::new(segments, searcher, rule, max_distance, max_postings_per_key);
    ctx.min_resemblance = min_resemblance;
    let tasks = ctx.plan();
    let mut stats = PairStats::default();
    // Tasks run on the pool while this thread emits their pairs in task order: no barrier
    // between batches of tasks (a slow task holds back only the emission), and emitting (ids,
    // output) overlaps the join. Memory: the pairs of at most `ahead` tasks.
    let ahead = 8 * rayon::current_num_threads().max(1);
    let (sender, receiver) = std::sync::mpsc::channel::<(usize, Result<Found>)>();
    let mut failed: Option<crate::Error> = None;
    rayon::in_place_scope(|scope| {
        let (mut spawned, mut emitted) = (0usize, 0usize);
        let mut ready: std::collections::BTreeMap<usize, Result<Found>> = Default::default();
        while emitted < spawned || (spawned < tasks.len() && failed.is_none()) {
            while spawned < tasks.len() && spawned - emitted < ahead && failed.is_none() {
                let (task, ctx, sender) = (&tasks[spawned], &ctx, sender.clone());
                let at = spawned;
                scope.spawn(move |_| {
                    // The receiver outlives the scope: a send cannot fail.
                    let _ = sender.send((at, ctx.run(task)));
                });
                spawned += 1;
            }
            if let Some(found) = ready.remove(&emitted) {
                emitted += 1;
                match found {
                    Ok(found) if failed.is_none() => {
                        stats.add(found.stats);
                        emit(&found);
                    }
                    Ok(_) => {}
                    Err(e) => failed = failed.take().or(Some(e)),
                }
                continue;
            }
            let next = match receiver.try_recv() {
                Ok(next) => Some(next),
                // A pool thread runs a task itself while it waits; another thread blocks.
                Err(_) => match rayon::yield_now() {
                    Some(rayon::Yield::Executed) => None,
                    Some(rayon::Yield::Idle) => receiver
                        .recv_timeout(std::time::Duration::from_millis(1))
                        .ok(),
                    None => receiver.recv().ok(),
                },
            };
            if let Some((at, found)) = next {
                ready.insert(at, found);
            }
        }
    });
    match failed {
        Some(e) => Err(e),
        None => Ok(stats),
    }
}

/// What every task reads.
struct Context<'a> {
    segments: &'a [SegmentSignatures],
    searcher: &'a Searcher,
    rule: &'a MatchRule,
    max_distance: u32,
    cap: usize,
    /// Bits of each block key position's key in the fingerprint.
    block_masks: Vec<u64>,
    /// Every document's fingerprint, per segment (0 without a signature): 8 bytes a document,
    /// read in one sequential pass, so that runs compare fingerprints from memory instead of
    /// a random read of the file per run member.
    fingerprints: Vec<Vec<u64>>,
    /// The opt-in floor on the sketches' estimate ([`PairJoin::min_resemblance`]).
    min_resemblance: Option<f32>,
}

impl<'a> Context<'a> {
    fn new(
        segments: &'a [SegmentSignatures],
        searcher: &'a Searcher,
        rule: &'a MatchRule,
        max_distance: u32,
        cap: usize,
    ) -> Self {
        let layout = rule.layout();
        let block_masks = (0..layout.num_keys())
            .map(|c| {
                let zero = layout.combo_key(c, Fingerprint(0));
                (0..64)
                    .filter(|&b| layout.combo_key(c, Fingerprint(1 << b)) != zero)
                    .fold(0u64, |m, b| m | (1 << b))
            })
            .collect();
        let mut ctx = Context {
            segments,
            searcher,
            rule,
            max_distance,
            cap: cap.max(1),
            block_masks,
            fingerprints: Vec::new(),
            min_resemblance: None,
        };
        ctx.fingerprints = ctx.per_document(|segment, doc| segment.file().word(doc, 0));
        ctx
    }

    /// `read(segment, doc)` for every document of every segment, in parallel over segments.
    fn per_document(&self, read: impl Fn(&SegmentSignatures, u32) -> u64 + Sync) -> Vec<Vec<u64>> {
        self.segments
            .par_iter()
            .map(|segment| {
                (0..segment.max_doc())
                    .map(|doc| read(segment, doc))
                    .collect()
            })
            .collect()
    }

    fn fingerprint(&self, row: Row) -> u64 {
        self.fingerprints[(row >> 32) as usize]
            .get(row as u32 as usize)
            .copied()
            .unwrap_or(0)
    }

    /// The tasks: per key position, enough low bits of the key value that a residue holds
    /// about [`ENTRIES_PER_RESIDUE`] entries over all segments (at most the key's width).
    fn plan(&self) -> Vec<Task> {
        let blocks = self.rule.layout().num_keys();
        let mut tasks = Vec::new();
        for position in 0..self.rule.keys_per_document() {
            let entries: u64 = self
                .segments
                .iter()
                .map(|s| s.file().table_len(position) as u64)
                .sum();
            if entries < 2 {
                continue;
            }
            let width = if position < blocks {
                self.block_masks[position].count_ones()
            } else {
                self.rule.minhash().key_bits
            };
            let wanted = (entries / ENTRIES_PER_RESIDUE).max(1);
            let bits = (64 - wanted.leading_zeros() - 1)
                .min(width)
                .min(MAX_PARTITION_BITS);
            let residues = 1u64 << bits;
            let mut start = 0;
            while start < residues {
                let end = (start + RESIDUES_PER_TASK).min(residues);
                tasks.push(Task {
                    position,
                    bits,
                    residues: start..end,
                });
                start = end;
            }
        }
        tasks
    }

    fn run(&self, task: &Task) -> Result<Found> {
        let mut found = Found::default();
        let mut entries: Vec<(u64, Row)> = Vec::new();
        let mut scratch = Scratch::default();
        let alive: Vec<_> = self
            .searcher
            .segment_readers()
            .iter()
            .map(|s| s.alive_bitset())
            .collect();
        for residue in task.residues.clone() {
            entries.clear();
            for (ord, segment) in self.segments.iter().enumerate() {
                let alive = alive.get(ord).copied().flatten();
                let max_doc = segment.max_doc();
                segment.file().for_each_table_entry(
                    task.position,
                    task.bits,
                    residue,
                    |value, doc| {
                        if doc < max_doc && alive.is_none_or(|a| a.is_alive(doc)) {
                            entries.push((value, (ord as u64) << 32 | u64::from(doc)));
                        }
                    },
                )?;
            }
            if entries.len() < 2 {
                continue;
            }
            entries.sort_unstable();
            for run in entries.chunk_by(|x, y| x.0 == y.0) {
                if run.len() < 2 {
                    continue;
                }
                if task.position < self.block_masks.len() {
                    self.block_run(task.position, run, &mut scratch, &mut found);
                } else {
                    self.band_run(task.position, run, &mut scratch, &mut found);
                }
            }
        }
        if let Some(min) = self.min_resemblance {
            let width = self.rule.minhash().sketch_words();
            found = found.at_least(min, self.rule.minhash(), width, |row, out| {
                self.segment(row).sketch_words_into(row as u32, out);
            });
        }
        Ok(found)
    }

    fn segment(&self, row: Row) -> &SegmentSignatures {
        &self.segments[(row >> 32) as usize]
    }
}
