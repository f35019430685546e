"""The README's Python example runs as written."""

import re

from conftest import REPO


def test_readme_python_example_runs(capsys):
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert len(blocks) == 1
    exec(compile(blocks[0], "README.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out == [
        'Outcome(status="added", id="a")',
        'Outcome(status="tagged", id="b", of="a", distance=0, group="a")',
    ]
