"""LiveCodeBench v5 slice (279 problems, 2024-08..2025-01): the last code block run on the PUBLIC tests.

The program runs after LiveCodeBench's own import header (typing, collections, math, ...: grading/programs.py).

The prompt is the full LCB generation prompt (its own format instructions), so no instruction is added.
"""

from evaluation.benchmarks.judging import CODE
from evaluation.benchmarks.spec import BenchmarkSpec, register
from evaluation.datasets.code_benchmarks import load_livecodebench
from evaluation.datasets.hub import LIVECODEBENCH_RELEASE_V5, HubSource, convert_livecodebench

LIVECODEBENCH = BenchmarkSpec(
    name="livecodebench",
    read=load_livecodebench,
    hub=HubSource("livecodebench/code_generation_lite", "train",
                  ("livecodebench/livecodebench_v5.jsonl", "livecodebench/livecodebench_public_tests.json"),
                  convert_livecodebench, data_files=LIVECODEBENCH_RELEASE_V5,
                  note="release_v5 files, 2024-08..2025-01, public tests"),
    judge=CODE,
    instruction="",
    test_set="public",
)
register(LIVECODEBENCH, f"{__name__}:LIVECODEBENCH")
