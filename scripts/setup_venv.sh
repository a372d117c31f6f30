#!/usr/bin/env bash
# Makes prism's one Python environment (scripts/python_env.sh says where) from PyPI, with the
# versions pinned in python/requirements.txt. Idempotent: an environment whose stamp matches the
# requirements file is left alone; a changed file, or a broken environment, is made anew.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/python_env.sh

requirements=python/requirements.txt
want=$(sha256sum "$requirements" | cut -d' ' -f1)
stamp="$PRISM_VENV/.prism-requirements"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && "$PRISM_PYTHON" -c "import torch, transformers, numpy, pytest, distributed" 2>/dev/null; then
  echo "setup: Python environment ready ($PRISM_VENV)"
  exit 0
fi

base="${PRISM_BASE_PYTHON:-python3}"
echo "setup: making the Python environment at $PRISM_VENV from $requirements ($($base --version))"
rm -rf "$PRISM_VENV"
mkdir -p "$(dirname "$PRISM_VENV")"
"$base" -m venv "$PRISM_VENV"
"$PRISM_PYTHON" -m pip install -q --disable-pip-version-check --no-input -r "$requirements"
echo "$want" > "$stamp"
echo "setup: Python environment done"
