"""Send jobs to Celery by task name, so the web server imports no worker code."""

from __future__ import annotations

JOB_TASKS = {
    "rl_run": ("mirrorlab.run_rl", "gpu"),
    "eval_run": ("mirrorlab.run_evaluation", "gpu"),
    "long2short": ("mirrorlab.run_long2short", "gpu"),
    "prompt_import": ("mirrorlab.cpu.import_prompt_set", "cpu"),
    "grader_audit": ("mirrorlab.run_grader_audit", "gpu"),
}


def enqueue_job(kind: str, pk: int) -> None:
    """Queue the task that runs job row `pk` of the given kind."""
    from workers.celery_app import app

    task_name, queue = JOB_TASKS[kind]
    app.send_task(task_name, args=[pk], queue=queue)


NODE_JOIN_TASK = ("mirrorlab.join_rl_run", "gpu")


def enqueue_node_join(run_id: int, node_index: int) -> None:
    """Queue the task by which one more gpu-queue worker's node joins running multi-node run `run_id`."""
    from workers.celery_app import app

    task_name, queue = NODE_JOIN_TASK
    app.send_task(task_name, args=[run_id, node_index], queue=queue)
