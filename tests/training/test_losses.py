"""Policy losses of METHOD.md section 3: gradients against equation 3, hand values, masks."""

import math

import pytest
import torch

from common.registry import UnknownEntry
from training.losses import (compute_policy_loss, log_z_baseline, mirror_descent_loss, policy_losses,
                             rest_loss, token_kl)

G, K, T, V, D = 2, 4, 3, 5, 6  # groups, responses per group, tokens per response, vocabulary, features


def tiny_model():
    """A log-linear 'policy': token logits = context features @ theta; logp = sum of T token log-probs."""
    generator = torch.Generator().manual_seed(0)
    features = torch.randn(G, K, T, D, dtype=torch.float64, generator=generator)
    tokens = torch.randint(0, V, (G, K, T, 1), generator=generator)
    theta_ref = torch.randn(D, V, dtype=torch.float64, generator=generator)
    perturbation = 0.3 * torch.randn(D, V, dtype=torch.float64, generator=generator)
    theta = (theta_ref + perturbation).requires_grad_(True)

    def sequence_logp(parameters):
        token_logp = torch.log_softmax(features @ parameters, dim=-1).gather(-1, tokens).squeeze(-1)
        return token_logp.sum(-1)  # (G, K)

    return theta, theta_ref, sequence_logp


REWARDS = torch.tensor([[1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 1.0, 0.5]], dtype=torch.float64)


def equation_3_gradient(theta, logp, ref_logp, rewards, valid, baseline, tau):
    """-(1/G) sum_g (1/k_g) sum_j [grad logp_j (r_j - b_g) - tau/2 grad (logp_j - ref_logp_j)^2]."""
    total = torch.zeros_like(theta)
    groups = [g for g in range(logp.shape[0]) if valid[g].any()]
    for g in groups:
        k = int(valid[g].sum())
        for j in range(logp.shape[1]):
            if not valid[g, j]:
                continue
            (grad_logp,) = torch.autograd.grad(logp[g, j], theta, retain_graph=True)
            squared = (logp[g, j] - ref_logp[g, j]) ** 2
            (grad_squared,) = torch.autograd.grad(squared, theta, retain_graph=True)
            total += (grad_logp * (rewards[g, j] - baseline[g, 0]) - tau / 2 * grad_squared) / k
    return -total / len(groups)


@pytest.mark.parametrize("estimate", ["mean_reward", "log_mean_exp"])
@pytest.mark.parametrize("valid_last", [True, False])
def test_the_mirror_descent_gradient_is_minus_equation_3(estimate, valid_last):
    theta, theta_ref, sequence_logp = tiny_model()
    logp = sequence_logp(theta)
    with torch.no_grad():
        ref_logp = sequence_logp(theta_ref)
    assert not torch.allclose(logp.detach(), ref_logp)
    valid = torch.ones(G, K, dtype=torch.bool)
    valid[1, 3] = valid_last
    tau = 0.3
    loss, _ = mirror_descent_loss(logp, ref_logp, REWARDS, valid, tau, estimate)
    (gradient,) = torch.autograd.grad(loss, theta, retain_graph=True)
    baseline = log_z_baseline(REWARDS, valid, tau, estimate)
    expected = equation_3_gradient(theta, logp, ref_logp, REWARDS, valid, baseline, tau)
    assert torch.allclose(gradient, expected, rtol=1e-6, atol=1e-10)


def test_at_the_reference_the_gradient_is_the_policy_gradient_with_a_baseline():
    theta, theta_ref, sequence_logp = tiny_model()
    theta = theta_ref.clone().requires_grad_(True)
    logp = sequence_logp(theta)
    ref_logp = logp.detach().clone()
    valid = torch.ones(G, K, dtype=torch.bool)
    loss, metrics = mirror_descent_loss(logp, ref_logp, REWARDS, valid, tau=0.5)
    (gradient,) = torch.autograd.grad(loss, theta, retain_graph=True)
    baseline = REWARDS.mean(dim=1)
    expected = torch.zeros_like(theta)
    for g in range(G):
        for j in range(K):
            (grad_logp,) = torch.autograd.grad(logp[g, j], theta, retain_graph=True)
            expected -= grad_logp * (REWARDS[g, j] - baseline[g]) / (G * K)
    assert torch.allclose(gradient, expected, rtol=1e-6, atol=1e-10)
    assert metrics["log_ratio_mean"] == 0.0


def test_the_mirror_descent_loss_matches_a_hand_value():
    logp = torch.tensor([[-1.0, -2.0, -3.0]], dtype=torch.float64, requires_grad=True)
    ref_logp = torch.tensor([[-1.5, -2.0, -2.0]], dtype=torch.float64)
    rewards = torch.tensor([[1.0, 0.0, 1.0]], dtype=torch.float64)
    loss, metrics = mirror_descent_loss(logp, ref_logp, rewards, torch.ones(1, 3, dtype=torch.bool), tau=0.5)
    # b = 2/3; log ratios [0.5, 0, -1]; residuals r - b - 0.5 * ratio = [1/12, -2/3, 5/6]
    mean_square = ((1 / 12) ** 2 + (2 / 3) ** 2 + (5 / 6) ** 2) / 3
    assert loss.item() == pytest.approx(mean_square / (2 * 0.5))
    assert metrics["loss"] == pytest.approx(mean_square)
    assert metrics["mean_reward"] == pytest.approx(2 / 3)
    assert metrics["baseline"] == pytest.approx(2 / 3)
    assert metrics["log_ratio_mean"] == pytest.approx(-1 / 6)


def test_the_log_mean_exp_baseline_matches_a_hand_value():
    rewards = torch.tensor([[0.0, 1.0]], dtype=torch.float64)
    baseline = log_z_baseline(rewards, torch.ones(1, 2, dtype=torch.bool), tau=0.5, estimate="log_mean_exp")
    assert baseline.shape == (1, 1)
    assert baseline.item() == pytest.approx(0.5 * math.log((1 + math.e ** 2) / 2))


def test_the_log_mean_exp_baseline_tends_to_the_max_then_the_mean():
    rewards = torch.tensor([[0.0, 1.0, 0.0, 0.0]], dtype=torch.float64)
    valid = torch.ones(1, 4, dtype=torch.bool)
    small = log_z_baseline(rewards, valid, tau=1e-3, estimate="log_mean_exp").item()
    large = log_z_baseline(rewards, valid, tau=1e4, estimate="log_mean_exp").item()
    assert small == pytest.approx(1.0 - 1e-3 * math.log(4))  # stable: no overflow at r / tau = 1000
    assert small == pytest.approx(1.0, abs=2e-3)
    assert large == pytest.approx(0.25, abs=1e-4)


def test_the_baselines_skip_invalid_entries_and_are_detached():
    rewards = torch.tensor([[1.0, 0.0, 100.0]], requires_grad=True)
    valid = torch.tensor([[True, True, False]])
    for estimate in ("mean_reward", "log_mean_exp"):
        baseline = log_z_baseline(rewards, valid, tau=1.0, estimate=estimate)
        assert not baseline.requires_grad
    assert log_z_baseline(rewards, valid, 1.0, "mean_reward").item() == pytest.approx(0.5)
    assert log_z_baseline(rewards, valid, 1.0, "log_mean_exp").item() == pytest.approx(math.log((math.e + 1) / 2))


def test_an_unknown_log_z_estimate_is_refused():
    with pytest.raises(ValueError, match="log_z_estimate"):
        log_z_baseline(torch.zeros(1, 2), torch.ones(1, 2, dtype=torch.bool), 0.1, "median")


def test_an_invalid_entry_changes_nothing_versus_removing_it():
    theta, theta_ref, sequence_logp = tiny_model()
    logp = sequence_logp(theta)
    with torch.no_grad():
        ref_logp = sequence_logp(theta_ref)
    valid = torch.tensor([[True] * 4, [True, True, True, False]])
    rewards = REWARDS.clone()
    rewards[1, 3] = float("nan")  # an absent entry may hold anything
    loss, metrics = mirror_descent_loss(logp, ref_logp, rewards, valid, 0.2, "log_mean_exp")
    (gradient,) = torch.autograd.grad(loss, theta, retain_graph=True)
    full = torch.ones(1, 4, dtype=torch.bool)
    loss_a, _ = mirror_descent_loss(logp[:1], ref_logp[:1], REWARDS[:1], full, 0.2, "log_mean_exp")
    loss_b, _ = mirror_descent_loss(logp[1:, :3], ref_logp[1:, :3], REWARDS[1:, :3], full[:, :3], 0.2,
                                    "log_mean_exp")
    (expected,) = torch.autograd.grad((loss_a + loss_b) / 2, theta)
    assert torch.allclose(loss, (loss_a + loss_b) / 2)
    assert torch.allclose(gradient, expected)
    assert metrics["mean_reward"] == pytest.approx(3 / 7)


def test_a_group_with_no_valid_response_is_left_out_of_the_mean():
    logp = torch.tensor([[-1.0, -2.0], [-3.0, -4.0]], requires_grad=True)
    rewards = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    valid = torch.tensor([[True, True], [False, False]])
    loss, _ = mirror_descent_loss(logp, logp.detach(), rewards, valid, tau=1.0)
    # only group 0: residuals [0.5, -0.5] -> mean square 0.25, / (2 tau)
    assert loss.item() == pytest.approx(0.125)
    loss.backward()
    assert torch.equal(logp.grad[1], torch.zeros(2))
    empty, _ = mirror_descent_loss(logp, logp.detach(), rewards, torch.zeros(2, 2, dtype=torch.bool), 1.0)
    assert empty.item() == 0.0 and empty.requires_grad


REST_LOGP = [[-2.0, -1.0, -3.0], [-4.0, -5.0, -6.0], [-6.0, -8.0, -9.0]]
REST_TOKENS = torch.tensor([[2, 4, 5], [1, 1, 1], [3, 2, 2]])


def test_rest_fits_the_first_best_response_and_ignores_groups_with_no_reward():
    logp = torch.tensor(REST_LOGP, requires_grad=True)
    rewards = torch.tensor([[0.0, 1.0, 1.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    loss, metrics = rest_loss(logp, REST_TOKENS, rewards, torch.ones(3, 3, dtype=torch.bool))
    # group 0: first best is j=1 -> 1/4; group 1 is all zero; group 2: j=0 -> 6/3
    assert loss.item() == pytest.approx((0.25 + 2.0) / 2)
    assert metrics["groups_used"] == 2.0
    loss.backward()
    expected = torch.zeros(3, 3)
    expected[0, 1], expected[2, 0] = -1 / (4 * 2), -1 / (3 * 2)
    assert torch.allclose(logp.grad, expected)


def test_rest_never_picks_an_invalid_response():
    logp = torch.tensor(REST_LOGP, requires_grad=True)
    rewards = torch.tensor([[0.0, 1.0, 0.5], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    valid = torch.tensor([[True, False, True], [False, True, True], [True, True, True]])
    loss, metrics = rest_loss(logp, REST_TOKENS, rewards, valid)
    assert loss.item() == pytest.approx(3.0 / 5)  # only group 0, through j=2
    assert metrics["groups_used"] == 1.0


def test_rest_with_no_rewarded_group_is_a_zero_loss_that_keeps_the_graph():
    logp = torch.tensor(REST_LOGP, requires_grad=True)
    loss, _ = rest_loss(logp, REST_TOKENS, torch.zeros(3, 3), torch.ones(3, 3, dtype=torch.bool))
    loss.backward()
    assert loss.item() == 0.0 and torch.equal(logp.grad, torch.zeros(3, 3))


def test_the_dispatcher_calls_the_named_loss_with_its_arguments():
    logp = torch.tensor(REST_LOGP, requires_grad=True)
    rewards = torch.tensor([[0.0, 1.0, 1.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    arguments = dict(logp=logp, ref_logp=logp.detach(), rewards=rewards, valid=torch.ones(3, 3, dtype=torch.bool),
                     token_counts=REST_TOKENS, tau=0.1, log_z_estimate="mean_reward")
    rest, _ = compute_policy_loss("rest", **arguments)
    assert rest.item() == pytest.approx(1.125)
    mirror, metrics = compute_policy_loss("mirror_descent", **arguments)
    assert set(metrics) == {"loss", "mean_reward", "baseline", "log_ratio_mean"}
    assert policy_losses.names() == ["mirror_descent", "rest"]
    with pytest.raises(UnknownEntry, match="ppo"):
        compute_policy_loss("ppo", **arguments)


def test_token_kl_is_zero_when_the_policies_agree():
    logp = torch.randn(2, 5)
    assert token_kl(logp, logp.clone(), torch.ones(2, 5, dtype=torch.bool)) == 0.0


def test_token_kl_matches_a_hand_value_over_masked_tokens():
    logp = torch.tensor([[-1.0, -2.0], [-0.5, -9.0]])
    ref = torch.tensor([[-2.0, -1.0], [-0.5, 0.0]])
    mask = torch.tensor([[True, True], [True, False]])
    # cur - ref = [1, -1, 0] -> e - 1 - 1, e^-1 + 1 - 1, 0
    expected = ((math.e - 1 - 1) + (math.exp(-1) + 1 - 1) + 0.0) / 3
    assert token_kl(logp, ref, mask) == pytest.approx(expected)
    assert token_kl(logp, ref, torch.zeros(2, 2, dtype=torch.bool)) == 0.0


def test_token_kl_grows_only_linearly_where_the_update_dropped_a_token():
    ref = torch.zeros(1, 1)
    collapsed = torch.full((1, 1), -50.0)  # the updated policy all but forbids a sampled token
    assert token_kl(collapsed, ref, torch.ones(1, 1, dtype=torch.bool)) == pytest.approx(49.0)


def test_rest_skips_a_best_response_whose_tokens_all_left_the_loss():
    """With segment exclusion the first correct response may have no token left in the loss: ReST fits the
    other correct one, which has some, rather than counting the group with nothing to learn."""
    logp = torch.tensor([[-3.0, -6.0]], requires_grad=True)
    token_counts, rewards, valid = torch.tensor([[0.0, 6.0]]), torch.tensor([[1.0, 1.0]]), torch.tensor([[True, True]])
    loss, metrics = rest_loss(logp, token_counts, rewards, valid)
    assert float(loss) == pytest.approx(1.0) and metrics["groups_used"] == 1.0
    loss.backward()
    assert logp.grad.tolist() == [[0.0, pytest.approx(-1 / 6)]]
    only_excluded = rest_loss(logp, torch.tensor([[0.0, 6.0]]), torch.tensor([[1.0, 0.0]]), valid)[1]
    assert only_excluded["groups_used"] == 0.0  # its only correct response has nothing to fit


@pytest.mark.parametrize("policy_loss", ["rest", "mirror_descent"])
def test_a_step_s_loss_and_gradient_do_not_depend_on_the_micro_batch_size(tiny_model_dir, policy_loss):
    """Two groups all wrong, two with a correct response: ReST averages over the two that count whichever
    micro-batches the groups fall into (before, a micro-batch holding all four halved their weight)."""
    from common.knobs import parse_config
    from training.batch import build_policy_batch
    from training.config import RLConfig
    from training.models.loading import load_model
    from training.trainer.torch_trainer import TorchTrainer
    from training.trajectories import Group, Trajectory

    generator = torch.Generator().manual_seed(0)
    groups = []
    for index in range(4):
        group = Group(index, 1, [Trajectory(prompt_ids=(1, 2, 3)) for _ in range(2)])
        for trajectory in group.trajectories:
            trajectory.extend(torch.randint(3, 200, (8 - index,), generator=generator).tolist(), 1)
            trajectory.finish_reason = "stop"
        groups.append(group)
    batch = build_policy_batch(groups, 0, 1, None)
    rewards = torch.tensor([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    results = []
    for micro_batch_size in (2, 4, 8):
        config = parse_config(RLConfig, {"policy_loss": policy_loss, "micro_batch_size": micro_batch_size,
                                         "pack_sequences": False, "max_grad_norm": 1e6})
        trainer = TorchTrainer(load_model(str(tiny_model_dir)), config, torch.device("cpu"))
        results.append(trainer.update(batch, rewards))
    for metrics in results[1:]:
        assert metrics["loss"] == pytest.approx(results[0]["loss"], rel=1e-5)
        assert metrics["grad_norm"] == pytest.approx(results[0]["grad_norm"], rel=1e-4)


def test_a_step_whose_gradient_is_not_finite_stops_the_update_with_the_weights_untouched(tiny_model_dir):
    """A NaN reward makes the loss and the gradient NaN: the trainer raises UpdateDiverged naming the step and the
    knob, and takes no step (an AdamW step would write NaN into every weight the checkpoint then saves)."""
    from common.knobs import parse_config
    from training.batch import build_policy_batch
    from training.config import RLConfig
    from training.models.loading import load_model
    from training.trainer.torch_trainer import TorchTrainer, UpdateDiverged
    from training.trajectories import Group, Trajectory

    group = Group(0, 1, [Trajectory(prompt_ids=(1, 2, 3)) for _ in range(2)])
    for trajectory in group.trajectories:
        trajectory.extend([5, 6, 7], 1)
        trajectory.finish_reason = "stop"
    trainer = TorchTrainer(load_model(str(tiny_model_dir)), parse_config(RLConfig, {}), torch.device("cpu"))
    before = {name: parameter.detach().clone() for name, parameter in trainer.model.named_parameters()}
    with pytest.raises(UpdateDiverged, match=r"gradient step 1 of the update: loss nan.*learning_rate"):
        trainer.update(build_policy_batch([group], 0, 1, None), torch.tensor([[float("nan"), 1.0]]))
    assert all(torch.equal(parameter, before[name]) for name, parameter in trainer.model.named_parameters())
