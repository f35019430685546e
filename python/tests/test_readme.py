"""The README's Python example, the Dask example of docs/DISTRIBUTED.md and the package's docstring
examples run as written."""

import doctest
import re

import tantivy_simhash

from conftest import REPO


def python_blocks(page, count):
    text = (REPO / page).read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == count
    return blocks


def test_readme_python_example_runs(capsys):
    [block] = python_blocks("README.md", 1)
    exec(compile(block, "README.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out == [
        'Outcome(status="added", id="a")',
        'Outcome(status="tagged", id="b", of="a", distance=0, group="a")',
    ]


def test_distributed_dask_example_runs():
    """The pipeline's example on a local cluster of two worker processes; it asserts its output."""
    [block] = python_blocks("docs/DISTRIBUTED.md", 1)
    assert "deduplicate(" in block and "assert" in block
    exec(compile(block, "docs/DISTRIBUTED.md", "exec"), {"__name__": "__main__"})


def test_package_docstring_examples_run():
    failed, attempted = doctest.testmod(tantivy_simhash)
    assert failed == 0 and attempted > 0
