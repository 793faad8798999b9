"""SandboxLimits: what one run of an untrusted program may use."""

from __future__ import annotations

import math
import resource
from dataclasses import dataclass

MIB = 1 << 20


@dataclass(frozen=True)
class SandboxLimits:
    """Per-run limits. Defaults suit LiveCodeBench/HumanEval solutions.

    time_seconds: CPU seconds of each process (RLIMIT_CPU), also the base of the wall-clock limit.
    wall_seconds: wall-clock seconds from the program's start (default 2 * time_seconds + 1).
    memory_mb: address space of each process (RLIMIT_AS); in the fork server it includes the ~50 MB
        the warm interpreter has already mapped.
    output_bytes: stdout cap (stderr too); a run printing more is killed with output_limit.
    file_bytes: the largest file (RLIMIT_FSIZE) and the size of the run's private scratch tmpfs.
    processes: processes and threads of the worker's uid (RLIMIT_NPROC), the run's reaper not counted.
    open_files: file descriptors (RLIMIT_NOFILE).
    stack_mb: stack (RLIMIT_STACK), for deeply recursive solutions.
    """

    time_seconds: float = 4.0
    wall_seconds: float | None = None
    memory_mb: int = 512
    output_bytes: int = 16 * MIB
    file_bytes: int = 64 * MIB
    processes: int = 32
    open_files: int = 64
    stack_mb: int = 64

    def __post_init__(self):
        for name in ("time_seconds", "memory_mb", "output_bytes", "file_bytes", "processes", "open_files", "stack_mb"):
            if not getattr(self, name) > 0:
                raise ValueError(f"SandboxLimits.{name} must be greater than 0, got {getattr(self, name)!r}")
        if self.wall_seconds is not None and not self.wall_seconds > 0:
            raise ValueError(f"SandboxLimits.wall_seconds must be greater than 0 or None, got {self.wall_seconds!r}")
        if self.open_files < 16:
            raise ValueError(f"SandboxLimits.open_files must be at least 16 (the interpreter needs a few), "
                             f"got {self.open_files}")

    @property
    def wall_limit(self) -> float:
        """Wall-clock seconds a run may last once the program has started."""
        return self.wall_seconds if self.wall_seconds is not None else 2 * self.time_seconds + 1

    def rlimits(self) -> dict[int, tuple[int, int]]:
        """resource.RLIMIT_* -> (soft, hard). CPU: SIGXCPU at the soft limit, SIGKILL one second later."""
        cpu = math.ceil(self.time_seconds)
        return {
            resource.RLIMIT_CPU: (cpu, cpu + 1),
            resource.RLIMIT_AS: (self.memory_mb * MIB,) * 2,
            resource.RLIMIT_FSIZE: (self.file_bytes,) * 2,
            resource.RLIMIT_NPROC: (self.processes + 1,) * 2,  # + the run's reaper (harness.py)
            resource.RLIMIT_NOFILE: (self.open_files,) * 2,
            resource.RLIMIT_STACK: (self.stack_mb * MIB,) * 2,
            resource.RLIMIT_CORE: (0, 0),
            resource.RLIMIT_MEMLOCK: (0, 0),
            resource.RLIMIT_MSGQUEUE: (0, 0),
        }
