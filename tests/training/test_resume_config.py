"""A resumed run keeps its checkpoint's recipe: only bookkeeping and deployment knobs may change."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from common.knobs import config_to_dict, parse_config
from training.checkpoint import CONFIG_FILE, STATE_FILE, checkpoint_dir
from training.config import RLConfig
from training.config.resumable import RESUMABLE_KNOBS, config_differences
from training.resume_config import ResumeMismatch, check_resume_config, check_resume_prompts, prompts_fingerprint
from training.session import start_session
from training.types import PromptRecord, RunPaths, TrainingHooks

SAVED = config_to_dict(RLConfig())
DEFAULTS = config_to_dict(RLConfig())


def test_an_identical_config_has_no_differences():
    assert config_differences(SAVED, config_to_dict(RLConfig()), DEFAULTS) == []


def test_it_lists_each_changed_recipe_knob_with_both_values():
    changed = {**SAVED, "model": "/nope", "tau": 5.0}
    assert config_differences(SAVED, changed, DEFAULTS) == [("model", "tiny", "/nope"), ("tau", 0.1, 5.0)]


@pytest.mark.parametrize("knob, value", [
    ("iterations", 40), ("checkpoint_every_iterations", 2), ("evaluate_every_iterations", 5),
    ("stored_samples_per_iteration", 0), ("vllm_sidecar_socket", "/run/vllm.sock"), ("nnodes", 2),
    ("nproc_per_node", 8), ("node_rank", 1), ("rdzv_endpoint", "host:29500"), ("rdzv_id", "run-7"),
    ("micro_batch_size", 2),
])
def test_bookkeeping_and_deployment_knobs_may_change(knob, value):
    assert knob in RESUMABLE_KNOBS
    assert config_differences(SAVED, {**SAVED, knob: value}, DEFAULTS) == []


def test_a_knob_the_checkpoint_predates_counts_at_its_default():
    older = {name: value for name, value in SAVED.items() if name != "megatron_precision"}
    assert config_differences(older, SAVED, DEFAULTS) == []
    assert config_differences(older, {**SAVED, "megatron_precision": "fp32"}, DEFAULTS) == \
        [("megatron_precision", "auto", "fp32")]


def test_a_saved_knob_that_no_longer_exists_is_ignored():
    assert config_differences({**SAVED, "retired_knob": 3}, SAVED, DEFAULTS) == []


def test_the_refusal_names_every_changed_knob_and_how_to_proceed():
    config = parse_config(RLConfig, {"model": "/nope", "tau": 5.0, "iterations": 99, "partial_rollout_token_budget": 8})
    with pytest.raises(ResumeMismatch) as error:
        check_resume_config(SAVED, config, "runs/x/checkpoints/iteration-000002")
    message = str(error.value)
    assert message.startswith("cannot resume from runs/x/checkpoints/iteration-000002: the config changed")
    assert "(model: tiny -> /nope; tau: 0.1 -> 5.0; partial_rollout_token_budget: empty -> 8)" in message
    assert "iterations" not in message.split("(")[1]  # extending the run is allowed
    assert "set them back to the checkpoint's values" in message and "choose a new output_dir" in message


def test_a_changed_prompt_count_is_refused_as_a_changed_prompt_set():
    check_resume_prompts(16, 16, "iteration-000002")
    with pytest.raises(ResumeMismatch, match=r"the prompt set changed since it was saved \(it had 16 prompts, "
                                             r"this run has 8\).*choose a new output_dir"):
        check_resume_prompts(16, 8, "iteration-000002")


def records(count: int) -> list[PromptRecord]:
    return [PromptRecord(prompt_id=str(i), problem=f"What is {i}+1?", answer=str(i + 1)) for i in range(count)]


def fake_checkpoint(output_dir, config: dict, prompt_count: int, **state):
    """The files start_session reads before it loads a model: the saved config and the training state."""
    folder = checkpoint_dir(output_dir, 2)
    folder.mkdir(parents=True)
    (folder / CONFIG_FILE).write_text(json.dumps(config))
    torch.save({"iteration": 2, "sampler": {"n": prompt_count, "success_sum": [0.0] * prompt_count,
                                            "observations": [0.0] * prompt_count}, **state}, folder / STATE_FILE)
    return folder


def test_start_session_refuses_a_changed_config_before_loading_anything(tmp_path):
    folder = fake_checkpoint(tmp_path / "run", SAVED, 4)
    config = parse_config(RLConfig, {"model": str(tmp_path / "missing-model"), "tau": 5.0, "iterations": 30})
    with pytest.raises(ResumeMismatch) as error:
        start_session(config, records(4), RunPaths(tmp_path / "run", tmp_path / "models"), TrainingHooks())
    assert f"cannot resume from {folder}:" in str(error.value)
    assert f"model: tiny -> {tmp_path / 'missing-model'}; tau: 0.1 -> 5.0)" in str(error.value)
    assert not (tmp_path / "models").exists()  # nothing was loaded or created


def test_start_session_refuses_a_changed_prompt_set_without_a_sampler_traceback(tmp_path):
    fake_checkpoint(tmp_path / "run", SAVED, 16)
    with pytest.raises(ResumeMismatch, match="the prompt set changed since it was saved .it had 16 prompts, "
                                             "this run has 8."):
        start_session(RLConfig(), records(8), RunPaths(tmp_path / "run", tmp_path / "models"), TrainingHooks())


def test_start_session_refuses_prompts_edited_or_reordered_at_the_same_count(tmp_path):
    saved = records(4)
    fake_checkpoint(tmp_path / "run", SAVED, 4, prompts_fingerprint=prompts_fingerprint(saved))
    edited = [saved[0], dataclasses.replace(saved[1], answer="7"), *saved[2:]]
    for changed in (edited, saved[::-1]):
        with pytest.raises(ResumeMismatch, match="the same 4 prompts in number, but edited or reordered"):
            start_session(RLConfig(), changed, RunPaths(tmp_path / "run", tmp_path / "models"), TrainingHooks())
    assert prompts_fingerprint(records(4)) == prompts_fingerprint(saved)  # the same prompts: the same print


def test_a_checkpoint_without_its_config_is_refused_clearly(tmp_path):
    folder = fake_checkpoint(tmp_path / "run", SAVED, 4)
    (folder / CONFIG_FILE).unlink()
    with pytest.raises(ResumeMismatch, match=f"its saved config {CONFIG_FILE} cannot be read"):
        start_session(RLConfig(), records(4), RunPaths(tmp_path / "run", tmp_path / "models"), TrainingHooks())


def test_a_checkpoint_from_before_truncated_counts_wrong_resumes_grading_cut_off_text_as_it_trained(tmp_path):
    """The new default (cut-off responses earn nothing) would change an old run's reward mid-run: it keeps the
    value it trained with, and the check passes; a checkpoint that saved the knob keeps its own value."""
    from training.resume_config import check_resume

    older = {name: value for name, value in SAVED.items() if name != "truncated_counts_wrong"}
    folder = fake_checkpoint(tmp_path / "old", older, 4)
    state = {"sampler": {"n": 4}}
    assert RLConfig().truncated_counts_wrong is True
    assert check_resume(folder, state, RLConfig(), records(4)).truncated_counts_wrong is False
    current = fake_checkpoint(tmp_path / "new", SAVED, 4)
    assert check_resume(current, state, RLConfig(), records(4)).truncated_counts_wrong is True
