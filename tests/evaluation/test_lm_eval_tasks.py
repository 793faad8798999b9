"""lm-evaluation-harness integration: our task YAMLs, our scoring inside lm-eval, and the "lm-eval:<task>" runner."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest

from evaluation.datasets import DatasetMissing
from evaluation.judges.math import integer_value
from evaluation.lm_eval_tasks import LmEvalTaskError, hub_offline, run_lm_eval_task, time_run, write_task_files
from evaluation.lm_eval_tasks.__main__ import main as lm_eval_tasks_cli
from evaluation.lm_eval_tasks.tasks import TASKS, GenerationSettings
from evaluation.lm_eval_tasks.utils import process_integer_results, process_math_results, use_verifier
from evaluation.scoring import score_benchmark
from evaluation.suite_config import BenchmarkSettings
from grading.verifier import MathVerifier, extract_answer, is_equivalent

os.environ.setdefault("OMP_NUM_THREADS", "1")

DATA_DIR = Path(__file__).parents[2].parent / "shared" / "datasets"
needs_data = pytest.mark.skipif(not DATA_DIR.is_dir(), reason=f"shared datasets folder {DATA_DIR} is absent")
ARITHMETIC = ["Compute 9-4.", "Compute 1+2.", "Compute 8-0+3.", "Compute 2+0+3+3."]


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    from training.models.loading import load_model, load_tokenizer

    return load_model(str(tiny_model_dir)), load_tokenizer(str(tiny_model_dir))


@pytest.fixture(scope="module")
def warm(warm_model_dir):
    """The tiny model after a short warm-up: it writes 'Answer: N', so answers are extracted."""
    from training.models.loading import load_model, load_tokenizer

    return load_model(str(warm_model_dir)), load_tokenizer(str(warm_model_dir))


def write_data_dir(root: Path, math_answers: list[str], aime_answers: list[int]) -> Path:
    """Arithmetic problems in the math500 and aime24 layouts of shared/datasets, with the given answers."""
    (root / "aime24").mkdir(parents=True, exist_ok=True)
    (root / "math500").mkdir(parents=True, exist_ok=True)
    with open(root / "aime24" / "test.jsonl", "w") as aime, open(root / "math500" / "test.jsonl", "w") as math:
        for index, (problem, math_answer, aime_answer) in enumerate(zip(ARITHMETIC, math_answers, aime_answers)):
            aime.write(json.dumps({"id": index, "problem": problem, "answer": f"{aime_answer:03d}"}) + "\n")
            math.write(json.dumps({"problem": problem, "answer": math_answer, "unique_id": f"arithmetic/{index}",
                                   "subject": "Arithmetic", "level": 1}) + "\n")
    return root


def settings(task: str, **knobs) -> BenchmarkSettings:
    return BenchmarkSettings(**{"benchmark": f"lm-eval:{task}", "max_tokens": 16, "limit": 3, **knobs})


# ----------------------------------------------------------------------------- the task YAMLs under lm-eval


@needs_data
def test_the_written_tasks_load_and_run_offline_under_simple_evaluate(tmp_path, tiny):
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    written = write_task_files(tmp_path / "tasks", DATA_DIR, generation=GenerationSettings(2, 16, 1.0, 0.95),
                               cache_dir=tmp_path / "hf-cache")
    assert sorted(path.stem for path in written) == sorted(TASKS)
    text = (tmp_path / "tasks" / "mirrorlab_aime24.yaml").read_text()
    assert str(DATA_DIR.resolve() / "aime24" / "test.jsonl") in text and "!function" in text
    model, tokenizer = tiny
    with hub_offline():
        manager = TaskManager(include_path=str(tmp_path / "tasks"), include_defaults=False)
        assert set(TASKS) | {"mirrorlab"} <= set(manager.all_tasks)
        results = simple_evaluate(model=HFLM(pretrained=model, tokenizer=tokenizer, batch_size=8),
                                  tasks=["mirrorlab_aime24", "mirrorlab_math500"], task_manager=manager, limit=3,
                                  log_samples=True, bootstrap_iters=0)
    aime = results["samples"]["mirrorlab_aime24"]
    assert [sample["doc"]["problem_id"] for sample in aime] == ["60", "61", "62"]
    assert all(len(sample["resps"][0]) == 2 for sample in aime)  # repeats: 2 samples per problem
    assert aime[0]["doc"]["answer"] == str(int(json.loads(
        (DATA_DIR / "aime24" / "test.jsonl").read_text().splitlines()[0])["answer"]))  # "025" -> "25"
    assert results["samples"]["mirrorlab_math500"][0]["doc"]["problem_id"] == "test/precalculus/807.json"
    assert set(results["results"]["mirrorlab_math500"]) >= {"pass@1,all_samples", "pass@2,all_samples"}


def test_the_write_command_writes_every_present_task_with_the_sampling_settings(tmp_path):
    data_dir = write_data_dir(tmp_path / "data", ["5", "3", "11", "8"], [5, 3, 11, 8])
    assert lm_eval_tasks_cli(["write", "--data-dir", str(data_dir), "--out", str(tmp_path / "out"),
                              "--samples", "4", "--max-tokens", "64", "--temperature", "0.6"]) == 0
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == [
        "mirrorlab_aime24.yaml", "mirrorlab_math500.yaml"]  # the others' files are absent
    import yaml

    config = yaml.safe_load((tmp_path / "out" / "mirrorlab_math500.yaml").read_text().replace("!function", ""))
    assert config["repeats"] == 4
    assert config["generation_kwargs"]["max_gen_toks"] == 64 and config["generation_kwargs"]["do_sample"] is True
    assert [metric["metric"] for metric in config["metric_list"]] == ["pass@1", "pass@2", "pass@4"]
    assert config["dataset_kwargs"]["data_files"]["test"] == str((data_dir / "math500" / "test.jsonl").resolve())


def test_on_the_plain_template_lm_eval_stops_where_the_built_in_runner_cuts(tmp_path):
    """A base model runs on into an invented "Problem:"; the built-in runner cuts there (plain_stops), so the
    lm-eval task must stop there too, or the invented problem's box is graded. A chat prompt needs no such stop."""
    from evaluation.benchmarks import BUILTIN_BENCHMARKS
    from evaluation.lm_eval_tasks.tasks import STOP_SEQUENCES, task_config

    data_dir = write_data_dir(tmp_path / "data", ["5"], [5])
    plain = task_config("mirrorlab_aime24", data_dir)["generation_kwargs"]["until"]
    chat = task_config("mirrorlab_aime24", data_dir, chat=True)["generation_kwargs"]["until"]
    assert set(BUILTIN_BENCHMARKS["aime24"].plain_stops) <= set(plain) and "\nProblem:" in plain
    assert chat == list(STOP_SEQUENCES)


# ----------------------------------------------------------------------------- our process_results


def test_math_results_take_the_boxed_answer_and_compare_by_value():
    responses = ["so \\boxed{0.5}", "Answer: \\frac{1}{2}", "\\boxed{\\frac{1}{3}}", "I give up"]
    metrics = process_math_results({"answer": "\\frac{1}{2}"}, [responses])
    assert metrics == {"pass@1": 0.5, "pass@2": pytest.approx(5 / 6), "pass@4": 1.0}
    assert process_math_results({"answer": "0.5"}, [["\\boxed{\\frac12}"]]) == {"pass@1": 1.0}


def test_the_time_limited_verifier_judges_the_same():
    responses = ["so \\boxed{0.5}", "\\boxed{\\frac{1}{3}}"]
    with MathVerifier(workers=1) as verifier, use_verifier(verifier):
        assert process_math_results({"answer": "\\frac{1}{2}"}, [responses])["pass@1"] == 0.5


def test_aime_answers_compare_as_integers():
    assert process_integer_results({"answer": "33"}, [["\\boxed{033}"]]) == {"pass@1": 1.0}
    assert process_integer_results({"answer": "33"}, [["Answer: 33.5", "\\boxed{34}", "no answer"]])["pass@1"] == 0
    assert process_integer_results({"answer": "5"}, [["\\boxed{5}", "\\boxed{6}"]]) == {"pass@1": 0.5, "pass@2": 1.0}


# ----------------------------------------------------------------------------- run_lm_eval_task


def rescore(outcome, references: list[str], integer: bool) -> list[bool]:
    """Each sample judged again by grading.verifier directly (AIME: as integers)."""
    verdicts = []
    for sample, reference in zip(outcome.samples, references, strict=True):
        extracted = extract_answer(sample.response)
        assert sample.extracted_answer == (extracted or "")
        verdicts.append(integer_value(extracted) == int(reference) if integer else is_equivalent(extracted, reference))
    return verdicts


def test_the_runner_agrees_with_the_verifier_on_the_same_responses(tmp_path, warm):
    model, tokenizer = warm
    model.train()
    offline_before = os.environ.get("HF_HUB_OFFLINE")
    first = run_lm_eval_task(settings("mirrorlab_math500", max_tokens=24), model, tokenizer, seed=0,
                             data_dir=write_data_dir(tmp_path / "first", ["5", "3", "11", "8"], [5, 3, 11, 8]))
    # References equal to problems 0 and 2's greedy answers in another form (1 -> \frac{2}{2}); problem 1 wrong.
    said = [integer_value(sample.extracted_answer) for sample in first.samples]
    chosen = [value if value is not None and 0 <= value <= 999 and index != 1 else 777
              for index, value in enumerate(said)]
    math_answers = [f"\\frac{{{2 * value}}}{{2}}" for value in chosen]
    data_dir = write_data_dir(tmp_path / "data", math_answers + ["8"], chosen + [8])
    for task, references, integer in (("mirrorlab_math500", math_answers, False),
                                      ("mirrorlab_aime24", [str(value) for value in chosen], True)):
        timed = time_run(run_lm_eval_task, settings(task, max_tokens=24), model, tokenizer, data_dir=data_dir, seed=0)
        outcome = timed.outcome
        assert [sample.response for sample in outcome.samples] == [sample.response for sample in first.samples]
        verdicts = rescore(outcome, references, integer)
        assert [sample.correct for sample in outcome.samples] == verdicts == [
            value == reference for value, reference in zip(said, chosen)]
        assert True in verdicts  # the warm model writes integer answers
        for sample in outcome.samples:
            tokens = len(tokenizer(sample.response, add_special_tokens=False)["input_ids"])
            assert sample.response_tokens == min(tokens, 24) and sample.truncated == (sample.response_tokens == 24)
        expected = score_benchmark([[verdict] for verdict in verdicts],
                                   [[sample.response_tokens] for sample in outcome.samples],
                                   [[sample.extracted_answer or None] for sample in outcome.samples])
        assert outcome.score == expected
        assert outcome.metadata["lm_eval_metrics"]["pass@1"] == pytest.approx(expected.score)
        assert outcome.metadata["runner"] == "lm-eval" and timed.seconds > 0
    assert model.training  # the model's mode is restored
    assert os.environ.get("HF_HUB_OFFLINE") == offline_before


def test_several_samples_per_problem_become_several_rows(tmp_path, tiny):
    model, tokenizer = tiny
    data_dir = write_data_dir(tmp_path / "data", ["5", "3", "11", "8"], [5, 3, 11, 8])
    outcome = run_lm_eval_task(settings("mirrorlab_math500", samples_per_problem=3, temperature=1.0, limit=2),
                               model, tokenizer, data_dir=data_dir, seed=0)
    assert [(sample.problem_id, sample.sample_index) for sample in outcome.samples] == [
        (f"arithmetic/{problem}", index) for problem in range(2) for index in range(3)]
    assert outcome.score.samples_per_problem == 3 and set(outcome.score.metrics) == {"pass@1", "maj@3"}


def test_the_registry_runs_lm_eval_benchmarks_in_an_evaluation_context(tmp_path, tiny_model_dir):
    from evaluation.context import EvalContext
    from evaluation.runners import runner_for

    data_dir = write_data_dir(tmp_path / "data", ["5", "3", "11", "8"], [5, 3, 11, 8])
    lines = []
    with EvalContext(str(tiny_model_dir), data_dir, log=lines.append) as context:
        outcome = runner_for("lm-eval:mirrorlab_aime24")(settings("mirrorlab_aime24", limit=2), context)
    assert [sample.problem_id for sample in outcome.samples] == ["0", "1"]
    assert outcome.benchmark == "lm-eval:mirrorlab_aime24" and outcome.metrics()["runner"] == "lm-eval"
    assert any("lm-evaluation-harness" in line for line in lines)


def run_user_task(folder, tiny, name: str, rows: list[dict], body: str, **overrides):
    """Write a user's lm-eval task `name` over `rows` (a JSONL file in folder), its YAML `body` after the data
    lines, and run it on the tiny model (`overrides`: the suite's settings); its BenchmarkOutcome."""
    (folder / f"{name}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (folder / "tasks").mkdir()
    (folder / "tasks" / f"{name}.yaml").write_text(
        f"task: {name}\ndataset_path: json\ndataset_kwargs:\n  data_files:\n"
        f"    test: {folder / f'{name}.jsonl'}\ntest_split: test\n" + body)
    model, tokenizer = tiny
    return run_lm_eval_task(settings(name, **overrides), model, tokenizer, data_dir=folder, seed=0,
                            include_path=[folder / "tasks"], cache_dir=folder / "hf-cache")


def test_a_users_multiple_choice_task_reports_the_chosen_option(tmp_path, tiny):
    rows = [("2+2=", ["4", "5"], 0), ("1+1=", ["3", "2"], 1), ("3+3=", ["6", "1"], 0)]
    records = [{"question": q, "choices": c, "label": label} for q, c, label in rows]
    outcome = run_user_task(tmp_path, tiny, "user_mc", records,
                    "output_type: multiple_choice\n"
                    "doc_to_text: '{{question}}'\ndoc_to_choice: '{{choices}}'\ndoc_to_target: label\n"
                    "metric_list:\n  - metric: acc\n    aggregation: mean\n    higher_is_better: true\n")
    assert [sample.response in choices for sample, (_, choices, _) in zip(outcome.samples, rows)] == [True] * 3
    assert [sample.correct for sample in outcome.samples] == [
        sample.response == choices[label] for sample, (_, choices, label) in zip(outcome.samples, rows)]
    assert outcome.score.score == pytest.approx(sum(sample.correct for sample in outcome.samples) / 3)
    assert outcome.metadata["main_metric"] == "acc,none" and outcome.score.mean_response_tokens == 0
    assert (outcome.metadata["score_scale"], outcome.metadata["higher_is_better"]) == ("fraction", True)


def test_a_perplexity_task_is_stored_on_its_own_scale_with_lower_better(tmp_path, tiny):
    """A corpus metric above 1 (lm-eval's word perplexity) is no fraction to show as a percent, and its lowest
    value is the best: the result says so (tables read it: tests/webapp/test_benchmark_tables.py)."""
    records = [{"text": "two plus two is four"}, {"text": "one and one make two"}]
    outcome = run_user_task(tmp_path, tiny, "user_ppl", records,
                    "output_type: loglikelihood_rolling\ndoc_to_text: ''\ndoc_to_target: '{{text}}'\n"
                    "metric_list:\n  - metric: word_perplexity\n    aggregation: weighted_perplexity\n"
                    "    higher_is_better: false\n")
    assert outcome.score.score > 1 and outcome.score.ci_low is None
    assert (outcome.metadata["score_scale"], outcome.metadata["higher_is_better"]) == ("raw", False)
    assert outcome.metadata["main_metric"] == "word_perplexity,none"
    assert "no interval" in outcome.score.summary()


def test_a_task_that_samples_by_its_own_config_keeps_sampling_under_a_greedy_suite(tmp_path, tiny):
    """A self-consistency task (do_sample, repeats: 4): the suite's default temperature 0 must not make its
    samples four copies of the greedy answer; the suite's token limit still applies."""
    records = [{"question": f"{a}+{a}=", "answer": str(2 * a)} for a in (1, 2)]
    outcome = run_user_task(tmp_path, tiny, "user_sc", records,
                    "output_type: generate_until\nrepeats: 4\n"
                    "doc_to_text: '{{question}}'\ndoc_to_target: answer\n"
                    "generation_kwargs:\n  until: ['<never>']\n  do_sample: true\n  temperature: 1.0\n"
                    "  max_gen_toks: 64\n"
                    "filter_list:\n  - name: all\n    filter:\n      - function: take_first_k\n        k: 4\n"
                    "metric_list:\n  - metric: exact_match\n    aggregation: mean\n    higher_is_better: true\n",
                            max_tokens=12, limit=2)
    assert outcome.metadata["generation_overrides"] == {"max_gen_toks": 12}
    assert all(sample.response_tokens <= 12 for sample in outcome.samples)
    kept = [ast.literal_eval(sample.extracted_answer) for sample in outcome.samples]  # take_first_k: 4 answers
    assert [len(answers) for answers in kept] == [4, 4]
    assert all(len(set(answers)) > 1 for answers in kept)  # sampled at T = 1, not four greedy copies


def test_the_suites_sampling_reaches_every_task_when_it_samples_and_always_mirrorlabs_tasks():
    from evaluation.lm_eval_tasks.runner import _sampling_overrides

    greedy, sampled = GenerationSettings(1, 64, 0.0, 1.0), GenerationSettings(4, 64, 0.6, 0.95)
    assert _sampling_overrides(greedy, ours=False) == {"max_gen_toks": 64}
    assert _sampling_overrides(greedy, ours=True) == {"max_gen_toks": 64, "do_sample": False, "temperature": 0.0}
    assert _sampling_overrides(sampled, ours=False) == {"max_gen_toks": 64, "do_sample": True, "temperature": 0.6,
                                                        "top_p": 0.95}


# ----------------------------------------------------------------------------- clear failures


def test_a_missing_data_file_is_named(tmp_path, tiny):
    model, tokenizer = tiny
    with pytest.raises(DatasetMissing, match="aime24/test.jsonl"):
        run_lm_eval_task(settings("mirrorlab_aime24"), model, tokenizer, data_dir=tmp_path, seed=0)


def test_unknown_tasks_and_stock_tasks_without_data_fail_clearly(tmp_path, tiny):
    model, tokenizer = tiny
    with pytest.raises(LmEvalTaskError, match="'mirrorlab_aime42' is unknown; Mirrorlab's tasks are"):
        run_lm_eval_task(settings("mirrorlab_aime42"), model, tokenizer, data_dir=tmp_path, seed=0)
    with pytest.raises(LmEvalTaskError, match="samples_per_problem=4 applies only to Mirrorlab's tasks"):
        run_lm_eval_task(settings("gsm8k", samples_per_problem=4), model, tokenizer, data_dir=tmp_path, seed=0)
    with pytest.raises(LmEvalTaskError, match=r"'gsm8k_typo' is unknown.*Close matches: .*gsm8k"):
        run_lm_eval_task(settings("gsm8k_typo"), model, tokenizer, data_dir=tmp_path, seed=0)  # indexes lm-eval's tasks
    with pytest.raises(LmEvalTaskError, match=r"'gsm8k' cannot load its data offline"):
        run_lm_eval_task(settings("gsm8k"), model, tokenizer, data_dir=tmp_path, seed=0)
    import huggingface_hub.constants

    assert huggingface_hub.constants.HF_HUB_OFFLINE == (os.environ.get("HF_HUB_OFFLINE") == "1")


def test_the_reference_answer_of_a_logged_lm_eval_sample():
    from evaluation.lm_eval_tasks.runner import REFERENCE_CHARS, _reference_answer

    assert _reference_answer({"target": "18"}, "generate_until") == "18"
    assert _reference_answer({"target": 7}, "generate_until") == "7"
    assert _reference_answer({}, "generate_until") == ""
    tests = "def check(candidate):\n" + "    assert candidate(1) == 2\n" * 500  # a code task's target
    assert _reference_answer({"target": tests}, "generate_until") == tests[:REFERENCE_CHARS]
    assert _reference_answer({"target": 9, "arguments": "not the usual shape"}, "multiple_choice") == "9"


def test_a_metric_known_to_have_its_own_scale_stays_raw_whatever_its_values():
    """BLEU whose sentence scores all fall under 1 (a weak model) is still BLEU on 0-100: decided by the name, so
    two evaluations of one task never read one metric two ways; an unknown metric is read from its values."""
    from evaluation.lm_eval_tasks.runner import _score_scale, _TaskRun
    from evaluation.scoring import BenchmarkScore

    def scale(metric: str, values: list[float | None]) -> tuple[str, bool]:
        run = _TaskRun("t", [], values, f"{metric},none", {})
        score = BenchmarkScore(score=sum(v or 0 for v in values) / len(values), ci_low=None, ci_high=None,
                               mean_response_tokens=1.0, num_problems=len(values), samples_per_problem=1, metrics={})
        result = _score_scale(score, [run], {"word_perplexity": False}, f"{metric},none")
        return result["score_scale"], result["higher_is_better"]

    assert scale("bleu_max", [0.4, 0.9]) == ("raw", True)
    assert scale("word_perplexity", [None, None]) == ("raw", False)
    assert scale("bleu_acc", [0.0, 1.0]) == ("fraction", True)
    assert scale("acc", [0.0, 1.0]) == ("fraction", True)
    assert scale("custom_score", [3.0, 1.0]) == ("raw", True)
