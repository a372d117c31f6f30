# Sourced by the scripts that make or use prism's Python environment: where it lives.
# PRISM_VENV overrides the place; the default is outside the checkout, so every clone (and CI on a
# machine that keeps its cache) reuses one environment.
PRISM_VENV="${PRISM_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/prism/venv}"
PRISM_PYTHON="$PRISM_VENV/bin/python"
