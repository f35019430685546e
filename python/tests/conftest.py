"""Shared fixtures: the demo corpus, the `neardup` binary built by cargo, and indexes of the
corpus made by the command line and by Python."""

import gzip
import json
import os
import subprocess
from pathlib import Path

import pytest

from tantivy_simhash import Index

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "demo" / "corpus.jsonl.gz"


def popcount(x: int) -> int:
    return bin(x).count("1")


def document_text(doc: dict) -> str:
    """The text an index fingerprints: the title and the text, joined by a line break."""
    return doc["title"] + "\n" + doc["text"] if doc.get("title") else doc["text"]


def brute_force_pairs(fingerprints: dict, k: int) -> set:
    """Every (id_a, id_b, distance) with id_a < id_b and distance <= k: the independent oracle."""
    items = sorted(fingerprints.items())
    pairs = set()
    for i, (a, fa) in enumerate(items):
        for b, fb in items[i + 1 :]:
            d = popcount(fa ^ fb)
            if d <= k:
                pairs.add((a, b, d))
    return pairs


def components(ids, pairs) -> list:
    """Connected components of at least two ids (union-find), each a sorted list."""
    parent = {i: i for i in ids}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b, *_ in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups = {}
    for i in ids:
        groups.setdefault(find(i), []).append(i)
    return sorted(sorted(g) for g in groups.values() if len(g) >= 2)


def leader_clusters(ids, pairs) -> list:
    """Brute-force leader clustering: in the order of ``ids``, each joins the first earlier
    leader it is paired with, else leads. Returns (leader, members in input order) lists."""
    paired = {frozenset((a, b)) for a, b, *_ in pairs}
    leaders = []
    for i in ids:
        for leader, members in leaders:
            if frozenset((leader, i)) in paired:
                members.append(i)
                break
        else:
            leaders.append((i, [i]))
    return sorted((leader, members) for leader, members in leaders if len(members) >= 2)


@pytest.fixture(scope="session")
def neardup() -> str:
    """The `neardup` binary: $NEARDUP, else the one `cargo test --release` builds (found up to
    date after the README's test command; built otherwise), so no second build of tantivy."""
    if os.environ.get("NEARDUP"):
        return os.environ["NEARDUP"]
    out = subprocess.run(
        ["cargo", "test", "--release", "--no-run", "--message-format=json"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") != "compiler-artifact" or msg["target"]["name"] != "neardup":
            continue
        if msg["target"]["kind"] == ["bin"] and not msg["profile"]["test"]:
            return msg["executable"]
    raise RuntimeError("cargo built no neardup executable")


def run_cli(neardup: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([neardup, *args], check=True, capture_output=True, text=True)


def json_lines(text: str) -> list:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="session")
def corpus() -> list:
    """The demo corpus: 2,224 English and Chinese documents with natural near-duplicates and a
    small web of mirror sites (fields id, text, host)."""
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="session")
def cli_index(neardup, tmp_path_factory) -> Path:
    """The corpus indexed by `neardup index` (policy tag: every document stored)."""
    path = tmp_path_factory.mktemp("cli") / "idx"
    run_cli(neardup, "index", str(CORPUS), "--index", str(path), "-q")
    return path


@pytest.fixture(scope="session")
def py_index_path(corpus, tmp_path_factory) -> Path:
    """The corpus indexed from Python (policy tag, committed in two parts: two segments)."""
    path = tmp_path_factory.mktemp("py") / "idx"
    index = Index.create(path)
    half = len(corpus) // 2
    with index.writer() as w:
        w.add_many(corpus[:half])
    with index.writer() as w:
        w.add_many(corpus[half:])
    index.close()
    return path
