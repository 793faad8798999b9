"""GSM8K test (1319 problems): the number after "####", compared by value with the math verifier."""

from evaluation.benchmarks.judging import EQUIVALENCE
from evaluation.benchmarks.spec import BenchmarkSpec, register
from evaluation.datasets.hub import HubSource, convert_gsm8k
from evaluation.datasets.math_benchmarks import load_gsm8k

GSM8K = BenchmarkSpec(
    name="gsm8k",
    read=load_gsm8k,
    hub=HubSource("openai/gsm8k", "test", ("gsm8k/test.jsonl",), convert_gsm8k, config="main"),
    judge=EQUIVALENCE,
)
register(GSM8K, f"{__name__}:GSM8K")
