#!/usr/bin/env bash
# Installs everything prism needs to build and test, from Debian's packages.
# Idempotent: packages already present are left alone, and apt is not touched at all then.
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
  python3-numpy         # tests cross-check .npy files with NumPy
  python3-pytest        # the Python package's tests (python/tests)
  python3-torch         # from_torch and compile, tested against the modules themselves
  python3-distributed   # prism.batch on a Dask cluster, tested on a LocalCluster
  neovim                # the LSP test drives prismd from Neovim's own client (headless)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
