"""The chain-of-thought judge (§2.3.5): its prompt, strict verdict parsing, and the three grader modes."""

from __future__ import annotations

import pytest

from grading.cot_judge import (
    CotJudge, JudgeItem, RuleVerdict, grade, judge_prompt, parse_verdict, verifier_decided, verifier_verdicts,
)
from grading.verifier import MathVerifier, VerifierResult

CORRECT = '{"verdict": "correct"}'
INCORRECT = '{"verdict": "incorrect"}'


def test_the_prompt_carries_the_question_the_reference_and_the_response_then_the_schema():
    prompt = judge_prompt("  What is 1/2 + 1/4?\n", "\\frac{3}{4}", "So the sum is 0.75.\n")
    question, reference, response = (prompt.index(text) for text in
                                     ("What is 1/2 + 1/4?", "\\frac{3}{4}", "So the sum is 0.75."))
    assert question < reference < response
    assert prompt.index("## Reference answer") < reference < prompt.index("## Response") < response
    assert prompt.rstrip().endswith(f"{CORRECT} or {INCORRECT}")
    assert "step by step" in prompt


@pytest.mark.parametrize("output, verdict, reasoning", [
    (f"The response says 0.75, which is 3/4.\n{CORRECT}", "correct", "The response says 0.75, which is 3/4."),
    (f"It answers 5, the reference is 6.\n{INCORRECT}\n\n", "incorrect", "It answers 5, the reference is 6."),
    (f"Same value.\n```json\n{CORRECT}\n```", "correct", "Same value."),
    ('{"verdict":"correct"}', "correct", ""),
    (f"Consider the set {{1, 2}} and {{\"note\": 1}} in passing.\n{INCORRECT}", "incorrect",
     'Consider the set {1, 2} and {"note": 1} in passing.'),
])
def test_a_final_verdict_of_the_exact_schema_parses(output, verdict, reasoning):
    parsed = parse_verdict(output)
    assert (parsed.verdict, parsed.error, parsed.reasoning) == (verdict, "", reasoning)
    assert parsed.correct == (verdict == "correct")


@pytest.mark.parametrize("output, reason", [
    ("The answer matches, so it is correct.", "no JSON verdict"),
    ("", "no JSON verdict"),
    ('Reasoning...\n{"verdict": "correct"', "no JSON verdict"),  # never closed
    ('{"verdict": correct}', "no JSON verdict"),  # not JSON
    ("{'verdict': 'correct'}", "no JSON verdict"),  # Python, not JSON
    ('Matches.\n{"correct": true}', "exactly the key 'verdict'"),
    ('Matches.\n{"verdict": "correct", "confidence": 0.9}', "exactly the key 'verdict'"),
    ('Matches.\n{"Verdict": "correct"}', "exactly the key 'verdict'"),
    ('Matches.\n{"verdict": "Correct"}', "must be one of"),
    ('Matches.\n{"verdict": true}', "must be one of"),
    ('Matches.\n{"verdict": "partially correct"}', "must be one of"),
    ('{"verdict": {"verdict": "correct"}}', "must be one of"),
    ('{"verdict": "correct", "verdict": "incorrect"}', "appears twice"),
    (f"{CORRECT}\nOn reflection the units differ.", "text after the last JSON object"),
    (f"{CORRECT} Hmm, wait.", "text after the last JSON object"),
    (f'{CORRECT}\n{{"verdict": "correct"', "text after the last JSON object"),  # a second, malformed verdict
    (f"First thought: {CORRECT}\nOn reflection: {INCORRECT}", "2 verdicts"),
    (f"{CORRECT}\n{CORRECT}", "2 verdicts"),
    (f"{CORRECT}\n[1, 2]", "text after the last JSON object"),
])
def test_anything_else_is_a_judge_error_and_never_a_pass(output, reason):
    parsed = parse_verdict(output)
    assert parsed.verdict is None and not parsed.correct
    assert reason in parsed.error
    assert parsed.reasoning == output  # the whole output is kept to read


class ScriptedGenerate:
    """A judge engine that answers each prompt with the next scripted output, recording the batches."""

    def __init__(self, outputs: list[str]):
        self.outputs = list(outputs)
        self.batches: list[list[str]] = []

    def __call__(self, prompts: list[str]) -> list[str]:
        self.batches.append(prompts)
        return [self.outputs.pop(0) for _ in prompts]


def items(*responses: str) -> list[JudgeItem]:
    return [JudgeItem(f"Question {index}?", "6", response) for index, response in enumerate(responses)]


def test_the_judge_runs_in_batches_and_counts_its_errors():
    generate = ScriptedGenerate([f"ok\n{CORRECT}", f"no\n{INCORRECT}", "garbage garbage", f"{CORRECT} trailing",
                                 f"fine\n{CORRECT}"])
    judge = CotJudge(generate, batch_size=2)
    verdicts = judge.judge_many(items("a", "b", "c", "d", "e"))
    assert [len(batch) for batch in generate.batches] == [2, 2, 1]
    assert "Question 2?" in generate.batches[1][0] and "\nc" in generate.batches[1][0]
    assert [verdict.verdict for verdict in verdicts] == ["correct", "incorrect", None, None, "correct"]
    assert [verdict.correct for verdict in verdicts] == [True, False, False, False, True]
    assert [verdict.is_error for verdict in verdicts] == [False, False, True, True, False]
    assert verdicts[0].reasoning == "ok" and verdicts[2].reasoning == "garbage garbage"
    assert (judge.judged, judge.errors) == (5, 2)


def test_a_generate_that_loses_outputs_is_refused():
    with pytest.raises(ValueError, match="returned 1 outputs for 2 prompts"):
        CotJudge(lambda prompts: ["x"]).judge_many(items("a", "b"))


def answer_rule(chosen: list[JudgeItem]) -> list[RuleVerdict]:
    """A rule that decides responses of the form 'answer N' and cannot decide anything else."""
    verdicts = []
    for item in chosen:
        decided = item.response.startswith("answer ")
        answer = item.response.removeprefix("answer ") if decided else ""
        verdicts.append(RuleVerdict(decided and answer == item.reference, decided, answer))
    return verdicts


RESPONSES = ("answer 6", "answer 7", "six, I think", "it is 7")


def test_rule_mode_never_asks_the_judge():
    generate = ScriptedGenerate([])
    grades = grade(items(*RESPONSES), "rule", answer_rule, CotJudge(generate))
    assert [(entry.correct, entry.graded_by) for entry in grades] == [(True, "rule"), (False, "rule"),
                                                                     (False, "rule"), (False, "rule")]
    assert all(entry.judge is None for entry in grades) and generate.batches == []


def test_judge_mode_asks_the_judge_about_every_sample_and_errors_fail():
    generate = ScriptedGenerate([f"{INCORRECT}", f"{CORRECT}", f"{CORRECT}", "I cannot tell"])
    grades = grade(items(*RESPONSES), "judge", answer_rule, CotJudge(generate))
    assert [(entry.correct, entry.graded_by) for entry in grades] == [(False, "judge"), (True, "judge"),
                                                                     (True, "judge"), (False, "judge")]
    assert grades[3].judge.is_error and all(entry.rule is None for entry in grades)
    assert len(generate.batches[0]) == 4


def test_rule_then_judge_asks_the_judge_only_what_the_rule_cannot_decide():
    generate = ScriptedGenerate([f"Six is 6.\n{CORRECT}", "{broken"])
    judge = CotJudge(generate)
    grades = grade(items(*RESPONSES), "rule_then_judge", answer_rule, judge)
    assert [(entry.correct, entry.graded_by) for entry in grades] == [(True, "rule"), (False, "rule"),
                                                                     (True, "judge"), (False, "judge")]
    assert [prompt.split("## Response\n")[1].split("\n")[0] for prompt in generate.batches[0]] == [
        "six, I think", "it is 7"]
    assert grades[2].rule.decided is False and grades[2].judge.reasoning == "Six is 6."
    assert grades[3].judge.is_error and (judge.judged, judge.errors) == (2, 1)


def test_a_mode_that_asks_the_judge_needs_one_and_unknown_modes_are_named():
    with pytest.raises(ValueError, match="no judge was given"):
        grade(items("it is 7"), "rule_then_judge", answer_rule)
    with pytest.raises(ValueError, match="unknown grader mode 'vote'; choose one of rule, judge, rule_then_judge"):
        grade(items("x"), "vote", answer_rule)


@pytest.mark.parametrize("result, decided", [
    (VerifierResult(True, "6"), True), (VerifierResult(False, "7"), True), (VerifierResult(False, None), False),
    (VerifierResult(False, "6", timed_out=True), False),
])
def test_the_verifier_is_undecided_without_an_answer_or_in_time(result, decided):
    assert verifier_decided(result) is decided


def test_the_verifier_as_a_rule_follows_the_extraction_policy():
    pairs = [("\\boxed{6}", "6"), ("Answer: 6", "6"), ("no answer here", "6")]
    with MathVerifier(workers=1) as verifier:
        flexible = verifier_verdicts(pairs, verifier, "flexible")
        boxed = verifier_verdicts(pairs, verifier, "boxed")
    assert [(verdict.correct, verdict.decided) for verdict in flexible] == [(True, True), (True, True), (False, False)]
    assert [(verdict.correct, verdict.decided) for verdict in boxed] == [(True, True), (False, False), (False, False)]


def test_the_package_imports_neither_torch_nor_the_evaluation_layer():
    import subprocess
    import sys

    code = ("import sys, grading.cot_judge; "
            "print(sorted({name.split('.')[0] for name in sys.modules} & {'torch', 'evaluation', 'django'}))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
