#!/usr/bin/env bash
# The speedup table (issue 5): every workload of docs/design.md §8 at its shapes, f32 on this CPU —
# eager baseline, prism's best, speedup, % of the roofline, search and tune times. Arguments go
# to build/bin/prism_bench_tune (workload names to restrict to, --top K).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
build/bin/prism_bench_tune "$@"
