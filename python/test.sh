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
# pip runs maturin (the build backend) on python/; pyarrow, tqdm and dask are optional extras the
# tests use (the dask tests start a local cluster of two worker processes).
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "./python[test,arrow,progress,dask]"

cd python
status=0
"$venv/bin/python" -m pytest -q -p no:cacheprovider || status=$?
if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests: the Python suite is missing" >&2
fi
exit "$status"
