"""Prompt-set imports from local files (issue 17): only under MIRRORLAB_IMPORT_ROOTS, never the app's own files or
its data folder (another project's uploads); the API and the page form refuse alike, in the same words whether the
file exists or not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.urls import reverse

from tests.webapp.path_support import same_words
from tests.webapp.test_pages_prompt_import import import_data
from webapp.prompts.models import PromptSetImport

pytestmark = pytest.mark.django_db

SETTINGS_FILE = str(Path(__file__).resolve().parents[2] / "webapp" / "settings.py")  # the app's own configuration
MISSING_FILE = SETTINGS_FILE.replace("settings.py", "no_such_settings.py")


@pytest.fixture
def import_root(settings, tmp_path):
    """An import root holding a dataset, and the app's media folder inside the same root (another project's
    uploaded file in it)."""
    settings.IMPORT_ROOTS = [str(tmp_path)]
    settings.MEDIA_ROOT = tmp_path / "media"
    upload = settings.MEDIA_ROOT / "uploads" / "secret-project" / "prompts.jsonl"
    upload.parent.mkdir(parents=True)
    upload.write_text(json.dumps({"problem": "secret?", "answer": "1"}) + "\n")
    (tmp_path / "datasets").mkdir()
    (tmp_path / "datasets" / "train.jsonl").write_text(json.dumps({"problem": "1+1?", "answer": "2"}) + "\n")
    return tmp_path


def post_import(api, project, dataset_id):
    return api.post("/api/prompt-sets/import/", {"project": project.pk, "name": "imported",
                                                 "config": {"dataset_id": dataset_id}}, format="json")


def refusal(response) -> str:
    assert response.status_code == 400, response.json()
    assert list(response.json()) == ["config"] and list(response.json()["config"]) == ["dataset_id"]
    return response.json()["config"]["dataset_id"][0]


def test_the_apps_own_settings_file_is_not_imported(api_for, bob, project):
    api = api_for(bob)
    reason = refusal(post_import(api, project, SETTINGS_FILE))
    missing = refusal(post_import(api, project, MISSING_FILE))
    assert reason.startswith(f"'{SETTINGS_FILE}' is not a path this project may use: give a hub dataset id "
                             f"(org/name), or an absolute path under MIRRORLAB_IMPORT_ROOTS")
    assert same_words(reason, SETTINGS_FILE, missing, MISSING_FILE)
    assert not PromptSetImport.objects.exists()


def test_another_projects_upload_is_not_imported_even_under_an_import_root(api_for, bob, project, import_root):
    upload = import_root / "media" / "uploads" / "secret-project" / "prompts.jsonl"
    assert refusal(post_import(api_for(bob), project, str(upload))).startswith(f"'{upload}' is not a path")
    assert not PromptSetImport.objects.exists()


@pytest.mark.parametrize("dataset_id", ["/etc/passwd", "./datasets/train.jsonl", "~/data.jsonl"])
def test_paths_outside_the_import_roots_are_refused(api_for, bob, project, import_root, dataset_id):
    assert refusal(post_import(api_for(bob), project, dataset_id)).startswith(f"'{dataset_id}' is not ")
    assert not PromptSetImport.objects.exists()


def test_a_file_under_an_import_root_is_queued_with_its_resolved_path(api_for, bob, project, import_root):
    response = post_import(api_for(bob), project, f"{import_root}/media/../datasets/train.jsonl")
    assert response.status_code == 201, response.json()
    assert PromptSetImport.objects.get().config["dataset_id"] == str(import_root / "datasets" / "train.jsonl")


def test_without_import_roots_only_hub_ids_are_imported(api_for, bob, project, settings, tmp_path):
    settings.IMPORT_ROOTS = []
    assert refusal(post_import(api_for(bob), project, str(tmp_path))).endswith("under MIRRORLAB_IMPORT_ROOTS "
                                                                               "(none set)")
    assert post_import(api_for(bob), project, "org/math-problems").status_code == 201


def test_the_import_form_refuses_the_apps_settings_file(client_for, bob, project):
    response = client_for(bob).post(reverse("prompt-set-import"), import_data(dataset_id=SETTINGS_FILE))
    assert response.status_code == 200
    assert response.context["form"].errors["dataset_id"][0].startswith(f"'{SETTINGS_FILE}' is not a path")
    assert not PromptSetImport.objects.exists()
