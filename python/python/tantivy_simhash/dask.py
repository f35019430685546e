"""Near-duplicates of corpora beyond one machine, on Dask distributed.

The same match rule as the index (:class:`tantivy_simhash.Rule`: simhash within 3, or a shared
MinHash band and an estimated resemblance of at least 0.55) with 32-bit band keys by default
(``key_bits``, :data:`DEFAULT_KEY_BITS`; the index's are 20 bits: pass ``key_bits=20`` for exactly
its pairs), computed as a MapReduce over a Dask DataFrame of documents, with the crate's kernels
doing the work inside each partition.
The exact join (the default, ``max_postings_per_key=None``) takes the **lean shuffle**:

1. **sign** (map): each partition signs its texts (one analysis per text, in Rust, the GIL
   released) and numbers its documents ``row = partition << 32 | position`` (input order), so a
   row says where its signature is; the signatures stay there (persisted);
2. **post** (map): one posting per key: for the 4 simhash block keys ``key`` (32 bits), the
   position in the partition (32 bits) and the fingerprint (16 bytes); for the 12 MinHash bands
   the band's whole key and the position, the band's number beside one of them (8 bytes): 160
   bytes a document, no sketch;
3. **shuffle on key** and **candidates** (map): in each block group, the pairs within the
   rule's distance (decided by the fingerprints; reported by their first shared block key
   only); in each band group, every pair: together a superset of the pairs the rule matches
   (a match is within the distance, so it shares a block key, or it shares a band);
4. **join by row, three times**: the candidates go to the partition of their first row (12
   bytes each), where duplicates are dropped; a pair a block group named (a match for sure) goes
   on bare, any other with the first row's *screen* (bit 0 of each of its 256 bins: 32 bytes) to
   the partition of the second row, which drops the pairs whose screens already differ in more
   bins than the rule's threshold allows (an exact bound: such a pair cannot estimate a
   resemblance of 0.55), and sends the rest back with the second row's signature, where
   ``MatchRule::matches`` decides each with both signatures at hand: a document's signature
   crosses the network once per candidate that survives the screen, never with its postings;
5. **clusters**: by leader (the default, as the index's ``clusters()``): in input order a
   document joins the first earlier leader it matches, else leads; up to ``client_max_edges``
   pairs the client walks them in Rust, beyond it each connected component is walked on a
   worker. As connected components (``mode="components"``): each partition of pairs is reduced
   to a spanning forest (union-find in Rust); up to ``client_max_edges`` forest edges the
   client joins them by union-find, beyond it :func:`distributed_components` (large-star /
   small-star) does it on the workers. The ids of pairs and cluster leaders are joined by row
   the same way.

With a hot-key bound (``max_postings_per_key=m``) the pipeline takes the **key-group path**
instead, which reproduces the bounded single-machine join (``signature::pairs_in_key_group``):
every posting carries the whole signature (``16 x (24 + sketch)`` bytes a document through the
shuffle: 3,200 with 32-bit band keys);
the shuffled postings are persisted and read twice (hot keys first); a key held by more than
``m`` distinct signatures compares each one with the next ``m`` only (input order), so a pair is
missed only when every key it shares is hot and it lies more than ``m`` apart in its first
shared key's postings.

Results (:func:`deduplicate`) are Parquet datasets: ``pairs`` (``id_a, id_b, distance,
resemblance, band``; ``band`` is -1 when the simhash branch matched) and ``clusters`` (``id,
cluster``: every document, ``cluster`` the id of its leader, or with ``mode="components"`` of
the first document of its component in input order; a document's own id when it is alone).

The single-machine join's opt-ins, with its meaning and errors: ``fold_scripts=False`` (every
entry point that signs) signs Traditional Chinese as written (``Rule(fold_scripts=False)``);
``min_resemblance=T`` (:func:`find_pairs`, :func:`deduplicate`) reports only the rule's pairs
whose sketches estimate at least ``T``, whichever branch matched them (``Rule.pairs_in_memory(...,
min_resemblance=T)``'s pairs), decided where each pair is verified, and clusters those.

Costs (measured figures and the command in docs/DISTRIBUTED.md): the lean shuffle moves the
postings (160 bytes a document), 12 bytes per candidate pair to its first row, 12 (sure pairs)
or 44 (screened pairs) to its second, and 196 (the pair, a fingerprint and a 176-byte sketch; 180
with 20-bit band keys) back for each pair that survives the screen. Chance band collisions add
``12 * n / 2**key_bits / 2`` candidates a document at ``n`` documents: ~5.7 at 1M with 20 bits,
0.0014 with 32 bits (11 at 8 billion). Its work per group is quadratic:
a pair of a block group costs a popcount, a pair of a band group a candidate; groups of texts
from one vocabulary or one template can be large (use the bound to cap them).

Install with ``pip install "./python[dask]"`` (``dask[distributed]``, ``pyarrow``)::

    from distributed import Client, LocalCluster
    import dask.dataframe as dd
    from tantivy_simhash.dask import deduplicate

    if __name__ == "__main__":  # worker processes re-import the main module
        with LocalCluster(n_workers=2, processes=True) as cluster, Client(cluster):
            docs = dd.read_parquet("corpus/")         # columns id, text
            summary = deduplicate(docs, "out/")       # out/pairs/, out/clusters/
            print(summary)
"""

from __future__ import annotations

import functools
import time
from typing import Any, Dict, Optional, Tuple

import numpy as np
import pandas as pd

import dask
import dask.dataframe as dd

from ._native import Rule, components, lean_attach, lean_candidates, leaders, lean_post, lean_screen, lean_verify

__all__ = [
    "DEFAULT_MAX_POSTINGS_PER_KEY",
    "DEFAULT_CLIENT_MAX_EDGES",
    "signatures",
    "postings",
    "find_pairs",
    "cluster_labels",
    "component_frame",
    "distributed_components",
    "leader_frame",
    "deduplicate",
]

#: A hot-key bound for callers that want one (``max_postings_per_key``; the default is none):
#: a key held by more distinct signatures than this compares each one with the next this many
#: only, on the key-group path.
DEFAULT_MAX_POSTINGS_PER_KEY = 1000

#: The band key width of the pipeline's rule unless the caller passes ``key_bits``: 32, not the
#: index's 20. Two unrelated documents share one of the 12 bands by chance with probability
#: ``12 / 2**key_bits``, and every such pair is a candidate the pipeline must move and screen: ~5.7
#: a document at 1M documents with 20 bits, ~46,000 at 8 billion; with 32 bits 0.0014 and 11. The
#: rule is otherwise the index's (same bins, estimate and threshold; a 32-bit band key is 12 more
#: bits of the same hash, so every pair it finds the 20-bit rule finds too). The 20-bit rule also
#: reports the rare pair that matches only through a chance band collision; docs/DISTRIBUTED.md
#: counts them. Pass ``key_bits=20`` for exactly the index's pairs.
DEFAULT_KEY_BITS = 32

_ROW_SHIFT = 32

#: What tasks ship instead of a rule (which holds a signer and is not picklable): its language,
#: band key width and whether it folds Traditional Chinese to Simplified.
RuleSpec = Tuple[str, int, bool]


@functools.lru_cache(maxsize=8)
def _rule(spec: RuleSpec) -> Rule:
    """One rule (and its signer) per worker process and rule spec."""
    language, key_bits, fold_scripts = spec
    return Rule(language, key_bits=key_bits, fold_scripts=fold_scripts)


def _spec(language: str, key_bits: int, fold_scripts: bool = True, min_resemblance: Optional[float] = None) -> RuleSpec:
    """The rule's spec, checked now rather than in the first task: the errors of
    ``Rule(language, key_bits=..., fold_scripts=...)`` (``ValueError`` for an unknown language or
    a key width outside 16..=32) and of ``Rule.pairs_in_memory``'s ``min_resemblance`` (raised
    by that method itself, on no documents, so the message is the single-machine join's)."""
    rule = Rule(language, key_bits=key_bits, fold_scripts=fold_scripts)
    if min_resemblance is not None:
        rule.pairs_in_memory(b"", b"", 0, min_resemblance=min_resemblance)
    return (language, int(key_bits), bool(fold_scripts))


def _sketch_columns(spec: RuleSpec):
    return [f"s{i}" for i in range(_rule(spec).sketch_bytes // 8)]


def _u64(buf: bytes) -> np.ndarray:
    return np.frombuffer(buf, dtype="<u8").astype(np.uint64, copy=False)


def _sign_partition(part: pd.DataFrame, id: str, text: str, spec: RuleSpec, partition_info=None):
    rule = _rule(spec)
    if partition_info is None:
        # Row numbers must be unique across partitions; without the partition's number they
        # would not be.
        raise RuntimeError("Dask did not pass partition_info to the signing task; expected map_partitions to")
    number = int(partition_info["number"])
    n = len(part)
    if n >= 1 << _ROW_SHIFT:
        raise ValueError(
            f"partition {number} has {n} documents; expected fewer than 2**32 per partition: "
            "repartition the input"
        )
    texts = part[text]
    if texts.isna().any():
        missing = part[id][texts.isna()].iloc[0]
        raise ValueError(f"document {missing!r} has no {text!r} value; expected a string for every row")
    fps, sketches = rule.sign_many(texts.astype(str).tolist())
    rows = (np.uint64(number) << np.uint64(_ROW_SHIFT)) + np.arange(n, dtype=np.uint64)
    sk = np.frombuffer(sketches, dtype="<u8").reshape(n, -1)
    out = {"row": rows, "id": part[id].to_numpy(), "fingerprint": _u64(fps)}
    for i, name in enumerate(_sketch_columns(spec)):
        out[name] = sk[:, i].astype(np.uint64)
    return pd.DataFrame(out, index=part.index)


def _signature_meta(docs: dd.DataFrame, id: str, spec: RuleSpec) -> pd.DataFrame:
    meta = {
        "row": pd.Series([], dtype=np.uint64),
        "id": pd.Series([], dtype=docs[id].dtype),
        "fingerprint": pd.Series([], dtype=np.uint64),
    }
    for name in _sketch_columns(spec):
        meta[name] = pd.Series([], dtype=np.uint64)
    return pd.DataFrame(meta)


def signatures(
    docs: dd.DataFrame,
    *,
    id: str = "id",
    text: str = "text",
    language: str = "auto",
    key_bits: int = DEFAULT_KEY_BITS,
    fold_scripts: bool = True,
) -> dd.DataFrame:
    """The signature of every document of ``docs`` (a Dask DataFrame with columns ``id`` and
    ``text``) under ``Rule(language, key_bits=key_bits, fold_scripts=fold_scripts)``
    (``fold_scripts=False``: Traditional Chinese signed as written, not folded to Simplified, as
    ``Rule``'s): columns ``row`` (``partition << 32 |
    position``: input order), ``id``, ``fingerprint`` and the sketch as ``s0 ..`` (``uint64``,
    ``Rule.sketch_bytes / 8`` of them: 22 with 32-bit band keys, 20 with 20-bit ones). Lazy.
    Cost: one analysis per text in Rust, on the task's thread. Raises ``ValueError`` now for an
    unknown language or ``key_bits`` outside 16..=32, and when computed for a missing text or a
    partition of 2**32 rows or more; ``KeyError`` now for a missing column."""
    spec = _spec(language, key_bits, fold_scripts)
    for column in (id, text):
        if column not in docs.columns:
            raise KeyError(f"column {column!r} not in the documents; they have {list(docs.columns)}")
    return docs.map_partitions(
        _sign_partition,
        id,
        text,
        spec,
        meta=_signature_meta(docs, id, spec),
        align_dataframes=False,
    )


def _post_partition(sigs: pd.DataFrame, spec: RuleSpec) -> pd.DataFrame:
    rule = _rule(spec)
    names = _sketch_columns(spec)
    fps = sigs["fingerprint"].to_numpy(dtype=np.uint64)
    sk = np.ascontiguousarray(sigs[names].to_numpy(dtype=np.uint64))
    docs, keys = rule.postings(fps.astype("<u8").tobytes(), sk.astype("<u8").tobytes())
    at = np.frombuffer(docs, dtype="<u4").astype(np.intp)
    out = {
        "key": _u64(keys),
        "row": sigs["row"].to_numpy(dtype=np.uint64)[at],
        "fingerprint": fps[at],
    }
    for i, name in enumerate(names):
        out[name] = sk[at, i]
    return pd.DataFrame(out)


def postings(
    sigs: dd.DataFrame, *, language: str = "auto", key_bits: int = DEFAULT_KEY_BITS, fold_scripts: bool = True
) -> dd.DataFrame:
    """One row per key of each signature (:func:`signatures`, signed with the same ``language``,
    ``key_bits`` and ``fold_scripts``): ``key, row, fingerprint, s0 ..``, all ``uint64`` (24
    bytes and the sketch a posting, 16 postings a document). Lazy."""
    spec = _spec(language, key_bits, fold_scripts)
    meta = pd.DataFrame({"key": pd.Series([], dtype=np.uint64), "row": pd.Series([], dtype=np.uint64),
                         "fingerprint": pd.Series([], dtype=np.uint64)})
    for name in _sketch_columns(spec):
        meta[name] = pd.Series([], dtype=np.uint64)
    return sigs.map_partitions(_post_partition, spec, meta=meta)


def _columns_of(part: pd.DataFrame, spec: RuleSpec):
    names = _sketch_columns(spec)
    return (
        part["key"].to_numpy(dtype=np.uint64).astype("<u8").tobytes(),
        part["fingerprint"].to_numpy(dtype=np.uint64).astype("<u8").tobytes(),
        np.ascontiguousarray(part[names].to_numpy(dtype=np.uint64)).astype("<u8").tobytes(),
    )


def _hot_partition(part: pd.DataFrame, spec: RuleSpec, cap: int) -> pd.DataFrame:
    keys, fps, sk = _columns_of(part, spec)
    hot = _rule(spec).hot_keys(keys, fps, sk, cap)
    return pd.DataFrame({"key": _u64(hot)})


_PAIR_META = pd.DataFrame(
    {
        "row_a": pd.Series([], dtype=np.uint64),
        "row_b": pd.Series([], dtype=np.uint64),
        "distance": pd.Series([], dtype=np.uint32),
        "resemblance": pd.Series([], dtype=np.float32),
        "band": pd.Series([], dtype=np.int32),
    }
)


def _pair_frame(columns) -> pd.DataFrame:
    a, b, distance, resemblance, band = columns
    return pd.DataFrame(
        {
            "row_a": _u64(a),
            "row_b": _u64(b),
            "distance": np.frombuffer(distance, dtype="<u4").astype(np.uint32),
            "resemblance": np.frombuffer(resemblance, dtype="<f4").astype(np.float32),
            "band": np.frombuffer(band, dtype="<i4").astype(np.int32),
        }
    )


def _verify_partition(
    part: pd.DataFrame, spec: RuleSpec, cap: int, hot: bytes, min_resemblance: Optional[float]
) -> pd.DataFrame:
    keys, fps, sk = _columns_of(part, spec)
    rows = part["row"].to_numpy(dtype=np.uint64).astype("<u8").tobytes()
    columns, _stats = _rule(spec).verify_groups(keys, rows, fps, sk, cap, hot, min_resemblance=min_resemblance)
    return _pair_frame(columns)


# The lean shuffle (exact join, ``max_postings_per_key=None``): the five kernels of
# ``python/src/lean.rs`` (its module doc says why the pairs are exactly the rule's). Every shuffle
# moves packed shards: one row per (source partition, destination partition, kind) holding the
# records as one packed array, so the bytes through the shuffle are the records' own (a shuffle of
# one row per record adds Dask's index and partition columns, about 9 bytes a record: more than a
# whole 8-byte band posting). Rows say where a document's signature is: partition ``row >> 32``.
_SHARD_META = pd.DataFrame(
    {
        "part": pd.Series([], dtype=np.int32),
        "src": pd.Series([], dtype=np.int32),
        "kind": pd.Series([], dtype=np.int8),
        "blob": pd.Series([], dtype=object),
    }
)


def _shard_frame(parts, kinds, blobs, src: int = -1) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "part": np.asarray(parts, dtype=np.int32),
            "src": np.full(len(parts), src, dtype=np.int32),
            "kind": np.frombuffer(kinds, dtype=np.int8),  # the kernels return the kinds as bytes
            "blob": pd.Series(list(blobs), dtype=object),
        }
    )


def _sketch_bytes(sigs: pd.DataFrame, spec: RuleSpec) -> bytes:
    names = _sketch_columns(spec)
    return np.ascontiguousarray(sigs[names].to_numpy(dtype=np.uint64)).astype("<u8").tobytes()


def _local_signatures(sigs: pd.DataFrame, spec: RuleSpec):
    """``(number, fingerprints, sketches)`` of a partition of signatures, as the kernels take them."""
    rows = sigs["row"].to_numpy(dtype=np.uint64)
    number = int(rows[0] >> np.uint64(_ROW_SHIFT)) if len(rows) else 0
    fps = sigs["fingerprint"].to_numpy(dtype=np.uint64).astype("<u8").tobytes()
    return number, fps, _sketch_bytes(sigs, spec)


def _shard_columns(shards: pd.DataFrame):
    return shards["kind"].to_numpy(dtype=np.uint8).tobytes(), shards["blob"].tolist()


def _lean_post_partition(sigs: pd.DataFrame, spec: RuleSpec, groups: int) -> pd.DataFrame:
    number, fps, sketches = _local_signatures(sigs, spec)
    return _shard_frame(*lean_post(_rule(spec), fps, sketches, groups), src=number)


def _lean_candidates_partition(shards: pd.DataFrame, spec: RuleSpec) -> pd.DataFrame:
    kinds, blobs = _shard_columns(shards)
    srcs = shards["src"].to_numpy(dtype=np.int64).astype(np.uint32).tolist()
    parts, kinds, blobs, _largest = lean_candidates(_rule(spec), srcs, kinds, blobs)
    return _shard_frame(parts, kinds, blobs)


def _lean_attach_partition(shards: pd.DataFrame, sigs: pd.DataFrame, spec: RuleSpec) -> pd.DataFrame:
    """At the partition of the first rows: each candidate once, bare when a block group named
    it, else with the first row's screen, to the partition of the second row."""
    return _shard_frame(*lean_attach(_rule(spec), *_local_signatures(sigs, spec), *_shard_columns(shards)))


def _lean_screen_partition(shards: pd.DataFrame, sigs: pd.DataFrame, spec: RuleSpec) -> pd.DataFrame:
    """At the partition of the second rows: the candidates that can still match, with the second
    row's signature, back to the partition of the first row."""
    parts, kinds, blobs, _dropped = lean_screen(
        _rule(spec), *_local_signatures(sigs, spec), *_shard_columns(shards)
    )
    return _shard_frame(parts, kinds, blobs)


def _lean_verify_partition(
    shards: pd.DataFrame, sigs: pd.DataFrame, spec: RuleSpec, min_resemblance: Optional[float]
) -> pd.DataFrame:
    """At the partition of the first rows: the rule's verdict on each candidate (and the opt-in
    ``min_resemblance``'s: both signatures are at hand)."""
    return _pair_frame(
        lean_verify(
            _rule(spec), *_local_signatures(sigs, spec), *_shard_columns(shards), min_resemblance=min_resemblance
        )
    )


def _route(frame: dd.DataFrame, column: str, npartitions: int, shuffle_method: Optional[str]) -> dd.DataFrame:
    """``frame`` moved so that partition ``i`` holds its rows whose ``column`` is ``i`` (values
    in ``0 .. npartitions - 1``): a shuffle with the partitions' boundaries given, so partition
    ``i`` lines up with partition ``i`` of the signatures."""
    return frame.set_index(column, divisions=list(range(npartitions + 1)), shuffle_method=shuffle_method)


def _local(sigs: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """Positions in this partition of the signatures of ``rows`` (all of this partition)."""
    return (rows & np.uint64(0xFFFFFFFF)).astype(np.intp)


def _lean_pairs(
    sigs: dd.DataFrame,
    spec: RuleSpec,
    npartitions: Optional[int],
    shuffle_method: Optional[str],
    min_resemblance: Optional[float] = None,
):
    n = sigs.npartitions
    groups = npartitions or n
    posted = sigs.map_partitions(_lean_post_partition, spec, groups, meta=_SHARD_META)
    cands = _route(posted, "part", groups, shuffle_method).map_partitions(
        _lean_candidates_partition, spec, meta=_SHARD_META
    )
    attached = _route(cands, "part", n, shuffle_method).map_partitions(
        _lean_attach_partition, sigs, spec, meta=_SHARD_META, align_dataframes=False
    )
    screened = _route(attached, "part", n, shuffle_method).map_partitions(
        _lean_screen_partition, sigs, spec, meta=_SHARD_META, align_dataframes=False
    )
    return _route(screened, "part", n, shuffle_method).map_partitions(
        _lean_verify_partition, sigs, spec, min_resemblance, meta=_PAIR_META, align_dataframes=False
    )


def _find_pairs(docs, id, text, spec, max_postings_per_key, npartitions, shuffle_method, sigs, min_resemblance=None):
    if max_postings_per_key is not None and max_postings_per_key < 1:
        raise ValueError(f"max_postings_per_key = {max_postings_per_key}; expected at least 1, or None for no bound")
    language, key_bits, fold_scripts = spec
    if sigs is None:
        sigs = signatures(docs, id=id, text=text, language=language, key_bits=key_bits, fold_scripts=fold_scripts)
    if max_postings_per_key is None:
        return _lean_pairs(sigs, spec, npartitions, shuffle_method, min_resemblance), 0
    posted = postings(sigs, language=language, key_bits=key_bits, fold_scripts=fold_scripts)
    shuffled = posted.shuffle(
        on="key",
        npartitions=npartitions or sigs.npartitions,
        shuffle_method=shuffle_method,
    )
    cap = 0 if max_postings_per_key is None else int(max_postings_per_key)
    hot = np.zeros(0, dtype=np.uint64)
    if cap:
        shuffled = shuffled.persist()
        hot_keys = shuffled.map_partitions(
            _hot_partition, spec, cap, meta=pd.DataFrame({"key": pd.Series([], dtype=np.uint64)})
        ).compute()
        hot = np.sort(hot_keys["key"].to_numpy(dtype=np.uint64))
    pairs = shuffled.map_partitions(
        _verify_partition, spec, cap, hot.astype("<u8").tobytes(), min_resemblance, meta=_PAIR_META
    )
    return pairs, len(hot)


def find_pairs(
    docs: dd.DataFrame,
    *,
    id: str = "id",
    text: str = "text",
    language: str = "auto",
    key_bits: int = DEFAULT_KEY_BITS,
    fold_scripts: bool = True,
    min_resemblance: Optional[float] = None,
    max_postings_per_key: Optional[int] = None,
    npartitions: Optional[int] = None,
    shuffle_method: Optional[str] = None,
    sigs: Optional[dd.DataFrame] = None,
) -> dd.DataFrame:
    """Every pair of documents ``Rule(language, key_bits=key_bits, fold_scripts=fold_scripts)``
    matches, each once: a Dask
    DataFrame of ``row_a < row_b`` (the rows of :func:`signatures`), ``distance`` (Hamming distance of the
    fingerprints), ``resemblance`` (the sketches' estimate), ``band`` (the first shared band of
    a resemblance match, -1 for a simhash match). Lazy, except that with a bound the shuffled
    postings are persisted and the hot keys computed now (step 4 of the module's doc).

    ``max_postings_per_key``: the hot-key bound (``None``, the default: the exact join through
    the lean shuffle; a bound: the key-group path). ``npartitions``: partitions of
    the shuffle (default: those of ``docs``). ``shuffle_method``: Dask's (``"p2p"``, ``"tasks"``,
    ``"disk"``; default Dask's choice). ``sigs``: the signatures (:func:`signatures` of ``docs``)
    if already computed, signed with the same ``language``, ``key_bits`` and ``fold_scripts``.
    ``key_bits``: the rule's band key width (:data:`DEFAULT_KEY_BITS`; 20 for the index's rule).
    ``fold_scripts``: ``Rule``'s (``False``: Traditional Chinese signed as written, so a page and
    its other-script edition no longer match). ``min_resemblance`` (opt-in, 0 to 1): only the
    rule's pairs whose sketches estimate at least that resemblance, whichever branch matched
    them (a pair with an empty sketch stays): exactly ``Rule.pairs_in_memory(...,
    min_resemblance=...)``'s pairs; decided where each pair is verified, so the shuffles move
    what they move without it. Raises ``ValueError`` for a bound below 1, an unknown language,
    ``key_bits`` outside 16..=32 or a ``min_resemblance`` outside 0..1 (the messages of ``Rule``
    and ``Rule.pairs_in_memory``)."""
    spec = _spec(language, key_bits, fold_scripts, min_resemblance)
    return _find_pairs(
        docs, id, text, spec, max_postings_per_key, npartitions, shuffle_method, sigs, min_resemblance
    )[0]


def _settled(collection):
    """Waits for a persisted collection on a distributed client (the local schedulers persist
    synchronously), so stage times mean what they say."""
    try:
        from distributed import default_client, wait
    except ImportError:
        return collection
    try:
        default_client()
    except ValueError:
        return collection
    wait(collection)
    return collection


def _count_postings(sigs: pd.DataFrame, spec: RuleSpec, lean: bool) -> pd.DataFrame:
    """Postings of a partition of signatures and the bytes of their columns through the shuffle
    (lean: a block posting is a u32 key, the u32 position and the fingerprint, a band posting a u32
    key and the position; else every posting carries the key, the row and the whole signature)."""
    rule = _rule(spec)
    names = _sketch_columns(spec)
    blocks = rule.keys_per_document - rule.bands
    tokens = int((sigs[names].to_numpy(dtype=np.uint64) != 0).any(axis=1).sum())
    block, band = len(sigs) * blocks, tokens * rule.bands
    width = 8 * (3 + len(names))
    nbytes = 16 * block + 8 * band if lean else width * (block + band)
    return pd.DataFrame({"postings": [block + band], "bytes": [nbytes]})


def _forest_partition(pairs: pd.DataFrame) -> pd.DataFrame:
    a = pairs["row_a"].to_numpy(dtype=np.uint64).astype("<u8").tobytes()
    b = pairs["row_b"].to_numpy(dtype=np.uint64).astype("<u8").tobytes()
    nodes, labels = components(a, b)
    nodes, labels = _u64(nodes), _u64(labels)
    keep = nodes != labels
    return pd.DataFrame({"row": nodes[keep], "label": labels[keep]})


def cluster_labels(pairs: dd.DataFrame) -> pd.Series:
    """The connected components of ``pairs`` (:func:`find_pairs`), computed now: a pandas
    Series from each row met in a pair to the smallest row of its component (rows absent are
    alone). Each partition is first reduced to a spanning forest (at most one edge per row it
    holds), then the client joins the forests by union-find: memory on the client is 16 bytes
    per edge of the forests plus 16 per row with a pair."""
    forests = pairs.map_partitions(
        _forest_partition,
        meta=pd.DataFrame({"row": pd.Series([], dtype=np.uint64), "label": pd.Series([], dtype=np.uint64)}),
    ).compute()
    a = forests["row"].to_numpy(dtype=np.uint64).astype("<u8").tobytes()
    b = forests["label"].to_numpy(dtype=np.uint64).astype("<u8").tobytes()
    nodes, labels = components(a, b)
    return pd.Series(_u64(labels), index=pd.Index(_u64(nodes), name="row"), name="label")


#: Forest edges (16 bytes each) up to which the clusters are joined on the client; beyond it
#: the connected components run on the workers (large-star / small-star).
DEFAULT_CLIENT_MAX_EDGES = 20_000_000

_EDGE_META = pd.DataFrame({"u": pd.Series([], dtype=np.uint64), "v": pd.Series([], dtype=np.uint64)})
_LABEL_META = pd.DataFrame({"row": pd.Series([], dtype=np.uint64), "label": pd.Series([], dtype=np.uint64)})


def _neighbourhoods(part: pd.DataFrame):
    u = part["u"].to_numpy(dtype=np.uint64)
    v = part["v"].to_numpy(dtype=np.uint64)
    return u, v


def _edge_frame(u: np.ndarray, v: np.ndarray) -> pd.DataFrame:
    keep = u != v
    return pd.DataFrame({"u": u[keep], "v": v[keep]}).drop_duplicates()


def _large_star(part: pd.DataFrame) -> pd.DataFrame:
    """Every node's larger neighbours linked to the smallest of its neighbourhood (itself
    included). ``part`` holds every edge of its nodes ``u``, in both directions."""
    u, v = _neighbourhoods(part)
    if len(u) == 0:
        return _EDGE_META
    smallest = pd.Series(v).groupby(u).min()
    m = np.minimum(smallest.reindex(u).to_numpy(dtype=np.uint64), u)
    larger = v > u
    return _edge_frame(v[larger], m[larger])


def _small_star(part: pd.DataFrame) -> pd.DataFrame:
    """Every node and its smaller neighbours linked to the smallest of them."""
    u, v = _neighbourhoods(part)
    smaller = v <= u
    u, v = u[smaller], v[smaller]
    if len(u) == 0:
        return _EDGE_META
    m = np.minimum(pd.Series(v).groupby(u).min().reindex(u).to_numpy(dtype=np.uint64), u)
    return _edge_frame(np.concatenate([v, u]), np.concatenate([m, m]))


def _star_round(edges: dd.DataFrame, step, npartitions: int, shuffle_method: Optional[str]) -> dd.DataFrame:
    both = dd.concat([edges, edges.rename(columns={"u": "v", "v": "u"})[["u", "v"]]])
    grouped = both.shuffle(on="u", npartitions=npartitions, shuffle_method=shuffle_method, ignore_index=True)
    return _settled(grouped.map_partitions(step, meta=_EDGE_META).persist())


def _edge_digest(part: pd.DataFrame) -> pd.DataFrame:
    """Order-free digest of a partition's undirected edges (count, sum of a mix of each)."""
    u, v = _neighbourhoods(part)
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    mixed = (lo * np.uint64(0x9E3779B97F4A7C15)) ^ (hi * np.uint64(0xC2B2AE3D27D4EB4F) + np.uint64(1))
    return pd.DataFrame({"n": [len(u)], "h": [int(mixed.sum(dtype=np.uint64))]})


def _digest(edges: dd.DataFrame):
    d = edges.map_partitions(
        _edge_digest, meta=pd.DataFrame({"n": pd.Series([], dtype=np.int64), "h": pd.Series([], dtype=object)})
    ).compute()
    return int(d["n"].sum()), sum(int(h) for h in d["h"]) % (1 << 64)


def _star_labels(part: pd.DataFrame) -> pd.DataFrame:
    u, v = _neighbourhoods(part)
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    centres = np.unique(lo)
    return pd.DataFrame({"row": np.concatenate([hi, centres]), "label": np.concatenate([lo, centres])})


def distributed_components(
    edges: dd.DataFrame, *, npartitions: Optional[int] = None, shuffle_method: Optional[str] = None, max_rounds: int = 100
) -> dd.DataFrame:
    """The connected components of the graph whose edges are the rows ``u, v`` (``uint64``) of
    ``edges``, on the workers: large-star and small-star rounds (Kiveris et al., "Connected
    Components in MapReduce and Beyond", 2014) until the edges stop changing, then every node's
    label is the smallest node of its component. Returns a Dask DataFrame ``row, label`` (every
    node met in an edge once). Cost per round: two shuffles of the edges (O(log^2 n) rounds in the
    worst case, a handful in practice); nothing is collected but two numbers a round. Raises
    ``RuntimeError`` if ``max_rounds`` rounds do not converge."""
    n = npartitions or max(1, edges.npartitions)
    edges = _settled(edges.map_partitions(lambda p: _edge_frame(*_neighbourhoods(p)), meta=_EDGE_META).persist())
    before = _digest(edges)
    for _ in range(max_rounds):
        edges = _star_round(edges, _large_star, n, shuffle_method)
        edges = _star_round(edges, _small_star, n, shuffle_method)
        after = _digest(edges)
        if after == before:
            labels = edges.map_partitions(_star_labels, meta=_LABEL_META)
            return labels.shuffle(on="row", npartitions=n, shuffle_method=shuffle_method, ignore_index=True).map_partitions(
                lambda p: p.drop_duplicates(subset=["row"]), meta=_LABEL_META
            )
        before = after
    raise RuntimeError(f"connected components did not converge in {max_rounds} rounds; expected O(log^2 n)")


def component_frame(
    pairs: dd.DataFrame,
    *,
    client_max_edges: int = DEFAULT_CLIENT_MAX_EDGES,
    shuffle_method: Optional[str] = None,
) -> dd.DataFrame:
    """The connected components of ``pairs`` (:func:`find_pairs`) as a Dask DataFrame ``row,
    label`` (every row met in a pair, labelled with the smallest row of its component). Each
    partition is first reduced to a spanning forest; when the forests hold at most
    ``client_max_edges`` edges the client joins them by union-find (16 bytes per edge and per
    row), else :func:`distributed_components` does it on the workers."""
    forests = _settled(pairs.map_partitions(_forest_partition, meta=_LABEL_META).persist())
    edges = int(forests.shape[0].compute())
    if edges <= client_max_edges:
        local = forests.compute()
        a = local["row"].to_numpy(dtype=np.uint64).astype("<u8").tobytes()
        b = local["label"].to_numpy(dtype=np.uint64).astype("<u8").tobytes()
        nodes, labels = components(a, b)
        frame = pd.DataFrame({"row": _u64(nodes), "label": _u64(labels)})
        return dd.from_pandas(frame, npartitions=max(1, min(pairs.npartitions, len(frame) // 100_000 + 1)), sort=False)
    forest_edges = forests.rename(columns={"row": "u", "label": "v"})
    return distributed_components(forest_edges, npartitions=pairs.npartitions, shuffle_method=shuffle_method)


def _leader_partition(part: pd.DataFrame) -> pd.DataFrame:
    a = part["row_a"].to_numpy(dtype=np.uint64).astype("<u8").tobytes()
    b = part["row_b"].to_numpy(dtype=np.uint64).astype("<u8").tobytes()
    nodes, labels = leaders(a, b)
    return pd.DataFrame({"row": _u64(nodes), "label": _u64(labels)})


def leader_frame(
    pairs: dd.DataFrame,
    *,
    client_max_edges: int = DEFAULT_CLIENT_MAX_EDGES,
    shuffle_method: Optional[str] = None,
) -> dd.DataFrame:
    """The leader clusters of ``pairs`` (:func:`find_pairs`) as a Dask DataFrame ``row,
    label``: in input order (rows), a document joins the cluster of the first earlier leader it
    matches directly, otherwise it leads one (the index's ``clusters()``), so every member
    matches its leader and no chain a~b~c puts c with a. Every row of a cluster of two or more,
    labelled with its leader's row. When there are at most ``client_max_edges`` pairs the
    client walks them (16 bytes per pair); beyond, the pairs are grouped by connected component
    (:func:`component_frame`: a component's leaders depend on its own pairs only) and each
    partition of components is walked on a worker: one more shuffle of the pairs."""
    edges = pairs[["row_a", "row_b"]]
    if int(edges.shape[0].compute()) <= client_max_edges:
        frame = _leader_partition(edges.compute())
        return dd.from_pandas(frame, npartitions=max(1, min(pairs.npartitions, len(frame) // 100_000 + 1)), sort=False)
    labels = component_frame(pairs, client_max_edges=client_max_edges, shuffle_method=shuffle_method)
    by_component = edges.merge(labels.rename(columns={"row": "row_a", "label": "component"}), on="row_a", how="inner")
    grouped = by_component.shuffle(
        on="component", npartitions=pairs.npartitions, shuffle_method=shuffle_method, ignore_index=True
    )
    return grouped.map_partitions(_leader_partition, meta=_LABEL_META)


def _with_part(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    return frame.assign(part=(frame[column].to_numpy(dtype=np.uint64) >> np.uint64(_ROW_SHIFT)).astype(np.int32))


def _attach_id(part: pd.DataFrame, sigs: pd.DataFrame, row: str, name: str) -> pd.DataFrame:
    """Adds column ``name``: the id of the document at ``row`` (all of this partition)."""
    ids = sigs["id"].to_numpy()[_local(sigs, part[row].to_numpy(dtype=np.uint64))]
    return part.reset_index(drop=True).assign(**{name: ids})


def _cluster_ids_partition(labels: pd.DataFrame, sigs: pd.DataFrame) -> pd.DataFrame:
    out = _attach_id(labels, sigs, "label", "cluster")
    return _with_part(out[["row", "cluster"]], "row")


def _clusters_partition(found: pd.DataFrame, sigs: pd.DataFrame) -> pd.DataFrame:
    cluster = pd.Series(sigs["id"].to_numpy(), dtype=sigs["id"].dtype).to_numpy().copy()
    if len(found):
        cluster[_local(sigs, found["row"].to_numpy(dtype=np.uint64))] = found["cluster"].to_numpy()
    return pd.DataFrame({"id": sigs["id"].to_numpy(), "cluster": cluster})


def _first_ids_partition(pairs: pd.DataFrame, sigs: pd.DataFrame) -> pd.DataFrame:
    return _with_part(_attach_id(pairs, sigs, "row_a", "id_a"), "row_b")


def _second_ids_partition(pairs: pd.DataFrame, sigs: pd.DataFrame) -> pd.DataFrame:
    out = _attach_id(pairs, sigs, "row_b", "id_b")
    return out[["id_a", "id_b", "distance", "resemblance", "band"]]


def deduplicate(
    docs: dd.DataFrame,
    out: str,
    *,
    id: str = "id",
    text: str = "text",
    language: str = "auto",
    key_bits: int = DEFAULT_KEY_BITS,
    fold_scripts: bool = True,
    min_resemblance: Optional[float] = None,
    max_postings_per_key: Optional[int] = None,
    npartitions: Optional[int] = None,
    shuffle_method: Optional[str] = None,
    client_max_edges: int = DEFAULT_CLIENT_MAX_EDGES,
    mode: str = "leader",
) -> Dict[str, Any]:
    """The whole pipeline: signs ``docs``, finds every matching pair (:func:`find_pairs`), its
    clusters (``mode="leader"``, the default: :func:`leader_frame`, the index's leader clusters;
    ``mode="components"``: :func:`component_frame`, connected components), and writes two
    Parquet datasets under ``out`` (a path or URL Dask can write): ``out/pairs`` (``id_a, id_b,
    distance, resemblance, band``) and ``out/clusters`` (``id, cluster`` for every document;
    ``cluster`` is the id of its leader, or of the first document of its component in input
    order; a document alone is its own). Returns a summary dict: ``documents``, ``pairs``,
    ``clustered`` (documents in a cluster of two or more), ``clusters`` (clusters of two or more),
    ``hot_keys`` (0 without a bound), ``postings`` (rows shuffled on key),
    ``posting_column_bytes`` (the bytes of their columns) and ``seconds`` (wall time of the
    stages ``sign``, ``pairs``, ``clusters``, ``write``). Ids should be unique (pairs are
    reported per document either way). ``client_max_edges``: see :func:`leader_frame` and
    :func:`component_frame`. ``key_bits``: the rule's band key width (:data:`DEFAULT_KEY_BITS`,
    32; 20 for exactly the index's rule and pairs). ``fold_scripts`` and ``min_resemblance``: as
    :func:`find_pairs` (the clusters are those of the pairs it keeps, as the index's
    ``clusters(min_resemblance=...)``). Raises ``ValueError`` for another ``mode``, an unknown
    language, ``key_bits`` outside 16..=32 or a ``min_resemblance`` outside 0..1.

    The signatures and the pairs are persisted on the workers while it runs (16 bytes, the
    id and the sketch per document: 176 bytes of sketch with 32-bit band keys; 28 per pair); the client holds the clusters' forest edges when they are at
    most ``client_max_edges`` (16 bytes each), else nothing of the size of the corpus."""
    if mode not in ("leader", "components"):
        raise ValueError(f'mode={mode!r}; expected "leader" or "components"')
    spec = _spec(language, key_bits, fold_scripts, min_resemblance)
    clock = time.perf_counter()
    seconds = {}

    def lap(stage):
        nonlocal clock
        now = time.perf_counter()
        seconds[stage] = round(now - clock, 3)
        clock = now

    sigs = _settled(
        signatures(docs, id=id, text=text, language=language, key_bits=key_bits, fold_scripts=fold_scripts).persist()
    )
    lap("sign")
    pairs, hot_keys = _find_pairs(
        docs, id, text, spec, max_postings_per_key, npartitions, shuffle_method, sigs, min_resemblance
    )
    pairs = _settled(pairs.persist())
    lap("pairs")
    # The clusters: a frame of row -> label row for every document of a cluster of two or more.
    cluster_frame = leader_frame if mode == "leader" else component_frame
    labels = _settled(cluster_frame(pairs, client_max_edges=client_max_edges, shuffle_method=shuffle_method).persist())
    n = sigs.npartitions
    id_meta = sigs["id"]._meta
    labelled = _route(labels.map_partitions(_with_part, "label", meta=_LABEL_META.assign(part=np.int32(0))[:0]),
                      "part", n, shuffle_method)
    named = labelled.map_partitions(
        _cluster_ids_partition, sigs, align_dataframes=False,
        meta=pd.DataFrame({"row": pd.Series([], dtype=np.uint64), "cluster": id_meta, "part": pd.Series([], dtype=np.int32)}),
    )
    named = _route(named, "part", n, shuffle_method)
    clusters_out = named.map_partitions(
        _clusters_partition, sigs, align_dataframes=False, meta=pd.DataFrame({"id": id_meta, "cluster": id_meta})
    )
    if max_postings_per_key is None:
        # The lean shuffle verified each pair at the partition of its first row: partition ``i``
        # of the pairs lines up with partition ``i`` of the signatures already.
        by_a = pairs
    else:
        by_a = _route(pairs.map_partitions(_with_part, "row_a", meta=_PAIR_META.assign(part=np.int32(0))[:0]),
                      "part", n, shuffle_method)
    by_b = _route(
        by_a.map_partitions(
            _first_ids_partition, sigs, align_dataframes=False,
            meta=_PAIR_META.assign(id_a=id_meta, part=pd.Series([], dtype=np.int32))[:0],
        ),
        "part", n, shuffle_method,
    )
    pairs_out = by_b.map_partitions(
        _second_ids_partition, sigs, align_dataframes=False,
        meta=pd.DataFrame(
            {
                "id_a": id_meta,
                "id_b": id_meta,
                "distance": _PAIR_META["distance"],
                "resemblance": _PAIR_META["resemblance"],
                "band": _PAIR_META["band"],
            }
        ),
    )
    lap("clusters")
    _, _, n_pairs, n_docs, n_postings, n_clustered, n_clusters = dask.compute(
        pairs_out.to_parquet(f"{out}/pairs", write_index=False, compute=False),
        clusters_out.to_parquet(f"{out}/clusters", write_index=False, compute=False),
        pairs.shape[0],
        sigs.shape[0],
        sigs.map_partitions(
            _count_postings,
            spec,
            max_postings_per_key is None,
            meta=pd.DataFrame({"postings": pd.Series([], dtype=np.int64), "bytes": pd.Series([], dtype=np.int64)}),
        ).sum(),
        labels.shape[0],
        labels["label"].nunique(),
    )
    lap("write")
    return {
        "documents": int(n_docs),
        "pairs": int(n_pairs),
        "clustered": int(n_clustered),
        "clusters": int(n_clusters),
        "hot_keys": hot_keys,
        "postings": int(n_postings["postings"]),
        "posting_column_bytes": int(n_postings["bytes"]),
        "seconds": seconds,
    }
