#!/usr/bin/env bash
# Builds the Python module (crates/strata-py) with maturin into a virtual
# environment and runs its pytest suite; extra arguments go to pytest.
# `cargo test --workspace` runs this (crates/strata-py/tests/python_suite.rs).
#   STRATA_PY_VENV    the virtual environment (default target/py-venv)
#   PYTHON            the interpreter that creates it (default python3)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=${STRATA_PY_VENV:-$root/target/py-venv}
if [ ! -x "$venv/bin/python" ]; then
    "${PYTHON:-python3}" -m venv "$venv"
fi
# From the Python package registry; a no-op once installed.
"$venv/bin/python" -m pip install -q --disable-pip-version-check 'maturin>=1.9.4,<2' 'pytest>=7' 'hypothesis>=6'
# Its own target directory: `cargo test` holds the workspace's while it runs this.
export CARGO_TARGET_DIR=$root/target/python
VIRTUAL_ENV=$venv PATH="$venv/bin:$PATH" "$venv/bin/maturin" develop --release --locked -q -m crates/strata-py/Cargo.toml
cd crates/strata-py
exec "$venv/bin/python" -m pytest tests -q -p no:cacheprovider "$@"
