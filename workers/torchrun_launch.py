"""Run a trainer backend as torchrun processes when a run asks for several (nnodes * nproc_per_node > 1).

Same signature as a backend: `run_under_torchrun(config, records, paths, hooks)`. It writes a spec for
`training.torchrun_entry` under `<output_dir>/torchrun/`, starts `python -m torch.distributed.run ...`,
replays rank 0's events file into the hooks (so rows are written exactly as for one process), turns
`hooks.should_stop()` into the stop file the ranks obey between iterations, and raises with the tail
of the ranks' log when torchrun fails. No Django here: workers/rl_job.py passes its row hooks.

Several machines: every node runs the same rendezvous (`nnodes`, `rdzv_endpoint`, `rdzv_id`); the
worker that claims the run starts its node's processes and logs the command the other nodes' GPU
workers (or an operator) run; `output_dir` must be on storage all nodes share (rank 0 may be anywhere).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

from common.knobs import config_to_dict
from training.config import RLConfig
from training.types import CheckpointReport, IterationReport, PromptRecord, RunPaths, SampleReport, TrainingHooks
from training.types import TrainingOutcome

POLL_SECONDS = 0.5
LOG_TAIL_LINES = 40


def needs_torchrun(config: RLConfig) -> bool:
    return config.nnodes * config.nproc_per_node > 1


def torchrun_command(config: RLConfig, spec_path: Path, run_key: str) -> list[str]:
    """The torchrun command line of this node (the same on every node, apart from a static node_rank)."""
    command = [sys.executable, "-m", "torch.distributed.run", f"--nnodes={config.nnodes}",
               f"--nproc_per_node={config.nproc_per_node}"]
    if config.rdzv_endpoint is None:
        command.append("--standalone")  # one machine: a free local port
    else:
        command += ["--rdzv_backend=c10d", f"--rdzv_endpoint={config.rdzv_endpoint}",
                    f"--rdzv_id={config.rdzv_id or run_key}"]
    if config.node_rank is not None:
        command.append(f"--node_rank={config.node_rank}")
    return command + ["-m", "training.torchrun_entry", str(spec_path)]


def write_spec(config: RLConfig, records: Sequence[PromptRecord], paths: RunPaths) -> tuple[Path, Path, Path]:
    """(spec, events, stop) paths under the run's output folder; stale events and stop files are removed."""
    folder = paths.output_dir / "torchrun"
    folder.mkdir(parents=True, exist_ok=True)
    events, stop, spec = folder / "events.jsonl", folder / "stop", folder / "spec.json"
    for stale in (events, stop):
        stale.unlink(missing_ok=True)
    spec.write_text(json.dumps({
        "config": config_to_dict(config), "records": [dataclasses.asdict(record) for record in records],
        "output_dir": str(paths.output_dir), "models_dir": str(paths.models_dir),
        "events": str(events), "stop": str(stop),
    }))
    return spec, events, stop


def run_under_torchrun(config: RLConfig, records: Sequence[PromptRecord], paths: RunPaths, hooks: TrainingHooks,
                       run_key: str = "mirrorlab-run") -> TrainingOutcome:
    """Train with torchrun on this node; hooks see rank 0's progress; cancelling stops the ranks between iterations."""
    from training.models.loading import resolve_model_path

    resolve_model_path(config.model, paths.models_dir)  # create a preset once, before the ranks race for it
    spec, events_path, stop_path = write_spec(config, records, paths)
    log_path = spec.parent / "torchrun.log"
    command = torchrun_command(config, spec, run_key)
    hooks.log(f"torchrun: {config.nnodes} node(s) x {config.nproc_per_node} process(es); log {log_path}")
    if config.nnodes > 1:
        hooks.log(f"on each other node run: {shlex.join(command)}")
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                   env={**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")})
    reader = EventReader(events_path)
    try:
        while process.poll() is None:
            reader.replay(hooks)
            if hooks.should_stop() and not stop_path.exists():
                stop_path.touch()
                hooks.log("stop requested: the ranks stop after the current iteration")
            time.sleep(POLL_SECONDS)
    except BaseException:
        os.killpg(process.pid, signal.SIGTERM)  # the worker gave up: do not leave ranks behind
        process.wait()
        raise
    outcome = reader.replay(hooks)
    if process.returncode != 0 or outcome is None:
        raise RuntimeError(f"torchrun exited with code {process.returncode}; the end of its log ({log_path}):\n"
                           f"{log_tail(log_path)}")
    return outcome


class EventReader:
    """Reads rank 0's events file incrementally and replays each complete line into the hooks."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0
        self.outcome: TrainingOutcome | None = None

    def replay(self, hooks: TrainingHooks) -> TrainingOutcome | None:
        """Replay the new events; returns the outcome once rank 0 wrote it."""
        if not self.path.exists():
            return self.outcome
        with open(self.path, "rb") as events:
            events.seek(self.offset)
            data = events.read()
        complete = data[:data.rfind(b"\n") + 1]  # a line still being written waits for the next call
        self.offset += len(complete)
        for line in complete.decode().splitlines():
            self.dispatch(json.loads(line), hooks)
        return self.outcome

    def dispatch(self, event: dict, hooks: TrainingHooks) -> None:
        kind = event["kind"]
        if kind == "iteration":
            report = event["report"]
            samples = tuple(SampleReport(**sample) for sample in report.pop("samples"))
            hooks.on_iteration(IterationReport(**report, samples=samples))
        elif kind == "checkpoint":
            report = event["report"]
            hooks.on_checkpoint(CheckpointReport(iteration=report["iteration"], path=Path(report["path"]),
                                                 size_bytes=report["size_bytes"]))
        elif kind == "log":
            hooks.log(event["line"])
        elif kind == "outcome":
            self.outcome = TrainingOutcome(**event["outcome"])
        else:
            raise ValueError(f"{self.path}: unknown event kind {kind!r}")


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
