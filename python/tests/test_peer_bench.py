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
