"""The JSON-lines generator of the batch benchmarks' text corpus."""

import json

from tantivy_simhash.dask_bench import synthetic_text
from tantivy_simhash.text_corpus import main


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_text_corpus_writes_the_generator_documents_independent_of_jobs(tmp_path):
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    assert main(["--docs", "300", "--jobs", "1", "--out", str(one)]) == 0
    assert main(["--docs", "300", "--jobs", "2", "--out", str(two)]) == 0
    assert one.read_bytes() == two.read_bytes()
    docs = _lines(one)
    assert [d["id"] for d in docs] == [f"d{i}" for i in range(300)]
    for i, d in enumerate(docs):
        assert d["text"] == synthetic_text(1, i, 300, 0.05, 5.0, (60, 200))
    # Base texts have 60 to 199 words; edited copies may gain or lose some and carry site chrome.
    counts = [len(d["text"].split()) for d in docs]
    assert sum(60 <= c < 200 for c in counts) >= 0.9 * len(counts)
    assert max(counts) < 200 * 1.2 + 20


def test_text_corpus_rejects_an_empty_word_range(tmp_path, capsys):
    import pytest

    with pytest.raises(SystemExit):
        main(["--docs", "10", "--min-words", "50", "--max-words", "50", "--out", str(tmp_path / "x")])
    assert "--min-words < --max-words" in capsys.readouterr().err
