"""Grading settings of a benchmark through our runner: the extraction policy, and the CoT judge's grader modes
with a scripted judge and with the tiny model as judge (whose garbage must count as judge errors)."""

from __future__ import annotations

import pytest

from common.knobs import ConfigError
from evaluation.benchmarks import ANSWER_JUDGES, SYNTHETIC_SEED
from evaluation.builtin_runner import ANSWER_RULES, run_builtin_benchmark
from evaluation.suite_config import BenchmarkSettings, parse_suite
from grading.cot_judge import CotJudge
from tests.evaluation.test_runner import scripted_context
from tests.grading.test_cot_judge import CORRECT, INCORRECT, ScriptedGenerate


def answers(count: int) -> list[str]:
    from training.tasks.arithmetic import generate

    return [problem.answer for problem in generate(count, seed=SYNTHETIC_SEED, split="held_out")]


def settings(**knobs) -> BenchmarkSettings:
    return BenchmarkSettings(**{"benchmark": "synthetic-arithmetic", "max_tokens": 50, "limit": 4, **knobs})


def test_the_answer_judges_are_the_ones_that_take_grading_settings():
    assert set(ANSWER_RULES) == set(ANSWER_JUDGES) == {"equivalence", "integer"}


@pytest.mark.parametrize("entry, field, reason", [
    ({"benchmark": "math500", "extraction_policy": "strict"}, "extraction_policy", "choose one of flexible, boxed"),
    ({"benchmark": "humaneval", "extraction_policy": "boxed"}, "extraction_policy", "not judged on an extracted"),
    ({"benchmark": "lm-eval:gsm8k", "grader_mode": "judge", "judge_model": "tiny"}, "grader_mode",
     "not judged on an extracted"),
    ({"benchmark": "math500", "grader_mode": "vote"}, "grader_mode", "choose one of rule, judge, rule_then_judge"),
    ({"benchmark": "math500", "grader_mode": "rule_then_judge"}, "judge_model", "asks a judge model"),
    ({"benchmark": "math500", "judge_model": "tiny"}, "judge_model", "only by grader modes that ask the judge"),
    ({"benchmark": "math500", "grader_mode": "judge", "judge_model": "tiny", "judge_max_tokens": 0},
     "judge_max_tokens", "at least 1"),
    ({"benchmark": "lm-eval:../../x"}, "benchmark", "a task name: letters, digits"),
    ({"benchmark": "lm-eval:gsm 8k"}, "benchmark", "unknown benchmark 'lm-eval:gsm 8k'"),
])
def test_grading_settings_are_refused_naming_the_field(entry, field, reason):
    with pytest.raises(ConfigError) as refused:
        parse_suite([entry])
    assert reason in refused.value.errors[f"benchmarks[0].{field}"]


def test_the_boxed_policy_ignores_answer_lines_and_is_recorded_on_samples_and_result():
    truth = answers(2)
    script = [[(f"Answer: {truth[0]}", 5)], [(f"so \\boxed{{{truth[1]}}}", 6)]]
    flexible = run_builtin_benchmark(settings(limit=2), scripted_context(script))
    boxed = run_builtin_benchmark(settings(limit=2, extraction_policy="boxed"), scripted_context(script))
    assert [sample.correct for sample in flexible.samples] == [True, True]
    assert [sample.correct for sample in boxed.samples] == [False, True]
    assert [sample.extraction_policy for sample in boxed.samples] == ["boxed", "boxed"]
    assert boxed.samples[0].extracted_answer == "" and boxed.samples[1].extracted_answer == truth[1]
    assert (boxed.metrics()["extraction_policy"], boxed.metrics()["grader_mode"]) == ("boxed", "rule")
    assert "judge_errors" not in boxed.metrics()


def scripted_judge_context(script, judge_outputs):
    context = scripted_context(script)
    generate = ScriptedGenerate(judge_outputs)
    asked = []

    def cot_judge(judge_model, max_tokens):
        asked.append((judge_model, max_tokens))
        return CotJudge(generate, batch_size=context.batch_problems)

    context.cot_judge = cot_judge
    return context, generate, asked


def test_rule_then_judge_sends_only_undecided_samples_to_the_judge_and_counts_its_errors():
    truth = answers(4)
    script = [[(f"Answer: {truth[0]}", 5)], [("Answer: 99999", 5)], [(f"it must be {truth[2]}", 5)],
              [("no idea at all", 5)]]
    context, generate, asked = scripted_judge_context(script, [f"It says {truth[2]}.\n{CORRECT}", "garbage {"])
    outcome = run_builtin_benchmark(settings(grader_mode="rule_then_judge", judge_model="judge-7b",
                                             judge_max_tokens=64), context)
    samples = outcome.samples
    assert [sample.correct for sample in samples] == [True, False, True, False]
    assert [sample.graded_by for sample in samples] == ["rule", "rule", "judge", "judge"]
    assert [sample.judge_verdict for sample in samples] == ["", "", "correct", "error"]
    assert samples[2].judge_reasoning == f"It says {truth[2]}." and samples[3].judge_reasoning == "garbage {"
    assert "no JSON verdict" in samples[3].detail
    assert len(generate.batches) == 1 and len(generate.batches[0]) == 2
    assert asked == [("judge-7b", 64)]
    metrics = outcome.metrics()
    assert {key: metrics[key] for key in ("grader_mode", "judge_model", "judged_samples", "judge_errors")} == {
        "grader_mode": "rule_then_judge", "judge_model": "judge-7b", "judged_samples": 2, "judge_errors": 1}
    assert outcome.score.score == pytest.approx(0.5)


def test_judge_mode_grades_every_sample_by_the_judge_alone():
    truth = answers(2)
    script = [[(f"Answer: {truth[0]}", 5)], [(f"\\boxed{{{truth[1]}}}", 5)]]
    context, generate, _ = scripted_judge_context(script, [INCORRECT, CORRECT])
    outcome = run_builtin_benchmark(settings(limit=2, grader_mode="judge", judge_model="judge-7b"), context)
    assert [(sample.correct, sample.graded_by, sample.extraction_policy) for sample in outcome.samples] == [
        (False, "judge", ""), (True, "judge", "")]
    assert outcome.metrics()["judge_errors"] == 0 and outcome.metrics()["judged_samples"] == 2
    # the judge extracts no answer, so there is nothing to vote on: no maj@n (it read 0 whatever the verdicts)
    assert not any(name.startswith("maj@") for name in outcome.score.metrics)


def test_the_tiny_model_as_judge_runs_through_the_rollout_engine_and_its_garbage_never_passes(tiny_model_dir):
    truth = answers(3)
    script = [[(f"Answer: {truth[0]}", 5), (f"\\boxed{{{truth[0]}}}", 5)], [(f"I think {truth[1]}", 5)] * 2,
              [("nothing", 5)] * 2]
    context = scripted_context(script, batch_problems=2)
    with context:
        outcome = run_builtin_benchmark(
            settings(limit=3, samples_per_problem=2, temperature=1.0, grader_mode="judge",
                     judge_model=str(tiny_model_dir), judge_max_tokens=12), context)
        judge_generator = context.judge_generator(str(tiny_model_dir))
        assert context.judge_generator(str(tiny_model_dir)) is judge_generator  # loaded once
    assert [sample.judge_verdict for sample in outcome.samples] == ["error"] * 6
    assert not any(sample.correct for sample in outcome.samples)
    assert all(sample.judge_reasoning and sample.detail for sample in outcome.samples)  # the output and why
    assert (outcome.metrics()["judged_samples"], outcome.metrics()["judge_errors"]) == (6, 6)
    assert outcome.score.score == 0.0
    assert context._judge_generator is None  # released with the context
