"""Code sandbox for untrusted model-written programs (LiveCodeBench/HumanEval solutions, RL rewards).

    with CodeJudge(backend="forkserver", limits=SandboxLimits(time_seconds=2), workers=2) as judge:
        result = judge.judge(code, problem.test_cases)      # JudgeResult: verdict, passed, total, detail
        results = judge.judge_many([(code, test_cases), ...])

Backends: "forkserver" (warm server per worker, fresh confined child per run) and "bwrap" (fresh
bubblewrap sandbox and interpreter per run). On both, a program cannot start other programs (execve and
execveat fail with EPERM once the interpreter runs), and a functional test's check runs in a process of
its own that decides the verdict, out of the solution's reach (functional.py). probe() reports what the
host offers; a CodeJudge refuses to start (SandboxUnavailable) below its minimum. Plain library: no
Django. Needs root and Linux x86_64.

Exports load lazily, so the fork server (which imports grading.sandbox.server) stays small: every
module a forked child inherits makes each fork slower.
"""

import importlib

_EXPORTS = {
    "grading.sandbox.judge": ("CodeJudge", "DEFAULT_MINIMUM"),
    "grading.sandbox.limits": ("SandboxLimits",),
    "grading.sandbox.protections": ("PROTECTIONS", "ProbeReport", "Protection", "probe"),
    "grading.sandbox.results": ("ACCEPTED", "MEMORY_LIMIT", "OUTPUT_LIMIT", "RUNTIME_ERROR", "TIME_LIMIT",
                                "VERDICTS", "WRONG_ANSWER", "ExecutionResult", "JudgeResult", "SandboxClosed",
                                "SandboxError", "SandboxUnavailable"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    if name not in _MODULE_OF:
        raise AttributeError(f"module 'grading.sandbox' has no attribute {name!r}")
    return getattr(importlib.import_module(_MODULE_OF[name]), name)
