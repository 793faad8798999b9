"""Where a long2short variant's model comes from (the parent) and goes (its checkpoint folder)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from training.checkpoint import folder_bytes
from training.long2short.base import Long2ShortJob

CHECKPOINT_FOLDER = "checkpoint"
VARIANT_CONFIG_FILE = "long2short_config.json"


def variant_checkpoint_dir(job: Long2ShortJob) -> Path:
    return Path(job.output_dir) / CHECKPOINT_FOLDER


def save_variant_checkpoint(model, tokenizer, job: Long2ShortJob, method: str, config: Any,
                            iteration: int | None = None) -> tuple[Path, int]:
    """Write the variant's model (Hugging Face layout) and its resolved config; returns (folder, bytes).

    Written to a staging folder, then renamed into place, so a crash leaves no half checkpoint.
    `config` is the method's config dataclass (or already a dict).
    """
    from common.knobs import config_to_dict

    final = variant_checkpoint_dir(job)
    staging = final.with_name(final.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    model.save_pretrained(staging, safe_serialization=True)
    tokenizer.save_pretrained(staging)
    record = {
        "method": method,
        "config": config if isinstance(config, dict) else config_to_dict(config),
        "iteration": iteration,
        "parent_model_path": str(job.parent_model_path),
        "merge_model_paths": [str(path) for path in job.merge_model_paths],
        "parent_config": job.parent_config,
    }
    (staging / VARIANT_CONFIG_FILE).write_text(json.dumps(record, indent=2, sort_keys=True, default=str))
    if final.exists():
        shutil.rmtree(final)
    os.replace(staging, final)
    return final, folder_bytes(final)


def load_parent(job: Long2ShortJob, dtype: str = "float32"):
    """(model, tokenizer) of the parent checkpoint; the model on the GPU when there is one, in training mode, in
    `dtype` ("auto": as stored)."""
    from training.models.loading import load_model, load_tokenizer
    from training.trainer.torch_trainer import default_device

    path = str(job.parent_model_path)
    if not Path(path).is_dir():
        raise FileNotFoundError(f"parent checkpoint {path} does not exist: was the parent run's checkpoint deleted?")
    return load_model(path, dtype).to(default_device()), load_tokenizer(path)
