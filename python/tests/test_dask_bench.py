"""A smoke run of ``python -m tantivy_simhash.dask_bench`` as people run it (its own local
cluster of one worker process, 2,000 synthetic documents, the whole corpus joined on the client
too): the figures docs/DISTRIBUTED.md reports are printed, and the pipeline's pairs are the
single-machine join's. Timing figures are checked for presence and sign only."""

import json
import subprocess
import sys

DOCS = 2000


def test_a_tiny_full_run_prints_the_figures_and_the_single_machine_pairs(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "tantivy_simhash.dask_bench", "--docs", str(DOCS), "--baseline-docs", str(DOCS),
         "--workers", "1", "--partitions", "2", "--memory-limit", "1GiB", "--json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr
    figures = json.loads(run.stdout.strip().splitlines()[-1])
    # The pipeline wrote exactly the pairs of the single-machine join of the whole corpus, and
    # the synthetic corpus has near-duplicates to find.
    assert figures["same_pairs_as_single_machine"] is True
    assert figures["pairs"] == figures["baseline_join"]["pairs"] > 50
    assert figures["baseline_join"]["hot_keys"] == 0
    assert figures["min_resemblance"] is None and figures["fold_scripts"] is True
    # The lean shuffle: 4 block postings of 16 bytes and 12 band postings of 8 a document (every
    # synthetic text has tokens), all of which cross a P2P shuffle, so the bytes the workers
    # serialised (counted from the scheduler's metrics) are at least those.
    assert figures["postings_per_doc"] == 16.0
    assert figures["posting_bytes_per_doc"] == 4 * 16 + 12 * 8
    assert figures["shuffle_bytes_per_doc"] >= figures["posting_bytes_per_doc"]
    # Rates (rounded: a tiny corpus on a loaded machine may print 0.0 for a ratio).
    for key in ("worker_vs_thread", "worker_vs_thread_cpu", "docs_per_s_per_worker", "baseline_docs_per_s"):
        assert isinstance(figures[key], (int, float)) and figures[key] >= 0, key
    assert set(figures["stage_seconds"]) == {"sign", "pairs", "clusters", "write"}
    assert len(figures["peak_rss_mib_per_worker"]) == 1
