"""Models named by path (issue 17): evaluations (API and page form), RL runs' model knob, suites' judge models.
Another project's checkpoint folder, system folders and escapes from a root are refused in the same words as a
path that does not exist; the project's own folders, shared roots, presets and hub ids are accepted."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.webapp.path_support import model_folder, other_projects_run, same_words
from webapp.evals.models import BenchmarkSuite, EvalRun
from webapp.runs.models import Checkpoint, RLRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def secret_folder(charlie, checkpoints):
    """A checkpoint folder of charlie's project, which bob is no member of."""
    return model_folder(checkpoints / f"run-{other_projects_run(charlie).pk}" / "iteration-1")


def evaluate(api, project, suite, model):
    return api.post("/api/evaluations/", {"project": project.pk, "suite": suite.pk, "model": str(model)},
                    format="json")


def refusal(response, field="model") -> str:
    assert response.status_code == 400, response.json()
    assert list(response.json()) == [field]
    return response.json()[field][0]


def test_an_evaluation_of_another_projects_checkpoint_folder_is_refused(api_for, bob, project, suite,
                                                                        secret_folder, checkpoints):
    missing = checkpoints / "run-999999" / "iteration-1"
    api = api_for(bob)
    reason, missing_reason = refusal(evaluate(api, project, suite, secret_folder)), \
        refusal(evaluate(api, project, suite, missing))
    assert reason.startswith(f"'{secret_folder}' is not a path this project may use: give a checkpoint id, a preset "
                             f"(tiny, tiny-vl), a hub id (org/name), or an absolute path inside the project's own "
                             f"checkpoint folders or under MIRRORLAB_MODEL_ROOTS")
    assert same_words(reason, str(secret_folder), missing_reason, str(missing))
    assert not EvalRun.objects.exists()


@pytest.mark.parametrize("model", ["/etc", "/usr/lib", "./relative-model", "~/models/mine"])
def test_an_evaluation_of_a_path_outside_the_roots_is_refused(api_for, bob, project, suite, model):
    assert refusal(evaluate(api_for(bob), project, suite, model)).startswith(f"'{model}' is not ")
    assert not EvalRun.objects.exists()


def test_dot_dot_and_symlinks_cannot_leave_a_model_root(api_for, bob, project, suite, settings, tmp_path):
    root = tmp_path / "shared"
    root.mkdir()
    settings.MODEL_ROOTS = [str(root)]
    model_folder(tmp_path / "private-model")
    (root / "link").symlink_to(tmp_path / "private-model")
    for model in (f"{root}/../private-model", f"{root}/link", f"{root}/link/../../private-model"):
        assert refusal(evaluate(api_for(bob), project, suite, model)).startswith(f"'{model}' is not a path")
    assert not EvalRun.objects.exists()


@pytest.mark.parametrize("model", ["tiny", "Qwen/Qwen2.5-0.5B-Instruct", "gpt2"])
def test_presets_and_hub_ids_are_evaluated_as_named(api_for, bob, project, suite, model):
    response = evaluate(api_for(bob), project, suite, model)
    assert response.status_code == 201, response.json()
    assert EvalRun.objects.get().model == model


def test_the_projects_own_run_folder_is_evaluated_by_path_stored_resolved(api_for, bob, project, suite, run,
                                                                          checkpoints):
    own = model_folder(checkpoints / f"run-{run.pk}" / "iteration-3")
    response = evaluate(api_for(bob), project, suite, f"{checkpoints}/run-{run.pk}/x/../iteration-3")
    assert response.status_code == 201, response.json()
    assert EvalRun.objects.get().model == str(own)


def test_another_projects_checkpoint_id_is_refused(api_for, bob, charlie, project, suite, secret_folder):
    secret = Checkpoint.objects.create(project=RLRun.objects.get(owner=charlie).project,
                                       run=RLRun.objects.get(owner=charlie), iteration=1, path=str(secret_folder))
    response = api_for(bob).post("/api/evaluations/", {"project": project.pk, "suite": suite.pk,
                                                       "checkpoint": secret.pk}, format="json")
    assert response.status_code == 400
    assert list(response.json()) == ["checkpoint"]
    assert not EvalRun.objects.exists()


def test_an_evaluation_of_a_link_that_resolves_too_long_to_store_is_refused(api_for, bob, project, suite, tmp_path):
    deep = model_folder(tmp_path.joinpath(*["d" * 60] * 5))
    (tmp_path / "short").symlink_to(deep)
    reason = refusal(evaluate(api_for(bob), project, suite, tmp_path / "short"))
    assert reason == (f"'{tmp_path / 'short'}' resolves to a path of {len(str(deep))} characters; at most 300 fit "
                      "(paths are stored resolved, so a link does not shorten them): move the files to a shorter path")
    assert not EvalRun.objects.exists()


def test_the_evaluation_form_refuses_another_projects_folder(client_for, bob, suite, secret_folder):
    data = {"suite": str(suite.pk), "checkpoint": "", "model": str(secret_folder), "rollout_engine": "torch",
            "seed": "0"}
    response = client_for(bob).post(reverse("evaluation-launch"), data)
    assert response.status_code == 200
    assert response.context["form"].errors["model"][0].startswith(f"'{secret_folder}' is not a path this project")
    assert not EvalRun.objects.exists()


def test_a_run_whose_model_is_another_projects_folder_is_refused(api_for, bob, project, prompt_set,
                                                                 secret_folder):
    response = api_for(bob).post("/api/runs/", {"project": project.pk, "name": "r", "prompt_set": prompt_set.pk,
                                                "config": {"model": str(secret_folder)}}, format="json")
    assert response.status_code == 400, response.json()
    assert list(response.json()) == ["config"] and list(response.json()["config"]) == ["model"]
    assert response.json()["config"]["model"][0].startswith(f"'{secret_folder}' is not a path this project may use")
    assert not RLRun.objects.filter(project=project).exists()


def test_a_suite_whose_judge_is_a_system_folder_is_refused(api_for, bob, project):
    entry = {"benchmark": "math500", "grader_mode": "judge", "judge_model": "/etc"}
    response = api_for(bob).post("/api/suites/", {"project": project.pk, "name": "judged", "benchmarks": [entry]},
                                 format="json")
    assert response.status_code == 400, response.json()
    assert response.json()["benchmarks[0].judge_model"][0].startswith("'/etc' is not a path this project may use")
    assert not BenchmarkSuite.objects.filter(name="judged").exists()


def test_the_run_launch_form_refuses_another_projects_folder(client_for, bob, project, prompt_set, secret_folder):
    from tests.webapp.test_pages_run_launch_form import posted

    client = client_for(bob)
    data = posted(client.get(reverse("run-launch")).context["form"])
    data.update(name="r", prompt_set=str(prompt_set.pk), model=str(secret_folder))
    response = client.post(reverse("run-launch"), data)
    assert response.status_code == 200
    assert response.context["form"].errors["model"][0].startswith(f"'{secret_folder}' is not a path this project")
    assert not RLRun.objects.filter(project=project).exists()
