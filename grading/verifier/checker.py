"""MathVerifier: time-limited, cached answer checks in worker processes, callable from any thread.

A check goes: extract the final answer, look (answer, reference) up in the LRU cache, try the fast path
(identical strings, plain numbers) in the calling process, and only then hand it to the dispatcher, which
runs it in a worker process that it kills when the check passes its time limit (see dispatcher.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from multiprocessing.util import Finalize

from grading.verifier.cache import LruCache
from grading.verifier.dispatcher import Dispatcher, Verdict
from grading.verifier.equivalence import fast_verdict
from grading.verifier.extraction import FLEXIBLE, check_policy, extract_answer
from grading.verifier.workers import START_METHODS


@dataclass(frozen=True)
class VerifierResult:
    """One check: whether the response is correct, the answer extracted from it, and whether time ran out."""

    correct: bool
    extracted: str | None
    timed_out: bool = False
    extraction_policy: str = FLEXIBLE
    decided: bool = True  # False: no answer extracted, the check timed out, or math-verify could not read it

    def __post_init__(self):
        if self.extracted is None or self.timed_out:
            object.__setattr__(self, "decided", False)


@dataclass(frozen=True)
class VerifierStats:
    """Counters since the verifier was created; worker_checks counts the checks sent to a worker."""

    cache_hits: int
    cache_misses: int
    cache_size: int
    worker_checks: int
    timeouts: int
    pool_restarts: int


class MathVerifier:
    """Checks responses against reference answers in a pool of worker processes, each check time-limited.

    workers: worker processes (default: up to 4, one per core). timeout_seconds: limit per check.
    cache_size: (answer, reference) verdicts kept (0: none); timed-out verdicts are kept too, so a
    pathological answer costs its time limit once. start_method: "spawn" or "forkserver".
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
        self._cache = LruCache(cache_size)
        self._dispatcher = Dispatcher(self.workers, timeout_seconds, start_method, self._cache)
        # Close at interpreter exit before multiprocessing joins its children, also in a multiprocessing
        # child (where atexit handlers do not run): an idle pool worker would otherwise be waited on forever.
        Finalize(self, self._dispatcher.close, exitpriority=10)

    def check(self, response: str, reference: str, extraction_policy: str = FLEXIBLE) -> VerifierResult:
        """Whether the final answer of response equals reference (see check_many)."""
        return self.check_many([(response, reference)], extraction_policy)[0]

    def check_many(self, pairs: Iterable[tuple[str, str]], extraction_policy: str = FLEXIBLE) -> list[VerifierResult]:
        """One VerifierResult per (response, reference) pair, in order; worker checks run in parallel.

        extraction_policy: how the final answer is found in a response (extraction.EXTRACTION_POLICIES).
        """
        check_policy(extraction_policy)
        self._dispatcher.refuse_if_closed()
        answers_and_pending: list[tuple[str | None, Verdict | Future]] = []
        for response, reference in pairs:
            answer = extract_answer(response, extraction_policy)
            answers_and_pending.append((answer, self._verdict_or_future(answer, reference)))
        results = []
        for answer, pending in answers_and_pending:
            verdict = pending.result() if isinstance(pending, Future) else pending
            results.append(VerifierResult(verdict.correct, answer, verdict.timed_out, extraction_policy,
                                          verdict.decided))
        return results

    def stats(self) -> VerifierStats:
        """Cache and worker-pool counters."""
        worker_checks, timeouts, pool_restarts = self._dispatcher.counters()
        return VerifierStats(self._cache.hits, self._cache.misses, len(self._cache), worker_checks, timeouts,
                             pool_restarts)

    def close(self) -> None:
        """Stop the worker pool (killing a busy worker); checks still waiting raise RuntimeError."""
        self._dispatcher.close()

    def __enter__(self) -> MathVerifier:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _verdict_or_future(self, answer: str | None, reference: str) -> Verdict | Future:
        """The verdict when it is known without a worker, else the future of the worker's verdict."""
        if answer is None:
            return Verdict(correct=False, decided=False)
        key = (answer, reference)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        fast = fast_verdict(answer, reference)
        if fast is None:
            return self._dispatcher.submit(key)
        verdict = Verdict(correct=fast, decided=True)
        self._cache.put(key, verdict)
        return verdict
