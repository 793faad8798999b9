"""Uploads too large to import inside the request go to a worker: the request only stores the file (202)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from common.path_rules import PathRefused
from webapp.jobs import JobStatus
from webapp.prompts.models import PromptSet, PromptSetImport
from workers.jobs import execute_job
from workers.path_checks import check_import_paths
from workers.prompt_import_job import run_prompt_import_job

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def small_threshold(settings, tmp_path):
    settings.UPLOAD_IMPORT_IN_REQUEST_BYTES = 200
    settings.UPLOADS_DIR = tmp_path / "uploads"


def jsonl(count: int, bad_line: int | None = None, name: str = "big.jsonl") -> SimpleUploadedFile:
    lines = [json.dumps({"problem": f"What is {i} + 1?", "answer": str(i + 1)}) for i in range(count)]
    if bad_line is not None:
        lines[bad_line - 1] = '{"problem": ""}'
    return SimpleUploadedFile(name, ("\n".join(lines) + "\n").encode())


def run_import(job_id: int) -> PromptSetImport:
    execute_job("prompt_import", job_id, run_prompt_import_job)
    return PromptSetImport.objects.get(pk=job_id)


def test_a_large_new_set_is_stored_queued_and_imported_by_the_worker(api_for, alice, project, settings):
    response = api_for(alice).post("/api/prompt-sets/", {"project": project.pk, "name": "big", "file": jsonl(50)},
                                   format="multipart")
    assert response.status_code == 202 and response.json()["status"] == JobStatus.QUEUED
    job = PromptSetImport.objects.get(pk=response.json()["id"])
    stored = Path(job.upload_file)
    assert stored.parent == settings.UPLOADS_DIR / f"project-{project.pk}" and stored.exists()
    assert not PromptSet.objects.filter(name="big").exists()  # nothing imported inside the request
    job = run_import(job.pk)
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert [p.answer for p in job.prompt_set.prompts.order_by("position")][:3] == ["1", "2", "3"]
    assert job.prompt_set.prompts.count() == 50 and job.prompt_set.name == "big"
    assert not stored.exists() and "50 prompts valid" in job.log
    status = api_for(alice).get(f"/api/prompt-sets/imports/{job.pk}/").json()
    assert (status["status"], status["prompt_set"]) == ("succeeded", job.prompt_set.pk)


def test_a_large_append_is_appended_by_the_worker_after_the_sets_prompts(api_for, alice, prompt_set):
    response = api_for(alice).post(f"/api/prompt-sets/{prompt_set.pk}/upload/", {"file": jsonl(30)},
                                   format="multipart")
    assert response.status_code == 202
    assert prompt_set.prompts.count() == 2
    job = run_import(response.json()["id"])
    assert job.status == JobStatus.SUCCEEDED and job.prompt_set == prompt_set
    assert list(prompt_set.prompts.order_by("position").values_list("position", flat=True)) == list(range(1, 33))


def test_a_bad_line_in_a_large_file_fails_the_job_naming_it_and_writes_nothing(api_for, alice, project):
    response = api_for(alice).post("/api/prompt-sets/", {"project": project.pk, "name": "bad",
                                                         "file": jsonl(40, bad_line=17)}, format="multipart")
    job = run_import(response.json()["id"])
    assert job.status == JobStatus.FAILED
    assert job.error == "PromptFileError: line 17: 'problem' is missing or empty"
    assert not PromptSet.objects.filter(name="bad").exists() and not Path(job.upload_file).exists()


def test_a_small_file_is_still_imported_inside_the_request(api_for, alice, project):
    response = api_for(alice).post("/api/prompt-sets/", {"project": project.pk, "name": "small",
                                                         "file": jsonl(2)}, format="multipart")
    assert response.status_code == 201 and response.json()["prompt_count"] == 2


def test_the_page_queues_a_large_upload_and_shows_its_import(client_for, alice, project):
    response = client_for(alice).post(reverse("prompt-set-upload"), {"name": "paged", "description": "",
                                                                     "file": jsonl(40)})
    job = PromptSetImport.objects.get(name="paged")
    assert response.status_code == 302 and response.url == reverse("prompt-set-import-detail", kwargs={"pk": job.pk})
    page = client_for(alice).get(response.url).content.decode()
    assert "big.jsonl" in page and "a new set" in page


def test_the_worker_refuses_an_upload_path_outside_the_projects_folder(api_for, alice, project, tmp_path):
    response = api_for(alice).post("/api/prompt-sets/", {"project": project.pk, "name": "moved",
                                                         "file": jsonl(40)}, format="multipart")
    job = PromptSetImport.objects.get(pk=response.json()["id"])
    job.upload_file = str(tmp_path / "elsewhere.jsonl")
    with pytest.raises(PathRefused, match="not in this project's uploads folder"):
        check_import_paths(job)


def test_a_second_attempt_of_an_append_does_not_append_again(api_for, alice, prompt_set):
    response = api_for(alice).post(f"/api/prompt-sets/{prompt_set.pk}/upload/", {"file": jsonl(30)},
                                   format="multipart")
    job = PromptSetImport.objects.get(pk=response.json()["id"])
    stored = Path(job.upload_file).read_bytes()
    assert run_import(job.pk).status == JobStatus.SUCCEEDED
    # a stalled first worker wakes up and runs the append again from the file it had read
    Path(job.upload_file).write_bytes(stored)
    from webapp.prompts.services import import_uploaded_file

    assert import_uploaded_file(job, progress=lambda line: None) == prompt_set
    assert prompt_set.prompts.count() == 32 and not Path(job.upload_file).exists()
