"""The events file between torchrun's rank 0 and the launcher: one JSON line per event.

Rank 0 writes (file_hooks, event_writer): an `iteration` or `checkpoint` report, a `log` line, a
`checkpoint_removals` request, and a last `outcome`. The launcher reads (EventReader) and replays each event into
the worker's hooks, so rows are written exactly as for one process.

With keep_last_checkpoints, rank 0 asks before it removes old checkpoints: a `checkpoint_removals` event holds the
candidates and a request number (the event's place in the file). Replaying it, the launcher asks the worker's
`approve_checkpoint_removals` (which records the approved ones as removed) and writes the answer to the removals
file (answer_removals): `{"request": n, "approved": [...]}`, or `{"request": n, "unknown": reason}`. Rank 0 waits
for the answer to its request (removals_answer) and keeps every checkpoint that time when none comes. The request
follows every event rank 0 wrote before, its newest checkpoint's included, so the evaluation that checkpoint's row
queued is seen.
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
WARMUP_STEP = "warmup_step"
WARMUP_EVENT_EVERY = 10  # rank 0 writes every this many warm-up steps (and the last), not each one
CHECKPOINT_REMOVALS = "checkpoint_removals"
REMOVALS_WAIT_SECONDS = 120.0  # rank 0 keeps its old checkpoints (this save) when the launcher has not answered by then
REMOVALS_POLL_SECONDS = 0.1


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


def request_removals(write: EventWriter, answers_path: Path, iterations: list[int],
                     wait_seconds: float = REMOVALS_WAIT_SECONDS) -> list[int]:
    """Rank 0's approve_checkpoint_removals: the request as an event, numbered by its place in the events file,
    then the launcher's answer to it (removals_answer)."""
    request = write.written + 1
    write(CHECKPOINT_REMOVALS, request=request, iterations=list(iterations))
    return removals_answer(answers_path, request, wait_seconds)


def removals_answer(path: Path, request: int, wait_seconds: float = REMOVALS_WAIT_SECONDS) -> list[int]:
    """The iterations the launcher approved for removal in its answer to `request`; waits for it, then raises
    PinnedCheckpointsUnknown (as it does for an answer saying the worker could not tell)."""
    deadline = time.monotonic() + wait_seconds
    while True:
        answer = json.loads(path.read_text()) if path.exists() else {}
        if answer.get("request") == request:
            if "unknown" in answer:
                raise PinnedCheckpointsUnknown(answer["unknown"])
            return answer["approved"]
        if time.monotonic() >= deadline:
            raise PinnedCheckpointsUnknown(f"the launcher did not answer removal request {request} in {path} "
                                           f"within {wait_seconds:.0f} s")
        time.sleep(REMOVALS_POLL_SECONDS)


def answer_removals(path: Path, request: int, iterations: list[int], hooks: TrainingHooks) -> None:
    """The launcher's answer to a removal request: what the hooks approve (and recorded as removed), or why they
    cannot tell; replaced at once (a reader never sees half of it)."""
    try:
        answer = {"request": request, "approved": sorted(hooks.approve_checkpoint_removals(iterations))}
    except PinnedCheckpointsUnknown as error:
        answer = {"request": request, "unknown": str(error)}
    staging = path.with_name(path.name + ".tmp")
    staging.write_text(json.dumps(answer))
    staging.replace(path)


def file_hooks(events_path: Path, stop_path: Path, removals_path: Path) -> TrainingHooks:
    """Rank 0's hooks: progress to the events file, stop when the stop file exists, checkpoint removals approved
    by the launcher's answers in the removals file."""
    write = event_writer(events_path)
    return TrainingHooks(
        on_iteration=lambda report: write(ITERATION, report=dataclasses.asdict(report)),
        on_checkpoint=lambda report: write(CHECKPOINT, report=dataclasses.asdict(report)),
        log=lambda line: write(LOG, line=line),
        on_warmup_step=lambda step, steps, loss: write(WARMUP_STEP, step=step, steps=steps, loss=loss)
        if step % WARMUP_EVENT_EVERY == 0 or step == steps else None,
        should_stop=stop_path.exists,
        approve_checkpoint_removals=lambda iterations: request_removals(write, removals_path, iterations),
    )


class EventReader:
    """Reads rank 0's events file incrementally and replays each complete line into the hooks; answers removal
    requests in the removals file."""

    def __init__(self, path: Path, removals_path: Path):
        self.path, self.removals_path = path, removals_path
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
        elif kind == CHECKPOINT_REMOVALS:
            answer_removals(self.removals_path, event["request"], event["iterations"], hooks)
        elif kind == LOG:
            hooks.log(event["line"])
        elif kind == WARMUP_STEP:
            hooks.on_warmup_step(event["step"], event["steps"], event["loss"])
        elif kind == OUTCOME:
            self.outcome = TrainingOutcome(**event["outcome"])
        else:
            raise ValueError(f"{self.path}: unknown event kind {kind!r}")
