"""The events file between torchrun's rank 0 and the launcher: one JSON line per event.

Rank 0 writes (file_hooks, event_writer): an `iteration` or `checkpoint` report, a `log` line, and a last
`outcome`. The launcher reads (EventReader) and replays each event into the worker's hooks, so rows are
written exactly as for one process.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from training.types import CheckpointReport, IterationReport, SampleReport, TrainingHooks, TrainingOutcome

ITERATION, CHECKPOINT, LOG, OUTCOME = "iteration", "checkpoint", "log", "outcome"


def event_writer(path: Path):
    """Append one JSON line per event, flushed at once so the launcher sees it."""

    def write(kind: str, **fields) -> None:
        with open(path, "a") as events:
            events.write(json.dumps({"kind": kind, **fields}, default=str) + "\n")

    return write


def file_hooks(events_path: Path, stop_path: Path) -> TrainingHooks:
    """Rank 0's hooks: progress to the events file, stop when the stop file exists."""
    write = event_writer(events_path)
    return TrainingHooks(
        on_iteration=lambda report: write(ITERATION, report=dataclasses.asdict(report)),
        on_checkpoint=lambda report: write(CHECKPOINT, report=dataclasses.asdict(report)),
        log=lambda line: write(LOG, line=line),
        should_stop=stop_path.exists,
    )


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
        if kind == ITERATION:
            report = event["report"]
            samples = tuple(SampleReport(**sample) for sample in report.pop("samples"))
            hooks.on_iteration(IterationReport(**report, samples=samples))
        elif kind == CHECKPOINT:
            report = event["report"]
            hooks.on_checkpoint(CheckpointReport(iteration=report["iteration"], path=Path(report["path"]),
                                                 size_bytes=report["size_bytes"]))
        elif kind == LOG:
            hooks.log(event["line"])
        elif kind == OUTCOME:
            self.outcome = TrainingOutcome(**event["outcome"])
        else:
            raise ValueError(f"{self.path}: unknown event kind {kind!r}")
