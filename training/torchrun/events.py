"""The events file between torchrun's rank 0 and the launcher: one JSON line per event.

Rank 0 writes (file_hooks, event_writer): an `iteration` or `checkpoint` report, the iterations of
`checkpoints_removed`, a `log` line, and a last `outcome`. The launcher reads (EventReader) and replays each
event into the worker's hooks, so rows are written exactly as for one process.

The other way, with keep_last_checkpoints, the launcher writes the pinned checkpoints file (write_pinned):
the worker's `pinned_checkpoints` as it answered after replaying the first N events. Before it removes old
checkpoints, rank 0 waits (pinned_after) for an answer given after every event it wrote, its newest checkpoint's
included: the evaluation that checkpoint's row queued is then among the pins.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

from training.types import (
    CheckpointReport, IterationReport, PinnedCheckpointsUnknown, SampleReport, TrainingHooks, TrainingOutcome,
)

ITERATION, CHECKPOINT, LOG, OUTCOME = "iteration", "checkpoint", "log", "outcome"
CHECKPOINTS_REMOVED = "checkpoints_removed"
PINNED_WAIT_SECONDS = 120.0  # rank 0 keeps its old checkpoints (this save) when the launcher has not answered by then
PINNED_POLL_SECONDS = 0.1


class EventWriter:
    """Appends one JSON line per event, flushed at once so the launcher sees it; counts the events written."""

    def __init__(self, path: Path):
        self.path, self.written = path, 0

    def __call__(self, kind: str, **fields) -> None:
        with open(self.path, "a") as events:
            events.write(json.dumps({"kind": kind, **fields}, default=str) + "\n")
        self.written += 1


def event_writer(path: Path) -> EventWriter:
    return EventWriter(path)


def write_pinned(path: Path, iterations: set[int], events_replayed: int) -> None:
    """The pinned checkpoints' iterations as the worker answered after replaying `events_replayed` events,
    replaced at once (a reader never sees half of it)."""
    staging = path.with_name(path.name + ".tmp")
    staging.write_text(json.dumps({"events_replayed": events_replayed, "iterations": sorted(iterations)}))
    staging.replace(path)


def pinned_after(path: Path, events_written: int, wait_seconds: float = PINNED_WAIT_SECONDS) -> set[int]:
    """The pinned iterations the launcher wrote once it had replayed at least `events_written` events; waits for
    them, then raises PinnedCheckpointsUnknown."""
    deadline = time.monotonic() + wait_seconds
    while True:
        if path.exists():
            answer = json.loads(path.read_text())
            if answer["events_replayed"] >= events_written:
                return set(answer["iterations"])
        if time.monotonic() >= deadline:
            raise PinnedCheckpointsUnknown(f"the launcher gave no pinned checkpoints in {path} after event "
                                           f"{events_written} within {wait_seconds:.0f} s")
        time.sleep(PINNED_POLL_SECONDS)


def file_hooks(events_path: Path, stop_path: Path, pinned_path: Path | None = None) -> TrainingHooks:
    """Rank 0's hooks: progress to the events file, stop when the stop file exists, the pinned checkpoints from
    the pinned file once the launcher replayed every event written (none without a pinned file)."""
    write = event_writer(events_path)
    return TrainingHooks(
        on_iteration=lambda report: write(ITERATION, report=dataclasses.asdict(report)),
        on_checkpoint=lambda report: write(CHECKPOINT, report=dataclasses.asdict(report)),
        log=lambda line: write(LOG, line=line),
        should_stop=stop_path.exists,
        pinned_checkpoints=(lambda: pinned_after(pinned_path, write.written)) if pinned_path is not None else set,
        on_checkpoints_removed=lambda iterations: write(CHECKPOINTS_REMOVED, iterations=list(iterations)),
    )


class EventReader:
    """Reads rank 0's events file incrementally and replays each complete line into the hooks."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0
        self.replayed = 0  # events replayed so far
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
            self.replayed += 1
        return self.outcome

    def dispatch(self, event: dict, hooks: TrainingHooks) -> None:
        kind = event["kind"]
        if kind == ITERATION:
            report = event["report"]
            samples = tuple(SampleReport(**sample) for sample in report.pop("samples"))
            hooks.on_iteration(IterationReport(**report, samples=samples))
        elif kind == CHECKPOINT:
            report = event["report"]
            hooks.on_checkpoint(CheckpointReport(iteration=report["iteration"], path=Path(report["path"]),
                                                 size_bytes=report["size_bytes"]))
        elif kind == CHECKPOINTS_REMOVED:
            hooks.on_checkpoints_removed(event["iterations"])
        elif kind == LOG:
            hooks.log(event["line"])
        elif kind == OUTCOME:
            self.outcome = TrainingOutcome(**event["outcome"])
        else:
            raise ValueError(f"{self.path}: unknown event kind {kind!r}")
