"""The pieces of a multi-node launch that need no second worker: join ranks, failures on the row, engine settings."""

from __future__ import annotations

import json

import pytest

from common.knobs import config_to_dict, parse_config
from training.config import RLConfig
from webapp.jobs import JobStatus
from webapp.runs.models import RLRun
from workers.rl_job import run_config
from workers.rl_node_job import join_rl_run
from training.torchrun.launcher import JoinWatch, join_under_torchrun, other_node_ranks, spec_paths, torchrun_command

TWO_NODES = {"nnodes": 2, "rdzv_endpoint": "head:29400"}


def test_each_other_node_gets_a_static_rank_only_when_the_run_sets_one():
    assert other_node_ranks(parse_config(RLConfig, {**TWO_NODES, "nnodes": 3})) == [None, None]
    assert other_node_ranks(parse_config(RLConfig, {**TWO_NODES, "nnodes": 3, "node_rank": 1})) == [0, 2]
    command = torchrun_command(parse_config(RLConfig, {**TWO_NODES, "node_rank": 0}), "spec.json", "run-3",
                               node_rank=1)
    assert "--node_rank=1" in command and "--node_rank=0" not in command and "--rdzv_id=run-3" in command


def test_a_failing_joined_node_reports_its_exit_code_and_log_tail(tmp_path):
    spec, _events, _stop = spec_paths(tmp_path)
    spec.parent.mkdir(parents=True)
    spec.write_text(json.dumps({"config": {"no_such_knob": 1}}))  # the rank refuses the spec at once
    lines = []
    watch = JoinWatch(log=lines.append, cancel_requested=lambda: False, still_running=lambda: True)
    code = join_under_torchrun(parse_config(RLConfig, {}), tmp_path, "run-1", watch, node_label="node1")
    assert code == 1
    assert lines[0].startswith("joined with 1 process(es)")
    assert lines[-1].startswith("torchrun failed with exit code 1") and "no_such_knob: unknown setting" in lines[-1]
    assert (spec.parent / "torchrun-node1.log").exists()


@pytest.mark.django_db
def test_a_join_without_the_shared_spec_logs_why_on_the_row(run, settings, tmp_path):
    settings.CHECKPOINT_DIR = str(tmp_path / "checkpoints")
    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.RUNNING,
                                           config={**run.config, **TWO_NODES, "nproc_per_node": 1})
    assert join_rl_run(run.pk, 1) == JobStatus.FAILED
    run.refresh_from_db()
    assert run.status == JobStatus.RUNNING  # the join never claims nor finishes the row
    (line,) = run.log.splitlines()
    assert "[node 1 on " in line and "failed: FileNotFoundError" in line and "storage every node shares" in line


@pytest.mark.django_db
def test_the_worker_s_sidecar_socket_reaches_the_engine_config_unless_the_run_sets_one(run, settings):
    settings.VLLM_SIDECAR_SOCKET = "/run/mirrorlab/vllm-sidecar.sock"
    assert run_config(run).vllm_sidecar_socket == "/run/mirrorlab/vllm-sidecar.sock"
    run.config = config_to_dict(parse_config(RLConfig, {**run.config, "vllm_sidecar_socket": "/tmp/own.sock"}))
    assert run_config(run).vllm_sidecar_socket == "/tmp/own.sock"
    settings.VLLM_SIDECAR_SOCKET = ""
    run.config = config_to_dict(parse_config(RLConfig, {}))
    assert run_config(run).vllm_sidecar_socket is None


@pytest.mark.django_db
def test_a_join_asked_by_a_claim_the_run_no_longer_holds_does_not_join(run):
    from workers.rl_node_job import node_watch

    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.RUNNING, worker="second:2",
                                           config={**run.config, **TWO_NODES, "nproc_per_node": 1})
    assert join_rl_run(run.pk, 1, claimer="first:1") == "taken over"
    assert node_watch(run.pk, "node 1", claimer="first:1").still_running() is False
    assert node_watch(run.pk, "node 1", claimer="second:2").still_running() is True
