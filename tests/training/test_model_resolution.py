"""A model name resolves to a preset, a local folder or a hub model, or fails at once saying why (no hub retries)."""

from __future__ import annotations

import time

import pytest
from huggingface_hub import constants
from huggingface_hub.errors import RepositoryNotFoundError

from training.models import resolve
from training.models.loading import resolve_model_path
from common.path_rules import looks_like_path
from training.models.resolve import ModelUnavailable


@pytest.fixture
def hub(monkeypatch):
    """The hub as the tests set it: unreachable by default, nothing cached; records each question asked."""
    asked: list[str] = []
    state = {"answer": ConnectionError("[Errno -2] Name or service not known"), "cached": None}

    def model_info(name):
        asked.append(name)
        if state["answer"] is not None:
            raise state["answer"]

    monkeypatch.setattr(resolve, "hub_model_info", model_info)
    monkeypatch.setattr(resolve, "cached_hub_snapshot", lambda name: state["cached"])
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    state["asked"] = asked
    return state


@pytest.mark.parametrize("name", ["/no/such/model", "./missing", "../missing", "~/missing-model", "a/b/c"])
def test_a_missing_path_fails_at_once_without_asking_the_hub(name, hub, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ModelUnavailable, match=f"^model '{name}': no such folder"):
        resolve_model_path(name, tmp_path / "models")
    assert hub["asked"] == []


def test_a_file_given_as_a_model_is_not_a_folder(hub, tmp_path):
    file = tmp_path / "weights.bin"
    file.write_bytes(b"")
    with pytest.raises(ModelUnavailable, match=f"^model '{file}': not a folder$"):
        resolve_model_path(str(file), tmp_path / "models")


def test_a_misspelled_name_with_the_hub_unreachable_gives_one_clear_error_quickly(hub, tmp_path):
    started = time.monotonic()
    with pytest.raises(ModelUnavailable) as error:
        resolve_model_path("tinyy", tmp_path / "models")
    assert str(error.value) == ("model 'tinyy' is not a preset (tiny, tiny-vl), not a local folder, and the Hugging "
                                "Face hub could not provide it (hub unreachable: [Errno -2] Name or service not known)")
    assert hub["asked"] == ["tinyy"] and time.monotonic() - started < 5


def test_a_name_the_hub_does_not_have_says_so(hub, tmp_path):
    import httpx2

    response = httpx2.Response(404, request=httpx2.Request("GET", "https://huggingface.co/api/models/x"))
    hub["answer"] = RepositoryNotFoundError("404 Client Error: Repository Not Found for url", response=response)
    with pytest.raises(ModelUnavailable, match=r"could not provide it \(no such model on the hub, or a private one"):
        resolve_model_path("someone/no-such-model", tmp_path / "models")


def test_an_invalid_hub_id_is_refused_without_a_request(hub, tmp_path):
    with pytest.raises(ModelUnavailable, match=r"could not provide it \(not a valid hub id: expected org/name\)"):
        resolve_model_path("my model!", tmp_path / "models")
    assert hub["asked"] == []


def test_a_hub_model_the_hub_confirms_is_passed_through(hub, tmp_path):
    hub["answer"] = None
    assert resolve_model_path("Qwen/Qwen2.5-0.5B", tmp_path / "models") == "Qwen/Qwen2.5-0.5B"


def test_an_unreachable_hub_falls_back_to_the_cached_snapshot(hub, tmp_path):
    hub["cached"] = str(tmp_path / "snapshot")
    assert resolve_model_path("Qwen/Qwen2.5-0.5B", tmp_path / "models") == str(tmp_path / "snapshot")


def test_offline_only_the_cache_is_consulted(hub, tmp_path, monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ModelUnavailable, match=r"\(HF_HUB_OFFLINE is set and the model is not in the local Hugging "
                                               r"Face cache\)"):
        resolve_model_path("Qwen/Qwen2.5-0.5B", tmp_path / "models")
    hub["cached"] = str(tmp_path / "snapshot")
    assert resolve_model_path("Qwen/Qwen2.5-0.5B", tmp_path / "models") == str(tmp_path / "snapshot")
    assert hub["asked"] == []


def test_a_local_folder_resolves_to_its_absolute_path(hub, tmp_path, monkeypatch):
    (tmp_path / "my-model").mkdir()
    for name in ("config.json", "tokenizer.json"):
        (tmp_path / "my-model" / name).write_text("{}")
    monkeypatch.chdir(tmp_path)
    assert resolve_model_path("my-model", tmp_path / "models") == str(tmp_path / "my-model")
    assert resolve_model_path("./my-model", tmp_path / "models") == str(tmp_path / "my-model")


@pytest.mark.parametrize("name, path_like", [
    ("/abs", True), ("./rel", True), ("../up", True), ("~/home", True), ("org/name", False), ("a/b/c", True),
    ("tinyy", False), ("Qwen/Qwen2.5-0.5B-Instruct", False),
])
def test_it_tells_paths_from_hub_ids(name, path_like):
    assert looks_like_path(name) is path_like


def test_a_local_folder_without_a_tokenizer_or_config_is_refused_naming_what_is_missing(tmp_path):
    from training.models.loading import ModelUnavailable, resolve_model_path

    folder = tmp_path / "weights-only"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"")
    with pytest.raises(ModelUnavailable, match="has no config.json"):
        resolve_model_path(str(folder), tmp_path)
    (folder / "config.json").write_text("{}")
    with pytest.raises(ModelUnavailable, match=r"has no tokenizer \(tokenizer.json or tokenizer_config.json\)"):
        resolve_model_path(str(folder), tmp_path)
    (folder / "tokenizer.json").write_text("{}")
    assert resolve_model_path(str(folder), tmp_path) == str(folder.resolve())
