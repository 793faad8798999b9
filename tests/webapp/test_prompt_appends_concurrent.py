"""Appends to one prompt set at once (two uploads, uploads and single prompts) all land, in turn (Postgres)."""

from __future__ import annotations

import json
import threading

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from webapp.prompts.models import Prompt

pytestmark = pytest.mark.django_db(transaction=True)

LINES = 400


def jsonl_upload(tag: str) -> SimpleUploadedFile:
    lines = "".join(json.dumps({"problem": f"{tag} {i}", "answer": str(i)}) + "\n" for i in range(LINES))
    return SimpleUploadedFile(f"{tag}.jsonl", lines.encode(), content_type="application/jsonl")


def at_once(*requests) -> list:
    """Run each request in its own thread (its own database connection), started together."""
    barrier = threading.Barrier(len(requests))
    responses: list = [None] * len(requests)

    def call(index, request):
        try:
            barrier.wait()
            responses[index] = request()
        finally:
            connection.close()

    threads = [threading.Thread(target=call, args=(i, request)) for i, request in enumerate(requests)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return responses


def test_two_uploads_and_single_prompts_at_once_all_land_with_distinct_positions(api_for, alice, bob, prompt_set):
    url = f"/api/prompt-sets/{prompt_set.pk}/upload/"
    single = {"prompt_set": prompt_set.pk, "problem": "one more", "answer": "1"}
    for round_ in range(3):
        responses = at_once(
            lambda: api_for(alice).post(url, {"file": jsonl_upload(f"a{round_}")}, format="multipart"),
            lambda: api_for(bob).post(url, {"file": jsonl_upload(f"b{round_}")}, format="multipart"),
            lambda: api_for(alice).post("/api/prompts/", single, format="json"),
            lambda: api_for(bob).post("/api/prompts/", single, format="json"),
        )
        assert [response.status_code for response in responses] == [201, 201, 201, 201]
    positions = list(Prompt.objects.filter(prompt_set=prompt_set).order_by("position")
                     .values_list("position", flat=True))
    assert positions == list(range(1, 2 + 3 * (2 * LINES + 2) + 1))
    for tag in ("a0", "b1", "a2"):  # each upload's lines stay together and in file order
        rows = list(Prompt.objects.filter(prompt_set=prompt_set, problem__startswith=f"{tag} ")
                    .order_by("position").values_list("problem", "position"))
        assert [problem for problem, _ in rows] == [f"{tag} {i}" for i in range(LINES)]
        assert rows[-1][1] - rows[0][1] == LINES - 1
