//! The evaluation data of one language: the synthetic pairs (positives by recipe, hard and
//! random negatives), the natural corpus with its truth, and the cross-script pairs (zh).

use super::*;

#[derive(Deserialize)]
pub(crate) struct Pair {
    pub(crate) recipe: String,
    pub(crate) a: Doc,
    pub(crate) b: Doc,
    #[serde(default)]
    pub(crate) src: Vec<String>,
    #[serde(default)]
    pub(crate) bucket: String,
    #[serde(default)]
    pub(crate) jaccard: f64,
}

pub(crate) struct Natural {
    pub(crate) docs: Vec<Doc>,
    /// (i, j) with i < j -> resemblance.
    pub(crate) truth: HashMap<(u32, u32), f32>,
}

pub(crate) struct Cross {
    pub(crate) cn: Vec<String>,
    pub(crate) tw: Vec<String>,
    pub(crate) t2s: Vec<f32>,
}

pub(crate) struct Lang {
    pub(crate) name: &'static str,
    pub(crate) synthetic: Vec<Pair>,
    pub(crate) hardneg: Vec<Pair>,
    pub(crate) natural: Natural,
    pub(crate) cross: Option<Cross>,
    /// Sources dropped in the "without" precision figures.
    pub(crate) excluded_sources: &'static [&'static str],
}

pub(crate) fn read_natural(dir: &Path, lang: &str, limit: usize) -> Res<Natural> {
    let docs: Vec<Doc> = read_jsonl(&dir.join(format!("natural-{lang}.jsonl.gz")), limit)?;
    let index: HashMap<&str, u32> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| (d.id.as_str(), i as u32))
        .collect();
    let mut truth = HashMap::new();
    for line in open_lines(&dir.join(format!("natural-{lang}-pairs.tsv")))?
        .lines()
        .skip(1)
    {
        let line = line?;
        let mut f = line.split('\t');
        let (Some(a), Some(b), Some(j)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if let (Some(&x), Some(&y)) = (index.get(a), index.get(b)) {
            truth.insert((x.min(y), x.max(y)), j.parse::<f32>()?);
        }
    }
    Ok(Natural { docs, truth })
}

pub(crate) fn read_cross(dir: &Path, limit: usize) -> Res<Cross> {
    let docs: Vec<Doc> = read_jsonl(&dir.join("crossscript-zh.jsonl.gz"), usize::MAX)?;
    let by_id: HashMap<String, String> = docs.iter().map(|d| (d.id.clone(), d.full())).collect();
    let mut c = Cross {
        cn: vec![],
        tw: vec![],
        t2s: vec![],
    };
    for line in open_lines(&dir.join("crossscript-pairs-zh.tsv"))?
        .lines()
        .skip(1)
    {
        let line = line?;
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 3 || c.cn.len() >= limit {
            continue;
        }
        if let (Some(a), Some(b)) = (by_id.get(f[0]), by_id.get(f[1])) {
            c.cn.push(a.clone());
            c.tw.push(b.clone());
            c.t2s.push(f[2].parse()?);
        }
    }
    Ok(c)
}

pub(crate) fn load(dir: &Path, lang: &'static str, sample: usize) -> Res<Lang> {
    let t = Instant::now();
    // Pairs are grouped by recipe in the files: a sample takes evenly spaced pairs so every
    // recipe and length bucket is in it.
    let spread = |v: Vec<Pair>| -> Vec<Pair> {
        if v.len() <= sample {
            return v;
        }
        let n = v.len();
        v.into_iter()
            .enumerate()
            .filter(|(i, _)| (i * sample) % n < sample)
            .map(|(_, p)| p)
            .collect()
    };
    let synthetic = spread(read_jsonl(
        &dir.join(format!("synthetic-{lang}.jsonl.gz")),
        usize::MAX,
    )?);
    let hardneg = spread(read_jsonl(
        &dir.join(format!("hardneg-{lang}.jsonl.gz")),
        usize::MAX,
    )?);
    let natural = read_natural(dir, lang, sample.saturating_mul(10))?;
    let cross = if lang == "zh" {
        Some(read_cross(dir, sample)?)
    } else {
        None
    };
    eprintln!("loaded {lang} in {:.1?}", t.elapsed());
    Ok(Lang {
        name: lang,
        synthetic,
        hardneg,
        natural,
        cross,
        excluded_sources: if lang == "en" {
            &["licence", "gcloud"]
        } else {
            &["tldr-pages"]
        },
    })
}
