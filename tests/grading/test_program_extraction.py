"""Programs cut out of responses: fences pair up in order, and what a task puts in front of the code.

The unit tests read extract_code and assemble_program; the sandbox tests (both backends) check that a
correct program now passes and that nothing put in front of a wrong one makes it pass.
"""

from __future__ import annotations

import pytest

from grading.programs import (IMPORT_HEADER, CodeTask, assemble_program, code_task, extract_code,
                              extract_program, fenced_blocks, judge_programs)

SOLUTION = "Y = int(input())\nprint(366 if Y % 4 == 0 and (Y % 100 != 0 or Y % 400 == 0) else 365)\n"
PYTHON_BLOCK = f"```python\n{SOLUTION}```"

# A HumanEval-style task: the prompt imports List and defines a helper the solution may call; the check
# (as the HumanEval loader builds it) runs the prompt first, so its helper is the prompt's own.
STUB_PROMPT = '''from typing import List


def double(x: int) -> int:
    return 2 * x


def double_all(numbers: List[int]) -> List[int]:
    """Every number doubled with double()."""
'''
STUB_CHECK = STUB_PROMPT + '''

def check(candidate):
    assert candidate([1, 2, 3]) == [double(number) for number in [1, 2, 3]]
'''
STUB_TASK = code_task(STUB_PROMPT, [{"kind": "functional", "entry_point": "double_all", "code": STUB_CHECK}])
WHOLE_FUNCTION = "def double_all(numbers: List[int]) -> List[int]:\n    return [double(n) for n in numbers]\n"

YEAR_TESTS = [{"kind": "stdin", "input": "2023\n", "output": "365\n"},
              {"kind": "stdin", "input": "2000\n", "output": "366\n"}]
YEAR_TASK = code_task("Print the number of days in year Y.", YEAR_TESTS)


@pytest.mark.parametrize("before", [
    "```cpp\n#include <bits/stdc++.h>\nint main(){int y;std::cin>>y;}\n```\n\nIn Python:\n\n",  # LiveCodeBench abc365_a
    "Run it with:\n```bash\npython solution.py\n```\n\nThe code:\n",  # HumanEval/0
    "Input format:\n```text\n[1.0, 2.0], 0.5\n```\n\n",
    "Sample:\n```\n2023\n```\nExpected output:\n```\n365\n```\n\n",
])
def test_fences_pair_in_order_so_a_block_in_another_language_is_passed_over(before):
    """Before, the closing fence of a ```cpp block opened a block, and the prose after it ran as the program."""
    assert extract_code(before + PYTHON_BLOCK + "\nThis runs in O(1).") == SOLUTION


@pytest.mark.parametrize("tag", ["python", "py", "Python", "python3", "", "python title=solution.py"])
def test_a_block_tagged_python_py_python3_or_untagged_is_a_program(tag):
    assert extract_code(f"```{tag}\n{SOLUTION}```") == SOLUTION


def test_the_last_python_block_wins_even_a_usage_example_or_sample_output():
    draft = "```python\nprint(1)\n```\n"
    assert extract_code(draft + PYTHON_BLOCK) == SOLUTION
    assert extract_code(PYTHON_BLOCK + "\nFor input 2023 the output is:\n```\n365\n```") == "365\n"


def test_a_block_left_open_by_a_truncated_response_runs_to_the_end():
    assert extract_code("```python\nprint(1)\n```\nBetter:\n```python\nY = int(inp") == "Y = int(inp\n"
    (block,) = fenced_blocks("```python\nY = int(inp")
    assert not block.closed
    assert extract_code(PYTHON_BLOCK + "\n```") == SOLUTION  # a stray fence at the end opens an empty block


def test_a_response_without_a_python_block_is_the_program_itself():
    assert extract_code("    return a + b\n") == "    return a + b\n"
    only_cpp = "```cpp\nint main(){}\n```"
    assert extract_code(only_cpp) == only_cpp


def test_a_line_of_bare_backticks_ends_a_block_even_inside_a_string_unless_the_fence_is_longer():
    """The documented limit of matching fences per line: such a program needs a four-backtick fence."""
    program = 'FENCE = """\n```\n"""\nprint(FENCE)\n'
    assert extract_code(f"```python\n{program}```") == 'FENCE = """\n'
    assert extract_code(f"````python\n{program}````") == program
    assert extract_code('```python\ns = "```python"\n```') == 's = "```python"\n'  # not at a line start


def test_a_fence_indented_in_a_list_item_is_a_fence_and_its_indent_is_left_out():
    response = "1. Read the year:\n   ```python\n   Y = int(input())\n   print(Y)\n   ```\n"
    assert extract_code(response) == "Y = int(input())\nprint(Y)\n"
    indented = "    ```python\n    print(1)\n    ```"
    assert extract_code(indented) == indented  # four spaces: code, not a fence


def test_code_task_keeps_an_entry_point_only_for_a_python_stub_prompt_that_defines_it():
    assert STUB_TASK.entry_point == "double_all"
    leetcode = [{"kind": "functional", "entry_point": "Solution().finalPositionOfSnake", "code": "def check(f): pass"}]
    assert code_task("class Solution:\n    def finalPositionOfSnake(self, n, commands):\n        pass\n",
                     leetcode).entry_point is None  # LiveCodeBench: its prompt is prose with starter code
    square = [{"kind": "functional", "entry_point": "square", "code": "def check(f):\n    assert f(3) == 9\n"}]
    assert code_task("Write square(x).", square).entry_point is None
    assert code_task("def cube(x):\n    pass\n", square).entry_point is None
    assert code_task("def square(x):\n    pass\n", square).entry_point == "square"
    assert YEAR_TASK.entry_point is None


def test_a_completion_continues_a_stub_prompt_and_a_whole_function_runs_after_it():
    """Before, a whole function ran alone, without the prompt's imports (List) and helpers (double)."""
    body = "    return [double(n) for n in numbers]\n"
    assert extract_program(body, STUB_TASK) == STUB_PROMPT + body
    assert extract_program(f"```python\n{WHOLE_FUNCTION}```", STUB_TASK) == STUB_PROMPT + "\n\n" + WHOLE_FUNCTION


def test_any_other_task_runs_after_livecodebenchs_import_header():
    assert extract_program(PYTHON_BLOCK, YEAR_TASK) == IMPORT_HEADER + "\n" + SOLUTION
    assert IMPORT_HEADER.startswith("from string import *\n") and "from typing import *\n" in IMPORT_HEADER
    assert IMPORT_HEADER.endswith("import json\nsys.setrecursionlimit(50000)\n")


def test_future_imports_move_in_front_of_what_the_task_puts_first():
    code = '"""Doubles."""\nfrom __future__ import annotations\n\n' + WHOLE_FUNCTION
    program = assemble_program(code, STUB_TASK)
    assert program.startswith("from __future__ import annotations\n" + STUB_PROMPT)
    assert program.endswith('"""Doubles."""\n\n\n' + WHOLE_FUNCTION)
    compile(program, "<program>", "exec")
    compile(assemble_program("from __future__ import annotations\nprint(1)\n", YEAR_TASK), "<program>", "exec")


def verdicts(judge, pairs: list[tuple[CodeTask, str]]) -> list[str]:
    return [judgement.detail.split(" ")[0] for judgement in judge_programs(pairs, judge)]


def test_correct_programs_pass_with_the_prompt_or_the_header_in_front(judge):
    starter = "class Solution:\n    def longest(self, words: List[str]) -> int:\n"
    leetcode_prompt = f"Return the length of the longest word.\n\n```python\n{starter}        \n```"
    leetcode_check = "def check(candidate):\n    assert candidate(['a', 'abc']) == 3\n"
    leetcode = code_task(leetcode_prompt, [{"kind": "functional", "entry_point": "Solution().longest",
                                            "code": leetcode_check}])
    pairs = [(STUB_TASK, f"Here it is:\n```python\n{WHOLE_FUNCTION}```"),  # no import of List, calls double
             (STUB_TASK, "```python\n    return [double(n) for n in numbers]\n```"),  # a completion
             (STUB_TASK, "```python\nfrom __future__ import annotations\n\n" + WHOLE_FUNCTION + "```"),
             (YEAR_TASK, "```cpp\nint main(){}\n```\nIn Python:\n" + PYTHON_BLOCK),
             (YEAR_TASK, "```python\nprint(365 + (gcd(int(input()), 4) == 4))\n```"),  # gcd from the header
             (leetcode, f"```python\n{starter}        return max(map(len, words))\n```")]  # List from the header
    assert verdicts(judge, pairs) == ["accepted"] * len(pairs)


def test_wrong_programs_still_fail_whatever_is_put_in_front(judge):
    cheat = "def double(x):\n    return x\n\n\ndef double_all(numbers):\n    return list(numbers)\n"
    pairs = [(STUB_TASK, ""),  # the prompt alone: the stub returns None
             (STUB_TASK, f"```python\n{cheat}```"),  # redefines the helper the check uses: the check keeps its own
             (STUB_TASK, "```python\ndef double_all(numbers):\n    return numbers\n```"),
             (STUB_TASK, "```python\n" + WHOLE_FUNCTION.replace("double_all", "double_every") + "```"),  # stub stays
             (YEAR_TASK, ""),  # the header alone prints nothing
             (YEAR_TASK, "```python\nprint(365)\n```")]
    assert verdicts(judge, pairs) == ["wrong_answer"] * len(pairs)


def test_a_fence_written_after_prose_or_glued_to_the_last_code_line_is_a_fence():
    from grading.programs import extract_code

    assert extract_code("Here is the code: ```python\nprint(1)\n```\nDone.") == "print(1)\n"
    assert extract_code("```python\nprint(1)```\nThat's it.") == "print(1)\n"


def test_only_the_program_after_the_thinking_counts():
    """A draft in <think> ... </think> is not the answer; a response whose thinking never closed gave no program."""
    from grading.programs import extract_code

    draft, final = "```python\nprint(1)\n```", "```python\nprint(2)\n```"
    assert extract_code(f"<think>\n{draft}\n</think>\nHere it is:\n{final}") == "print(2)\n"
    assert extract_code(f"{draft}\n</think>\nNo code, sorry.") == "\nNo code, sorry."  # the template opened <think>
    assert extract_code(f"<think>\nlet me try\n{draft}") == ""
