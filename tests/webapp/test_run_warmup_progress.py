"""The warm-up's step, loss and ETA: written by the worker's hook (throttled), shown on the run page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from webapp.jobs import JobTakenOver
from webapp.pages.run_data import warmup_text
from webapp.runs.models import RLRun
from workers.rl_job import warmup_recorder

pytestmark = pytest.mark.django_db


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_recorder_writes_at_most_every_two_seconds_and_always_the_last_step(held_run):
    clock = Clock()
    record = warmup_recorder(held_run, clock)
    record(1, 10, 2.5)
    clock.now += 1.0
    record(2, 10, 2.0)  # within 2 s of the last write: skipped
    held_run.refresh_from_db()
    assert held_run.warmup_progress == {"step": 1, "steps": 10, "loss": 2.5, "started": 1000.0, "updated": 1000.0}
    clock.now += 1.5
    record(3, 10, 1.5)
    clock.now += 0.1
    record(10, 10, 0.4)  # the last step is always written
    held_run.refresh_from_db()
    assert (held_run.warmup_progress["step"], held_run.warmup_progress["loss"]) == (10, 0.4)


def test_a_worker_that_lost_the_run_writes_nothing(held_run):
    RLRun.objects.filter(pk=held_run.pk).update(worker="worker-b")
    with pytest.raises(JobTakenOver):
        warmup_recorder(held_run, Clock())(1, 10, 2.5)
    held_run.refresh_from_db()
    assert held_run.warmup_progress == {}


def test_the_text_gives_step_loss_and_an_eta_from_the_pace_so_far(held_run):
    held_run.warmup_progress = {"step": 100, "steps": 400, "loss": 0.53125, "started": 0.0, "updated": 50.0}
    # 100 steps in 50 s: 300 left take 150 s
    assert warmup_text(held_run) == "Warm-up SFT: step 100 of 400 · loss 0.531 · ETA 2 min"
    held_run.warmup_progress["step"] = 400
    assert warmup_text(held_run).startswith("Warm-up SFT done (400 steps")
    held_run.current_iteration = 1
    assert warmup_text(held_run) == ""


def test_the_run_page_and_its_status_show_the_warmup(client_for, alice, held_run):
    RLRun.objects.filter(pk=held_run.pk).update(
        warmup_progress={"step": 30, "steps": 60, "loss": 1.25, "started": 0.0, "updated": 30.0})
    page = client_for(alice).get(reverse("run-detail", kwargs={"pk": held_run.pk}))
    assert page.status_code == 200
    assert "Warm-up SFT: step 30 of 60 · loss 1.250 · ETA 30 s" in page.content.decode()
    status = client_for(alice).get(reverse("run-status", kwargs={"pk": held_run.pk}))
    assert status.json()["warmup"] == "Warm-up SFT: step 30 of 60 · loss 1.250 · ETA 30 s"
