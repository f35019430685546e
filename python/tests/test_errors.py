"""Every misuse raises a Python exception with the crate's message; none crashes the interpreter."""

import json

import pytest

from tantivy_simhash import Error, Index, Writer

DOC = {"id": "a", "text": "alpha beta gamma delta epsilon"}


@pytest.fixture
def index(tmp_path):
    with Index.create(tmp_path / "idx") as index:
        yield index


@pytest.mark.parametrize(
    "doc, error, message",
    [
        ("not a dict", TypeError, "must be a dict"),
        (["id", "text"], TypeError, "must be a dict"),
        (None, TypeError, "must be a dict"),
        ({"text": "x"}, ValueError, "no id field `id` .the document's fields: `text`."),
        ({"id": None, "text": "x"}, ValueError, "the id field `id` is null"),
        ({"id": " ", "text": "x"}, ValueError, "is empty"),
        ({"id": 1.5, "text": "x"}, TypeError, "`id` is float; expected a string or an integer"),
        ({"id": True, "text": "x"}, TypeError, "`id` is bool; expected a string or an integer"),
        ({"id": b"a", "text": "x"}, TypeError, "`id` is bytes; expected a string or an integer"),
        ({"id": "a"}, ValueError, "has no text field `text`"),
        ({"id": "a", "text": 3}, TypeError, "the text field `text` is a number; expected a string"),
        ({"id": "a", "text": "x", "title": 3}, TypeError, "`title` is a number"),
        ({"id": "a", "text": "x", "host": ["h"]}, TypeError, "`host` is list"),
        ({"id": "a", "text": "  ", "title": ""}, ValueError, "nothing to fingerprint"),
    ],
)
def test_bad_documents(index, doc, error, message):
    with index.writer() as w:
        with pytest.raises(error, match=message):
            w.add(doc)
        assert w.add(DOC).status == "added"


def test_add_many_takes_an_iterable_of_documents(index):
    with index.writer() as w:
        for bad in [DOC, "text", 5]:
            with pytest.raises(TypeError):
                w.add_many(bad)
        with pytest.raises(ValueError, match="batch_size"):
            w.add_many([DOC], batch_size=0)
        with pytest.raises(TypeError, match="progress must be"):
            w.add_many([DOC], progress="yes")

        def broken():
            yield {"id": "b", "text": "one two three"}
            raise RuntimeError("the source failed")

        with pytest.raises(RuntimeError, match="the source failed"):
            w.add_many(broken())
        with pytest.raises(TypeError, match="expected a str"):
            w.add_many([{"id": "c", "text": "four five"}, {"id": "d", "text": 1}])
        summary = w.add_many([{"id": "e", "text": "six"}, {"id": "f"}, 7, {"id": "g", "text": "seven"}], skip_bad=True)
        assert (summary.added, summary.skipped_bad) == (2, 2)

        def failing_progress(done, total):
            raise KeyError("from the callback")

        with pytest.raises(KeyError):
            w.add_many([{"id": "h", "text": "eight"}], progress=failing_progress)
    # What was read before each failure was added (and committed by the with block).
    assert {i: index.fingerprint_of(i) is not None for i in "bcdefgh"} == {
        "b": True, "c": True, "d": False, "e": True, "f": False, "g": True, "h": True
    }


def test_a_closed_index_raises_value_error(tmp_path):
    index = Index.create(tmp_path / "idx")
    index.close()
    index.close()
    assert index.closed and repr(index) == "Index(closed)"
    calls = [
        lambda: len(index),
        lambda: index.writer(),
        lambda: index.search("x"),
        lambda: index.similar(text="x"),
        lambda: index.pairs(),
        lambda: index.clusters(),
        lambda: index.mirrors(),
        lambda: index.fingerprint_of("a"),
        lambda: index.path,
        lambda: index.scheme,
        lambda: index.k,
    ]
    for call in calls:
        with pytest.raises(ValueError, match="the index is closed"):
            call()


def test_a_closed_writer_raises_value_error(index):
    w = index.writer()
    w.close()
    w.close()
    for call in [lambda: w.add(DOC), lambda: w.add_many([DOC]), w.commit, w.rollback]:
        with pytest.raises(ValueError, match="the writer is closed"):
            call()
    with w:  # leaving a closed writer's block does nothing
        pass
    # A writer outlives the index object that made it.
    w2 = index.writer()
    index.close()
    assert w2.add(DOC).added
    w2.commit()
    w2.close()


def test_one_writer_at_a_time(index):
    with index.writer():
        with pytest.raises(Error, match="(?i)lock"):
            index.writer()
    index.writer().close()


def test_bad_arguments(index, tmp_path):
    with pytest.raises(ValueError, match="unknown policy `keep`"):
        index.writer("keep")
    with pytest.raises(ValueError, match='unknown ids="first"'):
        index.writer(ids="first")
    with pytest.raises(ValueError, match="unknown field `url`"):
        index.writer(fields={"url": "id"})
    with pytest.raises(TypeError):
        index.writer(fields={"id": 3})
    with pytest.raises(ValueError, match="too small"):
        index.writer(memory_mb=1)
    with pytest.raises(ValueError, match="threads"):
        index.writer(threads=0)
    with pytest.raises(OverflowError):
        index.writer(threads=-1)
    with pytest.raises(ValueError, match="cannot parse the query"):
        index.search('"unclosed')
    with pytest.raises(ValueError, match="limit"):
        index.search("x", limit=0)
    with pytest.raises(TypeError):
        index.search(42)
    with pytest.raises(ValueError, match="exactly one of id= and text="):
        index.similar()
    with pytest.raises(ValueError, match="exactly one of id= and text="):
        index.similar(id="a", text="b")
    with pytest.raises(ValueError, match="no document has id `nobody`"):
        index.similar(id="nobody")
    for call in [lambda: index.similar(text="x", k=4), lambda: index.pairs(k=4), lambda: index.clusters(k=9)]:
        with pytest.raises(ValueError, match="beyond what"):
            call()
    with pytest.raises(ValueError, match="no page of"):
        index.mirrors(host="nowhere.example")
    with pytest.raises(TypeError):
        Index.open(42)


def test_create_and_open_refuse_what_they_cannot_use(tmp_path):
    with pytest.raises(ValueError, match="unknown language"):
        Index.create(tmp_path / "a", language="klingon")
    with pytest.raises(ValueError, match="unknown policy"):
        Index.create(tmp_path / "b", policy="maybe")
    with pytest.raises(ValueError, match="no layout for distance 99"):
        Index.create(tmp_path / "c", k=99)
    assert not (tmp_path / "a").exists() and not (tmp_path / "c").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        Index.create(tmp_path / "file")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(ValueError, match="is not empty"):
        Index.create(tmp_path / "full")
    Index.create(tmp_path / "made").close()
    with pytest.raises(ValueError, match="already holds an index"):
        Index.create(tmp_path / "made")
    with pytest.raises(Error, match="does not exist"):
        Index.open(tmp_path / "missing")
    with pytest.raises(Error, match="is not a neardup index"):
        Index.open(tmp_path / "full")


def edit_scheme(record):
    record["settings"]["scheme"]["tokenization"] = {"Analyzer": {"name": "stem-english"}}
    record["scheme"] = record["scheme"].replace("builtin-jieba", "analyzer:stem-english")


def edit_layout(record):
    record["settings"]["layout"] = {"blocks": 8, "blocks_per_key": 2, "max_distance": 6}
    record["layout"] = "blocks=8;per_key=2;k=6"


def edit_seed(record):
    record["settings"]["scheme"]["seed"] = 1


def edit_format(record):
    record["application"]["format"] = "neardup/9"


def drop_settings(record):
    del record["application"]


@pytest.mark.parametrize(
    "edit, message",
    [
        (edit_scheme, "two records of its scheme disagree"),
        (edit_layout, "two records of its layout disagree"),
        (edit_seed, "the recorded parameters rebuild scheme"),
        (edit_format, "format `neardup/9`, expected"),
        (drop_settings, "not one made by `neardup index`"),
    ],
)
def test_an_index_whose_record_names_another_scheme_is_refused(tmp_path, edit, message):
    """The index records its scheme and layout (in a file and in every commit); Python refuses
    an index whose record does not rebuild the scheme it was built with."""
    path = tmp_path / "idx"
    with Index.create(path) as index, index.writer() as w:
        w.add(DOC)
    record_file = path / ".tantivy-simhash.json"
    record = json.loads(record_file.read_text())
    edit(record)
    record_file.write_text(json.dumps(record))
    with pytest.raises(Error, match=message):
        Index.open(path)


def test_a_damaged_record_is_refused(tmp_path):
    path = tmp_path / "idx"
    Index.create(path).close()
    (path / ".tantivy-simhash.json").write_text("{not json")
    with pytest.raises(Error, match="is damaged"):
        Index.open(path)


def test_classes_cannot_be_made_directly():
    with pytest.raises(TypeError):
        Writer()
