"""Near-duplicates of corpora beyond one machine, on Dask distributed.

The same match rule as the index (:class:`tantivy_simhash.Rule`: simhash within 3, or a shared
MinHash band and an estimated resemblance of at least 0.55), computed as a MapReduce over a
Dask DataFrame of documents, with the crate's kernels doing the work inside each partition:

1. **sign** (map): each partition signs its texts (one analysis per text, in Rust, the GIL
   released) and numbers its documents ``row = partition << 32 | position`` (input order);
2. **post** (map): one posting per key of each document (4 simhash block keys + 12 MinHash
   band keys): ``key, row, fingerprint`` and the 256-byte sketch as 32 ``uint64`` columns;
3. **shuffle on key**: every posting of a key lands in one partition (Dask's shuffle; ``p2p``
   spills to disk on a distributed cluster);
4. **hot keys** (only with a bound): keys held by more than ``max_postings_per_key`` distinct
   signatures, collected on the client and sent to every verify task;
5. **verify** (map): each key group is joined by the crate's
   ``signature::pairs_in_key_group``: the same join as the single-machine
   ``signature::pairs_in_memory``, so the pipeline reports exactly its pairs, each once (a pair is
   verified under its first shared key only), with the same hot-key bound;
6. **clusters**: each partition of pairs is reduced to a spanning forest (union-find in Rust),
   the forests are collected on the client and joined by union-find into connected components.

Results (:func:`deduplicate`) are Parquet datasets: ``pairs`` (``id_a, id_b, distance,
resemblance, band``; ``band`` is -1 when the simhash branch matched) and ``clusters`` (``id,
cluster``: every document, ``cluster`` the id of the first document of its component in input
order, a document's own id when it matches nothing).

Costs (measured figures and the command in docs/DISTRIBUTED.md): the shuffle moves
``16 x 280`` bytes per document (fewer for texts without tokens); with a bound, the shuffled
postings are persisted (in worker memory, spilled to disk by Dask) so they are read twice. The
client holds the hot keys (8 bytes each) and, for the clusters, the spanning forests (16 bytes
per document that has a pair) and the ids of those documents. **Hot keys**: with
``max_postings_per_key = m``, a key held by more than ``m`` distinct signatures compares each one
with the next ``m`` only (input order): work per key at most ``postings x m`` instead of
quadratic; a pair is missed only when every key it shares is hot and it lies more than ``m``
apart in its first shared key's postings. ``None`` joins exactly (and skips step 4).

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
from typing import Any, Dict, Optional

import numpy as np
import pandas as pd

import dask
import dask.dataframe as dd

from ._native import Rule, components

__all__ = [
    "DEFAULT_MAX_POSTINGS_PER_KEY",
    "signatures",
    "postings",
    "find_pairs",
    "cluster_labels",
    "deduplicate",
]

#: The default hot-key bound: a key held by more distinct signatures than this compares each
#: one with the next this many only.
DEFAULT_MAX_POSTINGS_PER_KEY = 1000

_ROW_SHIFT = 32


@functools.lru_cache(maxsize=8)
def _rule(language: str) -> Rule:
    """One rule (and its signer) per worker process and language: tasks ship the language name,
    not the rule, which holds a signer and is not picklable."""
    return Rule(language)


def _sketch_columns(language: str):
    return [f"s{i}" for i in range(_rule(language).sketch_bytes // 8)]


def _u64(buf: bytes) -> np.ndarray:
    return np.frombuffer(buf, dtype="<u8").astype(np.uint64, copy=False)


def _sign_partition(part: pd.DataFrame, id: str, text: str, language: str, partition_info=None):
    rule = _rule(language)
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
    for i, name in enumerate(_sketch_columns(language)):
        out[name] = sk[:, i].astype(np.uint64)
    return pd.DataFrame(out, index=part.index)


def _signature_meta(docs: dd.DataFrame, id: str, language: str) -> pd.DataFrame:
    meta = {
        "row": pd.Series([], dtype=np.uint64),
        "id": pd.Series([], dtype=docs[id].dtype),
        "fingerprint": pd.Series([], dtype=np.uint64),
    }
    for name in _sketch_columns(language):
        meta[name] = pd.Series([], dtype=np.uint64)
    return pd.DataFrame(meta)


def signatures(docs: dd.DataFrame, *, id: str = "id", text: str = "text", language: str = "auto") -> dd.DataFrame:
    """The signature of every document of ``docs`` (a Dask DataFrame with columns ``id`` and
    ``text``): columns ``row`` (``partition << 32 | position``: input order), ``id``,
    ``fingerprint`` and the sketch as ``s0 .. s31`` (``uint64``). Lazy. Cost: one analysis per
    text in Rust, on the task's thread. Raises ``ValueError`` (when computed) for a missing text
    or a partition of 2**32 rows or more; ``KeyError`` now for a missing column."""
    for column in (id, text):
        if column not in docs.columns:
            raise KeyError(f"column {column!r} not in the documents; they have {list(docs.columns)}")
    return docs.map_partitions(
        _sign_partition,
        id,
        text,
        language,
        meta=_signature_meta(docs, id, language),
        align_dataframes=False,
    )


def _post_partition(sigs: pd.DataFrame, language: str) -> pd.DataFrame:
    rule = _rule(language)
    names = _sketch_columns(language)
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


def postings(sigs: dd.DataFrame, *, language: str = "auto") -> dd.DataFrame:
    """One row per key of each signature (:func:`signatures`): ``key, row, fingerprint, s0 ..
    s31``, all ``uint64`` (280 bytes a posting, 16 postings a document). Lazy."""
    meta = pd.DataFrame({"key": pd.Series([], dtype=np.uint64), "row": pd.Series([], dtype=np.uint64),
                         "fingerprint": pd.Series([], dtype=np.uint64)})
    for name in _sketch_columns(language):
        meta[name] = pd.Series([], dtype=np.uint64)
    return sigs.map_partitions(_post_partition, language, meta=meta)


def _columns_of(part: pd.DataFrame, language: str):
    names = _sketch_columns(language)
    return (
        part["key"].to_numpy(dtype=np.uint64).astype("<u8").tobytes(),
        part["fingerprint"].to_numpy(dtype=np.uint64).astype("<u8").tobytes(),
        np.ascontiguousarray(part[names].to_numpy(dtype=np.uint64)).astype("<u8").tobytes(),
    )


def _hot_partition(part: pd.DataFrame, language: str, cap: int) -> pd.DataFrame:
    keys, fps, sk = _columns_of(part, language)
    hot = _rule(language).hot_keys(keys, fps, sk, cap)
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


def _verify_partition(part: pd.DataFrame, language: str, cap: int, hot: bytes) -> pd.DataFrame:
    keys, fps, sk = _columns_of(part, language)
    rows = part["row"].to_numpy(dtype=np.uint64).astype("<u8").tobytes()
    columns, _stats = _rule(language).verify_groups(keys, rows, fps, sk, cap, hot)
    return _pair_frame(columns)


def _find_pairs(docs, id, text, language, max_postings_per_key, npartitions, shuffle_method, sigs):
    if max_postings_per_key is not None and max_postings_per_key < 1:
        raise ValueError(f"max_postings_per_key = {max_postings_per_key}; expected at least 1, or None for no bound")
    if sigs is None:
        sigs = signatures(docs, id=id, text=text, language=language)
    posted = postings(sigs, language=language)
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
            _hot_partition, language, cap, meta=pd.DataFrame({"key": pd.Series([], dtype=np.uint64)})
        ).compute()
        hot = np.sort(hot_keys["key"].to_numpy(dtype=np.uint64))
    pairs = shuffled.map_partitions(_verify_partition, language, cap, hot.astype("<u8").tobytes(), meta=_PAIR_META)
    return pairs, len(hot)


def find_pairs(
    docs: dd.DataFrame,
    *,
    id: str = "id",
    text: str = "text",
    language: str = "auto",
    max_postings_per_key: Optional[int] = DEFAULT_MAX_POSTINGS_PER_KEY,
    npartitions: Optional[int] = None,
    shuffle_method: Optional[str] = None,
    sigs: Optional[dd.DataFrame] = None,
) -> dd.DataFrame:
    """Every pair of documents the rule matches, each once: a Dask DataFrame of ``row_a <
    row_b`` (the rows of :func:`signatures`), ``distance`` (Hamming distance of the
    fingerprints), ``resemblance`` (the sketches' estimate), ``band`` (the first shared band of
    a resemblance match, -1 for a simhash match). Lazy, except that with a bound the shuffled
    postings are persisted and the hot keys computed now (step 4 of the module's doc).

    ``max_postings_per_key``: the hot-key bound (``None``: exact). ``npartitions``: partitions of
    the shuffle (default: those of ``docs``). ``shuffle_method``: Dask's (``"p2p"``, ``"tasks"``,
    ``"disk"``; default Dask's choice). ``sigs``: the signatures (:func:`signatures` of ``docs``)
    if already computed. Raises ``ValueError`` for a bound below 1."""
    return _find_pairs(docs, id, text, language, max_postings_per_key, npartitions, shuffle_method, sigs)[0]


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


def _count_postings(sigs: pd.DataFrame, language: str) -> pd.Series:
    rule = _rule(language)
    names = _sketch_columns(language)
    blocks = rule.keys_per_document - rule.bands
    tokens = int((sigs[names].to_numpy(dtype=np.uint64) != 0).any(axis=1).sum())
    return pd.Series([len(sigs) * blocks + tokens * rule.bands], dtype=np.int64)


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


def _ids_of(sigs: pd.DataFrame, rows: np.ndarray) -> pd.DataFrame:
    found = sigs[np.isin(sigs["row"].to_numpy(dtype=np.uint64), rows)]
    return found[["row", "id"]]


def _lookup(series: pd.Series, rows: np.ndarray):
    """``series`` at index values ``rows`` (all present), without a float round trip."""
    return series.to_numpy()[series.index.get_indexer(rows)]


def _label_partition(sigs: pd.DataFrame, labels: pd.Series, ids: pd.Series) -> pd.DataFrame:
    rows = sigs["row"].to_numpy(dtype=np.uint64)
    at = labels.index.get_indexer(rows)
    has = at >= 0
    cluster = sigs["id"].copy()
    if has.any():
        leaders = labels.to_numpy(dtype=np.uint64)[at[has]]
        cluster[has] = _lookup(ids, leaders)
    return pd.DataFrame({"id": sigs["id"].to_numpy(), "cluster": cluster.to_numpy()})


def _id_pairs(pairs: pd.DataFrame, ids: pd.Series) -> pd.DataFrame:
    out = pd.DataFrame(
        {
            "id_a": _lookup(ids, pairs["row_a"].to_numpy(dtype=np.uint64)),
            "id_b": _lookup(ids, pairs["row_b"].to_numpy(dtype=np.uint64)),
        }
    )
    for c in ("distance", "resemblance", "band"):
        out[c] = pairs[c].to_numpy()
    return out


def deduplicate(
    docs: dd.DataFrame,
    out: str,
    *,
    id: str = "id",
    text: str = "text",
    language: str = "auto",
    max_postings_per_key: Optional[int] = DEFAULT_MAX_POSTINGS_PER_KEY,
    npartitions: Optional[int] = None,
    shuffle_method: Optional[str] = None,
) -> Dict[str, Any]:
    """The whole pipeline: signs ``docs``, finds every matching pair (:func:`find_pairs`), its
    clusters (:func:`cluster_labels`), and writes two Parquet datasets under ``out`` (a path or
    URL Dask can write): ``out/pairs`` (``id_a, id_b, distance, resemblance, band``) and
    ``out/clusters`` (``id, cluster`` for every document; ``cluster`` is the id of the first
    document of its component in input order). Returns a summary dict: ``documents``,
    ``pairs``, ``clustered`` (documents with a pair), ``clusters`` (components of two or more),
    ``hot_keys`` (0 without a bound), ``postings`` (rows shuffled), ``posting_bytes`` (bytes
    of a posting's columns: the shuffle moves about ``postings x posting_bytes``) and
    ``seconds`` (wall time of the stages ``sign``, ``pairs``, ``clusters``, ``write``). Ids should be unique (pairs are reported per document either way).

    The signatures and the pairs are persisted on the workers while it runs (24 + 256 bytes
    per document, 28 per pair); the client holds what :func:`cluster_labels` needs plus the ids
    of the documents that have a pair."""
    clock = time.perf_counter()
    seconds = {}

    def lap(stage):
        nonlocal clock
        now = time.perf_counter()
        seconds[stage] = round(now - clock, 3)
        clock = now

    sigs = _settled(signatures(docs, id=id, text=text, language=language).persist())
    lap("sign")
    pairs, hot_keys = _find_pairs(
        docs, id, text, language, max_postings_per_key, npartitions, shuffle_method, sigs
    )
    pairs = _settled(pairs.persist())
    lap("pairs")
    labels = cluster_labels(pairs)
    nodes = labels.index.to_numpy(dtype=np.uint64)
    id_meta = sigs["id"]._meta
    node_ids = sigs.map_partitions(
        _ids_of, nodes, meta=pd.DataFrame({"row": pd.Series([], dtype=np.uint64), "id": id_meta})
    ).compute()
    ids = pd.Series(node_ids["id"].to_numpy(), index=pd.Index(node_ids["row"].to_numpy(dtype=np.uint64)))
    pairs_out = pairs.map_partitions(
        _id_pairs,
        ids,
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
    clusters_out = sigs.map_partitions(
        _label_partition, labels, ids, meta=pd.DataFrame({"id": id_meta, "cluster": id_meta})
    )
    lap("clusters")
    _, _, n_pairs, n_docs, n_postings = dask.compute(
        pairs_out.to_parquet(f"{out}/pairs", write_index=False, compute=False),
        clusters_out.to_parquet(f"{out}/clusters", write_index=False, compute=False),
        pairs.shape[0],
        sigs.shape[0],
        sigs.map_partitions(_count_postings, language, meta=pd.Series([], dtype=np.int64)).sum(),
    )
    lap("write")
    return {
        "documents": int(n_docs),
        "pairs": int(n_pairs),
        "clustered": int(len(labels)),
        "clusters": int(len(np.unique(labels.to_numpy()))),
        "hot_keys": hot_keys,
        "postings": int(n_postings),
        "posting_bytes": 8 * (3 + len(_sketch_columns(language))),
        "seconds": seconds,
    }
