"""tantivy-simhash side by side with datatrove and rensa, on the same corpus and machine.

Run ``python -m tantivy_simhash.peer_bench --data DIR`` (``--help`` for the options). For each
corpus (the synthetic near-duplicate sets ``synthetic-en`` / ``synthetic-zh`` of the evaluation
data in ``DIR``, and ``--synthetic N`` documents of :mod:`tantivy_simhash.dask_bench`'s
generator) it writes the documents to one JSON-lines file and runs each tool on it as a program
of its own, one core each (``docs_per_s_per_core`` is documents over wall seconds;
``docs_per_cpu_s`` over the CPU seconds the job used, the steadier figure on a shared machine),
timing the whole job (reading the file, signing, the join or
buckets, clusters, writing the result) and taking its peak resident memory from the operating
system (the child's own high-water mark, and its children's). Then it scores the pairs each tool reports against the exact resemblance (Jaccard of
token 3-shingle sets after NFKC and case folding, Han characters one token each: the evaluation
data's definition), and prints one table.

Tools (the peers are optional: a tool whose package is missing is skipped with a note):

- ``tantivy-simhash``: ``Rule.sign_many`` then ``Rule.pairs_in_memory`` (the exact single-machine
  join, every pair verified by the match rule), clusters by union-find;
- ``datatrove``: ``MinhashDedupSignature`` / ``MinhashDedupBuckets`` / ``MinhashDedupCluster`` /
  ``MinhashDedupFilter`` with ``LocalPipelineExecutor`` (one task, one worker per stage; its
  default ``MinhashConfig``: 5-gram words, 14 buckets of 8 hashes); its pairs are the bucket
  collisions of its ``.dups`` files, its clusters those of ``MinhashDedupCluster``;
- ``rensa``: ``RMinHash`` (128 permutations) of word 3-shingles, ``RMinHashLSH`` (threshold 0.8,
  16 bands), each candidate kept when the sketches estimate a Jaccard of at least 0.8.

With ``--min-resemblance T``, a second tantivy-simhash row reports only the rule's pairs whose
sketches estimate a resemblance of at least ``T``, whichever branch matched them
(``Rule.pairs_in_memory``'s opt-in ``min_resemblance``): for a reader who counts only pairs at
resemblance >= 0.8 as duplicates, where the rule's default aims at 0.5. With ``--breakdown``, every
pair of a tantivy-simhash row under 0.5 is explained (``Index.explain_texts``: the exact
resemblance of the rule's own shingles, the chrome lines it leaves out, the estimate) and counted
by branch and cause (:data:`CAUSES`), with the documents' sizes and what the pairs are.

Scoring (the data's convention): a truth pair has resemblance >= 0.8; a reported pair under 0.5
is a false positive; pairs in [0.5, 0.8) count neither way. The truth pairs are the corpus's
designed pairs (each line of ``synthetic-*``; for the generated corpus, the copies of one base
text) and every pair any tool reported, each measured exactly; a near-duplicate pair that no tool
and no design found is not counted. Cluster scores count every pair inside a reported cluster
(what a deduplication that keeps one document per cluster acts on), precision on a sample of
at most ``--cluster-sample`` of them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import unicodedata
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef"
_TOKEN = re.compile(r"[%s]|[^\W%s]+" % (_HAN, _HAN))

TOOLS = ("tantivy-simhash", "datatrove", "rensa")


def shingles(text: str, width: int = 3) -> Set[int]:
    """The exact-resemblance shingles of ``text`` (hashed to ints to save memory: Python's
    string hash is 64 bits, collisions among a document's few hundred shingles are negligible)."""
    toks = _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold())
    if len(toks) < width:
        return {hash(" ".join(toks))} if toks else set()
    return {hash(" ".join(toks[i : i + width])) for i in range(len(toks) - width + 1)}


def jaccard(a: Set[int], b: Set[int]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


# ---------------------------------------------------------------------------------------------
# Corpora: (ids, texts, designed pairs)


def load_synthetic_set(path: str) -> Tuple[List[str], List[str], List[Tuple[int, int]]]:
    """A ``synthetic-*.jsonl(.gz)`` file of the evaluation data: documents a and b of every
    line, text = title + newline + text (the truth's definition)."""
    opener = gzip.open if path.endswith(".gz") else open
    ids: List[str] = []
    texts: List[str] = []
    designed = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            for side in ("a", "b"):
                d = rec[side]
                ids.append(d["id"])
                texts.append((d.get("title") or "") + "\n" + d["text"])
            designed.append((len(ids) - 2, len(ids) - 1))
    return ids, texts, designed


def synthetic_set_labels(path: str) -> Tuple[List[str], List[str]]:
    """What :func:`load_synthetic_set` cannot keep in its three lists: the recipe of each
    designed pair (``light``, ``heavy``, ``script`` ...) and the language of each document
    (``zh-CN``, ``zh-TW`` ...), in the same order; for ``--breakdown``."""
    opener = gzip.open if path.endswith(".gz") else open
    recipes: List[str] = []
    langs: List[str] = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            recipes.append(rec.get("recipe") or "designed")
            langs += [rec["a"].get("lang") or "", rec["b"].get("lang") or ""]
    return recipes, langs


def generated_corpus(docs: int, seed: int = 1) -> Tuple[List[str], List[str], List[Tuple[int, int]]]:
    """``docs`` documents of :mod:`tantivy_simhash.dask_bench`'s generator; the designed pairs
    are the documents made from one base text (copies, and the one original if any)."""
    import numpy as np

    from .dask_bench import synthetic_text

    ids = [f"d{i}" for i in range(docs)]
    texts = [synthetic_text(seed, i, docs) for i in range(docs)]
    # The generator's choice of base for each document, replayed (see synthetic_text).
    shared = max(1, int(docs * 5.0 / 100))
    by_base: Dict[int, List[int]] = {}
    for i in range(docs):
        rng = np.random.default_rng([seed, 1, i])
        if rng.random() < 0.2:
            by_base.setdefault(int(rng.integers(0, shared)), []).append(i)
    designed = []
    for members in by_base.values():
        for x in range(len(members)):
            for y in range(x + 1, len(members)):
                designed.append((members[x], members[y]))
    return ids, texts, designed


# ---------------------------------------------------------------------------------------------
# Tools, each run in a child process: read the JSON-lines file, write pairs and clusters as
# JSON lines of document numbers (line numbers of the input).


def _read_docs(path: str) -> List[str]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def _union_find_clusters(n: int, pairs: Iterable[Tuple[int, int]]) -> List[List[int]]:
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: Dict[int, List[int]] = {}
    for x in range(n):
        groups.setdefault(find(x), []).append(x)
    return [g for g in groups.values() if len(g) > 1]


def _run_tantivy_simhash(path: str, out: str, min_resemblance: Optional[float] = None,
                         fold_scripts: bool = True) -> None:
    import numpy as np

    from . import Rule

    texts = _read_docs(path)
    rule = Rule(fold_scripts=fold_scripts)
    fps, sketches = rule.sign_many(texts)
    columns, _stats = rule.pairs_in_memory(fps, sketches, 0, min_resemblance=min_resemblance)
    a = np.frombuffer(columns[0], "<u8").tolist()
    b = np.frombuffer(columns[1], "<u8").tolist()
    pairs = list(zip(a, b))
    # Why each pair matched, for --breakdown: distance, the sketches' estimate, band (-1: simhash).
    evidence = list(
        zip(
            np.frombuffer(columns[2], "<u4").tolist(),
            np.frombuffer(columns[3], "<f4").tolist(),
            np.frombuffer(columns[4], "<i4").tolist(),
        )
    )
    _write_result(out, pairs, _union_find_clusters(len(texts), pairs), evidence)


def _run_rensa(path: str, out: str) -> None:
    from rensa import RMinHash, RMinHashLSH

    texts = _read_docs(path)
    word = re.compile(r"\w+")
    lsh = RMinHashLSH(0.8, 128, 16)
    hashes = []
    # Shingled a chunk at a time: the shingle strings of a whole corpus held at once cost ~20 KB
    # a document (the program's memory, not rensa's); the sketches stay, as rensa's LSH needs.
    chunk = 10_000
    for start in range(0, len(texts), chunk):
        token_sets = []
        for t in texts[start : start + chunk]:
            w = word.findall(t.lower())
            token_sets.append([" ".join(w[i : i + 3]) for i in range(max(1, len(w) - 2))] if w else [])
        for m in RMinHash.from_token_sets(token_sets, 128, 42):
            lsh.insert(len(hashes), m)
            hashes.append(m)
    pairs = []
    for i, m in enumerate(hashes):
        for j in lsh.query(m):
            if j > i and m.jaccard(hashes[j]) >= 0.8:
                pairs.append((i, int(j)))
    _write_result(out, pairs, _union_find_clusters(len(texts), pairs))


def _run_datatrove(path: str, out: str) -> None:
    import struct

    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup import MinhashDedupBuckets, MinhashDedupCluster, MinhashDedupFilter, MinhashDedupSignature
    from datatrove.pipeline.dedup.minhash import MinhashConfig
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter

    work = tempfile.mkdtemp(prefix="datatrove-", dir=os.path.dirname(out))
    config = MinhashConfig()
    inputs = os.path.dirname(path)
    reader = lambda: JsonlReader(inputs, glob_pattern=os.path.basename(path), id_key="id", text_key="text")  # noqa: E731
    stages = [
        [reader(), MinhashDedupSignature(output_folder=f"{work}/signatures", config=config)],
        [MinhashDedupBuckets(input_folder=f"{work}/signatures", output_folder=f"{work}/buckets", config=config)],
        [MinhashDedupCluster(input_folder=f"{work}/buckets", output_folder=f"{work}/remove_ids", config=config,
                             save_cluster_id=True)],
        [reader(), MinhashDedupFilter(input_folder=f"{work}/remove_ids"), JsonlWriter(f"{work}/deduplicated")],
    ]
    tasks = [1, config.num_buckets, 1, 1]
    previous = None
    for n, (pipeline, t) in enumerate(zip(stages, tasks)):
        executor = LocalPipelineExecutor(pipeline=pipeline, tasks=t, workers=1, logging_dir=f"{work}/logs/{n}",
                                         depends=previous)
        previous = executor
    previous.run()
    pairs = []
    for name in sorted(os.listdir(f"{work}/buckets")):
        if name.endswith(".dups"):
            with open(f"{work}/buckets/{name}", "rb") as f:
                data = f.read()
            for f1, d1, f2, d2 in struct.iter_unpack("<4I", data):
                pairs.append((min(d1, d2), max(d1, d2)))
    clusters: Dict[int, List[int]] = {}
    path_ids = f"{work}/remove_ids/000000.clusters"
    if os.path.exists(path_ids):
        with open(path_ids, "rb") as f:
            for doc, cluster in struct.iter_unpack("<2I", f.read()):
                clusters.setdefault(cluster, []).append(doc)
    _write_result(out, sorted(set(pairs)), [g for g in clusters.values() if len(g) > 1])


def _write_result(out: str, pairs, clusters, evidence=None) -> None:
    result = {"pairs": [list(map(int, p)) for p in pairs], "clusters": clusters}
    if evidence is not None:
        result["evidence"] = [list(e) for e in evidence]
    with open(out, "w") as f:
        json.dump(result, f)


_RUNNERS = {"tantivy-simhash": _run_tantivy_simhash, "datatrove": _run_datatrove, "rensa": _run_rensa}


def _available(tool: str, python: str) -> Optional[str]:
    """None when ``tool`` can run under ``python``, else why not."""
    module = {"tantivy-simhash": "tantivy_simhash", "datatrove": "datatrove", "rensa": "rensa"}[tool]
    probe = subprocess.run([python, "-c", f"import {module}"], capture_output=True, text=True)
    return None if probe.returncode == 0 else f"{module} is not installed for {python}"


def _own_peak_rss_mib() -> float:
    """This process's peak resident memory and that of the processes it waited for. Not the
    ``ru_maxrss`` its parent sees: Linux carries a parent's peak into a forked child, so a child of
    the (large) bench would report at least the bench's size."""
    import resource

    peak_kib = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                peak_kib = int(line.split()[1])
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(peak_kib, children) / 1024.0


def run_tool(tool: str, python: str, docs_path: str, out: str, min_resemblance: Optional[float] = None,
             fold_scripts: bool = True) -> Dict[str, float]:
    """Runs ``tool`` in a child process; returns wall seconds, CPU seconds and peak RSS (MiB).
    ``min_resemblance``: tantivy-simhash's opt-in (``Rule.pairs_in_memory``); ``fold_scripts``:
    its ``Rule(fold_scripts=...)``."""
    # One core each: the numeric libraries' thread pools held to one thread.
    env = dict(os.environ, OMP_NUM_THREADS="1", RAYON_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if tool == "tantivy-simhash":
        argv = [python, "-m", "tantivy_simhash.peer_bench", "--child", tool, docs_path, out]
        argv += ["-" if min_resemblance is None else str(min_resemblance),
                 "fold" if fold_scripts else "as-written"]
    else:
        # The peers' Python need not have this package: the file runs as a script.
        argv = [python, os.path.abspath(__file__), "--child", tool, docs_path, out]
    t = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t
    stderr = child.stderr.read() if child.stderr else ""
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"{tool} failed (exit {child.returncode}): {stderr[-2000:]}")
    with open(out + ".rss") as f:
        peak = float(f.read())
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_mib": peak}


# ---------------------------------------------------------------------------------------------
# Scoring


class Truth:
    """Exact resemblance of pairs of one corpus, computed on demand and kept."""

    def __init__(self, texts: Sequence[str]):
        self.texts = texts
        self._sets: Dict[int, Set[int]] = {}
        self._pairs: Dict[Tuple[int, int], float] = {}

    def sets(self, i: int) -> Set[int]:
        s = self._sets.get(i)
        if s is None:
            s = self._sets[i] = shingles(self.texts[i])
        return s

    def resemblance(self, a: int, b: int) -> float:
        key = (min(a, b), max(a, b))
        r = self._pairs.get(key)
        if r is None:
            r = self._pairs[key] = jaccard(self.sets(key[0]), self.sets(key[1]))
        return r


def score(truth: Truth, positives: Set[Tuple[int, int]], pairs: Set[Tuple[int, int]]) -> Dict[str, float]:
    tp = sum(1 for p in pairs if truth.resemblance(*p) >= 0.8)
    fp = sum(1 for p in pairs if truth.resemblance(*p) < 0.5)
    found = len(positives & pairs)
    return {
        "pairs": len(pairs),
        "precision": tp / (tp + fp) if tp + fp else float("nan"),
        "false_positives": fp,
        "recall": found / len(positives) if positives else float("nan"),
    }


def score_clusters(truth: Truth, positives: Set[Tuple[int, int]], clusters: List[List[int]], sample: int,
                   rng: random.Random) -> Dict[str, float]:
    label = {}
    for c, members in enumerate(clusters):
        for m in members:
            label[m] = c
    found = sum(1 for a, b in positives if a in label and label.get(a) == label.get(b))
    sizes = [len(c) for c in clusters]
    total = sum(s * (s - 1) // 2 for s in sizes)
    tp = fp = 0
    if total:
        if total <= sample:
            drawn = [(c[i], c[j]) for c in clusters for i in range(len(c)) for j in range(i + 1, len(c))]
        else:
            weights = [s * (s - 1) / 2 for s in sizes]
            drawn = []
            for c in rng.choices(clusters, weights=weights, k=sample):
                i, j = rng.sample(range(len(c)), 2)
                drawn.append((c[i], c[j]))
        for a, b in drawn:
            r = truth.resemblance(a, b)
            tp += r >= 0.8
            fp += r < 0.5
    return {
        "cluster_pairs": total,
        "cluster_precision": tp / (tp + fp) if tp + fp else float("nan"),
        "cluster_recall": found / len(positives) if positives else float("nan"),
    }


# ---------------------------------------------------------------------------------------------
# --breakdown: why tantivy-simhash reports the pairs the truth calls false positives

CAUSES = {
    "chrome": "the rule's shingles >= 0.5 with site chrome left out",
    "view": "the rule's shingles >= 0.5, no chrome (script folding, the scheme's tokens)",
    "estimate": "the rule's shingles < 0.5, the band branch's estimate >= its threshold",
    "simhash": "the rule's shingles < 0.5, simhash within k (a cosine of weighted tokens)",
}


def _median(values: List[float]) -> float:
    v = sorted(values)
    return float("nan") if not v else (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2


def breakdown(
    texts: Sequence[str],
    truth: "Truth",
    result: Dict,
    labels: Dict[Tuple[int, int], str],
    langs: Optional[Sequence[str]],
    work: str,
) -> List[Dict]:
    """The pairs of one tantivy-simhash result whose exact resemblance is under 0.5, each
    explained by :meth:`Index.explain_texts` (the rule's own shingles: the scheme's tokens, Han
    characters one unit each, Traditional folded to Simplified, site chrome left out; and the
    sketches' estimate), grouped by the rule's branch (``band`` -1 in the evidence: simhash) and
    by cause (:data:`CAUSES`). Each group says how many pairs it holds, the medians of the raw
    resemblance, of the rule-shingle resemblance, of the estimate and of the distance, the
    shorter document's rule shingles (median and 10th percentile), and what the pairs are
    (``labels``: each designed pair's recipe; other pairs are "not designed", with both
    documents' languages when ``langs`` is given and they differ)."""
    from . import Index

    groups: Dict[Tuple[str, str], List[Dict]] = {}
    index_dir = tempfile.mkdtemp(prefix="explain-", dir=work)
    with Index.create(os.path.join(index_dir, "index")) as index:
        for (a, b), (distance, estimate, band) in zip(result["pairs"], result["evidence"]):
            raw = truth.resemblance(a, b)
            if raw >= 0.5:
                continue
            e = index.explain_texts(texts[a], texts[b])
            view = e["shingles"]["resemblance"]
            chrome = any(e["chrome"][0]) or any(e["chrome"][1])
            branch = "simhash" if band < 0 else "band"
            if view >= 0.5:
                cause = "chrome" if chrome else "view"
            else:
                cause = "simhash" if branch == "simhash" else "estimate"
            label = labels.get((min(a, b), max(a, b)))
            if label is None:
                label = "not designed"
                if langs and langs[a] != langs[b]:
                    label += f" ({'/'.join(sorted((langs[a], langs[b])))})"
            groups.setdefault((branch, cause), []).append(
                {
                    "raw": raw,
                    "view": view,
                    "estimate": estimate,
                    "distance": distance,
                    "shingles": min(e["shingles"]["shingles"]),
                    "label": label,
                }
            )
    rows = []
    for (branch, cause), members in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        shingle_counts = sorted(m["shingles"] for m in members)
        by_label: Dict[str, int] = {}
        for m in members:
            by_label[m["label"]] = by_label.get(m["label"], 0) + 1
        rows.append(
            {
                "branch": branch,
                "cause": cause,
                "pairs": len(members),
                "raw": _median([m["raw"] for m in members]),
                "rule_shingles": _median([m["view"] for m in members]),
                "estimate": _median([m["estimate"] for m in members]),
                "distance": _median([m["distance"] for m in members]),
                "shorter_shingles": _median(shingle_counts),
                "shorter_shingles_p10": shingle_counts[len(shingle_counts) // 10],
                "labels": ", ".join(f"{k} {v}" for k, v in sorted(by_label.items(), key=lambda kv: -kv[1])),
            }
        )
    return rows


def _print_table(columns: List[str], rows: List[Dict]) -> None:
    table = [columns] + [[_fmt(r[c]) for c in columns] for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(columns))]
    for line in table:
        print("  ".join(v.rjust(w) for v, w in zip(line, widths)))


def _fmt(v) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else (f"{v:.3f}" if abs(v) < 10 else f"{v:,.0f}")
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        tool, docs_path, out = argv[1:4]
        if tool == "tantivy-simhash" and argv[4:]:
            minimum = None if argv[4] == "-" else float(argv[4])
            _RUNNERS[tool](docs_path, out, minimum, argv[5:6] != ["as-written"])
        else:
            _RUNNERS[tool](docs_path, out)
        with open(out + ".rss", "w") as f:
            f.write(str(_own_peak_rss_mib()))
        return 0
    p = argparse.ArgumentParser(prog="python -m tantivy_simhash.peer_bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=None, help="the evaluation data folder (with synthetic-en.jsonl.gz ...)")
    p.add_argument("--sets", default="synthetic-en,synthetic-zh", help="sets of --data to run (comma-separated)")
    p.add_argument("--synthetic", type=int, default=0, help="also N documents of dask_bench's generator (0: none)")
    p.add_argument("--limit", type=int, default=0, help="first N lines of each set only (smoke runs)")
    p.add_argument("--tools", default=",".join(TOOLS), help="tools to run (comma-separated)")
    p.add_argument("--peer-python", default=sys.executable,
                   help="the Python that has datatrove and rensa (default this one)")
    p.add_argument("--cluster-sample", type=int, default=100_000, help="cluster pairs measured for precision")
    p.add_argument("--json", action="store_true", help="print the rows as JSON lines too")
    p.add_argument("--min-resemblance", type=float, default=None, metavar="T",
                   help="also a tantivy-simhash row with Rule.pairs_in_memory's opt-in min_resemblance=T "
                        "(every pair's sketch estimate >= T, whichever branch matched it)")
    p.add_argument("--scripts-as-written", action="store_true",
                   help="also a tantivy-simhash row with Rule(fold_scripts=False) (and --min-resemblance's "
                        "opt-in when given): Traditional Chinese not folded to Simplified, as the data's "
                        "resemblance does not fold it")
    p.add_argument("--breakdown", action="store_true",
                   help="explain tantivy-simhash's false positives (resemblance < 0.5): branch, cause, sizes")
    args = p.parse_args(argv)
    if args.min_resemblance is not None and not 0.0 <= args.min_resemblance <= 1.0:
        p.error(f"--min-resemblance {args.min_resemblance}: expected a number in 0..1")

    corpora = []
    if args.data:
        for name in filter(None, args.sets.split(",")):
            path = os.path.join(args.data, f"{name}.jsonl.gz")
            if not os.path.exists(path):
                path = os.path.join(args.data, f"{name}.jsonl")
            ids, texts, designed = load_synthetic_set(path)
            recipes, langs = synthetic_set_labels(path)
            if args.limit:
                ids, texts, designed = ids[: 2 * args.limit], texts[: 2 * args.limit], designed[: args.limit]
            corpora.append((name, ids, texts, designed, dict(zip(designed, recipes)), langs))
    if args.synthetic:
        ids, texts, designed = generated_corpus(args.synthetic)
        corpora.append((f"generated-{args.synthetic}", ids, texts, designed,
                        {p: "same base text" for p in designed}, None))
    if not corpora:
        p.error("nothing to run: give --data and/or --synthetic N")

    tools = [t for t in args.tools.split(",") if t]
    for t in tools:
        if t not in TOOLS:
            p.error(f"unknown tool {t!r}; expected some of {', '.join(TOOLS)}")
    # (label, tool, tantivy-simhash's min_resemblance, its fold_scripts)
    runs = [(t, t, None, True) for t in tools]
    if "tantivy-simhash" in tools:
        at = runs.index(("tantivy-simhash", "tantivy-simhash", None, True)) + 1
        m = args.min_resemblance
        label = "tantivy-simhash" if m is None else f"tantivy-simhash >= {m:g}"
        if m is not None:
            runs.insert(at, (label, "tantivy-simhash", m, True))
            at += 1
        if args.scripts_as_written:
            runs.insert(at, (f"{label}, scripts as written", "tantivy-simhash", m, False))
    rows = []
    explained = []
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="peer-bench-") as work:
        for name, ids, texts, designed, labels, langs in corpora:
            docs_path = os.path.join(work, name, "docs.jsonl")
            os.makedirs(os.path.dirname(docs_path))
            with open(docs_path, "w", encoding="utf-8") as f:
                for i, t in zip(ids, texts):
                    f.write(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n")
            truth = Truth(texts)
            results = {}
            for n, (label, tool, threshold, fold_scripts) in enumerate(runs):
                python = sys.executable if tool == "tantivy-simhash" else args.peer_python
                why = _available(tool, python)
                if why:
                    print(f"# {name}: {tool} skipped: {why}", file=sys.stderr)
                    continue
                out = os.path.join(work, name, f"{n}-{tool}.json")
                figures = run_tool(tool, python, docs_path, out, threshold, fold_scripts)
                with open(out) as f:
                    results[label] = (figures, json.load(f))
            positives = {p for p in designed if truth.resemblance(*p) >= 0.8}
            for _, (_, res) in results.items():
                positives |= {tuple(p) for p in res["pairs"] if truth.resemblance(*p) >= 0.8}
            for tool, (figures, res) in results.items():
                pairs = {tuple(p) for p in res["pairs"]}
                row = {"corpus": name, "docs": len(texts), "tool": tool,
                       "docs_per_s_per_core": len(texts) / figures["wall_s"],
                       "docs_per_cpu_s": len(texts) / max(figures["cpu_s"], 1e-9),
                       "wall_s": figures["wall_s"], "cpu_s": figures["cpu_s"],
                       "peak_rss_mib": figures["peak_rss_mib"], "truth_pairs": len(positives)}
                row.update(score(truth, positives, pairs))
                row.update(score_clusters(truth, positives, res["clusters"], args.cluster_sample, rng))
                rows.append(row)
                if args.breakdown and "evidence" in res:
                    for b in breakdown(texts, truth, res, labels, langs, work):
                        explained.append({"corpus": name, "tool": tool, **b})
    columns = ["corpus", "docs", "tool", "docs_per_s_per_core", "docs_per_cpu_s", "wall_s", "cpu_s", "peak_rss_mib", "truth_pairs",
               "pairs", "precision", "false_positives", "recall", "cluster_pairs", "cluster_precision",
               "cluster_recall"]
    _print_table(columns, rows)
    if args.breakdown:
        print("# tantivy-simhash's false positives (resemblance < 0.5) by branch and cause:")
        for cause, what in CAUSES.items():
            print(f"#   {cause}: {what}")
        _print_table(["corpus", "tool", "branch", "cause", "pairs", "raw", "rule_shingles", "estimate", "distance",
                      "shorter_shingles", "shorter_shingles_p10", "labels"], explained)
    print(f"# load average (1 min) at the end: {os.getloadavg()[0]:.1f}; cpus: {os.cpu_count()}")
    if args.json:
        for r in rows:
            print(json.dumps(r))
        for r in explained:
            print(json.dumps({"breakdown": True, **r}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
