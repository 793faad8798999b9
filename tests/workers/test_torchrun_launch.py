"""A run row with nproc_per_node=2 trains under torchrun (gloo on CPU) through the worker's job function."""

from __future__ import annotations

import pytest

from common.knobs import config_to_dict, parse_config
from training.config import RLConfig
from webapp.jobs import JobStatus
from webapp.runs.models import Checkpoint, IterationMetric, RLRun, TrainingSample
from workers.jobs import JobCancelled, execute_job
from workers.rl_job import run_rl_job
from training.torchrun.launcher import torchrun_command

pytestmark = pytest.mark.django_db


def configure(run: RLRun, **knobs) -> RLRun:
    run.config = config_to_dict(parse_config(RLConfig, {**run.config, "nproc_per_node": 2, **knobs}))
    run.total_iterations = run.config["iterations"]
    run.save()
    return run


@pytest.mark.slow
def test_a_two_process_torch_run_writes_its_iteration_and_checkpoint_rows(run, data_dirs):
    configure(run, trainer_backend="torch", iterations=2, batch_size=2, samples_per_problem=2,
              max_response_tokens=12, micro_batch_size=4, learning_rate=1e-3, checkpoint_every_iterations=2,
              stored_samples_per_iteration=2)
    assert execute_job("rl_run", run.pk, run_rl_job) == JobStatus.SUCCEEDED
    run.refresh_from_db()
    assert (run.current_iteration, run.progress) == (2, 1.0)
    metrics = list(IterationMetric.objects.filter(run=run).order_by("iteration"))
    assert [m.iteration for m in metrics] == [1, 2]
    assert all(m.tokens_generated > 0 and m.extra["groups_trained"] == 2 for m in metrics)  # both ranks' groups
    assert [c.iteration for c in Checkpoint.objects.filter(run=run)] == [2]
    prompt_ids = {str(pk) for pk in run.prompt_set.prompts.values_list("pk", flat=True)}
    assert set(TrainingSample.objects.filter(run=run).values_list("prompt_id", flat=True)) <= prompt_ids
    assert "torchrun: 1 node(s) x 2 process(es)" in run.log


def test_a_cancelled_run_stops_its_ranks_before_the_next_iteration(run, data_dirs):
    configure(run, iterations=3)  # the noop-test backend: the plumbing only
    assert RLRun.claim(run.pk, "worker-a")  # the job function runs under its worker's claim
    run.refresh_from_db()
    RLRun.objects.filter(pk=run.pk).update(cancel_requested=True)
    with pytest.raises(JobCancelled):
        run_rl_job(run)
    assert not IterationMetric.objects.filter(run=run).exists()
    assert "stop requested" in RLRun.objects.get(pk=run.pk).log


def test_a_failing_rank_fails_the_job_with_the_ranks_error(run, data_dirs):
    configure(run, iterations=2)
    run.prompt_set.prompts.all().delete()
    assert execute_job("rl_run", run.pk, run_rl_job) == JobStatus.FAILED
    run.refresh_from_db()
    assert "torchrun exited with code 1" in run.error and "the prompt set is empty" in run.error


def test_the_command_joins_a_shared_rendezvous_on_several_nodes():
    config = parse_config(RLConfig, {"nnodes": 2, "nproc_per_node": 8, "rdzv_endpoint": "head:29400"})
    command = torchrun_command(config, "spec.json", "mirrorlab-run-7")
    assert command[command.index("--nnodes=2"):] == [
        "--nnodes=2", "--nproc_per_node=8", "--rdzv_backend=c10d", "--rdzv_endpoint=head:29400",
        "--rdzv_id=mirrorlab-run-7", "-m", "training.torchrun.entry", "spec.json"]
    single = torchrun_command(parse_config(RLConfig, {"nproc_per_node": 2}), "spec.json", "run")
    assert "--standalone" in single and not any(part.startswith("--rdzv") for part in single)


def test_several_nodes_need_a_rendezvous_endpoint():
    from common.knobs import ConfigError

    with pytest.raises(ConfigError) as refused:
        parse_config(RLConfig, {"nnodes": 2, "node_rank": 2})
    assert refused.value.errors == {"node_rank": "must be below nnodes (2)",
                                    "rdzv_endpoint": "needed when nnodes > 1: host:port of the rendezvous every "
                                                     "node joins"}
