"""A job queued (and sent to the broker) longer than JOB_QUEUED_HINT_SECONDS that no worker started says which queue
needs a worker, on its page and in the run page's status JSON."""

from __future__ import annotations

import datetime
import html

import pytest
from django.urls import reverse
from django.utils import timezone

from common.knobs import config_to_dict, parse_config
from evaluation.datasets.prompt_import import PromptImportConfig
from webapp.evals.models import EvalRun, GraderAudit
from webapp.jobs import JobStatus, stamped_line
from webapp.long2short.models import Long2ShortVariant
from webapp.pages.job_waiting import no_worker_hint
from webapp.prompts.models import PromptSetImport
from webapp.runs.models import Checkpoint, RLRun

pytestmark = pytest.mark.django_db

NO_WORKER = "no worker has started it"


def queued_for(job, minutes: float):
    """The job as if created `minutes` ago (its task sent: unsent_since null)."""
    type(job).objects.filter(pk=job.pk).update(created_at=timezone.now() - datetime.timedelta(minutes=minutes),
                                               unsent_since=None)
    job.refresh_from_db()
    return job


def text(page) -> str:
    return html.unescape(page.content.decode()).replace("\xa0", " ")


def status_of(client, run) -> dict:
    return client.get(reverse("run-status", kwargs={"pk": run.pk})).json()


def test_a_run_queued_for_minutes_names_the_gpu_queue_on_its_page_and_in_its_status(client_for, alice, run):
    queued_for(run, minutes=3)
    client = client_for(alice)
    page = text(client.get(reverse("run-detail", args=[run.pk])))
    assert f"Queued for 3 minutes: {NO_WORKER}" in page and 'consumes the "gpu" queue' in page
    assert 'data-field="queued-hint">' in page  # shown (not hidden), where the polling script updates it
    hint = status_of(client, run)["queued_hint"].replace("\xa0", " ")
    assert hint.startswith(f"Queued for 3 minutes: {NO_WORKER}") and '"gpu" queue' in hint and "Workers" in hint


def test_a_run_queued_for_seconds_shows_no_hint(client_for, alice, run):
    queued_for(run, minutes=0.2)
    client = client_for(alice)
    assert NO_WORKER not in text(client.get(reverse("run-detail", args=[run.pk])))
    assert status_of(client, run)["queued_hint"] == ""


def test_the_threshold_is_a_setting(client_for, alice, run, settings):
    settings.JOB_QUEUED_HINT_SECONDS = 600
    queued_for(run, minutes=3)
    assert status_of(client_for(alice), run)["queued_hint"] == ""
    settings.JOB_QUEUED_HINT_SECONDS = 60
    assert status_of(client_for(alice), run)["queued_hint"] != ""


def test_a_job_whose_task_never_reached_the_broker_shows_no_hint(run):
    queued_for(run, minutes=10)
    RLRun.objects.filter(pk=run.pk).update(unsent_since=timezone.now() - datetime.timedelta(minutes=10))
    run.refresh_from_db()
    assert no_worker_hint(run) == ""  # its log says the broker is unreachable; the recovery sends it


@pytest.mark.parametrize("status", [JobStatus.RUNNING, JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED])
def test_a_job_past_the_queue_shows_no_hint(run, status):
    queued_for(run, minutes=10)
    RLRun.objects.filter(pk=run.pk).update(status=status)
    run.refresh_from_db()
    assert no_worker_hint(run) == ""


def test_a_run_resumed_a_moment_ago_counts_from_its_resume_not_its_creation(run):
    queued_for(run, minutes=3 * 24 * 60)
    RLRun.append_log(run.pk, "resumed by alice (was failed)")
    run.refresh_from_db()
    assert no_worker_hint(run) == ""
    RLRun.objects.filter(pk=run.pk).update(log=f"2020-01-01 00:00:00 older line\n{stamped_line('resumed')}")
    run.refresh_from_db()
    assert no_worker_hint(run, now=timezone.now() + datetime.timedelta(minutes=5)) != ""


def test_an_evaluation_page_names_the_gpu_queue(client_for, bob, project, suite, alice):
    evaluation = queued_for(EvalRun.objects.create(project=project, suite=suite, model="tiny", owner=alice), 5)
    page = text(client_for(bob).get(reverse("evaluation-detail", args=[evaluation.pk])))
    assert f"Queued for 5 minutes: {NO_WORKER}" in page and '"gpu" queue' in page


def test_a_grader_audit_on_its_evaluation_page_names_the_gpu_queue(client_for, alice, project, suite):
    evaluation = EvalRun.objects.create(project=project, suite=suite, model="tiny", status=JobStatus.SUCCEEDED)
    queued_for(GraderAudit.objects.create(eval_run=evaluation, grader={"grader_mode": "rule"}), 2)
    page = text(client_for(alice).get(reverse("evaluation-detail", args=[evaluation.pk])))
    assert f"Queued for 2 minutes: {NO_WORKER}" in page and '"gpu" queue' in page


def test_a_prompt_import_page_names_the_cpu_queue(client_for, alice, project):
    config = config_to_dict(parse_config(PromptImportConfig, {"dataset_id": "org/data"}))
    job = queued_for(PromptSetImport.objects.create(project=project, name="pending", config=config), 4)
    page = text(client_for(alice).get(reverse("prompt-set-import-detail", args=[job.pk])))
    assert f"Queued for 4 minutes: {NO_WORKER}" in page and '"cpu" queue' in page


def test_a_variant_names_the_gpu_queue_unless_it_waits_for_its_running_parent_run(client_for, alice, project, run):
    checkpoint = Checkpoint.objects.create(project=project, run=run, iteration=2, path="/tmp/ckpt")
    variant = queued_for(Long2ShortVariant.objects.create(project=project, name="v", method="dpo",
                                                          parent_checkpoint=checkpoint), 2)
    page = text(client_for(alice).get(reverse("variant-detail", args=[variant.pk])))
    assert f"Queued for 2 minutes: {NO_WORKER}" in page and '"gpu" queue' in page
    waiting = queued_for(Long2ShortVariant.objects.create(project=project, name="w", method="dpo", parent_run=run), 2)
    assert no_worker_hint(waiting) == ""  # it stays queued until its parent run ends; the run's page has the hint


def test_a_resume_quoting_a_multi_line_error_still_counts_from_the_resume(run):
    queued_for(run, minutes=3 * 24 * 60)
    error = "VllmProcessDied: the server died; its log:\nINFO loading\nKilled"
    RLRun.objects.filter(pk=run.pk).update(log=stamped_line("started on gpu@h") +
                                           stamped_line(f"resumed by alice (was failed: {error})"))
    run.refresh_from_db()
    assert no_worker_hint(run) == ""  # resumed a moment ago (was: "Queued for 3 days")


def test_a_job_behind_a_running_job_of_its_queue_waits_for_a_worker_not_for_one_to_exist(project, suite, alice, run):
    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.RUNNING, heartbeat_at=timezone.now(), worker="gpu@h")
    checkpoint = Checkpoint.objects.create(project=project, run=run, iteration=10, path="/c/10")
    evaluation = queued_for(EvalRun.objects.create(project=project, suite=suite, checkpoint=checkpoint, owner=alice),
                            minutes=120)
    hint = no_worker_hint(evaluation).replace("\xa0", " ")
    assert hint.startswith('Queued for 2 hours behind 1 running job of the "gpu" queue') and NO_WORKER not in hint
    RLRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - datetime.timedelta(hours=1))  # dead
    assert NO_WORKER in no_worker_hint(evaluation)
