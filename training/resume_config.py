"""What a resumed run may change: the checkpoint's saved config against the config it is resumed with.

A run resumed from its newest checkpoint (same output_dir) must keep the recipe it was trained with;
only the knobs of training.config.resumable may differ, since they change how long it runs, what it
records, or where and on how many processes it runs, not what it learns. Anything else stops the resume with the list of
changed knobs, so a changed config is never resumed (and then written into the next checkpoint)
without a word.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from training.checkpoint import CONFIG_FILE
from training.config.resumable import config_differences, legacy_knobs

HOW_TO_PROCEED = ("to resume, set them back to the checkpoint's values; to train with the new ones, "
                  "choose a new output_dir")


class ResumeMismatch(ValueError):
    """The run cannot resume from its checkpoint: its config or prompt set changed since it was saved."""


def shown(value: Any) -> str:
    """A knob value as a reader writes it in YAML: `tiny`, `0.1`, `empty` for None."""
    return "empty" if value is None else str(value)


def check_resume_config(saved: Mapping[str, Any], config: Any, checkpoint: str) -> None:
    """Raise ResumeMismatch listing each changed knob (`name: checkpoint value -> new value`)."""
    defaults = {field.name: field.default for field in dataclasses.fields(config)}
    differences = config_differences(saved, dataclasses.asdict(config), defaults)
    if differences:
        changes = "; ".join(f"{name}: {shown(old)} -> {shown(new)}" for name, old, new in differences)
        raise ResumeMismatch(f"cannot resume from {checkpoint}: the config changed since it was saved ({changes}); "
                             f"{HOW_TO_PROCEED}")


def check_resume_prompts(saved_count: int, count: int, checkpoint: str) -> None:
    """Raise ResumeMismatch when the run's prompt set is not the size the checkpoint's sampler was trained on."""
    if saved_count != count:
        raise ResumeMismatch(f"cannot resume from {checkpoint}: the prompt set changed since it was saved "
                             f"(it had {saved_count} prompts, this run has {count}); to resume, use the same "
                             f"prompts; to train on the new ones, choose a new output_dir")


def read_saved_config(checkpoint_path: Path) -> dict[str, Any]:
    """The resolved config stored in a checkpoint folder; ResumeMismatch when it is missing or unreadable."""
    path = Path(checkpoint_path) / CONFIG_FILE
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ResumeMismatch(f"cannot resume from {checkpoint_path}: its saved config {path.name} cannot be read "
                             f"({error}); choose a new output_dir") from None
    if not isinstance(saved, dict):
        raise ResumeMismatch(f"cannot resume from {checkpoint_path}: {path.name} does not hold a config mapping")
    return saved


def prompts_fingerprint(records: Sequence[Any]) -> str:
    """A hash of the prompts in order (id, problem, answer, test cases, difficulty, pass rate): a checkpoint's
    sampler statistics and parked groups point at prompts by position, so a resume needs these very prompts."""
    digest = hashlib.sha256()
    for record in records:
        fields = [record.prompt_id, record.problem, record.answer, record.test_cases, record.difficulty,
                  record.pass_rate]
        digest.update(json.dumps(fields, sort_keys=True, default=str).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def check_resume(checkpoint_path: Path, state: Mapping[str, Any], config: Any, records: Sequence[Any]) -> Any:
    """The checks start_session runs before resuming: the same recipe and the same prompts (their number, then
    their contents and order where the checkpoint recorded them). Returns the config to resume with: knobs the
    checkpoint predates at their legacy values (training.config.resumable.LEGACY_VALUES), as it trained."""
    saved_config = read_saved_config(checkpoint_path)
    config = dataclasses.replace(config, **legacy_knobs(saved_config))
    check_resume_config(saved_config, config, str(checkpoint_path))
    check_resume_prompts(int(state["sampler"]["n"]), len(records), str(checkpoint_path))
    saved = state.get("prompts_fingerprint")
    if saved is not None and saved != prompts_fingerprint(records):
        raise ResumeMismatch(f"cannot resume from {checkpoint_path}: the prompt set changed since it was saved "
                             f"(the same {len(records)} prompts in number, but edited or reordered, and the "
                             "checkpoint's sampler statistics and parked groups point at prompts by position); to "
                             "resume, restore those prompts; to train on the new ones, choose a new output_dir")
    return config
