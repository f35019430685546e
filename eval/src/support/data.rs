//! Reading the evaluation data (`../shared/data`, gzip JSONL) in the evaluation programs, and the
//! machine facts their reports start with. Included with `#[path = "../support/data.rs"] mod data;`.
#![allow(dead_code)]

use flate2::read::MultiGzDecoder;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

pub type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// A document of the natural corpora and of the pairs files: its id, title and text, and where the
/// file has them its source and url (a missing field reads as empty).
#[derive(Deserialize)]
pub struct Doc {
    pub id: String,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub source: String,
    #[serde(default)]
    pub url: String,
}

impl Doc {
    /// The title and the text, on two lines: what the programs fingerprint.
    pub fn full(&self) -> String {
        format!("{}\n{}", self.title, self.text)
    }
}

/// The lines of `path`, gunzipped when its name ends in `.gz`. Errors name the file.
pub fn open_lines(path: &Path) -> Res<Box<dyn BufRead>> {
    let f = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if path.extension().is_some_and(|e| e == "gz") {
        Ok(Box::new(BufReader::new(MultiGzDecoder::new(f))))
    } else {
        Ok(Box::new(BufReader::new(f)))
    }
}

/// The first `limit` records of a JSONL file (gzip when named `.gz`), blank lines skipped.
/// A line that does not parse is an error naming the file and the line.
pub fn read_jsonl<T: DeserializeOwned>(path: &Path, limit: usize) -> Res<Vec<T>> {
    let mut out = Vec::new();
    for (n, line) in open_lines(path)?.lines().enumerate() {
        if out.len() >= limit {
            break;
        }
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        out.push(
            serde_json::from_str(&line)
                .map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))?,
        );
    }
    Ok(out)
}

/// The 1, 5 and 15 minute load averages (empty where /proc is not there): timings taken on a
/// busy machine say so.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split(' ')
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
