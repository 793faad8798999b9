"""CodeJudge: run untrusted solutions against test cases on a pool of sandbox workers."""

from __future__ import annotations

import contextlib
import queue
import time
from concurrent.futures import ThreadPoolExecutor

from grading.sandbox.compare import first_mismatch
from grading.sandbox.limits import SandboxLimits
from grading.sandbox.protections import PROTECTIONS, probe
from grading.sandbox.results import ACCEPTED, WRONG_ANSWER, ExecutionResult, JudgeResult, SandboxClosed
from grading.sandbox.worker import BACKENDS, Worker

# Protections a backend cannot work without, and the default minimum (everything it can apply).
STRUCTURAL = {"forkserver": ("setuid", "mount_namespace", "pid_namespace"),
              "bwrap": ("setuid", "mount_namespace", "bwrap", "user_namespaces")}
DEFAULT_MINIMUM = {"forkserver": STRUCTURAL["forkserver"] + ("net_namespace", "ipc_namespace", "seccomp", "landlock"),
                   "bwrap": STRUCTURAL["bwrap"] + ("net_namespace", "seccomp")}
DETAIL_CHARACTERS = 300


class CodeJudge:
    """Judges Python solutions in a sandbox; a context manager (close() kills everything it started).

    backend: "forkserver" (a warm server per worker forks a confined child per run: uid, rlimits,
    namespaces, Landlock, seccomp; fast) or "bwrap" (a fresh bubblewrap sandbox and interpreter per run).
    minimum: protection names (probe.PROTECTIONS) the host must offer, else SandboxUnavailable is raised;
    default DEFAULT_MINIMUM[backend]. The backend's STRUCTURAL needs are always required; other
    protections the host offers (cgroups included) are applied whether required or not.
    workers: parallel runs, each with its own uid from [uid_first, uid_first + uid_count), leased
    with a lock file so that judges in other processes take other uids.
    """

    def __init__(self, backend: str = "forkserver", limits: SandboxLimits | None = None, workers: int = 2,
                 minimum=None, uid_first: int = 61000, uid_count: int = 1000):
        if backend not in BACKENDS:
            raise ValueError(f"unknown sandbox backend {backend!r}; choose one of {sorted(BACKENDS)}")
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.backend, self.limits = backend, limits or SandboxLimits()
        report = probe()
        required = set(DEFAULT_MINIMUM[backend] if minimum is None else minimum) | set(STRUCTURAL[backend])
        report.require(required, f"the {backend} backend")
        protections = {name for name in PROTECTIONS if report.available(name)}
        self._workers: list[Worker] = []
        self._idle: queue.SimpleQueue[Worker] = queue.SimpleQueue()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sandbox-judge")
        self._closed = False
        try:
            for _ in range(workers):
                self._workers.append(Worker(backend, self.limits, uid_first, uid_count, protections))
                self._idle.put(self._workers[-1])
        except BaseException:
            self.close()
            raise

    @property
    def worker_uids(self) -> list[int]:
        """The uids this judge's programs run as."""
        return [worker.uid for worker in self._workers]

    def run(self, code: str, stdin: str = "") -> ExecutionResult:
        """Run code as a script with stdin; the raw outcome, no test comparison."""
        with self._worker() as worker:
            return worker.execute({"mode": "stdin", "code": code}, stdin)

    def judge(self, code: str, test_cases: list[dict]) -> JudgeResult:
        """Run the test cases in order on one worker, stopping at the first failure."""
        if not test_cases:
            raise ValueError("no test cases to judge the solution against")
        started = time.monotonic()
        with self._worker() as worker:
            for index, case in enumerate(test_cases):
                failure = case_failure(run_case(worker, code, case), case)
                if failure is not None:
                    verdict, detail = failure
                    return JudgeResult(verdict, index, len(test_cases), f"test {index}: {detail}",
                                       time.monotonic() - started)
        return JudgeResult(ACCEPTED, len(test_cases), len(test_cases), "", time.monotonic() - started)

    def judge_many(self, items: list[tuple[str, list[dict]]]) -> list[JudgeResult]:
        """judge() of each (code, test_cases), in parallel over the workers; results in the same order."""
        return list(self._pool.map(lambda item: self.judge(*item), items))

    @contextlib.contextmanager
    def _worker(self):
        if self._closed:
            raise SandboxClosed("this CodeJudge is closed")
        worker = self._idle.get()
        try:
            yield worker
        except SandboxClosed as error:
            raise SandboxClosed("this CodeJudge was closed during the run") from error
        finally:
            self._idle.put(worker)

    def close(self) -> None:
        """Wait for judge_many() calls to finish, stop every worker and kill whatever they started; a run()
        or judge() still going in another thread raises SandboxClosed."""
        if self._closed:
            return
        self._closed = True
        self._pool.shutdown(wait=True, cancel_futures=True)
        errors = []
        for worker in self._workers:
            try:
                worker.close()
            except Exception as error:  # close the other workers before reporting
                errors.append(error)
        if errors:
            raise errors[0]

    def __enter__(self) -> "CodeJudge":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def run_case(worker: Worker, code: str, case: dict) -> ExecutionResult:
    """One test case: a stdin run, or a functional run of check(<entry_point>) against the solution."""
    kind = case.get("kind")
    if kind == "stdin":
        return worker.execute({"mode": "stdin", "code": code}, case["input"])
    if kind == "functional":
        return worker.execute({"mode": "functional", "code": code, "entry_point": case["entry_point"]}, "",
                              check=case["code"])
    raise ValueError(f"unknown test case kind {kind!r} (expected 'stdin' or 'functional')")


def case_failure(result: ExecutionResult, case: dict) -> tuple[str, str] | None:
    """(verdict, detail) when the test case failed, None when it passed."""
    if result.verdict is not None:
        return result.verdict, describe(result)
    if case["kind"] == "functional":
        return None if result.check_passed else (WRONG_ANSWER, "check failed: " + last_line(result.stderr))
    mismatch = first_mismatch(result.stdout, case["output"])
    return None if mismatch is None else (WRONG_ANSWER, mismatch)


def describe(result: ExecutionResult) -> str:
    """The verdict with what explains it: exit status or signal, and the end of stderr."""
    ending = f"signal {result.signal}" if result.signal is not None else f"exit status {result.exit_code}"
    tail = result.stderr.strip()[-DETAIL_CHARACTERS:]
    return f"{result.verdict} ({ending}, {result.cpu_seconds:.2f} s CPU)" + (f": {tail}" if tail else "")


def last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1][-DETAIL_CHARACTERS:] if lines else "AssertionError"
