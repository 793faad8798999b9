"""AMC 2023 (40 problems): answers compared by value with the math verifier."""

from evaluation.benchmarks.judging import EQUIVALENCE
from evaluation.benchmarks.spec import BenchmarkSpec, LmEvalTask, register
from evaluation.datasets.hub import HubSource, convert_amc23
from evaluation.datasets.math_benchmarks import load_amc23

AMC23 = BenchmarkSpec(
    name="amc23",
    read=load_amc23,
    hub=HubSource("math-ai/amc23", "test", ("amc23/test.jsonl",), convert_amc23),
    judge=EQUIVALENCE,
    lm_eval_task=LmEvalTask("mirrorlab_amc23", "amc23/test.jsonl", "process_amc23_docs", "math",
                            "AMC 2023, 40 problems"),
)
register(AMC23, f"{__name__}:AMC23")
