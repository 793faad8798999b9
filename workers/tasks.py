"""Celery tasks: thin wrappers that hand a row id to a job function."""

from __future__ import annotations

import os

from celery.signals import worker_init, worker_process_init, worker_ready

from webapp.celery import app


@worker_ready.connect
def _recover_abandoned_jobs(**_kwargs) -> None:
    """Every worker re-queues jobs whose worker died (heartbeat stale) when it starts and then periodically."""
    from django.conf import settings

    from workers.recovery import start_periodic_recovery

    start_periodic_recovery(settings.JOB_RECOVERY_INTERVAL_SECONDS)


_WORKER_PROCESS: dict[str, int] = {}  # the pid of this worker's main process, set when it starts


@worker_init.connect
def _remember_the_main_process(**_kwargs) -> None:
    _WORKER_PROCESS["pid"] = os.getpid()


@worker_process_init.connect
def _die_with_the_worker(**_kwargs) -> None:
    """A pool process (prefork) is killed when its worker's main process dies, even by SIGKILL. The solo pool
    sends the same signal in the worker's main process itself, which must outlive whatever started it (a shell
    started with nohup, a launcher script that exits)."""
    from common.processes import die_with_parent

    if _WORKER_PROCESS.get("pid") != os.getpid():
        die_with_parent()


@app.task(name="mirrorlab.run_rl")
def run_rl(run_id: int) -> str:
    from workers.jobs import execute_job
    from workers.rl_job import run_rl_job

    return execute_job("rl_run", run_id, run_rl_job)


@app.task(name="mirrorlab.join_rl_run")
def join_rl_run(run_id: int, node_index: int, claimer: str = "") -> str:
    """One more node of a running multi-node run: runs its torchrun, never claims the row (nor joins once the
    worker that asked, `claimer`, no longer holds it)."""
    from workers.rl_node_job import join_rl_run as join

    return join(run_id, node_index, claimer)


@app.task(name="mirrorlab.run_evaluation")
def run_evaluation(eval_run_id: int) -> str:
    from workers.eval_job import run_eval_job
    from workers.jobs import execute_job

    return execute_job("eval_run", eval_run_id, run_eval_job)


@app.task(name="mirrorlab.run_grader_audit")
def run_grader_audit(audit_id: int) -> str:
    """Grade a finished evaluation's stored samples again with a second grader (gpu queue: it may load a judge)."""
    from workers.audit_job import run_audit_job
    from workers.jobs import execute_job

    return execute_job("grader_audit", audit_id, run_audit_job)


@app.task(name="mirrorlab.run_long2short", bind=True)
def run_long2short(self, variant_id: int, waits: int = 0) -> str:
    """While the parent run is queued or running, try again later without claiming the row."""
    from workers.jobs import execute_job
    from workers.long2short_job import parent_wait_seconds, run_long2short_job

    if (delay := parent_wait_seconds(variant_id, waits)) is not None:
        self.apply_async(args=[variant_id, waits + 1], countdown=delay)
        return "waiting for the parent run"
    return execute_job("long2short", variant_id, run_long2short_job)


@app.task(name="mirrorlab.cpu.import_prompt_set")
def import_prompt_set(import_id: int) -> str:
    from workers.jobs import execute_job
    from workers.prompt_import_job import run_prompt_import_job

    return execute_job("prompt_import", import_id, run_prompt_import_job)
