"""Bad or oversized input is refused as a 4xx naming where, before any work: never a server error."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from webapp.evals.models import BenchmarkSuite
from webapp.prompts.models import Prompt, PromptSet
from webapp.runs.models import RLRun
from tests.webapp.test_pages_runs import launch_data

pytestmark = pytest.mark.django_db


def raw_run_post(api, project, prompt_set, config_json: str):
    body = f'{{"project": {project.pk}, "name": "r", "prompt_set": {prompt_set.pk}, "config": {config_json}}}'
    return api.generic("POST", "/api/runs/", body, content_type="application/json")


@pytest.mark.parametrize("config_json, place, words", [
    ('{"learning_rate": NaN}', "config.learning_rate", "NaN is not a number JSON allows"),
    ('{"tau": Infinity}', "config.tau", "Infinity is not a number JSON allows"),
    ('{"tau": -Infinity}', "config.tau", "-Infinity is not a number JSON allows"),
    ('{"model": "tiny\\u0000x"}', "config.model", "NUL character"),
])
def test_non_finite_numbers_and_nul_characters_are_refused_naming_the_field(api_for, alice, project, prompt_set,
                                                                          config_json, place, words):
    response = raw_run_post(api_for(alice), project, prompt_set, config_json)
    assert response.status_code == 400
    assert response.json()["detail"].startswith(f"{place}: ") and words in response.json()["detail"]
    assert not RLRun.objects.exists()


def test_a_nul_in_a_plain_field_is_refused_naming_it(api_for, alice, project, prompt_set):
    response = api_for(alice).post("/api/runs/", {"project": project.pk, "name": "a\x00b",
                                                  "prompt_set": prompt_set.pk, "config": {}}, format="json")
    assert response.status_code == 400 and "name: contains a NUL character" in response.json()["detail"]


def test_deeply_nested_json_is_refused_without_parsing_it(api_for, alice, project, prompt_set):
    deep = "[" * 5000 + "]" * 5000
    response = raw_run_post(api_for(alice), project, prompt_set, deep)
    assert response.status_code == 400
    assert response.json()["detail"] == "JSON body: nested 5001 levels deep; at most 64"


@pytest.mark.parametrize("knob, value", [("seed", 2**31), ("batch_size", 10**12), ("nproc_per_node", 1000),
                                         ("max_response_tokens", 10**9), ("learning_rate", 1e308),
                                         ("seed", 2**70)])
def test_numbers_out_of_a_knobs_range_are_refused_naming_knob_value_and_range(api_for, alice, project, prompt_set,
                                                                             knob, value):
    response = raw_run_post(api_for(alice), project, prompt_set, json.dumps({knob: value}))
    assert response.status_code == 400
    (reason,) = response.json()["config"][knob]
    assert reason.startswith("must be ") and " at most " in reason and reason.endswith(f"not {value!r}")


def test_the_launch_form_refuses_a_big_seed_and_an_unknown_field(client_for, alice, prompt_set):
    client = client_for(alice)
    response = client.post(reverse("run-launch"), launch_data(prompt_set, seed=2**31))
    assert response.status_code == 200
    assert response.context["form"].errors["seed"] == [f"must be at least 0 and at most {2**31 - 1}, not {2**31}"]
    response = client.post(reverse("run-launch"), {**launch_data(prompt_set), "learning_rat": "0.1"})
    assert response.status_code == 200
    assert response.context["form"].non_field_errors()[0].startswith("unknown field(s) learning_rat; this form takes")
    assert not RLRun.objects.exists()


def test_a_body_over_the_request_limit_is_refused_with_413_before_it_is_read(api_for, alice, project, settings):
    settings.MAX_REQUEST_BYTES = 1000
    response = api_for(alice).post("/api/prompt-sets/", {"project": project.pk, "name": "big",
                                                         "description": "x" * 2000}, format="json")
    assert response.status_code == 413
    assert "over the limit of 1.0 kB (MIRRORLAB_MAX_REQUEST_BYTES)" in response.json()["detail"]
    assert not PromptSet.objects.filter(name="big").exists()


def upload(lines: list[dict], name: str = "p.jsonl") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, "".join(json.dumps(line) + "\n" for line in lines).encode())


def test_an_upload_over_the_limit_is_refused_naming_the_file(api_for, alice, project, settings):
    settings.MAX_UPLOAD_BYTES = 100
    response = api_for(alice).post("/api/prompt-sets/", {"project": project.pk, "name": "big", "file": upload(
        [{"problem": "x" * 200, "answer": "1"}])}, format="multipart")
    assert response.status_code == 400
    assert "over the upload limit" in response.json()["file"][0]
    assert not PromptSet.objects.filter(name="big").exists()


def test_a_problem_over_the_size_limit_is_refused_naming_its_line(api_for, alice, project, prompt_set, settings):
    settings.MAX_PROMPT_CHARS = 50
    response = api_for(alice).post(f"/api/prompt-sets/{prompt_set.pk}/upload/", {"file": upload(
        [{"problem": "short", "answer": "1"}, {"problem": "y" * 51, "answer": "2"}])}, format="multipart")
    assert response.status_code == 400
    assert response.json()["file"] == ["line 2: the problem has 51 characters; at most 50 (MIRRORLAB_MAX_PROMPT_CHARS)"]
    single = api_for(alice).post("/api/prompts/", {"prompt_set": prompt_set.pk, "problem": "z" * 60, "answer": "1"},
                                 format="json")
    assert single.status_code == 400 and "60 characters; at most 50" in single.json()["problem"][0]
    assert prompt_set.prompts.count() == 2  # the fixture's two, nothing added


def test_a_set_over_the_prompt_count_limit_is_refused(api_for, alice, project, prompt_set, settings):
    settings.MAX_PROMPTS_PER_SET = 3
    response = api_for(alice).post(f"/api/prompt-sets/{prompt_set.pk}/upload/", {"file": upload(
        [{"problem": f"p{i}", "answer": "1"} for i in range(2)])}, format="multipart")
    assert response.status_code == 400
    assert response.json()["file"] == ["the set would hold 4 prompts; a set holds at most 3 "
                                       "(MIRRORLAB_MAX_PROMPTS_PER_SET)"]
    assert Prompt.objects.filter(prompt_set=prompt_set).count() == 2


def test_a_nul_character_in_an_uploaded_file_is_refused_naming_its_line(api_for, alice, project):
    response = api_for(alice).post("/api/prompt-sets/", {"project": project.pk, "name": "nul", "file": upload(
        [{"problem": "fine", "answer": "1"}, {"problem": "bad\x00", "answer": "1"}])}, format="multipart")
    assert response.status_code == 400
    assert response.json()["file"] == ["line 2: problem: contains a NUL character (\\u0000), which cannot be stored"]


def test_a_deployment_knob_is_refused_from_a_user(api_for, alice, project, prompt_set):
    response = raw_run_post(api_for(alice), project, prompt_set, '{"vllm_sidecar_socket": "/var/run/docker.sock"}')
    assert response.status_code == 400
    assert response.json()["config"] == {"vllm_sidecar_socket": [
        "a deployment setting of the workers (their environment), not of a run"]}


def test_a_number_too_large_for_a_float_is_refused_naming_where(api_for, alice, project, prompt_set):
    body = f'{{"prompt_set": {prompt_set.pk}, "problem": "p", "test_cases": [{{"input": 1e999, "output": "1"}}]}}'
    response = api_for(alice).generic("POST", "/api/prompts/", body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("test_cases[0].input: a number too large for a float")


def test_a_json_body_over_its_limit_is_refused(api_for, alice, project, settings):
    settings.MAX_JSON_BYTES = 100
    response = api_for(alice).post("/api/prompt-sets/", {"project": project.pk, "name": "x" * 200}, format="json")
    assert response.status_code == 400 and "MIRRORLAB_MAX_JSON_BYTES" in response.json()["detail"]


def test_the_rendezvous_id_is_refused_from_a_user(api_for, alice, project, prompt_set):
    response = raw_run_post(api_for(alice), project, prompt_set, '{"rdzv_id": "mirrorlab-run-1"}')
    assert response.status_code == 400 and list(response.json()["config"]) == ["rdzv_id"]


def test_a_prompt_image_outside_the_import_roots_is_refused(api_for, alice, project, prompt_set, settings, tmp_path):
    settings.IMPORT_ROOTS = [str(tmp_path / "images")]
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "ok.png").write_bytes(b"png")
    lines = [{"problem": "a", "answer": "1", "image": str(tmp_path / "images" / "ok.png")},
             {"problem": "b", "answer": "2", "image": "/etc/passwd"}]
    response = api_for(alice).post(f"/api/prompt-sets/{prompt_set.pk}/upload/", {"file": upload(lines)},
                                   format="multipart")
    assert response.status_code == 400
    assert response.json()["file"][0].startswith("line 2: image: '/etc/passwd' is not a path this project may use")
    single = api_for(alice).post("/api/prompts/", {"prompt_set": prompt_set.pk, "problem": "c", "answer": "3",
                                                   "image": "../../etc/passwd"}, format="json")
    assert single.status_code == 400 and "not an absolute path" in single.json()["image"][0]
    ok = api_for(alice).post(f"/api/prompt-sets/{prompt_set.pk}/upload/", {"file": upload(lines[:1])},
                             format="multipart")
    assert ok.status_code == 201
    assert prompt_set.prompts.order_by("-position").first().image == str(tmp_path / "images" / "ok.png")


@pytest.mark.parametrize("text, depth", [
    ('{"a": [1, {"b": "[[[["}]}', 3), ('{"s": "a\\\\\\"[["}', 1), ('{"k\\"[": [[1]]}', 3), ("[]", 1), ('"x"', 0),
    ("[" * 5000 + "]" * 5000, 5000),
])
def test_nesting_is_counted_outside_strings_only(text, depth):
    from common.json_checks import nesting_depth

    assert nesting_depth(text) == depth


@pytest.mark.parametrize("url, fields", [
    ("/api/prompts/", {"problem": "q", "test_cases": '[{"input": "\\u0000", "output": "1"}]'}),
    ("/api/prompts/", {"problem": "q", "answer": "1", "tags": '["a\\u0000"]'}),
    ("/api/prompts/", {"problem": "q", "test_cases": "[" * 100_000 + "]" * 100_000}),
    ("/api/runs/", {"name": "r", "config": '{"model": "a\\u0000b"}'}),
    ("/api/suites/", {"name": "deep", "benchmarks": "[" * 5000 + "]" * 5000}),
])
@pytest.mark.parametrize("encoding", ["multipart", "urlencoded"])
def test_a_form_body_is_refused_where_no_file_is_uploaded(api_for, alice, project, prompt_set, url, fields, encoding):
    """JSON fields sent as form text would skip the JSON parser's checks (NUL, nesting, size): only JSON is read."""
    data = {"project": project.pk, "prompt_set": prompt_set.pk, **fields}
    api = api_for(alice)
    if encoding == "multipart":
        response = api.post(url, data, format="multipart")
    else:
        response = api.generic("POST", url, urlencode(data), content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415
    assert response.json()["detail"].startswith("Unsupported media type ")
    assert (Prompt.objects.count(), RLRun.objects.count(), BenchmarkSuite.objects.count()) == (2, 0, 0)
