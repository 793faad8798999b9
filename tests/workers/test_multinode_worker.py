"""A two-node run (nnodes=2, one process each, gloo) through two real gpu-queue workers: node 2 joins by itself."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys

import pytest

from common.knobs import config_to_dict, parse_config
from tests.workers.conftest import BROKER_URL, REPO, wait_for
from training.config import RLConfig
from webapp.jobs import JobStatus
from webapp.runs.models import IterationMetric, RLRun
from webapp.runs.services import launch_run

pytestmark = [pytest.mark.slow, pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_worker(node_name: str, env: dict, log_path) -> subprocess.Popen:
    """`celery worker -Q gpu --pool=solo`, as on one GPU node."""
    command = [sys.executable, "-m", "celery", "-A", "workers", "worker", "-Q", "gpu", "--pool=solo",
               "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", f"{node_name}@%h",
               "--loglevel=INFO"]
    with open(log_path, "w") as log:
        return subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)


@pytest.fixture(scope="module")
def two_gpu_nodes(django_db_setup, django_db_blocker, tmp_path_factory, tiny_model_dir):
    """Two gpu-queue workers (two 'nodes') sharing one data folder, as nodes share storage."""
    import redis
    from django.db import connection

    redis.Redis.from_url(BROKER_URL).flushdb()
    shared = tmp_path_factory.mktemp("shared-storage")
    shutil.copytree(tiny_model_dir, shared / "models" / "tiny")
    database = connection.settings_dict
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "webapp.settings", "MIRRORLAB_DATA_DIR": str(shared),
           "DATABASE_URL": f"postgres://{database['USER']}@{database['HOST']}:{database['PORT'] or 5432}/"
                           f"{database['NAME']}", "OMP_NUM_THREADS": "1"}
    logs = [tmp_path_factory.mktemp("node") / "worker.log" for _ in range(2)]
    workers = [start_worker(name, env, log) for name, log in zip(("node-a", "node-b"), logs)]
    try:
        for worker, log in zip(workers, logs):
            wait_for(lambda: "ready" in log.read_text() or worker.poll() is not None, 90, "a worker to start")
            assert worker.poll() is None, f"worker exited:\n{log.read_text()}"
        yield shared, logs
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                worker.kill()


def test_a_two_node_run_trains_on_both_workers_and_writes_its_rows(two_gpu_nodes, project, prompt_set, alice):
    shared, logs = two_gpu_nodes
    config = config_to_dict(parse_config(RLConfig, {
        "trainer_backend": "torch", "iterations": 2, "batch_size": 2, "samples_per_problem": 2,
        "max_response_tokens": 12, "micro_batch_size": 4, "learning_rate": 1e-3, "checkpoint_every_iterations": 2,
        "stored_samples_per_iteration": 2, "nnodes": 2, "nproc_per_node": 1,
        "rdzv_endpoint": f"127.0.0.1:{free_port()}"}))
    run = launch_run(project=project, name="two nodes", prompt_set=prompt_set, owner=alice, config=config)

    def has_finished(text: str):
        def check():
            run.refresh_from_db()
            return run.is_terminal and text in run.log
        return check

    wait_for(has_finished(""), 150, f"the run to finish (worker logs: {[str(log) for log in logs]})")
    assert run.status == JobStatus.SUCCEEDED, f"{run.error}\n{run.log}"
    wait_for(has_finished("torchrun finished on this node"), 40, f"the joined node to report; log:\n{run.log}")
    metrics = list(IterationMetric.objects.filter(run=run).order_by("iteration"))
    assert [m.iteration for m in metrics] == [1, 2]
    # batch_size 2 over a world of 2 ranks: one group per rank, both counted on rank 0
    assert all(m.tokens_generated > 0 and m.extra["groups_trained"] == 2 for m in metrics)
    assert (run.current_iteration, run.progress) == (2, 1.0)
    assert "torchrun: 2 node(s) x 1 process(es)" in run.log
    assert "asked the gpu queue for 1 more node(s) to join" in run.log
    (claimer,) = re.findall(r"started on (\S+)", run.log)
    (joiner,) = set(re.findall(r"\[node 1 on (\S+)\] joined with 1 process\(es\)", run.log))
    assert claimer != joiner  # two worker processes, one per "node"
    joined_lines = [line for line in run.log.splitlines() if "joined" in line or "finished on this node" in line]
    assert all(line.split("] ", 1)[0].endswith(f"[node 1 on {joiner}") for line in joined_lines)
    assert (shared / "checkpoints" / f"run-{run.pk}" / "torchrun" / "torchrun-node1.log").exists()


def test_a_join_for_a_run_that_no_longer_runs_does_nothing(two_gpu_nodes, project, prompt_set, alice):
    from webapp.celery import app

    config = config_to_dict(parse_config(RLConfig, {"trainer_backend": "noop-test", "iterations": 1}))
    run = RLRun.objects.create(project=project, name="done", prompt_set=prompt_set, owner=alice, config=config,
                               total_iterations=1, status=JobStatus.SUCCEEDED)
    assert app.send_task("mirrorlab.join_rl_run", args=[run.pk, 1], queue="gpu").get(timeout=60) == "not running"
    run.refresh_from_db()
    assert run.log == "" and run.status == JobStatus.SUCCEEDED
