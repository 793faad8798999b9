"""Model merging: the merged tensors are the weighted average; mismatched models are refused."""

from __future__ import annotations

import json

import pytest
import torch

from common.knobs import ConfigError, parse_config
from training.config import MergeConfig
from training.long2short.base import Long2ShortHooks, Long2ShortJob
from training.long2short.merge import merge_state_dicts, run


def test_it_averages_tensors_with_the_given_weights():
    first = {"w": torch.tensor([[1.0, 2.0], [3.0, 4.0]]), "b": torch.tensor([1.0], dtype=torch.bfloat16)}
    second = {"w": torch.tensor([[5.0, 6.0], [7.0, 8.0]]), "b": torch.tensor([3.0], dtype=torch.bfloat16)}
    merged = merge_state_dicts([first, second], [0.25, 0.75])
    assert torch.equal(merged["w"], torch.tensor([[4.0, 5.0], [6.0, 7.0]]))
    assert merged["b"].dtype == torch.bfloat16 and merged["b"].item() == 2.5


def test_it_merges_three_models_with_their_weights():
    models = [{"w": torch.tensor([0.0, 0.0])}, {"w": torch.tensor([3.0, 6.0])}, {"w": torch.tensor([10.0, 20.0])}]
    merged = merge_state_dicts(models, [0.5, 0.3, 0.2])
    assert torch.allclose(merged["w"], torch.tensor([2.9, 5.8]))


def test_it_copies_integer_buffers_that_agree_and_refuses_ones_that_differ():
    first = {"w": torch.tensor([2.0]), "steps": torch.tensor([7])}
    merged = merge_state_dicts([first, {"w": torch.tensor([4.0]), "steps": torch.tensor([7])}], [0.5, 0.5])
    assert merged["steps"].item() == 7 and merged["w"].item() == 3.0
    with pytest.raises(ValueError, match="non-floating tensor steps"):
        merge_state_dicts([first, {"w": torch.tensor([4.0]), "steps": torch.tensor([8])}], [0.5, 0.5])


def test_it_refuses_mismatched_shapes_naming_the_tensor_and_both_shapes():
    first = {"a": torch.zeros(2, 3), "b": torch.zeros(4, 3)}
    second = {"a": torch.zeros(2, 3), "b": torch.zeros(5, 3)}
    with pytest.raises(ValueError, match=r"model 2: tensor b has shape \(5, 3\), the first model's has \(4, 3\)"):
        merge_state_dicts([first, second], [0.5, 0.5])


def test_it_refuses_missing_tensors_and_other_dtypes():
    with pytest.raises(ValueError, match=r"missing tensors \['b'\]"):
        merge_state_dicts([{"a": torch.zeros(1), "b": torch.zeros(1)}, {"a": torch.zeros(1)}], [0.5, 0.5])
    with pytest.raises(ValueError, match="tensor a is torch.float16"):
        merge_state_dicts([{"a": torch.zeros(1)}, {"a": torch.zeros(1, dtype=torch.float16)}], [0.5, 0.5])


def test_it_refuses_weights_that_do_not_sum_to_one_or_are_negative():
    models = [{"a": torch.zeros(1)}, {"a": torch.ones(1)}]
    with pytest.raises(ValueError, match="sum to 1"):
        merge_state_dicts(models, [0.5, 0.6])
    with pytest.raises(ValueError, match="non-negative"):
        merge_state_dicts(models, [1.5, -0.5])
    with pytest.raises(ValueError, match="3 weights for 2 models"):
        merge_state_dicts(models, [0.5, 0.25, 0.25])


def test_the_config_checks_other_weights_against_the_listed_checkpoints():
    config = parse_config(MergeConfig, {"parent_weight": 0.5, "other_checkpoint_ids": "4,5",
                                        "other_weights": "0.3, 0.2"})
    assert config.weights(2) == (0.5, 0.3, 0.2)
    assert parse_config(MergeConfig, {"parent_weight": 0.4}).weights(3) == pytest.approx((0.4, 0.2, 0.2, 0.2))
    with pytest.raises(ConfigError) as refused:
        parse_config(MergeConfig, {"parent_weight": 0.5, "other_checkpoint_ids": "4", "other_weights": "0.3"})
    assert "sum to 0.8, not 1" in refused.value.errors["other_weights"]
    with pytest.raises(ConfigError) as refused:
        parse_config(MergeConfig, {"other_checkpoint_ids": "4", "other_run_iterations": "0",
                                   "other_weights": "0.5"})
    assert "1 weights but 2 other checkpoints" in refused.value.errors["other_weights"]
    with pytest.raises(ConfigError) as refused:
        parse_config(MergeConfig, {"other_checkpoint_ids": "4", "other_weights": "half"})
    assert refused.value.errors["other_weights"] == "'half' is not a number"


def save_perturbed(source, target, seed: int, **architecture):
    """A copy of the model at `source` with seeded noise on every weight (or a fresh model of another shape)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    from training.models.loading import load_model, load_tokenizer

    torch.manual_seed(seed)
    if architecture:
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(str(source), **architecture))
    else:
        model = load_model(str(source))
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.add_(torch.randn_like(parameter) * 0.05)
    model.save_pretrained(target, safe_serialization=True)
    load_tokenizer(str(source)).save_pretrained(target)
    return target


def merge_job(tmp_path, parent, others) -> Long2ShortJob:
    return Long2ShortJob(parent_model_path=parent, parent_config={"model": "tiny"}, records=(),
                         output_dir=tmp_path / "variant", models_dir=tmp_path / "models",
                         merge_model_paths=tuple(others))


def test_it_saves_a_merged_tiny_model_whose_logits_are_those_of_the_averaged_weights(tiny_model_dir, tmp_path):
    from training.models.loading import load_model

    other = save_perturbed(tiny_model_dir, tmp_path / "other", seed=1)
    third = save_perturbed(tiny_model_dir, tmp_path / "third", seed=2)
    progress = []
    config = parse_config(MergeConfig, {"parent_weight": 0.5, "other_checkpoint_ids": "1,2",
                                        "other_weights": "0.3,0.2"})
    job = merge_job(tmp_path, tiny_model_dir, [other, third])
    outcome = run(config, job, Long2ShortHooks(progress=progress.append))

    models = [load_model(str(path)) for path in (tiny_model_dir, other, third)]
    states = [model.state_dict() for model in models]
    name = "model.layers.0.mlp.up_proj.weight"
    expected_tensor = 0.5 * states[0][name] + 0.3 * states[1][name] + 0.2 * states[2][name]
    merged = load_model(str(outcome.checkpoint_path))
    assert torch.allclose(merged.state_dict()[name], expected_tensor, atol=1e-6)
    assert not torch.allclose(merged.state_dict()[name], states[0][name])

    by_hand = models[0]
    by_hand.load_state_dict({key: 0.5 * states[0][key] + 0.3 * states[1][key] + 0.2 * states[2][key]
                             for key in states[0]})
    input_ids = torch.tensor([[5, 17, 42, 9, 100, 3]])
    with torch.no_grad():
        assert torch.allclose(merged(input_ids=input_ids).logits, by_hand(input_ids=input_ids).logits, atol=1e-5)

    saved = json.loads((outcome.checkpoint_path / "long2short_config.json").read_text())
    assert saved["method"] == "merge" and saved["config"]["other_weights"] == "0.3,0.2"
    assert outcome.checkpoint_path == tmp_path / "variant" / "checkpoint" and outcome.size_bytes > 1_000_000
    assert outcome.metrics == {"models_merged": 3.0, "parent_weight": 0.5}
    assert progress[-1] == 1.0


def test_it_refuses_to_merge_a_model_of_another_architecture(tiny_model_dir, tmp_path):
    wider = save_perturbed(tiny_model_dir, tmp_path / "wider", seed=3, intermediate_size=256)
    job = merge_job(tmp_path, tiny_model_dir, [wider])
    with pytest.raises(ValueError, match="different architecture.*intermediate_size is 256 there and 512"):
        run(MergeConfig(), job, Long2ShortHooks())
    assert not (tmp_path / "variant" / "checkpoint").exists()


def test_it_refuses_a_merge_without_another_checkpoint(tiny_model_dir, tmp_path):
    with pytest.raises(ValueError, match="at least one other checkpoint"):
        run(MergeConfig(), merge_job(tmp_path, tiny_model_dir, []), Long2ShortHooks())


def test_it_merges_a_tiny_pair_half_and_half_by_default_in_every_tensor(tiny_model_dir, tmp_path):
    from training.models.loading import load_model

    other = save_perturbed(tiny_model_dir, tmp_path / "other", seed=4)
    outcome = run(MergeConfig(), merge_job(tmp_path, tiny_model_dir, [other]), Long2ShortHooks())
    parent, second = load_model(str(tiny_model_dir)).state_dict(), load_model(str(other)).state_dict()
    merged = load_model(str(outcome.checkpoint_path)).state_dict()
    assert merged.keys() == parent.keys()
    for name, tensor in merged.items():
        assert torch.allclose(tensor, (parent[name] + second[name]) / 2, atol=1e-6), name


def test_bf16_checkpoints_merge_in_float32_and_save_in_bf16(tiny_model_dir, tmp_path):
    """The README's promise: sums in float32, the result in the parent's dtype (it was always float32)."""
    from training.models.loading import load_model

    parent, other = tmp_path / "parent16", tmp_path / "other16"
    for source, target, seed in ((tiny_model_dir, parent, 5), (tiny_model_dir, other, 6)):
        model = load_model(str(save_perturbed(source, target, seed=seed)))
        model.to(torch.bfloat16).save_pretrained(target, safe_serialization=True)
    outcome = run(MergeConfig(), merge_job(tmp_path, parent, [other]), Long2ShortHooks())
    first, second = (load_model(str(path), dtype="auto").state_dict() for path in (parent, other))
    merged = load_model(str(outcome.checkpoint_path), dtype="auto").state_dict()
    for name, tensor in merged.items():
        assert tensor.dtype == torch.bfloat16, name
        expected = ((first[name].float() + second[name].float()) / 2).to(torch.bfloat16)
        assert torch.equal(tensor, expected), name
    fp32_other = save_perturbed(tiny_model_dir, tmp_path / "other32", seed=7)
    with pytest.raises(ValueError, match="float32|dtype"):
        run(MergeConfig(), merge_job(tmp_path / "mixed", parent, [fp32_other]), Long2ShortHooks())
