"""The dispatcher thread that runs math checks on a WorkerPool, each check time-limited.

It keeps at most `workers` checks in flight, so a check starts running as soon as it is submitted and its
time limit counts from submission. A check past its limit is answered False with timed_out=True; then
every worker is killed with SIGKILL (see workers.py), a fresh pool is started at once and the other
checks that were in flight run again there. Equal keys submitted while one is pending share one check.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from grading.verifier.cache import LruCache
from grading.verifier.workers import WorkerPool

logger = logging.getLogger(__name__)

# A check whose worker died twice (crash, out of memory) is answered False rather than retried forever.
_MAX_ATTEMPTS = 2

Key = tuple[str, str]  # (extracted answer, reference)
InFlight = dict[Future, tuple[Key, float]]  # worker future -> (key, deadline on time.monotonic())


@dataclass(frozen=True)
class Verdict:
    """The outcome of one (answer, reference) check."""

    correct: bool
    timed_out: bool = False
    decided: bool = True  # False: timed out, or an answer math-verify could not read


class Dispatcher:
    """Runs (answer, reference) checks in worker processes; each verdict goes to its future and the cache."""

    def __init__(self, workers: int, timeout_seconds: float, start_method: str, cache: LruCache):
        self.workers = workers
        self.timeout_seconds = timeout_seconds
        self.start_method = start_method
        self._cache = cache
        self._lock = threading.Lock()  # guards the queue, the waiting futures, the flags and the counters
        self._wake = threading.Event()  # set on a new check, a finished check, and close()
        self._queued: deque[Key] = deque()
        self._waiting: dict[Key, Future] = {}  # queued or running
        self._thread: threading.Thread | None = None  # started by the first submit
        self._failure: BaseException | None = None
        self._closed = False
        self.worker_checks = self.timeouts = self.pool_restarts = 0

    def submit(self, key: Key) -> Future:
        """Future of the Verdict for key, shared with any pending check of the same key."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the MathVerifier is closed; create a new one")
            if self._failure is not None:
                raise RuntimeError("the MathVerifier's worker pool failed; create a new one") from self._failure
            future = self._waiting.get(key)
            if future is None:
                future = self._waiting[key] = Future()
                self._queued.append(key)
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="math-verifier", daemon=True)
                    self._thread.start()
            self._wake.set()
            return future

    def refuse_if_closed(self) -> None:
        if self._closed:
            raise RuntimeError("the MathVerifier is closed; create a new one")

    def counters(self) -> tuple[int, int, int]:
        """(checks sent to a worker, timeouts, pool restarts)."""
        with self._lock:
            return self.worker_checks, self.timeouts, self.pool_restarts

    def close(self) -> None:
        """Stop the thread and the workers (killing a busy one); unfinished checks raise RuntimeError."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join()
        self._fail_waiting(RuntimeError("the MathVerifier was closed before this check finished"))

    def _settle(self, key: Key, verdict: Verdict) -> None:
        """Cache the verdict and hand it to the callers waiting for key."""
        self._cache.put(key, verdict)
        with self._lock:
            future = self._waiting.pop(key, None)
        if future is not None:
            future.set_result(verdict)

    def _fail_waiting(self, error: BaseException) -> None:
        with self._lock:
            waiting, self._waiting = list(self._waiting.values()), {}
            self._queued.clear()
        for future in waiting:
            future.set_exception(error)

    def _requeue(self, key: Key) -> None:
        with self._lock:
            self._queued.appendleft(key)

    def _run(self) -> None:
        """The dispatcher thread: runs checks until close(); a failure here fails every waiting check."""
        pool: WorkerPool | None = None
        in_flight: InFlight = {}
        attempts: dict[Key, int] = {}
        try:
            while True:
                self._wake.clear()  # before looking, so a wake-up during the look is not lost
                with self._lock:
                    if self._closed:
                        break
                    has_work = bool(self._queued or in_flight)
                if not has_work:
                    self._wake.wait()
                    continue
                if pool is None:
                    pool = WorkerPool(self.workers, self.start_method)
                broken = self._collect_finished(in_flight, attempts)
                overdue = [future for future, (_, deadline) in in_flight.items()
                           if not future.done() and deadline <= time.monotonic()]
                if not (broken or overdue):
                    broken = self._submit_queued(pool, in_flight, attempts)
                if broken or overdue:
                    self._restart(pool, in_flight, overdue, broken, attempts)
                    pool = None  # stopped: if the new start fails, `finally` has nothing left to kill
                    if not self._closed:
                        pool = WorkerPool(self.workers, self.start_method)  # warm before the next check arrives
                    continue
                if in_flight:  # sleep until a check finishes, a check arrives, or the next deadline
                    next_deadline = min(deadline for _, deadline in in_flight.values())
                    self._wake.wait(max(0.0, next_deadline - time.monotonic()))
        except BaseException as error:
            with self._lock:
                self._failure = error
            failure = RuntimeError(f"the MathVerifier's worker pool failed: {error!r}")
            failure.__cause__ = error
            self._fail_waiting(failure)
            raise
        finally:
            if pool is not None:
                pool.kill()

    def _collect_finished(self, in_flight: InFlight, attempts: dict[Key, int]) -> bool:
        """Settle the finished checks; True when the pool broke (a worker died on its own)."""
        broken = False
        for future in [future for future in in_flight if future.done()]:
            key, _ = in_flight.pop(future)
            error = future.exception()
            if isinstance(error, BrokenProcessPool):
                broken = True
                if attempts[key] < _MAX_ATTEMPTS:
                    self._requeue(key)
                    continue
                logger.warning("a worker died %d times checking %r against %r; answering False", attempts[key], *key)
                self._settle(key, Verdict(correct=False, decided=False))
            elif error is not None:  # a bug in the check itself: the caller gets the exception
                with self._lock:
                    waiting = self._waiting.pop(key, None)
                if waiting is not None:
                    waiting.set_exception(error)
            else:
                correct, decided = future.result()
                self._settle(key, Verdict(correct=correct, decided=decided))
            attempts.pop(key, None)
        return broken

    def _submit_queued(self, pool: WorkerPool, in_flight: InFlight, attempts: dict[Key, int]) -> bool:
        """Fill the free workers from the queue, each deadline counting from now; True if the pool broke."""
        while len(in_flight) < self.workers:
            with self._lock:
                if not self._queued:
                    return False
                key = self._queued.popleft()
                self.worker_checks += 1
            try:
                future = pool.submit(*key)
            except BrokenProcessPool:  # a worker died since the last look: restart, then submit again
                self._requeue(key)
                return True
            future.add_done_callback(lambda _: self._wake.set())
            attempts[key] = attempts.get(key, 0) + 1
            in_flight[future] = (key, time.monotonic() + self.timeout_seconds)
        return False

    def _restart(self, pool: WorkerPool, in_flight: InFlight, overdue: list[Future], broken: bool,
                 attempts: dict[Key, int]) -> None:
        """Answer the overdue checks as timed out, stop the pool and queue the other checks again."""
        with self._lock:  # counted before the callers hear of the timeout
            self.timeouts += len(overdue)
            self.pool_restarts += 1
        for future in overdue:
            key, _ = in_flight.pop(future)
            attempts.pop(key, None)
            self._settle(key, Verdict(correct=False, timed_out=True, decided=False))
        for key, _ in in_flight.values():
            self._requeue(key)
        in_flight.clear()
        if broken:
            pool.close()  # the executor has already terminated its workers
        else:
            pool.kill()
