//! [`Fingerprinter`]: one scheme's analysis and simhash accumulation, with reusable buffers.

use super::*;

/// Computes fingerprints for one [`Scheme`], reusing its buffers. Not `Sync`: one per thread
/// (for example with rayon's `map_init`).
pub struct Fingerprinter {
    pub(super) scheme: Scheme,
    pub(super) analysis: Analysis,
    pub(super) token_hashes: Vec<u64>,
    /// Per token, its occurrence weight in units of 1/`unit` (short-line damping).
    pub(super) token_lines: Vec<u32>,
    pub(super) line_tokens: Vec<u32>,
    pub(super) token_text: String,
    pub(super) counts: FeatureCounts,
    pub(super) acc: [i64; 64],
    /// How words, word shingles and character n-grams weigh under the scheme.
    pub(super) weightings: [Weighting; 3],
    /// Where the current analysis pass is (line, last token's script).
    pub(super) pass: PassState,
}

/// How a [`Fingerprinter`] reads tokens.
pub(super) enum Analysis {
    /// The built-in tokenizer, read token by token without building tokens.
    Builtin(Box<SimhashTokenizer>),
    /// A user analyzer, through its token stream.
    Analyzer(TextAnalyzer),
}

/// Receives each token, its seeded hash, the 0-based line it starts on and its byte offsets in
/// the text (`from..to`). A type parameter rather than `dyn`: the sink is inlined into the
/// per-token loop.
pub(crate) trait TokenSink: FnMut(&str, u64, u32, usize, usize) {}
impl<F: FnMut(&str, u64, u32, usize, usize)> TokenSink for F {}

/// No sink.
pub(crate) type NoSink = fn(&str, u64, u32, usize, usize);

impl Fingerprinter {
    /// Calls `sink(token, from, to)` for every token of `text` as the built-in tokenizer cuts
    /// it, without fingerprinting; `false` (and no call) for a user analyzer.
    pub(crate) fn for_each_builtin_token(
        &mut self,
        text: &str,
        sink: &mut dyn FnMut(&str, usize, usize),
    ) -> bool {
        match &mut self.analysis {
            Analysis::Builtin(tokenizer) => {
                tokenizer.for_each_token(text, sink);
                true
            }
            Analysis::Analyzer(_) => false,
        }
    }

    /// The seeded hash of every token of the last text, in order (what a
    /// [`fingerprint_with_tokens`](Self::fingerprint_with_tokens) sink was given).
    pub(crate) fn token_hashes(&self) -> &[u64] {
        &self.token_hashes
    }

    /// The scheme this fingerprinter follows.
    pub fn scheme(&self) -> &Scheme {
        &self.scheme
    }

    /// The fingerprint of `text`. Cost: one analysis of the text with the fingerprinter's
    /// reused buffers (measured at 0.88-0.93x the analyzer's own speed in English, ~117-119
    /// MB/s, 0.92-1.04x in Chinese, ~25-27 MB/s; docs/PERFORMANCE.md, section Fingerprinting).
    /// Never panics, whatever the input.
    pub fn fingerprint(&mut self, text: &str) -> Fingerprint {
        self.fingerprint_details(text).fingerprint
    }

    /// The fingerprint of `text` with how it was made. Cost as
    /// [`fingerprint`](Self::fingerprint); never panics, whatever the input.
    pub fn fingerprint_details(&mut self, text: &str) -> FingerprintDetails {
        self.fingerprint_with_tokens::<NoSink>(text, None, false)
    }

    /// [`Fingerprinter::fingerprint_details`], also giving every token to `sink` with its hash
    /// and the 0-based line it starts on, in the same analysis pass (signatures use it: one
    /// analysis per document). Lines are counted only when `sink_lines` (or the scheme damps
    /// short lines); otherwise the sink sees line 0.
    ///
    /// Cost: one analysis of `text`, one xxh3 hash per token, a feature table of about twice
    /// the token count (reused) and 64 counters per distinct feature kind. Never panics.
    pub(crate) fn fingerprint_with_tokens<S: TokenSink>(
        &mut self,
        text: &str,
        sink: Option<S>,
        sink_lines: bool,
    ) -> FingerprintDetails {
        self.begin_values(sink_lines && sink.is_some());
        self.analyse(text, sink);
        self.finish_values()
    }

    /// Starts an analysis pass over one or more text values (joined by line breaks, as one
    /// text): empties the buffers. `count_lines`: the caller needs each token's line (lines are
    /// counted anyway when the scheme damps short lines).
    pub(crate) fn begin_values(&mut self, count_lines: bool) {
        self.token_hashes.clear();
        self.token_lines.clear();
        self.line_tokens.clear();
        self.token_text.clear();
        let inner = &self.scheme.inner;
        self.pass = PassState {
            seed: inner.seed,
            damp: inner.short_line,
            want_text: inner.features.uses_char_ngrams(),
            count_lines: inner.short_line > 0 || count_lines,
            ..PassState::default()
        };
    }

    /// One token of the current value (`value`, cut by the built-in tokenizer, at byte
    /// `from`): records it; returns its seeded hash and its 0-based line in the joined text.
    #[inline]
    pub(crate) fn value_token(&mut self, value: &str, token: &str, from: usize) -> (u64, u32) {
        self.pass.token(
            &mut self.token_hashes,
            &mut self.token_lines,
            &mut self.token_text,
            value,
            token,
            from,
        )
    }

    /// Starts a value on 0-based line `line` of the joined text.
    pub(crate) fn start_value(&mut self, line: u32) {
        self.pass.line_base = line;
        self.pass.lines = LineCounter::default();
    }

    /// The fingerprint of the values passed since [`begin_values`](Self::begin_values).
    pub(crate) fn finish_values(&mut self) -> FingerprintDetails {
        let inner = Arc::clone(&self.scheme.inner);
        let tokens = self.token_hashes.len();
        self.occurrence_weights(inner.short_line);
        self.acc = [0; 64];
        let mut distinct = 0;
        if inner.features.words > 0.0 {
            distinct += self.add_words(&inner);
        }
        if inner.features.uses_shingles() {
            distinct += self.add_word_shingles(&inner);
        }
        if inner.features.uses_char_ngrams() {
            distinct += self.add_char_ngrams(&inner);
        }
        self.details(&inner, tokens, distinct)
    }

    /// The analysis pass over `text` as one value: every token's seeded hash into
    /// `token_hashes`, its line into `token_lines` when the scheme damps short lines, the
    /// tokens' text into `token_text` when character n-grams need it; each token also goes to
    /// `sink`.
    fn analyse<S: TokenSink>(&mut self, text: &str, mut sink: Option<S>) {
        let normalized;
        let input: &str = match &self.scheme.inner.tokenization {
            Tokenization::Builtin { .. } => text,
            Tokenization::Analyzer { .. } => {
                normalized = self.scheme.inner.normalization.apply(text);
                &normalized
            }
        };
        let Fingerprinter {
            analysis,
            pass,
            token_hashes,
            token_lines,
            token_text,
            ..
        } = self;
        let mut on_token = |t: &str, offset_from: usize, offset_to: usize| {
            let (hash, line) =
                pass.token(token_hashes, token_lines, token_text, input, t, offset_from);
            if let Some(sink) = sink.as_mut() {
                sink(t, hash, line, offset_from, offset_to);
            }
        };
        match analysis {
            Analysis::Builtin(tokenizer) => {
                tokenizer.for_each_token(input, &mut |t, from, to| on_token(t, from, to));
            }
            Analysis::Analyzer(analyzer) => {
                let mut stream = analyzer.token_stream(input);
                while stream.advance() {
                    let token = stream.token();
                    on_token(&token.text, token.offset_from, token.offset_to);
                }
            }
        }
    }

    /// Turns each token's line (in `token_lines`) into its occurrence weight in units of
    /// 1/`damp` (the unit of the scheme's [`Weighting`]s): a token on a line of `n < damp`
    /// tokens weighs `n / damp`.
    fn occurrence_weights(&mut self, damp: u32) {
        if damp > 0 {
            for &l in &self.token_lines {
                let l = l as usize;
                if self.line_tokens.len() <= l {
                    self.line_tokens.resize(l + 1, 0);
                }
                self.line_tokens[l] += 1;
            }
            for l in self.token_lines.iter_mut() {
                *l = self.line_tokens[*l as usize].min(damp);
            }
        }
    }

    /// The occurrence weight of token `i` (1 when the scheme does not damp short lines).
    fn occurrence(&self, i: usize) -> u32 {
        self.token_lines.get(i).copied().unwrap_or(1)
    }

    /// Words as features: counts them, adds them to the counters; returns how many are
    /// distinct.
    fn add_words(&mut self, inner: &SchemeInner) -> usize {
        self.counts.clear(self.token_hashes.len());
        if self.token_lines.is_empty() {
            self.counts
                .add_all(self.token_hashes.iter().map(|&h| (h, 1)));
        } else {
            let occurrences = self.token_hashes.iter().zip(&self.token_lines);
            self.counts
                .add_all(occurrences.map(|(&h, &occurrence)| (h, occurrence)));
        }
        flush(&self.counts, &mut self.acc, &self.weightings[0], |h| {
            let mut f = inner.idf.as_ref().map_or(1.0, |t| t.factor(h));
            // The set is empty unless stop words are damped (a look-up per feature).
            if !inner.stopwords.is_empty() && inner.stopwords.contains(&h) {
                f *= inner.stopword_weight;
            }
            f
        });
        self.counts.len()
    }

    /// Word shingles as features (a shingle weighs as its least weighted word; one made only
    /// of stop words is damped like them); returns how many are distinct.
    fn add_word_shingles(&mut self, inner: &SchemeInner) -> usize {
        let n = usize::from(inner.features.shingle_len);
        self.counts.clear(self.token_hashes.len());
        let mut buf = [0u8; 64];
        let mut all_stop: HashSet<u64, BuildHasherDefault<IdentityHasher>> = HashSet::default();
        for (start, w) in self.token_hashes.windows(n).enumerate() {
            for (i, h) in w.iter().enumerate() {
                buf[i * 8..i * 8 + 8].copy_from_slice(&h.to_le_bytes());
            }
            let h = xxh3_64_with_seed(&buf[..n * 8], inner.seed ^ SHINGLE_TAG ^ n as u64);
            let occ = (start..start + n)
                .map(|i| self.occurrence(i))
                .min()
                .unwrap_or(1);
            self.counts.add(h, occ);
            if !inner.stopwords.is_empty() && w.iter().all(|t| inner.stopwords.contains(t)) {
                all_stop.insert(h);
            }
        }
        flush(&self.counts, &mut self.acc, &self.weightings[1], |h| {
            if all_stop.contains(&h) {
                inner.stopword_weight
            } else {
                1.0
            }
        });
        self.counts.len()
    }

    /// Character n-grams of the normalised token text as features; returns how many are
    /// distinct.
    fn add_char_ngrams(&mut self, inner: &SchemeInner) -> usize {
        let n = usize::from(inner.features.char_ngram_len);
        self.counts.clear(self.token_text.len());
        let starts: Vec<usize> = self
            .token_text
            .char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(self.token_text.len()))
            .collect();
        for w in starts.windows(n + 1) {
            let gram = &self.token_text[w[0]..w[n]];
            let h = xxh3_64_with_seed(gram.as_bytes(), inner.seed ^ CHAR_TAG ^ n as u64);
            self.counts.add(h, 1);
        }
        flush(&self.counts, &mut self.acc, &self.weightings[2], |_| 1.0);
        self.counts.len()
    }

    /// The simhash of the counters, or the exact-hash fallback below the scheme's
    /// `min_features` distinct features.
    fn details(&self, inner: &SchemeInner, tokens: usize, distinct: usize) -> FingerprintDetails {
        if distinct < inner.min_features {
            let mut bytes = Vec::with_capacity(tokens * 8);
            for h in &self.token_hashes {
                bytes.extend_from_slice(&h.to_le_bytes());
            }
            return FingerprintDetails {
                fingerprint: Fingerprint(xxh3_64_with_seed(&bytes, inner.seed ^ EXACT_TAG)),
                kind: FingerprintKind::Exact,
                tokens,
                features: distinct,
            };
        }
        let mut fp = 0u64;
        for (i, &v) in self.acc.iter().enumerate() {
            if v > 0 {
                fp |= 1 << i;
            }
        }
        FingerprintDetails {
            fingerprint: Fingerprint(fp),
            kind: FingerprintKind::Simhash,
            tokens,
            features: distinct,
        }
    }
}

/// The per-token state of an analysis pass over text values joined by line breaks (a plain
/// text is one value): the line the current value starts on, and whether the last token was
/// Han (Han tokens join without a space in `token_text`, like the text they came from).
#[derive(Default)]
pub(super) struct PassState {
    seed: u64,
    damp: u32,
    want_text: bool,
    count_lines: bool,
    /// The line of the joined text the current value starts on.
    line_base: u32,
    lines: LineCounter,
    prev_han: bool,
}

impl PassState {
    #[inline]
    fn token(
        &mut self,
        token_hashes: &mut Vec<u64>,
        token_lines: &mut Vec<u32>,
        token_text: &mut String,
        value: &str,
        t: &str,
        offset_from: usize,
    ) -> (u64, u32) {
        let line = if self.count_lines {
            self.line_base
                .saturating_add(self.lines.line_at(value, offset_from))
        } else {
            0
        };
        if self.damp > 0 {
            token_lines.push(line);
        }
        let hash = xxh3_64_with_seed(t.as_bytes(), self.seed ^ WORD_TAG);
        token_hashes.push(hash);
        if self.want_text {
            let han = t.chars().next().is_some_and(is_han);
            let joins = han && self.prev_han;
            if !token_text.is_empty() && !joins {
                token_text.push(' ');
            }
            token_text.push_str(t);
            self.prev_han = han;
        }
        (hash, line)
    }
}

/// The 0-based line of byte offsets asked in order: each newline is counted once.
#[derive(Default)]
struct LineCounter {
    line: u32,
    scanned: usize,
}

impl LineCounter {
    #[inline]
    fn line_at(&mut self, text: &str, at: usize) -> u32 {
        let at = at.min(text.len());
        if at > self.scanned {
            let newlines = text.as_bytes()[self.scanned..at]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            self.line = self.line.saturating_add(newlines as u32);
            self.scanned = at;
        }
        self.line
    }
}
