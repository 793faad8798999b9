"""/api/prompt-sets/: a set's name is unique in its project (sets and pending imports), refused on `name`; its
prompts are added by upload/, never by an edit."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from webapp.prompts.models import PromptSet

pytestmark = pytest.mark.django_db

TAKEN = "This project already has a prompt set named 'arith'."


def test_a_new_set_with_a_taken_name_is_refused_on_name(api_for, alice, project, prompt_set):
    response = api_for(alice).post("/api/prompt-sets/", {"project": project.pk, "name": "arith"}, format="json")
    assert response.status_code == 400
    assert response.json() == {"name": [TAKEN]}
    assert PromptSet.objects.filter(project=project).count() == 1


def test_renaming_a_set_to_a_taken_name_is_refused_on_name(api_for, alice, project, prompt_set):
    other = PromptSet.objects.create(project=project, name="other")
    response = api_for(alice).patch(f"/api/prompt-sets/{other.pk}/", {"name": "arith"}, format="json")
    assert response.status_code == 400
    assert response.json() == {"name": [TAKEN]}
    other.refresh_from_db()
    assert other.name == "other"


def test_a_set_keeps_its_own_name_in_an_edit(api_for, alice, prompt_set):
    response = api_for(alice).patch(f"/api/prompt-sets/{prompt_set.pk}/", {"name": "arith", "description": "d"},
                                    format="json")
    assert response.status_code == 200, response.json()
    prompt_set.refresh_from_db()
    assert (prompt_set.name, prompt_set.description) == ("arith", "d")


def test_a_new_set_named_as_a_pending_import_is_refused(api_for, alice, project):
    api = api_for(alice)
    queued = api.post("/api/prompt-sets/import/", {"project": project.pk, "name": "hubset", "config": {
        "dataset_id": "org/set", "problem_column": "q", "answer_column": "a"}}, format="json")
    assert queued.status_code == 201, queued.json()
    response = api.post("/api/prompt-sets/", {"project": project.pk, "name": "hubset"}, format="json")
    assert response.status_code == 400
    assert response.json() == {"name": ["An import into a prompt set named 'hubset' is already under way in this "
                                        "project."]}
    assert not PromptSet.objects.filter(name="hubset").exists()


@pytest.mark.parametrize("method", ["patch", "put"])
def test_an_edit_with_a_file_is_refused_pointing_to_upload(api_for, alice, project, prompt_set, method):
    upload = SimpleUploadedFile("more.jsonl", b'{"problem": "new", "answer": "1"}\n')
    body = {"name": "arith", "description": "d", "file": upload}
    response = getattr(api_for(alice), method)(f"/api/prompt-sets/{prompt_set.pk}/", body, format="multipart")
    assert response.status_code == 400
    assert response.json() == {"file": [f"a set's prompts are added by POST /api/prompt-sets/{prompt_set.pk}/upload/;"
                                        " PUT and PATCH change its name, description and source"]}
    prompt_set.refresh_from_db()
    assert prompt_set.description == "" and prompt_set.prompts.count() == 2
