#!/usr/bin/env bash
# The Python package's part of the README's test command: lints the binding, builds the package
# into a virtual environment (created on first use, beside cargo's build output so the extension
# reuses the compiled crates) with pip, and runs its pytest suite.
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-$PWD/target}"
venv="$target/python-venv"
python="${PYTHON:-python3}"

cargo clippy --release -p tantivy-simhash-python -- -D warnings

if ! "$venv/bin/python" -c "" 2>/dev/null; then
    rm -rf "$venv"
    "$python" -m venv "$venv"
fi
pip="-m pip install --quiet --disable-pip-version-check"
# pip runs maturin (the build backend) on python/ once, into a wheel that both steps below install.
wheels="$target/python-wheel"
rm -rf "$wheels"
"$venv/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps -w "$wheels" ./python
wheel="$(ls "$wheels"/*.whl)"
# pyarrow, tqdm and dask are optional extras the tests use (the dask tests start a local cluster of
# two worker processes).
"$venv/bin/python" $pip --force-reinstall --no-deps "$wheel"
"$venv/bin/python" $pip "$wheel[test,arrow,progress,dask]"

status=0
(cd python && "$venv/bin/python" -m pytest -q -p no:cacheprovider) || status=$?
if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests: the Python suite is missing" >&2
fi
[ "$status" -eq 0 ] || exit "$status"

# Every Python block of the READMEs (README.md, python/README.md) runs as printed in a fresh virtual
# environment holding only what the install command printed beside it installs (the same wheel,
# with that command's extras).
readme_venv="$target/python-readme-venv"
"$venv/bin/python" python/readme_blocks.py list > "$target/python-readme-blocks"
while read -r number extras; do
    rm -rf "$readme_venv"
    "$python" -m venv "$readme_venv"
    if [ "$extras" = "-" ]; then spec="$wheel"; else spec="$wheel[$extras]"; fi
    "$readme_venv/bin/python" $pip "$spec"
    "$venv/bin/python" python/readme_blocks.py write "$number" "$readme_venv/readme_block.py"
    if ! (cd "$readme_venv" && "$readme_venv/bin/python" readme_block.py > /dev/null 2> stderr); then
        cat "$readme_venv/stderr" >&2
        echo "README Python block $number (python/readme_blocks.py list) failed after installing only ${spec##*/}" >&2
        exit 1
    fi
    # A reader sees what the block prints: no log noise (Dask's shuffles log at WARNING).
    if grep -q "distributed.shuffle" "$readme_venv/stderr"; then
        cat "$readme_venv/stderr" >&2
        echo "README Python block $number logs Dask shuffle warnings" >&2
        exit 1
    fi
done < "$target/python-readme-blocks"
rm -rf "$readme_venv"
