"""Checkpoints through the API: registering a directory by path; the ones workers saved stay as they are."""

from __future__ import annotations

import pytest

from webapp.runs.models import Checkpoint

pytestmark = pytest.mark.django_db


@pytest.fixture
def model_dir(tmp_path):
    folder = tmp_path / "outside-model"
    (folder / "sub").mkdir(parents=True)
    (folder / "config.json").write_bytes(b"{}")
    (folder / "sub" / "model.safetensors").write_bytes(b"x" * 1000)
    return folder


def register(api, project, path, **fields):
    return api.post("/api/checkpoints/", {"project": project.pk, "path": str(path), **fields}, format="json")


def test_registering_a_directory_measures_its_size(api_for, project, alice, model_dir):
    response = register(api_for(alice), project, model_dir)
    assert response.status_code == 201, response.json()
    checkpoint = Checkpoint.objects.get()
    assert (checkpoint.path, checkpoint.size_bytes, checkpoint.run, checkpoint.variant) == (
        str(model_dir), 1002, None, None)


def test_the_size_is_not_set_by_the_client(api_for, project, alice, model_dir):
    response = register(api_for(alice), project, model_dir, size_bytes=5)
    assert response.status_code == 400
    assert response.json()["size_bytes"][0].startswith("read-only (measured from the path)")
    assert not Checkpoint.objects.exists()


@pytest.mark.parametrize("path, reason", [
    ("checkpoints/run-1", "is not an absolute path"),
    ("/no/such/checkpoint", "'/no/such/checkpoint' is not a path this project may use"),
])
def test_a_path_that_cannot_be_a_checkpoint_is_refused(api_for, project, alice, path, reason):
    response = register(api_for(alice), project, path)
    assert response.status_code == 400
    assert reason in response.json()["path"][0]
    assert not Checkpoint.objects.exists()


def test_a_file_is_not_a_checkpoint_directory(api_for, project, alice, model_dir):
    response = register(api_for(alice), project, model_dir / "config.json")
    assert response.status_code == 400 and "no directory" in response.json()["path"][0]


def test_a_checkpoint_cannot_be_registered_as_a_runs(api_for, project, run, alice, model_dir):
    response = register(api_for(alice), project, model_dir, run=run.pk)
    assert response.status_code == 400
    assert "a run's checkpoints are saved by its worker" in response.json()["run"][0]


def test_a_checkpoint_saved_by_a_worker_cannot_change(api_for, project, run, alice, model_dir):
    saved = Checkpoint.objects.create(project=project, run=run, iteration=3, path="/data/checkpoints/run-1/3",
                                      size_bytes=77)
    api = api_for(alice)
    for method in ("patch", "put"):
        response = getattr(api, method)(f"/api/checkpoints/{saved.pk}/", {"path": str(model_dir)}, format="json")
        assert response.status_code == 409
        assert response.json()["detail"].startswith(f"checkpoint {saved.pk} (run-1 @ 3) was saved by a worker")
    saved.refresh_from_db()
    assert (saved.path, saved.size_bytes) == ("/data/checkpoints/run-1/3", 77)


def test_a_registered_checkpoint_can_move_to_another_directory(api_for, project, alice, model_dir, tmp_path):
    api = api_for(alice)
    created = register(api, project, model_dir).json()
    other = tmp_path / "other"
    other.mkdir()
    (other / "weights").write_bytes(b"y" * 10)
    response = api.patch(f"/api/checkpoints/{created['id']}/", {"path": str(other)}, format="json")
    assert response.status_code == 200, response.json()
    assert (response.json()["path"], response.json()["size_bytes"]) == (str(other), 10)
