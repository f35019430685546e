"""tantivy_simhash.dask on a local cluster of two worker processes: the same pairs as a brute
force of the rule (exact join) and as the single-machine join (with hot keys bounded), the same
clusters as an independent union-find, and the Parquet output that says so."""

import gzip
import json
from collections import Counter

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from distributed import Client, LocalCluster

from conftest import CORPUS, components, document_text, leader_clusters
from tantivy_simhash import Rule
from tantivy_simhash import dask as tsd
from tantivy_simhash.dask_bench import synthetic_partition

PARTITIONS = 5


@pytest.fixture(scope="module")
def client():
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def mixed_corpus() -> pd.DataFrame:
    """The demo corpus (2,224 pages with real near-duplicates), exact copies of some of them
    under other ids, texts without tokens, and synthetic edited copies."""
    docs = [json.loads(line) for line in gzip.open(CORPUS, "rt", encoding="utf-8")]
    rows = [(d["id"], document_text(d)) for d in docs]
    rows += [(f"copy-{i}", rows[i][1]) for i in range(0, 300, 37)]
    rows += [("empty-1", ""), ("empty-2", ""), ("punct", "... !!! ???"), ("one-word", "word")]
    synth = synthetic_partition(3, 0, 400, 400, 0.5, 4.0)
    rows += list(zip(synth["id"], synth["text"]))
    return pd.DataFrame(rows, columns=["id", "text"])


@pytest.fixture(scope="module")
def oracle(mixed_corpus):
    """``oracle(key_bits)``: the rule of that band key width, the signatures of the corpus, and
    every (i, j) -> (distance, band) with i < j that the rule matches (a brute force)."""
    cache = {}

    def of(key_bits):
        if key_bits not in cache:
            rule = Rule(key_bits=key_bits)
            sigs = [rule.sign(t) for t in mixed_corpus["text"]]
            out = {}
            for i, a in enumerate(sigs):
                for j in range(i + 1, len(sigs)):
                    e = rule.matches(a, sigs[j])
                    if e is not None:
                        out[(i, j)] = (e.distance, -1 if e.band is None else e.band)
            cache[key_bits] = (rule, sigs, out)
        return cache[key_bits]

    return of


@pytest.fixture(scope="module")
def signed(oracle):
    """The pipeline's default rule and the corpus's signatures under it."""
    return oracle(tsd.DEFAULT_KEY_BITS)[:2]


@pytest.fixture(scope="module")
def brute_force(oracle):
    """Every pair the pipeline's default rule matches (the oracle)."""
    return oracle(tsd.DEFAULT_KEY_BITS)[2]


def as_dask(corpus: pd.DataFrame) -> dd.DataFrame:
    return dd.from_pandas(corpus, npartitions=PARTITIONS, sort=False)


def input_index(docs: dd.DataFrame):
    """row (partition << 32 | position) -> position in the input."""
    lengths = docs.map_partitions(len).compute().tolist()
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    return lambda row: int(starts[int(row) >> 32] + (int(row) & 0xFFFFFFFF))


def pairs_by_index(pairs: pd.DataFrame, index) -> dict:
    out = {}
    for a, b, d, band in zip(pairs["row_a"], pairs["row_b"], pairs["distance"], pairs["band"]):
        key = (index(a), index(b))
        assert key not in out, f"pair {key} reported twice"
        out[key] = (int(d), int(band))
    return out


@pytest.mark.parametrize("key_bits", [None, 20])
def test_the_exact_pipeline_finds_the_brute_force_pairs(client, mixed_corpus, oracle, key_bits):
    """Under the pipeline's default rule (32-bit band keys: the band's number travels in the
    position word) and the index's (20-bit: packed into the group key)."""
    docs = as_dask(mixed_corpus)
    if key_bits is None:
        pairs = tsd.find_pairs(docs, max_postings_per_key=None).compute()
        brute_force = oracle(tsd.DEFAULT_KEY_BITS)[2]
    else:
        pairs = tsd.find_pairs(docs, key_bits=key_bits, max_postings_per_key=None).compute()
        brute_force = oracle(key_bits)[2]
    found = pairs_by_index(pairs, input_index(docs))
    assert len(brute_force) > 10_000
    assert found == brute_force
    # Both branches of the rule and exact copies are exercised.
    kinds = set(band >= 0 for _, band in brute_force.values())
    assert kinds == {True, False}
    assert sum(1 for d, _ in brute_force.values() if d == 0) > 0


def test_the_bounded_pipeline_equals_the_single_machine_join(client, mixed_corpus, signed):
    rule, sigs = signed
    fps = np.array([s.fingerprint for s in sigs], dtype="<u8").tobytes()
    sketches = b"".join(s.sketch for s in sigs)
    docs = as_dask(mixed_corpus)
    index = input_index(docs)
    for cap in (2, 5):
        columns, stats = rule.pairs_in_memory(fps, sketches, cap)
        a, b = np.frombuffer(columns[0], "<u8"), np.frombuffer(columns[1], "<u8")
        band = np.frombuffer(columns[4], "<i4")
        distance = np.frombuffer(columns[2], "<u4")
        expected = {(int(x), int(y)): (int(d), int(k)) for x, y, d, k in zip(a, b, distance, band)}
        assert stats["hot_keys"] > 0, "the bound must bite for this test to mean something"
        pairs, hot = tsd._find_pairs(docs, "id", "text", ("auto", rule.key_bits, True), cap, None, None, None)
        assert hot == stats["hot_keys"]
        assert pairs_by_index(pairs.compute(), index) == expected


def test_deduplicate_writes_the_pairs_and_the_clusters_as_parquet(client, mixed_corpus, brute_force, tmp_path):
    ids = mixed_corpus["id"].tolist()
    summary = tsd.deduplicate(as_dask(mixed_corpus), str(tmp_path), max_postings_per_key=None, mode="components")
    pairs = pq.read_table(tmp_path / "pairs").to_pandas()
    clusters = pq.read_table(tmp_path / "clusters").to_pandas()

    expected_pairs = {(ids[i], ids[j]): v for (i, j), v in brute_force.items()}
    found = {(a, b): (int(d), int(k)) for a, b, d, k in zip(pairs.id_a, pairs.id_b, pairs.distance, pairs.band)}
    assert found == expected_pairs
    assert len(pairs) == len(expected_pairs)
    assert ((pairs.resemblance >= 0) & (pairs.resemblance <= 1)).all()
    assert (pairs.resemblance[pairs.band >= 0] >= 0.55).all()

    # Clusters: an independent union-find over the brute-force pairs; a cluster is named by its
    # first document in input order, a document alone by itself.
    position = {i: n for n, i in enumerate(ids)}
    expected = {i: i for i in ids}
    groups = components(ids, [(a, b, d) for (a, b), (d, _) in expected_pairs.items()])
    for group in groups:
        first = min(group, key=position.get)
        for member in group:
            expected[member] = first
    assert len(clusters) == len(ids)
    assert dict(zip(clusters.id, clusters.cluster)) == expected
    assert summary["documents"] == len(ids)
    assert summary["pairs"] == len(expected_pairs)
    assert summary["clusters"] == len(groups)
    assert summary["clustered"] == sum(len(g) for g in groups)


def test_deduplicate_by_leader_equals_leader_clustering_of_the_brute_force_pairs(client, mixed_corpus, brute_force, tmp_path):
    """The default mode: in input order each document joins the first earlier leader it is
    paired with (brute force over the oracle's pairs), else leads; a document alone names
    itself."""
    ids = mixed_corpus["id"].tolist()
    summary = tsd.deduplicate(as_dask(mixed_corpus), str(tmp_path), max_postings_per_key=None)
    clusters = pq.read_table(tmp_path / "clusters").to_pandas()
    oracle = leader_clusters(ids, [(ids[i], ids[j]) for i, j in brute_force])
    expected = {i: i for i in ids}
    for leader, members in oracle:
        for member in members:
            expected[member] = leader
    assert dict(zip(clusters.id, clusters.cluster)) == expected
    assert summary["clusters"] == len(oracle) > 100
    assert summary["clustered"] == sum(len(m) for _, m in oracle)
    # Leaders do not chain: every leader cluster lies within one connected component, and the
    # two partitions differ on this corpus.
    groups = components(ids, [(ids[i], ids[j], 0) for i, j in brute_force])
    group_of = {m: n for n, g in enumerate(groups) for m in g}
    assert all(len({group_of[m] for m in members}) == 1 for _, members in oracle)
    assert sorted(groups) != sorted(sorted(members) for _, members in oracle)
    with pytest.raises(ValueError, match="components"):
        tsd.deduplicate(as_dask(mixed_corpus), str(tmp_path / "x"), mode="chains")
    # Texts without tokens have only their 4 simhash block keys.
    empty = sum(1 for t in mixed_corpus.text if Rule().sign(t).keys.__len__() == 4)
    assert empty >= 2
    assert summary["postings"] == 16 * len(ids) - 12 * empty


def test_bad_input_is_refused_with_the_reason(client, mixed_corpus):
    docs = as_dask(mixed_corpus)
    with pytest.raises(KeyError, match="column 'body' not in the documents"):
        tsd.signatures(docs, text="body")
    with pytest.raises(ValueError, match="klingon"):
        tsd.signatures(docs, language="klingon")
    with pytest.raises(ValueError, match="max_postings_per_key = 0"):
        tsd.find_pairs(docs, max_postings_per_key=0)
    for call in (tsd.signatures, tsd.find_pairs):
        with pytest.raises(ValueError, match=r"Rule\(key_bits=40\): .*expected 16 to 32"):
            call(docs, key_bits=40)
    with pytest.raises(ValueError, match=r"Rule\(key_bits=12\)"):
        tsd.deduplicate(docs, "unused", key_bits=12)
    # The opt-in's errors are the single-machine join's (``Rule.pairs_in_memory``'s).
    for bad in (1.5, -0.1, float("nan")):
        with pytest.raises(ValueError) as single_machine:
            Rule().pairs_in_memory(b"", b"", 0, min_resemblance=bad)
        assert "min_resemblance = " in str(single_machine.value)
        for call in (tsd.find_pairs, lambda d, **kw: tsd.deduplicate(d, "unused", **kw)):
            with pytest.raises(ValueError) as pipeline:
                call(docs, min_resemblance=bad)
            assert str(pipeline.value) == str(single_machine.value)
    with pytest.raises(TypeError):
        Rule(fold_scripts="no")
    with pytest.raises(TypeError):
        tsd.find_pairs(docs, fold_scripts="no")
    missing = dd.from_pandas(pd.DataFrame({"id": ["a", "b"], "text": ["some text", None]}), npartitions=1)
    with pytest.raises(ValueError, match="document 'b' has no 'text' value"):
        tsd.signatures(missing).compute()


def test_leaders_equal_a_python_leader_clustering():
    rng = np.random.default_rng(7)
    a = rng.integers(0, 300, 400, dtype=np.uint64) * np.uint64(1 << 33)
    b = rng.integers(0, 300, 400, dtype=np.uint64) * np.uint64(1 << 33)
    from tantivy_simhash import leaders

    nodes, labels = leaders(a.astype("<u8").tobytes(), b.astype("<u8").tobytes())
    got = dict(zip(np.frombuffer(nodes, "<u8").tolist(), np.frombuffer(labels, "<u8").tolist()))
    ids = sorted(set(a.tolist()) | set(b.tolist()))
    oracle = leader_clusters(ids, [(int(x), int(y)) for x, y in zip(a, b) if x != y])
    assert got == {m: leader for leader, members in oracle for m in members}
    assert len(oracle) > 10
    with pytest.raises(ValueError):
        leaders(b"\0" * 8, b"")


def test_components_equal_a_python_union_find():
    rng = np.random.default_rng(5)
    a = rng.integers(0, 300, 200, dtype=np.uint64) * np.uint64(1 << 33)
    b = rng.integers(0, 300, 200, dtype=np.uint64) * np.uint64(1 << 33)
    from tantivy_simhash import components as rust_components

    nodes, labels = rust_components(a.astype("<u8").tobytes(), b.astype("<u8").tobytes())
    got = dict(zip(np.frombuffer(nodes, "<u8").tolist(), np.frombuffer(labels, "<u8").tolist()))
    ids = sorted(set(a.tolist()) | set(b.tolist()))
    assert sorted(got) == ids
    expected = {i: i for i in ids}
    for group in components(ids, [(int(x), int(y), 0) for x, y in zip(a, b)]):
        for member in group:
            expected[member] = group[0]
    assert got == expected


def test_the_pipeline_equals_neardup_and_the_index_on_the_demo_corpus(client, neardup, cli_index, py_index_path, corpus, tmp_path):
    """`neardup pairs` / `clusters` and the binding's `index.pairs()` / `clusters()` (the match rule,
    on the same documents, each index holding all of them) report what the pipeline writes."""
    from conftest import json_lines, run_cli
    from tantivy_simhash import Index

    docs = pd.DataFrame({"id": [d["id"] for d in corpus], "text": [document_text(d) for d in corpus]})
    docs = dd.from_pandas(docs, npartitions=4, sort=False)
    # The index's rule: 20-bit band keys (the pipeline's default is 32).
    tsd.deduplicate(docs, str(tmp_path), key_bits=20, max_postings_per_key=None, mode="components")
    pairs = pq.read_table(tmp_path / "pairs").to_pandas()
    clusters = pq.read_table(tmp_path / "clusters").to_pandas()
    found = {}
    for a, b, d, band, r in zip(pairs.id_a, pairs.id_b, pairs.distance, pairs.band, pairs.resemblance):
        found[tuple(sorted((a, b)))] = (int(d), None if band < 0 else round(float(r), 5))
    groups = {}
    for i, c in zip(clusters.id, clusters.cluster):
        groups.setdefault(c, []).append(i)
    found_clusters = sorted(sorted(g) for g in groups.values() if len(g) >= 2)

    out = run_cli(neardup, "pairs", str(cli_index), "--json").stdout
    cli = {}
    for p in json_lines(out):
        r = p.get("resemblance")
        cli[tuple(sorted((p["a"], p["b"])))] = (p["distance"], None if r is None else round(r, 5))
    assert len(cli) > 10_000
    assert found == cli
    out = run_cli(neardup, "clusters", str(cli_index), "-n", "0", "--mode", "components", "--json").stdout
    assert found_clusters == sorted(sorted(c["members"]) for c in json_lines(out))
    with Index.open(py_index_path) as index:
        py = {tuple(sorted((a, b))): (d, None if r is None else round(r, 5)) for a, b, d, r in index.pairs()}
        assert found == py
        assert found_clusters == sorted(sorted(c.members) for c in index.clusters(mode="components"))

    # By leader (the default): the index's leader clusters exactly, leader ids and members (the
    # index's input order is the corpus order, as the rows').
    tsd.deduplicate(docs, str(tmp_path / "leader"), key_bits=20)
    by_leader = pq.read_table(tmp_path / "leader" / "clusters").to_pandas()
    groups = {}
    for i, c in zip(by_leader.id, by_leader.cluster):
        groups.setdefault(c, []).append(i)
    position = {d["id"]: n for n, d in enumerate(corpus)}
    found_leaders = sorted((c, sorted(m, key=position.get)) for c, m in groups.items() if len(m) >= 2)
    with Index.open(py_index_path) as index:
        assert found_leaders == sorted((c.leader, c.members) for c in index.clusters())
    out = run_cli(neardup, "clusters", str(cli_index), "-n", "0", "--json").stdout
    assert found_leaders == sorted((c["cluster"], c["members"]) for c in json_lines(out))


def test_the_chosen_rule_reaches_the_workers(client, mixed_corpus):
    """The workers sign with the rule the caller names: the sketches of ``signatures`` equal
    ``Rule(key_bits=...)``'s on the client, for the default (32) and another width (16, whose
    sketch is 8 bytes shorter than the index's)."""
    from tantivy_simhash import dask_bench

    assert tsd.DEFAULT_KEY_BITS == dask_bench.DEFAULT_KEY_BITS == 32
    docs = as_dask(mixed_corpus)
    texts = mixed_corpus["text"].tolist()
    for key_bits, width in ((None, 176), (16, 152)):
        rule = Rule(key_bits=tsd.DEFAULT_KEY_BITS if key_bits is None else key_bits)
        sigs = (tsd.signatures(docs) if key_bits is None else tsd.signatures(docs, key_bits=key_bits)).compute()
        names = [c for c in sigs.columns if c.startswith("s")]
        assert rule.sketch_bytes == width == 8 * len(names)
        _fps, sketches = rule.sign_many(texts)
        assert np.ascontiguousarray(sigs[names].to_numpy(dtype=np.uint64)).astype("<u8").tobytes() == sketches


def test_the_lean_shuffle_is_exact_with_other_partition_counts(client, mixed_corpus, brute_force):
    """The lean shuffle's key groups in 3 and in 11 partitions (the input has 5): the same pairs."""
    docs = as_dask(mixed_corpus)
    index = input_index(docs)
    for groups in (3, 11):
        pairs = tsd.find_pairs(docs, npartitions=groups).compute()
        assert pairs_by_index(pairs, index) == brute_force


def test_distributed_components_equal_a_python_union_find(client):
    """Large-star / small-star on the workers against an independent union-find: random edges,
    a long path (many rounds) and a star, over rows of several partitions."""
    rng = np.random.default_rng(11)
    nodes = (rng.integers(0, 40, 600, dtype=np.uint64) << np.uint64(32)) + rng.integers(0, 5000, 600, dtype=np.uint64)
    nodes = np.unique(nodes)
    a = rng.choice(nodes, 400)
    b = rng.choice(nodes, 400)
    path = rng.permutation(nodes[:150])
    a = np.concatenate([a, path[:-1], np.repeat(nodes[200], 50)])
    b = np.concatenate([b, path[1:], nodes[250:300]])
    edges = dd.from_pandas(pd.DataFrame({"u": a, "v": b}), npartitions=4, sort=False)
    got = tsd.distributed_components(edges, npartitions=3).compute()
    assert got["row"].is_unique
    found = dict(zip(got["row"].tolist(), got["label"].tolist()))
    ids = sorted(set(a.tolist()) | set(b.tolist()))
    expected = {}
    for group in components(ids, [(int(x), int(y), 0) for x, y in zip(a, b) if x != y]):
        for member in group:
            expected[member] = min(group)
    assert {k: v for k, v in found.items()} == expected
    assert len(set(expected.values())) > 10


def test_deduplicate_clusters_on_the_workers_equal_the_client_join(client, mixed_corpus, tmp_path):
    """``client_max_edges=0`` sends the clusters to the workers: the same Parquet output, by
    leader and as components."""
    docs = as_dask(mixed_corpus)
    for mode in ("leader", "components"):
        outputs = []
        for limit, name in ((tsd.DEFAULT_CLIENT_MAX_EDGES, "client"), (0, "workers")):
            out = tmp_path / mode / name
            summary = tsd.deduplicate(docs, str(out), client_max_edges=limit, mode=mode)
            clusters = pq.read_table(out / "clusters").to_pandas()
            pairs = pq.read_table(out / "pairs").to_pandas()
            outputs.append((summary["pairs"], summary["clusters"], summary["clustered"],
                            dict(zip(clusters.id, clusters.cluster)), set(zip(pairs.id_a, pairs.id_b))))
        assert outputs[0] == outputs[1]
        assert outputs[0][1] > 100


# The opt-ins of the single-machine join, in the pipeline: ``min_resemblance`` and
# ``fold_scripts``.

MIN_RESEMBLANCE = 0.67


def single_machine_pairs(rule, sigs, cap=0, min_resemblance=None):
    """``Rule.pairs_in_memory`` (the crate's single-machine join) over signatures: (i, j) ->
    (distance, band), and its stats."""
    fps = np.array([s.fingerprint for s in sigs], dtype="<u8").tobytes()
    sketches = b"".join(s.sketch for s in sigs)
    columns, stats = rule.pairs_in_memory(fps, sketches, cap, min_resemblance=min_resemblance)
    a, b = np.frombuffer(columns[0], "<u8"), np.frombuffer(columns[1], "<u8")
    distance, band = np.frombuffer(columns[2], "<u4"), np.frombuffer(columns[4], "<i4")
    return {(int(x), int(y)): (int(d), int(k)) for x, y, d, k in zip(a, b, distance, band)}, stats


@pytest.mark.parametrize("key_bits,cap", [(32, None), (20, None), (32, 5)])
def test_the_pipeline_with_min_resemblance_equals_the_single_machine_join_with_it(
    client, mixed_corpus, oracle, key_bits, cap
):
    """The lean shuffle (32- and 20-bit band keys) and the key-group path (a bound of 5, where
    keys are hot): the pairs of ``Rule.pairs_in_memory(..., min_resemblance=0.67)`` with the same
    bound, distances and bands included. The opt-in bites on both branches, and the pair of two
    texts without tokens (no estimate) stays."""
    rule, sigs, _ = oracle(key_bits)
    expected, stats = single_machine_pairs(rule, sigs, cap or 0, MIN_RESEMBLANCE)
    every, _ = single_machine_pairs(rule, sigs, cap or 0)
    left_out = set(every) - set(expected)
    assert stats["below_min_resemblance"] == len(left_out) > 100
    assert {every[p][1] >= 0 for p in left_out} == {True, False}, "both branches lose pairs"
    assert len(expected) > 3_000
    ids = mixed_corpus["id"].tolist()
    empty = (ids.index("empty-1"), ids.index("empty-2"))
    assert expected[empty] == (0, -1)

    docs = as_dask(mixed_corpus)
    pairs = tsd.find_pairs(docs, key_bits=key_bits, max_postings_per_key=cap, min_resemblance=MIN_RESEMBLANCE)
    assert pairs_by_index(pairs.compute(), input_index(docs)) == expected


def test_deduplicate_with_min_resemblance_clusters_the_pairs_it_keeps(client, mixed_corpus, oracle, tmp_path):
    """The Parquet pairs are the single-machine join's with the opt-in, and the clusters (by
    leader and as components) those of an independent clustering of exactly those pairs."""
    rule, sigs, _ = oracle(tsd.DEFAULT_KEY_BITS)
    expected, _ = single_machine_pairs(rule, sigs, 0, MIN_RESEMBLANCE)
    ids = mixed_corpus["id"].tolist()
    id_pairs = [(ids[i], ids[j]) for i, j in expected]
    for mode in ("leader", "components"):
        out = tmp_path / mode
        summary = tsd.deduplicate(as_dask(mixed_corpus), str(out), mode=mode, min_resemblance=MIN_RESEMBLANCE)
        pairs = pq.read_table(out / "pairs").to_pandas()
        table = pq.read_table(out / "clusters").to_pandas()
        clusters = dict(zip(table.id, table.cluster))
        assert sorted(zip(pairs.id_a, pairs.id_b)) == sorted(id_pairs)
        assert summary["pairs"] == len(expected)
        want = {i: i for i in ids}
        if mode == "leader":
            for leader, members in leader_clusters(ids, id_pairs):
                want.update({m: leader for m in members})
        else:
            position = {i: n for n, i in enumerate(ids)}
            for group in components(ids, id_pairs):
                want.update({m: min(group, key=position.get) for m in group})
        assert clusters == want
        sizes = Counter(want.values())
        assert summary["clusters"] == sum(1 for n in sizes.values() if n >= 2) > 100


def test_the_pipeline_with_min_resemblance_equals_the_index_with_it(client, py_index_path, corpus, tmp_path):
    """The index's rule (``key_bits=20``) and the opt-in: the pairs and the clusters (by leader
    and as components) of ``Index.pairs`` / ``Index.clusters(min_resemblance=0.67)``, the
    library's streaming join."""
    from tantivy_simhash import Index

    docs = pd.DataFrame({"id": [d["id"] for d in corpus], "text": [document_text(d) for d in corpus]})
    docs = dd.from_pandas(docs, npartitions=4, sort=False)
    position = {d["id"]: n for n, d in enumerate(corpus)}
    with Index.open(py_index_path) as index:
        index_pairs = {tuple(sorted((a, b))): d for a, b, d, _ in index.pairs(min_resemblance=MIN_RESEMBLANCE)}
        assert len(index_pairs) < sum(1 for _ in index.pairs()), "the opt-in must bite"
        index_clusters = {
            mode: sorted(
                (c.leader, sorted(c.members, key=position.get))
                for c in index.clusters(mode=mode, min_resemblance=MIN_RESEMBLANCE)
            )
            for mode in ("leader", "components")
        }
    assert len(index_pairs) > 1_000
    for mode in ("leader", "components"):
        out = tmp_path / mode
        tsd.deduplicate(docs, str(out), key_bits=20, mode=mode, min_resemblance=MIN_RESEMBLANCE)
        pairs = pq.read_table(out / "pairs").to_pandas()
        found = {tuple(sorted((a, b))): int(d) for a, b, d in zip(pairs.id_a, pairs.id_b, pairs.distance)}
        assert found == index_pairs
        clusters = pq.read_table(out / "clusters").to_pandas()
        groups = {}
        for i, c in zip(clusters.id, clusters.cluster):
            groups.setdefault(c, []).append(i)
        # A cluster named by its leader, or a component by its first document (the index's
        # ``leader`` for both), members in input order.
        got = sorted((c, sorted(m, key=position.get)) for c, m in groups.items() if len(m) >= 2)
        assert got == index_clusters[mode]


# One text in Simplified and in Traditional Chinese (the same words), and an edited Traditional copy.
ZH = [
    ("城市图书馆将于下周一起延长开放时间，周末也会开放到晚上九点。馆长表示，这项调整是为了方便上班族和学生在下班放学后借阅图书。"
     "新的阅览室配备了更多的座位和电源插座，读者可以在网上预约座位。图书馆还计划举办一系列讲座，内容涉及历史、科学和艺术。",
     "城市圖書館將於下週一起延長開放時間，週末也會開放到晚上九點。館長表示，這項調整是為了方便上班族和學生在下班放學後借閱圖書。"
     "新的閱覽室配備了更多的座位和電源插座，讀者可以在網上預約座位。圖書館還計劃舉辦一系列講座，內容涉及歷史、科學和藝術。"),
    ("研究人员发现，在山区生活的鸟类会根据季节变化调整迁徙路线。他们在三年内追踪了两百多只鸟，记录了它们飞行的高度、速度和停留的地点。"
     "结果显示，气温升高使一些鸟类提前离开越冬地，而食物短缺则让另一些鸟类推迟出发。这些数据将帮助保护区制定更有效的管理计划。",
     "研究人員發現，在山區生活的鳥類會根據季節變化調整遷徙路線。他們在三年內追蹤了兩百多隻鳥，記錄了它們飛行的高度、速度和停留的地點。"
     "結果顯示，氣溫升高使一些鳥類提前離開越冬地，而食物短缺則讓另一些鳥類推遲出發。這些數據將幫助保護區制定更有效的管理計劃。"),
    ("这家餐厅的厨师每天早上都会去市场挑选新鲜的蔬菜和海鲜。他认为好的食材是做出美味菜肴的关键，所以宁愿多花时间也不愿意使用冷冻的原料。"
     "餐厅的招牌菜是清蒸鱼和红烧肉，很多客人专门从外地赶来品尝。周末的时候，店里常常需要排队一个小时以上才能入座。",
     "這家餐廳的廚師每天早上都會去市場挑選新鮮的蔬菜和海鮮。他認為好的食材是做出美味菜肴的關鍵，所以寧願多花時間也不願意使用冷凍的原料。"
     "餐廳的招牌菜是清蒸魚和紅燒肉，很多客人專門從外地趕來品嘗。週末的時候，店裡常常需要排隊一個小時以上才能入座。"),
]


def test_fold_scripts_false_changes_the_pipeline_as_it_changes_the_rule(client, mixed_corpus):
    """Each text in both scripts and an edited Traditional copy, among 400 other documents: the
    pipeline's pairs with and without folding are ``Rule(fold_scripts=...)``'s single-machine
    join's (lean shuffle, and the key-group path), the workers sign as that rule does, and the
    difference is exactly the pairs across scripts."""
    rows = list(zip(mixed_corpus["id"][:400], mixed_corpus["text"][:400]))
    for n, (simplified, traditional) in enumerate(ZH):
        rows += [(f"zh-cn-{n}", simplified), (f"zh-tw-{n}", traditional),
                 (f"zh-tw-edited-{n}", traditional + "記者李明報道。")]
    corpus = pd.DataFrame(rows, columns=["id", "text"])
    ids = corpus["id"].tolist()
    docs = as_dask(corpus)
    index = input_index(docs)
    found = {}
    for fold in (True, False):
        rule = Rule(key_bits=tsd.DEFAULT_KEY_BITS, fold_scripts=fold)
        sigs = [rule.sign(t) for t in corpus["text"]]
        expected, _ = single_machine_pairs(rule, sigs)
        for cap in (None, 2):
            pairs = tsd.find_pairs(docs, fold_scripts=fold, max_postings_per_key=cap).compute()
            if cap is None:
                assert pairs_by_index(pairs, index) == expected
            else:
                assert pairs_by_index(pairs, index) == single_machine_pairs(rule, sigs, cap)[0]
        signed = tsd.signatures(docs, fold_scripts=fold).compute()
        names = [c for c in signed.columns if c.startswith("s")]
        assert signed["fingerprint"].tolist() == [s.fingerprint for s in sigs]
        assert np.ascontiguousarray(signed[names].to_numpy(dtype=np.uint64)).astype("<u8").tobytes() == b"".join(
            s.sketch for s in sigs
        )
        found[fold] = {(ids[i], ids[j]) for i, j in expected}
    across = {(f"zh-cn-{n}", f"zh-tw-{n}") for n in range(len(ZH))} | {
        (f"zh-cn-{n}", f"zh-tw-edited-{n}") for n in range(len(ZH))
    }
    assert found[True] - found[False] == across
    assert found[False] - found[True] == set()
    assert {(f"zh-tw-{n}", f"zh-tw-edited-{n}") for n in range(len(ZH))} <= found[False]
