"""The DPO loss against a hand computation, its gradient signs and its refusals."""

from __future__ import annotations

import pytest
import torch

from training.long2short.dpo_loss import dpo_loss


def two_pairs():
    """Pair 1: the policy favours chosen over the reference (margin +1 after beta); pair 2: the opposite (-1.5)."""
    policy_chosen = torch.tensor([-10.0, -20.0], requires_grad=True)
    policy_rejected = torch.tensor([-12.0, -17.0], requires_grad=True)
    reference_chosen = torch.tensor([-11.0, -19.0])
    reference_rejected = torch.tensor([-11.0, -19.0])
    return policy_chosen, policy_rejected, reference_chosen, reference_rejected


def test_dpo_loss_matches_a_hand_computation():
    policy_chosen, policy_rejected, reference_chosen, reference_rejected = two_pairs()
    loss, metrics = dpo_loss(policy_chosen, policy_rejected, reference_chosen, reference_rejected, beta=0.5)
    # pair 1: 0.5 * ((-10 + 11) - (-12 + 11)) = 1.0 -> -log sigmoid(1) = log(1 + e^-1) = 0.313262
    # pair 2: 0.5 * ((-20 + 19) - (-17 + 19)) = -1.5 -> -log sigmoid(-1.5) = log(1 + e^1.5) = 1.701413
    assert loss.item() == pytest.approx((0.31326168751822286 + 1.7014132779827524) / 2, abs=1e-6)
    assert metrics["reward_accuracy"] == pytest.approx(0.5)
    assert metrics["margin"] == pytest.approx((1.0 - 1.5) / 2)
    assert metrics["chosen_reward"] == pytest.approx(0.5 * (1.0 - 1.0) / 2)
    assert metrics["rejected_reward"] == pytest.approx(0.5 * (-1.0 + 2.0) / 2)


def test_dpo_gradient_raises_chosen_and_lowers_rejected_log_probs():
    policy_chosen, policy_rejected, reference_chosen, reference_rejected = two_pairs()
    loss, _ = dpo_loss(policy_chosen, policy_rejected, reference_chosen, reference_rejected, beta=0.5)
    loss.backward()
    # d loss / d chosen_i = -(beta / P) * sigmoid(-margin_i): sigmoid(-1) = 0.268941, sigmoid(1.5) = 0.817574
    assert policy_chosen.grad.tolist() == pytest.approx([-0.25 * 0.2689414213699951, -0.25 * 0.8175744761936437],
                                                        abs=1e-6)
    assert torch.equal(policy_rejected.grad, -policy_chosen.grad)  # descent lowers rejected by as much


def test_dpo_loss_is_log_2_when_policy_equals_reference():
    logp = torch.tensor([-3.0, -7.0, -1.0])
    loss, metrics = dpo_loss(logp, logp - 2, logp, logp - 2, beta=0.1)
    assert loss.item() == pytest.approx(0.6931471805599453)
    assert metrics["reward_accuracy"] == 0.0 and metrics["margin"] == 0.0


def test_it_rejects_non_positive_beta_and_mismatched_shapes():
    logp = torch.zeros(3)
    with pytest.raises(ValueError, match="beta must be greater than 0"):
        dpo_loss(logp, logp, logp, logp, beta=0.0)
    with pytest.raises(ValueError, match=r"must all be \(P,\)"):
        dpo_loss(logp, torch.zeros(2), logp, logp, beta=0.1)
