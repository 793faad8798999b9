"""An evaluation of a model by name resolves it like a training run: a misspelled name fails at once, clearly."""

from __future__ import annotations

import pytest
from huggingface_hub import constants

from training.models import resolve
from training.models.loading import ModelUnavailable
from webapp.evals.models import EvalRun
from workers.eval_job import model_path


def test_an_evaluation_of_a_misspelled_model_fails_with_the_resolution_error(monkeypatch):
    asked = []

    def unreachable(name):
        asked.append(name)
        raise ConnectionError("[Errno -2] Name or service not known")

    monkeypatch.setattr(resolve, "hub_model_info", unreachable)
    monkeypatch.setattr(resolve, "cached_hub_snapshot", lambda name: None)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with pytest.raises(ModelUnavailable, match=r"^model 'tinyy' is not a preset \(tiny, tiny-vl\), not a local "
                                               r"folder, and the Hugging Face hub could not provide it"):
        model_path(EvalRun(model="tinyy"))
    assert asked == ["tinyy"]


def test_an_evaluation_of_a_missing_model_folder_fails_without_the_hub(monkeypatch):
    monkeypatch.setattr(resolve, "hub_model_info", lambda name: pytest.fail("the hub should not be asked"))
    with pytest.raises(ModelUnavailable, match="^model '/models/missing': no such folder$"):
        model_path(EvalRun(model="/models/missing"))
