"""The grading audit's code responses on real HumanEval and LiveCodeBench problems, judged in the sandbox.

Each response is judged by the evaluation's code judge and by the RL reward of a prompt record holding the
problem's prompt and tests; both must give the same verdict. Correct programs pass, wrong ones fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.datasets.code_benchmarks import load_humaneval, load_livecodebench
from evaluation.judges.code import code_task, judge_benchmark_programs
from training.types import PromptRecord

DATA_DIR = Path(__file__).parents[2].parent / "shared" / "datasets"

if not DATA_DIR.is_dir():
    pytest.skip(f"shared datasets folder {DATA_DIR} is absent", allow_module_level=True)

CLOSE_ELEMENTS = '''def has_close_elements(numbers: List[float], threshold: float) -> bool:
    for i, a in enumerate(numbers):
        for j, b in enumerate(numbers):
            if i != j and abs(a - b) < threshold:
                return True
    return False
'''
CLOSE_ELEMENTS_BODY = CLOSE_ELEMENTS.split("\n", 1)[1]
FIND_ZERO = '''def find_zero(xs: list):
    lo, hi = -1.0, 1.0
    while poly(xs, lo) * poly(xs, hi) > 0:
        lo *= 2.0
        hi *= 2.0
    while hi - lo > 1e-10:
        mid = (lo + hi) / 2.0
        if poly(xs, mid) * poly(xs, lo) > 0:
            lo = mid
        else:
            hi = mid
    return lo
'''
LEAP_YEAR = '''Y = int(input())
if Y % 4 != 0:
    print(365)
elif Y % 100 != 0:
    print(366)
elif Y % 400 != 0:
    print(365)
else:
    print(366)
'''
SNAKE = '''class Solution:
    def finalPositionOfSnake(self, n: int, commands: List[str]) -> int:
        i = j = 0
        for c in commands:
            if c == "UP": i -= 1
            elif c == "DOWN": i += 1
            elif c == "LEFT": j -= 1
            else: j += 1
        return i * n + j
'''


def fenced(code: str, before: str = "") -> str:
    return f"{before}```python\n{code}```\n"


@pytest.fixture(scope="module")
def problems():
    loaded = load_humaneval(DATA_DIR) + load_livecodebench(DATA_DIR)
    return {problem.problem_id: problem for problem in loaded}


@pytest.fixture(scope="module")
def graders():
    from grading.sandbox import CodeJudge
    from training.rewards import CorrectnessRewards

    with CodeJudge(workers=2) as code_judge, CorrectnessRewards() as rewards:
        yield code_judge, rewards


def verdicts(graders, problem, responses: list[str]) -> list[bool]:
    """Whether each response passes, in evaluation; the RL reward of the same record must agree."""
    code_judge, rewards = graders
    judgements = judge_benchmark_programs([(problem, response) for response in responses], code_judge)
    judged = [judgement.correct for judgement in judgements]
    record = PromptRecord(prompt_id=problem.problem_id, problem=problem.prompt, test_cases=problem.test_cases)
    rewarded = [reward == 1.0 for reward in rewards([record] * len(responses), responses)]
    assert rewarded == judged, "the RL reward and the evaluation disagree"
    return judged


def test_a_whole_humaneval_function_runs_after_the_prompt_with_its_imports_and_helpers(problems, graders):
    """Before, the whole function ran alone: NameError on List, poly and encode_cyclic (runtime_error)."""
    right = [fenced(CLOSE_ELEMENTS, "Here is the implementation:\n\n")]
    wrong = [fenced("def has_close_elements(numbers: List[float], threshold: float) -> bool:\n    return False\n"),
             fenced(CLOSE_ELEMENTS.replace("def has_close_elements", "def has_close"))]  # the stub stays
    assert verdicts(graders, problems["HumanEval/0"], right + wrong) == [True, False, False]
    cheat_poly = "def poly(xs, x):\n    return 0.0\n\n\ndef find_zero(xs: list):\n    return 0.0\n"
    assert verdicts(graders, problems["HumanEval/32"], [fenced(FIND_ZERO), fenced("def find_zero(xs: list):\n"
                                                                                  "    return 0.0\n"),
                                                          fenced(cheat_poly)]) == [True, False, False]
    decode = "def decode_cyclic(s: str):\n    return encode_cyclic(encode_cyclic(s))\n"
    identity = "def encode_cyclic(s):\n    return s\n\n\ndef decode_cyclic(s):\n    return s\n"
    assert verdicts(graders, problems["HumanEval/38"], [fenced(decode), fenced(identity)]) == [True, False]


def test_a_completion_earns_the_rl_reward_as_it_passes_in_evaluation(problems, graders):
    """Before, RL built its task without the entry point, ran the body alone and scored 0."""
    responses = [fenced(CLOSE_ELEMENTS_BODY), CLOSE_ELEMENTS_BODY, "    return False\n"]
    assert verdicts(graders, problems["HumanEval/0"], responses) == [True, True, False]


def test_a_python_block_after_a_block_in_another_language_is_the_program(problems, graders):
    """Before, the other block's closing fence opened a block, and the prose after it ran."""
    whole = "from typing import List\n" + CLOSE_ELEMENTS
    humaneval = [fenced(whole, "Run it with:\n```bash\npython solution.py\n```\n\nThe code:\n"),
                 fenced(whole, "Input format:\n```text\n[1.0, 2.0], 0.5\n```\n\n") + "This runs in O(n^2)."]
    assert verdicts(graders, problems["HumanEval/0"], humaneval) == [True, True]
    cpp = "```cpp\n#include <bits/stdc++.h>\nint main(){int y;std::cin>>y;}\n```\n\nIn Python:\n\n"
    wrong_year = LEAP_YEAR[:LEAP_YEAR.rindex("366")] + "365)\n"
    assert verdicts(graders, problems["abc365_a"], [fenced(LEAP_YEAR, cpp), fenced(wrong_year, cpp)]) == [True, False]


def test_livecodebench_programs_run_after_its_import_header(problems, graders):
    """Before, List from the starter code was a NameError; LiveCodeBench's harness imports typing and more."""
    wrong = "class Solution:\n    def finalPositionOfSnake(self, n, commands):\n        return 0\n"
    assert verdicts(graders, problems["3533"], [fenced(SNAKE), fenced(wrong)]) == [True, False]


def test_what_is_put_in_front_of_a_response_passes_no_problem_by_itself(problems, graders):
    """An empty response runs the HumanEval prompt alone (its stub returns None) or the import header alone."""
    code_judge, _ = graders
    every = list(problems.values())
    stubs = {problem.problem_id for problem in every if code_task(problem).entry_point is not None}
    assert stubs == {problem.problem_id for problem in every if problem.problem_id.startswith("HumanEval/")}
    passed = [problem.problem_id for problem, judgement in zip(every, judge_benchmark_programs(
        [(problem, "") for problem in every], code_judge)) if judgement.correct]
    assert passed == []
