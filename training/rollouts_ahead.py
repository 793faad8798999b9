"""Rollouts made ahead (`overlap_rollouts`): the next iteration's batch is sampled while the trainer updates.

One step off-policy, like verl's one-step-off-policy trainer and AReaL with a staleness of 1: the batch
trained in iteration t was sampled, during iteration t-1's update, by the policy that started iteration t-1.
The engine gets the new weights only once those rollouts are done, so each response comes from one policy
(partial rollouts still continue parked responses under newer ones, as without overlap).

The background thread owns the replay buffer, the problem sampler and its random generator while the main
thread trains; the loop starts it after the iteration's scores have updated the sampler and waits for it
before handing over the new weights, checkpointing or stopping. A checkpoint holds the finished rollouts
made ahead, so a resumed run trains on exactly what the uninterrupted run would have. A run that fails or
stops closes it, and rollouts still in the making end at their next round instead of filling the batch.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

from training.iteration_rollouts import IterationRollouts, RolloutsCancelled
from training.trajectories import groups_from_state, groups_state

logger = logging.getLogger(__name__)

# what a checkpoint keeps of made rollouts besides their groups: every counter of IterationRollouts
COUNTERS = tuple(field.name for field in dataclasses.fields(IterationRollouts) if field.name != "finished")


class RolloutsAhead:
    """At most one iteration's rollouts, in the making (a background thread) or made."""

    def __init__(self) -> None:
        self._executor: ThreadPoolExecutor | None = None
        self._future: Future | None = None
        self._iteration: int | None = None
        self._made: IterationRollouts | None = None
        self._cancel = threading.Event()

    def cancelled(self) -> bool:
        """Whether the rollouts in the making should stop at their next round (`close` asks them to)."""
        return self._cancel.is_set()

    def start(self, iteration: int, roll_out: Callable[[], IterationRollouts]) -> None:
        """Run `roll_out` (iteration's rollouts) in the background thread."""
        if self._future is not None or self._made is not None:
            raise RuntimeError(f"rollouts for iteration {self._iteration} are already made ahead")
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rollouts-ahead")
        self._iteration = iteration
        self._future = self._executor.submit(roll_out)

    def wait(self) -> float:
        """Seconds spent waiting for the rollouts in the making (0 when none); re-raises their error."""
        if self._future is None:
            return 0.0
        started = time.perf_counter()
        future, self._future = self._future, None
        self._made = future.result()
        return time.perf_counter() - started

    def take(self, iteration: int) -> IterationRollouts | None:
        """The rollouts made ahead for `iteration`, or None (then the loop rolls out now)."""
        self.wait()
        if self._made is None:
            return None
        if self._iteration != iteration:
            raise RuntimeError(f"rollouts made ahead for iteration {self._iteration} cannot train iteration "
                               f"{iteration}")
        made, self._made, self._iteration = self._made, None, None
        return made

    def state_dict(self) -> dict[str, Any] | None:
        """The made rollouts as plain data, for a checkpoint (waiting for them first); None without any."""
        self.wait()
        if self._made is None:
            return None
        return {"iteration": self._iteration, "finished": groups_state(self._made.finished),
                **{name: getattr(self._made, name) for name in COUNTERS}}

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        self._future = None
        if state is None:
            self._made = self._iteration = None
            return
        self._iteration = int(state["iteration"])
        self._made = IterationRollouts(finished=groups_from_state(state["finished"]),  # a counter newer than
                                       **{name: int(state.get(name, 0)) for name in COUNTERS})  # the checkpoint: 0

    def close(self) -> None:
        """Stop the thread. Rollouts still in the making (the run is failing or stopping: a checkpoint waits for
        them first) end at their next round; the engine call under way finishes, since the engine they use is
        closed next."""
        if self._executor is not None:
            self._cancel.set()
            self._executor.shutdown(wait=True)
            self._executor = None
            future, self._future = self._future, None
            error = future.exception() if future is not None else None
            if error is not None and not isinstance(error, RolloutsCancelled):  # the run's own error goes on
                logger.warning("the rollouts made ahead for iteration %s failed too: %s", self._iteration, error)
