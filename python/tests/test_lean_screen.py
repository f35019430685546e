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
    (``dask_bench --count-records``), under the index's rule (20-bit band keys): the pairs of
    ``Rule.pairs_in_memory`` on the same corpus, and chance candidates screened out on the way."""
    from tantivy_simhash.dask_bench import count_records, synthetic_partition

    counted = count_records(6000, 4, seed=5, dup_fraction=0.3, pool=5.0, key_bits=20)
    rule = Rule()
    fps, sketches = rule.sign_many(synthetic_partition(5, 0, 6000, 6000, 0.3, 5.0)["text"].tolist())
    columns, _stats = rule.pairs_in_memory(fps, sketches, 0)
    expected = sorted(zip(np.frombuffer(columns[0], "<u8").tolist(), np.frombuffer(columns[1], "<u8").tolist()))
    assert len(expected) > 100
    assert counted["pairs"] == expected
    assert counted["dropped_per_doc"] > 0
    assert counted["bytes_per_doc"]["postings"] == 16 * 4 + 8 * 12


def test_the_kernels_by_hand_give_the_single_machine_join_at_every_key_width():
    """The same by hand under rules of other band key widths: 16 and 28 bits (the band's number
    packed into the 32-bit group key) and 29 and 32 (the band's number in the position word)."""
    from tantivy_simhash.dask_bench import count_records, synthetic_partition

    texts = synthetic_partition(5, 0, 3000, 3000, 0.3, 5.0)["text"].tolist()
    for key_bits in (16, 28, 29, 32):
        counted = count_records(3000, 3, seed=5, dup_fraction=0.3, pool=5.0, key_bits=key_bits)
        rule = Rule(key_bits=key_bits)
        fps, sketches = rule.sign_many(texts)
        columns, _stats = rule.pairs_in_memory(fps, sketches, 0)
        expected = sorted(zip(np.frombuffer(columns[0], "<u8").tolist(), np.frombuffer(columns[1], "<u8").tolist()))
        assert len(expected) > 50
        assert counted["key_bits"] == key_bits
        assert counted["pairs"] == expected, key_bits


def test_band_groups_are_exactly_the_documents_sharing_a_band_key():
    """``lean_post`` then ``lean_candidates`` (one partition, one key group) name exactly the pairs
    that share a band's key, plus those within the simhash distance: a brute force over sketches
    whose band keys come from a pool of 20 values, the same values in every band (a group of the
    value alone would pair documents across bands) and values equal in their low 20 bits (a group
    of fewer bits would pair those)."""
    from tantivy_simhash._native import lean_candidates, lean_post

    rng = np.random.default_rng(3)
    n = 300
    for key_bits in (20, 32):
        rule = Rule(key_bits=key_bits)
        band_words = rule.sketch_bytes // 8 - BINS * BITS // 64
        mask = (1 << key_bits) - 1
        # With 32 bits, values equal in their low 20 bits; with 20, distinct values.
        pool = [(k << 20 | 0x5A5A5) if key_bits > 20 else k * 0x3F1F for k in range(1, 21)]
        assert len({v & mask for v in pool}) == len(pool)
        bands = rng.choice(pool, size=(n, rule.bands))
        fps = rng.integers(0, 2**63, n, dtype=np.uint64)
        fps[1::10] = fps[0::10] ^ np.uint64(0b101)  # some pairs within the distance
        sketches = []
        for i in range(n):
            field = 0
            for b, v in enumerate(bands[i]):
                field |= int(v) << (b * key_bits)
            words = [(field >> (64 * w)) & (2**64 - 1) for w in range(band_words)]
            words += rng.integers(0, 2**63, BINS * BITS // 64, dtype=np.uint64).tolist()
            sketches.append(np.array(words, dtype="<u8").tobytes())
        parts, kinds, blobs = lean_post(rule, fps.astype("<u8").tobytes(), b"".join(sketches), 1)
        _parts, kinds, blobs, _largest = lean_candidates(rule, [0] * len(parts), kinds, blobs)
        found = set()
        for kind, blob in zip(kinds, blobs):
            assert kind in (2, 3)
            for r in range(0, len(blob), 12):
                a = int.from_bytes(blob[r : r + 4], "little")
                b = int.from_bytes(blob[r + 4 : r + 12], "little")
                assert (a, b) not in found
                found.add((a, b))
        expected = {
            (i, j)
            for i in range(n)
            for j in range(i + 1, n)
            if (bands[i] == bands[j]).any() or bin(int(fps[i]) ^ int(fps[j])).count("1") <= 3
        }
        assert len(expected) > 1000 and len(expected) < n * (n - 1) // 2
        assert found == expected, key_bits
