"""An index written from Python is the index the `neardup` command line (and so the Rust
library under it) opens, and the other way round: same documents, same answers."""

import json

import pytest

from conftest import CORPUS, json_lines, run_cli
from tantivy_simhash import Index


def cli_pairs(neardup, path, k=3):
    """The command line's pairs as (a, b, distance, resemblance rounded to 5 places)."""
    out = run_cli(neardup, "pairs", str(path), "-k", str(k), "--json").stdout
    return {(p["a"], p["b"], p["distance"], rounded(p.get("resemblance"))) for p in json_lines(out)}


def rounded(resemblance):
    return None if resemblance is None else round(resemblance, 5)


def py_pairs(index, k=None):
    """The binding's pairs in the form of `cli_pairs` (a float32 estimate printed two ways)."""
    return {(a, b, d, rounded(r)) for a, b, d, r in index.pairs(k=k)}


def cli_clusters(neardup, path):
    out = run_cli(neardup, "clusters", str(path), "-n", "0", "--json").stdout
    return [(c["cluster"], c["members"]) for c in json_lines(out)]


def test_python_reads_what_the_command_line_wrote(neardup, cli_index, corpus):
    with Index.open(cli_index) as index:
        assert len(index) == len(corpus)
        assert (index.language, index.k, index.policy) == ("auto", 3, "tag")
        for k in (1, 3):
            assert py_pairs(index, k) == cli_pairs(neardup, cli_index, k)
        assert [(c.id, c.members) for c in index.clusters()] == cli_clusters(neardup, cli_index)
        for query in ["google cloud client library", "licence OR license", "软件"]:
            cli = json_lines(run_cli(neardup, "search", str(cli_index), query, "-n", "7", "--json").stdout)
            hits = index.search(query, limit=7)
            assert [(h.id, h.group_size, h.group_size_exact) for h in hits] == [
                (c["id"], c["group_size"], c["group_size_exact"]) for c in cli
            ]
            assert [[m.id for m in h.members] for h in hits] == [[m["id"] for m in c["members"]] for c in cli]
        for doc in corpus[::151]:
            cli = json_lines(run_cli(neardup, "similar", str(cli_index), "--id", doc["id"], "--json").stdout)
            found = index.similar(id=doc["id"])
            assert [(m.id, m.distance, format(m.fingerprint, "016x")) for m in found] == [
                (c["id"], c["distance"], c["fingerprint"]) for c in cli
            ]
        cli_mirrors = json_lines(run_cli(neardup, "mirrors", str(cli_index), "-n", "0", "--json").stdout)
        assert index.mirrors() == cli_mirrors


def test_the_command_line_reads_what_python_wrote(neardup, py_index_path):
    stats = json_lines(run_cli(neardup, "stats", str(py_index_path), "--json").stdout)[0]
    with Index.open(py_index_path) as index:
        assert stats["documents"] == len(index)
        assert stats["segments"] >= 2
        assert stats["language"] == index.language and stats["k"] == index.k
        assert cli_pairs(neardup, py_index_path) == py_pairs(index)
        assert cli_clusters(neardup, py_index_path) == [(c.id, c.members) for c in index.clusters()]


def test_both_write_into_one_index(neardup, corpus, tmp_path):
    """Python creates, the command line appends (skipping the ids Python added), Python appends."""
    path = tmp_path / "idx"
    first = corpus[:1000]
    with Index.create(path, language="auto", k=3, policy="reject") as index, index.writer() as w:
        python_summary = w.add_many(first)
    out = run_cli(neardup, "index", str(CORPUS), "--index", str(path), "-q", "--json").stdout
    summary = [line for line in json_lines(out) if line.get("event") == "summary"][0]
    # The command line skips the ids in the index (Python's rejected documents are new to it).
    assert summary["skipped_existing_id"] == python_summary.added
    with Index.open(path) as index:
        assert index.policy == "reject"
        assert len(index) == python_summary.added + summary["added"]
        with index.writer() as w:
            assert w.add(corpus[0]).status == "skipped"
            assert w.add({"id": "python-new", "text": "a text nobody wrote before, about owls"}).added
        # Rejected within k: no pair is left within it.
        left = py_pairs(index)
        assert cli_pairs(neardup, path) == left
        assert all(d > index.k and r is not None for _, _, d, r in left)
    found = json_lines(run_cli(neardup, "similar", str(path), "--text", "a text nobody wrote before, about owls", "--json").stdout)
    assert [f["id"] for f in found] == ["python-new"]


def test_a_field_mapping_recorded_by_the_command_line_is_python_s_default(neardup, tmp_path):
    src = tmp_path / "docs.jsonl"
    src.write_text(json.dumps({"url": "u1", "body": "one text about rivers and boats"}) + "\n")
    path = tmp_path / "idx"
    run_cli(neardup, "index", str(src), "--index", str(path), "--id-field", "url", "--text-field", "body", "-q")
    with Index.open(path) as index, index.writer() as w:
        assert w.add({"url": "u2", "body": "another text about mountains"}).added
    assert len(Index.open(path)) == 2
