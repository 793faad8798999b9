#!/usr/bin/env bash
# Run the whole test suite against the local PostgreSQL and Redis (started if needed).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/services.sh
export OMP_NUM_THREADS=1
exec .venv/bin/python -m pytest "$@"
