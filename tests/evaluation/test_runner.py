"""Our benchmark runner: scores from scripted responses against hand computation, and the tiny model end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.context import EvalContext, EvaluationStopped
from evaluation.datasets import ImagesMissing
from training.generation import GeneratedResponse
from evaluation.builtin_runner import run_builtin_benchmark
from evaluation.suite_config import BenchmarkSettings

DATA_DIR = Path(__file__).parents[2].parent / "shared" / "datasets"
needs_data = pytest.mark.skipif(not DATA_DIR.is_dir(), reason=f"{DATA_DIR} is absent")


class ScriptedGenerator:
    """Answers the problems in order with pre-written (text, tokens) responses, n per problem."""

    tokenizer = type("PlainTokenizer", (), {"chat_template": None, "__call__": lambda self, text, **options: type(
        "Encoded", (), {"input_ids": text.split()})()})()  # a token per word

    def __init__(self, script: list[list[tuple[str, int]]]):
        self.script = list(script)
        self.calls = []

    def generate(self, prompts, n, max_tokens, temperature, top_p, seed, stream_keys=None):
        self.calls.append((len(prompts), n, seed))
        self.stream_keys = [*getattr(self, "stream_keys", []), *stream_keys]
        answers = [self.script.pop(0) for _ in prompts]
        assert all(len(samples) == n for samples in answers)
        return [[GeneratedResponse(text, tokens, tokens >= max_tokens) for text, tokens in samples]
                for samples in answers]

    def close(self):
        pass


def scripted_context(script, **options) -> EvalContext:
    context = EvalContext("scripted", DATA_DIR, log=lambda line: None, **options)
    context.generator = ScriptedGenerator(script)
    return context


def test_scores_of_scripted_responses_match_a_hand_computation():
    from training.tasks.arithmetic import generate

    from evaluation.benchmarks import SYNTHETIC_SEED

    answers = [problem.answer for problem in generate(3, seed=SYNTHETIC_SEED, split="held_out")]
    wrong = "Answer: 9999"
    script = [
        [(f"Answer: {answers[0]}", 10)] * 4,  # 4 of 4 correct
        [(f"\\boxed{{{answers[1]}}}", 20)] * 3 + [(wrong, 40)],  # 3 of 4
        [(wrong, 50)] * 4,  # 0 of 4
    ]
    context = scripted_context(script, batch_problems=2)
    outcome = run_builtin_benchmark(
        BenchmarkSettings(benchmark="synthetic-arithmetic", samples_per_problem=4, max_tokens=50, limit=3), context)
    assert outcome.score.score == pytest.approx((1 + 0.75 + 0) / 3)
    assert outcome.score.metrics["pass@1"] == pytest.approx((1 + 0.75 + 0) / 3)
    assert outcome.score.metrics["pass@4"] == pytest.approx(2 / 3)
    assert outcome.score.metrics["maj@4"] == pytest.approx(2 / 3)
    assert outcome.score.mean_response_tokens == pytest.approx((4 * 10 + 3 * 20 + 40 + 4 * 50) / 12)
    assert len(outcome.samples) == 12
    assert [sample.truncated for sample in outcome.samples[-4:]] == [True] * 4
    assert outcome.samples[4].extracted_answer == answers[1]
    assert [sample.reference_answer for sample in outcome.samples[::4]] == answers  # stored beside the extracted one
    assert context.generator.calls == [(2, 4, 0), (1, 4, 0)]  # batches of 2 problems, one evaluation seed
    keys = context.generator.stream_keys  # each problem's streams come from the benchmark and its id
    assert len(set(keys)) == 3 and len({key[0] for key in keys}) == 1


def test_a_response_cut_off_at_max_tokens_is_wrong_whatever_it_boxed_unless_the_suite_grades_its_text():
    """A response that boxed the answer, began a re-check and hit max_tokens never gave a final answer: wrong
    by default (said in detail, counted in the metrics, no maj@n vote); truncated_counts_wrong false grades it."""
    from training.tasks.arithmetic import generate

    from evaluation.benchmarks import SYNTHETIC_SEED

    answer = generate(1, seed=SYNTHETIC_SEED, split="held_out")[0].answer
    cut_off = (f"So the answer is \\boxed{{{answer}}}. Wait, let me check this again: 3 +", 20)
    script = [[cut_off, cut_off, ("Answer: 1234", 9), (f"Answer: {answer}", 8)]]
    settings = BenchmarkSettings(benchmark="synthetic-arithmetic", samples_per_problem=4, max_tokens=20, limit=1,
                                 temperature=1.0)
    strict = run_builtin_benchmark(settings, scripted_context([list(samples) for samples in script]))
    assert [sample.correct for sample in strict.samples] == [False, False, False, True]
    assert strict.samples[0].extracted_answer == answer  # the row still shows what it had boxed
    assert strict.samples[0].detail.startswith("cut off at max_tokens")
    assert strict.score.score == pytest.approx(1 / 4)
    assert strict.metadata["truncated_samples"] == 2 and strict.metadata["truncated_counts_wrong"] is True
    assert strict.score.metrics["maj@4"] == 0.0  # the finished two tie, and the wrong one came first
    lenient = run_builtin_benchmark(BenchmarkSettings(**{**settings.__dict__, "truncated_counts_wrong": False}),
                                    scripted_context([list(samples) for samples in script]))
    assert [sample.correct for sample in lenient.samples] == [True, True, False, True]
    assert lenient.score.score == pytest.approx(3 / 4) and lenient.score.metrics["maj@4"] == 1.0
    assert lenient.metadata["truncated_samples"] == 2 and lenient.metadata["truncated_counts_wrong"] is False


@needs_data
def test_aime_from_the_local_files_is_judged_on_integers():
    from evaluation.datasets import load_aime24

    problems = load_aime24(DATA_DIR, limit=2)
    script = [[(f"\\boxed{{{int(problems[0].answer):03d}}}", 5), ("\\boxed{1000}", 5)],
              [(f"Answer: {problems[1].answer}", 7), (f"Answer: {problems[1].answer}.5", 7)]]
    outcome = run_builtin_benchmark(BenchmarkSettings(benchmark="aime24", samples_per_problem=2, limit=2),
                                    scripted_context(script))
    assert [sample.correct for sample in outcome.samples] == [True, False, True, False]
    assert outcome.score.score == pytest.approx(0.5)
    assert outcome.score.metrics["maj@2"] == 1.0  # 1-1 ties: the first sample, right both times
    assert outcome.metadata == {"runner": "mirrorlab", "rollout_engine": "torch", "extraction_policy": "flexible",
                                "grader_mode": "rule", "sampling": {"samples_per_problem": 2, "max_tokens": 1024,
                                                                    "temperature": 0.0, "top_p": 1.0, "seed": 0,
                                                                    "limit": 2},
                                "truncated_samples": 0, "truncated_counts_wrong": True}
    assert {sample.extraction_policy for sample in outcome.samples} == {"flexible"}


@needs_data
def test_mathvista_without_images_is_refused_before_any_generation():
    context = scripted_context([])
    with pytest.raises(ImagesMissing, match="images are missing"):
        run_builtin_benchmark(BenchmarkSettings(benchmark="mathvista", limit=5), context)
    assert context.generator.calls == []


def test_a_stop_request_ends_the_benchmark_between_batches():
    context = scripted_context([[("Answer: 1", 3)]] * 4, batch_problems=2, should_stop=lambda: True)
    with pytest.raises(EvaluationStopped):
        run_builtin_benchmark(BenchmarkSettings(benchmark="synthetic-arithmetic", limit=4), context)


def test_the_tiny_model_scores_the_same_as_the_training_held_out_check(warm_model_dir):
    """Two independent paths (the evaluation runner and training.heldout) agree on greedy accuracy and length."""
    from training.heldout import held_out_accuracy
    from training.rollout.base import SamplingSettings
    from training.types import PromptRecord

    from evaluation.benchmarks import load_synthetic_arithmetic

    with EvalContext(str(warm_model_dir), DATA_DIR, log=lambda line: None, batch_problems=8) as context:
        outcome = run_builtin_benchmark(
            BenchmarkSettings(benchmark="synthetic-arithmetic", limit=24, max_tokens=48), context)
        records = [PromptRecord(prompt_id=problem.problem_id, problem=problem.prompt, answer=problem.answer)
                   for problem in load_synthetic_arithmetic(DATA_DIR, 24)]
        held_out = held_out_accuracy(context.generator.engine, context.generator.tokenizer, records, 1,
                                     SamplingSettings(max_new_tokens=48, temperature=0.0))
    assert len(outcome.samples) == 24
    assert outcome.score.score == pytest.approx(held_out.accuracy)
    assert outcome.score.mean_response_tokens == pytest.approx(held_out.mean_response_tokens)
    answers = {record.prompt_id: record.answer for record in records}
    assert sum(bool(sample.extracted_answer) for sample in outcome.samples) > 12  # the warm-up taught the format
    for sample in outcome.samples:
        assert sample.correct == (sample.extracted_answer == answers[sample.problem_id] and not sample.truncated)
        assert sample.truncated == (sample.response_tokens == 48)


@needs_data
def test_humaneval_programs_are_judged_in_the_sandbox():
    from evaluation.datasets import load_humaneval

    problems = load_humaneval(DATA_DIR, limit=2)
    canonical = [problem.metadata["canonical_solution"] for problem in problems]
    script = [[(canonical[0], 40), ("    return None\n", 5)],
              [(f"```python\n{problems[1].prompt}{canonical[1]}```", 60), ("    while True: pass\n", 8)]]
    with scripted_context(script) as context:
        outcome = run_builtin_benchmark(BenchmarkSettings(benchmark="humaneval", samples_per_problem=2, limit=2),
                                        context)
    assert [sample.correct for sample in outcome.samples] == [True, False, True, False]
    assert outcome.samples[3].detail.startswith("time_limit")
    assert outcome.samples[1].detail.startswith("wrong_answer") or outcome.samples[1].detail.startswith(
        "runtime_error")
    assert outcome.metadata["test_set"] == "full"
    assert outcome.score.score == pytest.approx(0.5)
    assert "maj@2" not in outcome.score.metrics  # a program is no answer to vote on


def test_samples_vote_where_the_rule_or_the_benchmarks_own_judge_extracts_a_final_answer():
    from evaluation.benchmarks import BUILTIN_BENCHMARKS
    from evaluation.builtin_runner import votes_on_answers

    votes = {name: votes_on_answers(BUILTIN_BENCHMARKS[name], BenchmarkSettings(benchmark=name))
             for name in ("math500", "aime24", "mathvista", "humaneval", "livecodebench")}
    assert votes == {"math500": True, "aime24": True, "mathvista": True, "humaneval": False,
                     "livecodebench": False}
    judged = BenchmarkSettings(benchmark="math500", grader_mode="judge", judge_model="tiny")
    assert not votes_on_answers(BUILTIN_BENCHMARKS["math500"], judged)  # the judge model extracts no answer


def test_the_result_counts_the_checks_the_verifier_did_not_finish():
    """A timed-out check grades the sample wrong; the result says how many there were (none: no entry)."""
    from evaluation.benchmarks import BUILTIN_BENCHMARKS
    from evaluation.builtin_runner import grading_metadata
    from evaluation.outcome import SampleOutcome
    from grading.cot_judge import VERIFIER_TIMED_OUT

    spec, settings = BUILTIN_BENCHMARKS["math500"], BenchmarkSettings(benchmark="math500")
    samples = [SampleOutcome("p", index, "r", 5, False, False, detail=detail)
               for index, detail in enumerate((VERIFIER_TIMED_OUT, "", VERIFIER_TIMED_OUT))]
    assert grading_metadata(spec, settings, samples)["verifier_timeouts"] == 2
    assert "verifier_timeouts" not in grading_metadata(spec, settings, samples[1:2])


@needs_data
def test_humaneval_helpers_come_from_the_prompt_not_the_solution():
    """HumanEval/38's check encodes with encode_cyclic: a solution redefining it as the identity (and decoding
    with the identity) passed when the check took helpers from the solution. /33's check calls the entry point
    by name, which must still be the solution's."""
    from evaluation.datasets import load_humaneval
    from grading.sandbox import CodeJudge

    problems = {problem.problem_id: problem for problem in load_humaneval(DATA_DIR, limit=40)}
    cyclic, third = problems["HumanEval/38"], problems["HumanEval/33"]
    cheat = cyclic.prompt.replace("def decode_cyclic", "def encode_cyclic(s):\n    return s\n\n\ndef decode_cyclic")
    with CodeJudge() as judge:
        assert judge.judge(cheat + "    return s\n", cyclic.test_cases).verdict == "wrong_answer"
        for problem in (cyclic, third):
            canonical = problem.prompt + problem.metadata["canonical_solution"]
            assert judge.judge(canonical, problem.test_cases).verdict == "accepted", problem.problem_id


def test_a_model_without_a_chat_template_is_cut_where_it_starts_a_next_problem():
    """A base model answers, then writes a problem of its own until max_tokens: its response ends at the
    "Problem:" it began (finished, its words counted), so neither the cut-off rule nor the made-up problem's
    answer decides it."""
    from training.tasks.arithmetic import generate

    from evaluation.benchmarks import SYNTHETIC_SEED

    answer = generate(1, seed=SYNTHETIC_SEED, split="held_out")[0].answer
    rambling = (f"Answer: {answer}\nProblem: 2+2\nSolution: Answer: 4\nProblem: 3+", 30)
    outcome = run_builtin_benchmark(BenchmarkSettings(benchmark="synthetic-arithmetic", max_tokens=30, limit=1),
                                    scripted_context([[rambling]]))
    (sample,) = outcome.samples
    assert (sample.response, sample.response_tokens, sample.truncated) == (f"Answer: {answer}", 2, False)
    assert sample.correct and sample.extracted_answer == answer


def test_a_humaneval_completion_ends_where_the_function_does():
    from evaluation.builtin_runner import cut_at_stop

    tokenizer = ScriptedGenerator.tokenizer
    completion = GeneratedResponse("    return a + b\n\ndef check():\n    pass\n", 40, True)
    cut = cut_at_stop(completion, ("\nclass", "\ndef", "\n#", "\nif", "\nprint"), tokenizer)
    assert (cut.text, cut.tokens, cut.truncated) == ("    return a + b\n", 4, False)
    assert cut_at_stop(GeneratedResponse("    return 1", 3, False), ("\ndef",), tokenizer).text == "    return 1"
    fenced = GeneratedResponse("```python\nimport math\n\ndef f():\n    return 1\n```\ndef g", 30, True)
    assert cut_at_stop(fenced, ("\ndef",), tokenizer) == fenced  # the fence's code is not the model moving on


def test_an_evaluation_sample_is_the_same_whatever_batch_it_falls_in_and_differs_across_problems(tiny_model_dir):
    """Streams keyed by problem: the batch around a problem (batch_problems, its neighbours) changes none of its
    samples; another problem key with the same prompt text samples differently (untrained model, T = 1)."""
    from training.generation import ModelGenerator
    from training.prompting import prompt_ids

    generator = ModelGenerator(str(tiny_model_dir))
    try:
        first, second = (prompt_ids(text, generator.tokenizer) for text in ("3+4-2", "5+1"))

        def texts(prompts, keys):
            outputs = generator.generate(prompts, n=3, max_tokens=16, temperature=1.0, top_p=1.0, seed=7,
                                         stream_keys=keys)
            return [[response.text for response in samples] for samples in outputs]

        alone = texts([first], [(1, 2)])[0]
        assert texts([second, first], [(1, 3), (1, 2)])[1] == alone
        assert len(set(alone)) == 3
        assert set(texts([first], [(1, 4)])[0]).isdisjoint(alone)
    finally:
        generator.close()
