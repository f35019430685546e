"""The screen of the Dask pipeline's lean shuffle (``python/src/lean.rs``): a candidate no block
group named is dropped when the bins whose bit 0 differs leave fewer agreeing bins than the rule's
resemblance threshold needs. Checked against the single-machine join (``Rule.pairs_in_memory``)
on sketches built bin by bin: the bound is the join's own, to the bin, and no pair the join
matches is screened out."""

import numpy as np

from tantivy_simhash import Rule
from tantivy_simhash._native import lean_screen_pairs

# The default rule's sketch: 4 words of band keys (12 x 20 bits), then 256 bins of 4 bits.
BAND_WORDS, BINS, BITS = 4, 256, 4


def pack(bins: np.ndarray, band_word: int) -> bytes:
    """A sketch: every band word ``band_word`` (so two sketches with the same one share every
    band), then ``bins`` (values 0..15) packed 16 to a word, bin 0 lowest."""
    per = 64 // BITS
    shifts = (np.arange(BINS, dtype=np.uint64) % np.uint64(per)) * np.uint64(BITS)
    bin_words = (bins.astype(np.uint64) << shifts).reshape(-1, per).sum(axis=1, dtype=np.uint64)
    words = np.concatenate([np.full(BAND_WORDS, band_word, dtype=np.uint64), bin_words])
    return words.astype("<u8").tobytes()


def join_matches(rule: Rule, pairs):
    """For each ``(a_sketch, b_sketch)``: whether the single-machine join matches them. Each pair
    gets band words of its own and fingerprints 64 bits apart, so a pair can match only by the
    resemblance branch and only with its own partner."""
    fps, sketches = [], []
    rng = np.random.default_rng(7)
    for a, b in pairs:
        fp = int(rng.integers(0, 2**63))
        fps += [fp, fp ^ (2**64 - 1)]
        sketches += [a, b]
    columns, _stats = rule.pairs_in_memory(
        np.array(fps, dtype="<u8").tobytes(), b"".join(sketches), 0
    )
    found = set(zip(np.frombuffer(columns[0], "<u8").tolist(), np.frombuffer(columns[1], "<u8").tolist()))
    assert all(j == i + 1 and i % 2 == 0 for i, j in found), "a pair matched outside its own partner"
    return [(2 * k, 2 * k + 1) in found for k in range(len(pairs))]


def screen(rule: Rule, pairs):
    least, verdicts = lean_screen_pairs(rule, b"".join(a for a, _ in pairs), b"".join(b for _, b in pairs))
    return least, [bool(v) for v in verdicts]


def test_the_bound_is_the_rule_estimators_to_the_bin():
    """Pairs that agree in exactly ``a`` bins, for every ``a``, each other bin differing in bit 0
    (so the screen knows every disagreement): the screen passes exactly the pairs the join
    matches, and its bound is the fewest agreeing bins the join matches with. A bound one bin
    higher drops a match; one lower passes a pair the join rejects."""
    rule = Rule()
    assert rule.sketch_bytes == (BAND_WORDS + BINS * BITS // 64) * 8
    rng = np.random.default_rng(1)
    pairs = []
    for agree in range(BINS + 1):
        a = rng.integers(0, 16, BINS)
        b = a.copy()
        differ = rng.permutation(BINS)[: BINS - agree]
        b[differ] ^= 1 | (2 * rng.integers(0, 8, len(differ)))  # bit 0 flipped, others at random
        pairs.append((pack(a, 1000 + agree), pack(b, 1000 + agree)))
    matched = join_matches(rule, pairs)
    least, passed = screen(rule, pairs)
    assert any(matched) and not all(matched)
    assert least == matched.index(True)
    assert all(matched[least:]), "the estimator is monotone for the default rule"
    assert passed == matched


def test_no_pair_the_join_matches_is_screened_out():
    """Random pairs around the threshold whose disagreeing bins differ in bit 0 or only in the
    higher bits (which the screen cannot see): every pair the join matches passes, and pairs
    far below the threshold are dropped."""
    rule = Rule()
    rng = np.random.default_rng(2)
    pairs = []
    for k in range(3000):
        agree = int(rng.integers(100, BINS + 1))
        a = rng.integers(0, 16, BINS)
        b = a.copy()
        differ = rng.permutation(BINS)[: BINS - agree]
        seen = rng.random(len(differ)) < rng.random()  # a share of the disagreements the screen sees
        b[differ[seen]] ^= 1
        b[differ[~seen]] ^= 2 * rng.integers(1, 8, int((~seen).sum()))
        pairs.append((pack(a, 5000 + k), pack(b, 5000 + k)))
    matched = join_matches(rule, pairs)
    least, passed = screen(rule, pairs)
    assert sum(matched) > 100 and sum(not m for m in matched) > 100
    assert all(p for p, m in zip(passed, matched) if m), "a matching pair was screened out"
    # Unrelated sketches (chance agreement 1/16) are what the screen is for: nearly all dropped.
    chance = [(pack(rng.integers(0, 16, BINS), 9000 + k), pack(rng.integers(0, 16, BINS), 9000 + k)) for k in range(500)]
    _, passed = screen(rule, chance)
    assert sum(passed) < 25


def test_the_kernels_by_hand_give_the_single_machine_join():
    """The five kernels called as the pipeline calls them, over 4 partitions, without Dask
    (``dask_bench --count-records``): the pairs of ``Rule.pairs_in_memory`` on the same corpus,
    and chance candidates screened out on the way."""
    from tantivy_simhash.dask_bench import count_records, synthetic_partition

    counted = count_records(6000, 4, seed=5, dup_fraction=0.3, pool=5.0)
    rule = Rule()
    fps, sketches = rule.sign_many(synthetic_partition(5, 0, 6000, 6000, 0.3, 5.0)["text"].tolist())
    columns, _stats = rule.pairs_in_memory(fps, sketches, 0)
    expected = sorted(zip(np.frombuffer(columns[0], "<u8").tolist(), np.frombuffer(columns[1], "<u8").tolist()))
    assert len(expected) > 100
    assert counted["pairs"] == expected
    assert counted["dropped_per_doc"] > 0
    assert counted["bytes_per_doc"]["postings"] == 16 * 4 + 8 * 12
