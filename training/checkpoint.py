"""Checkpoints: Hugging Face safetensors weights plus everything a resumed run needs.

Layout of `<output_dir>/checkpoints/iteration-000012/`: config.json, model.safetensors, tokenizer
files (loadable by any Hugging Face tool and by vLLM), `mirrorlab_config.json` (the resolved run
config) and `training_state.pt` (iteration, RNG states, sampler statistics, replay buffer).
Under torchrun the replay buffer holds every rank's parked groups in rank order, with each
rank's count in `replay_buffer_rank_sizes` (see `replay_buffer_state`, `replay_buffer_for_rank`), and each
rank's finish counts in `replay_buffer_finish_counts`.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from training.distributed import share_bounds
from training.types import CheckpointReport

STATE_FILE = "training_state.pt"
CONFIG_FILE = "mirrorlab_config.json"
RANK_STATE_DIR = "rank_state"  # each rank's trainer state a checkpoint's weights do not hold (rank-<r>.pt)
PREFIX = "iteration-"
REMOVING_SUFFIX = ".removing"  # a checkpoint folder set aside to be deleted (keep_last_checkpoints)


@dataclass(frozen=True)
class ResumeState:
    path: Path
    iteration: int
    state: dict[str, Any]


def checkpoint_dir(output_dir: Path, iteration: int) -> Path:
    return Path(output_dir) / "checkpoints" / f"{PREFIX}{iteration:06d}"


def rng_state(numpy_rng: np.random.Generator) -> dict[str, Any]:
    return {"python": random.getstate(), "numpy": numpy_rng.bit_generator.state, "torch": torch.get_rng_state()}


def restore_rng(state: dict[str, Any], numpy_rng: np.random.Generator) -> None:
    random.setstate(state["python"])
    numpy_rng.bit_generator.state = state["numpy"]
    torch.set_rng_state(state["torch"])


def replay_buffer_state(rank_buffers: list[list[dict]], rank_counts: list[dict[str, float]]) -> dict[str, Any]:
    """The checkpoint entries of every rank's replay buffer (in rank order): one flat list plus the counts, and
    each rank's finish counts (trajectories.FinishCounts as a dict)."""
    return {"replay_buffer": [group for buffer in rank_buffers for group in buffer],
            "replay_buffer_rank_sizes": [len(buffer) for buffer in rank_buffers],
            "replay_buffer_finish_counts": list(rank_counts)}


def replay_buffer_for_rank(state: dict[str, Any], rank: int, world_size: int) -> list[dict]:
    """A rank's parked groups on resume: its own when the world size is unchanged, else an even share."""
    groups = state["replay_buffer"]
    sizes = state.get("replay_buffer_rank_sizes") or [len(groups)]  # absent: a single-process checkpoint
    if len(sizes) == world_size:
        start = sum(sizes[:rank])
        return groups[start:start + sizes[rank]]
    start, stop = share_bounds(len(groups), rank, world_size)
    return groups[start:stop]


def finish_counts_for_rank(state: dict[str, Any], rank: int, world_size: int) -> dict[str, float]:
    """A rank's finish counts on resume: its own when the world size is unchanged, else every rank's summed (the
    shares they give are the whole run's); empty for checkpoints written before they were kept."""
    counts = state.get("replay_buffer_finish_counts") or []
    if len(counts) == world_size:
        return counts[rank]
    return {name: sum(rank_counts[name] for rank_counts in counts) for name in (counts[0] if counts else ())}


def save_checkpoint(output_dir: Path, iteration: int, model, tokenizer, config: dict[str, Any],
                    state: dict[str, Any]) -> CheckpointReport:
    """Write the checkpoint to a staging folder, then rename it into place (a crash leaves no half checkpoint)."""
    final = checkpoint_dir(output_dir, iteration)
    staging = final.with_name(final.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    model.save_pretrained(staging, safe_serialization=True)
    tokenizer.save_pretrained(staging)
    (staging / CONFIG_FILE).write_text(json.dumps(config, indent=2, sort_keys=True))
    torch.save({"iteration": iteration, **state}, staging / STATE_FILE)
    pending = pending_rank_state_dir(output_dir, iteration)
    if pending.is_dir():
        os.replace(pending, staging / RANK_STATE_DIR)
    if final.exists():
        shutil.rmtree(final)
    os.replace(staging, final)
    return checkpoint_report(final)


def remove_unfinished_saves(output_dir: Path) -> list[Path]:
    """Delete the staging folders of saves a crash interrupted (`*.partial`, `*.rank_state`) and the checkpoints
    whose removal it interrupted (`*.removing`): a full copy of the weights each, which no resume reads and a save
    of another iteration never replaces. Returns them."""
    root = Path(output_dir) / "checkpoints"
    patterns = (f"{PREFIX}*.partial", f"{PREFIX}*.rank_state", f"{PREFIX}*{REMOVING_SUFFIX}")
    leftovers = sorted(path for pattern in patterns for path in root.glob(pattern) if path.is_dir())
    for path in leftovers:
        shutil.rmtree(path, ignore_errors=True)
    return leftovers


def remove_checkpoints(output_dir: Path, iterations: list[int], log: Callable[[str], None]) -> list[int]:
    """Delete these checkpoints of a run, each crash-safely: its folder (rank_state included) is first renamed to
    `<name>.removing`, which resuming ignores and remove_unfinished_saves deletes, then deleted. A failure is
    logged and the run goes on. Returns the iterations whose checkpoint is gone (renamed: no resume reads it
    again, even when deleting its files failed)."""
    removed = []
    for iteration in iterations:
        folder = checkpoint_dir(output_dir, iteration)
        aside = folder.with_name(folder.name + REMOVING_SUFFIX)
        try:
            shutil.rmtree(aside, ignore_errors=True)  # an earlier removal of this iteration that a crash interrupted
            os.rename(folder, aside)
        except OSError as error:
            log(f"could not remove the checkpoint of iteration {iteration} ({error}); it stays")
            continue
        removed.append(iteration)
        try:
            shutil.rmtree(aside)
        except OSError as error:
            log(f"checkpoint of iteration {iteration}: could not delete {aside} ({error}); the run's next start "
                "deletes it")
    return removed


def pending_rank_state_dir(output_dir: Path, iteration: int) -> Path:
    """Where the ranks write their trainer state before save_checkpoint moves it into the checkpoint."""
    final = checkpoint_dir(output_dir, iteration)
    return final.with_name(final.name + ".rank_state")


def write_rank_state(output_dir: Path, iteration: int, rank: int, state: dict[str, Any]) -> None:
    """One rank's trainer state for the checkpoint of `iteration` (every rank writes its own, before it is saved)."""
    folder = pending_rank_state_dir(output_dir, iteration)
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(state, folder / f"rank-{rank}.pt")


def read_rank_state(checkpoint: Path, rank: int) -> dict[str, Any] | None:
    """A rank's trainer state in a checkpoint; None where the checkpoint holds none for it."""
    path = Path(checkpoint) / RANK_STATE_DIR / f"rank-{rank}.pt"
    return torch.load(path, weights_only=True) if path.is_file() else None


def folder_bytes(folder: Path) -> int:
    """The bytes of every file under a folder (a checkpoint's size)."""
    return sum(path.stat().st_size for path in Path(folder).rglob("*") if path.is_file())


def checkpoint_iteration(folder: Path) -> int:
    """The iteration of a checkpoint folder, from its name (`iteration-000012`, or a set-aside `....removing`)."""
    return int(Path(folder).name.removeprefix(PREFIX).removesuffix(REMOVING_SUFFIX))


def checkpoint_report(folder: Path) -> CheckpointReport:
    """The report of a saved checkpoint folder: its iteration (from the name), path and size."""
    return CheckpointReport(iteration=checkpoint_iteration(folder), path=folder, size_bytes=folder_bytes(folder))


def complete_checkpoint_dirs(output_dir: Path) -> list[Path]:
    """A run's complete checkpoint folders (renamed into place, with their state), oldest first."""
    folder = Path(output_dir) / "checkpoints"
    if not folder.exists():
        return []
    complete = [p for p in folder.glob(f"{PREFIX}*") if p.is_dir() and p.name.removeprefix(PREFIX).isdigit()
                and (p / STATE_FILE).exists()]
    return sorted(complete, key=lambda p: int(p.name.removeprefix(PREFIX)))  # by number: 1000000 after 999999


def latest_checkpoint(output_dir: Path) -> ResumeState | None:
    """The newest complete checkpoint of a run, or None."""
    candidates = complete_checkpoint_dirs(output_dir)
    if not candidates:
        return None
    path = candidates[-1]
    state = torch.load(path / STATE_FILE, weights_only=False)
    return ResumeState(path=path, iteration=int(state["iteration"]), state=state)
