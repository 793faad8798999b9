"""The Celery app of the web project (Django's convention) and the functions that queue jobs by task name.

The web server queues work here without importing worker code: tasks are named, and only a worker
(`celery -A workers worker`, whose package registers the tasks) imports workers/.
"""

from __future__ import annotations

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

app = Celery("mirrorlab")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(
    task_queues=(Queue("gpu"), Queue("cpu")),
    task_default_queue="cpu",
    task_routes={
        "mirrorlab.run_rl": {"queue": "gpu"},
        "mirrorlab.run_evaluation": {"queue": "gpu"},
        "mirrorlab.run_long2short": {"queue": "gpu"},
        "mirrorlab.run_grader_audit": {"queue": "gpu"},
        "mirrorlab.cpu.*": {"queue": "cpu"},
    },
    # One long job per worker process at a time; a job is acknowledged only when it ends,
    # so a worker that dies mid-job leaves the message for another worker.
    worker_prefetch_multiplier=1,
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    broker_connection_retry_on_startup=True,
)
app.autodiscover_tasks(["workers"], related_name="tasks")  # looked up when a worker starts, never here

# Job kind -> the row's model (app label.model name), and -> (task name, queue).
JOB_MODELS = {"rl_run": "runs.RLRun", "eval_run": "evals.EvalRun", "long2short": "long2short.Long2ShortVariant",
              "prompt_import": "prompts.PromptSetImport", "grader_audit": "evals.GraderAudit"}
JOB_TASKS = {
    "rl_run": ("mirrorlab.run_rl", "gpu"),
    "eval_run": ("mirrorlab.run_evaluation", "gpu"),
    "long2short": ("mirrorlab.run_long2short", "gpu"),
    "prompt_import": ("mirrorlab.cpu.import_prompt_set", "cpu"),
    "grader_audit": ("mirrorlab.run_grader_audit", "gpu"),
}
NODE_JOIN_TASK = ("mirrorlab.join_rl_run", "gpu")


def enqueue_job(kind: str, pk: int) -> None:
    """Queue the task that runs job row `pk` of the given kind."""
    task_name, queue = JOB_TASKS[kind]
    app.send_task(task_name, args=[pk], queue=queue)


QUEUE_OF_MODEL = {label: JOB_TASKS[kind][1] for kind, label in JOB_MODELS.items()}  # "runs.RLRun" -> "gpu"


def job_queue(model_label: str) -> str:
    """The queue a job row's task goes to, by the row's model label ("runs.RLRun" -> "gpu")."""
    return QUEUE_OF_MODEL[model_label]


def enqueue_node_join(run_id: int, node_index: int, claimer: str) -> None:
    """Queue the task by which one more gpu-queue worker's node joins running multi-node run `run_id`, as long as
    the worker `claimer` that asked still holds the run."""
    task_name, queue = NODE_JOIN_TASK
    app.send_task(task_name, args=[run_id, node_index, claimer], queue=queue)
