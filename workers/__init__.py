"""Celery tasks and the job functions they call: the only bridge from database rows to the engines.

`celery -A workers worker` finds the web project's Celery app here; the tasks (workers.tasks) register
themselves when the worker starts, and so does the handler that re-queues abandoned jobs.
"""

from webapp.celery import app

__all__ = ["app"]
