"""AIME 2024 and 2025 (30 problems each): integer answers 0-999, compared as integers ("033" == "33")."""

from evaluation.benchmarks.judging import INTEGER
from evaluation.benchmarks.spec import BenchmarkSpec, LmEvalTask, register
from evaluation.datasets.hub import HubSource, convert_aime24, convert_aime25
from evaluation.datasets.math_benchmarks import load_aime24, load_aime25

AIME24 = BenchmarkSpec(
    name="aime24",
    read=load_aime24,
    hub=HubSource("HuggingFaceH4/aime_2024", "train", ("aime24/test.jsonl",), convert_aime24),
    judge=INTEGER,
    lm_eval_task=LmEvalTask("mirrorlab_aime24", "aime24/test.jsonl", "process_aime24_docs", "integer",
                            "AIME 2024 I+II, 30 problems"),
)
register(AIME24, f"{__name__}:AIME24")

AIME25 = BenchmarkSpec(
    name="aime25",
    read=load_aime25,
    hub=HubSource("math-ai/aime25", "test", ("aime25/aime25.jsonl",), convert_aime25),
    judge=INTEGER,
    lm_eval_task=LmEvalTask("mirrorlab_aime25", "aime25/aime25.jsonl", "process_aime25_docs", "integer",
                            "AIME 2025 I+II, 30 problems"),
)
register(AIME25, f"{__name__}:AIME25")
