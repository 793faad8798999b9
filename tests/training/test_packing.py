"""Padding-free training passes: packed rows score and train exactly as right-padded ones."""

from __future__ import annotations

import copy

import pytest
import torch

from training.batch import build_policy_batch
from common.knobs import parse_config
from training.config import RLConfig
from training.models.loading import load_model
from training.trainer import packing as packing_module
from training.trainer.packing import (first_fit_decreasing, pack_rows, packed_token_logprobs, packing_supported,
                                        width_groups)
from training.trainer.logprobs import token_logprobs
from training.trainer.torch_trainer import TorchTrainer
from training.collect import new_groups

LENGTHS = [40, 9, 12, 40, 5, 33, 7, 3]  # heavy-tailed rows of one micro-batch
SPREAD = [300, 20, 140, 9, 290, 60]  # rows for three width groups: 300 and 290; 140; 60, 20 and 9 (under 128)


@pytest.fixture
def model(tiny_model_dir):
    torch.manual_seed(0)
    return load_model(str(tiny_model_dir)).eval()


def right_padded(lengths: list[int], vocabulary: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    ids = torch.zeros((len(lengths), max(lengths)), dtype=torch.long)
    attention = torch.zeros_like(ids)
    for row, length in enumerate(lengths):
        ids[row, :length] = torch.randint(3, vocabulary, (length,), generator=generator)
        attention[row, :length] = 1
    return ids, attention


def test_first_fit_decreasing_fills_bins_longest_first():
    assert first_fit_decreasing([5, 3, 3, 2, 7], capacity=8) == [[4], [0, 1], [2, 3]]
    with pytest.raises(ValueError, match="9 tokens does not fit a bin of 8"):
        first_fit_decreasing([9, 1], capacity=8)


def test_packing_puts_short_rows_beside_each_other_with_restarting_positions():
    ids, _ = right_padded(LENGTHS, 100)
    packed = pack_rows(ids, LENGTHS)
    assert packed.input_ids.shape == (4, 40)  # [40], [40], [33, 7], [12, 9, 5, 3] instead of 8 rows
    assert packed.position_ids[2].tolist() == list(range(33)) + list(range(7))
    assert packed.position_ids[3].tolist()[:29] == list(range(12)) + list(range(9)) + list(range(5)) + list(range(3))
    assert packed.input_ids[3, 12:21].tolist() == ids[1, :9].tolist()  # row 1 follows row 2 in bin 3


def test_packed_log_probs_equal_padded_ones_and_are_zero_past_each_row(model):
    ids, attention = right_padded(LENGTHS, model.config.vocab_size)
    with torch.no_grad():
        padded = token_logprobs(model, ids, attention, temperature=0.7)
        packed = packed_token_logprobs(model, ids, LENGTHS, temperature=0.7)
    for row, length in enumerate(LENGTHS):
        assert torch.allclose(packed[row, :length - 1], padded[row, :length - 1], atol=1e-5)
        assert (packed[row, length - 1:] == 0).all()
    assert padded[4, 10:].abs().sum() > 0  # the padded pass scores its padding; packing leaves none to score


def test_width_groups_keep_each_row_in_a_bin_at_most_twice_its_length_above_the_floor():
    assert width_groups([530, 35, 300, 12, 140, 520, 60, 100]) == [[0, 5, 2], [4, 7], [6, 1, 3]]
    assert width_groups([100, 3, 128, 1]) == [[2, 0, 1, 3]]  # all at most the floor: one group
    assert width_groups([9, 4, 1], floor=2) == [[0], [1], [2]]  # 4 is less than half of 9, 1 of 4


def test_rows_of_very_different_lengths_are_scored_in_one_pass_per_width_group(model, monkeypatch):
    """A short row packed into a bin as wide as the longest would pay that width's attention: each group is
    packed at its own width, and the log-probs still equal a padded pass's, zero past each row."""
    ids, attention = right_padded(SPREAD, model.config.vocab_size, seed=3)
    widths = []
    one_pass = packing_module._packed_pass
    monkeypatch.setattr(packing_module, "_packed_pass", lambda m, rows, *rest: widths.append(rows.shape[1]) or one_pass(
        m, rows, *rest))
    with torch.no_grad():
        padded = token_logprobs(model, ids, attention, temperature=0.7)
        packed = packed_token_logprobs(model, ids, SPREAD, temperature=0.7)
    assert widths == [300, 140, 60]
    assert packed.shape == padded.shape
    for row, length in enumerate(SPREAD):
        assert torch.allclose(packed[row, :length - 1], padded[row, :length - 1], atol=1e-5), row
        assert (packed[row, length - 1:] == 0).all()


@pytest.mark.parametrize("lengths", [LENGTHS, SPREAD], ids=["one group", "three groups"])
def test_packed_gradients_equal_padded_ones(model, lengths):
    ids, attention = right_padded(lengths, model.config.vocab_size, seed=1)
    mask = attention[:, 1:].float()
    gradients = []
    for forward in (lambda m: token_logprobs(m, ids, attention), lambda m: packed_token_logprobs(m, ids, lengths)):
        copy_ = copy.deepcopy(model)
        (forward(copy_) * mask).sum().backward()
        gradients.append(torch.cat([p.grad.flatten() for p in copy_.parameters() if p.grad is not None]))
    assert torch.allclose(gradients[0], gradients[1], atol=1e-4), (gradients[0] - gradients[1]).abs().max()


class IgnoresPositions(torch.nn.Module):
    """A model whose attention runs across packed sequences: it drops the position ids that separate them."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, position_ids=None, use_cache=False, **kwargs):
        return self.model(input_ids=input_ids, use_cache=use_cache, **kwargs)

    def get_output_embeddings(self):
        return self.model.get_output_embeddings()


def test_the_probe_accepts_the_tiny_model_and_refuses_one_that_mixes_sequences(model):
    assert packing_supported(model)
    assert not packing_supported(IgnoresPositions(model))


def heavy_tailed_groups(tokenizer_pad: int):
    """Two groups of four: one response of 40 tokens among short ones, rewards that differ."""
    groups = new_groups([0, 1], [(5, 6, 7), (8, 9)], 1, 4)
    generator = torch.Generator().manual_seed(2)
    for group, lengths in zip(groups, ([40, 4, 6, 3], [5, 2, 8, 7])):
        for trajectory, length in zip(group.trajectories, lengths):
            trajectory.extend(torch.randint(3, 200, (length,), generator=generator).tolist(), 1)
            trajectory.finish_reason = "stop"
    return groups


def test_a_packed_update_equals_a_padded_one(tiny_model_dir):
    groups = heavy_tailed_groups(0)
    batch = build_policy_batch(groups, 0, 1, None)
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 1.0, 0.0]])
    results = {}
    for packing in (True, False):
        torch.manual_seed(0)
        config = parse_config(RLConfig, {"pack_sequences": packing, "micro_batch_size": 8, "learning_rate": 1e-3,
                                         "gradient_steps_per_iteration": 2})
        trainer = TorchTrainer(load_model(str(tiny_model_dir)), config, torch.device("cpu"))
        assert trainer.packs_sequences is packing
        metrics = trainer.update(batch, rewards)
        results[packing] = metrics, torch.cat([p.detach().flatten() for p in trainer.model.parameters()])
    (packed_metrics, packed_weights), (padded_metrics, padded_weights) = results[True], results[False]
    for name in ("loss", "first_step_loss", "grad_norm", "kl"):
        assert packed_metrics[name] == pytest.approx(padded_metrics[name], rel=1e-4, abs=1e-7), name
    assert packed_metrics["kl"] > 0  # the second step moved the policy
    # Adam steps are ~lr = 1e-3 whatever the gradient's size: rounding moves a few weights by ~1e-5
    assert torch.allclose(packed_weights, padded_weights, atol=1e-4)
