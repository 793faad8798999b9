"""The judge's side of one run: read stdout/stderr with caps, time the run, and decide when to kill it.

The clock starts when the harness writes its ready byte (so interpreter start-up under bwrap or a
loaded machine is not charged to the program); the wall limit counts from there. A run that floods
stdout or stderr past output_bytes is killed at once.
"""

from __future__ import annotations

import os
import selectors
import time
from dataclasses import dataclass, field
from typing import Callable

from grading.sandbox.limits import SandboxLimits
from grading.sandbox.results import SandboxError

STARTUP_SECONDS = 30.0  # from launch to the ready byte
DRAIN_SECONDS = 10.0  # from the kill to the end of the run
STDERR_TAIL_BYTES = 4096
READ_BYTES = 1 << 16


@dataclass
class Capture:
    """What the judge saw of a run."""

    stdout: bytearray = field(default_factory=bytearray)
    stderr_tail: bytes = b""
    started_at: float | None = None
    ended_at: float = 0.0
    timed_out: bool = False
    start_timed_out: bool = False  # the sandbox never signalled ready in STARTUP_SECONDS
    output_exceeded: bool = False
    killed: bool = False

    @property
    def wall_seconds(self) -> float:
        return 0.0 if self.started_at is None else self.ended_at - self.started_at


class RunCapture:
    """Reads one run's pipes until they close and done_fd is readable, killing the run when needed."""

    def __init__(self, limits: SandboxLimits, stdout: int, stderr: int, ready: int, done_fd: int,
                 kill: Callable[[], None]):
        self.limits, self.kill_run = limits, kill
        self.stdout_fd, self.stderr_fd, self.ready_fd, self.done_fd = stdout, stderr, ready, done_fd
        self.selector = selectors.DefaultSelector()
        for fd in (stdout, stderr, ready, done_fd):
            self.selector.register(fd, selectors.EVENT_READ)
        self.capture = Capture()
        self.stderr_bytes = 0
        self.deadline = time.monotonic() + STARTUP_SECONDS

    def wait(self) -> Capture:
        """Loop until the run has ended and its pipes are closed; the pipes are closed afterwards."""
        try:
            while self.selector.get_map():
                events = self.selector.select(max(0.0, self.deadline - time.monotonic()))
                for key, _ in events:
                    self.on_readable(key.fd)
                # while the run goes on, checked even as output keeps coming (a steady writer gets no reprieve);
                # once it has ended, only when its pipes fall quiet (what is left is drained, not timed out)
                running = self.done_fd in self.selector.get_map()
                if (running or not events) and self.selector.get_map() and time.monotonic() >= self.deadline:
                    self.on_deadline()
        finally:
            self.close()
        self.capture.ended_at = self.capture.ended_at or time.monotonic()
        return self.capture

    def close(self) -> None:
        """Close the selector and the judge's ends of the pipes (idempotent)."""
        self.selector.close()
        for fd in (self.stdout_fd, self.stderr_fd, self.ready_fd):
            close_quietly(fd)
        self.stdout_fd = self.stderr_fd = self.ready_fd = -1

    def on_deadline(self) -> None:
        if self.capture.killed:
            raise SandboxError(f"a sandboxed run did not end within {DRAIN_SECONDS:.0f} s of being killed")
        if self.capture.started_at is None:
            self.capture.start_timed_out = True
        else:
            self.capture.timed_out = True
        self.kill()

    def kill(self) -> None:
        if not self.capture.killed:
            self.capture.killed = True
            self.capture.ended_at = time.monotonic()
            self.kill_run()
        self.deadline = time.monotonic() + DRAIN_SECONDS

    def on_readable(self, fd: int) -> None:
        if fd == self.done_fd:
            self.selector.unregister(fd)
            self.capture.ended_at = self.capture.ended_at or time.monotonic()
            return
        data = os.read(fd, READ_BYTES)
        if not data:
            self.selector.unregister(fd)
        elif fd == self.ready_fd and self.capture.started_at is None:
            self.capture.started_at = time.monotonic()
            self.deadline = self.capture.started_at + self.limits.wall_limit
        elif fd == self.stdout_fd:
            self.capture.stdout += data
            self.check_output(len(self.capture.stdout), fd)
        elif fd == self.stderr_fd:
            self.stderr_bytes += len(data)
            self.capture.stderr_tail = (self.capture.stderr_tail + data)[-STDERR_TAIL_BYTES:]
            self.check_output(self.stderr_bytes, fd)

    def check_output(self, size: int, fd: int) -> None:
        """Past the cap: stop reading that pipe and kill the run."""
        if size > self.limits.output_bytes:
            self.capture.output_exceeded = True
            self.selector.unregister(fd)
            del self.capture.stdout[self.limits.output_bytes:]
            self.kill()


def close_quietly(fd: int) -> None:
    """Close fd unless it is already closed (-1)."""
    if fd >= 0:
        os.close(fd)
