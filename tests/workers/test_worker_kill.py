"""A worker killed with SIGKILL mid-run: its processes die with it, and a second worker's periodic recovery
picks the run up and finishes it from the last checkpoint, no iteration lost or repeated (real workers,
Redis, Postgres, a two-rank torchrun of the tiny model)."""

from __future__ import annotations

import re
import signal
import time

import psutil
import pytest

from common.knobs import config_to_dict, parse_config
from training.config import RLConfig
from webapp.jobs import JobStatus
from webapp.runs.models import Checkpoint, IterationMetric, RLRun
from webapp.runs.services import launch_run
from tests.workers.conftest import BROKER_URL, start_worker, stop_worker, wait_for, worker_environment

pytestmark = [pytest.mark.worker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ITERATIONS = 5
# Short thresholds keep the test quick; the defaults (heartbeat 10 s, stale after 90 s, a pass every 30 s)
# bound the pickup the same way: at most stale + interval after the last heartbeat.
RECOVERY = {"JOB_HEARTBEAT_SECONDS": "1", "JOB_STALE_AFTER_SECONDS": "5", "JOB_RECOVERY_INTERVAL_SECONDS": "1"}


def test_a_killed_workers_run_is_finished_by_another_worker_and_nothing_of_it_survives(
        tmp_path, project, prompt_set, alice):
    import redis

    redis.Redis.from_url(BROKER_URL).flushdb()
    data_dir = tmp_path / "data"  # shared by both workers, as a deployment's data folder is
    first = start_worker(tmp_path / "first.log", worker_environment(data_dir, **RECOVERY), name="first")
    second = None
    try:
        run = launch_run(project=project, name="killed", prompt_set=prompt_set, owner=alice, config=config_to_dict(
            parse_config(RLConfig, {"iterations": ITERATIONS, "batch_size": 2, "samples_per_problem": 2,
                                    "max_response_tokens": 8, "micro_batch_size": 4, "checkpoint_every_iterations": 1,
                                    "nproc_per_node": 2})))
        wait_for(lambda: Checkpoint.objects.filter(run=run, iteration=2).exists(), 240,
                 f"checkpoint 2 on the first worker (log {tmp_path / 'first.log'})")
        descendants = psutil.Process(first.pid).children(recursive=True)
        assert len(descendants) >= 3, descendants  # the torchrun agent and its two ranks at least
        first.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        first.wait(timeout=10)
        _, survivors = psutil.wait_procs(descendants, timeout=15)
        assert survivors == [], f"processes of the killed worker still run: {survivors}"

        second = start_worker(tmp_path / "second.log", worker_environment(data_dir, **RECOVERY), name="second")
        wait_for(lambda: RLRun.objects.filter(pk=run.pk, status=JobStatus.RUNNING).exclude(
            worker=run.worker if run.worker else "").exists() and "re-queued" in RLRun.objects.get(pk=run.pk).log,
            120, "the second worker to pick the run up")
        assert time.monotonic() - killed_at < 120
        run.refresh_from_db()
        wait_for(lambda: RLRun.objects.get(pk=run.pk).is_terminal, 300, f"the run to finish on the second worker "
                 f"(log {tmp_path / 'second.log'})")
        run.refresh_from_db()
        assert run.status == JobStatus.SUCCEEDED, f"{run.error}\n{run.log}"
        iterations = list(IterationMetric.objects.filter(run=run).order_by("iteration")
                          .values_list("iteration", flat=True))
        assert iterations == list(range(1, ITERATIONS + 1))
        assert sorted(Checkpoint.objects.filter(run=run).values_list("iteration", flat=True)) == \
            list(range(1, ITERATIONS + 1))
        claims = re.findall(r"started on (\S+)", run.log)
        assert len(claims) == 2 and claims[0] != claims[1] and run.worker == claims[1]
        assert f"worker {claims[0]} lost" in run.log
        resumed = re.search(r"resuming from iteration-\d+ \(iteration (\d+)\)", run.log)
        assert resumed and int(resumed.group(1)) >= 2, run.log
    finally:
        if first.poll() is None:
            first.kill()
        if second is not None:
            stop_worker(second)
