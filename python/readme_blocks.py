"""The Python code blocks of the READMEs (the repository's and the package's) and the install
command printed beside each.

python/test.sh runs every block as printed in a fresh virtual environment that holds only what the
block's install command installs (the package's wheel, with the extras that command names), so a
block that needs an extra its install line does not name fails there.

    python readme_blocks.py list          # one line per block: its number, then its extras ("-": none)
    python readme_blocks.py write N FILE  # block N, exactly as printed, into FILE

Each block's install command is the last `pip install ./python` or `pip install "./python[EXTRAS]"`
the README prints before it.
"""

import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
READMES = [HERE.parent / "README.md", HERE / "README.md"]
INSTALL = re.compile(r'pip install "?\./python(?:\[([a-z,]+)\])?"?')
BLOCK = re.compile(r"```python\n(.*?)```", flags=re.S)


def blocks():
    found = []
    for readme in READMES:
        text = readme.read_text(encoding="utf-8")
        count = 0
        for match in BLOCK.finditer(text):
            installs = list(INSTALL.finditer(text, 0, match.start()))
            if not installs:
                sys.exit(f"{readme.name}: the Python block at offset {match.start()} has no "
                         "`pip install ./python` before it: print the install command it needs")
            found.append((installs[-1].group(1) or "", match.group(1)))
            count += 1
        if count == 0:
            sys.exit(f"{readme} holds no ```python block: nothing to check")
    return found


def main(argv):
    if argv[:1] == ["list"]:
        for number, (extras, _) in enumerate(blocks()):
            print(number, extras or "-")
    elif argv[:1] == ["write"] and len(argv) == 3:
        _, code = blocks()[int(argv[1])]
        pathlib.Path(argv[2]).write_text(code, encoding="utf-8")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
