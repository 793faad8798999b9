"""MathVista through our runner with the image as input: the tiny-vl model end to end, and the refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from evaluation.context import EvalContext
from evaluation.datasets import ImagesMissing
from evaluation.judges.mathvista import judge_mathvista
from evaluation.builtin_runner import EvaluationError, run_builtin_benchmark
from evaluation.suite_config import BenchmarkSettings

DATA_DIR = Path(__file__).parents[2].parent / "shared" / "datasets"
ANNOTATIONS = DATA_DIR / "mathvista" / "testmini.json"
pytestmark = pytest.mark.skipif(not ANNOTATIONS.is_file(), reason=f"{ANNOTATIONS} is absent")
PROBLEMS = 4
MAX_TOKENS = 8


@pytest.fixture(scope="module")
def tiny_vl_dir(tmp_path_factory) -> Path:
    from training.models.tiny_vl import create_tiny_vl_preset

    return create_tiny_vl_preset(tmp_path_factory.mktemp("models") / "tiny-vl")


def stand_in_image(pid: str, shade: int) -> Image.Image:
    """A stand-in for a MathVista figure: a grey background with a dark band whose place depends on pid."""
    image = Image.new("RGB", (90, 70), (shade, shade, shade))
    offset = (int(pid) * 17) % 60
    image.paste((20, 20, 120), (offset, 0, offset + 25, 70))
    return image


def mathvista_folder(data_dir: Path, with_images: bool, shade: int = 230) -> list[str]:
    """data_dir/mathvista with the first PROBLEMS testmini annotations and, if asked, a JPEG per problem."""
    records = dict(list(json.loads(ANNOTATIONS.read_text()).items())[:PROBLEMS])
    folder = data_dir / "mathvista"
    (folder / "images").mkdir(parents=True, exist_ok=True)
    (folder / "testmini.json").write_text(json.dumps(records))
    if with_images:
        for record in records.values():
            stand_in_image(record["pid"], shade).save(folder / record["image"], format="JPEG", quality=95)
    return [record["pid"] for record in records.values()]


def evaluate(model_dir: Path, data_dir: Path, **settings):
    with EvalContext(str(model_dir), data_dir, log=lambda line: None, batch_problems=3) as context:
        return run_builtin_benchmark(
            BenchmarkSettings(benchmark="mathvista", limit=PROBLEMS, max_tokens=MAX_TOKENS, **settings), context)


def test_mathvista_is_evaluated_with_the_images_as_input(tiny_vl_dir, tmp_path):
    from evaluation.datasets import load_mathvista

    pids = mathvista_folder(tmp_path, with_images=True)
    outcome = evaluate(tiny_vl_dir, tmp_path, samples_per_problem=2, temperature=1.0)
    assert [sample.problem_id for sample in outcome.samples] == [pid for pid in pids for _ in range(2)]
    problems = {problem.problem_id: problem for problem in load_mathvista(tmp_path, PROBLEMS)}
    for sample in outcome.samples:  # the existing judge scored every row
        judgement = judge_mathvista(problems[sample.problem_id], sample.response)
        assert (sample.correct, sample.extracted_answer) == (judgement.correct, judgement.extracted)
        assert 1 <= sample.response_tokens <= MAX_TOKENS
        assert sample.truncated == (sample.response_tokens == MAX_TOKENS)
    assert outcome.score.score == pytest.approx(sum(sample.correct for sample in outcome.samples) / 8)
    assert outcome.score.mean_response_tokens == pytest.approx(
        sum(sample.response_tokens for sample in outcome.samples) / 8)
    assert {key: outcome.metadata[key] for key in ("runner", "rollout_engine")} == {"runner": "mirrorlab",
                                                                                    "rollout_engine": "torch"}
    assert outcome.metadata["sampling"]["temperature"] == 1.0 and "maj@2" in outcome.score.metrics


def test_other_images_give_other_greedy_responses(tiny_vl_dir, tmp_path):
    """The images reach the model: the same questions with darker stand-in images are answered differently."""
    mathvista_folder(tmp_path / "light", with_images=True, shade=230)
    mathvista_folder(tmp_path / "dark", with_images=True, shade=20)
    light = evaluate(tiny_vl_dir, tmp_path / "light", temperature=0.0)
    light_again = evaluate(tiny_vl_dir, tmp_path / "light", temperature=0.0)
    dark = evaluate(tiny_vl_dir, tmp_path / "dark", temperature=0.0)
    responses = [[sample.response for sample in outcome.samples] for outcome in (light, light_again, dark)]
    assert responses[0] == responses[1]
    assert responses[0] != responses[2]


def test_a_text_only_model_is_refused_saying_it_cannot_see_images(tiny_model_dir, tmp_path):
    mathvista_folder(tmp_path, with_images=True)
    with pytest.raises(EvaluationError) as refused:
        evaluate(tiny_model_dir, tmp_path)
    message = str(refused.value)
    assert f"{tiny_model_dir} (model type 'qwen2') is a text-only model" in message
    assert "cannot see images" in message and "vision-language model" in message and "tiny-vl" in message


def test_missing_images_are_refused_before_the_model_is_loaded(tiny_vl_dir, tmp_path):
    mathvista_folder(tmp_path, with_images=False)
    context = EvalContext(str(tiny_vl_dir), tmp_path, log=lambda line: None)
    with pytest.raises(ImagesMissing, match=f"4 of 4 images are missing .*{tmp_path}/mathvista/images"):
        run_builtin_benchmark(BenchmarkSettings(benchmark="mathvista", limit=PROBLEMS), context)
    assert "generator" not in context.__dict__  # refused before loading the model
