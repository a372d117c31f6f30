#!/usr/bin/env bash
# Whole blocks against their pieces (issue 52): each block of examples/layers that
# bench/programs/<block>_pieces.prism cuts by hand into the pieces its kernel cut searches, tuned
# at the block's benchmark shape, and each piece tuned alone at the same dims, side by side in one
# daemon with its own tuning DB: the block's best, the sum of its pieces' bests and their ratio
# (SUM/BEST at least 1.00 on the GPU). Arguments go to every tune (`--target cuda`, `--top 8`);
# PRISM_NO_BUILD=1 uses build/bin as it is (scripts/gpu_session.sh's `blocks` stage).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${PRISM_NO_BUILD:-}" ] || bash scripts/build.sh >&2
tmp=$(mktemp -d)
export XDG_RUNTIME_DIR="$tmp/run" XDG_STATE_HOME="$tmp/state"
mkdir -p -m 700 "$XDG_RUNTIME_DIR" "$XDG_STATE_HOME"
trap 'build/bin/prism -c "daemon stop" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

printf '%-18s %-34s %10s %10s %10s %9s  %s\n' BLOCK SHAPE EAGER BEST PIECES SUM/BEST "PIECES' BESTS"
for pieces in bench/programs/*_pieces.prism; do
  name=$(basename "$pieces" _pieces.prism)
  block=examples/layers/$name.prism
  shape=$(sed -n 's/^# Benchmark shape: \([^.(]*\).*$/\1/p' "$block" | head -1)
  # Each piece is tuned at the block's dims that its signature names.
  commands=$(python3 - "$block" "$pieces" "$name" "${shape% }" "$*" <<'PY'
import re, sys
block, pieces, name, shape, extra = sys.argv[1:]
dims = dict(b.split("=") for b in shape.split())
cmds = [f"open {block}", f"open {pieces}", f"search {name}", f"tune {name} {shape} {extra}"]
for prog, params in re.findall(r"^program (\w+)\((.*)\) \{", open(pieces).read(), re.M):
    used = set(re.findall(r"[A-Za-z_]\w*", " ".join(re.findall(r"\[([^\]]*)\]", params))))
    cmds += [f"search {prog}", f"tune {prog} " + " ".join(f"{k}={v}" for k, v in dims.items() if k in used) + f" {extra}"]
print("; ".join(cmds))
PY
)
  build/bin/prism --json -c "$commands" | python3 -c '
import json, sys
name, shape = sys.argv[1], sys.argv[2]
tunes = [o for o in map(json.loads, sys.stdin) if "speedup" in o]
block, pieces = tunes[0], tunes[1:]
total = sum(p["bestMs"] for p in pieces)
print("%-18s %-34s %8.3fms %8.3fms %8.3fms %7.2fx  %s" % (name, shape, block["baselineMs"], block["bestMs"], total,
      total / block["bestMs"], " + ".join("%.3f" % p["bestMs"] for p in pieces)))
' "$name" "${shape% }"
done
