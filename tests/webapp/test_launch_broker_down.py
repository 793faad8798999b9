"""A launch while the broker is down: the row stays queued and the request answers; the workers' recovery sends
the task once the broker is back (a real Redis broker, and a closed port for the one that is down)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from webapp.celery import JOB_TASKS
from webapp.evals.models import EvalRun
from webapp.jobs import SEND_GRACE_SECONDS, JobStatus
from webapp.long2short.models import Long2ShortVariant
from webapp.prompts.models import PromptSetImport
from webapp.runs.models import RLRun
from tests.webapp.broker_support import broker_down, take_queued_tasks
from workers.recovery import send_unsent_jobs

pytestmark = pytest.mark.django_db(transaction=True)  # the task is sent when the launch commits

OVERDUE = timedelta(seconds=SEND_GRACE_SECONDS + 1)


def overdue(model, pk: int) -> None:
    """As if the launch had been SEND_GRACE_SECONDS ago."""
    model.objects.filter(pk=pk).update(unsent_since=timezone.now() - OVERDUE)


def test_a_run_launched_while_the_broker_is_down_is_answered_and_sent_by_the_recovery(
        api_for, alice, project, prompt_set):
    with broker_down():
        response = api_for(alice).post("/api/runs/", {"project": project.pk, "name": "r", "prompt_set": prompt_set.pk,
                                                      "config": {"trainer_backend": "noop-test"}}, format="json")
        assert response.status_code == 201 and response.json()["status"] == JobStatus.QUEUED
        run = RLRun.objects.get(pk=response.json()["id"])
        assert run.status == JobStatus.QUEUED and run.unsent_since is not None
        assert "the broker is unreachable" in run.log
        assert send_unsent_jobs() == []  # within the grace: the launch may still be sending it
        overdue(RLRun, run.pk)
        assert send_unsent_jobs() == []  # still down: it stays unsent, tried again a grace later
        assert RLRun.objects.get(pk=run.pk).unsent_since > timezone.now() - OVERDUE
    take_queued_tasks("gpu", "mirrorlab.run_rl", run.pk)  # a message an earlier test left for a row of the same id
    assert send_unsent_jobs() == []  # the broker is back, the grace since the last try not over
    overdue(RLRun, run.pk)
    assert send_unsent_jobs() == [("rl_run", run.pk)]
    run.refresh_from_db()
    assert run.status == JobStatus.QUEUED and run.unsent_since is None
    assert "sent to the workers by the recovery" in run.log
    assert take_queued_tasks("gpu", "mirrorlab.run_rl", run.pk) == 1  # on the real broker, once
    assert run.log.count("the broker is unreachable") == 1  # the recovery's failed tries add no line each
    assert send_unsent_jobs() == []  # sent: never again


def test_a_launch_with_the_broker_up_marks_the_row_sent(project, prompt_set, alice):
    from common.knobs import config_to_dict, parse_config
    from training.config import RLConfig
    from webapp.runs.services import launch_run

    config = config_to_dict(parse_config(RLConfig, {"trainer_backend": "noop-test"}))
    run = launch_run(project=project, name="r", prompt_set=prompt_set, owner=alice, config=config)
    assert RLRun.objects.get(pk=run.pk).unsent_since is None and "unreachable" not in run.log
    assert take_queued_tasks("gpu", "mirrorlab.run_rl", run.pk) >= 1  # (an earlier test may have left one)


def launch_evaluation_row(project, suite, alice, run):
    from webapp.evals.services import launch_evaluation

    return launch_evaluation(project=project, suite=suite, model="tiny", owner=alice)


def launch_variant_row(project, suite, alice, run):
    from webapp.long2short.services import launch_variant

    return launch_variant(project=project, name="v", method="dpo", parent_run=run, owner=alice)


def launch_import_row(project, suite, alice, run):
    from webapp.prompts.services import launch_prompt_import

    return launch_prompt_import(project=project, owner=alice, name="imported", config={"dataset_id": "x/y"})


def resume_a_failed_run(project, suite, alice, run):
    from webapp.runs.services import resume_run

    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.FAILED)
    assert resume_run(run, alice)
    return run


@pytest.mark.parametrize("launch, model, kind", [
    (launch_evaluation_row, EvalRun, "eval_run"),
    (launch_variant_row, Long2ShortVariant, "long2short"),
    (launch_import_row, PromptSetImport, "prompt_import"),
    (resume_a_failed_run, RLRun, "rl_run"),
])
def test_every_launch_survives_the_broker_being_down(launch, model, kind, project, suite, alice, run):
    with broker_down():
        row = launch(project, suite, alice, run)
    row = model.objects.get(pk=row.pk)
    assert row.status == JobStatus.QUEUED and row.unsent_since is not None and "broker is unreachable" in row.log
    task_name, queue = JOB_TASKS[kind]
    take_queued_tasks(queue, task_name, row.pk)  # a message an earlier test left for a row of the same id
    overdue(model, row.pk)
    assert send_unsent_jobs() == [(kind, row.pk)]
    assert take_queued_tasks(queue, task_name, row.pk) == 1


def test_a_cancelled_unsent_row_is_never_sent(run):
    RLRun.objects.filter(pk=run.pk).update(unsent_since=timezone.now() - OVERDUE)
    assert run.request_cancel() == "cancelled"
    assert send_unsent_jobs() == []
