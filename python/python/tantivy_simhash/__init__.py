"""Near-duplicate detection in a tantivy index, from Python.

Simhash fingerprints (Charikar) with block keys (Manku, Jain and Das Sarma, WWW 2007), stored
in a tantivy index: the same on-disk index the ``neardup`` command line and the Rust crate
``tantivy-simhash`` use.

>>> from tantivy_simhash import Scheme, distance
>>> scheme = Scheme()
>>> a = scheme.fingerprint("The quick brown fox jumps over the lazy dog near the river bank today.")
>>> b = scheme.fingerprint("The QUICK brown fox jumps over the lazy dog near the river bank today!")
>>> distance(a, b)
0

Index documents with a dedup policy, then search with near-duplicates collapsed::

    from tantivy_simhash import Index

    index = Index.create("idx")                    # or Index.open("idx")
    with index.writer(policy="reject") as w:       # commits when the block ends
        outcome = w.add({"id": "a", "text": "..."})  # Outcome(status="added", ...)
        w.add_many(rows)                           # any iterable of dicts, or a pyarrow Table
    for hit in index.search("some words", limit=10):
        print(hit.id, hit.group_size)
    for a, b, distance, resemblance in index.pairs(k=3):
        ...

The match rule itself (simhash within 3, or a shared MinHash band and an estimated resemblance
of at least 0.55) is :class:`Rule`: ``Rule().sign(text)`` and ``Rule().matches(a, b)``; the
module :mod:`tantivy_simhash.dask` runs it over corpora beyond one machine on Dask distributed.

Every call that reads or writes the index releases the GIL while it works. Errors of the index
raise :class:`Error`; bad arguments raise ``ValueError`` or ``TypeError``.
"""

from ._native import (
    Cluster,
    Error,
    Evidence,
    Hit,
    Index,
    Match,
    Member,
    Outcome,
    PairIterator,
    Rule,
    Scheme,
    Signature,
    Summary,
    Writer,
    components,
    distance,
    leaders,
)

__all__ = [
    "Cluster",
    "Error",
    "Evidence",
    "Hit",
    "Index",
    "Match",
    "Member",
    "Outcome",
    "PairIterator",
    "Rule",
    "Scheme",
    "Signature",
    "Summary",
    "Writer",
    "components",
    "distance",
    "leaders",
]
