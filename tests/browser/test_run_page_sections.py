"""In a real browser: the run page's checkpoint and evaluation sections, and the hint of a run no worker started,
follow the run's polled status without a page reload.

Screenshots: test-artifacts/browser/test_the_run_page_redraws_its_checkpoints_evaluations_and_queue_hint--*.png
"""

from __future__ import annotations

import datetime

import pytest
from django.utils import timezone

from tests.browser.conftest import log_in, text_of, wait_until
from webapp.evals.models import EvalRun
from webapp.jobs import JobStatus
from webapp.runs.models import Checkpoint, RLRun

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

POLL_TIMEOUT = 20  # the page polls every 5 s


def section_text(browser, css: str) -> str:
    """The element's text, read in one script (a section swapped in meanwhile leaves no stale reference)."""
    return browser.execute_script("var element = document.querySelector(arguments[0]);"
                                  "return element ? element.innerText : '';", css)


def test_the_run_page_redraws_its_checkpoints_evaluations_and_queue_hint(live_server, run, suite, alice, browser,
                                                                         shoot):
    from selenium.webdriver.common.by import By

    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.RUNNING, worker="w", heartbeat_at=timezone.now())
    log_in(browser, live_server.url, "alice", "alice-password")
    browser.get(f"{live_server.url}/runs/{run.pk}/")
    browser.execute_script("window.__noReload = 1;")
    assert "No checkpoints yet." in section_text(browser, "#run-checkpoints")
    assert not browser.find_element(By.CSS_SELECTOR, "[data-field='queued-hint']").is_displayed()

    checkpoint = Checkpoint.objects.create(project=run.project, run=run, iteration=2, path="/c/iteration-000002",
                                           size_bytes=6_912_345)
    evaluation = EvalRun.objects.create(project=run.project, suite=suite, checkpoint=checkpoint)
    wait_until(browser, lambda driver: "6.9 MB" in section_text(driver, "#run-checkpoints")
               and "run-1 @ 2" in section_text(driver, "#run-evaluations"), "the new checkpoint and its evaluation",
               timeout=POLL_TIMEOUT)
    EvalRun.objects.filter(pk=evaluation.pk).update(status=JobStatus.SUCCEEDED)
    wait_until(browser, lambda driver: "Succeeded" in section_text(driver, "#run-evaluations"),
               "the evaluation's new status", timeout=POLL_TIMEOUT)
    shoot("1-sections-redrawn")

    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.QUEUED, worker="", heartbeat_at=None, unsent_since=None,
                                           created_at=timezone.now() - datetime.timedelta(minutes=3), log="")
    hint = wait_until(browser, lambda driver: (element := driver.find_element(
        By.CSS_SELECTOR, "[data-field='queued-hint']")).is_displayed() and element.text, "the queue hint",
        timeout=POLL_TIMEOUT)
    assert "no worker has started it" in hint and '"gpu" queue' in hint
    assert "Succeeded" in section_text(browser, "#run-evaluations")  # the run badge leaves its evaluations alone
    assert text_of(browser, "h1 [data-status-badge]") == "Queued"
    shoot("2-queue-hint")
    assert browser.execute_script("return window.__noReload") == 1, "the page reloaded"
