"""MathVerifier: time-limited, cached answer checks in worker processes, callable from any thread.

A check goes: extract the final answer, look (answer, reference) up in the LRU cache, try the fast path
(identical strings, plain numbers) in the calling process, and only then send it to a worker. One
dispatcher thread owns the worker pool. It keeps at most `workers` checks in flight, so a check starts
running as soon as it is submitted and its time limit counts from submission. When a check passes its
limit it is answered False with timed_out=True, every worker is killed with SIGKILL (see workers.py),
a fresh pool is started and the other checks that were in flight run again there.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Iterable
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from evaluation.verifier.cache import LruCache
from evaluation.verifier.equivalence import fast_verdict
from evaluation.verifier.extraction import extract_answer
from evaluation.verifier.workers import START_METHODS, WorkerPool

logger = logging.getLogger(__name__)

# A check whose worker died twice (crash, out of memory) is answered False rather than retried forever.
_MAX_ATTEMPTS = 2

Key = tuple[str, str]  # (extracted answer, reference)


@dataclass(frozen=True)
class VerifierResult:
    """One check: whether the response is correct, the answer extracted from it, and whether time ran out."""

    correct: bool
    extracted: str | None
    timed_out: bool = False


@dataclass(frozen=True)
class VerifierStats:
    """Counters since the verifier was created; worker_checks counts the checks that reached a worker."""

    cache_hits: int
    cache_misses: int
    cache_size: int
    worker_checks: int
    timeouts: int
    pool_restarts: int


@dataclass(frozen=True)
class _Verdict:
    correct: bool
    timed_out: bool


class MathVerifier:
    """Checks responses against reference answers in a pool of worker processes, each check time-limited.

    workers: worker processes (default: up to 4, one per core). timeout_seconds: limit per check.
    cache_size: (answer, reference) verdicts kept (0: none). start_method: "spawn" or "forkserver".
    The pool starts on the first check that needs it. Call close(), or use the verifier as a context manager.
    """

    def __init__(self, workers: int | None = None, timeout_seconds: float = 5.0, cache_size: int = 100_000,
                 start_method: str = "spawn"):
        if workers is not None and workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        if timeout_seconds <= 0:
            raise ValueError(f"timeout_seconds must be positive, got {timeout_seconds}")
        if start_method not in START_METHODS:
            raise ValueError(f"start_method must be one of {START_METHODS} (fork is unsafe with threads), "
                             f"got {start_method!r}")
        self.workers = workers or min(4, os.cpu_count() or 1)
        self.timeout_seconds = timeout_seconds
        self.start_method = start_method
        self._cache = LruCache(cache_size)
        self._lock = threading.Lock()  # guards everything below
        self._wake = threading.Event()  # set on a new check, a finished check, and close()
        self._queued: deque[Key] = deque()
        self._waiting: dict[Key, Future] = {}  # queued or running; equal keys share one check
        self._dispatcher: threading.Thread | None = None
        self._failure: BaseException | None = None
        self._closed = False
        self._worker_checks = self._timeouts = self._pool_restarts = 0

    # The callers' side.

    def check(self, response: str, reference: str) -> VerifierResult:
        """Whether the final answer of response equals reference (see check_many)."""
        return self.check_many([(response, reference)])[0]

    def check_many(self, pairs: Iterable[tuple[str, str]]) -> list[VerifierResult]:
        """One VerifierResult per (response, reference) pair, in order; pool checks run in parallel."""
        extracted_and_pending: list[tuple[str | None, _Verdict | Future]] = []
        for response, reference in pairs:
            answer = extract_answer(response)
            extracted_and_pending.append((answer, self._verdict_or_future(answer, reference)))
        results = []
        for answer, pending in extracted_and_pending:
            verdict = pending.result() if isinstance(pending, Future) else pending
            results.append(VerifierResult(verdict.correct, answer, verdict.timed_out))
        return results

    def stats(self) -> VerifierStats:
        """Cache and pool counters."""
        with self._lock:
            return VerifierStats(self._cache.hits, self._cache.misses, len(self._cache), self._worker_checks,
                                 self._timeouts, self._pool_restarts)

    def close(self) -> None:
        """Stop the dispatcher and the workers (killing a busy one); unfinished checks raise RuntimeError."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            dispatcher = self._dispatcher
        self._wake.set()
        if dispatcher is not None:
            dispatcher.join()
        self._fail_waiting(RuntimeError("the MathVerifier was closed before this check finished"))

    def __enter__(self) -> MathVerifier:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _verdict_or_future(self, answer: str | None, reference: str) -> _Verdict | Future:
        """The verdict when it is known without a worker, else the future of the worker's verdict."""
        if answer is None:
            return _Verdict(correct=False, timed_out=False)
        key = (answer, reference)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        fast = fast_verdict(answer, reference)
        if fast is not None:
            verdict = _Verdict(correct=fast, timed_out=False)
            self._cache.put(key, verdict)
            return verdict
        return self._enqueue(key)

    def _enqueue(self, key: Key) -> Future:
        with self._lock:
            if self._closed:
                raise RuntimeError("the MathVerifier is closed; create a new one")
            if self._failure is not None:
                raise RuntimeError("the MathVerifier's worker pool failed; create a new one") from self._failure
            future = self._waiting.get(key)
            if future is None:
                future = self._waiting[key] = Future()
                self._queued.append(key)
                if self._dispatcher is None:
                    self._dispatcher = threading.Thread(target=self._dispatch, name="math-verifier", daemon=True)
                    self._dispatcher.start()
            self._wake.set()
            return future

    def _settle(self, key: Key, verdict: _Verdict) -> None:
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

    # The dispatcher thread's side.

    def _dispatch(self) -> None:
        """Runs checks on the pool until close(); a failure here fails every waiting check."""
        pool: WorkerPool | None = None
        in_flight: dict[Future, tuple[Key, float]] = {}  # worker future -> (key, deadline)
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
                if broken or overdue:
                    self._restart(pool, in_flight, overdue, broken, attempts)
                    pool = None  # stopped: if the new start fails, `finally` has nothing left to kill
                    pool = WorkerPool(self.workers, self.start_method)  # warm before the next check arrives
                    continue
                self._submit_queued(pool, in_flight, attempts)
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

    def _collect_finished(self, in_flight: dict[Future, tuple[Key, float]], attempts: dict[Key, int]) -> bool:
        """Settle the finished checks; True when the pool broke (a worker died on its own)."""
        broken = False
        for future in [future for future in in_flight if future.done()]:
            key, _ = in_flight.pop(future)
            error = future.exception()
            if isinstance(error, BrokenProcessPool):
                broken = True
                if attempts[key] >= _MAX_ATTEMPTS:
                    logger.warning("a worker died %d times checking %r against %r; answering False",
                                   attempts[key], *key)
                    self._settle(key, _Verdict(correct=False, timed_out=False))
                else:
                    self._requeue(key)
            elif error is not None:
                attempts.pop(key, None)
                with self._lock:
                    waiting = self._waiting.pop(key, None)
                if waiting is not None:
                    waiting.set_exception(error)
            else:
                attempts.pop(key, None)
                self._settle(key, _Verdict(correct=future.result(), timed_out=False))
        return broken

    def _restart(self, pool: WorkerPool, in_flight: dict[Future, tuple[Key, float]], overdue: list[Future],
                 broken: bool, attempts: dict[Key, int]) -> None:
        """Answer the overdue checks as timed out, stop the pool and queue the other checks again."""
        with self._lock:  # counted before the callers hear of the timeout
            self._timeouts += len(overdue)
            self._pool_restarts += 1
        for future in overdue:
            key, _ = in_flight.pop(future)
            attempts.pop(key, None)
            self._settle(key, _Verdict(correct=False, timed_out=True))
        for key, _ in in_flight.values():
            self._requeue(key)
        in_flight.clear()
        if broken:
            pool.close()  # the executor already terminated its workers
        else:
            pool.kill()

    def _requeue(self, key: Key) -> None:
        with self._lock:
            self._queued.appendleft(key)

    def _submit_queued(self, pool: WorkerPool, in_flight: dict[Future, tuple[Key, float]],
                       attempts: dict[Key, int]) -> None:
        """Fill the free workers from the queue; each check's deadline counts from now."""
        while len(in_flight) < self.workers:
            with self._lock:
                if not self._queued:
                    return
                key = self._queued.popleft()
                self._worker_checks += 1
            future = pool.submit(*key)
            future.add_done_callback(lambda _: self._wake.set())
            attempts[key] = attempts.get(key, 0) + 1
            in_flight[future] = (key, time.monotonic() + self.timeout_seconds)
