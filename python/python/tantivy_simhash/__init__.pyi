"""Type stubs of tantivy_simhash (the extension module tantivy_simhash._native)."""

import os
import pathlib
from typing import Any, Callable, Dict, Iterable, Iterator, List, Literal, Mapping, Optional, Tuple, TypedDict, Union

Policy = Literal["tag", "reject", "replace", "off"]
IdPolicy = Literal["keep", "replace", "report", "off"]
Status = Literal["added", "tagged", "replaced", "rejected", "skipped"]
Document = Mapping[str, Any]
"""A document: ``id`` (str or int), ``text`` (str), optionally ``title`` and ``host`` (str)."""

class Error(Exception):
    """An error of the index or the crate; the message says what was found and what to do."""

class Scheme:
    """How a text becomes a 64-bit fingerprint; fingerprints of two schemes cannot be compared.

    ``language``: ``"auto"`` (words; Chinese segmented by jieba), ``"han-chars"`` or a stemming
    language (``"english"``, ``"french"``, ...). Raises ``ValueError`` for an unknown language.
    """

    def __init__(self, language: str = "auto") -> None: ...
    def fingerprint(self, text: str) -> int:
        """The fingerprint of ``text``, an unsigned 64-bit int (GIL released)."""
    def fingerprints(self, texts: Iterable[str]) -> List[int]:
        """The fingerprints of many texts, computed in parallel with the GIL released."""
    @property
    def id(self) -> str:
        """The scheme's stable identifier (what an index records)."""
    @property
    def language(self) -> str: ...

def distance(a: int, b: int) -> int:
    """The Hamming distance between two fingerprints (0 to 64). ``OverflowError`` outside u64."""

class Outcome:
    """What happened to a document given to :meth:`Writer.add`."""

    @property
    def status(self) -> Status:
        """``"added"``, ``"tagged"`` (added in the group of a near-duplicate), ``"replaced"``
        (added; its near-duplicates were deleted), ``"rejected"`` (not added) or ``"skipped"``
        (not added, ``ids="keep"``: its id is already in the index, or a document that
        replaced it is)."""
    @property
    def id(self) -> str: ...
    @property
    def fingerprint(self) -> Optional[int]:
        """None for a skipped document, and under ``policy="off"``, where tantivy's indexing
        thread signs the document as it indexes its text (:meth:`Index.fingerprint_of` reads it
        after the commit)."""
    @property
    def of(self) -> Optional[str]:
        """The nearest near-duplicate (tagged, rejected, replaced)."""
    @property
    def distance(self) -> Optional[int]:
        """The simhash distance to ``of`` (tagged, rejected, replaced)."""
    @property
    def resemblance(self) -> Optional[float]:
        """For a match by the rule's resemblance branch (a shared MinHash band), the sketches'
        resemblance estimate; None for a simhash match (within k)."""
    @property
    def group(self) -> Optional[str]:
        """The group it joined (policy "tag"): the id of the group's first document."""
    @property
    def replaced(self) -> List[str]:
        """The deleted near-duplicates, nearest first (policy "replace")."""
    @property
    def added(self) -> bool:
        """Whether the document is now in the index."""

class Summary:
    """Counts of what :meth:`Writer.add_many` did."""

    documents: int
    added: int
    tagged: int
    replacing: int
    replaced: int
    rejected: int
    skipped_existing_id: int
    skipped_replaced_id: int
    skipped_bad: int

class Writer:
    """Adds documents under a dedup policy; a context manager that commits on success and rolls
    back on an exception. One writer per index at a time."""

    def add(self, doc: Document) -> Outcome:
        """Adds one document. ``TypeError``/``ValueError`` for a bad document, ``ValueError``
        when the writer is closed."""
    def add_many(
        self,
        docs: Union[Iterable[Document], Any],
        *,
        batch_size: int = 256,
        progress: Union[None, bool, Callable[[int, Optional[int]], Any]] = None,
        skip_bad: bool = False,
    ) -> Summary:
        """Adds every document of an iterable of dicts (or of a pyarrow Table / RecordBatch).
        ``progress=True`` shows a tqdm bar; a callable gets ``(done, total)`` after each
        batch."""
    def commit(self) -> None:
        """Makes every document added so far durable and visible to searches."""
    def rollback(self) -> None:
        """Discards every document added since the last commit."""
    def close(self) -> None:
        """Closes without committing; closing twice is allowed."""
    @property
    def policy(self) -> Policy: ...
    @property
    def ids(self) -> IdPolicy:
        """The id policy given to :meth:`Index.writer`."""
    @property
    def ids_replaced(self) -> int:
        """Old versions deleted so far because a document with their id was added
        (``ids="replace"``)."""
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> "Writer": ...
    def __exit__(self, exc_type: Any, exc_value: Any = None, traceback: Any = None) -> bool: ...

class Member:
    """A near-duplicate folded into a search result: its simhash ``distance`` to the result,
    and the ``resemblance`` estimate when the match rule's resemblance branch folded it."""

    id: str
    score: float
    distance: Optional[int]
    resemblance: Optional[float]

class Hit:
    """A search result; with collapse, the near-duplicates folded into it."""

    rank: int
    score: float
    id: str
    title: str
    host: str
    text: str
    group_size: int
    group_size_exact: bool
    members: List[Member]
    moved: bool
    """With ``derank``: whether the hit was moved behind the leaders (False for a leader)."""
    leader_id: Optional[str]
    """With ``derank``, for a moved hit: the id of its group's leader; else None."""

class Match:
    """A near-duplicate found by :meth:`Index.similar`."""

    id: str
    distance: int
    resemblance: Optional[float]
    """The resemblance estimate of a match by the rule's resemblance branch; None for a simhash
    match."""
    fingerprint: int
    title: str
    host: str

class Cluster:
    """Near-duplicates. By leader (default): every member matches ``leader`` (the first
    added), ``id`` is the leader's id, ``members`` in input order. As components: chains of
    pairs, ``id`` the smallest member id, ``members`` sorted, ``leader`` the first added."""

    id: str
    members: List[str]
    leader: str
    def __len__(self) -> int: ...

class PairIterator(Iterator[Tuple[str, str, int, Optional[float]]]):
    """``(id_a, id_b, distance, resemblance)`` with ``id_a < id_b``, computed as you iterate;
    ``resemblance`` is the sketches' estimate for a pair matched by resemblance, else ``None``."""

    def __iter__(self) -> "PairIterator": ...
    def __next__(self) -> Tuple[str, str, int, Optional[float]]: ...

class PagePair(TypedDict):
    page_a: str
    page_b: str
    distance: int

class HostPair(TypedDict):
    """A line of ``neardup mirrors --json``."""

    host_a: str
    host_b: str
    pages_a: int
    pages_b: int
    shared_pages: int
    matched_a: int
    matched_b: int
    share_a: float
    share_b: float
    score: float
    is_mirror: bool
    examples: List[PagePair]

class Index:
    """An index directory in the format of the ``neardup`` command line. A context manager;
    a closed index raises ``ValueError`` on use. A document's fingerprint is taken from its
    title and text joined by a line break."""

    @staticmethod
    def create(
        path: Union[str, os.PathLike[str]],
        *,
        language: str = "auto",
        k: int = 3,
        policy: Policy = "tag",
    ) -> "Index":
        """Creates an index in a new or empty directory. ``k`` (0-9) and ``language`` are fixed
        for the life of the index."""
    @staticmethod
    def open(path: Union[str, os.PathLike[str]]) -> "Index":
        """Opens an index made by :meth:`create` or ``neardup index``; :class:`Error` when the
        directory is not one, or records another scheme or layout."""
    def writer(
        self,
        policy: Optional[Policy] = None,
        *,
        ids: IdPolicy = "keep",
        fields: Optional[Mapping[str, str]] = None,
        memory_mb: int = 256,
        threads: Optional[int] = None,
    ) -> Writer:
        """A writer; ``fields`` maps ``id``/``text``/``title``/``host`` to your dict keys.
        ``ids``: what to do with a document whose id is taken: ``"keep"`` skips it (an id a
        newer near-duplicate replaced counts as taken), ``"replace"`` deletes the old version
        and adds the new one, ``"report"`` raises :class:`Error` (nothing written), ``"off"``
        adds it again."""
    def search(
        self,
        query: str,
        limit: int = 10,
        collapse: bool = True,
        collapse_field: Optional[str] = None,
        leader: Optional[Literal["newest", "oldest"]] = None,
        derank: bool = False,
    ) -> List[Hit]:
        """The best results for ``query`` (tantivy syntax over title and text), one per group of
        near-duplicates when ``collapse``; with ``collapse_field`` (a fast field: ``"host"``,
        ``"group"``), one per value of that field. ValueError for a field that is missing or
        not fast.

        ``leader``: the hit shown for a group, among its hits in the top 64 x ``limit``:
        ``"newest"`` (added to the index last) or ``"oldest"`` (added first); None: the
        best-ranked one (the group still ranks where its best hit ranks). ``derank=True``: one
        flat list, the ``limit`` leaders then the other hits of their groups (in the top 64 x
        ``limit``) in rank order (``moved=True``, ``leader_id`` set).
        Both need ``collapse``; ValueError otherwise or for another ``leader`` value."""
    def similar(
        self,
        *,
        id: Union[str, int, None] = None,
        text: Optional[str] = None,
        k: Optional[int] = None,
        limit: int = 0,
    ) -> List[Match]:
        """The documents the index's match rule matches with a document (itself left out) or a
        text, strongest evidence first; with ``k``, simhash-only: those within ``k``."""
    def pairs(
        self, k: Optional[int] = None, *, min_resemblance: Optional[float] = None
    ) -> PairIterator:
        """Every pair the match rule matches, as ``(id_a, id_b, distance, resemblance)``
        (``resemblance`` is ``None`` for a simhash match); ``k`` narrows the simhash branch
        (default: the index's k); ``min_resemblance`` (opt-in): only the pairs whose sketches
        estimate at least that resemblance, whichever branch matched them."""
    def clusters(
        self,
        k: Optional[int] = None,
        *,
        min_size: int = 2,
        mode: str = "leader",
        min_resemblance: Optional[float] = None,
    ) -> List[Cluster]:
        """Leader clusters (``mode="components"``: connected components), largest first;
        ``min_resemblance``: of the pairs :meth:`pairs` gives with it."""
    def explain(self, a: str, b: str) -> Dict[str, Any]:
        """Why documents ``a`` and ``b`` are near-duplicates, or why not (``neardup explain --json``)."""
    def report(
        self,
        path: Union[str, "os.PathLike[str]"],
        *,
        max_clusters: int = 20000,
        detailed: int = 300,
        members: int = 20,
        max_text_bytes: int = 20000,
    ) -> Dict[str, int]:
        """Writes the review report (one self-contained HTML file) to ``path``."""
    def explain_texts(self, a: str, b: str) -> Dict[str, Any]:
        """:meth:`explain` for two texts."""
    def mirrors(self, *, host: Optional[str] = None, all: bool = False) -> List[HostPair]:
        """Host pairs that copy each other's pages, best first."""
    def fingerprint_of(self, id: str) -> Optional[int]:
        """The fingerprint of the document ``id``, or None."""
    def __len__(self) -> int: ...
    @property
    def path(self) -> pathlib.Path: ...
    @property
    def language(self) -> str: ...
    @property
    def k(self) -> int: ...
    @property
    def policy(self) -> Policy: ...
    @property
    def scheme(self) -> Scheme: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Index": ...
    def __exit__(self, exc_type: Any = None, exc_value: Any = None, traceback: Any = None) -> bool: ...

class Signature:
    """A document's signature under a :class:`Rule` (from :meth:`Rule.sign`)."""

    @property
    def fingerprint(self) -> int:
        """The simhash fingerprint (unsigned 64-bit int)."""
    @property
    def sketch(self) -> bytes:
        """The b-bit MinHash sketch, :attr:`Rule.sketch_bytes` bytes (little-endian words)."""
    @property
    def keys(self) -> List[int]:
        """Simhash block keys, then one key per band (none for a text without tokens)."""
    def __eq__(self, other: object) -> bool: ...

class Evidence:
    """Why two signatures match (from :meth:`Rule.matches`)."""

    @property
    def kind(self) -> Literal["simhash", "resemblance"]: ...
    @property
    def distance(self) -> int:
        """Hamming distance of the fingerprints."""
    @property
    def resemblance(self) -> float:
        """The sketches' resemblance estimate (computed for both kinds)."""
    @property
    def band(self) -> Optional[int]:
        """The first shared band of a resemblance match; ``None`` for a simhash match."""

PairColumns = Tuple[bytes, bytes, bytes, bytes, bytes]
"""``(row_a, row_b, distance, resemblance, band)``: little-endian u64, u64, u32, f32, i32
buffers (``band`` -1 for a simhash match); read them with ``numpy.frombuffer``."""

class _PairStatsOptional(TypedDict, total=False):
    below_min_resemblance: int

class PairStats(_PairStatsOptional):
    pairs: int
    comparisons: int
    hot_keys: int

class Rule:
    """The match rule: simhash within 3, or one of 12 shared MinHash bands and a resemblance
    estimate of at least 0.55; ``language`` is :class:`Scheme`'s. Not picklable (it holds a
    signer): ship the language name and ``key_bits`` to other processes.

    ``key_bits`` (16 to 32; default 20, the index's rule): bits of each band's key. Two
    unrelated documents share a band by chance with probability ``2**-key_bits`` per band, so
    a join over ``n`` documents meets about ``12 * n / 2**key_bits`` chance candidates per
    document, which it must verify: ~11 at 1M with 20 bits, 0.003 with 32. The bins, the
    estimate and the threshold are the same; a wider key is more bits of the same hash of the
    band's bins, so every pair a wider rule matches the narrower one matches too, and the
    narrower one adds only pairs that match by resemblance through a chance key collision. The
    sketch is 16 bytes longer with 32 bits (176 bytes). ``ValueError`` outside 16..=32.

    The batch methods take and return columns as little-endian byte buffers and run on the
    calling thread with the GIL released; they raise ``ValueError`` when the buffers' sizes do
    not fit each other or the rule.
    """

    def __init__(self, language: str = "auto", *, key_bits: int = 20, fold_scripts: bool = True) -> None:
        """``fold_scripts=False``: Traditional Chinese signed as written, not folded to
        Simplified (the index's scheme folds; for a caller whose resemblance does not)."""
    def sign(self, text: str) -> Signature:
        """The signature of ``text`` (one analysis; GIL released)."""
    def matches(self, a: Signature, b: Signature) -> Optional[Evidence]:
        """Why ``a`` and ``b`` match, or ``None``."""
    def sign_many(self, texts: Iterable[str]) -> Tuple[bytes, bytes]:
        """``(fingerprints, sketches)``: 8 and :attr:`sketch_bytes` bytes per text, in order."""
    def postings(self, fingerprints: bytes, sketches: bytes) -> Tuple[bytes, bytes]:
        """``(documents, keys)``: u32 document indexes and u64 keys, one entry per key."""
    def hot_keys(self, keys: bytes, fingerprints: bytes, sketches: bytes, max_postings_per_key: int) -> bytes:
        """Keys held by more than ``max_postings_per_key`` distinct signatures (u64 buffer);
        every posting of a key must be in the call."""
    def verify_groups(
        self,
        keys: bytes,
        rows: bytes,
        fingerprints: bytes,
        sketches: bytes,
        max_postings_per_key: int,
        hot_keys: bytes,
        *,
        min_resemblance: Optional[float] = None,
    ) -> Tuple[PairColumns, PairStats]:
        """The pairs of postings grouped by key, as the single-machine join reports them, each
        once; ``max_postings_per_key`` 0 means no bound; ``min_resemblance``: as
        :meth:`pairs_in_memory`'s."""
    def pairs_in_memory(
        self,
        fingerprints: bytes,
        sketches: bytes,
        max_postings_per_key: int,
        *,
        min_resemblance: Optional[float] = None,
    ) -> Tuple[PairColumns, PairStats]:
        """Every matching pair of signed documents (document indexes for rows), on this
        machine; ``max_postings_per_key`` 0 means no bound. ``min_resemblance`` (opt-in):
        only the pairs whose sketches estimate at least that resemblance, whichever branch
        matched them (pairs with an empty sketch stay); ``stats`` then also has
        ``below_min_resemblance``, the pairs left out."""
    @property
    def keys_per_document(self) -> int: ...
    @property
    def bands(self) -> int: ...
    @property
    def sketch_bytes(self) -> int: ...
    @property
    def id(self) -> str: ...
    @property
    def language(self) -> str: ...
    @property
    def key_bits(self) -> int:
        """Bits of a band key (16 to 32)."""
    @property
    def fold_scripts(self) -> bool:
        """Whether Traditional Chinese is folded to Simplified before signing."""

def components(a: bytes, b: bytes) -> Tuple[bytes, bytes]:
    """Connected components of the edges ``(a[i], b[i])`` (u64 buffers): ``(nodes, labels)``,
    each node once, ascending, and the smallest node of its component. ``ValueError`` when the
    buffers differ in length or are not whole u64s."""

def leaders(a: bytes, b: bytes) -> Tuple[bytes, bytes]:
    """Leader clusters of the edges ``(a[i], b[i])`` (u64 buffers), the nodes' numeric order
    being the input order: ``(nodes, labels)``, every node of a cluster of at least two,
    ascending, and its leader (the smallest earlier leader it has an edge to; a leader is its
    own label). ``ValueError`` when the buffers differ in length or are not whole u64s."""
