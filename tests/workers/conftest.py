"""A real Celery worker subprocess on the gpu and cpu queues, with Redis as broker and the test Postgres database."""

from __future__ import annotations

import os
import shutil
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


def worker_environment(data_dir: Path, **overrides: str) -> dict[str, str]:
    """The environment of a worker subprocess on the test database; periodic recovery every second."""
    from django.db import connection

    settings = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "DATABASE_URL": (f"postgres://{settings['USER']}@{settings['HOST']}:{settings['PORT'] or 5432}"
                         f"/{settings['NAME']}"),
        "MIRRORLAB_DATA_DIR": str(data_dir),
        "OMP_NUM_THREADS": "1",
        "JOB_RECOVERY_INTERVAL_SECONDS": "1",
        **overrides,
    }
    if SHARED_DATASETS.is_dir():
        env["MIRRORLAB_DATASETS_DIR"] = str(SHARED_DATASETS)
    return env


def start_worker(log_path: Path, env: dict[str, str], name: str = "test-gpu") -> subprocess.Popen:
    """`celery worker -Q gpu,cpu --pool=solo`, returned once it is ready (its output in log_path)."""
    command = [sys.executable, "-m", "celery", "-A", "workers", "worker", "-Q", "gpu,cpu", "--pool=solo",
               "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", f"{name}@%h",
               "--loglevel=INFO"]
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    wait_for(lambda: "ready" in log_path.read_text() or process.poll() is not None, 60, "the worker to start")
    assert process.poll() is None, f"worker exited:\n{log_path.read_text()}"
    return process


def stop_worker(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()


@pytest.fixture(scope="module")
def celery_worker_process(django_db_setup, django_db_blocker, tmp_path_factory):
    """Start a worker on the gpu and cpu queues against the test database; stop it after the module."""
    import redis

    redis.Redis.from_url(BROKER_URL).flushdb()
    log_path = tmp_path_factory.mktemp("worker") / "worker.log"
    process = start_worker(log_path, worker_environment(tmp_path_factory.mktemp("worker-data")))
    try:
        yield log_path
    finally:
        stop_worker(process)


@pytest.fixture
def data_dirs(settings, tmp_path, tiny_model_dir):
    """Checkpoint and model folders of this test, the tiny preset already in place."""
    settings.CHECKPOINT_DIR = str(tmp_path / "checkpoints")
    settings.MODELS_DIR = str(tmp_path / "models")
    shutil.copytree(tiny_model_dir, tmp_path / "models" / "tiny")
    return tmp_path
