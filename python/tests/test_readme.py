"""The README's Python example and the package's docstring examples run as written."""

import doctest
import re

import tantivy_simhash

from conftest import REPO


def readme_python_blocks():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert len(blocks) == 2
    return blocks


def test_readme_python_example_runs(capsys):
    blocks = readme_python_blocks()
    exec(compile(blocks[0], "README.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out == [
        'Outcome(status="added", id="a")',
        'Outcome(status="tagged", id="b", of="a", distance=0, group="a")',
    ]


def test_readme_dask_example_runs():
    """The pipeline's example on a local cluster of two worker processes; it asserts its output."""
    block = readme_python_blocks()[1]
    assert "deduplicate(" in block and "assert" in block
    exec(compile(block, "README.md", "exec"), {"__name__": "__main__"})


def test_package_docstring_examples_run():
    failed, attempted = doctest.testmod(tantivy_simhash)
    assert failed == 0 and attempted > 0
