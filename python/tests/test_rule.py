"""Rule, Signature and the batch kernels: the same signatures one at a time and in batches, the
fingerprint of Scheme, and a ValueError or TypeError (never a crash) for buffers that do not fit."""

import gzip
import json

import numpy as np
import pytest

from conftest import CORPUS, document_text
from tantivy_simhash import Rule, Scheme, components


@pytest.fixture(scope="module")
def texts():
    docs = [json.loads(line) for line in gzip.open(CORPUS, "rt", encoding="utf-8")]
    return [document_text(d) for d in docs[:300]] + ["", "!!!", "word"]


def test_signatures_one_at_a_time_equal_the_batch_and_the_scheme(texts):
    rule, scheme = Rule(), Scheme()
    sigs = [rule.sign(t) for t in texts]
    fps, sketches = rule.sign_many(texts)
    assert np.frombuffer(fps, "<u8").tolist() == [s.fingerprint for s in sigs]
    assert [scheme.fingerprint(t) for t in texts] == [s.fingerprint for s in sigs]
    width = rule.sketch_bytes
    assert width == 160 and len(sketches) == width * len(texts)
    assert [sketches[i * width : (i + 1) * width] for i in range(len(texts))] == [s.sketch for s in sigs]
    docs, keys = rule.postings(fps, sketches)
    docs, keys = np.frombuffer(docs, "<u4"), np.frombuffer(keys, "<u8")
    for i, s in enumerate(sigs):
        assert keys[docs == i].tolist() == s.keys
    # A text without tokens has an all-zero sketch and only its simhash block keys.
    assert rule.sign("").keys == rule.sign("").keys[: rule.keys_per_document - rule.bands]
    assert rule.sign("").sketch == bytes(width)
    assert len(rule.sign(texts[0]).keys) == rule.keys_per_document == 16


def test_matches_is_symmetric_and_says_why(texts):
    rule = Rule()
    sigs = [rule.sign(t) for t in texts[:120]]
    kinds = set()
    for i, a in enumerate(sigs):
        same = rule.matches(a, a)
        assert (same.kind, same.distance, same.band) == ("simhash", 0, None)
        for b in sigs[i + 1 :]:
            e, f = rule.matches(a, b), rule.matches(b, a)
            assert (e is None) == (f is None)
            if e is not None:
                kinds.add(e.kind)
                assert (e.kind, e.distance, e.band) == (f.kind, f.distance, f.band)
                assert bin(a.fingerprint ^ b.fingerprint).count("1") == e.distance
                if e.kind == "resemblance":
                    assert e.resemblance >= 0.55 and e.distance > 3
                    assert set(a.keys) & set(b.keys)
                else:
                    assert e.distance <= 3
    assert kinds == {"simhash", "resemblance"}
    assert "0.55" in str(rule) and rule.id.startswith("rule-v1;")


def test_batch_kernels_refuse_buffers_that_do_not_fit():
    rule = Rule()
    fps, sketches = rule.sign_many(["one text with words", "another text with other words"])
    with pytest.raises(ValueError, match="multiple of 8"):
        rule.postings(fps[:-1], sketches)
    with pytest.raises(ValueError, match="sketches has 127 bytes for 2 fingerprints"):
        rule.postings(fps, sketches[:127])
    _, keys = rule.postings(fps, sketches)
    with pytest.raises(ValueError, match="keys has 32 entries but fingerprints has 2"):
        rule.hot_keys(keys, fps, sketches, 10)
    with pytest.raises(ValueError, match="keys has 2 entries but rows has 1"):
        rule.verify_groups(fps, fps[:8], fps, sketches, 0, b"")
    with pytest.raises(ValueError, match="a has 2 entries but b has 1"):
        components(fps, fps[:8])
    with pytest.raises(TypeError):
        rule.matches(rule.sign("a b c"), "not a signature")
    with pytest.raises(TypeError):
        rule.sign_many(["text", 3])
    with pytest.raises(ValueError, match="unknown language"):
        Rule("klingon")


def pair_set(columns) -> set:
    types = ["<u8", "<u8", "<u4", "<f4", "<i4"]
    return set(zip(*(np.frombuffer(b, t).tolist() for b, t in zip(columns, types))))


def test_the_group_kernel_reports_what_the_in_memory_join_reports(texts):
    """verify_groups over all postings at once (every key group complete) equals pairs_in_memory."""
    rule = Rule()
    fps, sketches = rule.sign_many(texts)
    docs, keys = rule.postings(fps, sketches)
    at = np.frombuffer(docs, "<u4").astype(np.intp)
    fp = np.frombuffer(fps, "<u8")[at]
    sk = np.frombuffer(sketches, "<u8").reshape(len(texts), -1)[at]
    rows = at.astype("<u8")
    for cap in (0, 2):
        hot = rule.hot_keys(keys, fp.tobytes(), sk.tobytes(), cap) if cap else b""
        got, got_stats = rule.verify_groups(keys, rows.tobytes(), fp.tobytes(), sk.tobytes(), cap, hot)
        want, want_stats = rule.pairs_in_memory(fps, sketches, cap)
        assert pair_set(got) == pair_set(want)
        assert got_stats == want_stats
        assert want_stats["pairs"] > 0
        if cap:
            assert want_stats["hot_keys"] > 0


def test_min_resemblance_keeps_the_pairs_whose_estimate_reaches_it_whichever_branch(texts):
    """The opt-in of pairs_in_memory against a brute force over Rule.matches: every pair the rule
    matches whose sketches estimate at least the threshold (Evidence.resemblance, computed for
    both branches), or that has an empty sketch; nothing else."""
    rule = Rule()
    sigs = [rule.sign(t) for t in texts]
    fps, sketches = rule.sign_many(texts)
    empty = bytes(rule.sketch_bytes)
    everything = {}
    for i, a in enumerate(sigs):
        for j in range(i + 1, len(sigs)):
            e = rule.matches(a, sigs[j])
            if e is not None:
                everything[(i, j)] = (e.kind, e.resemblance, a.sketch == empty or sigs[j].sketch == empty)
    # The corpus has simhash matches with an estimate above and below the last threshold, and
    # pairs without one (the texts without shingles), so the filter is seen to act on the
    # simhash branch too and to keep what it cannot judge.
    simhash_estimates = [r for kind, r, none in everything.values() if kind == "simhash" and not none]
    assert min(simhash_estimates) < 0.9 <= max(simhash_estimates)
    assert any(none for _, _, none in everything.values())
    _, stats_all = rule.pairs_in_memory(fps, sketches, 0)
    assert "below_min_resemblance" not in stats_all
    for t in (0.0, 0.55, 0.7, 0.9):
        columns, stats = rule.pairs_in_memory(fps, sketches, 0, min_resemblance=t)
        got = {(a, b) for a, b, *_ in pair_set(columns)}
        # The estimate is an f32 and so is the threshold the binding compares it with.
        want = {p for p, (_, r, no_estimate) in everything.items() if r >= np.float32(t) or no_estimate}
        assert got == want
        assert stats["pairs"] == len(want)
        assert stats["below_min_resemblance"] == len(everything) - len(want) == stats_all["pairs"] - len(want)
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="min_resemblance"):
            rule.pairs_in_memory(fps, sketches, 0, min_resemblance=bad)


def test_a_wider_band_key_is_more_bits_of_the_same_key(texts):
    """``Rule(key_bits=32)`` signs with the same fingerprint and bins as the index's rule (20-bit
    band keys), and each of its band keys holds the 20-bit key in its low bits, so its pairs are
    a subset of the 20-bit rule's: checked on the keys and on the join's pairs."""
    narrow, wide = Rule(), Rule(key_bits=32)
    assert (narrow.key_bits, wide.key_bits) == (20, 32)
    assert (narrow.sketch_bytes, wide.sketch_bytes) == (160, 176)
    assert "key32" in wide.id and "key20" in narrow.id
    assert repr(wide) == 'Rule(language="auto", key_bits=32, fold_scripts=True)'
    blocks = narrow.keys_per_document - narrow.bands
    for t in texts:
        a, b = narrow.sign(t), wide.sign(t)
        assert a.fingerprint == b.fingerprint
        assert a.sketch[32:] == b.sketch[48:]  # the bins, after 4 and 6 words of band keys
        assert a.keys[:blocks] == b.keys[:blocks]
        assert [k & ~(2**32 - 1 ^ 2**20 - 1) for k in b.keys[blocks:]] == a.keys[blocks:]
    pairs = {}
    for rule in (narrow, wide):
        fps, sketches = rule.sign_many(texts)
        columns, _stats = rule.pairs_in_memory(fps, sketches, 0)
        pairs[rule.key_bits] = set(zip(np.frombuffer(columns[0], "<u8").tolist(), np.frombuffer(columns[1], "<u8").tolist()))
    assert len(pairs[32]) > 100 and pairs[32] <= pairs[20]


def test_a_band_key_width_outside_16_to_32_is_refused_with_the_reason():
    for bad in (0, 15, 33, 64):
        with pytest.raises(ValueError, match=rf"Rule\(key_bits={bad}\): .*band key bits = {bad}; expected 16 to 32"):
            Rule(key_bits=bad)
    with pytest.raises(TypeError):
        Rule("auto", 32)  # keyword only
    with pytest.raises(OverflowError):
        Rule(key_bits=-1)


def test_fold_scripts_false_signs_traditional_chinese_as_written():
    """The default folds Traditional to Simplified (a page and its other-script edition sign
    alike); fold_scripts=False does not, and signs Simplified text as the default does."""
    simplified = "这是一个关于搜索引擎如何发现重复网页的简短说明，它们在不同的网站上以不同的字体发布。" * 3
    traditional = "這是一個關於搜索引擎如何發現重複網頁的簡短說明，它們在不同的網站上以不同的字體發佈。" * 3
    folding, as_written = Rule(), Rule(fold_scripts=False)
    assert folding.fold_scripts and not as_written.fold_scripts
    assert "fold_scripts=False" in repr(as_written)
    assert folding.sign(traditional) == folding.sign(simplified)
    assert as_written.sign(simplified) == folding.sign(simplified)
    a, b = as_written.sign(traditional), as_written.sign(simplified)
    assert a != b
    assert as_written.matches(a, b) is None, "the two scripts share few characters"
    with pytest.raises(ValueError, match="unknown language"):
        Rule("klingon", fold_scripts=False)
