"""Run one RL run row through the configured trainer backend."""

from __future__ import annotations

import dataclasses
import logging
import shutil
import time
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from training.config import RLConfig
from training.backends import trainer_backends
from common.knobs import parse_config
from common.sizes import decimal_size
from training.types import (
    CheckpointReport, IterationReport, PinnedCheckpointsUnknown, PromptRecord, SampleReport, TrainingHooks,
)
from webapp.evals.services import launch_evaluation
from webapp.runs.models import Checkpoint, IterationMetric, RLRun, TrainingSample
from webapp.runs.retention import approve_removals
from workers.eval_job import storable_text
from workers.jobs import JobCancelled
from workers.path_checks import check_run_paths
from workers.rl_node_job import request_node_joins
from workers.rl_run_paths import run_paths, torchrun_run_key
from training.checkpoint import (
    PREFIX, checkpoint_dir, checkpoint_iteration, checkpoint_report, complete_checkpoint_dirs, remove_checkpoints,
)
from training.torchrun.launcher import needs_torchrun, run_under_torchrun

logger = logging.getLogger(__name__)


def prompt_records(run: RLRun) -> list[PromptRecord]:
    """The run's prompts as plain records for the engine."""
    return [
        PromptRecord(prompt_id=str(prompt.pk), problem=prompt.problem, answer=prompt.answer,
                     test_cases=prompt.test_cases, domain=prompt.domain, difficulty=prompt.difficulty,
                     pass_rate=prompt.pass_rate, image=prompt.image)
        for prompt in run.prompt_set.prompts.order_by("position")
    ]


def training_sample_rows(run: RLRun, iteration: int, samples: tuple[SampleReport, ...]) -> list[TrainingSample]:
    """Unsaved rows of an iteration's sample reports, with text made storable."""
    return [
        TrainingSample(run=run, iteration=iteration, prompt_id=sample.prompt_id, problem=storable_text(sample.problem),
                       sample_index=sample.sample_index, response=storable_text(sample.response),
                       reward=sample.reward, correct=sample.correct, response_tokens=sample.response_tokens,
                       truncated=sample.truncated, repeated=sample.repeated)
        for sample in samples
    ]


def record_iteration(run: RLRun, report: IterationReport) -> None:
    """Store one iteration's metrics and samples and move the run's progress, atomically, while this worker holds
    the run (JobTakenOver otherwise: the training loop stops before it saves a checkpoint).

    A resumed run that repeats an iteration replaces that iteration's rows.
    """
    with run.holding_claim():
        IterationMetric.objects.update_or_create(
            run=run, iteration=report.iteration,
            defaults={
                "train_accuracy": report.train_accuracy, "mean_response_length": report.mean_response_length,
                "p95_response_length": report.p95_response_length, "loss": report.loss, "kl": report.kl,
                "tokens_generated": report.tokens_generated, "tokens_reused": report.tokens_reused,
                "seconds": report.seconds, "extra": report.extra,
            },
        )
        TrainingSample.objects.filter(run=run, iteration=report.iteration).delete()
        TrainingSample.objects.bulk_create(training_sample_rows(run, report.iteration, report.samples))
        RLRun.objects.filter(pk=run.pk).update(
            current_iteration=report.iteration, progress=report.iteration / max(run.total_iterations, 1),
            heartbeat_at=timezone.now(),
        )


WARMUP_WRITE_SECONDS = 2.0  # the warm-up's progress is written at most this often (and at its last step)


def warmup_recorder(run: RLRun, clock=time.time):
    """A TrainingHooks.on_warmup_step that keeps the run row's warmup_progress (step, steps, loss, started,
    updated) for the run page's step, loss and ETA; JobTakenOver once this worker lost the run."""
    started = clock()
    last_write = [float("-inf")]

    def record(step: int, steps: int, loss: float) -> None:
        now = clock()
        if now - last_write[0] < WARMUP_WRITE_SECONDS and step < steps:
            return
        last_write[0] = now
        RLRun.update_held(run.pk, run.worker, warmup_progress={
            "step": step, "steps": steps, "loss": loss, "started": started, "updated": now})

    return record


def record_checkpoint(run: RLRun, config: RLConfig, report: CheckpointReport) -> None:
    """One row per saved iteration (a resumed run that saves the same iteration again updates it),
    and an evaluation of it on the run's suite when the cadence says so; all or nothing, while this worker holds
    the run (JobTakenOver otherwise). A new checkpoint is durable progress: the deaths of earlier workers no longer
    count towards JOB_MAX_LOST_WORKERS."""
    with run.holding_claim():
        RLRun.objects.filter(pk=run.pk).update(lost_workers=0)
        checkpoint, _ = Checkpoint.objects.update_or_create(
            project_id=run.project_id, run=run, iteration=report.iteration,
            defaults={"path": str(report.path), "size_bytes": report.size_bytes, "files_removed_at": None})
        RLRun.append_log(run.pk, f"checkpoint saved: iteration {report.iteration} "
                                 f"({decimal_size(report.size_bytes)})")
        if run.evaluation_suite_id and evaluation_due(config, report.iteration):
            evaluation = launch_evaluation(project_id=run.project_id, suite_id=run.evaluation_suite_id,
                                           checkpoint=checkpoint, rollout_engine=config.rollout_engine,
                                           seed=config.seed, owner_id=run.owner_id)
            RLRun.append_log(run.pk, f"queued evaluation #{evaluation.pk} of iteration {report.iteration}")


def approve_checkpoint_removals(run: RLRun, config: RLConfig, iterations: list[int]) -> list[int]:
    """The hook of keep_last_checkpoints: of these iterations, those no queued or running job needs, recorded as
    removed with a log line each before the loop deletes their files (webapp.runs.retention.approve_removals); the
    rows stay (the evaluations that measured them keep pointing to them). While this worker holds the run
    (JobTakenOver otherwise); a database error keeps every checkpoint this time (PinnedCheckpointsUnknown)."""
    try:
        with run.holding_claim():
            approved = approve_removals(run, iterations)
            log_removed(run, config, approved)
    except DatabaseError as error:
        logger.warning("run %s: keep_last_checkpoints could not ask the database which checkpoints may go: %s",
                       run.pk, error)
        raise PinnedCheckpointsUnknown(f"the database could not tell which checkpoints jobs need: {error}") from error
    return approved


def log_removed(run: RLRun, config: RLConfig, iterations: list[int]) -> None:
    for iteration in iterations:
        RLRun.append_log(run.pk, f"checkpoint of iteration {iteration} removed: "
                                 f"keep_last_checkpoints={config.keep_last_checkpoints}")


def evaluation_due(config: RLConfig, iteration: int) -> bool:
    """Every `evaluate_every_iterations` (the warm-up checkpoint 0 included), and always at the end."""
    every = config.evaluate_every_iterations
    return iteration == config.iterations or (every > 0 and iteration % every == 0)


def run_config(run: RLRun) -> RLConfig:
    """The run's config plus this worker's deployment settings the engines need (the vLLM sidecar socket)."""
    config = parse_config(RLConfig, run.config)
    if settings.VLLM_SIDECAR_SOCKET and not config.vllm_sidecar_socket:
        config = dataclasses.replace(config, vllm_sidecar_socket=settings.VLLM_SIDECAR_SOCKET)
    return config


def reconcile_checkpoints(run: RLRun, config: RLConfig, output_dir: Path) -> None:
    """Before a run (re)starts, make its checkpoints on disk agree with its rows, for a worker that died between
    writing a checkpoint or an iteration and recording it: a checkpoint newer than the last recorded iteration is
    set aside (renamed `.partial`, which resuming ignores and the session deletes when it starts), so the
    run redoes those iterations and records them (an exact resume reproduces them); an older checkpoint without
    its row is recorded. A removed checkpoint (keep_last_checkpoints) is recorded before its folder goes, so a
    folder whose row is marked removed is one whose deletion a crash interrupted: it goes now (a `.removing` one
    goes when the session starts); a row still unmarked whose folder is missing, older than the newest complete
    checkpoint, is one whose removal a crash interrupted before removals were recorded first: it is marked now.
    The files are touched only while this worker holds the run (JobTakenOver otherwise)."""
    with run.holding_claim():
        recorded_iteration = RLRun.objects.filter(pk=run.pk).values_list("current_iteration", flat=True).get()
        recorded = set(Checkpoint.objects.filter(run=run).values_list("iteration", flat=True))
        for folder in complete_checkpoint_dirs(output_dir):
            iteration = int(folder.name.removeprefix(PREFIX))
            if iteration > recorded_iteration:
                aside = folder.with_name(folder.name + ".partial")
                shutil.rmtree(aside, ignore_errors=True)  # a save that crashed midway left its staging folder
                folder.rename(aside)
                RLRun.append_log(run.pk, f"checkpoint of iteration {iteration} set aside: its iteration was "
                                         "not recorded, so it is done again")
            elif iteration not in recorded:  # sized only here: a recorded checkpoint is not read again
                record_checkpoint(run, config, checkpoint_report(folder))
        finish_interrupted_removals(run, config, output_dir)


def finish_interrupted_removals(run: RLRun, config: RLConfig, output_dir: Path) -> None:
    """Delete the folders of checkpoints recorded as removed (never the newest, which a resume starts from), and
    mark as removed the unmarked rows older than the newest complete checkpoint whose folder is gone."""
    complete = complete_checkpoint_dirs(output_dir)
    if not complete:
        return
    newest = checkpoint_iteration(complete[-1])
    marked = set(Checkpoint.objects.filter(run=run, files_removed_at__isnull=False).values_list("iteration", flat=True))
    if leftover := [iteration for iteration in map(checkpoint_iteration, complete[:-1]) if iteration in marked]:
        RLRun.append_log(run.pk, f"checkpoints of iterations {', '.join(map(str, leftover))} were recorded as "
                                 "removed before their files went: removed now")
        remove_checkpoints(output_dir, leftover, lambda line: RLRun.append_log(run.pk, line))
    unmarked = Checkpoint.objects.filter(run=run, files_removed_at=None, iteration__lt=newest)
    if missing := sorted(iteration for iteration in unmarked.values_list("iteration", flat=True)
                         if not checkpoint_dir(output_dir, iteration).is_dir()):
        Checkpoint.objects.filter(run=run, iteration__in=missing).update(files_removed_at=timezone.now())
        log_removed(run, config, missing)


def run_rl_job(run: RLRun) -> None:
    """Train the run; raise JobCancelled when it stopped on request."""
    check_run_paths(run)  # the path rule again: a queued job whose path is no longer allowed fails here
    config = run_config(run)
    reconcile_checkpoints(run, config, run_paths(run).output_dir)
    backend = trainer_backends.get(config.trainer_backend)
    # Every hook raises JobTakenOver once this worker lost the run: the loop stops before its next step (the
    # checkpoint it would save after an iteration included) and records nothing more.
    hooks = TrainingHooks(
        on_iteration=lambda report: record_iteration(run, report),
        on_checkpoint=lambda report: record_checkpoint(run, config, report),
        log=lambda line: RLRun.log_alive(run.pk, line, run.worker),  # long phases such as the warm-up report here
        on_warmup_step=warmup_recorder(run),
        should_stop=run.should_stop,
        approve_checkpoint_removals=lambda iterations: approve_checkpoint_removals(run, config, iterations),
    )
    if needs_torchrun(config):  # several processes: the backend runs in torchrun's ranks, rank 0 reports here
        outcome = run_under_torchrun(config, prompt_records(run), run_paths(run), hooks,
                                     run_key=torchrun_run_key(run),
                                     start_other_nodes=lambda: request_node_joins(run, config))
    else:
        outcome = backend(config, prompt_records(run), run_paths(run), hooks)
    if outcome.stopped_early:
        raise JobCancelled()
