"""Worker processes for math checks: a warm ProcessPoolExecutor whose workers can be killed when a check hangs.

A hung check may sit inside one C call (a huge integer power) where no signal handler or exception can
reach it, so the only way to stop it is to kill its process. ProcessPoolExecutor cannot kill one worker:
once any worker dies the executor is broken, fails every pending future and terminates the rest. So a
timeout ends the whole pool: WorkerPool.kill() sends SIGKILL to every worker (their pids are reported by
the worker initializer through a queue) and shuts the executor down; the caller starts a new pool and
resubmits the checks that were lost (dispatcher.py).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from concurrent.futures import Future, ProcessPoolExecutor

# Spawning a worker and importing math_verify and sympy takes about a second; allow for a loaded machine.
WARM_UP_TIMEOUT_SECONDS = 120.0
START_METHODS = ("spawn", "forkserver")


def initialise_worker(pid_queue, pool_pid: int | None = None) -> None:
    """Runs first in each worker: die with the pool's process, report the pid (so the pool can kill it) and
    import math_verify. A spawned worker gets here only after importing its parent's main module (seconds,
    with torch); if the pool's process died meanwhile (pool_pid is no longer the parent), it exits at once."""
    from common.processes import die_with_parent

    die_with_parent(pool_pid)
    pid_queue.put(os.getpid())
    from grading.verifier.equivalence import equivalence_verdict

    equivalence_verdict("\\log_2 8", "3")  # outside the fast path: loads the LaTeX parser and sympy's caches


def warm_up() -> int:
    """A no-op task: waiting for one per worker means every worker has started."""
    return os.getpid()


def check_in_worker(predicted: str, reference: str) -> tuple[bool, bool]:
    """equivalence_verdict (equal, decided), run inside a worker process."""
    from grading.verifier.equivalence import equivalence_verdict

    return equivalence_verdict(predicted, reference)


class WorkerPool:
    """A ProcessPoolExecutor of `workers` started and warmed processes that kill() can stop at any moment."""

    def __init__(self, workers: int, start_method: str):
        context = multiprocessing.get_context(start_method)
        self._pid_queue = context.SimpleQueue()
        self._pids: set[int] = set()
        parent = os.getpid() if start_method == "spawn" else None  # a forkserver worker's parent is the server
        self._executor = ProcessPoolExecutor(workers, mp_context=context, initializer=initialise_worker,
                                             initargs=(self._pid_queue, parent))
        # Submitted back to back, each warm-up finds no idle worker, so the executor starts all of them.
        try:
            for future in [self._executor.submit(warm_up) for _ in range(workers)]:
                future.result(timeout=WARM_UP_TIMEOUT_SECONDS)
        except BaseException:
            self.kill()
            raise

    def submit(self, predicted: str, reference: str) -> Future:
        """Future of equivalence_verdict(predicted, reference) computed in a worker."""
        return self._executor.submit(check_in_worker, predicted, reference)

    def kill(self) -> None:
        """SIGKILL every worker (busy or idle), then shut the executor down."""
        while not self._pid_queue.empty():
            self._pids.add(self._pid_queue.get())
        for pid in self._pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass  # that worker has already exited
        self.close()

    def close(self) -> None:
        """Shut the executor down, waiting for the running checks; use kill() when one may hang."""
        self._executor.shutdown(wait=True, cancel_futures=True)
        self._pid_queue.close()
