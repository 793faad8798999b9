#!/usr/bin/env bash
# Create .venv and install Mirrorlab with its test tools; re-installs only when pyproject.toml changes.
set -euo pipefail
cd "$(dirname "$0")/.."

python_bin=${PYTHON:-$(command -v python3.11 || command -v python3)}
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv with $python_bin"
  "$python_bin" -m venv .venv
fi
stamp=".venv/.mirrorlab-installed-$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "== installing Mirrorlab and its dependencies into .venv"
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".[test]"
  rm -f .venv/.mirrorlab-installed-*
  touch "$stamp"
fi
