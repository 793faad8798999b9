"""What the sandbox tests share: the limits they run under, the backends, and why a backend is skipped here."""

from __future__ import annotations

from grading.sandbox import DEFAULT_MINIMUM, SandboxLimits, probe
from grading.sandbox.judge import STRUCTURAL

LIMITS = SandboxLimits(time_seconds=1, wall_seconds=2, memory_mb=256, output_bytes=1 << 20, file_bytes=16 << 20)
BACKENDS = ["forkserver", "bwrap"]


def skip_reason(backend: str) -> str | None:
    report = probe()
    missing = report.missing(set(DEFAULT_MINIMUM[backend]) | set(STRUCTURAL[backend]))
    if not missing:
        return None
    return f"{backend} sandbox unavailable here: " + "; ".join(
        f"{name}: {report.protections[name].detail}" for name in missing)
