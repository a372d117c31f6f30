#!/usr/bin/env bash
# The CPU speedup table (issues 5 and 18): every workload of docs/design.md §8 at its shapes, with
# its tensors stored at f16 and at bf16 — eager baseline, prism's best, speedup, % of the roofline
# at the declared dtype, the tuner's regret — and a summary against issue 18's targets. Arguments
# go to build/bin/prism_bench_tune (workload names to restrict to, --top K, --repeat N for
# medians of N tunes, --dtype f16|bf16|f32).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
build/bin/prism_bench_tune "$@"
