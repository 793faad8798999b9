"""DPO long2short on the tiny model: the training step, a whole run, and a run with nothing to pair."""

from __future__ import annotations

import json

import pytest
import torch

from common.knobs import parse_config
from training.config import DPOConfig
from training.long2short.base import Long2ShortHooks, Long2ShortJob, Long2ShortStopped, PreferencePair
from training.long2short.dpo import frozen_copy, pair_logprobs, run, tokenize_pair, train_dpo
from training.models.loading import load_model, load_tokenizer
from training.rewards import CorrectnessRewards
from training.types import PromptRecord

PROBLEM = "Compute 3+4."
SHORT, LONG, WRONG = " Answer: 7", " 3+4=7\nAnswer: 7", " 3+4=8\nAnswer: 8"


def record(answer: str = "7") -> PromptRecord:
    return PromptRecord(prompt_id="p1", problem=PROBLEM, answer=answer)


@pytest.fixture(scope="module")
def three_style_parent(tiny_model_dir, tmp_path_factory):
    """The tiny model fitted to one problem with three answers: short correct, long correct, long wrong."""
    from training.sft import warmup_sft

    torch.manual_seed(0)
    tokenizer, model = load_tokenizer(str(tiny_model_dir)), load_model(str(tiny_model_dir))
    examples = [(PROBLEM, text.strip()) for text in (SHORT, LONG, WRONG)]
    warmup_sft(model, tokenizer, examples, steps=40, batch_size=4, block_length=64, learning_rate=3e-3, seed=0)
    target = tmp_path_factory.mktemp("models") / "three-style"
    model.save_pretrained(target, safe_serialization=True)
    tokenizer.save_pretrained(target)
    return target


def job_for(parent, tmp_path, records) -> Long2ShortJob:
    return Long2ShortJob(parent_model_path=parent, parent_config={"temperature": 1.0, "rollout_engine": "torch"},
                         records=tuple(records), output_dir=tmp_path / "variant", models_dir=tmp_path / "models")


def test_dpo_training_raises_the_chosen_margin_over_the_reference(tiny_model_dir):
    torch.manual_seed(0)
    tokenizer, policy = load_tokenizer(str(tiny_model_dir)), load_model(str(tiny_model_dir))
    reference = frozen_copy(policy)
    pairs = [tokenize_pair(PreferencePair("p1", SHORT, rejected, 4, 9, reason), PROBLEM, tokenizer)
             for rejected, reason in ((LONG, "correct_too_long"), (WRONG, "wrong_longer"))]
    config = parse_config(DPOConfig, {"beta": 0.1, "learning_rate": 1e-3, "epochs": 5, "pairs_per_step": 2})
    metrics = train_dpo(policy, reference, pairs, config, tokenizer.pad_token_id)
    with torch.no_grad():
        policy_chosen, policy_rejected = pair_logprobs(policy, pairs, tokenizer.pad_token_id)
        reference_chosen, reference_rejected = pair_logprobs(reference, pairs, tokenizer.pad_token_id)
    margins = (policy_chosen - reference_chosen) - (policy_rejected - reference_rejected)
    assert metrics["loss_first"] == pytest.approx(0.6931, abs=1e-3)  # policy == reference: -log sigmoid(0)
    assert metrics["loss_last"] < metrics["loss_first"]
    assert (margins > 1.0).all(), margins  # log-prob ratio moved towards the short answer on both pairs
    assert all(not p.requires_grad for p in reference.parameters())
    assert all(torch.equal(a, b) for a, b in zip(reference.state_dict().values(),
                                                   load_model(str(tiny_model_dir)).state_dict().values()))


def test_dpo_run_pairs_the_shortest_correct_answer_and_saves_a_checkpoint(three_style_parent, tmp_path):
    config = parse_config(DPOConfig, {"samples_per_problem": 16, "max_response_tokens": 24, "learning_rate": 1e-4,
                                      "epochs": 2})
    fractions = []
    outcome = run(config, job_for(three_style_parent, tmp_path, [record()]),
                  Long2ShortHooks(progress=fractions.append))
    assert outcome.pairs, "the parent samples all three styles, so pairs must form"
    assert {pair.chosen for pair in outcome.pairs} == {SHORT}
    with CorrectnessRewards() as correctness:  # judged by the verifier, as in the run
        rejected_rewards = correctness([record()] * len(outcome.pairs), [pair.rejected for pair in outcome.pairs])
    for pair, reward in zip(outcome.pairs, rejected_rewards):
        if pair.rejected_reason == "correct_too_long":
            assert pair.rejected_tokens >= 1.5 * pair.chosen_tokens
            assert reward == 1.0
        else:
            assert pair.rejected_reason == "wrong_longer" and pair.rejected_tokens > pair.chosen_tokens
            assert reward == 0.0
    assert outcome.metrics["pairs"] == len(outcome.pairs)
    assert outcome.metrics["pairs_wrong_longer"] + outcome.metrics["pairs_correct_too_long"] == len(outcome.pairs)
    assert outcome.metrics["loss_last"] < outcome.metrics["loss_first"]
    assert fractions[-1] == 1.0 and fractions == sorted(fractions)
    saved = json.loads((outcome.checkpoint_path / "long2short_config.json").read_text())
    assert saved["method"] == "dpo" and saved["config"]["beta"] == 0.1
    load_model(str(outcome.checkpoint_path))  # a loadable Hugging Face checkpoint


def test_dpo_run_with_no_correct_response_fails_and_says_why(tiny_model_dir, tmp_path):
    config = parse_config(DPOConfig, {"samples_per_problem": 2, "max_response_tokens": 6})
    records = [PromptRecord(prompt_id=f"p{i}", problem=f"Compute {i}+1.", answer="123456789") for i in range(3)]
    with pytest.raises(ValueError, match="DPO built no preference pairs: 0 of 6 sampled responses to 3 problems"):
        run(config, job_for(tiny_model_dir, tmp_path, records), Long2ShortHooks())
    assert not (tmp_path / "variant" / "checkpoint").exists()


def test_dpo_run_stops_when_asked(three_style_parent, tmp_path):
    config = parse_config(DPOConfig, {"samples_per_problem": 16, "max_response_tokens": 24})
    asked = iter([False, True, True, True, True, True])  # sampling checks once, then the first DPO step stops
    with pytest.raises(Long2ShortStopped):
        run(config, job_for(three_style_parent, tmp_path, [record()]), Long2ShortHooks(should_stop=lambda: next(asked)))
    assert not (tmp_path / "variant" / "checkpoint").exists()
