#!/usr/bin/env bash
# The house rules: ruff, and the import contracts of .importlinter (floors one way, no torch in the web app,
# no Django in the libraries). A violation exits non-zero, naming the file and line or the offending import.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
.venv/bin/ruff check .
.venv/bin/lint-imports
