#!/usr/bin/env bash
# Sets up, builds and runs every test. This is the README's test command; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
# One test more than cores: a test waits on its compiler and kernel processes part of the time, and
# at -j(cores) the cores idle for it (docs/testing.md, "Time").
jobs=$(( $(nproc 2>/dev/null || echo 2) + 1 ))
(cd build && ctest --output-on-failure -j"$jobs" --timeout 300)
# The Python package (python/prism) against the binaries just built, in the Python environment
# setup.sh made (PyTorch 2, transformers: python/requirements.txt).
source scripts/python_env.sh
"$PRISM_PYTHON" -m pytest -q -p no:cacheprovider python/tests
