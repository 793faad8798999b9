"""What this host offers a sandbox: probe() tries every protection for real, in a throwaway process.

Each check runs in a forked child of a fresh `python` subprocess (never in the caller, which may hold
threads, locks and a GPU), so a half-applied namespace or filter cannot leak into the judge. The
result is cached per process; probe(refresh=True) measures again.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from grading.sandbox.results import SandboxUnavailable

PROTECTIONS = {
    "setuid": "running as root, able to switch each worker to its own unprivileged uid",
    "mount_namespace": "private mount namespaces (a minimal read-only root, per-run scratch tmpfs)",
    "pid_namespace": "PID namespaces (every process of a run dies with it)",
    "net_namespace": "network namespaces (no interface: no loopback, no outside)",
    "ipc_namespace": "IPC namespaces (no System V shared memory across runs)",
    "user_namespaces": "unprivileged user namespaces (needed by bwrap)",
    "bwrap": "a working bubblewrap binary, started as an unprivileged uid",
    "seccomp": "seccomp syscall filters via libseccomp (pyseccomp)",
    "landlock": "Landlock filesystem rules",
    "cgroups": "a memory + pids cgroup per worker (optional: one memory budget for all of a run's processes)",
}
PROBE_UID = 65534  # nobody; the checks only switch to it for a moment
PROJECT_ROOT = str(Path(__file__).resolve().parents[2])


@dataclass(frozen=True)
class Protection:
    name: str
    available: bool
    detail: str  # what was found, or why it is missing


@dataclass(frozen=True)
class ProbeReport:
    """Every protection of PROTECTIONS with whether this host offers it."""

    protections: dict[str, Protection]

    def available(self, name: str) -> bool:
        return self.protections[name].available

    def missing(self, required) -> list[str]:
        """The names of `required` this host lacks (unknown names raise ValueError)."""
        unknown = sorted(set(required) - set(PROTECTIONS))
        if unknown:
            raise ValueError(f"unknown sandbox protections {unknown}; known: {sorted(PROTECTIONS)}")
        return [name for name in PROTECTIONS if name in required and not self.protections[name].available]

    def require(self, required, purpose: str) -> None:
        """Raise SandboxUnavailable naming each missing protection and why, if any is missing."""
        missing = self.missing(required)
        if missing:
            reasons = "; ".join(f"{name} ({self.protections[name].detail})" for name in missing)
            raise SandboxUnavailable(f"refusing to run untrusted code with {purpose}: this host lacks {reasons}")

    def summary(self) -> str:
        """One line per protection: yes/no, name, detail."""
        return "\n".join(f"{'yes' if item.available else 'NO ':>3}  {item.name:<16} {item.detail}"
                         for item in self.protections.values())


@functools.lru_cache(maxsize=1)
def _cached_probe() -> ProbeReport:
    boot = "import sys; sys.path.insert(0, sys.argv[1]); from grading.sandbox.protection_checks import main; main()"
    command = [sys.executable, "-E", "-s", "-c", boot, PROJECT_ROOT]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd="/",
                               env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
    if completed.returncode != 0:
        raise RuntimeError(f"the sandbox probe failed: {completed.stderr.strip()[-2000:]}")
    found = json.loads(completed.stdout)
    return ProbeReport({name: Protection(name, *found[name]) for name in PROTECTIONS})


def probe(refresh: bool = False) -> ProbeReport:
    """Which protections this host offers (cached; refresh=True probes again)."""
    if refresh:
        _cached_probe.cache_clear()
    return _cached_probe()


if __name__ == "__main__":
    print(probe().summary())
    os._exit(0)
