"""How a benchmark's responses are judged: the two kinds of judge a BenchmarkSpec names, and the shared ones.

An AnswerJudge compares an extracted final answer with the reference, so its benchmarks take an extraction
policy and a grader mode (the CoT judge model can grade them too); an OutcomeJudge decides by itself (a
program run on tests, MathVista's options) and is rule only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Protocol, Sequence

from evaluation.datasets import BenchmarkProblem
from evaluation.judges.code import judge_benchmark_programs
from evaluation.judges.math import judge_equivalence, judge_integer
from grading.cot_judge import RuleVerdict
from grading.judgement import Judgement
from grading.verifier import MathVerifier

if TYPE_CHECKING:
    from grading.sandbox import CodeJudge

Pairs = Sequence[tuple[BenchmarkProblem, str]]  # (problem, response text), judged in order


class JudgeContext(Protocol):
    """What the judges use of an evaluation's context (evaluation.context.EvalContext, which loads the model
    too: this module does not import it, so the suite config and the web app load no model code)."""

    @property
    def verifier(self) -> MathVerifier: ...

    @property
    def code_judge(self) -> CodeJudge: ...


@dataclass(frozen=True)
class AnswerJudge:
    """rule(pairs, context, extraction policy) -> one RuleVerdict per pair."""

    name: str
    rule: Callable[[Pairs, JudgeContext, str], list[RuleVerdict]]


@dataclass(frozen=True)
class OutcomeJudge:
    """judge(pairs, context) -> one Judgement per pair. extracts_answers: its judgements carry the final answer
    they judged (MathVista's option or value), so samples can vote on it (maj@n); a program has none."""

    name: str
    judge: Callable[[Pairs, JudgeContext], list[Judgement]]
    extracts_answers: bool = False


Judge = AnswerJudge | OutcomeJudge

EQUIVALENCE = AnswerJudge("equivalence", lambda pairs, context, policy: judge_equivalence(pairs, context.verifier,
                                                                                           policy))
INTEGER = AnswerJudge("integer", lambda pairs, context, policy: judge_integer(pairs, policy))
CODE = OutcomeJudge("code", lambda pairs, context: judge_benchmark_programs(pairs, context.code_judge))
