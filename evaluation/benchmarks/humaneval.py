"""HumanEval (164 problems): the completed function run with its check(candidate) in the sandbox.

A completion continues the prompt; a whole function runs after the prompt (its imports and helpers), its
def replacing the stub (grading/programs.py).
"""

from evaluation.benchmarks.judging import CODE
from evaluation.benchmarks.spec import BenchmarkSpec, register
from evaluation.datasets.code_benchmarks import load_humaneval
from evaluation.datasets.hub import HubSource, convert_humaneval

FUNCTION_INSTRUCTION = "Complete the Python function above. Reply with the whole function in a ```python block."

HUMANEVAL = BenchmarkSpec(
    name="humaneval",
    read=load_humaneval,
    hub=HubSource("openai/openai_humaneval", "test", ("humaneval/HumanEval.jsonl.gz",), convert_humaneval,
                  config="openai_humaneval"),
    judge=CODE,
    instruction=FUNCTION_INSTRUCTION,
    plain_prompt=True,  # a model without a chat template completes the code itself
    plain_stops=("\nclass", "\ndef", "\n#", "\nif", "\nprint"),  # the Codex paper's: the function has ended
    test_set="full",
)
register(HUMANEVAL, f"{__name__}:HUMANEVAL")
