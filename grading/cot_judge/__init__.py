"""The chain-of-thought reward model of the Kimi k1.5 report (§2.3.5), as a judge any engine can drive.

The judge reads (question, reference answer, response), reasons step by step and ends with a JSON verdict,
{"verdict": "correct"} or {"verdict": "incorrect"}. Parsing is strict: an output whose last JSON object is not
exactly that is a counted judge error, never a pass. Grader modes combine the judge with a rule (the verifier):
rule, judge, rule_then_judge. No torch here: CotJudge takes a batched generate(prompts) -> texts callable.
"""

from grading.cot_judge.judge import CotJudge, JudgeItem
from grading.cot_judge.modes import (
    GRADER_MODE_NAMES, JUDGE, RULE, RULE_THEN_JUDGE, VERIFIER_TIMED_OUT, Grade, RuleVerdict, grade,
    grader_mode_uses_judge, verifier_decided, verifier_verdicts,
)
from grading.cot_judge.prompt import judge_prompt
from grading.cot_judge.verdict import CORRECT, INCORRECT, VERDICTS, JudgeVerdict, parse_verdict

__all__ = [
    "CORRECT",
    "CotJudge",
    "GRADER_MODE_NAMES",
    "Grade",
    "INCORRECT",
    "JUDGE",
    "JudgeItem",
    "JudgeVerdict",
    "RULE",
    "RULE_THEN_JUDGE",
    "RuleVerdict",
    "VERDICTS",
    "VERIFIER_TIMED_OUT",
    "grade",
    "grader_mode_uses_judge",
    "judge_prompt",
    "parse_verdict",
    "verifier_decided",
    "verifier_verdicts",
]
