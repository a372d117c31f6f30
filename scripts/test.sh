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
# The Python package (python/prism) against the binaries just built, on Debian's python3 (the one
# setup.sh gives pytest and NumPy).
/usr/bin/python3 -m pytest -q -p no:cacheprovider python/tests
