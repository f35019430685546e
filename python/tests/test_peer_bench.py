"""peer_bench: its scoring against hand-counted cases, and a tiny end-to-end run of the
tantivy-simhash column checked against a brute force (the peers, optional packages, are not
installed by the test extras, so CI does not run them)."""

import itertools
import json
import random

import numpy as np

from tantivy_simhash import Rule
from tantivy_simhash import peer_bench as pb


class FixedTruth:
    def __init__(self, values):
        self.values = values

    def resemblance(self, a, b):
        return self.values[(min(a, b), max(a, b))]


def test_scores_follow_the_data_convention():
    truth = FixedTruth({(0, 1): 0.9, (0, 2): 0.85, (1, 2): 0.6, (2, 3): 0.3, (3, 4): 0.1})
    positives = {(0, 1), (0, 2)}
    s = pb.score(truth, positives, {(0, 1), (1, 2), (2, 3)})
    # One true pair (0.9), one in [0.5, 0.8) counting neither way, one false positive (0.3).
    assert s == {"pairs": 3, "precision": 0.5, "false_positives": 1, "recall": 0.5}
    c = pb.score_clusters(truth, positives, [[0, 1, 2]], 10, random.Random(1))
    # Cluster pairs (0,1) 0.9, (0,2) 0.85, (1,2) 0.6: precision 1, both truth pairs inside.
    assert c == {"cluster_pairs": 3, "cluster_precision": 1.0, "cluster_recall": 1.0}


def test_shingles_follow_the_reference_definition():
    # NFKC and case folding, Han characters one token each, 3-token shingles.
    assert pb.shingles("Ａb c D") == pb.shingles("ab C d")
    assert len(pb.shingles("一二三四")) == 2
    assert pb.jaccard(pb.shingles("a b c d"), pb.shingles("a b c e")) == 1 / 3


def test_a_tiny_run_reports_the_exact_join_and_scores_it_against_a_brute_force(capsys):
    docs = 300
    assert pb.main(["--synthetic", str(docs), "--tools", "tantivy-simhash", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert len(rows) == 1
    row = rows[0]
    _, texts, _ = pb.generated_corpus(docs)
    rule = Rule()
    fps, sketches = rule.sign_many(texts)
    columns, stats = rule.pairs_in_memory(fps, sketches, 0)
    ours = set(zip(np.frombuffer(columns[0], "<u8").tolist(), np.frombuffer(columns[1], "<u8").tolist()))
    assert row["pairs"] == stats["pairs"] == len(ours) > 10
    # Every pair of the corpus measured exactly: the pooled truth misses none here.
    sets = [pb.shingles(t) for t in texts]
    truth = {(a, b) for a, b in itertools.combinations(range(docs), 2) if pb.jaccard(sets[a], sets[b]) >= 0.8}
    assert row["truth_pairs"] == len(truth) > 0
    assert row["recall"] == len(truth & ours) / len(truth)
    assert row["docs"] == docs and row["wall_s"] > 0 and row["peak_rss_mib"] > 0


def test_the_opt_in_row_and_the_breakdown_agree_with_the_rule_pair_by_pair(capsys):
    docs = 2000
    assert pb.main(["--synthetic", str(docs), "--tools", "tantivy-simhash", "--min-resemblance", "0.67",
                    "--breakdown", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    rows = {r["tool"]: r for r in lines if not r.get("breakdown")}
    groups = [r for r in lines if r.get("breakdown")]
    default, strict = rows["tantivy-simhash"], rows["tantivy-simhash >= 0.67"]
    # The oracle: the rule's pairs, each judged by Rule.matches and measured exactly here.
    _, texts, _ = pb.generated_corpus(docs)
    rule = Rule()
    sigs = [rule.sign(t) for t in texts]
    fps, sketches = rule.sign_many(texts)
    columns, _ = rule.pairs_in_memory(fps, sketches, 0)
    ours = list(zip(np.frombuffer(columns[0], "<u8").tolist(), np.frombuffer(columns[1], "<u8").tolist()))
    evidence = {p: rule.matches(sigs[p[0]], sigs[p[1]]) for p in ours}
    kept = {p for p, e in evidence.items() if e.resemblance >= np.float32(0.67)}
    assert strict["pairs"] == len(kept) < default["pairs"] == len(ours)
    sets = [pb.shingles(t) for t in texts]
    false = [p for p in ours if pb.jaccard(sets[p[0]], sets[p[1]]) < 0.5]
    assert default["false_positives"] == len(false) > 0
    assert strict["false_positives"] == sum(1 for p in false if p in kept)
    # Every false positive in exactly one group, and each group's branch is the one the rule gives.
    for tool, pairs in (("tantivy-simhash", false), ("tantivy-simhash >= 0.67", [p for p in false if p in kept])):
        by_branch = {}
        for p in pairs:
            branch = "simhash" if evidence[p].kind == "simhash" else "band"
            by_branch[branch] = by_branch.get(branch, 0) + 1
        got = {}
        for g in groups:
            if g["tool"] == tool:
                assert g["cause"] in pb.CAUSES
                # A cause of "estimate" is the band branch's, "simhash" the simhash branch's.
                assert g["cause"] != "estimate" or g["branch"] == "band"
                assert g["cause"] != "simhash" or g["branch"] == "simhash"
                assert (g["rule_shingles"] >= 0.5) == (g["cause"] in ("chrome", "view"))
                got[g["branch"]] = got.get(g["branch"], 0) + g["pairs"]
        assert got == by_branch


def test_scripts_as_written_row_signs_without_folding(tmp_path, capsys):
    """--scripts-as-written adds a row signed by Rule(fold_scripts=False): a page and its
    Traditional edition (raw resemblance far under 0.5) are a pair of the default row (a false
    positive by the data's convention) and not of that row; an exact copy is in both."""
    simplified = "这是一个关于搜索引擎如何发现重复网页的简短说明，它们在不同的网站上以不同的字体发布。" * 4
    traditional = "這是一個關於搜索引擎如何發現重複網頁的簡短說明，它們在不同的網站上以不同的字體發佈。" * 4
    other = "今天的天气很好，我们一起去公园散步，看到了很多美丽的花朵和高大的树木，心情非常愉快。" * 4
    lines = [
        {"recipe": "script", "a": {"id": "s-a", "text": simplified, "lang": "zh-CN"},
         "b": {"id": "s-b", "text": traditional, "lang": "zh-TW"}},
        {"recipe": "exact-format", "a": {"id": "c-a", "text": other, "lang": "zh-CN"},
         "b": {"id": "c-b", "text": other, "lang": "zh-CN"}},
    ]
    with open(tmp_path / "tiny.jsonl", "w", encoding="utf-8") as f:
        for rec in lines:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    assert pb.main(["--data", str(tmp_path), "--sets", "tiny", "--tools", "tantivy-simhash",
                    "--scripts-as-written", "--json"]) == 0
    rows = {r["tool"]: r for r in (json.loads(line) for line in capsys.readouterr().out.splitlines()
                                   if line.startswith("{"))}
    folded, as_written = rows["tantivy-simhash"], rows["tantivy-simhash, scripts as written"]
    assert pb.jaccard(pb.shingles("\n" + simplified), pb.shingles("\n" + traditional)) < 0.5
    assert (folded["pairs"], folded["false_positives"]) == (2, 1)
    assert (as_written["pairs"], as_written["false_positives"]) == (1, 0)
