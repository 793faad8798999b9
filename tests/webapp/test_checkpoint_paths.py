"""POST /api/checkpoints/ by path (issue 17): only the project's own checkpoint folders and the shared model roots
are registered, resolved; a refusal reads the same whether the path exists or not, and nothing is measured."""

from __future__ import annotations

import pytest

from tests.webapp.path_support import model_folder, other_projects_run, same_words
from webapp.runs.models import Checkpoint

pytestmark = pytest.mark.django_db


@pytest.fixture
def model_root(settings, tmp_path):
    root = tmp_path / "shared-models"
    root.mkdir()
    settings.MODEL_ROOTS = [str(root)]
    return root


def register(api, project, path):
    return api.post("/api/checkpoints/", {"project": project.pk, "path": str(path)}, format="json")


def refusal(response) -> str:
    assert response.status_code == 400, response.json()
    assert list(response.json()) == ["path"]
    return response.json()["path"][0]


def test_it_refuses_another_projects_checkpoint_folder_as_if_it_did_not_exist(api_for, bob, charlie, project,
                                                                             checkpoints):
    secret = model_folder(checkpoints / f"run-{other_projects_run(charlie).pk}" / "iteration-1")
    missing = checkpoints / "run-999999" / "iteration-1"
    api = api_for(bob)
    secret_reason, missing_reason = refusal(register(api, project, secret)), refusal(register(api, project, missing))
    assert "is not a path this project may use" in secret_reason
    assert same_words(secret_reason, str(secret), missing_reason, str(missing))
    assert not Checkpoint.objects.exists()


@pytest.mark.parametrize("path", ["/etc", "/usr", "/work/main/webapp"])
def test_it_refuses_system_folders_without_measuring_them(api_for, bob, project, model_root, path):
    reason = refusal(register(api_for(bob), project, path))
    nowhere = refusal(register(api_for(bob), project, path + "-no-such-folder"))
    assert reason.startswith(f"'{path}' is not a path this project may use: give an absolute path inside the "
                             f"project's own checkpoint folders or under MIRRORLAB_MODEL_ROOTS ({model_root})")
    assert same_words(reason, path, nowhere, path + "-no-such-folder")
    assert not Checkpoint.objects.exists()


def test_dot_dot_cannot_escape_an_allowed_root(api_for, bob, project, model_root, tmp_path):
    model_folder(tmp_path / "outside-model")
    escaping = f"{model_root}/../outside-model"
    reason = refusal(register(api_for(bob), project, escaping))
    assert reason.startswith(f"'{escaping}' is not a path this project may use")
    assert not Checkpoint.objects.exists()


@pytest.mark.parametrize("target", ["outside-model", "/etc"])
def test_a_symlink_cannot_escape_an_allowed_root(api_for, bob, project, model_root, tmp_path, target):
    outside = model_folder(tmp_path / target) if not target.startswith("/") else target
    (model_root / "link").symlink_to(outside, target_is_directory=True)
    reason = refusal(register(api_for(bob), project, model_root / "link"))
    assert reason.startswith(f"'{model_root / 'link'}' is not a path this project may use")
    assert not Checkpoint.objects.exists()


def test_it_registers_a_folder_under_a_model_root_stored_resolved(api_for, bob, project, model_root):
    model_folder(model_root / "qwen")
    response = register(api_for(bob), project, f"{model_root}/other/../qwen")
    assert response.status_code == 201, response.json()
    checkpoint = Checkpoint.objects.get()
    assert (checkpoint.project, checkpoint.path, checkpoint.size_bytes) == (project, str(model_root / "qwen"), 102)


def test_it_registers_a_folder_of_the_projects_own_run(api_for, bob, project, run, checkpoints, settings):
    settings.MODEL_ROOTS = []
    own = model_folder(checkpoints / f"run-{run.pk}" / "iteration-2")
    response = register(api_for(bob), project, own)
    assert response.status_code == 201, response.json()
    assert Checkpoint.objects.get().path == str(own)


def test_the_size_is_summed_over_a_bounded_number_of_files(api_for, bob, project, model_root, monkeypatch):
    from webapp.runs import services

    monkeypatch.setattr(services, "MAX_CHECKPOINT_ENTRIES", 10)
    folder = model_root / "many"
    folder.mkdir()
    for index in range(11):
        (folder / f"shard-{index}").write_bytes(b"x")
    reason = refusal(register(api_for(bob), project, folder))
    assert reason.startswith(f"'{folder}' holds more than 10 files and folders")
    assert not Checkpoint.objects.exists()


def test_it_refuses_a_link_that_resolves_too_long_to_store(api_for, bob, project, tmp_path):
    deep = model_folder(tmp_path.joinpath(*["d" * 60] * 9))
    (tmp_path / "short").symlink_to(deep)
    reason = refusal(register(api_for(bob), project, tmp_path / "short"))
    assert reason.startswith(f"'{tmp_path / 'short'}' resolves to a path of {len(str(deep))} characters; at most 500 "
                             "fit")
    assert not Checkpoint.objects.exists()
