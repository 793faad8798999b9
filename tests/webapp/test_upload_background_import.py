"""Uploads too large to import inside the request go to a worker: the request only stores the file (202)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from common.path_rules import PathRefused
from webapp.jobs import JobStatus, JobTakenOver
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
    job.status, job.worker = JobStatus.RUNNING, "stalled-host:1"  # the first claim, which recovery took back
    assert run_import(job.pk).status == JobStatus.SUCCEEDED
    # the stalled first worker wakes up and runs the append again from the file it had read
    Path(job.upload_file).write_bytes(stored)
    from webapp.prompts.services import import_uploaded_file

    with pytest.raises(JobTakenOver):
        import_uploaded_file(job, progress=lambda line: None)
    assert prompt_set.prompts.count() == 32


def queued_upload(api_for, alice, project) -> PromptSetImport:
    response = api_for(alice).post("/api/prompt-sets/", {"project": project.pk, "name": "big", "file": jsonl(50)},
                                   format="multipart")
    job = PromptSetImport.objects.get(pk=response.json()["id"])
    assert Path(job.upload_file).exists()
    return job


def test_cancelling_a_queued_upload_deletes_its_stored_file(api_for, client_for, alice, project):
    job = queued_upload(api_for, alice, project)
    response = client_for(alice).post(reverse("prompt-set-import-cancel", kwargs={"pk": job.pk}))
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED and not Path(job.upload_file).exists()


def test_an_upload_whose_worker_died_loses_its_file_when_cancelled_or_recovered(api_for, alice, project):
    from datetime import timedelta

    from django.utils import timezone

    long_ago = timezone.now() - timedelta(hours=1)
    for cancel in ("at once", "by the recovery"):
        job = queued_upload(api_for, alice, project)
        PromptSetImport.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, worker="dead-host:1",
                                                         heartbeat_at=long_ago, cancel_requested=cancel != "at once")
        if cancel == "at once":
            assert job.request_cancel() == "cancelled"
        else:
            assert PromptSetImport.recover_stale(send=pytest.fail) == []
        job.refresh_from_db()
        assert job.status == JobStatus.CANCELLED and not Path(job.upload_file).exists(), cancel


def test_a_cancel_never_deletes_a_file_outside_the_projects_uploads_folder(api_for, alice, project, tmp_path):
    job = queued_upload(api_for, alice, project)
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text("{}\n")
    PromptSetImport.objects.filter(pk=job.pk).update(upload_file=str(elsewhere))
    job.refresh_from_db()
    assert job.request_cancel() == "cancelled" and elsewhere.exists()


def test_a_running_upload_import_cancelled_while_it_parses_stops_before_writing(api_for, alice, project,
                                                                                monkeypatch):
    from webapp.prompts import services

    job = queued_upload(api_for, alice, project)
    parse = services.parse_prompt_file

    def parse_while_the_user_cancels(content, file_format):
        assert PromptSetImport.objects.get(pk=job.pk).request_cancel() == "cancel requested"
        return parse(content, file_format)

    monkeypatch.setattr(services, "parse_prompt_file", parse_while_the_user_cancels)
    job = run_import(job.pk)
    assert job.status == JobStatus.CANCELLED and "cancelled by request" in job.log
    assert not PromptSet.objects.filter(name="big").exists() and not Path(job.upload_file).exists()


def test_the_recovery_deletes_old_uploads_that_no_import_reads(api_for, alice, project):
    import os
    import time

    from webapp.prompts.services import UNCLAIMED_UPLOAD_GRACE_SECONDS
    from workers.recovery import remove_stale_uploads

    waiting = Path(queued_upload(api_for, alice, project).upload_file)
    forgotten = waiting.with_name("0123456789abcdef.jsonl")  # a web process died before queueing its import
    forgotten.write_text("{}\n")
    just_written = waiting.with_name("fedcba9876543210.jsonl")  # its request is committing the import right now
    just_written.write_text("{}\n")
    old = time.time() - UNCLAIMED_UPLOAD_GRACE_SECONDS - 1
    for path in (waiting, forgotten):
        os.utime(path, (old, old))
    remove_stale_uploads()
    assert waiting.exists() and just_written.exists() and not forgotten.exists()
