"""Launching and describing RL runs."""

from __future__ import annotations

from django.db import transaction

from webapp.runs.models import RLRun
from workers.dispatch import enqueue_job


def launch_run(**fields) -> RLRun:
    """Create a queued run from a validated config and send it to the gpu queue after commit."""
    config = fields["config"]
    run = RLRun.objects.create(total_iterations=config["iterations"], **fields)
    transaction.on_commit(lambda: enqueue_job("rl_run", run.pk))
    return run
