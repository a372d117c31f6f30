#!/usr/bin/env bash
# Benchmarks (not tests): builds, then prints the reference interpreter's time per workload
# (arguments go to it: --repeat N), the e-graph saturation and lookup rates, and prismd's
# edit → diagnostics latency as a language server, idle and beside a running search.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
build/bin/prism_bench_interpreter "$@"
build/bin/prism_bench_egraph
build/bin/prism_bench_lsp
build/bin/prism_bench_lsp --while-searching --edits 1000
