//! JSONL input: plain or gzip files (detected from the first bytes), read line by line with a
//! bound on the line length, each line's JSON values handed to the application layer's check
//! ([`InputDoc::from_record`]).

use flate2::read::MultiGzDecoder;
use serde_json::{Map, Value};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tantivy_simhash::app::{FieldValue, FrontEnd};
use tantivy_simhash::Error;

pub(crate) use tantivy_simhash::app::{FieldMap, InputDoc};

/// Counts the bytes read from the file (before decompression), for the progress bar.
struct Counting<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// A line as read: its bytes, or only its length when it exceeded the limit (the bytes past
/// the limit are not kept, so a huge line costs no memory).
pub(crate) enum RawLine<'a> {
    Line(&'a [u8]),
    TooLong(u64),
}

/// The UTF-8 encoding of U+FEFF, which some editors write at the start of a file.
const UTF8_BOM: &[u8] = b"\xef\xbb\xbf";

/// Reads lines of a JSONL file, plain or gzip.
pub(crate) struct JsonlReader {
    path: PathBuf,
    reader: Box<dyn BufRead + Send>,
    line: u64,
    max_line_bytes: usize,
    buf: Vec<u8>,
}

impl JsonlReader {
    /// Opens `path` (`-` is stdin); `consumed` counts the bytes read from it.
    ///
    /// Errors: the file cannot be opened or read (with its path in the message).
    pub(crate) fn open(
        path: &Path,
        max_line_bytes: usize,
        consumed: Arc<AtomicU64>,
    ) -> Result<Self, Error> {
        let source: Box<dyn Read + Send> = if path.as_os_str() == "-" {
            Box::new(io::stdin())
        } else {
            let file = File::open(path).map_err(|e| io_context(path, "cannot open", e))?;
            Box::new(file)
        };
        let mut raw = BufReader::with_capacity(
            1 << 16,
            Counting {
                inner: source,
                count: consumed,
            },
        );
        let head = raw
            .fill_buf()
            .map_err(|e| io_context(path, "cannot read", e))?;
        let gzip = head.starts_with(&[0x1f, 0x8b]);
        let reader: Box<dyn BufRead + Send> = if gzip {
            Box::new(BufReader::with_capacity(1 << 16, MultiGzDecoder::new(raw)))
        } else {
            Box::new(raw)
        };
        Ok(JsonlReader {
            path: path.to_path_buf(),
            reader,
            line: 0,
            max_line_bytes,
            buf: Vec::new(),
        })
    }

    /// The 1-based number of the line last returned.
    pub(crate) fn line_number(&self) -> u64 {
        self.line
    }

    /// The next line, without its line break; `None` at the end of the file.
    ///
    /// Errors: reading or decompressing fails (with the file and line in the message).
    pub(crate) fn next_line(&mut self) -> Result<Option<RawLine<'_>>, Error> {
        self.buf.clear();
        let mut len: u64 = 0;
        let mut too_long = false;
        let mut any = false;
        loop {
            let chunk = match self.reader.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let what = format!("cannot read line {}", self.line + 1);
                    return Err(io_context(&self.path, &what, e));
                }
            };
            if chunk.is_empty() {
                break;
            }
            any = true;
            let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (i, true),
                None => (chunk.len(), false),
            };
            len += take as u64;
            if !too_long {
                if self.buf.len() + take > self.max_line_bytes {
                    too_long = true;
                    self.buf = Vec::new();
                } else {
                    self.buf.extend_from_slice(&chunk[..take]);
                }
            }
            self.reader.consume(take + usize::from(done));
            if done {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        self.line += 1;
        if too_long {
            return Ok(Some(RawLine::TooLong(len)));
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        // Editors on Windows start UTF-8 files with a byte-order mark: it is not part of the
        // first document.
        let start = if self.line == 1 && self.buf.starts_with(UTF8_BOM) {
            UTF8_BOM.len()
        } else {
            0
        };
        Ok(Some(RawLine::Line(&self.buf[start..])))
    }
}

fn io_context(path: &Path, what: &str, e: io::Error) -> Error {
    Error::Io(io::Error::new(
        e.kind(),
        format!("{what} {}: {e}", path.display()),
    ))
}

/// What a line holds.
#[derive(Debug)]
pub(crate) enum Parsed {
    /// A blank line: ignored.
    Blank,
    /// A document.
    Doc(InputDoc),
}

/// Checks a line and maps it to a document; the error message says what is wrong (the caller
/// adds the file and line).
pub(crate) fn parse_line(bytes: &[u8], fields: &FieldMap) -> Result<Parsed, String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Parsed::Blank);
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        format!(
            "not valid UTF-8 (bad byte at offset {} of the line); convert the file to UTF-8",
            e.valid_up_to()
        )
    })?;
    let value: Value = serde_json::from_str(text)
        .or_else(|e| parse_with_long_integer_id(text, fields).ok_or(e))
        .map_err(|e| {
            // serde_json counts lines inside the line; only the column is news here.
            let full = e.to_string();
            let what = full
                .rsplit_once(" at line ")
                .map_or(full.as_str(), |(w, _)| w);
            format!("malformed JSON at column {}: {what}", e.column())
        })?;
    let Value::Object(obj) = value else {
        return Err(format!("expected a JSON object, found {}", kind_of(&value)));
    };
    InputDoc::from_record(
        fields,
        FrontEnd::CommandLine,
        |key| field_value(&obj, text, key, key == fields.id),
        || obj.keys().cloned().collect(),
    )
    .map(Parsed::Doc)
    .map_err(|e| e.message)
}

/// `line` parsed with its id quoted, when the id is an integer too long for serde_json (an f64
/// overflows from 309 digits) and the line is valid JSON once it is: an integer id is kept as its
/// decimal text anyway, so `"123..."` and `123...` are the same id.
fn parse_with_long_integer_id(line: &str, fields: &FieldMap) -> Option<Value> {
    let number = last_member_text(line, &fields.id)?;
    let digits = number.strip_prefix('-').unwrap_or(number);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let start = number.as_ptr() as usize - line.as_ptr() as usize;
    let end = start + number.len();
    let quoted = format!("{}\"{number}\"{}", &line[..start], &line[end..]);
    serde_json::from_str(&quoted).ok()
}

/// The value of `key` in `obj` (parsed from `line`). An integer is its decimal text; an id
/// that serde_json holds as an f64 (beyond 64 bits, or with a fraction or an exponent, which
/// would merge distinct ids) is taken from the line's own text.
fn field_value(obj: &Map<String, Value>, line: &str, key: &str, is_id: bool) -> FieldValue {
    match obj.get(key) {
        None => FieldValue::Absent,
        Some(Value::Null) => FieldValue::Null,
        Some(Value::String(s)) => FieldValue::Str(s.clone()),
        Some(Value::Number(n)) if !n.is_f64() => FieldValue::Integer(n.to_string()),
        Some(Value::Number(_)) if is_id => match integer_id(line, key) {
            Ok(digits) => FieldValue::Integer(digits),
            Err(what) => FieldValue::Other(what),
        },
        Some(other) => FieldValue::Other(kind_of(other).into()),
    }
}

/// The decimal text of the integer held by the top-level field `field` of `line` (valid JSON,
/// an object whose `field` is a number), or what it holds instead.
fn integer_id(line: &str, field: &str) -> Result<String, String> {
    let number = last_member_text(line, field).unwrap_or_default();
    let digits = number.strip_prefix('-').unwrap_or(number);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(number.to_string());
    }
    Err(format!(
        "the number {number}, which is not an integer (a fraction or an exponent would make two \
         spellings of one number two different ids)"
    ))
}

/// The raw text of the value of the last member named `name` of the JSON object `json` (only
/// the structure is followed: on a line that is not valid JSON the answer means nothing, and
/// callers parse again what they make of it). serde_json keeps the last of duplicate members too.
fn last_member_text<'a>(json: &'a str, name: &str) -> Option<&'a str> {
    let bytes = json.as_bytes();
    let mut i = skip_ws(bytes, 0);
    if bytes.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let mut found = None;
    loop {
        i = skip_ws(bytes, i);
        if bytes.get(i) != Some(&b'"') {
            return found;
        }
        let key_end = value_end(bytes, i)?;
        let key: String = serde_json::from_str(json.get(i..key_end)?).ok()?;
        i = skip_ws(bytes, key_end);
        if bytes.get(i) != Some(&b':') {
            return found;
        }
        let start = skip_ws(bytes, i + 1);
        let end = value_end(bytes, start)?;
        if key == name {
            found = json.get(start..end);
        }
        i = skip_ws(bytes, end);
        if bytes.get(i) != Some(&b',') {
            return found;
        }
        i += 1;
    }
}

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while bytes
        .get(i)
        .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        i += 1;
    }
    i
}

/// The end (exclusive) of the JSON value starting at `start`.
fn value_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    let mut depth = 0usize;
    let mut in_string = false;
    while let Some(&b) = bytes.get(i) {
        i += 1;
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => {
                    in_string = false;
                    if depth == 0 {
                        return Some(i);
                    }
                }
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r' if depth == 0 => return Some(i - 1),
            _ => {}
        }
    }
    (depth == 0 && !in_string).then_some(i)
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn doc(line: &str) -> Result<Parsed, String> {
        parse_line(line.as_bytes(), &FieldMap::default())
    }

    /// What a line's JSON becomes; the checks of the values themselves are the application
    /// layer's (tested in the library's `app::ingest`).
    #[test]
    fn lines_are_read_as_json_objects() {
        assert!(matches!(doc("  "), Ok(Parsed::Blank)));
        let Ok(Parsed::Doc(d)) = doc(r#"{"id": 7, "text": "hello world", "title": null}"#) else {
            panic!("expected a document");
        };
        assert_eq!(
            (d.id.as_str(), d.text.as_str(), d.title.as_str()),
            ("7", "hello world", "")
        );
        assert!(doc(r#"{"id": "a", "text": "x""#)
            .unwrap_err()
            .contains("malformed JSON"));
        assert!(doc(r#"[1]"#).unwrap_err().contains("an array"));
        assert!(doc(r#"{"id": "a", "text": 3}"#)
            .unwrap_err()
            .contains("the text field `text` is a number"));
        assert!(doc(r#"{"id": "a", "text": "x", "host": true}"#)
            .unwrap_err()
            .contains("the field `host` is a boolean"));
        assert!(doc(r#"{"text": "x", "b": 1}"#)
            .unwrap_err()
            .contains("(the line's fields: `b`, `text`)"));
        let bad = b"{\"id\": \"a\", \"text\": \"caf\xe9\"}";
        let err = parse_line(bad, &FieldMap::default()).unwrap_err();
        assert!(err.contains("offset 24"), "{err}");
    }

    fn id_of(line: &str) -> Result<String, String> {
        match doc(line)? {
            Parsed::Doc(d) => Ok(d.id),
            Parsed::Blank => Err("blank".into()),
        }
    }

    #[test]
    fn integer_ids_are_kept_exactly_and_other_numbers_refused() {
        let big = "123456789012345678901234567890";
        let bigger = "123456789012345678901234567891";
        for id in [
            big,
            bigger,
            "-98765432109876543210",
            "18446744073709551616",
            "0",
            "-0",
        ] {
            let line = format!(r#"{{"id": {id}, "text": "x"}}"#);
            assert_eq!(id_of(&line).as_deref(), Ok(id), "{line}");
        }
        // Within 64 bits serde_json keeps the integer; a string of the same digits is the same id.
        assert_eq!(id_of(r#"{"id": 1000, "text": "x"}"#).as_deref(), Ok("1000"));
        assert_eq!(
            id_of(r#"{"id": "1000", "text": "x"}"#).as_deref(),
            Ok("1000")
        );
        for bad in [
            "1e3",
            "1000.0",
            "1.5",
            "-2E-7",
            "123456789012345678901234567890.5",
        ] {
            let err = id_of(&format!(r#"{{"id": {bad}, "text": "x"}}"#)).unwrap_err();
            assert!(
                err.contains(&format!("the number {bad}, which is not an integer")),
                "{err}"
            );
        }
        // The member found is the one serde_json keeps (the last), whatever surrounds it.
        let tricky = format!(
            r#" {{ "a\"id": 5, "nested": {{"id": 1.5, "s": "}},\"id\":7"}}, "id": 9.5e99, "id" : {big} ,"text":"x"}} "#
        );
        assert_eq!(id_of(&tricky).as_deref(), Ok(big));
        let escaped_key = format!(r#"{{"\u0069d": {bigger}, "text": "x"}}"#);
        assert_eq!(id_of(&escaped_key).as_deref(), Ok(bigger));
    }

    #[test]
    fn a_byte_order_mark_starts_only_the_first_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bom.jsonl");
        std::fs::write(&path, b"\xef\xbb\xbf{\"id\": 1}\n\xef\xbb\xbf{\"id\": 2}\n").unwrap();
        let mut r = JsonlReader::open(&path, 100, Arc::new(AtomicU64::new(0))).unwrap();
        let Some(RawLine::Line(first)) = r.next_line().unwrap() else {
            panic!("a line");
        };
        assert_eq!(first, b"{\"id\": 1}");
        let Some(RawLine::Line(second)) = r.next_line().unwrap() else {
            panic!("a line");
        };
        assert!(
            second.starts_with(UTF8_BOM),
            "only a file's first bytes are a mark"
        );
    }

    #[test]
    fn reader_bounds_lines_and_reads_gzip() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("a.jsonl");
        let long = "x".repeat(100);
        std::fs::write(&plain, format!("one\r\n{long}\n\nlast")).unwrap();
        let gz = dir.path().join("a.jsonl.gz");
        let mut enc = flate2::write::GzEncoder::new(File::create(&gz).unwrap(), Default::default());
        enc.write_all(format!("one\r\n{long}\n\nlast").as_bytes())
            .unwrap();
        enc.finish().unwrap();
        for path in [plain, gz] {
            let count = Arc::new(AtomicU64::new(0));
            let mut r = JsonlReader::open(&path, 50, count.clone()).unwrap();
            let mut seen = Vec::new();
            while let Some(line) = r.next_line().unwrap() {
                seen.push(match line {
                    RawLine::Line(b) => String::from_utf8(b.to_vec()).unwrap(),
                    RawLine::TooLong(n) => format!("too long: {n}"),
                });
            }
            assert_eq!(seen, ["one", "too long: 100", "", "last"]);
            assert_eq!(r.line_number(), 4);
            assert_eq!(
                count.load(Ordering::Relaxed),
                std::fs::metadata(&path).unwrap().len()
            );
        }
    }

    /// JSON-ish lines: objects with ids of every kind (integers of any length, fractions,
    /// exponents, strings, nesting, escapes, duplicates), then arbitrary bytes mixed in.
    fn jsonish_line() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let id = prop_oneof![
            "-?[0-9]{1,40}",
            "-?[0-9]{1,20}\\.[0-9]{1,5}([eE][+-]?[0-9]{1,3})?",
            "\"[a-z0-9 \\\\\"]{0,10}\"",
            Just("null".to_string()),
            Just("{\"id\": 1}".to_string()),
            Just("[1, \"}\"]".to_string()),
        ];
        let member = prop_oneof![
            id.clone().prop_map(|v| format!("\"id\": {v}")),
            "[a-z ]{0,30}".prop_map(|t| format!("\"text\": \"{t}\"")),
            id.prop_map(|v| format!("\"\\u0069d\" : {v}")),
            Just("\"title\": null".to_string()),
            Just("\"host\": 5".to_string()),
        ];
        let object = proptest::collection::vec(member, 0..6)
            .prop_map(|m| format!(" {{ {} }} ", m.join(" , ")).into_bytes());
        prop_oneof![
            4 => object,
            1 => any::<Vec<u8>>(),
            1 => (proptest::collection::vec(any::<u8>(), 0..8), "[ -~]{0,40}")
                .prop_map(|(junk, text)| [junk, text.into_bytes()].concat()),
        ]
    }

    /// Reads `bytes` as a file (plain, or gzip when it starts like gzip) and parses every line;
    /// the checks hold for any input.
    fn read_all(bytes: &[u8], dir: &Path) -> Result<(), proptest::test_runner::TestCaseError> {
        use proptest::prop_assert;
        let path = dir.join("fuzz.jsonl");
        std::fs::write(&path, bytes)
            .map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
        let Ok(mut reader) = JsonlReader::open(&path, 64, Arc::new(AtomicU64::new(0))) else {
            return Ok(());
        };
        let mut lines = 0;
        while let Ok(Some(line)) = reader.next_line() {
            lines += 1;
            if let RawLine::Line(line) = line {
                prop_assert!(line.len() <= 64);
                if let Ok(Parsed::Doc(doc)) = parse_line(line, &FieldMap::default()) {
                    prop_assert!(!doc.id.trim().is_empty());
                    // A numeric id is the integer's own text: its value round-trips.
                    if let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(line) {
                        if let Some(Value::Number(n)) = obj.get("id") {
                            prop_assert!(doc
                                .id
                                .trim_start_matches('-')
                                .bytes()
                                .all(|b| b.is_ascii_digit()));
                            if let Some(v) = n.as_u64() {
                                prop_assert!(doc.id == v.to_string());
                            }
                        }
                    }
                }
            }
        }
        prop_assert!(reader.line_number() == lines);
        Ok(())
    }

    fn fuzz_reader(cases: u32) {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};
        let dir = tempfile::tempdir().unwrap();
        let file = proptest::collection::vec(jsonish_line(), 0..12).prop_flat_map(|lines| {
            let joined = lines.join(&b"\n"[..]);
            (Just(joined), any::<bool>(), any::<bool>())
        });
        let mut runner = TestRunner::new(Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        });
        runner
            .run(&file, |(bytes, bom, gzip)| {
                let mut bytes = if bom {
                    [UTF8_BOM, &bytes].concat()
                } else {
                    bytes
                };
                if gzip {
                    let mut enc = flate2::write::GzEncoder::new(Vec::new(), Default::default());
                    enc.write_all(&bytes).unwrap();
                    let mut gz = enc.finish().unwrap();
                    // Damaged compression too: cut the stream short.
                    gz.truncate(gz.len() - bytes.len() % 7);
                    bytes = gz;
                }
                read_all(&bytes, dir.path())
            })
            .unwrap();
    }

    #[test]
    fn jsonl_reader_on_arbitrary_input() {
        fuzz_reader(300);
    }

    /// The long run: `FUZZ_CASES=200000 cargo test --release --bin neardup -- --ignored`.
    #[test]
    #[ignore = "long: run with --ignored"]
    fn jsonl_reader_on_arbitrary_input_long() {
        let cases = std::env::var("FUZZ_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(200_000);
        fuzz_reader(cases);
    }
}
