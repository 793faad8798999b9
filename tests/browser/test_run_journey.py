"""In a real browser: log in, upload a prompt set, launch a run with the form, watch a real worker fill its page.

Screenshots: test-artifacts/browser/test_a_user_uploads_prompts_launches_a_run_and_watches_it_fill_live--*.png
"""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import log_in, text_of, wait_until
from webapp.jobs import JobStatus
from webapp.prompts.models import PromptSet
from webapp.runs.models import IterationMetric, RLRun

pytestmark = [pytest.mark.slow, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

PROMPTS_JSONL = "".join(
    f'{{"problem": "What is {left}+{right}?", "answer": "{left + right}", "domain": "math"}}\n'
    for left, right in [(2, 3), (7, 8), (12, 30), (41, 1)]
)
# noop-test sleeps 0.05 s per iteration, so 300 take at least 15 s: the page (polling every 5 s) sees
# at least two updates before the run ends.
ITERATIONS = 300
COUNTER = "#run-state [data-field='current_iteration']"


def chart_points(browser) -> int:
    """Points of the chart's first trace, as Plotly holds them on the chart element (0 before the first draw)."""
    return browser.execute_script(
        "var chart = document.getElementById('run-chart');"
        "return chart && chart.data && chart.data.length ? chart.data[0].x.length : 0;")


def upload_prompt_set(browser, base_url: str, jsonl_path, shoot) -> PromptSet:
    from selenium.webdriver.common.by import By

    browser.get(f"{base_url}/prompt-sets/upload/")
    browser.find_element(By.NAME, "name").send_keys("arith-browser")
    browser.find_element(By.NAME, "file").send_keys(str(jsonl_path))
    shoot("2-upload-form")
    browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    wait_until(browser, lambda driver: re.search(r"/prompt-sets/\d+/$", driver.current_url), "the prompt set page")
    shoot("3-prompt-set")
    return PromptSet.objects.get(name="arith-browser")


def launch_run_with_form(browser, base_url: str, prompt_set: PromptSet, shoot) -> RLRun:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    browser.get(f"{base_url}/runs/launch/")
    browser.find_element(By.NAME, "name").send_keys("browser-run")
    Select(browser.find_element(By.NAME, "prompt_set")).select_by_visible_text(prompt_set.name)
    Select(browser.find_element(By.NAME, "trainer_backend")).select_by_value("noop-test")
    iterations = browser.find_element(By.NAME, "iterations")
    iterations.clear()
    iterations.send_keys(str(ITERATIONS))
    shoot("4-launch-form")
    browser.find_element(By.CSS_SELECTOR, "form.launch-form button[type=submit]").click()
    wait_until(browser, lambda driver: re.search(r"/runs/\d+/$", driver.current_url), "the new run's page")
    return RLRun.objects.get(name="browser-run")


def watch_progress_without_reload(browser, shoot) -> list[int]:
    """Mark the window, then collect the counter's values while the marker survives; returns them in order."""
    browser.execute_script("window.__noReload = 1;")
    seen: list[int] = []

    def counter_moved(driver):
        if driver.execute_script("return window.__noReload") != 1:
            return "reloaded"
        value = int(text_of(driver, COUNTER))
        if value and (not seen or value > seen[-1]) and value < ITERATIONS:
            seen.append(value)
            # The status JSON reads the run row, then the metric rows: the worker may add one in between.
            points = chart_points(driver)
            assert value <= points <= value + 2, f"the chart shows {points} points at iteration {value}"
        return len(seen) >= 2

    outcome = wait_until(browser, counter_moved, "two live updates of the iteration counter", timeout=90)
    assert outcome is True, f"the page reloaded during the run (counter values seen: {seen})"
    shoot("6-run-live")
    return seen


def test_a_user_uploads_prompts_launches_a_run_and_watches_it_fill_live(
        celery_worker_process, live_server, project, alice, browser, shoot, tmp_path):
    base_url = live_server.url
    log_in(browser, base_url, "alice", "alice-password")
    shoot("1-home")
    jsonl_path = tmp_path / "arith.jsonl"
    jsonl_path.write_text(PROMPTS_JSONL)

    prompt_set = upload_prompt_set(browser, base_url, jsonl_path, shoot)
    assert prompt_set.project == project and prompt_set.prompts.count() == 4
    assert "What is 12+30?" in browser.page_source

    run = launch_run_with_form(browser, base_url, prompt_set, shoot)
    assert (run.owner, run.prompt_set, run.total_iterations) == (alice, prompt_set, ITERATIONS)
    assert run.config["trainer_backend"] == "noop-test"
    shoot("5-run-queued")

    seen = watch_progress_without_reload(browser, shoot)
    assert seen == sorted(seen) and 0 < seen[0] < seen[-1] < ITERATIONS

    wait_until(browser, lambda driver: text_of(driver, "[data-status-badge]") == "Succeeded", "the run to succeed",
               timeout=120)
    wait_until(browser, lambda driver: chart_points(driver) == ITERATIONS, "the chart's final points")
    shoot("7-run-finished")
    assert browser.execute_script("return window.__noReload") == 1, "the page reloaded when the run finished"
    assert int(text_of(browser, COUNTER)) == ITERATIONS
    see_live_facts_table_and_no_stale_message(browser)
    run.refresh_from_db()
    assert run.status == JobStatus.SUCCEEDED and IterationMetric.objects.filter(run=run).count() == ITERATIONS

    browse_training_samples(browser, run, shoot)


def see_live_facts_table_and_no_stale_message(browser) -> None:
    """Parts rendered once at load follow the polls: metrics table, start/end/worker; "queued" message gone."""
    from selenium.webdriver.common.by import By

    newest = browser.find_elements(By.CSS_SELECTOR, "[data-field='metric-rows'] tr")
    assert len(newest) == 50 and newest[0].find_element(By.CSS_SELECTOR, "td").text == str(ITERATIONS)
    assert "the newest 50 of 300 rows" in text_of(browser, "[data-field='metrics-more']")
    for fact in ("started_at", "finished_at", "worker"):
        assert text_of(browser, f"[data-field='{fact}']") not in ("", "—"), f"{fact} was not refreshed"
    wait_until(browser, lambda driver: not driver.find_elements(By.CSS_SELECTOR, ".messages .message"),
               "the stale 'queued' message to fade")


def browse_training_samples(browser, run: RLRun, shoot) -> None:
    """Follow the run page's link to its sample browser: the worker's newest samples come first."""
    from selenium.webdriver.common.by import By

    browser.find_element(By.CSS_SELECTOR, f"main a[href$='/runs/{run.pk}/samples/']").click()
    wait_until(browser, lambda driver: driver.current_url.endswith(f"/runs/{run.pk}/samples/")
               and driver.execute_script("return document.readyState") == "complete", "the sample browser")
    shoot("8-training-samples")
    assert run.samples.exists(), "the worker stored no training samples"
    assert f"of iteration {ITERATIONS}" in browser.page_source

