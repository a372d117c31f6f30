#!/usr/bin/env bash
# The layer table (issue 13): every layer of examples/layers at the benchmark shape its comment
# gives ("# Benchmark shape: n=16 d=4096."), f32 on this CPU: search seconds and verified
# families, eager and best times, speedup, % of the roofline and the best family. It runs its own
# daemon with its own tuning DB (a temporary XDG_RUNTIME_DIR and XDG_STATE_HOME), so every row is
# measured by this run, never replayed. Arguments: layer names to restrict to.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >&2
tmp=$(mktemp -d)
export XDG_RUNTIME_DIR="$tmp/run" XDG_STATE_HOME="$tmp/state"
mkdir -p -m 700 "$XDG_RUNTIME_DIR" "$XDG_STATE_HOME"
trap 'build/bin/prism -c "daemon stop" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

printf '%-20s %-30s %8s %5s %10s %10s %8s %8s  %s\n' LAYER SHAPE SEARCH FAMS EAGER BEST SPEEDUP ROOFLINE SUMMARY
for file in examples/layers/*.prism; do
  name=$(basename "$file" .prism)
  if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
  shape=$(sed -n 's/^# Benchmark shape: \([^.(]*\).*$/\1/p' "$file" | head -1)
  shape=${shape% }
  if [ -z "$shape" ]; then
    echo "$name: no '# Benchmark shape:' line" >&2
    exit 1
  fi
  build/bin/prism --json -c "open $file; search $name; tune $name $shape" | python3 -c '
import json, sys
name, shape = sys.argv[1], sys.argv[2]
search = tune = None
for line in sys.stdin:
    o = json.loads(line)
    if "candidates" in o and "stats" in o: search = o
    if "speedup" in o: tune = o
s = search["stats"]
print("%-20s %-30s %7.2fs %5d %8.3fms %8.3fms %7.2fx %7.0f%%  %s" % (
    name, shape, s["totalSeconds"], s["verified"], tune["baselineMs"], tune["bestMs"], tune["speedup"],
    100 * tune["rooflineFraction"], (tune["best"] or {}).get("summary", "")))
' "$name" "$shape"
done
