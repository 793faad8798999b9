"""The run page's live refresh: the status JSON carries the facts, the newest metric rows and their count."""

from __future__ import annotations

import datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from webapp.jobs import JobStatus
from webapp.pages.run_data import eta_seconds
from webapp.runs.models import IterationMetric, RLRun

pytestmark = pytest.mark.django_db

STARTED = datetime.datetime(2026, 11, 24, 6, 8, 59, tzinfo=datetime.timezone.utc)


def add_metrics(run, count: int) -> None:
    IterationMetric.objects.bulk_create(
        IterationMetric(run=run, iteration=i, train_accuracy=i / 200, mean_response_length=100 + i,
                        p95_response_length=200 + i, loss=-0.5 + i / 1000, kl=None, tokens_generated=10 * i,
                        tokens_reused=i, seconds=1.0 if i <= 100 else 4.0,
                        extra={"groups_parked": 3.0, "policy_version_span": 2.0, "old_policy_token_share": i / 1200,
                               "sampler_kl": i * 1e-9})
        for i in range(1, count + 1)
    )


def status_of(client, run) -> dict:
    return client.get(reverse("run-status", kwargs={"pk": run.pk})).json()


def test_a_queued_runs_status_has_no_facts_and_no_rows(client_for, alice, run):
    payload = status_of(client_for(alice), run)
    assert (payload["started_at"], payload["finished_at"], payload["worker"]) == ("—", "—", "—")
    assert (payload["heartbeat_ago"], payload["metric_rows"], payload["metric_count"]) == ("", [], 0)


def test_the_status_json_reports_start_worker_and_heartbeat_of_a_running_run(client_for, bob, run):
    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.RUNNING, started_at=STARTED, worker="vm:369",
                                           heartbeat_at=STARTED)
    payload = status_of(client_for(bob), run)
    assert (payload["started_at"], payload["finished_at"], payload["worker"]) == ("2026-11-24 06:08:59", "—", "vm:369")
    assert payload["heartbeat_ago"].endswith(" ago")


def test_a_finished_run_reports_its_end_and_no_heartbeat(client_for, alice, run):
    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.SUCCEEDED, started_at=STARTED, heartbeat_at=STARTED,
                                           finished_at=STARTED + datetime.timedelta(minutes=2, seconds=1))
    payload = status_of(client_for(alice), run)
    assert (payload["finished_at"], payload["heartbeat_ago"]) == ("2026-11-24 06:11:00", "")


def test_the_status_json_sends_the_newest_50_metric_rows_and_the_row_count(client_for, alice, run):
    add_metrics(run, 120)
    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.RUNNING, current_iteration=120, total_iterations=130)
    payload = status_of(client_for(alice), run)
    rows = payload["metric_rows"]
    assert payload["metric_count"] == 120
    assert [row["iteration"] for row in rows] == list(range(120, 70, -1))
    assert rows[0] == {"iteration": 120, "train_accuracy": 0.6, "mean_response_length": 220.0,
                       "p95_response_length": 320.0, "loss": pytest.approx(-0.38), "kl": None,
                       "tokens_generated": 1200, "tokens_reused": 120, "seconds": 4.0,
                       "sampler_kl": pytest.approx(1.2e-7), "groups_parked": 3.0,
                       "policy_version_span": 2.0, "old_policy_token_share": pytest.approx(0.1)}
    # The ETA comes from those rows (the newest 20: 4 s each, 10 iterations left), as the page's own query does.
    run.refresh_from_db()
    assert payload["eta_seconds"] == pytest.approx(40.0) == eta_seconds(run)


def test_the_status_json_costs_the_same_queries_for_3_or_600_metric_rows(client_for, alice, project, prompt_set):
    counts, row_counts = [], []
    for size in (3, 600):
        run = RLRun.objects.create(project=project, name=f"size-{size}", prompt_set=prompt_set, status="running",
                                   config={"iterations": size}, total_iterations=size + 5, current_iteration=size)
        add_metrics(run, size)
        client = client_for(alice)
        with CaptureQueriesContext(connection) as queries:
            payload = status_of(client, run)
        counts.append(len(queries))
        row_counts.append((len(payload["metric_rows"]), payload["metric_count"]))
    assert row_counts == [(3, 3), (50, 600)]
    assert counts[0] == counts[1] <= 7, counts


def test_the_run_page_marks_the_parts_the_refresh_rewrites(client_for, alice, run):
    add_metrics(run, 60)
    client = client_for(alice)
    first = client.get(reverse("run-detail", kwargs={"pk": run.pk})).content.decode()
    for part in ('data-field="started_at"', 'data-field="finished_at"', 'data-field="worker"',
                 'data-field="heartbeat-box" hidden', 'data-loaded-status="queued"', "/static/run_metrics.js"):
        assert part in first, part
    assert '<tbody data-field="metric-rows" data-live="true">' in first
    second = client.get(reverse("run-detail", kwargs={"pk": run.pk}) + "?page=2").content.decode()
    assert '<tbody data-field="metric-rows">' in second  # an older page is not replaced by the newest rows
