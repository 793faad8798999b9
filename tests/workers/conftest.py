"""A real Celery worker subprocess on the gpu and cpu queues, with Redis as broker and the test Postgres database."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BROKER_URL = os.environ["CELERY_BROKER_URL"]
SHARED_DATASETS = REPO.parent / "shared" / "datasets"


def wait_for(predicate, timeout: float, what: str):
    """Poll until predicate() is truthy; fail naming what was awaited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@pytest.fixture(scope="module")
def celery_worker_process(django_db_setup, django_db_blocker, tmp_path_factory):
    """Start `celery worker -Q gpu,cpu` against the test database; stop it after the module."""
    import redis
    from django.db import connection

    redis.Redis.from_url(BROKER_URL).flushdb()
    log_path = tmp_path_factory.mktemp("worker") / "worker.log"
    settings = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "DATABASE_URL": (f"postgres://{settings['USER']}@{settings['HOST']}:{settings['PORT'] or 5432}"
                         f"/{settings['NAME']}"),
        "MIRRORLAB_DATA_DIR": str(tmp_path_factory.mktemp("worker-data")),
        "OMP_NUM_THREADS": "1",
    }
    if SHARED_DATASETS.is_dir():
        env["MIRRORLAB_DATASETS_DIR"] = str(SHARED_DATASETS)
    command = [sys.executable, "-m", "celery", "-A", "workers", "worker", "-Q", "gpu,cpu", "--pool=solo",
               "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", "test-gpu@%h",
               "--loglevel=INFO"]
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: "ready" in log_path.read_text() or process.poll() is not None, 60, "the worker to start")
        assert process.poll() is None, f"worker exited:\n{log_path.read_text()}"
        yield log_path
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
