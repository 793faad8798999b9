"""A run whose prompts plus max_response_tokens exceed the model's context window is refused at launch (API and
form), naming the knob and the numbers; the web server counts prompt tokens without torch."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from training.models import resolve
from webapp.prompts.services import create_prompt_set_from_file
from webapp.runs.models import RLRun

pytestmark = pytest.mark.django_db

TOO_LONG = ("max_response_tokens (64) plus the longest prompt (2008 tokens, prompt #2 of prompt set 'long') exceeds "
            "the context window of 2048 tokens of model tiny; lower max_response_tokens to at most 40 or shorten "
            "the prompt")


def long_problem(tokens: int) -> str:
    """A problem whose prompt is `tokens` tokens for the tiny preset (plain template, 6 tokens, one per digit)."""
    return "1" * (tokens - 6)


@pytest.fixture
def models_dir(settings, tmp_path, tiny_model_dir, monkeypatch):
    """The web server's models folder holds the created tiny preset; no hub id is cached."""
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "tiny").symlink_to(tiny_model_dir, target_is_directory=True)
    settings.MODELS_DIR = folder
    monkeypatch.setattr(resolve, "cached_hub_snapshot", lambda name: None)
    return folder


def prompt_set_of(project, user, name: str, *problems: str):
    lines = "".join(json.dumps({"problem": problem, "answer": "1"}) + "\n" for problem in problems)
    return create_prompt_set_from_file(project, name, lines.encode(), "jsonl", user=user)


@pytest.fixture
def long_set(project, alice):
    return prompt_set_of(project, alice, "long", "What is 2+3?", long_problem(2008))


def post_run(api, project, prompt_set, **config):
    return api.post("/api/runs/", {"project": project.pk, "name": "r", "prompt_set": prompt_set.pk,
                                   "config": {"trainer_backend": "noop-test", **config}}, format="json")


def test_the_api_refuses_a_prompt_plus_response_over_the_window_naming_the_knob(api_for, project, alice, long_set,
                                                                               models_dir):
    response = post_run(api_for(alice), project, long_set, max_response_tokens=64)
    assert response.status_code == 400
    assert response.json() == {"config": {"max_response_tokens": [TOO_LONG]}}
    assert not RLRun.objects.exists()


def test_the_api_accepts_a_run_that_fits_exactly(api_for, project, alice, long_set, models_dir):
    assert post_run(api_for(alice), project, long_set, max_response_tokens=40).status_code == 201


def test_the_api_names_a_prompt_that_alone_fills_the_window(api_for, project, alice, models_dir):
    prompts = prompt_set_of(project, alice, "huge", "What is 2+3?", long_problem(2100))
    response = post_run(api_for(alice), project, prompts, max_response_tokens=64)
    assert response.status_code == 400
    assert response.json() == {"prompt_set": [
        "prompt #2 of prompt set 'huge' alone is 2100 tokens, which fills the context window of 2048 tokens of model "
        "tiny and leaves no room for a response; shorten or remove it"]}


def test_max_model_len_refuses_what_the_model_would_fit(api_for, project, alice, models_dir):
    prompts = prompt_set_of(project, alice, "mid", long_problem(900))
    api = api_for(alice)
    assert post_run(api, project, prompts, max_response_tokens=256).status_code == 201
    response = post_run(api, project, prompts, max_response_tokens=256, max_model_len=1024)
    assert response.status_code == 400
    assert response.json() == {"config": {"max_response_tokens": [
        "max_response_tokens (256) plus the longest prompt (900 tokens, prompt #1 of prompt set 'mid') exceeds the "
        "context window of 1024 tokens set by max_model_len (model tiny's own is 2048); lower max_response_tokens "
        "to at most 124, raise max_model_len or shorten the prompt"]}}


def test_max_model_len_above_the_models_window_is_refused(api_for, project, alice, prompt_set, models_dir):
    response = post_run(api_for(alice), project, prompt_set, max_model_len=4096)
    assert response.status_code == 400
    assert response.json() == {"config": {"max_model_len": [
        "max_model_len (4096) exceeds the context window of 2048 tokens of model tiny; it may only lower it: set at "
        "most 2048 or leave it empty"]}}


def test_a_preset_not_created_yet_still_checks_the_response_limit(api_for, project, alice, long_set, settings,
                                                                   tmp_path):
    settings.MODELS_DIR = tmp_path / "empty"
    api = api_for(alice)
    assert post_run(api, project, long_set, max_response_tokens=64).status_code == 201  # prompts: at run start
    response = post_run(api, project, long_set, max_response_tokens=2048)
    assert response.status_code == 400
    assert response.json() == {"config": {"max_response_tokens": [
        "max_response_tokens (2048) leaves no room for a prompt in the context window of 2048 tokens of model tiny; "
        "lower max_response_tokens below 2048"]}}
    assert not (tmp_path / "empty").exists()  # the web server creates no preset


def test_a_hub_model_unknown_here_is_left_to_the_worker(api_for, project, alice, long_set, models_dir):
    response = post_run(api_for(alice), project, long_set, model="some-org/some-model", max_response_tokens=100000)
    assert response.status_code == 201


def test_a_patch_that_makes_a_queued_run_too_long_is_refused(api_for, project, alice, long_set, models_dir):
    api = api_for(alice)
    run = post_run(api, project, long_set, max_response_tokens=40).json()
    response = api.patch(f"/api/runs/{run['id']}/", {"config": {"max_response_tokens": 64}}, format="json")
    assert response.status_code == 400
    assert response.json() == {"config": {"max_response_tokens": [TOO_LONG]}}


def test_the_launch_form_refuses_it_on_the_field(client_for, alice, long_set, models_dir):
    client = client_for(alice)
    form = client.get(reverse("run-launch")).context["form"]
    data = {field.name: str(field.value()) for field in form if field.value() is not None}
    data.update(name="too long", prompt_set=str(long_set.pk), trainer_backend="noop-test", max_response_tokens="64")
    response = client.post(reverse("run-launch"), data)
    assert response.status_code == 200
    assert response.context["form"].errors == {"max_response_tokens": [TOO_LONG]}
    assert TOO_LONG.replace("'", "&#x27;") in response.content.decode()
    assert not RLRun.objects.exists()
    data["max_response_tokens"] = "40"
    assert client.post(reverse("run-launch"), data).status_code == 302
    assert RLRun.objects.get().config["max_response_tokens"] == 40
