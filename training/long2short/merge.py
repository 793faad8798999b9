"""Model merging (METHOD.md section 8): the weighted average of checkpoints of one architecture.

Weights are taken as given and must be non-negative and sum to 1 (no silent renormalisation: a
typo in a weight should fail, not shift the mix). Floating tensors are averaged in float32 and cast
back to their dtype; other tensors (integer buffers) must be equal in every model and are copied.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import torch

from training.long2short.base import Long2ShortHooks, Long2ShortJob, Long2ShortOutcome, Long2ShortStopped

WEIGHT_SUM_TOLERANCE = 1e-6
# Config entries that say nothing about the weights' layout (paths, versions, runtime switches).
IGNORED_CONFIG_KEYS = {"_name_or_path", "name_or_path", "transformers_version", "torch_dtype", "dtype", "use_cache",
                       "architectures", "_commit_hash"}

StateDict = Mapping[str, torch.Tensor]


def check_weights(weights: Sequence[float], count: int) -> None:
    """One non-negative weight per model, summing to 1."""
    if len(weights) != count:
        raise ValueError(f"{len(weights)} weights for {count} models")
    if any(not weight >= 0.0 for weight in weights):
        raise ValueError(f"merge weights must be non-negative, got {list(weights)}")
    if abs(sum(weights) - 1.0) > WEIGHT_SUM_TOLERANCE:
        raise ValueError(f"merge weights must sum to 1, got {list(weights)} (sum {sum(weights):g})")


def check_same_layout(reference: StateDict, other: StateDict, other_name: str = "model 2") -> None:
    """Refuse `other` unless it has exactly the reference's tensor names, shapes and dtypes."""
    missing, extra = sorted(reference.keys() - other.keys()), sorted(other.keys() - reference.keys())
    if missing or extra:
        raise ValueError(f"{other_name} does not match the first model: "
                         f"missing tensors {missing[:3]}, unexpected tensors {extra[:3]}")
    for name, tensor in reference.items():
        if other[name].shape != tensor.shape:
            raise ValueError(f"{other_name}: tensor {name} has shape {tuple(other[name].shape)}, "
                             f"the first model's has {tuple(tensor.shape)}")
        if other[name].dtype != tensor.dtype:
            raise ValueError(f"{other_name}: tensor {name} is {other[name].dtype}, the first model's is {tensor.dtype}")


def add_weighted(total: dict[str, torch.Tensor], state_dict: StateDict, weight: float, name: str) -> None:
    """total += weight * state_dict for floating tensors (float32 sums); other tensors must be equal."""
    for key, tensor in state_dict.items():
        if not tensor.is_floating_point():
            if key not in total:
                total[key] = tensor.detach().cpu().clone()
            elif not torch.equal(total[key], tensor.detach().cpu()):
                raise ValueError(f"{name}: non-floating tensor {key} differs from the first model's, "
                                 "and such tensors cannot be averaged")
            continue
        contribution = tensor.detach().to("cpu", torch.float32) * weight
        total[key] = total[key] + contribution if key in total else contribution


def cast_like(total: dict[str, torch.Tensor], reference: StateDict) -> dict[str, torch.Tensor]:
    return {key: total[key].to(reference[key].dtype) for key in reference}


def merge_state_dicts(state_dicts: Sequence[StateDict], weights: Sequence[float]) -> dict[str, torch.Tensor]:
    """sum_i weights[i] * state_dicts[i], tensor by tensor (on the CPU, in each tensor's dtype).

    Refuses fewer than one model, weights that are negative or do not sum to 1, and models whose tensor
    names, shapes or dtypes differ (naming the first offending tensor and both shapes).
    """
    if not state_dicts:
        raise ValueError("nothing to merge: no state dicts given")
    check_weights(weights, len(state_dicts))
    reference = state_dicts[0]
    for index, state_dict in enumerate(state_dicts[1:], start=2):
        check_same_layout(reference, state_dict, f"model {index}")
    total: dict[str, torch.Tensor] = {}
    for index, (state_dict, weight) in enumerate(zip(state_dicts, weights), start=1):
        add_weighted(total, state_dict, weight, f"model {index}")
    return cast_like(total, reference)


def check_same_architecture(parent_path: Path, other_path: Path) -> None:
    """Refuse a checkpoint whose config.json differs from the parent's in anything but paths and versions."""
    from transformers import AutoConfig

    parent = AutoConfig.from_pretrained(str(parent_path)).to_dict()
    other = AutoConfig.from_pretrained(str(other_path)).to_dict()
    for key in sorted((parent.keys() | other.keys()) - IGNORED_CONFIG_KEYS):
        if parent.get(key) != other.get(key):
            raise ValueError(f"checkpoint {other_path} has a different architecture from the parent "
                             f"{parent_path}: {key} is {other.get(key)!r} there and {parent.get(key)!r} in the parent")


def check_same_vocabulary(parent_tokenizer, other_path: Path) -> None:
    """Averaged embeddings only make sense when token ids mean the same thing in every model."""
    from training.models.loading import load_tokenizer

    if load_tokenizer(str(other_path)).get_vocab() != parent_tokenizer.get_vocab():
        raise ValueError(f"checkpoint {other_path} has a different tokenizer vocabulary from the parent's")


def run(config, job: Long2ShortJob, hooks: Long2ShortHooks) -> Long2ShortOutcome:
    """Average the parent with job.merge_model_paths (weights from MergeConfig) and save the result.

    Models are loaded one at a time and added into a float32 running sum, so memory holds the parent,
    the sum and one other model.
    """
    from training.long2short.output import load_parent, save_variant_checkpoint
    from training.models.loading import load_model

    others = list(job.merge_model_paths)
    if not others:
        raise ValueError("model merging needs at least one other checkpoint besides the parent "
                         "(other_checkpoint_ids or other_run_iterations)")
    weights = config.weights(len(others))
    check_weights(weights, len(others) + 1)
    for path in others:
        check_same_architecture(job.parent_model_path, path)
    model, tokenizer = load_parent(job, dtype="auto")  # saved in the parent's dtype; sums are float32
    for path in others:
        check_same_vocabulary(tokenizer, path)
    reference = model.state_dict()
    total: dict[str, torch.Tensor] = {}
    add_weighted(total, reference, weights[0], "the parent")
    hooks.log(f"merging the parent (weight {weights[0]:g}) with {len(others)} checkpoint(s)")
    for step, (path, weight) in enumerate(zip(others, weights[1:]), start=1):
        if hooks.should_stop():
            raise Long2ShortStopped(f"stopped after merging {step} of {len(others) + 1} models")
        other = load_model(str(path), dtype="auto").state_dict()
        check_same_layout(reference, other, f"checkpoint {path}")
        add_weighted(total, other, weight, f"checkpoint {path}")
        del other
        hooks.log(f"added {path} with weight {weight:g}")
        hooks.progress(step / (len(others) + 1))
    model.load_state_dict(cast_like(total, reference))
    path, size = save_variant_checkpoint(model, tokenizer, job, "merge", config)
    hooks.progress(1.0)
    return Long2ShortOutcome(checkpoint_path=path, size_bytes=size,
                             metrics={"models_merged": float(len(others) + 1), "parent_weight": float(weights[0])})
