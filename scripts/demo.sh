#!/usr/bin/env bash
# Set everything up on the embedded default (SQLite, on-disk Celery broker) and start the web server
# and one worker (queues gpu and cpu: the demo run, then its four long2short variants and every
# evaluation). Open http://127.0.0.1:${PORT:-8000}/ and log in as demo / demo. Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export DJANGO_SETTINGS_MODULE=webapp.settings OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
port=${PORT:-8000}

.venv/bin/python manage.py migrate --no-input -v 0
.venv/bin/python manage.py seed_demo --launch-run
log_dir="${MIRRORLAB_DATA_DIR:-data}/logs"  # settings.LOG_DIR: <data dir>/logs (relative paths from the repo root)
mkdir -p "$log_dir"
.venv/bin/celery -A workers worker -Q gpu,cpu --pool=solo -n "demo@%h" --loglevel=INFO \
  >"$log_dir/worker.log" 2>&1 &
worker=$!
trap 'kill "$worker" 2>/dev/null; wait "$worker" 2>/dev/null || true' EXIT INT TERM
echo "== worker started (log: $log_dir/worker.log)"
echo "== open http://127.0.0.1:$port/ and log in as demo / demo (API: /api/, admin: /admin/)"
echo "== the demo run trains first; its four long2short variants follow (Long2short page: /long2short/)"
.venv/bin/python manage.py runserver "127.0.0.1:$port" --noreload
