"""The megatron trainer backend on the tiny preset, over gloo on the CPU (the shim in megatron_cpu_shim.py).

One spawned process checks agreement with Hugging Face and the torch backend and that RL steps lower the
loss; two spawned ranks check tensor parallelism (2), pipeline parallelism (2) and data parallelism (2,
distributed optimizer) against the one-process numbers. Each scenario's numbers are saved and asserted here.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from tests.training.test_distributed import REWARDS, free_port, hand_built_groups

pytestmark = pytest.mark.slow
SETTINGS = dict(samples_per_problem=2, micro_batch_size=4, learning_rate=1e-3, max_grad_norm=1e6,
                gradient_steps_per_iteration=2, seed=0, trainer_backend="megatron", megatron_precision="fp32")
GPU_SMOKE = os.environ.get("MIRRORLAB_GPU_SMOKE") == "1"
# fp32 on a GPU (no TF32) and on the CPU differ in summation order only; the GPU smoke run allows for that.
CLOSE = 1e-4 if GPU_SMOKE else 1e-5
CHUNK_TOKENS = 5  # the output layer applied 5 positions at a time in the workers (2,048 in a run)


def start_rank(rank: int, world_size: int, port: int) -> None:
    """What torchrun sets up for a rank; the shim goes on before any Megatron code runs."""
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world_size), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port), OMP_NUM_THREADS="1")
    torch.set_num_threads(1)
    from tests.training import megatron_cpu_shim

    megatron_cpu_shim.apply()
    if megatron_cpu_shim.GPU_SMOKE:
        torch.cuda.set_device(rank)  # one GPU per rank, as torchrun's LOCAL_RANK gives the product code
    if world_size > 1:
        torch.distributed.init_process_group("nccl" if megatron_cpu_shim.GPU_SMOKE else "gloo")
    from training.megatron import logprobs

    logprobs.CHUNK_TOKENS = CHUNK_TOKENS  # every pass below crosses chunk boundaries


def trainer(model_dir: str, **overrides):
    from common.knobs import parse_config
    from training.config import RLConfig
    from training.megatron.trainer import MegatronTrainer
    from training.models.loading import load_model

    return MegatronTrainer(load_model(model_dir), parse_config(RLConfig, {**SETTINGS, **overrides}))


def the_batch(groups=None):
    from training.batch import build_policy_batch

    return build_policy_batch(groups or hand_built_groups(), 0, 1, None)


def all_groups(batch):
    """Loss weights that count every group of `batch`, on one rank."""
    from training.losses import GroupWeights

    return GroupWeights(torch.ones(batch.groups, dtype=torch.bool), batch.groups)


def megatron_first_step(megatron, batch, rewards) -> dict:
    """Loss share and Hugging Face-named gradients of one backward pass (no optimizer step)."""
    from training.megatron.state import gather_tensor_parallel
    from training.megatron.weights import ModelShape, megatron_to_hf

    ref_sequence, _ = megatron._logprobs(batch)
    megatron.ddp.zero_grad_buffer()
    shares = megatron._run(batch, ref_sequence, rewards, all_groups(batch))
    grads = {name: p.main_grad.detach().cpu() for name, p in megatron.gpt.named_parameters()}
    grads = megatron_to_hf(gather_tensor_parallel(grads, megatron.layout),
                           ModelShape.from_hf_config(megatron.model.config))
    return {"loss": sum(shares), "grads": grads}


def full_logits_logprobs(logits: torch.Tensor, input_ids: torch.Tensor, vocab_size: int,
                         temperature: float) -> torch.Tensor:
    """The reference: (N, T, V/tp) this rank's whole logits -> (N, T-1) log-probs by Megatron's own
    vocab_parallel_cross_entropy, padding entries set to -inf."""
    from megatron.core import parallel_state
    from megatron.core.tensor_parallel import vocab_parallel_cross_entropy

    shifted = logits[:, :-1].float() / temperature
    partition = shifted.shape[-1]
    first = parallel_state.get_tensor_model_parallel_rank() * partition
    padding_from = max(0, min(partition, vocab_size - first))
    shifted = torch.cat([shifted[..., :padding_from], torch.full_like(shifted[..., padding_from:], float("-inf"))], -1)
    return -vocab_parallel_cross_entropy(shifted.contiguous(), input_ids[:, 1:].contiguous())


def chunked_against_full(megatron, batch, temperature: float = 0.7) -> dict:
    """Token log-probs, and the gradients of a weighted sum of them, through the output layer in chunks
    (the product's path) and through the whole logits, on this rank."""
    from training.megatron.logprobs import token_logprobs
    from training.megatron.model import causal_inputs

    ids = batch.input_ids.to(megatron.device)
    weights = torch.linspace(-1.0, 2.0, ids.shape[0] * (ids.shape[1] - 1)).view(ids.shape[0], -1)
    paths = {"chunked": lambda: token_logprobs(megatron.gpt, ids, megatron.vocab_size, temperature),
             "full": lambda: full_logits_logprobs(megatron.gpt(ids, *causal_inputs(ids)), ids, megatron.vocab_size,
                                                  temperature)}
    results = {}
    for name, path in paths.items():
        megatron.ddp.zero_grad_buffer()
        values = path()
        (values * weights.to(values.device)).sum().backward()
        results[name] = {"values": values.detach().cpu(), "grads": {
            parameter_name: parameter.main_grad.detach().cpu().clone()
            for parameter_name, parameter in megatron.gpt.named_parameters()}}
    megatron.ddp.zero_grad_buffer()
    return results


def torch_trainer(model_dir: str):
    from common.knobs import parse_config
    from training.config import RLConfig
    from training.models.loading import load_model
    from training.trainer.torch_trainer import TorchTrainer

    return TorchTrainer(load_model(model_dir), parse_config(RLConfig, {**SETTINGS, "trainer_backend": "torch"}),
                        torch.device("cpu"))


def torch_first_step(model_dir: str, batch, rewards) -> dict:
    trainer_ = torch_trainer(model_dir)
    ref_sequence, _ = trainer_.reference_logprobs(batch)
    trainer_.model.train()
    loss = trainer_._backward_step(batch, ref_sequence, rewards, all_groups(batch))
    return {"loss": loss, "grads": {n: p.grad.clone() for n, p in trainer_.model.named_parameters()}}


def counted_update(megatron, batch) -> tuple[dict, list[bool]]:
    """An update's metrics and, per pass of Megatron's schedule it ran, whether the pass was forward-only."""
    passes, run = [], megatron._run

    def counting_run(*args, **kwargs):
        passes.append(kwargs.get("forward_only", False))
        return run(*args, **kwargs)

    megatron._run = counting_run
    return megatron.update(batch, REWARDS), passes


def single_rank_worker(rank: int, port: int, model_dir: str, out_dir: str) -> None:
    start_rank(rank, 1, port)
    from training.megatron.logprobs import token_logprobs
    from training.models.loading import load_model
    from training.trainer.logprobs import token_logprobs as hf_token_logprobs

    batch, results = the_batch(), {}
    megatron = trainer(model_dir)
    hf = load_model(model_dir).eval()
    input_ids, on_device = batch.input_ids, batch.input_ids.to(megatron.device)
    with torch.no_grad():
        results["hf_logprobs"] = hf_token_logprobs(hf, input_ids, torch.ones_like(input_ids))
        results["megatron_logprobs"] = token_logprobs(megatron.gpt.eval(), on_device, hf.config.vocab_size).cpu()
        results["hf_logits"] = hf(input_ids=input_ids).logits
        from training.megatron.model import causal_inputs
        results["megatron_logits"] = megatron.gpt(on_device, *causal_inputs(on_device)).cpu()
        # the trainer at the sampling temperature 0.7 (config.temperature) against Hugging Face's softmax(z / 0.7)
        results["hf_logprobs_t07"] = hf_token_logprobs(hf, input_ids, torch.ones_like(input_ids), temperature=0.7)
    results["megatron_logprobs_t07"] = trainer(model_dir, temperature=0.7)._logprobs(batch)[1]
    results["chunks"] = chunked_against_full(megatron, batch)
    results["round_trip"] = megatron.hf_state_dict()
    results["hf_state"] = hf.state_dict()
    results["megatron_step"] = megatron_first_step(megatron, batch, REWARDS)
    results["torch_step"] = torch_first_step(model_dir, batch, REWARDS)
    results["update"], results["update_passes"] = counted_update(trainer(model_dir), batch)
    results["torch_update"] = torch_trainer(model_dir).update(batch, REWARDS)
    rest = trainer(model_dir, policy_loss="rest", gradient_steps_per_iteration=1)
    results["rest_losses"] = [rest.update(batch, REWARDS)["loss"] for _ in range(4)]
    results["offload"] = {precision: offload_round_trip(model_dir, batch, precision) for precision in ("fp32", "bf16")}
    results["bf16_reload"] = bf16_reload(model_dir, out_dir)
    torch.save(results, Path(out_dir) / "single.pt")


def bf16_reload(model_dir: str, out_dir: str) -> dict:
    """A bf16 trainer takes warm-up weights with fp32 detail: its main weights against the exact fp32 values, after
    reload_from_model (the warm-up ran in this process) and when built from them (a resume from the checkpoint)."""
    warm = trainer(model_dir, megatron_precision="bf16")
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():  # changes below bf16's resolution, as a warm-up's last steps make
        for parameter in warm.model.parameters():
            parameter.add_(1e-4 * torch.randn(parameter.shape, generator=generator))
    warm.reload_from_model()
    warm.model.save_pretrained(Path(out_dir) / "warm")
    resumed = trainer(str(Path(out_dir) / "warm"), megatron_precision="bf16")
    return {"reloaded": main_weights_exact(warm), "resumed": main_weights_exact(resumed)}


def main_weights_exact(megatron) -> dict:
    """Per weight: whether the optimizer's main copy, and the bf16 model weight, equal the Hugging Face value."""
    from training.megatron.model import load_hf_state_dict

    exact = load_hf_state_dict(megatron.gpt, megatron.model.state_dict(), megatron.model.config,
                               megatron.layout)  # idempotent
    names = {id(parameter): name.removeprefix("module.") for name, parameter in megatron.ddp.named_parameters()}
    pairs = []
    for inner in getattr(megatron.optimizer, "chained_optimizers", [megatron.optimizer]):
        for model_group, main_group in zip(inner.model_float16_groups, inner.shard_fp32_from_float16_groups):
            for model_parameter, main in zip(model_group, main_group):
                expected = exact[names[id(model_parameter)]].float().view(-1)
                pairs.append((torch.equal(main.detach().cpu().view(-1), expected),
                              torch.equal(model_parameter.detach().cpu().float().view(-1), expected)))
    return {"main_exact": [main for main, _ in pairs], "model_exact": [model for _, model in pairs]}


def offload_round_trip(model_dir: str, batch, precision: str) -> dict:
    """Two updates with the trainer's memory offloaded and onloaded between them, and two without."""
    settings = dict(megatron_precision=precision, gradient_steps_per_iteration=1)
    offloaded, kept = trainer(model_dir, **settings), trainer(model_dir, **settings)
    from training.megatron.memory import ddp_buffers, separate_main_weights

    result = {"held": offloaded.memory.device_bytes(), "offloaded_updates": [offloaded.update(batch, REWARDS)],
              "main_copies": len(separate_main_weights(offloaded.optimizer, ddp_buffers(offloaded.ddp)))}
    before = offloaded.rank_state()
    offloaded.offload_to_cpu()
    result["held_offloaded"] = offloaded.memory.device_bytes()
    while_offloaded = offloaded.rank_state()  # a checkpoint while vLLM holds the devices: read from the host
    result["rank_state_offloaded"] = (before is None and while_offloaded is None and offloaded.memory.offloaded) or (
        offloaded.memory.offloaded and all(torch.equal(a, b) for a, b in zip(before["main_weights"],
                                                                              while_offloaded["main_weights"])))
    offloaded.onload()
    result["offloaded_updates"].append(offloaded.update(batch, REWARDS))
    result["kept_updates"] = [kept.update(batch, REWARDS) for _ in range(2)]
    result["offloaded_state"], result["kept_state"] = offloaded.hf_state_dict(), kept.hf_state_dict()
    return result


def two_rank_worker(rank: int, port: int, model_dir: str, out_dir: str) -> None:
    start_rank(rank, 2, port)
    batch, results = the_batch(), {}
    tensor_parallel = trainer(model_dir, tensor_parallel_size=2)
    results["tp_layout"] = tensor_parallel.layout
    results["tp_step"] = megatron_first_step(tensor_parallel, batch, REWARDS)
    results["tp_chunks"] = chunked_against_full(tensor_parallel, batch)
    results["tp_update"] = trainer(model_dir, tensor_parallel_size=2).update(batch, REWARDS)
    results["pp_update"] = trainer(model_dir, pipeline_parallel_size=2).update(batch, REWARDS)
    data_parallel = trainer(model_dir)
    mine = slice(0, 2) if rank == 0 else slice(2, 4)
    results["dp_layout"] = data_parallel.layout
    results["dp_update"] = data_parallel.update(the_batch(hand_built_groups()[mine]), REWARDS[mine])
    results["dp_state"] = data_parallel.hf_state_dict()
    torch.save(results, Path(out_dir) / f"rank{rank}.pt")


@pytest.fixture(scope="module")
def single(tiny_model_dir, tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("megatron-single")
    torch.multiprocessing.spawn(single_rank_worker, args=(free_port(), str(tiny_model_dir), str(folder)), nprocs=1)
    return torch.load(folder / "single.pt", weights_only=False)


@pytest.fixture(scope="module")
def two_ranks(tiny_model_dir, tmp_path_factory) -> list[dict]:
    if GPU_SMOKE and torch.cuda.device_count() < 2:
        pytest.skip(f"two ranks need two GPUs under NCCL; this host has {torch.cuda.device_count()}")
    folder = tmp_path_factory.mktemp("megatron-two")
    torch.multiprocessing.spawn(two_rank_worker, args=(free_port(), str(tiny_model_dir), str(folder)), nprocs=2)
    return [torch.load(folder / f"rank{rank}.pt", weights_only=False) for rank in range(2)]


def assert_gradients_close(got: dict, expected: dict, relative: float) -> None:
    assert got.keys() == expected.keys()
    for name, gradient in expected.items():
        gap = float((got[name] - gradient).abs().max())
        assert gap <= relative * float(gradient.abs().max()) + 1e-9, f"gradient of {name} off by {gap}"


def test_megatron_logits_and_logprobs_match_hugging_face_through_the_mapping(single):
    assert float((single["megatron_logits"] - single["hf_logits"]).abs().max()) < CLOSE
    assert float((single["megatron_logprobs"] - single["hf_logprobs"]).abs().max()) < CLOSE


def test_the_megatron_trainer_scores_tokens_at_the_sampling_temperature(single):
    mask = the_batch().loss_mask.bool()  # response tokens: where the loss and the sampler KL read them
    tempered, plain = single["megatron_logprobs_t07"][mask], single["hf_logprobs"][mask]
    assert float((tempered - single["hf_logprobs_t07"][mask]).abs().max()) < CLOSE
    assert float((tempered - plain).abs().max()) > 1e-2  # T = 0.7 is not T = 1: the check has teeth


def assert_chunks_equal_full(chunks: dict) -> None:
    chunked, full = chunks["chunked"], chunks["full"]
    assert float((chunked["values"] - full["values"]).abs().max()) < CLOSE
    assert_gradients_close(chunked["grads"], full["grads"], 10 * CLOSE)
    assert any(float(grad.abs().max()) > 0 for grad in full["grads"].values())


def test_log_probs_in_chunks_of_the_output_layer_equal_the_whole_logits_in_value_and_gradient(single):
    assert_chunks_equal_full(single["chunks"])


def test_with_tensor_parallelism_the_chunks_reduce_over_the_vocabulary_shards(two_ranks):
    for rank in two_ranks:  # each rank's own shard of every gradient, the output layer's and the embedding's too
        assert_chunks_equal_full(rank["tp_chunks"])
    first, second = (rank["tp_chunks"]["chunked"]["values"] for rank in two_ranks)
    assert torch.equal(first, second)  # both ranks see the whole distribution, not their half of it


def test_the_state_dict_out_is_the_hugging_face_one_exactly(single):
    assert single["round_trip"].keys() == single["hf_state"].keys()
    for name, tensor in single["hf_state"].items():
        assert torch.equal(single["round_trip"][name], tensor), name


def test_torch_and_megatron_backends_give_the_same_loss_and_gradients(single):
    assert single["megatron_step"]["loss"] == pytest.approx(single["torch_step"]["loss"], rel=CLOSE)
    assert_gradients_close(single["megatron_step"]["grads"], single["torch_step"]["grads"], 10 * CLOSE)


def test_rl_steps_on_the_megatron_backend_lower_the_loss(single):
    update = single["update"]
    assert update["loss"] < 0.5 * update["first_step_loss"] and update["kl"] > 0  # two mirror-descent steps
    losses = single["rest_losses"]  # ReST: the best responses' NLL falls iteration after iteration
    assert all(later < earlier for earlier, later in zip(losses, losses[1:])), losses


def test_an_update_takes_its_reference_from_the_first_gradient_step_and_matches_the_torch_trainer(single):
    # two gradient steps, then one forward-only pass for the KL of the updated policy: no reference pass
    assert single["update_passes"] == [False, False, True]
    for metric in ("loss", "first_step_loss", "grad_norm", "kl", "sampler_kl"):
        assert single["update"][metric] == pytest.approx(single["torch_update"][metric], rel=10 * CLOSE), metric


def test_tensor_parallel_two_gives_the_same_loss_and_gradients_as_one(single, two_ranks):
    assert two_ranks[0]["tp_layout"].tensor_parallel_size == 2
    for rank in two_ranks:
        assert rank["tp_step"]["loss"] == pytest.approx(single["megatron_step"]["loss"], rel=1e-5)
        assert_gradients_close(rank["tp_step"]["grads"], single["megatron_step"]["grads"], 1e-4)
        for metric in ("loss", "first_step_loss", "grad_norm", "kl", "sampler_kl"):
            assert rank["tp_update"][metric] == pytest.approx(single["update"][metric], rel=1e-4), metric


def test_pipeline_parallel_two_gives_the_same_update_as_one_stage(single, two_ranks):
    for rank in two_ranks:
        for metric in ("loss", "first_step_loss", "grad_norm", "kl", "sampler_kl"):
            assert rank["pp_update"][metric] == pytest.approx(single["update"][metric], rel=1e-4), metric


def test_two_data_parallel_ranks_with_the_distributed_optimizer_match_one_and_stay_equal(single, two_ranks):
    assert two_ranks[0]["dp_layout"].data_parallel_size == 2
    main, other = two_ranks
    for metric in ("loss", "first_step_loss", "grad_norm", "kl", "sampler_kl"):
        assert main["dp_update"][metric] == pytest.approx(single["update"][metric], rel=1e-4), metric
        assert other["dp_update"][metric] == main["dp_update"][metric]
    for name, tensor in main["dp_state"].items():
        assert torch.equal(tensor, other["dp_state"][name]), f"ranks' {name} differ"


@pytest.mark.parametrize("how", ["reloaded", "resumed"])
def test_a_bf16_trainer_keeps_the_warm_up_weights_exact_in_its_fp32_main_weights(single, how):
    """Reloaded after a warm-up in process, or built from the warm-up's checkpoint as a resume is."""
    result = single["bf16_reload"][how]
    assert result["main_exact"] and all(result["main_exact"])  # every main weight equals the fp32 warm-up weight
    assert not all(result["model_exact"])  # while the bf16 model weights are rounded


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_offloading_the_trainer_frees_its_buffers_and_changes_no_update(single, precision):
    result = single["offload"][precision]
    assert result["held"] > 0 and result["held_offloaded"] == 0  # weights, gradients, main weights all let go
    assert result["rank_state_offloaded"]  # the main weights read offloaded, without onloading the trainer
    assert (result["main_copies"] > 0) == (precision == "bf16")  # fp32 main weights in bf16, views in fp32
    for offloaded, kept in zip(result["offloaded_updates"], result["kept_updates"]):
        for metric in ("loss", "first_step_loss", "grad_norm", "kl", "sampler_kl"):
            assert offloaded[metric] == kept[metric], metric
    assert result["offloaded_updates"][1]["grad_norm"] != result["offloaded_updates"][0]["grad_norm"]  # it moved
    for name, tensor in result["kept_state"].items():
        assert torch.equal(result["offloaded_state"][name], tensor), name
