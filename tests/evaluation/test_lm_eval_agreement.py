"""Our runner and lm-eval, on the same model and the same greedy generations, give the same scores."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.context import EvalContext
from evaluation.builtin_runner import run_builtin_benchmark
from evaluation.suite_config import BenchmarkSettings

DATA_DIR = Path(__file__).parents[2].parent / "shared" / "datasets"
pytestmark = pytest.mark.skipif(not DATA_DIR.is_dir(), reason=f"{DATA_DIR} is absent")


@pytest.mark.parametrize("benchmark", ["aime24", "math500"])
def test_lm_eval_and_our_runner_agree_sample_by_sample(benchmark, warm_model_dir):
    from evaluation.lm_eval_tasks.runner import run_lm_eval_task

    settings = BenchmarkSettings(benchmark=benchmark, limit=6, max_tokens=24)
    with EvalContext(str(warm_model_dir), DATA_DIR, log=lambda line: None) as context:
        ours = run_builtin_benchmark(settings, context)
        generator = context.generator
        theirs = run_lm_eval_task(BenchmarkSettings(benchmark=f"lm-eval:mirrorlab_{benchmark}", limit=6,
                                                    max_tokens=24),
                                  generator.model, generator.tokenizer, data_dir=DATA_DIR, seed=0,
                                  verifier=context.verifier)
    by_problem = {sample.problem_id: sample for sample in theirs.samples}
    assert sorted(by_problem) == sorted(sample.problem_id for sample in ours.samples)
    for sample in ours.samples:
        other = by_problem[sample.problem_id]
        assert other.response.strip() == sample.response.strip()
        assert (other.correct, other.extracted_answer) == (sample.correct, sample.extracted_answer)
        assert abs(other.response_tokens - sample.response_tokens) <= 1  # ours counts the end-of-sequence token
    assert theirs.score.score == pytest.approx(ours.score.score)
    assert theirs.score.metrics["pass@1"] == pytest.approx(ours.score.metrics["pass@1"])
