#!/usr/bin/env bash
# The speedup table on the GPU (issue 6): every workload of docs/design.md §8 at its shapes in f16 —
# eager (a kernel per op, cuBLAS matmul) vs prism's best, speedup, % of the roofline (data-sheet
# bandwidth) — and, where PyTorch with CUDA is installed, PyTorch eager and torch.compile on the
# same workloads and shapes (scripts/bench_torch.py). Arguments go to prism_bench_tune_gpu
# (workload names to restrict to, --top K). Without a GPU it says why and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."

why=""
if ! command -v nvidia-smi >/dev/null 2>&1 && ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  why="no NVIDIA driver (nvidia-smi and libcuda.so.1 not found)"
elif command -v nvidia-smi >/dev/null 2>&1 && ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  why="nvidia-smi lists no GPU"
fi
if [ -n "$why" ]; then
  echo "no CUDA device: $why"
  exit 0
fi

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs" --target prism_bench_tune_gpu prism-runner

echo "## prism on the GPU (f16 as declared)"
build/bin/prism_bench_tune_gpu "$@"

echo
if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" >/dev/null 2>&1; then
  echo "## PyTorch (f16, CUDA events, median of 50)"
  python3 scripts/bench_torch.py "$@"
else
  echo "## PyTorch: not measured (python3 cannot import torch with CUDA here)"
fi
