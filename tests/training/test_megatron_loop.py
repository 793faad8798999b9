"""The whole RL loop on trainer_backend megatron (one process, gloo on the CPU through the test shim)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.training.test_distributed import free_port
from tests.training.test_megatron_backend import start_rank

pytestmark = pytest.mark.slow


def loop_worker(rank: int, port: int, model_dir: str, out_dir: str) -> None:
    start_rank(rank, 1, port)
    from common.knobs import parse_config
    from training import loop, session
    from training.config import RLConfig
    from training.tasks.arithmetic import generate
    from training.types import PromptRecord, RunPaths, TrainingHooks

    config = parse_config(RLConfig, {
        "model": model_dir, "trainer_backend": "megatron", "iterations": 2, "batch_size": 2,
        "samples_per_problem": 2, "max_response_tokens": 8, "warmup_sft_steps": 3, "warmup_sft_batch_size": 2,
        "warmup_sft_sequence_length": 64, "warmup_sft_learning_rate": 1e-2, "checkpoint_every_iterations": 1,
        "stored_samples_per_iteration": 0})
    warm = {}
    original_warmup = session.run_warmup

    def watched_warmup(run_session, hooks):  # after the warm-up the Megatron weights must be the warmed-up ones
        original_warmup(run_session, hooks)
        warm["hf"] = {name: value.clone() for name, value in run_session.model.state_dict().items()}
        warm["megatron"] = run_session.trainer.hf_state_dict()
        warm["dtype"] = next(run_session.trainer.gpt.parameters()).dtype

    session.run_warmup = watched_warmup
    reports, checkpoints = [], []
    hooks = TrainingHooks(on_iteration=reports.append, on_checkpoint=checkpoints.append)
    paths = RunPaths(output_dir=Path(out_dir) / "run", models_dir=Path(out_dir) / "models")
    records = [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer, difficulty=p.difficulty)
               for p in generate(16, seed=0)]
    outcome = loop.run(config, records, paths, hooks)
    torch.save({"outcome": outcome, "reports": reports, "checkpoints": [c.iteration for c in checkpoints],
                "warm": warm, "megatron_dtype": warm["dtype"]}, Path(out_dir) / "loop.pt")


def test_the_rl_loop_trains_on_megatron_with_the_warmed_up_weights(tiny_model_dir, tmp_path):
    torch.multiprocessing.spawn(loop_worker, args=(free_port(), str(tiny_model_dir), str(tmp_path)), nprocs=1)
    result = torch.load(tmp_path / "loop.pt", weights_only=False)
    assert result["outcome"].iterations_done == 2 and not result["outcome"].stopped_early
    assert [report.iteration for report in result["reports"]] == [1, 2]
    assert all(report.loss is not None for report in result["reports"])
    assert result["checkpoints"] == [0, 1, 2]
    warm_hf, warm_megatron = result["warm"]["hf"], result["warm"]["megatron"]
    from training.models.loading import load_model

    untouched = load_model(str(tiny_model_dir)).state_dict()
    assert set(warm_megatron) == set(warm_hf)
    for name, value in warm_megatron.items():
        # equal in fp32 (the CPU run); on a GPU the bf16 parameters are the warm weights rounded to bf16, while
        # those Megatron keeps in fp32 (the final norm's weight) are the warm weights themselves
        warm = warm_hf[name]
        assert torch.equal(value, warm) or torch.equal(value, warm.to(result["megatron_dtype"]).to(value.dtype)), name
    assert any(not torch.equal(warm_hf[name], untouched[name]) for name in warm_hf)  # the warm-up changed them


class Killed(Exception):
    pass


def resume_worker(rank: int, port: int, model_dir: str, out_dir: str) -> None:
    """bf16 Megatron: 3 iterations straight, and killed after iteration 2 (checkpoint 1 kept) then resumed."""
    start_rank(rank, 1, port)
    from common.knobs import parse_config
    from training import loop
    from training.checkpoint import RANK_STATE_DIR, checkpoint_dir
    from training.config import RLConfig
    from training.models.loading import load_model
    from training.tasks.arithmetic import generate
    from training.types import PromptRecord, RunPaths, TrainingHooks

    config = parse_config(RLConfig, {
        "model": model_dir, "trainer_backend": "megatron", "megatron_precision": "bf16", "iterations": 3,
        "batch_size": 2, "samples_per_problem": 4, "max_response_tokens": 24, "learning_rate": 1e-5,
        "length_penalty_weight": 1.0, "length_penalty_warmup_iterations": 0,  # rewards differ: gradients
        "checkpoint_every_iterations": 1, "stored_samples_per_iteration": 0, "seed": 5})
    records = [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer) for p in generate(16, seed=1)]
    runs = {name: Path(out_dir) / name for name in ("straight", "killed")}

    def train(folder: Path, kill_after: int | None = None) -> dict:
        metrics = {}

        def on_iteration(report):
            metrics[report.iteration] = (report.loss, report.kl, report.train_accuracy)
            if report.iteration == kill_after:
                raise Killed()

        try:
            loop.run(config, records, RunPaths(folder, Path(out_dir) / "models"),
                     TrainingHooks(on_iteration=on_iteration))
        except Killed:
            pass
        return metrics

    straight, killed = train(runs["straight"]), train(runs["killed"], kill_after=2)
    resumed = train(runs["killed"])
    final = {name: load_model(str(checkpoint_dir(folder, 3))).state_dict() for name, folder in runs.items()}
    torch.save({"straight": straight, "killed": killed, "resumed": resumed,
                "same_weights": all(torch.equal(final["straight"][key], final["killed"][key])
                                    for key in final["straight"]),
                "rank_state": sorted(p.name for p in (checkpoint_dir(runs["straight"], 1) / RANK_STATE_DIR).glob("*"))},
               Path(out_dir) / "resume.pt")


def test_a_bf16_megatron_run_resumes_exactly_with_its_fp32_main_weights(warm_model_dir, tmp_path):
    """The checkpoint's weights are the bf16-rounded ones; each rank's fp32 main weights go beside them, so the
    resumed run trains on as the uninterrupted one did (a resume from the rounded weights alone diverged)."""
    torch.multiprocessing.spawn(resume_worker, args=(free_port(), str(warm_model_dir), str(tmp_path)), nprocs=1)
    result = torch.load(tmp_path / "resume.pt", weights_only=False)
    assert result["rank_state"] == ["rank-0.pt"]
    assert sorted(result["killed"]) == [1, 2] and sorted(result["resumed"]) == [2, 3]
    assert {**result["killed"], **result["resumed"]} == result["straight"]
    assert result["same_weights"]
