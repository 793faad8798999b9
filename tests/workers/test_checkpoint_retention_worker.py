"""keep_last_checkpoints on the worker: which checkpoints jobs pin, and the rows of removed checkpoints."""

from __future__ import annotations

import pytest
from django.db import OperationalError

from common.knobs import config_to_dict, parse_config
from common.path_rules import PathRefused
from training.checkpoint import STATE_FILE, checkpoint_dir, complete_checkpoint_dirs, remove_unfinished_saves
from training.config import RLConfig
from training.loop import remove_old_checkpoints
from training.types import CheckpointReport, PinnedCheckpointsUnknown, TrainingHooks
from webapp.evals.models import EvalRun
from webapp.jobs import JobStatus
from webapp.long2short.models import Long2ShortVariant
from webapp.runs.models import Checkpoint, RLRun
from webapp.runs.retention import pinned_iterations
from workers.jobs import execute_job
from workers.path_checks import check_evaluation_paths, check_variant_paths
from workers.rl_job import approve_checkpoint_removals, reconcile_checkpoints, record_checkpoint, run_rl_job

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


def removed_iterations(run) -> list[int]:
    return sorted(Checkpoint.objects.filter(run=run, files_removed_at__isnull=False)
                  .values_list("iteration", flat=True))


def on_disk(run, output_dir, iterations) -> dict[int, Checkpoint]:
    """The run's checkpoints of these iterations, saved in output_dir and recorded with their paths."""
    rows = {}
    for iteration in iterations:
        saved(output_dir, iteration)
        rows[iteration] = Checkpoint.objects.create(project=run.project, run=run, iteration=iteration,
                                                    path=str(checkpoint_dir(output_dir, iteration)))
    return rows


def test_approved_removals_are_marked_and_keep_their_rows_and_evaluations(held, suite, checkpoints):
    measured = evaluation(checkpoints[1], suite, JobStatus.SUCCEEDED)
    assert approve_checkpoint_removals(held, KEEP_2, [1, 2]) == [1, 2]
    assert removed_iterations(held) == [1, 2]
    assert Checkpoint.objects.filter(run=held).count() == 5
    measured.refresh_from_db()
    assert measured.checkpoint == checkpoints[1]  # which checkpoint the evaluation measured stays known
    log = RLRun.objects.get(pk=held.pk).log
    assert "checkpoint of iteration 1 removed: keep_last_checkpoints=2" in log
    assert "checkpoint of iteration 2 removed: keep_last_checkpoints=2" in log


def test_a_pinned_candidate_is_neither_approved_nor_marked(held, suite, checkpoints):
    evaluation(checkpoints[1], suite, JobStatus.QUEUED)
    assert approve_checkpoint_removals(held, KEEP_2, [1, 2, 7]) == [2]  # 7: no row, so not approved
    assert removed_iterations(held) == [2]
    assert "iteration 1 removed" not in RLRun.objects.get(pk=held.pk).log


def test_a_worker_that_lost_the_run_approves_nothing(held, checkpoints):
    from webapp.jobs import JobTakenOver

    RLRun.objects.filter(pk=held.pk).update(worker="worker-b")
    with pytest.raises(JobTakenOver):
        approve_checkpoint_removals(held, KEEP_2, [1])
    assert removed_iterations(held) == []


def test_a_database_error_keeps_every_checkpoint_and_the_run_goes_on(held, tmp_path, checkpoints, monkeypatch):
    import webapp.runs.retention

    for iteration in (0, 1, 2, 3):
        saved(tmp_path, iteration)

    def database_down(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(webapp.runs.retention, "pinned_iterations", database_down)  # after the rows are locked
    lines = []
    hooks = TrainingHooks(approve_checkpoint_removals=lambda its: approve_checkpoint_removals(held, KEEP_2, its),
                          log=lines.append)
    remove_old_checkpoints(tmp_path, 1, hooks)  # no exception: the loop goes on
    assert len(complete_checkpoint_dirs(tmp_path)) == 4 and removed_iterations(held) == []
    assert lines == ["keep_last_checkpoints: old checkpoints kept this time (the database could not tell which "
                     "checkpoints jobs need: server closed the connection unexpectedly)"]
    with pytest.raises(PinnedCheckpointsUnknown):
        approve_checkpoint_removals(held, KEEP_2, [1])


def test_an_evaluation_naming_the_checkpoint_folder_by_path_pins_it(held, suite, tmp_path, project):
    rows = on_disk(held, tmp_path, (1, 2, 3))
    link = tmp_path / "link-to-2"
    link.symlink_to(rows[2].path)  # compared as resolved paths
    EvalRun.objects.create(project=project, suite=suite, model=str(link), status=JobStatus.QUEUED)
    EvalRun.objects.create(project=project, suite=suite, model=rows[1].path, status=JobStatus.SUCCEEDED)
    assert approve_checkpoint_removals(held, KEEP_2, [1, 2]) == [1]
    assert removed_iterations(held) == [1]


def test_runs_and_suites_naming_the_folders_by_path_pin_them(held, suite, tmp_path, project, prompt_set):
    rows = on_disk(held, tmp_path, (1, 2, 3, 4))
    RLRun.objects.create(project=project, name="from-1", prompt_set=prompt_set,
                         config={**held.config, "model": rows[1].path})
    RLRun.objects.create(project=project, name="judged-by-2", prompt_set=prompt_set,
                         config={**held.config, "judge_model": rows[2].path})
    suite.benchmarks = [{**suite.benchmarks[0], "judge_model": rows[3].path}]
    suite.save()
    EvalRun.objects.create(project=project, suite=suite, model="tiny", status=JobStatus.RUNNING)
    assert approve_checkpoint_removals(held, KEEP_2, [1, 2, 3, 4]) == [4]


def test_a_checkpoint_registered_by_path_pins_its_folder_while_a_job_uses_it_and_is_marked_with_it(
        held, suite, tmp_path, project):
    rows = on_disk(held, tmp_path, (1, 2, 3))
    copy_of_1 = Checkpoint.objects.create(project=project, path=rows[1].path)
    copy_of_2 = Checkpoint.objects.create(project=project, path=rows[2].path)
    evaluation(copy_of_2, suite, JobStatus.QUEUED)
    assert approve_checkpoint_removals(held, KEEP_2, [1, 2]) == [1]
    assert removed_iterations(held) == [1]
    copy_of_1.refresh_from_db()
    copy_of_2.refresh_from_db()
    assert copy_of_1.files_removed_at is not None and copy_of_2.files_removed_at is None


def test_a_new_checkpoint_resets_the_lost_workers(held, tmp_path):
    RLRun.objects.filter(pk=held.pk).update(lost_workers=2)
    record_checkpoint(held, KEEP_2, CheckpointReport(iteration=1, path=tmp_path, size_bytes=1))
    assert RLRun.objects.get(pk=held.pk).lost_workers == 0


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


def test_reconciling_marks_a_row_whose_folder_a_crash_removed_before_it_was_recorded(held, tmp_path,
                                                                                      checkpoints):
    for iteration in (0, 3, 4):
        saved(tmp_path, iteration)
    RLRun.objects.filter(pk=held.pk).update(current_iteration=4)
    Checkpoint.objects.filter(pk=checkpoints[1].pk).update(files_removed_at="2026-01-02T03:04:05Z")
    # before removals were recorded first: a worker died between renaming checkpoint 2 aside and recording it
    checkpoint_dir(tmp_path, 2).with_name("iteration-000002.removing").mkdir(parents=True)
    reconcile_checkpoints(held, KEEP_2, tmp_path)
    assert [folder.name for folder in complete_checkpoint_dirs(tmp_path)] == \
        ["iteration-000000", "iteration-000003", "iteration-000004"]
    assert removed_iterations(held) == [1, 2]
    assert Checkpoint.objects.filter(run=held).count() == 5
    log = RLRun.objects.get(pk=held.pk).log
    assert "checkpoint of iteration 2 removed" in log and "iteration 1 removed" not in log


def test_a_crash_after_the_approval_leaves_the_rows_marked_and_the_folders_gone_at_the_next_start(
        held, tmp_path, checkpoints):
    for iteration in range(5):
        saved(tmp_path, iteration)
    RLRun.objects.filter(pk=held.pk).update(current_iteration=4)
    assert approve_checkpoint_removals(held, KEEP_2, [1, 2]) == [1, 2]
    # the worker dies: folder 1 was renamed aside, folder 2 not touched yet
    checkpoint_dir(tmp_path, 1).rename(checkpoint_dir(tmp_path, 1).with_name("iteration-000001.removing"))
    reconcile_checkpoints(held, KEEP_2, tmp_path)  # the next start: reconcile, then the session's clean-up
    remove_unfinished_saves(tmp_path)
    assert sorted(path.name for path in (tmp_path / "checkpoints").iterdir()) == \
        ["iteration-000000", "iteration-000003", "iteration-000004"]
    assert removed_iterations(held) == [1, 2]
    assert "checkpoints of iterations 2 were recorded as removed before their files went" in \
        RLRun.objects.get(pk=held.pk).log


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


@pytest.mark.django_db(transaction=True)
def test_a_removal_waits_for_an_evaluation_being_created_with_the_checkpoint_and_then_keeps_it(held, suite,
                                                                                               checkpoints):
    import threading

    from django.db import connection, transaction

    from webapp.evals.services import launch_evaluation

    approved = []

    def worker() -> None:
        try:
            approved.append(approve_checkpoint_removals(held, KEEP_2, [1, 2]))
        finally:
            connection.close()

    with transaction.atomic():  # the web request: its evaluation of checkpoint 1 is not committed yet
        launch_evaluation(project=held.project, suite=suite, checkpoint=checkpoints[1])
        removal = threading.Thread(target=worker)
        removal.start()
        removal.join(timeout=1.0)
        assert removal.is_alive()  # the worker waits for the checkpoint's row lock
    removal.join(timeout=10)
    assert approved == [[2]] and removed_iterations(held) == [2]
