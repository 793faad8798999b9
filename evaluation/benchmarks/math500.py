"""MATH-500 (OpenAI's PRM800K split of MATH): LaTeX answers compared by value with the math verifier."""

from evaluation.benchmarks.judging import EQUIVALENCE
from evaluation.benchmarks.spec import BenchmarkSpec, LmEvalTask, register
from evaluation.datasets.hub import HubSource, convert_math500
from evaluation.datasets.math_benchmarks import load_math500

MATH500 = BenchmarkSpec(
    name="math500",
    read=load_math500,
    hub=HubSource("HuggingFaceH4/MATH-500", "test", ("math500/test.jsonl",), convert_math500),
    judge=EQUIVALENCE,
    lm_eval_task=LmEvalTask("mirrorlab_math500", "math500/test.jsonl", "process_math500_docs", "math",
                            "MATH-500, 500 problems"),
)
register(MATH500, f"{__name__}:MATH500")
