#!/usr/bin/env bash
# scripts/flux_python.sh — print the Python the flux_torch build and tests use: $FLUX_PYTHON, else python3
# if it imports torch, else .venv/bin/python (made by scripts/setup.sh --tests) if it does; exit 1 if none.
cd "$(dirname "$0")/.."
for py in "${FLUX_PYTHON:-}" python3 "$PWD/.venv/bin/python"; do
  [ -n "$py" ] || continue
  if command -v "$py" >/dev/null 2>&1 && "$py" -c "import torch" >/dev/null 2>&1; then
    command -v "$py"
    exit 0
  fi
done
exit 1
