"""Where an RL run's files live and the rendezvous id of its nodes: shared by the main node's job and the
nodes that join it."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from training.types import RunPaths
from webapp.path_policy import run_checkpoint_folder
from webapp.runs.models import RLRun


def run_paths(run: RLRun) -> RunPaths:
    output_dir = run_checkpoint_folder(run.pk)
    output_dir.mkdir(parents=True, exist_ok=True)
    return RunPaths(output_dir=output_dir, models_dir=Path(settings.MODELS_DIR))


def torchrun_run_key(run: RLRun) -> str:
    """The rendezvous id of the run's nodes when its config sets none."""
    return f"mirrorlab-run-{run.pk}"
