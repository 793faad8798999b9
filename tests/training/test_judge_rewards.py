"""RL rewards graded by the chain-of-thought judge (report 2.3.5): modes, error counting, and the loop."""

from __future__ import annotations

import pytest

from common.knobs import ConfigError, parse_config
from grading.cot_judge import CotJudge
from training.config import RLConfig
from training.loop import run
from training.rewards import CorrectnessRewards
from training.tasks.arithmetic import generate
from training.types import PromptRecord, TrainingHooks

SEVEN = PromptRecord(prompt_id="p", problem="What is 3 + 4?", answer="7")


def scripted_judge(outputs: list[str]) -> tuple[CotJudge, list[list[str]]]:
    """A judge whose model answers with the given outputs in turn; the prompts it saw are recorded."""
    seen: list[list[str]] = []
    remaining = iter(outputs)

    def generate(prompts: list[str]) -> list[str]:
        seen.append(prompts)
        return [next(remaining) for _ in prompts]
    return CotJudge(generate), seen


def test_judge_mode_rewards_only_a_parsed_correct_verdict():
    judge, seen = scripted_judge(['3+4 is 7.\n{"verdict": "correct"}', 'No.\n{"verdict": "incorrect"}',
                                  "I think it is right", '{"verdict": "correct"} and more text'])
    with CorrectnessRewards(grader_mode="judge", judge=judge) as rewards:
        scores = rewards([SEVEN] * 4, ["Answer: 7", "Answer: 7", "Answer: 7", "Answer: 7"])
        assert scores == [1.0, 0.0, 0.0, 0.0]  # malformed verdicts are errors, never a pass
        assert rewards.take_judge_counts() == {"judged_samples": 4.0, "judge_errors": 2.0}
        assert rewards.take_judge_counts() == {"judged_samples": 0.0, "judge_errors": 0.0}
    assert len(seen) == 1 and "What is 3 + 4?" in seen[0][0] and "Answer: 7" in seen[0][0]


def test_rule_then_judge_asks_the_judge_only_what_the_verifier_cannot_decide():
    judge, seen = scripted_judge(['Seven, written out, is 7.\n{"verdict": "correct"}'])
    with CorrectnessRewards(grader_mode="rule_then_judge", judge=judge) as rewards:
        scores = rewards([SEVEN] * 3, ["\\boxed{7}", "\\boxed{8}", "It is seven, I am sure of it."])
        assert scores == [1.0, 0.0, 1.0]
        assert rewards.take_judge_counts() == {"judged_samples": 1.0, "judge_errors": 0.0}
    assert len(seen) == 1 and len(seen[0]) == 1 and "It is seven" in seen[0][0]


def test_a_judge_mode_without_a_judge_is_refused_and_close_releases_the_judge_model():
    with pytest.raises(ValueError, match="grader_mode judge needs a judge"):
        CorrectnessRewards(grader_mode="judge")
    released = []
    judge, _ = scripted_judge([])
    rewards = CorrectnessRewards(grader_mode="judge", judge=judge, on_close=lambda: released.append(True))
    rewards.close()
    rewards.close()
    assert released == [True]


def test_the_config_names_the_judge_model_when_a_mode_needs_one():
    with pytest.raises(ConfigError, match="judge_model.*required with grader_mode rule_then_judge"):
        parse_config(RLConfig, {"grader_mode": "rule_then_judge"})
    with pytest.raises(ConfigError, match="judge_model.*only when grader_mode asks the judge"):
        parse_config(RLConfig, {"judge_model": "tiny"})
    with pytest.raises(ConfigError, match="grader_mode"):
        parse_config(RLConfig, {"grader_mode": "vote", "judge_model": "tiny"})


def test_a_run_graded_by_an_untrained_judge_counts_every_verdict_as_an_error(run_paths):
    """The tiny untrained model cannot write a verdict: every sample is a judge error and earns nothing."""
    records = [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer) for p in generate(4, seed=3)]
    reports = []
    config = parse_config(RLConfig, {"iterations": 1, "batch_size": 2, "samples_per_problem": 2,
                                     "max_response_tokens": 8, "grader_mode": "judge", "judge_model": "tiny",
                                     "judge_max_tokens": 16})
    run(config, records, run_paths, TrainingHooks(on_iteration=reports.append))
    (report,) = reports
    assert report.extra["judged_samples"] == 4.0 and report.extra["judge_errors"] == 4.0
    assert report.train_accuracy == 0.0


@pytest.mark.slow
def test_with_vllm_rollouts_the_judge_runs_on_its_own_vllm_engine(run_paths):
    """A second in-process vLLM engine beside the rollout engine; the tiny judge's garbage is all errors."""
    records = [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer) for p in generate(4, seed=3)]
    reports = []
    config = parse_config(RLConfig, {"iterations": 1, "batch_size": 2, "samples_per_problem": 2,
                                     "max_response_tokens": 8, "rollout_engine": "vllm", "grader_mode": "judge",
                                     "judge_model": "tiny", "judge_max_tokens": 16})
    run(config, records, run_paths, TrainingHooks(on_iteration=reports.append))
    (report,) = reports
    assert (report.extra["judged_samples"], report.extra["judge_errors"]) == (4.0, 4.0)
    assert report.train_accuracy == 0.0
