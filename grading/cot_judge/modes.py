"""Grader modes: how a rule (the verifier) and the CoT judge combine into one verdict per sample.

rule: the rule alone. judge: the judge alone. rule_then_judge: the rule, and the judge only for the samples
the rule could not decide (no answer extracted, a timeout, an answer that does not parse).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

from grading.cot_judge.judge import CotJudge, JudgeItem
from grading.cot_judge.verdict import JudgeVerdict
from grading.verifier.extraction import FLEXIBLE

if TYPE_CHECKING:  # the verifier (mpmath, a process pool) loads only where a rule runs
    from grading.verifier.checker import MathVerifier, VerifierResult

RULE = "rule"
JUDGE = "judge"
RULE_THEN_JUDGE = "rule_then_judge"


@dataclass(frozen=True)
class RuleVerdict:
    """A rule's verdict on one response; decided is False when the rule could not tell."""

    correct: bool
    decided: bool
    extracted: str = ""  # the final answer the rule found
    detail: str = ""  # why: a timeout, an answer that is not an integer...


@dataclass(frozen=True)
class Grade:
    """One sample's final verdict, who gave it ("rule" or "judge"), and what each of them said (None: not asked)."""

    correct: bool
    graded_by: str
    rule: RuleVerdict | None = None
    judge: JudgeVerdict | None = None


Rule = Callable[[Sequence[JudgeItem]], list[RuleVerdict]]
GraderMode = Callable[[Sequence[JudgeItem], Rule, "CotJudge | None"], list[Grade]]
GRADER_MODES: dict[str, GraderMode] = {}


def grader_mode(name: str) -> Callable[[GraderMode], GraderMode]:
    """Register a grader mode under its name."""
    def register(function: GraderMode) -> GraderMode:
        GRADER_MODES[name] = function
        return function
    return register


@grader_mode(RULE)
def grade_by_rule(items: Sequence[JudgeItem], rule: Rule, judge: CotJudge | None) -> list[Grade]:
    return [Grade(verdict.correct, RULE, rule=verdict) for verdict in rule(items)]


@grader_mode(JUDGE)
def grade_by_judge(items: Sequence[JudgeItem], rule: Rule, judge: CotJudge | None) -> list[Grade]:
    return [Grade(verdict.correct, JUDGE, judge=verdict) for verdict in _needed(judge).judge_many(items)]


@grader_mode(RULE_THEN_JUDGE)
def grade_rule_then_judge(items: Sequence[JudgeItem], rule: Rule, judge: CotJudge | None) -> list[Grade]:
    rule_verdicts = rule(items)
    undecided = [index for index, verdict in enumerate(rule_verdicts) if not verdict.decided]
    judge_verdicts = dict(zip(undecided, _needed(judge).judge_many([items[index] for index in undecided])))
    return [Grade(judge_verdicts[index].correct, JUDGE, rule=verdict, judge=judge_verdicts[index])
            if index in judge_verdicts else Grade(verdict.correct, RULE, rule=verdict)
            for index, verdict in enumerate(rule_verdicts)]


GRADER_MODE_NAMES = tuple(GRADER_MODES)


def grader_mode_uses_judge(mode: str) -> bool:
    return mode != RULE


def _needed(judge: CotJudge | None) -> CotJudge:
    if judge is None:
        raise ValueError("this grader mode asks the CoT judge, but no judge was given")
    return judge


def grade(items: Sequence[JudgeItem], mode: str, rule: Rule, judge: CotJudge | None = None) -> list[Grade]:
    """One Grade per item, in order, under the named grader mode (judge may be None in mode "rule")."""
    if mode not in GRADER_MODES:
        raise ValueError(f"unknown grader mode {mode!r}; choose one of {', '.join(GRADER_MODE_NAMES)}")
    return GRADER_MODES[mode](items, rule, judge)


VERIFIER_TIMED_OUT = "verifier timed out"  # RuleVerdict.detail of a check the verifier did not finish in time


def verifier_decided(result: VerifierResult) -> bool:
    """Whether the verifier could decide: an answer was extracted, read and checked in time."""
    return result.decided


def verifier_verdicts(pairs: Sequence[tuple[str, str]], verifier: MathVerifier,
                      extraction_policy: str = FLEXIBLE) -> list[RuleVerdict]:
    """The verifier as a rule over (response, reference) pairs."""
    return [RuleVerdict(result.correct, verifier_decided(result), result.extracted or "",
                        VERIFIER_TIMED_OUT if result.timed_out else "")
            for result in verifier.check_many(pairs, extraction_policy)]
