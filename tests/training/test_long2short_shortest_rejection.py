"""Shortest rejection sampling on the tiny model: what is kept, and that SFT learns the kept responses."""

from __future__ import annotations

import json

import pytest
import torch

from training.config import ShortestRejectionConfig
from training.long2short.base import Long2ShortHooks, Long2ShortJob, Long2ShortStopped
from training.long2short.sampling import sample_and_judge
from training.long2short.shortest_rejection import response_loss, run, sft_examples
from training.models.loading import load_model, load_tokenizer
from training.tasks.arithmetic import generate
from training.types import PromptRecord

CONFIG = ShortestRejectionConfig(samples_per_problem=8, max_response_tokens=40, learning_rate=1e-3, epochs=5,
                                 batch_size=4, seed=0)


def easy_records(count: int, answer: str | None = None) -> tuple[PromptRecord, ...]:
    return tuple(PromptRecord(prompt_id=problem.problem_id, problem=problem.problem, answer=answer or problem.answer)
                 for problem in generate(count, seed=3, difficulties=("easy",)))


def job_for(model_dir, records, tmp_path) -> Long2ShortJob:
    return Long2ShortJob(parent_model_path=model_dir, parent_config={"rollout_engine": "torch"}, records=records,
                         output_dir=tmp_path / "variant", models_dir=tmp_path / "models")


def test_it_keeps_the_shortest_correct_samples_and_sft_learns_them(warm_model_dir, tmp_path):
    records = easy_records(16)
    tokenizer = load_tokenizer(str(warm_model_dir))
    drawn = sample_and_judge(load_model(str(warm_model_dir)), tokenizer, str(warm_model_dir), records,
                             CONFIG.samples_per_problem, CONFIG.max_response_tokens, CONFIG.temperature, CONFIG.seed)
    progress, lines = [], []
    outcome = run(CONFIG, job_for(warm_model_dir, records, tmp_path),
                  Long2ShortHooks(log=lines.append, progress=progress.append))

    expected = []
    for samples in drawn:
        correct = [sample for sample in samples if sample.correct]
        if correct:
            shortest = min(sample.response_tokens for sample in correct)
            first = next(sample for sample in correct if sample.response_tokens == shortest)
            expected.append((first.prompt_id, first.response, shortest, len(samples), len(correct)))
    kept = [(s.prompt_id, s.response, s.response_tokens, s.samples_drawn, s.correct_samples)
            for s in outcome.kept_samples]
    assert kept == expected and len(kept) >= 2

    examples = sft_examples(outcome.kept_samples, records, tokenizer)
    assert [len(response) for _, response in examples] == [s.response_tokens for s in outcome.kept_samples]
    with torch.no_grad():
        before = response_loss(load_model(str(warm_model_dir)).eval(), examples, tokenizer.pad_token_id).item()
        after = response_loss(load_model(str(outcome.checkpoint_path)).eval(), examples, tokenizer.pad_token_id).item()
    assert after < 0.8 * before, (before, after)

    all_tokens = [sample.response_tokens for samples in drawn for sample in samples]
    assert outcome.metrics["problems"] == 16.0 and outcome.metrics["kept"] == len(kept)
    assert outcome.metrics["mean_sampled_tokens"] == pytest.approx(sum(all_tokens) / len(all_tokens))
    assert outcome.metrics["mean_kept_tokens"] == pytest.approx(sum(k[2] for k in kept) / len(kept))
    assert outcome.metrics["mean_kept_tokens"] <= outcome.metrics["mean_correct_sampled_tokens"]
    assert json.loads((outcome.checkpoint_path / "long2short_config.json").read_text())["config"]["epochs"] == 5
    assert progress == sorted(progress) and progress[-1] == 1.0
    assert any(line.startswith(f"kept {len(kept)} of 16 problems") for line in lines)


def test_sft_trains_on_the_tokens_as_sampled_not_the_text_encoded_again(tiny_model_dir):
    """Decoding and encoding again can split a text differently, and would add an end-of-sequence a truncated
    sample never had: the sampled ids are the target; a sample kept as text alone is encoded."""
    from training.long2short.base import KeptSample

    tokenizer = load_tokenizer(str(tiny_model_dir))
    record = easy_records(1)[0]
    sampled = (40, 41, 42)  # say, a truncated response: no end-of-sequence
    kept = [KeptSample(record.prompt_id, "7", 3, 4, 1, token_ids=sampled), KeptSample(record.prompt_id, "7", 2, 4, 1)]
    (_, first), (_, second) = sft_examples(kept, [record], tokenizer)
    assert first == sampled
    assert second == tuple(tokenizer("7", add_special_tokens=False).input_ids) + (tokenizer.eos_token_id,)


def test_it_refuses_to_fine_tune_when_no_sample_is_correct(warm_model_dir, tmp_path):
    config = ShortestRejectionConfig(samples_per_problem=2, max_response_tokens=8)
    with pytest.raises(ValueError, match="no problem had a correct response among its 2 samples"):
        run(config, job_for(warm_model_dir, easy_records(2, answer="-987654"), tmp_path), Long2ShortHooks())
    assert not (tmp_path / "variant" / "checkpoint").exists()


def test_samples_are_judged_as_the_parent_run_judged_them(warm_model_dir, tmp_path):
    """A parent run that took only \\boxed{} answers: the tiny model's "Answer: N" responses were wrong for it,
    so nothing is kept (judged with flexible extraction instead, the same samples keep some problems)."""
    config = ShortestRejectionConfig(samples_per_problem=8, max_response_tokens=40)
    records = easy_records(16)
    boxed = Long2ShortJob(parent_model_path=warm_model_dir, parent_config={"answer_extraction": "boxed"},
                          records=records, output_dir=tmp_path / "boxed", models_dir=tmp_path / "models")
    with pytest.raises(ValueError, match="no problem had a correct response"):
        run(config, boxed, Long2ShortHooks())
    assert run(config, job_for(warm_model_dir, records, tmp_path), Long2ShortHooks()).kept_samples


def test_it_stops_between_steps_when_asked(warm_model_dir, tmp_path):
    with pytest.raises(Long2ShortStopped, match="after 0 of 2 problems"):
        run(CONFIG, job_for(warm_model_dir, easy_records(2), tmp_path), Long2ShortHooks(should_stop=lambda: True))


def test_the_sampling_limit_is_the_parent_runs_unless_set(tmp_path):
    """A long-CoT parent's correct answers need its own limit: cut at a fixed 256 tokens they counted as wrong."""
    from training.config import RLConfig
    from training.long2short.base import sampling_limit

    def job(parent_config):
        return Long2ShortJob(parent_model_path=tmp_path, parent_config=parent_config, records=(),
                             output_dir=tmp_path, models_dir=tmp_path)

    assert sampling_limit(None, job({"max_response_tokens": 4096})) == 4096
    assert sampling_limit(40, job({"max_response_tokens": 4096})) == 40
    assert sampling_limit(None, job({})) == RLConfig().max_response_tokens
    assert ShortestRejectionConfig().max_response_tokens is None
