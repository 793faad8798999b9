"""keep_last_checkpoints on the worker: which checkpoints jobs pin, and the rows of removed checkpoints."""

from __future__ import annotations

import shutil

import pytest

from common.knobs import config_to_dict, parse_config
from common.path_rules import PathRefused
from training.checkpoint import STATE_FILE, checkpoint_dir, complete_checkpoint_dirs
from training.config import RLConfig
from webapp.evals.models import EvalRun
from webapp.jobs import JobStatus
from webapp.long2short.models import Long2ShortVariant
from webapp.runs.models import Checkpoint, RLRun
from webapp.runs.retention import pinned_iterations
from workers.jobs import execute_job
from workers.path_checks import check_evaluation_paths, check_variant_paths
from workers.rl_job import reconcile_checkpoints, record_checkpoints_removed, run_rl_job

pytestmark = pytest.mark.django_db

KEEP_2 = parse_config(RLConfig, {"iterations": 6, "checkpoint_every_iterations": 1, "keep_last_checkpoints": 2})


@pytest.fixture
def checkpoints(run, project):
    """The run's checkpoints of iterations 0 to 4, by iteration."""
    return {iteration: Checkpoint.objects.create(project=project, run=run, iteration=iteration,
                                                 path=f"/checkpoints/run-1/{iteration}")
            for iteration in range(5)}


@pytest.fixture
def held(run):
    """The run as its worker holds it: a worker records only while it holds the run's claim."""
    RLRun.claim(run.pk, "worker-a")
    run.refresh_from_db()
    return run


def evaluation(checkpoint, suite, status):
    return EvalRun.objects.create(project=checkpoint.project, suite=suite, checkpoint=checkpoint, status=status)


def variant(project, status=JobStatus.QUEUED, **fields):
    fields.setdefault("method", "merge")
    return Long2ShortVariant.objects.create(project=project, name="v", status=status, **fields)


def test_a_checkpoint_with_a_queued_or_running_evaluation_is_pinned(run, suite, checkpoints):
    evaluation(checkpoints[1], suite, JobStatus.QUEUED)
    evaluation(checkpoints[2], suite, JobStatus.RUNNING)
    for status in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED):
        evaluation(checkpoints[3], suite, status)  # finished: needs the files no more
    assert pinned_iterations(run) == {1, 2}


def test_the_checkpoints_a_variant_not_yet_finished_uses_are_pinned(run, project, checkpoints):
    variant(project, parent_checkpoint=checkpoints[1], method="dpo")
    variant(project, JobStatus.RUNNING, parent_run=run, started_from=checkpoints[2], method="dpo")
    variant(project, parent_run=run, parameters={"other_checkpoint_ids": str(checkpoints[3].pk)})
    variant(project, parent_checkpoint=checkpoints[0], parameters={"other_run_iterations": "4"})
    assert pinned_iterations(run) == {0, 1, 2, 3, 4}


def test_finished_variants_and_other_runs_pin_nothing(run, project, prompt_set, checkpoints):
    variant(project, JobStatus.SUCCEEDED, parent_checkpoint=checkpoints[1],
            parameters={"other_run_iterations": "2", "other_checkpoint_ids": str(checkpoints[3].pk)})
    other = RLRun.objects.create(project=project, name="other", prompt_set=prompt_set, config=run.config)
    variant(project, parent_run=other, parameters={"other_run_iterations": "2"})  # iteration 2 of the other run
    assert pinned_iterations(run) == set()


def test_removed_checkpoints_keep_their_rows_and_evaluations(held, suite, checkpoints):
    measured = evaluation(checkpoints[1], suite, JobStatus.SUCCEEDED)
    record_checkpoints_removed(held, KEEP_2, [1, 2])
    removed = Checkpoint.objects.filter(run=held, files_removed_at__isnull=False)
    assert sorted(removed.values_list("iteration", flat=True)) == [1, 2]
    assert Checkpoint.objects.filter(run=held).count() == 5
    measured.refresh_from_db()
    assert measured.checkpoint == checkpoints[1]  # which checkpoint the evaluation measured stays known
    log = RLRun.objects.get(pk=held.pk).log
    assert "checkpoint of iteration 1 removed: keep_last_checkpoints=2" in log
    assert "checkpoint of iteration 2 removed: keep_last_checkpoints=2" in log


def test_a_queued_job_whose_checkpoint_was_removed_fails_naming_it(project, suite, checkpoints):
    Checkpoint.objects.filter(pk=checkpoints[1].pk).update(files_removed_at="2026-01-02T03:04:05Z")
    queued = evaluation(Checkpoint.objects.get(pk=checkpoints[1].pk), suite, JobStatus.QUEUED)
    with pytest.raises(PathRefused) as refused:
        check_evaluation_paths(queued)
    assert refused.value.field == "checkpoint"
    assert f"checkpoint #{checkpoints[1].pk} (run-1 @ 1): its files were removed by keep_last_checkpoints" in \
        refused.value.reason
    merge = variant(project, parent_checkpoint=checkpoints[2], parameters={
        "other_checkpoint_ids": str(checkpoints[1].pk)})
    with pytest.raises(PathRefused) as refused:
        check_variant_paths(merge)
    assert refused.value.field == "other_checkpoint_ids"


def saved(output_dir, iteration: int) -> None:
    folder = checkpoint_dir(output_dir, iteration)
    folder.mkdir(parents=True)
    (folder / STATE_FILE).write_bytes(b"x")


def test_reconciling_leaves_removed_checkpoints_alone_and_records_an_interrupted_removal(held, tmp_path,
                                                                                          checkpoints):
    for iteration in (0, 3, 4):
        saved(tmp_path, iteration)
    RLRun.objects.filter(pk=held.pk).update(current_iteration=4)
    Checkpoint.objects.filter(pk=checkpoints[1].pk).update(files_removed_at="2026-01-02T03:04:05Z")
    # the worker died between renaming checkpoint 2 aside and recording its removal
    checkpoint_dir(tmp_path, 2).with_name("iteration-000002.removing").mkdir(parents=True)
    reconcile_checkpoints(held, KEEP_2, tmp_path)
    assert [folder.name for folder in complete_checkpoint_dirs(tmp_path)] == \
        ["iteration-000000", "iteration-000003", "iteration-000004"]
    removed = Checkpoint.objects.filter(run=held, files_removed_at__isnull=False)
    assert sorted(removed.values_list("iteration", flat=True)) == [1, 2]
    assert Checkpoint.objects.filter(run=held).count() == 5
    log = RLRun.objects.get(pk=held.pk).log
    assert "checkpoint of iteration 2 removed" in log and "iteration 1 removed" not in log


@pytest.fixture
def data_dirs(settings, tmp_path, tiny_model_dir):
    """Checkpoint and model folders of this test, the tiny preset already in place."""
    settings.CHECKPOINT_DIR = str(tmp_path / "checkpoints")
    settings.MODELS_DIR = str(tmp_path / "models")
    shutil.copytree(tiny_model_dir, tmp_path / "models" / "tiny")
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize("processes", [1, 2])
def test_a_run_keeps_the_checkpoint_its_evaluation_waits_for_and_marks_the_removed_ones(run, suite, data_dirs,
                                                                                          processes):
    run.config = config_to_dict(parse_config(RLConfig, {
        **run.config, "trainer_backend": "torch", "iterations": 4, "batch_size": 2, "samples_per_problem": 2,
        "max_response_tokens": 8, "micro_batch_size": 4, "checkpoint_every_iterations": 1,
        "keep_last_checkpoints": 1, "evaluate_every_iterations": 2, "stored_samples_per_iteration": 0,
        "nproc_per_node": processes}))
    run.evaluation_suite = suite  # a queued evaluation of iterations 2 and 4 (no worker runs it here)
    run.total_iterations = 4
    run.save()
    assert execute_job("rl_run", run.pk, run_rl_job) == JobStatus.SUCCEEDED
    rows = {checkpoint.iteration: checkpoint for checkpoint in Checkpoint.objects.filter(run=run)}
    assert sorted(rows) == [1, 2, 3, 4]
    assert [iteration for iteration, row in sorted(rows.items()) if row.files_removed_at] == [1, 3]
    folders = sorted(folder.name for folder in (data_dirs / "checkpoints" / f"run-{run.pk}" / "checkpoints")
                     .iterdir())
    assert folders == ["iteration-000002", "iteration-000004"]  # 2: its evaluation is queued; 4: the newest
    assert EvalRun.objects.filter(checkpoint=rows[2], status=JobStatus.QUEUED).exists()
    log = RLRun.objects.get(pk=run.pk).log
    assert "checkpoint of iteration 1 removed: keep_last_checkpoints=1" in log
    assert "checkpoint of iteration 3 removed: keep_last_checkpoints=1" in log
