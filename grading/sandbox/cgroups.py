"""An optional memory + pids cgroup per worker, so all the processes of a run share one memory budget.

RLIMIT_AS caps each process, not their sum; the cgroup caps the sum (memory_mb + the scratch tmpfs +
64 MB) and the number of tasks. It is created below this process's own cgroup (the host's accounting
of the judge still covers it): cgroup v1 memory and pids hierarchies, or cgroup v2 when this cgroup
already delegates both controllers. The server's children join it by writing "0" to cgroup.procs.
"""

from __future__ import annotations

import os
from pathlib import Path

from grading.sandbox.limits import MIB, SandboxLimits

CGROUP_ROOT = Path("/sys/fs/cgroup")
V1_CONTROLLERS = ("memory", "pids")
HEADROOM_BYTES = 64 * MIB


def own_cgroups() -> dict[str, str]:
    """Controller (or "" for v2) -> this process's cgroup path, from /proc/self/cgroup."""
    paths = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    return paths


def candidate_directories(name: str) -> list[Path] | None:
    """Where the worker's cgroup directories go (v1: one per controller), None without usable cgroups."""
    own = own_cgroups()
    if all((CGROUP_ROOT / controller).is_dir() and controller in own for controller in V1_CONTROLLERS):
        return [CGROUP_ROOT / controller / own[controller].lstrip("/") / name for controller in V1_CONTROLLERS]
    if (CGROUP_ROOT / "cgroup.controllers").exists() and "" in own:
        parent = CGROUP_ROOT / own[""].lstrip("/")
        delegated = (parent / "cgroup.subtree_control").read_text().split()
        if all(controller in delegated for controller in V1_CONTROLLERS):
            return [parent / name]
    return None


class WorkerCgroup:
    """The cgroup directories of one worker (two on cgroup v1, one on v2)."""

    def __init__(self, directories: list[Path]):
        self.directories = directories

    @classmethod
    def create(cls, uid: int, limits: SandboxLimits) -> "WorkerCgroup | None":
        """Create (or reuse) and configure the worker's cgroup; None when the host offers none."""
        directories = candidate_directories(f"mirrorlab-sandbox-{uid}")
        if directories is None or os.geteuid() != 0:
            return None
        cgroup = cls(directories)
        memory = limits.memory_mb * MIB + limits.file_bytes + HEADROOM_BYTES
        try:
            for directory in directories:
                if directory.exists():
                    directory.rmdir()  # left by a crashed judge: start from fresh limits
                directory.mkdir()
            cgroup.write("memory.limit_in_bytes", "memory.max", str(memory))
            cgroup.write("memory.memsw.limit_in_bytes", "memory.swap.max", str(memory), required=False)
            cgroup.write("pids.max", "pids.max", str(limits.processes + 8))
        except OSError:
            cgroup.remove()
            raise
        return cgroup

    def write(self, v1_name: str, v2_name: str, value: str, required: bool = True) -> None:
        """Write a control file, whichever directory (and cgroup version) has it."""
        for directory in self.directories:
            for name in (v1_name, v2_name):
                if (directory / name).exists():
                    (directory / name).write_text(value)
                    return
        if required:
            raise OSError(f"no {v1_name} or {v2_name} in {self.directories}")

    def procs_files(self) -> list[str]:
        return [str(directory / "cgroup.procs") for directory in self.directories]

    def oom_kills(self) -> int:
        """How many processes the kernel has killed for this cgroup's memory limit so far."""
        for directory in self.directories:
            for name in ("memory.oom_control", "memory.events"):
                if (directory / name).exists():
                    for line in (directory / name).read_text().splitlines():
                        if line.startswith("oom_kill "):
                            return int(line.split()[1])
        return 0

    def remove(self) -> None:
        """Remove the directories (they must hold no process: call after killing the uid)."""
        for directory in self.directories:
            try:
                directory.rmdir()
            except FileNotFoundError:
                pass
