#!/usr/bin/env bash
# Installs everything prism needs to build and test: Debian's packages, then the Python
# environment from PyPI (setup_venv.sh). Idempotent: packages already present are left alone, and
# apt is not touched at all then; a ready environment is kept.
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  libboost-dev          # Boost.Asio (header-only)
  nlohmann-json3-dev
  libtbb-dev
  catch2                # Catch2 v2 (single header, CMake config)
  libedit-dev           # line editing for the REPL
  libopenblas-dev       # eager-baseline matmul on the CPU
  libopenblas0-openmp   # the same on OpenMP threads, shared with the per-op loops (eager.h)
  python3-numpy         # the C++ tests cross-check .npy files with the system's NumPy
  python3-venv          # the Python environment (setup_venv.sh) where python3 is Debian's
  neovim                # the LSP test drives prismd from Neovim's own client (headless)
  slurmctld slurmd slurm-client munge  # prism.batch on a real Slurm (python/tests/test_batch_slurm.py)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present"
else
  echo "setup: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  echo "setup: packages done"
fi

# The demo needs no Python: `setup.sh --no-python` stops here.
if [ "${1:-}" != "--no-python" ]; then bash "$(dirname "$0")/setup_venv.sh"; fi
