#!/usr/bin/env bash
# Benchmarks (not tests): builds, then prints the reference interpreter's time per workload
# (arguments go to it: --repeat N) and the e-graph saturation and lookup rates.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
build/bin/prism_bench_interpreter "$@"
build/bin/prism_bench_egraph
