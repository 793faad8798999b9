"""The verifier's worker processes die with the process that started them, even when it is SIGKILLed."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[2]
START_POOL = """
import json, os, sys, time
from grading.verifier.workers import WorkerPool
if __name__ == "__main__":
    pool = WorkerPool(2, "spawn")
    pool.submit("1/2", "0.5").result(timeout=120)
    print(json.dumps(sorted(child.pid for child in __import__("psutil").Process().children())), flush=True)
    time.sleep(600)
"""


def test_a_sigkilled_owner_leaves_no_verifier_worker_behind(tmp_path):
    script = tmp_path / "owner.py"
    script.write_text(START_POOL)
    owner = subprocess.Popen([sys.executable, str(script)], cwd=REPO, stdout=subprocess.PIPE, text=True,
                             env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"})
    try:
        children = [psutil.Process(pid) for pid in json.loads(owner.stdout.readline())]
        assert len(children) >= 2  # the pool's workers (and the spawn machinery's helper, if any)
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=10)
        _, survivors = psutil.wait_procs(children, timeout=15)
        assert survivors == []
    finally:
        if owner.poll() is None:
            owner.kill()


def test_a_worker_whose_pool_died_while_it_started_exits_at_once():
    """A spawned worker imports its parent's main module before its initializer runs (seconds, with torch): if
    the pool's process died meanwhile, the parent-death signal came too early to be armed, so the initializer
    exits when the pool's process is no longer its parent."""
    late = ("import multiprocessing\nfrom grading.verifier.workers import initialise_worker\n"
            "initialise_worker(multiprocessing.get_context('spawn').SimpleQueue(), pool_pid=1)\n"
            "print('went on as an orphan')\n")
    finished = subprocess.run([sys.executable, "-c", late], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 1 and "orphan" not in finished.stdout, finished
