"""The OpenAPI schema documents what each operation really answers: its body and its error status codes."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator

pytestmark = pytest.mark.django_db

REF = "#/components/schemas/"


@pytest.fixture(scope="module")
def schema(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        return SchemaGenerator().get_schema(request=None, public=True)


def answer(schema, method: str, path: str, code: str) -> dict:
    """The JSON schema of an operation's answer with this status code."""
    return schema["paths"][path][method]["responses"][code]["content"]["application/json"]["schema"]


def properties(schema, reference: dict) -> set[str]:
    return set(schema["components"]["schemas"][reference["$ref"].removeprefix(REF)]["properties"])


def test_adding_a_member_is_documented_as_answering_the_project(schema, api_for, alice, project, charlie):
    documented = answer(schema, "post", "/api/projects/{id}/members/", "200")
    assert documented == {"$ref": f"{REF}Project"}
    response = api_for(alice).post(f"/api/projects/{project.pk}/members/", {"username": "charlie"}, format="json")
    assert response.status_code == 200
    assert set(response.json()) == properties(schema, documented)


def test_every_operation_documents_its_error_codes(schema):
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            codes = set(operation["responses"])
            if path != "/api/token/":
                assert "403" in codes, (method, path)
            if "{" in path:
                assert "404" in codes, (method, path)
            if "requestBody" in operation:
                assert {"400", "415"} <= codes, (method, path)


def test_cancel_and_resume_take_no_body_and_answer_the_job_with_its_outcome(schema, api_for, alice, run):
    for path, component in [("/api/runs/{id}/cancel/", "RLRunCancel"), ("/api/runs/{id}/resume/", "RLRunResume"),
                            ("/api/evaluations/{id}/cancel/", "EvalRunCancel"),
                            ("/api/variants/{id}/cancel/", "Long2ShortVariantCancel")]:
        operation = schema["paths"][path]["post"]
        assert "requestBody" not in operation, path
        assert answer(schema, "post", path, "200") == {"$ref": f"{REF}{component}"}
        assert "409" in operation["responses"], path
    response = api_for(alice).post(f"/api/runs/{run.pk}/cancel/")
    assert response.status_code == 200 and response.json()["outcome"] == "cancelled"
    assert set(response.json()) == properties(schema, {"$ref": f"{REF}RLRunCancel"})


def test_the_audit_list_is_documented_as_a_plain_list(schema, api_for, alice, run, suite):
    from webapp.evals.models import EvalRun

    documented = answer(schema, "get", "/api/evaluations/{id}/audits/", "200")
    assert documented == {"type": "array", "items": {"$ref": f"{REF}GraderAudit"}}  # not paginated, no filters
    parameters = schema["paths"]["/api/evaluations/{id}/audits/"]["get"].get("parameters", [])
    assert [parameter["in"] for parameter in parameters] == ["path"]
    eval_run = EvalRun.objects.create(project=run.project, suite=suite, model="tiny", owner=alice)
    assert api_for(alice).get(f"/api/evaluations/{eval_run.pk}/audits/").json() == []


def test_uploads_and_imports_are_documented_as_created(schema):
    assert answer(schema, "post", "/api/prompt-sets/{id}/upload/", "201") == {"$ref": f"{REF}PromptUpload"}
    assert answer(schema, "post", "/api/prompt-sets/import/", "201") == {"$ref": f"{REF}PromptSetImport"}
    assert answer(schema, "post", "/api/token/", "429") == {"$ref": f"{REF}Error"}
