"""Writes the synthetic text corpus of :mod:`tantivy_simhash.dask_bench` as JSON lines.

Run ``python -m tantivy_simhash.text_corpus --docs 1000000 --out text1m.jsonl`` (``--help`` for
the options), then ``neardup index --index text1m-index --dedup off text1m.jsonl``. Each line is
``{"id": "d<number>", "text": ...}``, document ``number`` of
:func:`tantivy_simhash.dask_bench.synthetic_text` (the same generator, so the command line and
the Dask pipeline can be measured on the same documents). The defaults are the corpus of the
batch benchmarks in docs/PERFORMANCE.md: base texts of 60 to 199 words from the 20,000-word
Zipf-like vocabulary, 5% of the documents edited copies of a pool of 5 shared texts per 100
documents. The output depends only on the options, not on ``--jobs``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Iterator, List, Optional, Tuple

from .dask_bench import synthetic_text

_CHUNK = 5_000


def corpus_lines(
    docs: int, start: int, stop: int, seed: int, dup_fraction: float, pool: float, length: Tuple[int, int]
) -> List[str]:
    """The JSON lines (without newline) of documents ``start .. stop`` of a corpus of ``docs``."""
    return [
        json.dumps({"id": f"d{i}", "text": synthetic_text(seed, i, docs, dup_fraction, pool, length)})
        for i in range(start, stop)
    ]


def _chunk(args: Tuple[int, int, int, int, float, float, Tuple[int, int]]) -> List[str]:
    return corpus_lines(*args)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tantivy_simhash.text_corpus", description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", type=int, default=1_000_000, help="documents (default 1,000,000)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--dup-fraction", type=float, default=0.05, help="edited copies (default 0.05)")
    p.add_argument("--pool", type=float, default=5.0, help="shared base texts per 100 documents (default 5)")
    p.add_argument("--min-words", type=int, default=60, help="shortest base text (default 60)")
    p.add_argument("--max-words", type=int, default=200, help="longest base text plus one (default 200)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="generating processes (default: the CPUs)")
    p.add_argument("--out", default="-", help="output file (default: standard output)")
    args = p.parse_args(argv)
    if args.docs < 1 or args.jobs < 1:
        p.error("--docs and --jobs must be at least 1")
    if not 1 <= args.min_words < args.max_words:
        p.error(f"need 1 <= --min-words < --max-words, found {args.min_words} and {args.max_words}")
    length = (args.min_words, args.max_words)
    chunks = [
        (args.docs, a, min(a + _CHUNK, args.docs), args.seed, args.dup_fraction, args.pool, length)
        for a in range(0, args.docs, _CHUNK)
    ]
    out = sys.stdout if args.out == "-" else open(args.out, "w", encoding="utf-8")
    try:
        if args.jobs == 1:
            parts: Iterator[List[str]] = map(_chunk, chunks)
            for lines in parts:
                out.writelines(line + "\n" for line in lines)
        else:
            import multiprocessing

            with multiprocessing.get_context("spawn").Pool(args.jobs) as workers:
                for lines in workers.imap(_chunk, chunks):
                    out.writelines(line + "\n" for line in lines)
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
