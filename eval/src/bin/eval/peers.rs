//! The peers' matchers: MinHash with 128 hash functions over the truth's shingles, and the jieba
//! TF-IDF top-10 keyword simhash (zh).

use super::*;

pub(crate) fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// MinHash with 128 independent hash functions over the truth's shingles (datasketch's
/// recipe; 32-bit values), matched at an estimated resemblance >= `threshold`. Candidates for
/// the natural corpus come from 64 bands of 2 values (a pair at resemblance 0.3 shares one
/// with probability 0.998), then the 128 values decide.
pub(crate) struct MinHash128 {
    pub(crate) threshold: f64,
}

impl Matcher for MinHash128 {
    type Sig = Vec<u32>;
    fn sign_all(&self, texts: &[String]) -> Vec<Vec<u32>> {
        texts
            .par_iter()
            .map(|t| {
                let sh = truth_shingles(t);
                (0..128u64)
                    .map(|i| {
                        let seed = mix64(i.wrapping_add(0x9e37_79b9_7f4a_7c15));
                        sh.iter()
                            .map(|&s| (mix64(s ^ seed) >> 32) as u32)
                            .min()
                            .unwrap_or(u32::MAX)
                    })
                    .collect()
            })
            .collect()
    }
    fn keys(&self, sig: &Vec<u32>, out: &mut Vec<u64>) {
        for (band, pair) in sig.chunks(2).enumerate() {
            let v = (u64::from(pair[0]) << 32) | u64::from(pair[1]);
            out.push(mix64(v ^ band as u64));
        }
    }
    fn matches(&self, a: &Vec<u32>, b: &Vec<u32>) -> bool {
        let agree = a.iter().zip(b).filter(|(x, y)| x == y).count();
        agree as f64 / 128.0 >= self.threshold
    }
    fn bytes(&self) -> usize {
        128 * 4
    }
}

/// The classic Chinese recipe: jieba's TF-IDF top-10 keywords (jieba's own IDF table and stop
/// words), each hashed (xxh3) and weighted by its TF-IDF weight into a 64-bit simhash, k = 3.
pub(crate) struct JiebaTop10 {
    pub(crate) layout: BlockLayout,
}

pub(crate) static JIEBA: std::sync::LazyLock<(jieba_rs::Jieba, jieba_rs::TfIdf)> =
    std::sync::LazyLock::new(|| (jieba_rs::Jieba::new(), jieba_rs::TfIdf::default()));

impl Matcher for JiebaTop10 {
    type Sig = Fingerprint;
    fn sign_all(&self, texts: &[String]) -> Vec<Fingerprint> {
        use jieba_rs::KeywordExtract;
        let (jieba, tfidf) = &*JIEBA;
        texts
            .par_iter()
            .map(|t| {
                let mut v = [0f64; 64];
                for k in tfidf.extract_keywords(jieba, t, 10, vec![]) {
                    let h = xxh3_64(k.keyword.as_bytes());
                    for (i, x) in v.iter_mut().enumerate() {
                        *x += if (h >> i) & 1 == 1 {
                            k.weight
                        } else {
                            -k.weight
                        };
                    }
                }
                let mut fp = 0u64;
                for (i, &x) in v.iter().enumerate() {
                    if x > 0.0 {
                        fp |= 1 << i;
                    }
                }
                Fingerprint(fp)
            })
            .collect()
    }
    fn keys(&self, sig: &Fingerprint, out: &mut Vec<u64>) {
        self.layout.keys_into(*sig, out);
    }
    fn matches(&self, a: &Fingerprint, b: &Fingerprint) -> bool {
        a.is_within(*b, self.layout.max_distance())
    }
    fn bytes(&self) -> usize {
        8
    }
}
