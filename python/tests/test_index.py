"""Index, writer and read operations against brute-force oracles over the demo corpus."""

import struct
import threading

import pytest

from conftest import brute_force_pairs, components, document_text, leader_clusters, popcount
from tantivy_simhash import Index, Scheme


@pytest.fixture(scope="module")
def fingerprints(corpus):
    texts = [document_text(d) for d in corpus]
    return dict(zip((d["id"] for d in corpus), Scheme().fingerprints(texts)))


def test_pairs_follow_the_match_rule(py_index_path, fingerprints):
    """The simhash branch against brute force; the resemblance branch's pairs carry their
    evidence (beyond k, an estimate at least the rule's threshold). The command line interop
    tests compare every pair with the Rust library's."""
    with Index.open(py_index_path) as index:
        assert len(index) == len(fingerprints)
        for k in (0, 3):
            found = list(index.pairs(k=k))
            assert len(found) == len(set(found))
            by_simhash = {(a, b, d) for a, b, d, r in found if r is None}
            assert by_simhash == brute_force_pairs(fingerprints, k)
            by_resemblance = [(a, b, d, r) for a, b, d, r in found if r is not None]
            assert by_resemblance, "the corpus holds copies beyond the simhash distance"
            for a, b, d, r in by_resemblance:
                assert a < b and d == popcount(fingerprints[a] ^ fingerprints[b]) > k
                assert 0.55 <= r <= 1.0
        assert set(index.pairs()) == set(index.pairs(k=3))


def test_min_resemblance_keeps_the_pairs_whose_sketches_estimate_at_least_it(py_index_path, corpus):
    """The opt-in against an estimate made apart from the index: each pair's two texts signed
    by ``Rule.sign`` and compared by ``Rule.matches`` (its evidence carries the sketches'
    estimate for either branch); leader clusters of the kept pairs as the brute-force walk."""
    from tantivy_simhash import Rule

    rule = Rule()
    texts = {d["id"]: document_text(d) for d in corpus}
    sigs = {i: rule.sign(t) for i, t in texts.items()}
    with Index.open(py_index_path) as index:
        every = set(index.pairs())
        for floor in (0.67, 0.9):
            kept = set(index.pairs(min_resemblance=floor))
            assert kept <= every
            # Compared in f32, as the estimate is (0.9 as a double is above 0.9 as an f32).
            at_least = struct.unpack("f", struct.pack("f", floor))[0]
            expected = {p for p in every if estimate(rule, sigs[p[0]], sigs[p[1]]) >= at_least}
            assert kept == expected, floor
            found = index.clusters(min_resemblance=floor)
            assert sorted((c.leader, c.members) for c in found) == leader_clusters([d["id"] for d in corpus], kept)
        assert set(index.pairs(min_resemblance=0.0)) == every
        assert len(set(index.pairs(min_resemblance=0.9))) < len(every)
        for bad in (-0.5, 1.5):
            with pytest.raises(ValueError, match="expected a number in 0..=1"):
                index.pairs(min_resemblance=bad)
            with pytest.raises(ValueError, match="expected a number in 0..=1"):
                index.clusters(min_resemblance=bad)


def estimate(rule, a, b):
    """The sketches' resemblance estimate of two matching signatures (1.0 when either sketch
    is empty: no estimate, the pair stays)."""
    if not any(a.sketch) or not any(b.sketch):
        return 1.0
    return rule.matches(a, b).resemblance


def test_clusters_by_leader_equal_brute_force(py_index_path, corpus):
    """The default mode: every member is paired with its leader (the first added)."""
    with Index.open(py_index_path) as index:
        pairs = set(index.pairs())
        found = index.clusters()
        assert [(c.id, c.members) for c in found] == [(c.id, c.members) for c in index.clusters(mode="leader")]
        assert sorted((c.leader, c.members) for c in found) == leader_clusters([d["id"] for d in corpus], pairs)
        assert all(c.id == c.leader == c.members[0] for c in found)
        components = index.clusters(mode="components")
        # Components are coarser: every leader cluster lies within one component, and on this
        # corpus they differ (a member that matches another member but not its leader).
        component_of = {m: i for i, c in enumerate(components) for m in c.members}
        assert all(len({component_of[m] for m in c.members}) == 1 for c in found)
        assert sorted(c.members for c in components) != sorted(c.members for c in found)
        with pytest.raises(ValueError, match="components"):
            index.clusters(mode="chains")


def test_clusters_equal_connected_components_of_the_pairs(py_index_path, fingerprints):
    with Index.open(py_index_path) as index:
        clusters = index.clusters(mode="components")
        oracle = components(fingerprints, set(index.pairs()))
        assert sorted(c.members for c in clusters) == oracle
        # Every simhash component lies within one cluster.
        cluster_of = {m: c.id for c in clusters for m in c.members}
        for group in components(fingerprints, brute_force_pairs(fingerprints, 3)):
            assert len({cluster_of[m] for m in group}) == 1
        assert all(c.id == c.members[0] and len(c) == len(c.members) for c in clusters)
        sizes = [len(c) for c in clusters]
        assert sizes == sorted(sizes, reverse=True)
        big = index.clusters(min_size=5, mode="components")
        assert sorted(c.members for c in big) == [g for g in oracle if len(g) >= 5]


def test_similar_equals_brute_force(py_index_path, fingerprints, corpus):
    with Index.open(py_index_path) as index:
        for doc in corpus[::97]:
            fp = fingerprints[doc["id"]]
            for k in (1, 3):
                oracle = sorted(
                    (popcount(fp ^ f), i)
                    for i, f in fingerprints.items()
                    if i != doc["id"] and popcount(fp ^ f) <= k
                )
                found = index.similar(id=doc["id"], k=k)
                assert sorted((m.distance, m.id) for m in found) == oracle
                assert [m.distance for m in found] == sorted(m.distance for m in found)
                assert all(m.fingerprint == fingerprints[m.id] for m in found)
            by_text = index.similar(text=document_text(doc))
            assert doc["id"] in {m.id for m in by_text}
        first = corpus[0]["id"]
        assert len(index.similar(id=first, limit=1)) <= 1


@pytest.mark.parametrize("query", ["text:google", "text:cloud", "text:软件"])
def test_collapsed_search_groups_match_a_greedy_oracle(py_index_path, query):
    """Single-term queries: their scores do not depend on the order tantivy sums term scores in
    (a multi-term BM25 score may differ in its last bits between two searches)."""
    with Index.open(py_index_path) as index:
        everything = index.search(query, limit=10_000, collapse=False)
        fps = {h.id: index.fingerprint_of(h.id) for h in everything}
        # The match rule's relation among all documents, from the all-pairs join (the collapse
        # folds hit by hit with MatchRule::matches; the join is another implementation).
        evidence = {}
        for a, b, d, r in index.pairs():
            evidence[(a, b)] = evidence[(b, a)] = (d, r)
        # Oracle: rank best first (ties by fingerprint, then id, as documented); a hit joins
        # the first leader the rule matches it with, else leads a group of its own.
        everything.sort(key=lambda h: (-h.score, fps[h.id], h.id))
        leaders, sizes = [], {}
        for h in everything:
            for leader in leaders:
                if (leader, h.id) in evidence:
                    sizes[leader] += 1
                    break
            else:
                leaders.append(h.id)
                sizes[h.id] = 1
        hits = index.search(query, limit=8)
        assert [h.id for h in hits] == leaders[:8]
        assert [h.group_size for h in hits] == [sizes[i] for i in leaders[:8]]
        assert all(h.group_size_exact for h in hits)
        assert max(h.group_size for h in hits) > 1, "the query should fold near-duplicates"
        for h in hits:
            for m in h.members:
                d, r = evidence[(h.id, m.id)]
                assert m.distance == d == popcount(fps[h.id] ^ fps[m.id])
                assert (m.resemblance is None) == (r is None)
                if r is not None:
                    assert abs(m.resemblance - r) < 1e-6 and m.distance > index.k
        plain = index.search(query, limit=8, collapse=False)
        assert [h.score for h in plain] == [h.score for h in everything[:8]]
        assert all(h.group_size == 1 and not h.members for h in plain)


@pytest.mark.parametrize("query", ["text:google", "text:cloud", "text:data"])
def test_search_by_collapse_field_keeps_the_best_hit_per_host(py_index_path, query):
    with Index.open(py_index_path) as index:
        everything = index.search(query, limit=10_000, collapse=False)
        best, size = {}, {}
        for h in everything:
            best[h.host] = max(best.get(h.host, h.score), h.score)
            size[h.host] = size.get(h.host, 0) + 1
        hits = index.search(query, limit=5, collapse_field="host")
        assert len(hits) == min(5, len(best))
        assert len({h.host for h in hits}) == len(hits)
        want = sorted(best.values(), reverse=True)[: len(hits)]
        assert [h.score for h in hits] == want
        for h in hits:
            assert h.score == best[h.host]
            assert h.group_size == size[h.host] and h.group_size_exact
            assert len(h.members) < h.group_size
        assert any(h.group_size > 1 for h in hits), "some host should have several hits"
        with pytest.raises(ValueError, match="not a fast field"):
            index.search(query, collapse_field="text")
        with pytest.raises(ValueError, match="has none"):
            index.search(query, collapse_field="nowhere")
        with pytest.raises(ValueError, match="collapse=False"):
            index.search(query, collapse=False, collapse_field="host")


def test_reject_keeps_no_two_documents_within_k(corpus, tmp_path):
    index = Index.create(tmp_path / "idx", policy="reject")
    scheme = index.scheme
    by_id = {d["id"]: d for d in corpus}
    outcomes = []
    with index.writer() as w:
        for doc in corpus[:800]:
            outcomes.append(w.add(doc))
    kept = {o.id: o.fingerprint for o in outcomes if o.added}
    assert {o.status for o in outcomes} <= {"added", "rejected"}
    assert brute_force_pairs(kept, index.k) == set()
    for o in outcomes:
        assert o.fingerprint == scheme.fingerprint(document_text(by_id[o.id]))
        if o.status == "rejected":
            # The rule's evidence: within k, or a resemblance estimate at or above 0.55.
            assert o.of in kept and o.distance == popcount(o.fingerprint ^ kept[o.of])
            if o.resemblance is None:
                assert o.distance <= index.k
            else:
                assert o.distance > index.k and o.resemblance >= 0.55
    assert len(index) == len(kept)
    assert any(o.status == "rejected" for o in outcomes)


def test_tag_and_replace_outcomes(corpus, tmp_path):
    docs = corpus[:800]
    index = Index.create(tmp_path / "tag")
    with index.writer(policy="tag") as w:
        summary = w.add_many(docs)
    assert summary.added == len(docs) == len(index)
    assert summary.tagged > 0
    replace = Index.create(tmp_path / "replace")
    with replace.writer(policy="replace") as w:
        outcomes = [w.add(d) for d in docs]
    gone = {r for o in outcomes for r in o.replaced}
    assert gone, "the corpus has near-duplicates to replace"
    for o in outcomes:
        if o.status == "replaced":
            assert o.of == o.replaced[0]
    for d in docs:
        assert (replace.fingerprint_of(d["id"]) is None) == (d["id"] in gone)
    assert len(replace) == len(docs) - len(gone)
    # A rerun over the same input skips every id: the replaced ones are counted apart, as
    # `neardup index` counts them (skipped_replaced_id), not as ids already indexed.
    with replace.writer(policy="replace") as w:
        s = w.add_many(docs)
    assert (s.added, s.skipped_replaced_id) == (0, len(gone))
    assert s.skipped_existing_id == len(docs) - len(gone)


def test_ids_already_indexed_are_skipped_across_commits(tmp_path):
    index = Index.create(tmp_path / "idx", policy="off")
    with index.writer() as w:
        assert w.add({"id": "a", "text": "alpha beta gamma"}).status == "added"
        assert w.add({"id": "a", "text": "another text"}).status == "skipped"
        w.commit()
        assert w.add({"id": "a", "text": "yet another"}).status == "skipped"
        assert w.add({"id": 7, "text": "an int id"}).id == "7"
    with index.writer() as w:
        s = w.add_many([{"id": "a", "text": "x"}, {"id": "7", "text": "y"}, {"id": "b", "text": "z"}])
        assert (s.documents, s.added, s.skipped_existing_id) == (3, 1, 2)
    assert len(index) == 3


def test_an_exception_in_the_with_block_rolls_back(tmp_path):
    index = Index.create(tmp_path / "idx")
    with pytest.raises(RuntimeError):
        with index.writer() as w:
            w.add({"id": "a", "text": "alpha beta gamma"})
            raise RuntimeError("stop")
    assert len(index) == 0 and w.closed
    with index.writer() as w:
        w.add({"id": "a", "text": "alpha beta gamma"})
        w.rollback()
        w.add({"id": "b", "text": "delta"})
    assert len(index) == 1 and index.fingerprint_of("b") is not None


def test_threads_adding_at_once_under_reject(corpus, tmp_path):
    """Several Python threads share one writer (the GIL is released while each adds)."""
    index = Index.create(tmp_path / "idx", policy="reject")
    docs = corpus[:600]
    outcomes = []
    lock = threading.Lock()
    with index.writer() as w:

        def work(part):
            mine = [w.add(d) for d in part]
            with lock:
                outcomes.extend(mine)

        threads = [threading.Thread(target=work, args=(docs[i::4],)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(outcomes) == len(docs)
    kept = {o.id: o.fingerprint for o in outcomes if o.added}
    assert brute_force_pairs(kept, index.k) == set()
    assert len(index) == len(kept)


def test_field_mapping_pyarrow_and_progress(corpus, tmp_path):
    import pyarrow as pa

    rows = [{"url": d["id"], "body": d["text"], "site": d["host"]} for d in corpus[:500]]
    table = pa.Table.from_pylist(rows)
    seen = []
    a = Index.create(tmp_path / "a", policy="off")
    with a.writer(fields={"id": "url", "text": "body", "host": "site"}) as w:
        summary = w.add_many(table, batch_size=64, progress=lambda done, total: seen.append((done, total)))
    assert summary.added == 500
    assert seen[-1] == (500, 500) and [d for d, _ in seen] == sorted(d for d, _ in seen)
    b = Index.create(tmp_path / "b", policy="off")
    with b.writer(fields={"id": "url", "text": "body", "host": "site"}) as w:
        w.add_many(iter(rows), progress=True)
    assert set(a.pairs()) == set(b.pairs())
    for r in rows[::50]:
        assert a.fingerprint_of(r["url"]) == b.fingerprint_of(r["url"])
    # The mapping is recorded as the default of the next writer (as `neardup index` does).
    with Index.open(tmp_path / "a") as again, again.writer() as w:
        assert w.add({"url": "new", "body": "a brand new text"}).status == "added"


def test_mirrors_find_the_copied_hosts(py_index_path):
    with Index.open(py_index_path) as index:
        report = index.mirrors()
        assert report, "the demo web has mirror sites"
        for p in report:
            assert p["is_mirror"] and p["host_a"] < p["host_b"] and p["score"] >= 1
        host = report[0]["host_a"]
        copies = index.mirrors(host=host, all=True)
        assert all(p["host_a"] == host for p in copies)
        assert report[0]["host_b"] in {p["host_b"] for p in copies}


@pytest.mark.parametrize("ids", ["keep", "replace", "report", "off"])
def test_id_policies_against_a_model(tmp_path, ids):
    """Random adds, commits and rollbacks over a few repeated ids, checked against a model of
    the id policy after every commit."""
    import random

    from tantivy_simhash import Error

    rng = random.Random(5)
    index = Index.create(tmp_path / "idx", policy="off")
    scheme = index.scheme
    committed, working, texts = [], [], {}
    with index.writer(ids=ids) as w:
        assert w.ids == ids
        for step in range(120):
            roll = rng.random()
            if roll < 0.7:
                i = "id%d" % rng.randrange(4)
                text = " ".join("w%d" % rng.randrange(3000) for _ in range(30))
                texts[text] = scheme.fingerprint(text)
                taken = any(d == i for d, _ in working)
                if ids == "report" and taken:
                    with pytest.raises(Error, match="`%s` is already in the index" % i):
                        w.add({"id": i, "text": text})
                    continue
                o = w.add({"id": i, "text": text})
                if ids == "keep" and taken:
                    assert (o.status, o.fingerprint) == ("skipped", None)
                    continue
                # policy="off": tantivy's indexing thread signs the document, so the outcome
                # has no fingerprint; the index has it after the commit (checked below).
                assert o.status == "added" and o.fingerprint is None
                if ids == "replace":
                    working = [(d, t) for d, t in working if d != i]
                working.append((i, text))
            elif roll < 0.85:
                w.commit()
                committed = list(working)
                assert len(index) == len(committed), step
                for d, t in committed:
                    if ids != "off":
                        assert index.fingerprint_of(d) == texts[t], step
                    else:
                        # Without an id policy an id may be in the index more than once.
                        assert index.fingerprint_of(d) in {texts[t] for i, t in committed if i == d}, step
            else:
                w.rollback()
                working = list(committed)
    assert len(index) == len(working)


def test_keep_has_one_winner_among_threads(tmp_path):
    """Threads adding the same ids at once under ids="keep": exactly one add per id wins."""
    index = Index.create(tmp_path / "idx", policy="off")
    outcomes = []
    lock = threading.Lock()
    with index.writer(ids="keep") as w:

        def work(t):
            texts = ["thread %d doc %d" % (t, n) for n in range(50)]
            mine = [(w.add({"id": "id%d" % (n % 10), "text": text}), text) for n, text in enumerate(texts)]
            with lock:
                outcomes.extend(mine)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    added = [(o, text) for o, text in outcomes if o.added]
    assert sorted(o.id for o, _ in added) == ["id%d" % n for n in range(10)]
    assert len(index) == 10
    for o, text in added:
        # Signed on tantivy's indexing thread (policy="off"): the index has the winner's.
        assert o.fingerprint is None
        assert index.fingerprint_of(o.id) == index.scheme.fingerprint(text)


def _zephyr(tf, seed):
    """A text with ``tf`` "zephyr"s, all of one length: more of them, a better score."""
    return " ".join(["zephyr"] * tf + [f"w{seed}x{w}" for w in range(20 - tf)])


def test_search_leader_and_derank_follow_insertion_order_and_the_ranked_list(tmp_path):
    paragraph = (
        "Permission is hereby granted, free of charge, to any person obtaining a copy of this "
        "quokka software, to deal in it without restriction, including the rights to use, copy, "
        "modify, merge, publish and distribute it."
    )
    # (id, host, text) in the order they are added: one writer session each, so that the order
    # the index records is this one. The "zephyr" counts rank a1 > b2 > c1 > a3 > b1 > a2.
    docs = [
        ("b2", "b.example", _zephyr(5, 0)),
        ("q-b", "q.example", paragraph),
        ("a3", "a.example", _zephyr(3, 1)),
        ("c1", "c.example", _zephyr(4, 2)),
        ("q-c", "q.example", paragraph),
        ("a1", "a.example", _zephyr(6, 3)),
        ("q-other", "r.example", "A field guide to the quokka of Rottnest Island."),
        ("b1", "b.example", _zephyr(2, 4)),
        ("q-a", "q.example", paragraph),
        ("a2", "a.example", _zephyr(1, 5)),
    ]
    added = {d[0]: i for i, d in enumerate(docs)}
    host_of = {d[0]: d[1] for d in docs}
    index = Index.create(tmp_path / "idx", policy="off")
    for doc_id, host, text in docs:
        with index.writer() as w:
            assert w.add({"id": doc_id, "host": host, "text": text}).status == "added"

    # The oracle: the ungrouped ranked list.
    ranked = [h.id for h in index.search("zephyr", limit=100, collapse=False)]
    assert len(ranked) == 6
    for limit in (1, 10):
        for leader in (None, "newest", "oldest"):
            hosts = list(dict.fromkeys(host_of[i] for i in ranked))[:limit]
            hits_of = {h: [i for i in ranked if host_of[i] == h] for h in hosts}
            if leader is None:
                leaders = [hits_of[h][0] for h in hosts]
            else:
                pick = max if leader == "newest" else min
                leaders = [pick(hits_of[h], key=added.__getitem__) for h in hosts]
            moved = [i for i in ranked if host_of[i] in hosts and i not in leaders]

            groups = index.search("zephyr", limit=limit, collapse_field="host", leader=leader)
            assert [g.id for g in groups] == leaders, (leader, limit)
            assert [g.group_size for g in groups] == [len(hits_of[h]) for h in hosts]
            assert not any(g.moved for g in groups)

            flat = index.search(
                "zephyr", limit=limit, collapse_field="host", leader=leader, derank=True
            )
            assert [h.id for h in flat] == leaders + moved, (leader, limit)
            assert [h.rank for h in flat] == list(range(1, len(flat) + 1))
            for position, h in enumerate(flat):
                is_moved = position >= len(leaders)
                assert h.moved == is_moved
                leader_of_host = next(x for x in leaders if host_of[x] == host_of[h.id])
                assert h.leader_id == (leader_of_host if is_moved else None)

    # Three identical copies (near-duplicates by the rule), added as q-b, q-c, q-a.
    for leader, want in (("newest", "q-a"), ("oldest", "q-b")):
        hits = index.search("quokka", leader=leader)
        (copies,) = [h for h in hits if h.group_size == 3]
        assert copies.id == want
        others = sorted({"q-a", "q-b", "q-c"} - {want})
        assert sorted(m.id for m in copies.members) == others
        flat = index.search("quokka", leader=leader, derank=True)
        assert len(flat) == 4 and want in [h.id for h in flat[:2]]
        assert sorted(h.id for h in flat[2:]) == others
        assert all(h.moved and h.leader_id == want for h in flat[2:])

    with pytest.raises(ValueError, match="newest"):
        index.search("quokka", leader="latest")
    with pytest.raises(ValueError, match="collapse=False"):
        index.search("quokka", collapse=False, leader="newest")
    with pytest.raises(ValueError, match="collapse=False"):
        index.search("quokka", collapse=False, derank=True)


def test_searches_reuse_their_collapse_and_still_see_every_commit(corpus, tmp_path):
    """An index keeps the collapse of each search's settings (and the columns it opened);
    a search after a commit still sees the new documents: the same results as a freshly
    opened index, whose collapses are new."""
    path = tmp_path / "idx"
    index = Index.create(path)
    settings = [{}, {"collapse_field": "host"}, {"leader": "newest"}, {"derank": True}]
    queries = ["text:google", "text:data"]

    def results(ix):
        return [
            [(h.id, h.group_size, [m.id for m in h.members], h.moved) for h in ix.search(q, **s)]
            for q in queries
            for s in settings
        ]

    half = len(corpus) // 2
    with index.writer() as w:
        w.add_many(corpus[:half])
    before = results(index)
    assert results(index) == before
    with index.writer() as w:
        w.add_many(corpus[half:])
    after = results(index)
    assert after != before, "the second half must change some results"
    with Index.open(path) as fresh:
        assert results(fresh) == after
    index.close()


def test_explain_agrees_with_pairs_and_the_cli(py_index_path, corpus, neardup):
    """``explain`` gives the verdict of :meth:`pairs` (the rule), for a matching pair and a
    non-matching one, and the object ``neardup explain --json`` prints."""
    import json
    import subprocess

    with Index.open(py_index_path) as index:
        pairs = {frozenset((a, b)): (d, r) for a, b, d, r in index.pairs()}
        (a, b), (d, r) = next((tuple(sorted(p)), v) for p, v in pairs.items() if v[1] is not None)
        e = index.explain(a, b)
        assert e["verdict"]["match"] == "resemblance" and e["verdict"]["distance"] == d
        assert abs(e["verdict"]["resemblance"] - r) < 1e-6
        assert e["minhash"]["matched"] and not e["simhash"]["matched"]
        ids = [doc["id"] for doc in corpus]
        x, y = next((x, y) for x, y in zip(ids, ids[1:]) if frozenset((x, y)) not in pairs)
        e = index.explain(x, y)
        assert e["verdict"] is None and not any(br["matched"] for br in e["branches"])
        assert e["summary"].startswith("not near-duplicates")
        out = subprocess.run([str(neardup), "explain", str(py_index_path), a, b, "--json"], capture_output=True, check=True)
        assert json.loads(out.stdout)["alignment"] == index.explain(a, b)["alignment"]
        texts = index.explain_texts("the same words in the same order here", "the same words in the same order here")
        assert texts["verdict"] == {"match": "simhash", "distance": 0}
        with pytest.raises(ValueError, match="nope"):
            index.explain(a, "nope")


def test_report_lists_the_leader_clusters_and_their_members(py_index_path, corpus, tmp_path):
    """``report`` writes one self-contained HTML file whose clusters are those of
    :meth:`clusters` (ids, sizes, leaders, largest first) and whose carried members are each
    cluster's first members after the leader, capped as asked."""
    import json
    import re

    path = tmp_path / "report.html"
    with Index.open(py_index_path) as index:
        clusters = index.clusters()
        stats = index.report(path, detailed=5, members=3)
    html = path.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and stats["bytes"] == len(html.encode("utf-8"))
    assert not re.search(r"""(src|href)=["']?https?:""", html), "the report must not load anything"
    data = json.loads(
        re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
        .group(1)
        .replace("<\\/", "</")
    )
    assert data["summary"]["documents"] == stats["documents"] == len(corpus)
    assert stats["clusters"] == len(clusters) > 5
    assert [(c["id"], c["size"]) for c in data["clusters"]] == [(c.id, len(c)) for c in clusters]
    assert stats["clusters_detailed"] == len(data["details"]) == 5
    shown = 0
    for cluster, detail in zip(clusters, data["details"]):
        assert detail["leader"]["id"] == cluster.leader == cluster.id
        followers = [m for m in cluster.members if m != cluster.leader]
        assert [m["doc"]["id"] for m in detail["members"]] == followers[:3]
        assert detail["more"] == max(len(followers) - 3, 0)
        shown += len(detail["members"])
    assert stats["pairs_shown"] == shown
    with Index.open(py_index_path) as index, pytest.raises(ValueError, match="cannot write the report"):
        index.report(tmp_path / "no" / "such" / "report.html")
