"""Prompt sets imported from a dataset: the form, the queued job row, its status page, cancel and the REST API."""

from __future__ import annotations

import pytest
from django.urls import reverse

from common.knobs import config_to_dict, describe_knobs, parse_config
from evaluation.datasets.prompt_import import PromptImportConfig
from webapp.projects.models import Project
from webapp.prompts.models import PromptSet, PromptSetImport

pytestmark = pytest.mark.django_db


def import_data(**overrides) -> dict:
    """What the import form posts when left at its defaults, with a dataset and some fields changed."""
    data = {knob["name"]: "" if knob["default"] is None else str(knob["default"])
            for knob in describe_knobs(PromptImportConfig)}
    data.update(name="imported", description="", dataset_id="org/math-problems")
    data.update({name: str(value) for name, value in overrides.items()})
    return data


def queued_import(project, user, name="pending") -> PromptSetImport:
    config = config_to_dict(parse_config(PromptImportConfig, {"dataset_id": "org/data"}))
    return PromptSetImport.objects.create(project=project, name=name, config=config, owner=user)


def test_import_form_groups_dataset_and_column_mapping_with_defaults_and_help(client_for, alice, project):
    response = client_for(alice).get(reverse("prompt-set-import"))
    assert response.status_code == 200
    form = response.context["form"]
    groups = {title: [field.name for field in fields] for title, fields in form.knob_fieldsets()}
    assert groups == {
        "Dataset": ["dataset_id", "config_name", "split", "limit"],
        "Column mapping": ["problem_column", "answer_column", "test_cases_column", "image_column", "domain_column",
                           "difficulty_column", "tags_column", "pass_rate_column"],
    }
    assert (form["split"].value(), form["problem_column"].value(), form["answer_column"].value()) == \
        ("train", "problem", "answer")
    assert form["tags_column"].value() is None and form.fields["tags_column"].required is False
    content = response.content.decode()
    assert "<legend>Column mapping</legend>" in content
    assert "Hub dataset id (owner/name), or the absolute path of a local folder or data file" in content


def test_import_queues_a_job_with_the_resolved_config_and_shows_its_page(client_for, bob, project):
    data = import_data(problem_column="question", answer_column="solution", difficulty_column="level", limit=50,
                       config_name="main")
    response = client_for(bob).post(reverse("prompt-set-import"), data)
    job = PromptSetImport.objects.get()
    assert response.status_code == 302
    assert response.url == reverse("prompt-set-import-detail", kwargs={"pk": job.pk})
    assert (job.status, job.project, job.owner, job.name, job.prompt_set) == ("queued", project, bob, "imported", None)
    assert job.config == config_to_dict(parse_config(PromptImportConfig, {
        "dataset_id": "org/math-problems", "config_name": "main", "problem_column": "question",
        "answer_column": "solution", "difficulty_column": "level", "limit": 50}))
    assert job.config["tags_column"] is None and job.config["split"] == "train"
    assert not PromptSet.objects.filter(name="imported").exists()


def test_import_refuses_a_mapping_without_answer_or_test_cases_naming_the_field(client_for, alice, project):
    response = client_for(alice).post(reverse("prompt-set-import"), import_data(answer_column=""))
    assert response.status_code == 200
    assert response.context["form"].errors["answer_column"] == [
        "map a column to answer or to test cases, so responses can be verified"]
    assert b"so responses can be verified" in response.content
    assert not PromptSetImport.objects.exists()


def test_import_accepts_test_cases_instead_of_an_answer(client_for, alice, project):
    response = client_for(alice).post(reverse("prompt-set-import"),
                                      import_data(answer_column="", test_cases_column="tests"))
    assert response.status_code == 302
    job = PromptSetImport.objects.get()
    assert (job.config["answer_column"], job.config["test_cases_column"]) == (None, "tests")


@pytest.mark.parametrize("field, value, reason", [
    ("dataset_id", "", "This field is required."),
    ("problem_column", "", "This field is required."),
    ("limit", "0", "must be at least 1 and at most 1000000, not 0"),
    ("split", "  ", "This field is required."),
])
def test_import_refuses_a_bad_field_naming_it(client_for, alice, project, field, value, reason):
    response = client_for(alice).post(reverse("prompt-set-import"), import_data(**{field: value}))
    assert response.status_code == 200
    assert response.context["form"].errors[field] == [reason]
    assert not PromptSetImport.objects.exists()


def test_import_refuses_a_name_used_by_a_set_or_a_pending_import(client_for, alice, project, prompt_set):
    queued_import(project, alice, name="pending")
    client = client_for(alice)
    for name, reason in (("arith", "already has a prompt set named 'arith'"),
                         ("pending", "import into a prompt set named 'pending' is already under way")):
        response = client.post(reverse("prompt-set-import"), import_data(name=name))
        assert reason in response.context["form"].errors["name"][0]
    assert PromptSetImport.objects.count() == 1


def test_import_page_reloads_while_queued_and_links_the_set_once_done(client_for, bob, alice, project, prompt_set):
    job = queued_import(project, alice)
    url = reverse("prompt-set-import-detail", kwargs={"pk": job.pk})
    content = client_for(bob).get(url).content.decode()
    assert '<meta http-equiv="refresh" content="3">' in content
    assert "Cancel import" in content and "org/data" in content
    PromptSetImport.objects.filter(pk=job.pk).update(status="succeeded", prompt_set=prompt_set)
    content = client_for(bob).get(url).content.decode()
    assert 'http-equiv="refresh"' not in content
    assert f'href="{reverse("prompt-set-detail", kwargs={"pk": prompt_set.pk})}"' in content


def test_import_page_shows_the_error_of_a_failed_import(client_for, alice, project):
    job = queued_import(project, alice)
    error = "PromptImportError: org/data (split train) row 3: 'pass_rate' must be between 0 and 1"
    PromptSetImport.objects.filter(pk=job.pk).update(status="failed", error=error)
    content = client_for(alice).get(reverse("prompt-set-import-detail", kwargs={"pk": job.pk})).content.decode()
    assert "row 3: &#x27;pass_rate&#x27; must be between 0 and 1" in content


def test_outsider_gets_404_on_the_import_page_and_cancel(client_for, charlie, alice, project):
    job = queued_import(project, alice)
    client = client_for(charlie)
    assert client.get(reverse("prompt-set-import-detail", kwargs={"pk": job.pk})).status_code == 404
    assert client.post(reverse("prompt-set-import-cancel", kwargs={"pk": job.pk})).status_code == 404
    job.refresh_from_db()
    assert job.status == "queued"


def test_member_cancels_a_queued_import(client_for, bob, alice, project):
    job = queued_import(project, alice)
    response = client_for(bob).post(reverse("prompt-set-import-cancel", kwargs={"pk": job.pk}))
    assert response.status_code == 302
    job.refresh_from_db()
    assert (job.status, job.cancel_requested) == ("cancelled", True)


def test_import_without_a_project_shows_the_hint_and_queues_nothing(client_for, charlie):
    response = client_for(charlie).post(reverse("prompt-set-import"), import_data())
    assert response.status_code == 200 and response.context["form"] is None
    assert not PromptSetImport.objects.exists()


def test_prompt_set_list_links_the_import_form(client_for, alice, project):
    assert reverse("prompt-set-import").encode() in client_for(alice).get(reverse("prompt-set-list")).content


def test_api_import_queues_a_job_and_reports_its_status(api_for, bob, project):
    api = api_for(bob)
    body = {"project": project.pk, "name": "hub", "config": {"dataset_id": "org/data", "problem_column": "q",
                                                             "answer_column": "a", "limit": 10}}
    response = api.post("/api/prompt-sets/import/", body, format="json")
    assert response.status_code == 201, response.content
    job = PromptSetImport.objects.get(pk=response.data["id"])
    assert (job.status, job.owner, job.name) == ("queued", bob, "hub")
    assert job.config == config_to_dict(parse_config(PromptImportConfig, body["config"]))
    status = api.get(f"/api/prompt-sets/imports/{job.pk}/")
    assert status.status_code == 200
    assert (status.data["status"], status.data["prompt_set"], status.data["config"]["problem_column"]) == \
        ("queued", None, "q")


def test_api_import_refuses_a_bad_config_naming_each_field(api_for, alice, project):
    body = {"project": project.pk, "name": "hub",
            "config": {"dataset_id": "org/data", "answer_column": None, "limit": -1, "colour": "red"}}
    response = api_for(alice).post("/api/prompt-sets/import/", body, format="json")
    assert response.status_code == 400
    assert response.data["config"] == {"colour": ["unknown setting"],
                                       "limit": ["must be at least 1 and at most 1000000, not -1"]}
    assert not PromptSetImport.objects.exists()


def test_api_import_refuses_a_project_the_user_is_not_in(api_for, charlie, project):
    body = {"project": project.pk, "name": "hub", "config": {"dataset_id": "org/data"}}
    response = api_for(charlie).post("/api/prompt-sets/import/", body, format="json")
    assert response.status_code == 400 and "project" in response.data
    assert not PromptSetImport.objects.exists()


def test_api_import_status_is_404_for_an_outsider(api_for, charlie, alice, project):
    job = queued_import(project, alice)
    assert api_for(charlie).get(f"/api/prompt-sets/imports/{job.pk}/").status_code == 404
    assert api_for(alice).get(f"/api/prompt-sets/imports/{job.pk}/").status_code == 200


def test_other_projects_imports_are_not_listed_on_the_import_page(client_for, alice, charlie, project):
    other = Project.objects.create(name="Other", slug="other")
    other.add_member(charlie)
    queued_import(other, charlie, name="foreign")
    mine = queued_import(project, alice, name="mine")
    recent = list(client_for(alice).get(reverse("prompt-set-import")).context["recent_imports"])
    assert recent == [mine]
