#!/usr/bin/env bash
# One lease on a device machine (issue 16), in one command: the [cuda] tests, the REPL's GPU tune,
# PyTorch eager and torch.compile, and prism's GPU bench, each log written under $OUT (or ./gpu-out).
#
# The device machine has the CUDA toolkit, PyTorch and a compiler but no Boost, oneTBB, Catch2 or
# libedit, and it reaches no registry. So the binaries are built here and carried: run
#   scripts/gpu_session.sh pack        (here: strips build/bin's binaries and the libraries they
#                                       need into .gpu/, which .git/info/exclude ignores)
# then, on the device, with `.gpu` carried:
#   scripts/gpu_session.sh run [stage ...]   stages: env tests repl torch python bench blocks sanitize ncu cpu
#                                            (default: env tests repl torch python bench)
#   scripts/gpu_session.sh run check         issue 48's whole check in at most 8 minutes, so two fit
#                                            in a 15-minute lease: env (30 s), the table with every
#                                            row kept as measurements.csv (270 s, first: the data
#                                            the work between leases needs), the [cuda] tests
#                                            (120 s), Nsight Compute on two decode shapes (60 s)
# `cpu` runs the CPU backend's 16-bit and codegen tests on the device machine's own processor (its
# cores may have AVX-512 BF16 or AMX, which a development machine may lack): the generated kernels
# link OpenBLAS, which the image lacks, so `pack` carries it compressed. `cpubench` runs
# prism_bench_tune there (CPU_BENCH_ARGS), `cputune` REPL commands (CPU_TUNE), `kernels`
# prism_bench_kernels once per ';'-separated argument list in CPU_KERNELS (a candidate's time
# kernel by kernel, e.g. "rmsnorm_mlp 0 n=8 d=2048 --dtype bf16; rmsnorm_mlp 57 n=8 d=2048").
# Environment: BENCH_ARGS (arguments for prism_bench_tune_gpu and bench_torch.py), STAGE_TIMEOUT
# (seconds per stage, default 240).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${OUT:-$root/gpu-out}
mkdir -p "$out"

binaries=(prism_tests prism-runner prism prismd prism_bench_tune_gpu prism_bench_tune prism_bench_kernels)
libraries=(libtbb.so.12 libtbbmalloc.so.2 libedit.so.2 libbsd.so.0 libmd.so.0)
openblas_dir=/usr/lib/x86_64-linux-gnu/openblas-openmp  # where the CPU backend links it (eager.cpp)

pack() {
  rm -rf .gpu && mkdir -p .gpu/bin .gpu/lib
  for b in "${binaries[@]}"; do strip -o ".gpu/bin/$b" "build/bin/$b"; done
  strip -o .gpu/libprism_cuda_plan.so build/lib/libprism_cuda_plan.so  # prism.compile's CUDA runtime
  for l in "${libraries[@]}"; do cp -L "/lib/x86_64-linux-gnu/$l" .gpu/lib/; done
  if [ -e "$openblas_dir/libopenblas.so.0" ]; then  # 36 MB: compressed to stay under the 64 MiB a call carries
    mkdir -p .gpu/openblas
    gzip -c "$openblas_dir/libopenblas.so.0" >.gpu/openblas/libopenblas.so.0.gz
    cp -L /lib/x86_64-linux-gnu/libgfortran.so.5 /lib/x86_64-linux-gnu/libquadmath.so.0 .gpu/openblas/
  fi
  grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >>.git/info/exclude
  du -sh .gpu
}

# The tests name files by the source directory they were built in (/work/main) and find
# prism-runner beside themselves: recreate both.
setup() {
  if [ "$root" != /work/main ]; then mkdir -p /work && ln -sfn "$root" /work/main; fi
  mkdir -p build/bin build/lib && cp .gpu/bin/* build/bin/ && cp .gpu/libprism_cuda_plan.so build/lib/
}

environment() {
  local torch_libs
  torch_libs=$(python3 -c 'import nvidia, os; b = list(nvidia.__path__)[0]; print(":".join(os.path.join(b, d, "lib") for d in sorted(os.listdir(b)) if os.path.isdir(os.path.join(b, d, "lib"))))' 2>/dev/null)
  export LD_LIBRARY_PATH="$root/.gpu/lib:/usr/local/cuda/lib64:${torch_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PRISM_CACHE_DIR=/tmp/prism-cache XDG_CACHE_HOME=/tmp/prism-xdg
}

stage() {  # name, command... (a function of this script too, run by `gpu_session.sh call`)
  local name=$1
  shift
  echo "=== $name ($(date +%T))"
  timeout --kill-after=10 "${STAGE_TIMEOUT:-240}" "$root/scripts/gpu_session.sh" call "$@" >"$out/$name.log" 2>&1
  echo "=== $name rc=$? ($(date +%T))"
  tail -n 25 "$out/$name.log"
}

run_env() {
  nvidia-smi
  nvcc --version | tail -2
  ls -la /usr/local/cuda/lib64/libnvrtc* /usr/local/cuda/lib64/libcublas.so* 2>&1 | head
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  for b in "${binaries[@]}"; do ldd "build/bin/$b" | grep 'not found' && echo "missing for $b"; done
  python3 -c 'import torch; print(torch.__version__, torch.cuda.get_device_name())'
}

# Every [cuda] test, a process per test of test_cuda.cpp (host emulation, CPU-bound) on all cores
# beside one process for the tests that use the device; a summary line per process as it ends, so
# that a stage cut by its time limit still says what passed (the device's log on the way out).
tests_dir=/tmp/prism-tests
test_summary() {  # LOG: a line with its result, the whole log where it did not pass
  echo "--- $(basename "$1"): $(grep -E '^(All tests passed|test cases:)' "$1" | tail -1)"
  grep -qE '^All tests passed' "$1" || cat "$1"
}
export -f test_summary
run_tests() {
  rm -rf "$tests_dir" && mkdir -p "$tests_dir"
  trap 'test_summary "$tests_dir/device.log"; exit 124' TERM
  build/bin/prism_tests "[cuda]~[#test_cuda]" -# --durations yes >"$tests_dir/device.log" 2>&1 &
  build/bin/prism_tests -# "[#test_cuda]" --list-test-names-only | grep -v "^$" | awk '{print NR "|" $0}' |
    xargs -P "$(nproc)" -d '\n' -I{} bash -c 'i=${1%%|*}; name=${1#*|}; spec=$name; [[ $name == *,* ]] && spec="${name%%,*}*"
      build/bin/prism_tests "$spec" --durations yes >'"$tests_dir"'/host-$i.log 2>&1; test_summary '"$tests_dir"'/host-$i.log' _ {} &
  wait  # in the background and waited for, so that the TERM trap runs at once
  test_summary "$tests_dir/device.log"
}

# Nsight Compute on the kernels a --top 1 tune of each decode shape times: the cost model's first
# choice, then its thread variants and the two first choices at 2 blocks an SM: the second launch
# of each launch configuration, the first being the check's (the tables section: shared-memory bank
# conflicts by instruction, what pad_tiles.h removes; Occupancy and WarpStateStats: what one
# block of 4 warps an SM against two of 8 leaves idle, stalls at barriers among them;
# ComputeWorkloadAnalysis: how busy the warps' chains of steps keep the tensor pipe, the cost
# model's kChainsToFill, docs/tuning.md "Latency"), one profiled daemon each: a daemon left by
# an earlier stage would run the tune outside the profiler, so it is stopped first; the report
# comes when the worker exits.
ncu_shapes=("rms_linear n=8 d=4096" "gated_mlp n=8 d=4096")
run_ncu() {
  local shape
  for shape in "${ncu_shapes[@]}"; do
    build/bin/prism -c "daemon stop" >/dev/null 2>&1
    echo "--- ncu: $shape"
    ncu --target-processes all -k regex:prism_kernel --filter-mode per-launch-config --launch-skip 1 --launch-count 1 \
      --section SpeedOfLight \
      --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section LaunchStats \
      --section Occupancy --section WarpStateStats --section ComputeWorkloadAnalysis \
      bash -c "build/bin/prism -c 'open examples/${shape%% *}.prism; tune $shape --target cuda --fresh --top 1'
               build/bin/prism -c 'daemon stop'"
  done
}

# The CPU backend on the device's processor: OpenBLAS where the generated kernels link it, then the
# tests of 16-bit storage and code generation (AVX-512 BF16 and AMX paths run where the CPU has them).
install_openblas() {
  [ -e "$openblas_dir/libopenblas.so.0" ] || [ ! -e .gpu/openblas/libopenblas.so.0.gz ] && return 0
  mkdir -p "$openblas_dir"
  gunzip -c .gpu/openblas/libopenblas.so.0.gz >"$openblas_dir/libopenblas.so.0"
  cp -n .gpu/openblas/libgfortran.so.5 .gpu/openblas/libquadmath.so.0 /usr/lib/x86_64-linux-gnu/
  ldconfig
}

run_cpu() {
  lscpu | grep -E 'Model name|^CPU\(s\)'
  grep -o -w -E 'avx512f|avx512_bf16|amx_bf16|amx_tile|f16c' /proc/cpuinfo | sort | uniq -c
  install_openblas
  local amx='codegen: bf16 x bf16*,codegen: f16 x f16*,codegen: f32 x bf16*,codegen: nn.Linear*'
  build/bin/prism_tests "${CPU_TESTS:-$amx,tuner: every workload stored at bf16*,tuner: PyTorch-style*}" --durations yes
}

run_kernels() {
  local args
  IFS=';' read -ra lists <<<"${CPU_KERNELS:?CPU_KERNELS names the candidates}"
  for args in "${lists[@]}"; do
    # shellcheck disable=SC2086  # each list is words
    build/bin/prism_bench_kernels $args
  done
}

run_stage() {
  case $1 in
    env) stage env run_env ;;
    tests) stage tests run_tests ;;
    repl) stage repl build/bin/prism -c "open examples/rms_linear.prism; tune rms_linear n=8 d=4096 --target cuda --fresh" ;;
    torch) stage torch python3 scripts/bench_torch.py ${BENCH_ARGS:-} ;;
    # prism.compile(target="cuda") against the modules on the device's PyTorch (python/tests).
    python) stage python python3 -m pytest -q -p no:cacheprovider python/tests/test_compile.py -k "gpu or cuda or plan_library" ;;
    # Every timed row kept as $out/measurements.csv: commit it as bench/gpu/DATE-DEVICE.csv, where
    # the regret test ranks it with each later cost model (docs/tuning.md, "Stored measurements").
    bench) stage bench build/bin/prism_bench_tune_gpu --csv "$out/measurements.csv" ${BENCH_ARGS:-} ;;
    # Decoder blocks against the sum of their pieces tuned one by one (issue 52).
    blocks) PRISM_NO_BUILD=1 stage blocks bash scripts/bench_blocks.sh --target cuda ;;
    # The generated kernels of every elementwise op and of the device tests, under memcheck and racecheck.
    sanitize) PRISM_KERNEL_TIMEOUT=600 stage sanitize compute-sanitizer --tool memcheck --target-processes all build/bin/prism_tests -# "[#test_tuner_cuda]" ;;
    racecheck) stage racecheck compute-sanitizer --tool racecheck --target-processes all build/bin/prism_tests -# "[#test_cuda_run]" ;;
    ncu) stage ncu run_ncu ;;
    cpu) stage cpu run_cpu ;;
    cpubench) install_openblas && stage cpubench build/bin/prism_bench_tune ${CPU_BENCH_ARGS:-} ;;
    # REPL commands on the device's processor (CPU_TUNE, e.g. "open F; tune W n=8 d=2048 --fresh"): the
    # tune tables show the cost model's ranks beside the measured times, where cpubench prints regret.
    cputune) install_openblas && stage cputune build/bin/prism -c "${CPU_TUNE:?CPU_TUNE names the REPL commands}" ;;
    kernels) install_openblas && stage kernels run_kernels ;;
    *) echo "unknown stage $1" && return 2 ;;
  esac
}

case ${1:-} in
  pack) pack ;;
  call)  # a stage's command under `timeout`, in the environment the stages share
    shift
    environment
    "$@"
    ;;
  run)
    shift
    setup
    environment
    stages=("$@")
    [ ${#stages[@]} -eq 0 ] && stages=(env tests repl torch python bench)
    if [ "${stages[*]}" = check ]; then
      STAGE_TIMEOUT=30 run_stage env
      # 3 + 4 thread variants + 2 at 2 blocks an SM: about the 8 builds a shape took before schedules
      STAGE_TIMEOUT=270 BENCH_ARGS=${BENCH_ARGS:---top 3} run_stage bench
      STAGE_TIMEOUT=120 run_stage tests
      STAGE_TIMEOUT=60 run_stage ncu
    else
      for s in "${stages[@]}"; do run_stage "$s"; done
    fi
    build/bin/prism -c "daemon stop" >/dev/null 2>&1 || true
    ;;
  *) echo "usage: $0 pack | run [stage ...]" >&2 && exit 2 ;;
esac
