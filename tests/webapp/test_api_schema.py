"""The OpenAPI schema validates and every listed endpoint answers a GET without a server error."""

from __future__ import annotations

import re

import pytest
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.validation import validate_schema

pytestmark = pytest.mark.django_db


def test_the_schema_validates_against_openapi():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    validate_schema(schema)
    assert "/api/runs/{id}/cancel/" in schema["paths"]


def test_the_schema_is_served(api_for, alice):
    response = api_for(alice).get("/api/schema/")
    assert response.status_code == 200
    assert b"openapi" in response.content


def test_every_listed_endpoint_answers_a_get(api_for, alice, run, suite):
    from webapp.evals.models import EvalRun
    from webapp.runs.models import Checkpoint

    checkpoint = Checkpoint.objects.create(project=run.project, run=run, iteration=1, path="/tmp/c")
    EvalRun.objects.create(project=run.project, suite=suite, checkpoint=checkpoint)
    schema = SchemaGenerator().get_schema(request=None, public=True)
    api = api_for(alice)
    checked = 0
    for path, operations in schema["paths"].items():
        if "get" not in operations:
            continue
        url = re.sub(r"\{id\}", lambda _: str(first_id_for(api, path)), path)
        response = api.get(url)
        assert response.status_code < 500, (url, response.status_code)
        assert response.status_code in (200, 404), url
        checked += 1
    assert checked >= 20


def first_id_for(api, path: str) -> int:
    """The id of the first visible row of a detail path's collection (or 1 when empty)."""
    collection = path.split("{id}")[0]
    results = api.get(collection).json().get("results", [])
    return results[0]["id"] if results else 1


def test_the_browsable_api_renders(client_for, alice):
    response = client_for(alice).get("/api/runs/", HTTP_ACCEPT="text/html")
    assert response.status_code == 200
    assert b"<html" in response.content and b"Rl Run List" in response.content
