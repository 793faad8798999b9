"""Correctness rewards: math answers through the grading verifier, programs through the grading sandbox.

A run owns one CorrectnessRewards (made with its session and closed with it). The verifier extracts the
final answer under the run's extraction policy and compares it with the reference by value; common forms
are settled in this process, anything else goes to its time-limited worker pool, started on first need.
With a grader mode that asks the chain-of-thought judge (report 2.3.5), the judge grades math answers
(all of them, or those the verifier cannot decide); a judge error is never a reward.
A record with test cases is a code problem: the response's program runs on its tests in the pre-forked
sandbox, and passing all earns 1. The program is put together as an evaluation puts it together
(grading.programs.code_task): after the record's problem when that is a Python stub of the function the
functional tests call (a HumanEval-style record: a completion continues it), else after LiveCodeBench's
import header. Every batch is scored in one call.
"""

from __future__ import annotations

import threading
from typing import Sequence

from common.test_cases import normalise_test_cases
from grading.cot_judge import CotJudge, JudgeItem, grade, verifier_verdicts
from grading.cot_judge.modes import RULE
from grading.programs import code_task, judge_programs
from grading.verifier import FLEXIBLE, MathVerifier
from grading.verifier.extraction import check_policy
from training.types import PromptRecord


class CorrectnessRewards:
    """Scores responses against their records; the verifier pool and the sandbox start on first need.

    verifier_workers: processes of the math verifier (one suffices for a run: most checks are settled on
    the fast path). grader_mode and judge: see grading.cot_judge (judge is needed unless the mode is "rule");
    on_close runs at close() (the judge model's release). Call close(), or use it as a context manager.
    """

    def __init__(self, extraction_policy: str = FLEXIBLE, verifier_workers: int = 1,
                 verifier_timeout_seconds: float = 5.0, sandbox_backend: str = "forkserver",
                 grader_mode: str = RULE, judge: CotJudge | None = None, on_close=None):
        self.extraction_policy = check_policy(extraction_policy)
        if grader_mode != RULE and judge is None:
            raise ValueError(f"grader_mode {grader_mode} needs a judge")
        self.grader_mode, self.judge, self._on_close = grader_mode, judge, on_close
        self._counted = (0, 0)  # the judge's (judged, errors) at the last take_judge_counts()
        self.verifier = MathVerifier(workers=verifier_workers, timeout_seconds=verifier_timeout_seconds)
        self._sandbox_backend = sandbox_backend
        self._code_judge = None
        self._lock = threading.Lock()

    def __call__(self, records: Sequence[PromptRecord], responses: Sequence[str]) -> list[float]:
        """1.0 for each response that is correct for its record (answer or test cases), else 0.0, in order."""
        if len(records) != len(responses):
            raise ValueError(f"{len(records)} records but {len(responses)} responses")
        rewards = [0.0] * len(records)
        for is_code, reward_function in ((False, self._math_rewards), (True, self._code_rewards)):
            indices = [index for index, record in enumerate(records) if bool(record.test_cases) == is_code]
            if indices:
                scores = reward_function([records[i] for i in indices], [responses[i] for i in indices])
                for index, score in zip(indices, scores):
                    rewards[index] = score
        return rewards

    def code_judge(self):
        """The sandbox, started on the first code problem."""
        from grading.sandbox import CodeJudge

        with self._lock:
            if self._code_judge is None:
                self._code_judge = CodeJudge(backend=self._sandbox_backend)
            return self._code_judge

    def take_judge_counts(self) -> dict[str, float]:
        """Samples the judge graded and its errors since the last call ({} without a judge)."""
        if self.judge is None:
            return {}
        now = (self.judge.judged, self.judge.errors)
        judged, errors = now[0] - self._counted[0], now[1] - self._counted[1]
        self._counted = now
        return {"judged_samples": float(judged), "judge_errors": float(errors)}

    def close(self) -> None:
        """Stop the verifier pool, the sandbox and the judge model (safe to call twice)."""
        self.verifier.close()
        with self._lock:
            code_judge, self._code_judge = self._code_judge, None
            on_close, self._on_close = self._on_close, None
        if code_judge is not None:
            code_judge.close()
        if on_close is not None:
            on_close()

    def __enter__(self) -> CorrectnessRewards:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _math_rewards(self, records: Sequence[PromptRecord], responses: Sequence[str]) -> list[float]:
        for record in records:
            if not record.answer:
                raise ValueError(f"prompt {record.prompt_id} has neither a reference answer nor test cases")
        pairs = [(response, record.answer) for record, response in zip(records, responses)]
        if self.grader_mode == RULE:
            results = self.verifier.check_many(pairs, self.extraction_policy)
            return [1.0 if result.correct else 0.0 for result in results]
        items = [JudgeItem(record.problem, record.answer, response) for record, response in zip(records, responses)]
        grades = grade(items, self.grader_mode, lambda _: verifier_verdicts(pairs, self.verifier,
                                                                             self.extraction_policy), self.judge)
        return [1.0 if verdict.correct else 0.0 for verdict in grades]

    def _code_rewards(self, records: Sequence[PromptRecord], responses: Sequence[str]) -> list[float]:
        # the task an evaluation builds from a benchmark problem with this prompt and these tests (one verdict)
        tasks = [code_task(record.problem, normalise_test_cases(record.test_cases)) for record in records]
        judgements = judge_programs(list(zip(tasks, responses)), self.code_judge())
        return [1.0 if judgement.correct else 0.0 for judgement in judgements]
