"""The path rule (common.path_rules) with this deployment's folders: the allowed roots of the settings, a project's
own checkpoint folders and the app's private folders. The API, the page forms and the workers' re-checks use it.

Models are named by a checkpoint id, a preset, a hub id, or an absolute path inside the project's own checkpoint
folders or under MODEL_ROOTS (MIRRORLAB_MODEL_ROOTS); prompt-set imports read hub dataset ids, or files under
IMPORT_ROOTS (MIRRORLAB_IMPORT_ROOTS). Anything else raises PathRefused naming the field and the allowed forms.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping

from django.conf import settings

from common.path_rules import PathRefused, PathRules, checked_name_or_path, checked_path, refuse_relative_lookup
from training.models.presets import PRESET_NAMES
from webapp.long2short.models import Long2ShortVariant
from webapp.prompts.models import Prompt
from webapp.runs.models import Checkpoint, RLRun

MODEL_KNOBS = ("model", "judge_model")  # the RLConfig knobs that name a model
MODEL_FORMS = f"a checkpoint id, a preset ({', '.join(PRESET_NAMES)}), a hub id (org/name)"
DATASET_FORMS = "a hub dataset id (org/name)"
CHECKPOINT_PATH_MAX_LENGTH = Checkpoint._meta.get_field("path").max_length
IMAGE_MAX_LENGTH = Prompt._meta.get_field("image").max_length


def run_checkpoint_folder(run_id: int) -> Path:
    """The folder where run `run_id`'s worker saves its checkpoints."""
    return Path(settings.CHECKPOINT_DIR) / f"run-{run_id}"


def variant_checkpoint_folder(variant_id: int) -> Path:
    """The folder where long2short variant `variant_id`'s worker saves its checkpoint."""
    return Path(settings.CHECKPOINT_DIR) / f"variant-{variant_id}"


def private_roots() -> tuple[Path, ...]:
    """The app's own files: its code and configuration, and its data folder (database, uploads, presets, logs)."""
    return (Path(settings.BASE_DIR), Path(settings.DATA_DIR), Path(settings.CHECKPOINT_DIR), Path(settings.MODELS_DIR),
            Path(settings.MEDIA_ROOT))


def own_folders(project_id: int) -> tuple[Path, ...]:
    """The checkpoint folders of the project's runs and variants."""
    runs = RLRun.objects.filter(project_id=project_id).values_list("pk", flat=True)
    variants = Long2ShortVariant.objects.filter(project_id=project_id).values_list("pk", flat=True)
    return (*map(run_checkpoint_folder, runs), *map(variant_checkpoint_folder, variants))


def model_rules(project_id: int) -> PathRules:
    return PathRules(allowed_roots=tuple(settings.MODEL_ROOTS), own_folders=own_folders(project_id),
                     project_storage=(settings.CHECKPOINT_DIR,), private_roots=private_roots(),
                     roots_setting="MIRRORLAB_MODEL_ROOTS", local_forms=MODEL_FORMS)


def import_rules() -> PathRules:
    return PathRules(allowed_roots=tuple(settings.IMPORT_ROOTS), private_roots=private_roots(),
                     roots_setting="MIRRORLAB_IMPORT_ROOTS", local_forms=DATASET_FORMS)


def fitting(checked: str, given: str, field: str, max_length: int | None) -> str:
    """A checked name or resolved path that fits its column of `max_length` characters (None: any length); a
    link can resolve to a longer path than the one given, so PathRefused says so."""
    if max_length is not None and len(checked) > max_length:
        longer = " resolves to a path of" if checked != given else " has"
        raise PathRefused(field, f"'{given}'{longer} {len(checked)} characters; at most {max_length} fit (paths are "
                                 "stored resolved, so a link does not shorten them): move the files to a shorter path")
    return checked


def checked_model(project_id: int, name: str, field: str = "model", max_length: int | None = None) -> str:
    """A model the project may use: a preset or hub id as given, a path resolved; PathRefused otherwise, or when
    it is longer than `max_length` (the column that stores it)."""
    return fitting(checked_name_or_path(name, model_rules(project_id), field), name, field, max_length)


def checked_checkpoint_path(project_id: int, path: str, field: str = "path") -> str:
    """The directory of a checkpoint registered by path, resolved, when the project may use it and it fits
    Checkpoint.path."""
    resolved = checked_path(path, dataclasses.replace(model_rules(project_id), local_forms=""), field)
    return fitting(resolved, path, field, CHECKPOINT_PATH_MAX_LENGTH)


def checked_dataset_id(dataset_id: str, field: str = "dataset_id") -> str:
    """A hub dataset id as given, or a local folder or file under IMPORT_ROOTS, resolved."""
    return checked_name_or_path(dataset_id, import_rules(), field)


def model_knob_changes(project_id: int, config: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """An RL config's model knobs: (knob -> value to store, paths resolved; knob -> why it is refused)."""
    rules = model_rules(project_id)
    changes, errors = {}, {}
    for knob in MODEL_KNOBS:
        if not config.get(knob):
            continue
        try:
            changes[knob] = checked_name_or_path(config[knob], rules, knob)
        except PathRefused as refused:
            errors[knob] = refused.reason
    return changes, errors


def suite_judge_changes(project_id: int, entries: list[dict]) -> tuple[list[dict], dict[str, str]]:
    """A suite's benchmark entries with their judge models checked: (entries to store, "benchmarks[i].judge_model"
    -> why it is refused)."""
    rules = model_rules(project_id)
    checked, errors = [], {}
    for index, entry in enumerate(entries):
        if judge := entry.get("judge_model"):
            try:
                entry = {**entry, "judge_model": checked_name_or_path(judge, rules, "judge_model")}
            except PathRefused as refused:
                errors[f"benchmarks[{index}].judge_model"] = refused.reason
        checked.append(entry)
    return checked, errors


# ---------------------------------------------------------------- on the worker, when the job starts


def worker_checked_model(project_id: int, name: str, field: str = "model") -> str:
    """checked_model, and a name kept as a hub id must not be a file or folder relative to the worker's working
    directory (the loaders would read it from disk)."""
    rules = model_rules(project_id)
    checked = checked_name_or_path(name, rules, field)
    if checked not in PRESET_NAMES:
        refuse_relative_lookup(checked, rules, field)
    return checked


def checked_image(image: str, field: str = "image") -> str:
    """A prompt's image: an absolute path under IMPORT_ROOTS, resolved, that fits Prompt.image; PathRefused
    otherwise."""
    return fitting(checked_path(image, import_rules(), field), image, field, IMAGE_MAX_LENGTH)


def worker_checked_dataset_id(dataset_id: str, field: str = "dataset_id") -> str:
    """checked_dataset_id, and a hub id must not be a file or folder relative to the worker's working directory."""
    rules = import_rules()
    checked = checked_name_or_path(dataset_id, rules, field)
    refuse_relative_lookup(checked, rules, field)
    return checked
