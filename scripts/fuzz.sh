#!/usr/bin/env bash
# The long fuzz run (fuzz/README.md): builds the fuzzers with AddressSanitizer and
# UndefinedBehaviorSanitizer (build-asan, -DPRISM_SANITIZE=ON) and/or in Release (build-fuzz), then
# sends mutated frames to one prismd and runs mutated programs in-process. Prints a summary and
# exits non-zero on any crash or hang (the inputs are saved under the artifacts directory).
#
#   scripts/fuzz.sh [--frames N] [--programs N] [--seed S] [--clients C] [--build asan|release|both]
#                   [--search] [--keep-going] [--no-build] [--artifacts DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

frames=100000
programs=10000
seed=1
clients=4
builds=asan
search=""
keep_going=""
build=1
artifacts="$root/fuzz-artifacts"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --frames) frames=$2; shift 2 ;;
    --programs) programs=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --build) builds=$2; shift 2 ;;
    --search) search=--search; shift ;;
    --keep-going) keep_going=--keep-going; shift ;;
    --no-build) build=0; shift ;;
    --artifacts) artifacts=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$builds" in
  asan) dirs=(build-asan) ;;
  release) dirs=(build-fuzz) ;;
  both) dirs=(build-fuzz build-asan) ;;
  *) echo "--build must be asan, release or both" >&2; exit 2 ;;
esac

# Leaks are not what this run looks for (prismd keeps caches for its lifetime); a huge allocation
# the engine asks for must come back as std::bad_alloc, as it does without ASan. The daemon, the
# kernel runner it spawns and the fuzzers all inherit these.
export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:abort_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"

jobs=$(nproc 2>/dev/null || echo 2)
status=0
summary=""
for dir in "${dirs[@]}"; do
  if [[ $build == 1 ]]; then
    flags=(-DCMAKE_BUILD_TYPE=Release)
    [[ $dir == build-asan ]] && flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DPRISM_SANITIZE=ON)
    cmake -S . -B "$dir" "${flags[@]}" >/dev/null
    cmake --build "$dir" -j"$jobs" --target prismd prism-runner prism_fuzz_frames prism_fuzz_programs
  fi
  mkdir -p "$artifacts/$dir"
  echo "== $dir: $frames iterations of frames against one prismd (seed $seed)"
  start=$(date +%s)
  if "$dir/bin/prism_fuzz_frames" --frames "$frames" --seed "$seed" --clients "$clients" --artifacts "$artifacts/$dir" \
      $keep_going | tee "$artifacts/$dir/frames.log"; then frames_rc=0; else frames_rc=$?; fi
  echo "== $dir: $programs mutated programs (seed $seed)"
  if "$dir/bin/prism_fuzz_programs" --programs "$programs" --seed "$seed" $search --artifacts "$artifacts/$dir" \
      | tee "$artifacts/$dir/programs.log"; then programs_rc=0; else programs_rc=$?; fi
  [[ $frames_rc == 0 && $programs_rc == 0 ]] || status=1
  summary+="$dir ($(( $(date +%s) - start )) s): frames exit $frames_rc, programs exit $programs_rc"$'\n'
  summary+="  $(grep -h '^crashes:' "$artifacts/$dir/frames.log" || echo 'frames: no summary (crashed)')"$'\n'
  summary+="  $(grep -h '^findings:' "$artifacts/$dir/programs.log" || echo 'programs: no summary (crashed)')"$'\n'
done

echo
echo "== summary"
printf '%s' "$summary"
[[ $status == 0 ]] && echo "no crashes, no hangs" || echo "FINDINGS: see above and $artifacts"
exit $status
