"""Programs cut out of responses and judged on their tests in the sandbox.

What runs is the response's code (extract_code) after what its task puts in front (assemble_program):
- a task whose prompt is a Python stub of the function its functional tests call (HumanEval) runs the
  prompt first: a completion (a function body) continues it, and a whole function follows it, so the
  prompt's imports and helpers (`List`, `poly`, `encode_cyclic`) are defined and the later def replaces the stub;
- any other task (LiveCodeBench, RL code prompts) runs LiveCodeBench's import header first, as
  LiveCodeBench's own harness does, so a solution may use `List`, `defaultdict` or `gcd` without importing them.
What goes in front is fixed text a response could have written itself, and a check takes nothing but the
candidate from the solution (grading/sandbox/functional.py; a stub task's prompt runs in front of its checks,
so their helpers are the prompt's), so it cannot make a wrong program pass. Evaluation and RL rewards build
their tasks with code_task(), so one response gets one verdict in both.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Sequence

from grading.judgement import Judgement
from grading.thinking import after_thinking

PYTHON_LANGUAGES = ("", "python", "py", "python3")  # info strings of a block that is the program ("" untagged)
# A fence line: up to 3 spaces, then 3 or more backticks; an opening fence's info string names the language.
_OPENING_FENCE = re.compile(r" {0,3}(`{3,})[ \t]*([^`]*)")
_CLOSING_FENCE = re.compile(r" {0,3}(`{3,})[ \t]*")
_GLUED_FENCE = re.compile(r"(?P<text>(?! {0,3}`{3})[^`]*\S)[ \t]*(?P<fence>`{3,}[\w+-]*)[ \t]*")

# The modules LiveCodeBench's harness imports in front of every program (lcb_runner/evaluation/
# testing_util.py, import_string), each as `from m import *` and `import m`; builtins and typing are
# star-imported after them (builtins restores what io and operator shadow), and recursion may go 50,000 deep.
HEADER_MODULES = ("string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random",
                  "statistics", "itertools", "functools", "operator", "io", "sys", "json")
IMPORT_HEADER = ("".join(f"from {module} import *\n" for module in (*HEADER_MODULES, "builtins", "typing"))
                 + "".join(f"import {module}\n" for module in HEADER_MODULES)
                 + "sys.setrecursionlimit(50000)\n")


@dataclass(frozen=True)
class CodeTask:
    """What judging a program needs: the problem's prompt, its tests, and the function a stub prompt defines.

    entry_point is set only when the prompt is Python code defining that function (HumanEval); build tasks
    with code_task().
    """

    prompt: str
    test_cases: Sequence
    entry_point: str | None = None


@dataclass(frozen=True)
class CodeBlock:
    """A fenced block of a response: its language (the info string's first word, lower case) and code."""

    language: str
    code: str
    closed: bool


def code_task(prompt: str, test_cases: Sequence) -> CodeTask:
    """The task of a problem or prompt record, read off its prompt and tests alone.

    The entry point is the function every functional test calls, kept only when the prompt is a Python
    stub defining it at the top level (HumanEval's prompts); LiveCodeBench's `Solution().method` and
    prompts in prose have none.
    """
    names = {case.get("entry_point") for case in test_cases if case.get("kind") == "functional"}
    name = names.pop() if len(names) == 1 else None
    if isinstance(name, str) and name.isidentifier() and defines_function(prompt, name):
        return CodeTask(prompt, [prompt_before_check(case, prompt, name) for case in test_cases], name)
    return CodeTask(prompt, test_cases)


# A stub task's check: the prompt's helpers, the dataset's check, and the entry point bound to the candidate when
# the check runs (some checks call it by name, as HumanEval/33 does, where the prompt's stub would return None).
STUB_TASK_CHECK = """{prompt}

{test}

def check(candidate, _dataset_check=check):  # the check above, held here: a check wrapped twice calls down, not itself
    globals()[{entry_point!r}] = candidate
    _dataset_check(candidate)
"""


def stub_task_check(prompt: str, check_code: str, entry_point: str) -> str:
    """The check code of a stub task's functional test, run after its prompt (STUB_TASK_CHECK)."""
    return STUB_TASK_CHECK.format(prompt=prompt, test=check_code, entry_point=entry_point)


def prompt_before_check(case, prompt: str, entry_point: str):
    """A functional test of a stub task with the prompt run first in its check (stub_task_check), so the helpers
    the check calls (poly, encode_cyclic) are the prompt's own: the checker takes nothing but the candidate
    from the solution (grading/sandbox/functional.py). A check that already starts with the prompt (the
    HumanEval loader's) is left as it is."""
    if not isinstance(case, dict) or case.get("kind") != "functional" or case.get("code", "").startswith(prompt):
        return case
    return {**case, "code": stub_task_check(prompt, case["code"], entry_point)}


def defines_function(source: str, name: str) -> bool:
    """Whether source parses as Python and defines the function `name` at its top level."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # prose, null bytes, absurd nesting
        return False
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name
               for node in tree.body)


def fenced_blocks(response: str) -> list[CodeBlock]:
    """The fenced code blocks of a response, in order.

    A fence is a line of three or more backticks (after at most three spaces); an opening fence may carry
    an info string, and the block ends at the next line of at least as many backticks and nothing else,
    so fences pair up in order whatever their languages. Inside a block that line ends it even in a
    Python string: a program holding a line of bare backticks needs a longer fence (````), as in Markdown.
    A block left open (a truncated response) runs to the end of the response.
    """
    blocks, opening, body = [], None, []
    for line in _fence_lines(response):
        text = line.rstrip()
        if opening is None:
            opening = _OPENING_FENCE.fullmatch(text)
            body = []
            continue
        closing = _CLOSING_FENCE.fullmatch(text)
        if closing and len(closing.group(1)) >= len(opening.group(1)):
            blocks.append(_block(opening, body, closed=True))
            opening = None
        else:
            body.append(line)
    if opening is not None:
        blocks.append(_block(opening, body, closed=False))
    return blocks


def _fence_lines(response: str) -> list[str]:
    """The response's lines, a fence written at the end of a line of text put on a line of its own: an
    opening after prose ("Here is the code: ```python") or a closing glued to the last line of code
    ("print(1)```")."""
    lines = []
    for line in response.split("\n"):
        glued = _GLUED_FENCE.fullmatch(line)
        lines += [glued.group("text"), glued.group("fence")] if glued else [line]
    return lines


def _block(opening: re.Match, body: list[str], closed: bool) -> CodeBlock:
    """A block's code, with the fence's own indentation taken off each line (a fence inside a list item)."""
    indent = len(opening.group(0)) - len(opening.group(0).lstrip(" "))
    lines = [line[min(indent, len(line) - len(line.lstrip(" "))):] for line in body]
    words = opening.group(2).split()
    return CodeBlock(words[0].lower() if words else "", "".join(line + "\n" for line in lines), closed)


def extract_code(response: str) -> str:
    """The last fenced block tagged python, py or python3 or untagged, else the response itself.

    Blocks in other languages (cpp, bash, text) and empty blocks (a stray fence at the end) are passed
    over; the last block wins even when it is a usage example or sample output. Only what follows a reasoning
    model's thinking counts (grading.thinking).
    """
    response = after_thinking(response)
    if response is None:  # the thinking never closed: no program was given
        return ""
    blocks = [block for block in fenced_blocks(response)
              if block.language in PYTHON_LANGUAGES and block.code.strip()]
    return blocks[-1].code if blocks else response


def assemble_program(code: str, task: CodeTask) -> str:
    """The program that runs: the code after the task's prompt (a stub prompt) or after the import header."""
    if task.entry_point is None:
        return _after(IMPORT_HEADER + "\n", code)
    if defines_entry_point(code, task.entry_point):
        return _after(task.prompt + "\n\n", code)
    return task.prompt + code  # a completion: the body of the prompt's last function


def defines_entry_point(code: str, name: str) -> bool:
    """Whether the code defines `name` at the start of a line, i.e. is a whole function, not a completion."""
    return re.search(rf"^(?:async[ \t]+)?def[ \t]+{re.escape(name)}[ \t]*\(", code, re.MULTILINE) is not None


def _after(preamble: str, code: str) -> str:
    """preamble + code, with the code's `from __future__` imports moved in front (they must come first)."""
    if "__future__" not in code:
        return preamble + code
    try:
        body = ast.parse(code).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return preamble + code  # it fails as it would have alone
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # a module docstring may come before them
    futures = []
    for node in body:
        if not (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            break
        futures.append(node)
    if not futures:
        return preamble + code
    lines = code.split("\n")
    moved = {index for node in futures for index in range(node.lineno - 1, node.end_lineno)}
    hoisted = "".join(lines[index] + "\n" for index in sorted(moved))
    kept = "\n".join("" if index in moved else line for index, line in enumerate(lines))  # blank lines in their place
    return hoisted + preamble + kept


def extract_program(response: str, task: CodeTask) -> str:
    """The program a response gives for its task: extract_code, then assemble_program."""
    return assemble_program(extract_code(response), task)


def judge_programs(pairs: Sequence[tuple[CodeTask, str]], code_judge) -> list[Judgement]:
    """Accepted (every test passes) is correct; the detail is the sandbox verdict and tests passed. The
    extracted answer is the response's code (what the model wrote; the header or prompt in front is the task's)."""
    codes = [extract_code(response) for _, response in pairs]
    programs = [assemble_program(code, task) for code, (task, _) in zip(codes, pairs)]
    results = code_judge.judge_many([(program, task.test_cases) for program, (task, _) in zip(programs, pairs)])
    return [Judgement(result.verdict == "accepted", code, f"{result.verdict} ({result.passed}/{result.total} tests)")
            for code, result in zip(codes, results)]
