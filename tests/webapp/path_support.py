"""Folders of the path-rule tests (issue 17): a checkpoints folder with another project's run, a shared model root."""

from __future__ import annotations

from pathlib import Path

from common.knobs import config_to_dict, parse_config
from training.config import RLConfig
from webapp.projects.models import Project
from webapp.prompts.services import create_prompt_set
from webapp.runs.models import RLRun


def model_folder(folder: Path) -> Path:
    """A directory with a model's files (a config and some weights)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"w" * 100)
    return folder


def other_projects_run(owner) -> RLRun:
    """A run of another project (`owner`'s), whose checkpoint folder the tests try to reach."""
    other = Project.objects.create(name="Secret", slug="secret")
    other.add_member(owner, role="owner")
    config = config_to_dict(parse_config(RLConfig, {"trainer_backend": "noop-test"}))
    return RLRun.objects.create(project=other, name="secret-run", prompt_set=create_prompt_set(other, "secret-set"),
                                config=config, owner=owner, total_iterations=1)


def same_words(first: str, first_path: str, second: str, second_path: str) -> bool:
    """Two refusals read the same but for the path they repeat."""
    return first.replace(first_path, "<path>") == second.replace(second_path, "<path>")
