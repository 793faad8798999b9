"""A solo-pool worker (the GPU worker) outlives the shell that started it: only prefork pool processes die with
their parent. Before, Celery's solo pool sent worker_process_init in the worker's main process, which then armed
a parent-death SIGKILL on itself and vanished without a log line once a `nohup ... &` shell exited."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time

import pytest

from tests.workers.conftest import REPO, wait_for, worker_environment

pytestmark = pytest.mark.slow


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_solo_worker_started_from_a_shell_that_exits_keeps_running(django_db_setup, tmp_path):
    log = tmp_path / "worker.log"
    worker = shlex.join([sys.executable, "-m", "celery", "-A", "workers", "worker", "-Q", "solo-test",
                         "--pool=solo", "--without-gossip", "--without-mingle", "--without-heartbeat",
                         "-n", "solo-test@%h", "--loglevel=INFO"])
    # the launcher starts the worker in the background and exits once the worker is ready, as `nohup ... &` does
    launcher = (f"{worker} > {shlex.quote(str(log))} 2>&1 & echo $!; "
                f"until grep -q ready {shlex.quote(str(log))}; do sleep 0.2; done")
    started = subprocess.run(["bash", "-c", launcher], cwd=REPO, env=worker_environment(tmp_path / "data"),
                             capture_output=True, text=True, timeout=90)
    pid = int(started.stdout.split()[0])
    try:
        time.sleep(3)  # the launcher is gone: a parent-death signal would have killed the worker by now
        assert alive(pid), f"the worker died with its launcher:\n{log.read_text()}"
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGTERM)
            wait_for(lambda: not alive(pid), 30, "the worker to stop")
