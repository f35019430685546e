//! splitmix64: the tiny deterministic generator the tests, the evaluation programs and the
//! benchmarks share (eval/src/support/pigeonhole.rs includes this file), so a case is a seed.

pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// `fp` with `n` distinct random bits flipped: a neighbour at distance exactly `n`.
    pub fn flip(&mut self, fp: u64, n: u32) -> u64 {
        let mut mask = 0u64;
        while mask.count_ones() < n {
            mask |= 1 << self.below(64);
        }
        fp ^ mask
    }
}
