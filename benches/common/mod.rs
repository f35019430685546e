//! Benchmark text shared by `benches/fingerprint.rs` and `eval/src/bin/fingerprint_speed.rs`.
//!
//! Documents come from the evaluation corpora (`natural-en.jsonl.gz`, `natural-zh.jsonl.gz`),
//! `title + "\n" + text` of each record, concatenated (or cut at a line or word boundary) into
//! documents of about [`DOC_BYTES`] bytes ([`Packing::Packed`]), or one document per record as
//! a writer indexing the records sees them ([`Packing::PerRecord`]). When the file is missing or unreadable, a
//! deterministic generated text of the requested size stands in, so the benchmark still runs.

use flate2::read::GzDecoder;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// Target size of one benchmark document.
pub const DOC_BYTES: usize = 4096;

/// The data directory: `$SIMHASH_DATA` if set, else `../shared/data` (relative to the crate).
pub fn default_data_dir() -> PathBuf {
    std::env::var_os("SIMHASH_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("../shared/data"))
}

/// A language of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    /// English (`natural-en.jsonl.gz`).
    En,
    /// Chinese (`natural-zh.jsonl.gz`).
    Zh,
}

impl Lang {
    /// `en` or `zh`.
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh",
        }
    }
}

/// How records become benchmark documents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packing {
    /// Records packed into documents of about [`DOC_BYTES`] bytes: per-document costs hidden.
    Packed,
    /// One document per record (`title + "\n" + text`, as `DedupWriter` joins the two fields):
    /// per-document costs show.
    PerRecord,
}

/// Benchmark documents of one language.
pub struct Corpus {
    /// The documents (about [`DOC_BYTES`] bytes each when packed).
    pub docs: Vec<String>,
    /// Total bytes of `docs`.
    pub bytes: usize,
    /// Where the text came from (a file and how many records, or "generated").
    pub origin: String,
}

/// Loads up to `max_records` records (all if `None`) and up to `max_bytes` bytes (unbounded
/// if `None`) of `natural-{lang}.jsonl.gz` from `dir`, made into documents by `packing`,
/// falling back to generated text (in paragraphs: one document each under
/// [`Packing::PerRecord`]).
pub fn load(
    dir: &Path,
    lang: Lang,
    max_records: Option<usize>,
    max_bytes: Option<usize>,
    packing: Packing,
) -> Corpus {
    let path = dir.join(format!("natural-{}.jsonl.gz", lang.code()));
    match read_jsonl(&path, max_records, max_bytes, packing) {
        Ok(c) if !c.docs.is_empty() => c,
        Ok(_) => {
            eprintln!("{}: no documents; using generated text", path.display());
            generated(lang, max_bytes.unwrap_or(4 << 20), packing)
        }
        Err(e) => {
            eprintln!("{}: {e}; using generated text", path.display());
            generated(lang, max_bytes.unwrap_or(4 << 20), packing)
        }
    }
}

fn read_jsonl(
    path: &Path,
    max_records: Option<usize>,
    max_bytes: Option<usize>,
    packing: Packing,
) -> Result<Corpus, Box<dyn std::error::Error>> {
    let reader = BufReader::new(GzDecoder::new(File::open(path)?));
    let mut chunker = Chunker::new(packing);
    let mut records = 0;
    for line in reader.lines() {
        if max_records.is_some_and(|m| records >= m)
            || max_bytes.is_some_and(|m| chunker.bytes >= m)
        {
            break;
        }
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(&line)?;
        let field = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
        chunker.add(&format!("{}\n{}", field("title"), field("text")));
        records += 1;
    }
    let mut c = chunker.finish();
    c.origin = format!("{} ({records} records)", path.display());
    Ok(c)
}

/// Packs texts into documents of about [`DOC_BYTES`] bytes (or keeps each text whole).
struct Chunker {
    docs: Vec<String>,
    buf: String,
    bytes: usize,
    packing: Packing,
}

impl Chunker {
    fn new(packing: Packing) -> Self {
        Chunker {
            docs: Vec::new(),
            buf: String::new(),
            bytes: 0,
            packing,
        }
    }

    fn add(&mut self, text: &str) {
        if self.packing == Packing::PerRecord {
            // Every record is a document, even an empty one (a writer signs it too).
            self.bytes += text.len();
            self.docs.push(text.to_string());
            return;
        }
        if !self.buf.is_empty() {
            self.buf.push_str("\n\n");
        }
        let mut rest = text;
        while self.buf.len() + rest.len() > DOC_BYTES {
            let cut = cut_point(rest, DOC_BYTES.saturating_sub(self.buf.len()));
            self.buf.push_str(&rest[..cut]);
            self.emit();
            rest = rest[cut..].trim_start();
        }
        self.buf.push_str(rest);
        if self.buf.len() >= DOC_BYTES {
            self.emit();
        }
    }

    fn emit(&mut self) {
        if !self.buf.is_empty() {
            self.bytes += self.buf.len();
            self.docs.push(std::mem::take(&mut self.buf));
        }
    }

    fn finish(mut self) -> Corpus {
        self.emit();
        Corpus {
            docs: self.docs,
            bytes: self.bytes,
            origin: String::new(),
        }
    }
}

/// A cut at or after `at` bytes: the next line break or white space within 512 bytes, else the
/// next character boundary.
fn cut_point(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at += 1;
    }
    let window = &s[at..];
    let near = window
        .char_indices()
        .take_while(|(i, _)| *i < 512)
        .find(|(_, c)| c.is_whitespace())
        .map(|(i, _)| at + i);
    near.unwrap_or(at)
}

const EN_WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "for",
    "that",
    "with",
    "on",
    "as",
    "by",
    "this",
    "be",
    "are",
    "from",
    "or",
    "it",
    "an",
    "at",
    "file",
    "system",
    "package",
    "version",
    "license",
    "software",
    "program",
    "user",
    "data",
    "option",
    "command",
    "server",
    "client",
    "request",
    "default",
    "value",
    "configuration",
    "library",
    "function",
    "module",
    "source",
    "code",
    "release",
    "support",
    "documentation",
    "install",
    "directory",
    "terms",
    "conditions",
    "copyright",
    "permission",
    "warranty",
    "distribute",
    "modify",
    "notice",
    "without",
    "any",
    "must",
    "may",
    "should",
    "provided",
    "following",
    "python",
    "debian",
    "google",
    "cloud",
    "API",
    "example",
    "output",
    "input",
    "error",
    "message",
    "network",
    "service",
    "database",
    "index",
    "query",
    "search",
    "document",
    "text",
    "string",
    "number",
    "list",
    "table",
    "changes",
    "fixed",
    "bug",
    "upload",
    "maintainer",
    "new",
    "upstream",
    "patch",
    "build",
];

const ZH_WORDS: &[&str] = &[
    "的",
    "是",
    "在",
    "我们",
    "一个",
    "这个",
    "没有",
    "可以",
    "使用",
    "命令",
    "文件",
    "系统",
    "程序",
    "用户",
    "数据",
    "选项",
    "服务器",
    "客户端",
    "请求",
    "默认",
    "配置",
    "函数",
    "模块",
    "源代码",
    "版本",
    "支持",
    "文档",
    "安装",
    "目录",
    "软件",
    "开发",
    "设计",
    "测试",
    "维护",
    "酒店",
    "房间",
    "服务",
    "价格",
    "环境",
    "位置",
    "方便",
    "不错",
    "非常",
    "感觉",
    "还是",
    "所有权",
    "借用",
    "引用",
    "生命周期",
    "结构体",
    "枚举",
    "模式",
    "匹配",
    "错误",
    "处理",
    "消息",
    "队列",
    "生产者",
    "消费者",
    "主题",
    "集群",
    "部署",
    "网络",
    "中文",
    "北京",
    "大学",
    "学习",
    "计算机",
    "科学",
    "问题",
    "方法",
    "工具",
    "需要",
    "通过",
    "如果",
    "因为",
    "所以",
];

/// Deterministic pseudo-random text of about `bytes` bytes (xorshift over a small vocabulary).
pub fn generated(lang: Lang, bytes: usize, packing: Packing) -> Corpus {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let mut chunker = Chunker::new(packing);
    let mut paragraph = String::new();
    while chunker.bytes < bytes {
        paragraph.clear();
        for _ in 0..3 + next(5) {
            let words = 6 + next(15);
            for w in 0..words {
                match lang {
                    Lang::En => {
                        if w > 0 {
                            paragraph.push(' ');
                        }
                        paragraph.push_str(EN_WORDS[next(EN_WORDS.len())]);
                    }
                    Lang::Zh => {
                        paragraph.push_str(ZH_WORDS[next(ZH_WORDS.len())]);
                        if w + 1 < words && next(6) == 0 {
                            paragraph.push('，');
                        }
                    }
                }
            }
            paragraph.push_str(if lang == Lang::En { ". " } else { "。" });
        }
        chunker.add(&paragraph);
    }
    let mut c = chunker.finish();
    c.origin = format!("generated {} text", lang.code());
    c
}
