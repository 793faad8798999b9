"""Schemathesis against the live OpenAPI schema: every operation, generated valid and invalid inputs, logged in.

Every answer must be no server error, have a documented status code, and match that code's documented body.
Each operation gets API_FUZZ_EXAMPLES examples (default 25) per strategy: positive and negative generation, each
also on a row that exists, and one valid body for writes (so creates and updates reach their 2xx answers).
API_FUZZ_OPERATIONS (a substring of "POST /api/runs/{id}/resume/") narrows the run. -s prints the counts:
    .venv/bin/python -m pytest -s -m slow tests/webapp/test_api_fuzz.py
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
from collections import Counter, defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field

import hypothesis
import pytest
import schemathesis
from django.core.signals import got_request_exception, request_finished, request_started
from django.db import close_old_connections, transaction
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance

from webapp.evals.models import BenchmarkResult, EvalRun, SampleResult
from webapp.long2short.models import Long2ShortRecord, Long2ShortVariant
from webapp.prompts.models import PromptSetImport
from webapp.runs.models import Checkpoint, IterationMetric, RLRun, TrainingSample

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance]
MODES = [schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE]
EXAMPLES = int(os.environ.get("API_FUZZ_EXAMPLES", "25"))
ONLY = os.environ.get("API_FUZZ_OPERATIONS", "")


@dataclass
class FuzzReport:
    """What the run saw: requests and status codes per operation, and each distinct failure once."""

    answers: dict = field(default_factory=lambda: defaultdict(Counter))  # operation label -> status -> count
    failures: dict = field(default_factory=dict)  # (operation, check, status, title) -> [count, detail, curl]

    def record_failure(self, label: str, failure, status: int, detail: str, curl: str) -> None:
        key = (label, type(failure).__name__, status, failure.title)
        self.failures.setdefault(key, [0, detail or failure.message, curl])[0] += 1

    def summary(self) -> str:
        statuses = sum(self.answers.values(), Counter())
        server_errors = sum(count for code, count in statuses.items() if code >= 500)
        never_2xx = [label for label, codes in self.answers.items() if not any(200 <= code < 300 for code in codes)]
        lines = [f"{len(self.answers)} operations, {statuses.total()} requests; status codes "
                 + ", ".join(f"{code}: {count}" for code, count in sorted(statuses.items())),
                 f"{server_errors} server errors; {len(self.failures)} distinct failures",
                 f"operations that never answered 2xx: {', '.join(never_2xx) or 'none'}"]
        for (label, kind, status, title), (count, detail, curl) in sorted(self.failures.items()):
            lines.append(f"- {label} -> {status}: {title} [{kind}] x{count}\n    {detail.strip()[:800]}\n    {curl}")
        return "\n".join(lines)


@pytest.fixture
def known_rows(project, prompt_set, suite, run, alice, tmp_path):
    """One row of every model the API serves, in alice's project, so detail operations also reach real rows; a
    succeeded evaluation for audits and a failed run for resume."""
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    checkpoint = Checkpoint.objects.create(project=project, iteration=0, path=str(tmp_path / "model"))
    worker_checkpoint = Checkpoint.objects.create(project=project, run=run, iteration=1, path="/tmp/ckpt")
    eval_run = EvalRun.objects.create(project=project, suite=suite, checkpoint=worker_checkpoint, owner=alice)
    audited = EvalRun.objects.create(project=project, suite=suite, checkpoint=worker_checkpoint, owner=alice,
                                     status="succeeded")
    variant = Long2ShortVariant.objects.create(project=project, name="merge", parent_run=run, method="merge",
                                               owner=alice, parameters={"other_checkpoint_ids": str(checkpoint.pk)})
    return {
        "projects": project, "prompt-sets": prompt_set, "prompts": prompt_set.prompts.first(), "runs": run,
        "iteration-metrics": IterationMetric.objects.create(run=run, iteration=1, train_accuracy=0.5,
                                                            mean_response_length=10, p95_response_length=20),
        "training-samples": TrainingSample.objects.create(run=run, iteration=1, prompt_id="p1", problem="1+1?",
                                                          response="2", reward=1.0, correct=True,
                                                          response_tokens=1),
        "checkpoints": checkpoint, "suites": suite, "evaluations": eval_run, "audits": audited,
        "resume": RLRun.objects.create(project=project, name="failed", prompt_set=prompt_set, config=run.config,
                                       owner=alice, status="failed"),
        "benchmark-results": BenchmarkResult.objects.create(eval_run=audited, benchmark="math500", score=0.5),
        "samples": SampleResult.objects.create(eval_run=audited, benchmark="math500", problem_id="p1",
                                               response_tokens=12, correct=True),
        "variants": variant,
        "variant-records": Long2ShortRecord.objects.create(variant=variant, kind="pair", prompt_id="p1",
                                                           problem="1+1?", chosen="2", chosen_tokens=1, rejected="3",
                                                           rejected_tokens=1),
        "imports": PromptSetImport.objects.create(project=project, name="imported", owner=alice,
                                                  config={"dataset_id": "x/y"}),
    }


@pytest.fixture
def valid_bodies(known_rows, charlie, alice) -> dict[str, dict]:
    """One valid body per write operation ("POST /api/runs/"); a PUT sends back what a GET of the row shows."""
    project, prompt_set = known_rows["projects"].pk, known_rows["prompt-sets"].pk
    checkpoint = known_rows["checkpoints"].pk
    bodies = {
        "POST /api/projects/": {"name": "Other", "slug": "other"},
        "POST /api/projects/{id}/members/": {"username": charlie.username, "role": "member"},
        "POST /api/prompt-sets/": {"project": project, "name": "more"},
        "POST /api/prompt-sets/{id}/upload/": {"file": b'{"problem": "What is 3+3?", "answer": "6"}\n',
                                               "format": "jsonl"},
        "POST /api/prompt-sets/import/": {"project": project, "name": "imported-2",
                                          "config": {"dataset_id": "org/name"}},
        "POST /api/prompts/": {"prompt_set": prompt_set, "problem": "What is 2+2?", "answer": "4"},
        "POST /api/runs/": {"project": project, "name": "run-2", "prompt_set": prompt_set},
        "POST /api/checkpoints/": {"project": project, "path": known_rows["checkpoints"].path, "iteration": 5},
        "POST /api/suites/": {"project": project, "name": "other", "benchmarks": [{"benchmark": "math500"}]},
        "POST /api/evaluations/": {"project": project, "suite": known_rows["suites"].pk, "checkpoint": checkpoint},
        "POST /api/evaluations/{id}/audits/": {"extraction_policy": "boxed"},
        "POST /api/variants/": {"project": project, "name": "merge-2", "parent_run": known_rows["runs"].pk,
                                "method": "merge", "parameters": {"other_checkpoint_ids": str(checkpoint)}},
        "POST /api/token/": {"username": alice.username, "password": "alice-password"},
    }
    api = APIClient()
    api.force_authenticate(alice)
    for collection in ("projects", "prompt-sets", "prompts", "runs", "checkpoints", "suites", "evaluations",
                       "variants"):
        bodies[f"PUT /api/{collection}/{{id}}/"] = api.get(f"/api/{collection}/{known_rows[collection].pk}/").json()
    return bodies


@contextmanager
def in_process_requests(server_errors: list):
    """Requests to the WSGI app inside the test's transaction: keep the connection open between requests (as
    Django's test client does), note each request's unhandled exception in server_errors, quiet the warnings."""

    def note_exception(**kwargs):
        server_errors.append("".join(traceback.format_exception(*sys.exc_info())[-3:]))

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    got_request_exception.connect(note_exception)
    logging.disable(logging.WARNING)  # a 4xx is logged as a warning: thousands here
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)
        got_request_exception.disconnect(note_exception)
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


class RollBack(Exception):
    """Raised to undo a request's writes, so every example starts from the same rows."""


def send(case, headers: dict):
    try:
        with transaction.atomic():
            response = case.call(headers=headers)
            raise RollBack
    except RollBack:
        return response


def known_path_parameters(operation, rows: dict) -> dict:
    """{"id": ...} of the known row of the operation's collection or action ({"import_id": ...} for imports)."""
    path = operation.path
    if "{import_id}" in path:
        return {"import_id": rows["imports"].pk}
    action = path.rstrip("/").split("/")[-1]
    collection = action if action in ("audits", "resume") else path.split("/")[2]
    if "{id}" in path and collection in rows:
        return {"id": rows[collection].pk}
    return {}


def strategies(operation, label: str, rows: dict, bodies: dict) -> list:
    known = known_path_parameters(operation, rows)
    found = [operation.as_strategy(generation_mode=mode) for mode in MODES]
    if known:
        found += [operation.as_strategy(generation_mode=mode, path_parameters=known) for mode in MODES]
    if label in bodies:
        media_type = "multipart/form-data" if label.endswith("/upload/") else "application/json"
        found.append(operation.as_strategy(path_parameters=known or None, body=bodies[label], media_type=media_type))
    return found


def fuzz_operation(operation, headers: dict, rows: dict, bodies: dict, report: FuzzReport,
                   server_errors: list) -> None:
    label = f"{operation.method.upper()} {operation.path}"
    choices = strategies(operation, label, rows, bodies)

    @hypothesis.settings(max_examples=EXAMPLES * len(choices), database=None, deadline=None, derandomize=True,
                         suppress_health_check=list(hypothesis.HealthCheck),
                         phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate])
    @hypothesis.given(case=st.one_of(choices))
    def run(case):
        server_errors.clear()
        response = send(case, headers)
        report.answers[label][response.status_code] += 1
        try:
            case.validate_response(response, checks=CHECKS, headers=headers)
        except FailureGroup as group:
            for failure in group.exceptions:
                report.record_failure(label, failure, response.status_code, "\n".join(server_errors),
                                      case.as_curl_command(headers=headers))

    run()


def test_every_operation_answers_as_documented(alice, known_rows, valid_bodies):
    from webapp.wsgi import application

    headers = {"Authorization": f"Token {Token.objects.create(user=alice).key}"}
    report, server_errors = FuzzReport(), []
    with in_process_requests(server_errors):
        schema = schemathesis.openapi.from_wsgi("/api/schema/", application, headers=headers)
        for result in schema.get_all_operations():
            operation = result.ok()
            label = f"{operation.method.upper()} {operation.path}"
            if ONLY in label:
                fuzz_operation(operation, headers, known_rows, valid_bodies, report, server_errors)
    print("\n" + report.summary())
    assert not report.failures, report.summary()
