"""Scheme and distance: fingerprints equal the ones the index stores, distance equals a popcount."""

import random

import pytest

from conftest import document_text, popcount
from tantivy_simhash import Index, Scheme, distance


def test_distance_is_the_popcount_of_the_xor():
    rng = random.Random(7)
    values = [0, 1, 2**63, 2**64 - 1] + [rng.getrandbits(64) for _ in range(500)]
    for a in values:
        b = rng.choice(values)
        assert distance(a, b) == popcount(a ^ b)
    assert distance(0, 2**64 - 1) == 64


@pytest.mark.parametrize("bad", [-1, 2**64])
def test_distance_outside_u64_raises_overflow(bad):
    with pytest.raises(OverflowError):
        distance(bad, 0)


@pytest.mark.parametrize("bad", ["1", 1.0, None, [1]])
def test_distance_of_a_non_int_raises_type_error(bad):
    with pytest.raises(TypeError):
        distance(bad, 0)


def test_formatting_changes_give_distance_zero_and_an_edit_gives_less_than_another_text():
    s = Scheme()
    original = (
        "Simhash maps a weighted feature set to 64 bits. Near-duplicate documents get "
        "fingerprints that differ in only a few bits, so a crawler can find them among "
        "billions of pages with a handful of table lookups."
    )
    shouted = original.upper().replace(".", " !")
    edited = original.replace("billions of pages", "billions of web pages")
    other = (
        "The quarterly report shows revenue growth in every region, led by strong demand for "
        "cloud services and a recovery in hardware sales since spring."
    )
    a = s.fingerprint(original)
    assert distance(a, s.fingerprint(shouted)) == 0
    assert distance(a, s.fingerprint(edited)) < distance(a, s.fingerprint(other))
    zh_cn = "软件开发的过程包括需求分析、设计、编码、测试和维护，每个阶段都有自己的方法和工具。"
    zh_tw = "軟件開發的過程包括需求分析、設計、編碼、測試和維護，每個階段都有自己的方法和工具。"
    assert distance(s.fingerprint(zh_cn), s.fingerprint(zh_tw)) == 0


def test_fingerprints_in_parallel_equal_one_by_one(corpus):
    s = Scheme()
    texts = [d["text"] for d in corpus[:300]]
    assert s.fingerprints(texts) == [s.fingerprint(t) for t in texts]
    assert s.fingerprints(iter(texts[:3])) == [s.fingerprint(t) for t in texts[:3]]
    assert s.fingerprints([]) == []


def test_python_fingerprints_are_the_ones_the_command_line_stored(corpus, cli_index):
    """The scheme Python computes is the scheme `neardup index` indexed with."""
    s = Scheme()
    with Index.open(cli_index) as index:
        assert index.scheme.id == s.id
        for doc, fp in zip(corpus, s.fingerprints(document_text(d) for d in corpus)):
            assert index.fingerprint_of(doc["id"]) == fp


def test_languages():
    assert Scheme("english").id != Scheme().id
    assert Scheme("han-chars").id != Scheme().id
    assert Scheme("english").language == "english"
    with pytest.raises(ValueError, match="unknown language `klingon`"):
        Scheme("klingon")
    with pytest.raises(TypeError):
        Scheme().fingerprint(42)
    with pytest.raises(TypeError):
        Scheme().fingerprints([1, 2])
    # Any text, however odd, has a fingerprint.
    for text in ["", " ", "\x00\x01", "🦀" * 1000, "a" * 1_000_000]:
        assert 0 <= Scheme().fingerprint(text) < 2**64
