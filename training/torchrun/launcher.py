"""Run a trainer backend as torchrun processes when a run asks for several (nnodes * nproc_per_node > 1).

Same signature as a backend: `run_under_torchrun(config, records, paths, hooks)`. It writes a spec for
`training.torchrun.entry` under `<output_dir>/torchrun/`, starts torchrun (`python -m training.torchrun.agent`),
replays rank 0's events file into the hooks (so rows are written exactly as for one process), turns
`hooks.should_stop()` into the stop file the ranks obey between iterations, answers rank 0's checkpoint removal
requests (keep_last_checkpoints) with `hooks.approve_checkpoint_removals` in the removals file, and raises
with the tail of the ranks' log when torchrun fails (the events: events.py). No Django here: the worker
passes its row hooks.

Several machines: every node runs the same rendezvous (`nnodes`, `rdzv_endpoint`, `rdzv_id`). The worker
that claims the run starts its node's processes and asks for the others (`start_other_nodes`, which sends
one join task per other node to the gpu queue); a join (`join_under_torchrun`) runs the same spec on its
node and only watches. `output_dir` must be on storage all nodes share: rank 0 may be on any node.
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
from dataclasses import dataclass
from typing import Callable, Sequence

from common.knobs import config_to_dict
from training.config import RLConfig
from training.torchrun.events import EventReader
from training.types import PromptRecord, RunPaths, TrainingHooks, TrainingOutcome

POLL_SECONDS = 0.5
LOG_TAIL_LINES = 40
# A joined node whose run has ended waits this long for its ranks to exit by themselves before stopping them.
JOIN_EXIT_GRACE_SECONDS = 30.0


def needs_torchrun(config: RLConfig) -> bool:
    return config.nnodes * config.nproc_per_node > 1


def torchrun_command(config: RLConfig, spec_path: Path, run_key: str, node_rank: int | None = None) -> list[str]:
    """The torchrun command line of this node (the same on every node, apart from a static node_rank).

    node_rank: this node's static rank (None = config.node_rank; both None = assigned by the rendezvous).
    """
    command = [sys.executable, "-m", "training.torchrun.agent", f"--nnodes={config.nnodes}",
               f"--nproc_per_node={config.nproc_per_node}"]
    if config.rdzv_endpoint is None:
        command.append("--standalone")  # one machine: a free local port
    else:
        command += ["--rdzv_backend=c10d", f"--rdzv_endpoint={config.rdzv_endpoint}",
                    f"--rdzv_id={config.rdzv_id or run_key}"]
    node_rank = config.node_rank if node_rank is None else node_rank
    if node_rank is not None:
        command.append(f"--node_rank={node_rank}")
    return command + ["-m", "training.torchrun.entry", str(spec_path)]


def other_node_ranks(config: RLConfig) -> list[int | None]:
    """The static rank of each node the claiming worker asks to join (None each when the rendezvous assigns them)."""
    if config.node_rank is None:
        return [None] * (config.nnodes - 1)
    return [rank for rank in range(config.nnodes) if rank != config.node_rank]


def spec_paths(output_dir: Path) -> tuple[Path, Path, Path]:
    """(spec, events, stop) of a run's torchrun launch, under its output folder."""
    folder = output_dir / "torchrun"
    return folder / "spec.json", folder / "events.jsonl", folder / "stop"


def removals_path(output_dir: Path) -> Path:
    """The launcher's answers to rank 0's checkpoint removal requests (events.answer_removals)."""
    return spec_paths(output_dir)[0].with_name("removals.json")


def write_spec(config: RLConfig, records: Sequence[PromptRecord], paths: RunPaths) -> tuple[Path, Path, Path]:
    """(spec, events, stop) paths under the run's output folder; stale events, stop and removal answers are
    removed (a previous launch's answers would match this one's request numbers)."""
    spec, events, stop = spec_paths(paths.output_dir)
    removals = removals_path(paths.output_dir)
    spec.parent.mkdir(parents=True, exist_ok=True)
    for stale in (events, stop, removals):
        stale.unlink(missing_ok=True)
    spec.write_text(json.dumps({
        "config": config_to_dict(config), "records": [dataclasses.asdict(record) for record in records],
        "output_dir": str(paths.output_dir), "models_dir": str(paths.models_dir),
        "events": str(events), "stop": str(stop), "removals": str(removals),
    }))
    return spec, events, stop


def run_under_torchrun(config: RLConfig, records: Sequence[PromptRecord], paths: RunPaths, hooks: TrainingHooks,
                       run_key: str = "mirrorlab-run",
                       start_other_nodes: Callable[[], None] | None = None) -> TrainingOutcome:
    """Train with torchrun on this node; hooks see rank 0's progress; cancelling stops the ranks between iterations.

    start_other_nodes: called once the spec is written, when nnodes > 1 (the other nodes read the same spec).
    """
    from training.checkpoint import latest_checkpoint
    from training.models.loading import resolve_model_path

    if latest_checkpoint(paths.output_dir) is None:  # a resume loads the checkpoint, not the base model
        resolve_model_path(config.model, paths.models_dir)  # create a preset once, before the ranks race for it
    spec, events_path, stop_path = write_spec(config, records, paths)
    log_path = spec.parent / "torchrun.log"
    command = torchrun_command(config, spec, run_key)
    hooks.log(f"torchrun: {config.nnodes} node(s) x {config.nproc_per_node} process(es); log {log_path}")
    if config.nnodes > 1:
        hooks.log(f"the other {config.nnodes - 1} node(s) join through the gpu queue; by hand, each runs: "
                  f"{shlex.join(command)}")
        if start_other_nodes is not None:
            start_other_nodes()
    process = start_torchrun(command, log_path)
    reader = EventReader(events_path, removals_path(paths.output_dir))
    try:
        while process.poll() is None:
            reader.replay(hooks)
            if hooks.should_stop() and not stop_path.exists():
                stop_path.touch()
                hooks.log("stop requested: the ranks stop after the current iteration")
            time.sleep(POLL_SECONDS)
    except BaseException:
        stop_torchrun(process)  # the worker gave up: do not leave ranks behind
        raise
    outcome = reader.replay(hooks)
    if process.returncode != 0 or outcome is None:
        raise RuntimeError(f"torchrun exited with code {process.returncode}; the end of its log ({log_path}):\n"
                           f"{log_tail(log_path)}")
    return outcome


def start_torchrun(command: list[str], log_path: Path) -> subprocess.Popen:
    """Start torchrun in its own process group, its output appended to `log_path`."""
    with open(log_path, "ab") as log:
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")})


def stop_torchrun(process: subprocess.Popen) -> None:
    """SIGTERM torchrun's whole process group (the agent and its ranks) and reap it."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
    process.wait()


@dataclass(frozen=True)
class JoinWatch:
    """What a joined node asks of the run's row while its ranks train (the caller reads the row)."""

    log: Callable[[str], None]
    cancel_requested: Callable[[], bool]
    still_running: Callable[[], bool]


def join_under_torchrun(config: RLConfig, output_dir: Path, run_key: str, watch: JoinWatch,
                        node_rank: int | None = None, node_label: str = "node") -> int:
    """Run this node's share of a multi-node run (the spec the claiming node wrote); returns torchrun's exit code.

    Rank 0 (on whichever node) writes the events; this node reports nothing but log lines. A cancel touches
    the shared stop file (the ranks stop after the iteration); once the run has ended, ranks still alive after
    JOIN_EXIT_GRACE_SECONDS are stopped. A non-zero exit is logged with the tail of this node's torchrun log.
    """
    spec, _events, stop_path = spec_paths(output_dir)
    if not spec.exists():
        raise FileNotFoundError(f"{spec} is missing on this node: output_dir must be on storage every node shares")
    log_path = spec.parent / f"torchrun-{node_label}.log"
    process = start_torchrun(torchrun_command(config, spec, run_key, node_rank), log_path)
    watch.log(f"joined with {config.nproc_per_node} process(es) (torchrun pid {process.pid}); log {log_path}")
    ended_at = None
    try:
        while process.poll() is None:
            if watch.cancel_requested() and not stop_path.exists():
                stop_path.touch()
            if ended_at is None and not watch.still_running():
                ended_at = time.monotonic()
            if ended_at is not None and time.monotonic() - ended_at > JOIN_EXIT_GRACE_SECONDS:
                watch.log("the run ended but this node's ranks did not: stopping them")
                break
            time.sleep(POLL_SECONDS)
    finally:
        stop_torchrun(process)
    if process.returncode != 0 and ended_at is None:
        watch.log(f"torchrun failed with exit code {process.returncode}; the end of its log ({log_path}):\n"
                  f"{log_tail(log_path)}")
    elif process.returncode == 0:
        watch.log("torchrun finished on this node")
    return process.returncode


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
