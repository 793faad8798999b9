"""A run launched while the broker was down: a real worker's periodic recovery sends its task and runs it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from common.knobs import config_to_dict, parse_config
from training.config import RLConfig
from webapp.jobs import SEND_GRACE_SECONDS, JobStatus
from webapp.runs.models import IterationMetric, RLRun
from webapp.runs.services import launch_run
from tests.webapp.broker_support import broker_down
from tests.workers.conftest import wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_a_run_launched_while_the_broker_was_down_is_sent_by_the_recovery_and_run(
        celery_worker_process, project, prompt_set, alice):
    config = config_to_dict(parse_config(RLConfig, {"trainer_backend": "noop-test", "iterations": 2}))
    with broker_down():
        run = launch_run(project=project, name="unsent", prompt_set=prompt_set, owner=alice, config=config)
    run.refresh_from_db()
    assert run.status == JobStatus.QUEUED and run.unsent_since is not None
    RLRun.objects.filter(pk=run.pk).update(unsent_since=timezone.now() - timedelta(seconds=SEND_GRACE_SECONDS + 1))

    def ended() -> str:
        run.refresh_from_db()
        return run.status if run.is_terminal else ""

    assert wait_for(ended, 60, "the worker's recovery to send the run and the run to finish") == JobStatus.SUCCEEDED
    assert "sent to the workers by the recovery" in run.log and run.unsent_since is None
    assert IterationMetric.objects.filter(run=run).count() == 2
