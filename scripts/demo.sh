#!/usr/bin/env bash
# The main job: set up, build, start the daemon, open the bundled rms_linear example, show its
# inferred shapes, search for fused-kernel families proved equal to it and list them, then tune
# them on this CPU and print the speedup table against the eager baseline (OpenBLAS) and the
# roofline. The daemon keeps running afterwards, so `prism` connects to it at once;
# `build/bin/prism -c "daemon stop"` stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --no-python
bash scripts/build.sh
example=${1:-examples/rms_linear.prism}
program=$(basename "$example" .prism)
bindings=${BINDINGS:-n=8 d=4096}
# A daemon left from an earlier build would answer with older code: restart it (open documents
# are kept on disk and come back).
build/bin/prism --no-start -c "daemon stop" >/dev/null 2>&1 || true
set -x
build/bin/prism -c "open $example; show $program; search $program; candidates $program; tune $program $bindings"
