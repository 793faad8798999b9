"""Correctness rewards go through the math verifier: equal values in other written forms earn the reward."""

import pytest

from training.rewards import CorrectnessRewards
from training.types import PromptRecord


@pytest.fixture(scope="module")
def correctness():
    with CorrectnessRewards() as rewards:
        yield rewards


def record(answer: str) -> PromptRecord:
    return PromptRecord(prompt_id="p", problem="?", answer=answer)


@pytest.mark.parametrize("response, answer, reward", [
    ("3+4=7\nAnswer: 7", "7", 1.0),
    ("3+4=8\nAnswer: 8", "7", 0.0),
    ("so the result is \\boxed{\\frac{1}{2}}", "0.5", 1.0),
    ("Answer: 0.50", "1/2", 1.0),
    ("\\boxed{[1, 3)}", "[1,3)", 1.0),
    ("\\boxed{(1, 3)}", "[1,3)", 0.0),
    ("no answer here", "7", 0.0),
])
def test_rewards_compare_final_answers_by_value(correctness, response, answer, reward):
    assert correctness([record(answer)], [response]) == [reward]


def test_batched_rewards_keep_the_order(correctness):
    records = [record("7"), record("2"), record("7")]
    assert correctness(records, ["Answer: 7", "Answer: 3", "\\boxed{7}"]) == [1.0, 0.0, 1.0]


def test_a_record_without_an_answer_is_refused(correctness):
    with pytest.raises(ValueError, match="neither a reference answer nor test cases"):
        correctness([record("")], ["Answer: 1"])


def test_code_problems_are_rewarded_by_running_their_tests_in_the_sandbox(correctness):
    add = PromptRecord(prompt_id="add", problem="Read a and b, print a+b.",
                       test_cases=[{"input": "1 2\n", "output": "3\n"}, {"input": "5 7\n", "output": "12\n"}])
    square = PromptRecord(prompt_id="sq", problem="Write square(x).", test_cases=[
        {"kind": "functional", "entry_point": "square", "code": "def check(f):\n    assert f(3) == 9\n"}])
    right = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
    wrong = "```python\nprint(3)\n```"
    rewards = correctness([add, add, square, record("7")],
                                  [right, wrong, "```python\ndef square(x):\n    return x * x\n```", "Answer: 7"])
    assert rewards == [1.0, 0.0, 1.0, 1.0]


def test_malformed_test_cases_are_refused_naming_the_case():
    from common.test_cases import normalise_test_cases

    with pytest.raises(ValueError, match=r"test_cases\[1\]\.output must be a string"):
        normalise_test_cases([{"input": "1", "output": "1"}, {"input": "2"}])
    with pytest.raises(ValueError, match=r"test_cases\[0\]\.kind must be 'stdin' or 'functional'"):
        normalise_test_cases([{"kind": "docker"}])


def test_the_boxed_policy_ignores_answer_lines():
    with CorrectnessRewards(extraction_policy="boxed") as boxed:
        assert boxed([record("7"), record("7")], ["Answer: 7", "so \\boxed{7}"]) == [0.0, 1.0]


def test_an_unknown_extraction_policy_is_refused_by_name():
    with pytest.raises(ValueError, match="extraction policy must be one of flexible, boxed, got 'loose'"):
        CorrectnessRewards(extraction_policy="loose")


def test_closing_stops_the_sandbox_and_the_verifier():
    rewards = CorrectnessRewards()
    square = PromptRecord(prompt_id="sq", problem="Write square(x).", test_cases=[
        {"kind": "functional", "entry_point": "square", "code": "def check(f):\n    assert f(3) == 9\n"}])
    assert rewards([square], ["```python\ndef square(x):\n    return x * x\n```"]) == [1.0]
    rewards.close()
    rewards.close()  # twice is harmless
    with pytest.raises(RuntimeError, match="closed"):
        rewards.verifier.check_many([("\\boxed{7}", "7")])
