"""Data-parallel training: two gloo processes on the CPU match one process, and a 2-rank RL run works end to end."""

from __future__ import annotations

import dataclasses
import json
import os
import socket
from pathlib import Path

import pytest
import torch

from common.knobs import parse_config
from training.checkpoint import finish_counts_for_rank, replay_buffer_for_rank, replay_buffer_state
from training.config import RLConfig
from training.distributed import (
    SINGLE_PROCESS, all_gather_objects, all_reduce_mean, broadcast_from_main, init_from_environment, share_bounds,
)
from training.tasks.arithmetic import generate
from training.types import PromptRecord, RunPaths

WORLD_SIZE = 2
UPDATE_SETTINGS = dict(samples_per_problem=2, micro_batch_size=2, learning_rate=1e-3, max_grad_norm=1e6,
                       gradient_steps_per_iteration=2, seed=0)
# Groups held by rank 0 (rank 1 holds the rest) of the 4 hand-built groups.
SPLITS = {"equal": 2, "unequal": 3, "rank 1 empty": 4}
REWARDS = torch.tensor([[1.0, 0.0], [0.5, 0.0], [1.0, 0.2], [0.0, 1.0]])  # (G, k)
RUN_RECORDS = [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer, difficulty=p.difficulty)
               for p in generate(32, seed=3)]
RUN_SETTINGS = dict(iterations=2, batch_size=4, samples_per_problem=2, max_response_tokens=24, temperature=0.5,
                    partial_rollout_token_budget=8, checkpoint_every_iterations=10, learning_rate=1e-3,
                    length_penalty_weight=0.2, micro_batch_size=2, seed=4)
# With these settings (seen on torch 2.13, CPU) one rank answers correctly and the other not, so the
# whole-batch accuracy differs from either rank's; every iteration trains on a full batch while some
# groups stay parked, and the checkpoint holds parked groups of both ranks for the resume.


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def join_group(rank: int, port: int) -> None:
    """What torchrun sets up for a rank, then the code under test joins the gloo group."""
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(WORLD_SIZE),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
    torch.set_num_threads(1)
    context = init_from_environment()
    assert (context.rank, context.world_size, context.is_main) == (rank, WORLD_SIZE, rank == 0)


def spawn(worker, *args) -> None:
    """Run worker(rank, port, *args) in WORLD_SIZE fresh processes; a failure in one fails the test."""
    torch.multiprocessing.spawn(worker, args=(free_port(), *args), nprocs=WORLD_SIZE, join=True)


def hand_built_groups() -> list:
    """4 finished groups of 2 responses of fixed random tokens (the tiny vocabulary has 391).

    Prompts and responses vary in length, but every row is 16 tokens long: no rank pads differently
    from the single process, so the two compute the same numbers up to the order of sums.
    """
    from training.trajectories import Group, Trajectory

    generator = torch.Generator().manual_seed(11)
    groups = []
    for index in range(4):
        prompt = tuple(torch.randint(5, 380, (3 + index,), generator=generator).tolist())
        trajectories = []
        for _ in range(2):
            response = torch.randint(5, 380, (16 - len(prompt),), generator=generator).tolist()
            trajectories.append(Trajectory(prompt_ids=prompt, response_ids=response,
                                           token_iterations=[1] * len(response), finish_reason="stop",
                                           # about a uniform sampler's over the 391 tokens: a sampler KL to check
                                           sampler_logprobs=[-6.0] * len(response)))
        groups.append(Group(problem_index=index, started_iteration=1, trajectories=trajectories))
    return groups


def one_update(model_dir: str, groups, rewards: torch.Tensor) -> dict:
    """Parameters, last gradients and metrics after `TorchTrainer.update` on these groups (None: no groups)."""
    from training.batch import build_policy_batch
    from training.models.loading import load_model, load_tokenizer
    from training.trainer.torch_trainer import TorchTrainer

    tokenizer = load_tokenizer(model_dir)
    trainer = TorchTrainer(load_model(model_dir), parse_config(RLConfig, UPDATE_SETTINGS), torch.device("cpu"))
    batch = build_policy_batch(groups, tokenizer.pad_token_id, 1, None) if groups else None
    metrics = trainer.update(batch, rewards if groups else None)
    model = trainer.model
    return {"params": {name: p.detach().clone() for name, p in model.named_parameters()},
            "grads": {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None},
            "metrics": metrics}


def update_worker(rank: int, port: int, model_dir: str, out_dir: str) -> None:
    """One rank: an update on its part of the hand-built groups, for every split."""
    join_group(rank, port)
    from training.distributed import shutdown

    groups = hand_built_groups()
    results = {}
    for name, rank0_groups in SPLITS.items():
        mine = slice(0, rank0_groups) if rank == 0 else slice(rank0_groups, len(groups))
        results[name] = one_update(model_dir, groups[mine], REWARDS[mine])
    torch.save(results, Path(out_dir) / f"rank{rank}.pt")
    shutdown()


@pytest.mark.slow
def test_a_ddp_update_on_two_ranks_equals_one_process_on_the_whole_batch(tiny_model_dir, tmp_path):
    from training.models.loading import load_model

    single = one_update(str(tiny_model_dir), hand_built_groups(), REWARDS)
    spawn(update_worker, str(tiny_model_dir), str(tmp_path))
    ranks = [torch.load(tmp_path / f"rank{rank}.pt") for rank in range(WORLD_SIZE)]
    for name in SPLITS:
        main, other = ranks[0][name], ranks[1][name]
        for parameter, value in single["params"].items():
            assert torch.equal(main["params"][parameter], other["params"][parameter]), f"{name}: ranks differ"
            # Adam's first step is about lr * sign(gradient): rounding in near-zero gradients moves a few
            # weights by ~1e-6; the gradients themselves must agree relative to their largest entry.
            assert float((main["params"][parameter] - value).abs().max()) < 1e-5, f"{name}: {parameter}"
            gradient = single["grads"][parameter]
            gap = float((main["grads"][parameter] - gradient).abs().max())
            assert gap <= 1e-4 * float(gradient.abs().max()) + 1e-9, f"{name}: gradient of {parameter} off by {gap}"
        for metric in ("loss", "first_step_loss", "grad_norm", "kl", "sampler_kl"):
            assert main["metrics"][metric] == pytest.approx(single["metrics"][metric], rel=1e-5), f"{name}: {metric}"
            assert other["metrics"][metric] == main["metrics"][metric], f"{name}: {metric} differs between ranks"
    initial = load_model(str(tiny_model_dir)).state_dict()
    moved = max(float((value - initial[parameter]).abs().max()) for parameter, value in single["params"].items())
    assert moved > 1e-4, "the update should move the parameters"


def run_worker(rank: int, port: int, paths: RunPaths, model: str, out_dir: str) -> None:
    """A rank of a 2-rank RL run of 2 iterations, then resumed for a 3rd; records hooks, rollouts and checkpoints."""
    join_group(rank, port)
    import training.loop
    import training.session
    from training.distributed import shutdown
    from training.types import TrainingHooks

    events: list[dict] = []
    record = events.append
    score_groups, roll_out_iteration = training.loop.score_groups, training.loop.roll_out_iteration
    save_checkpoint = training.session.save_checkpoint

    def recording_score_groups(groups, *args):
        scored = score_groups(groups, *args)
        record({"event": "scored", "iteration": args[-2], "correct": scored.correct.flatten().tolist()})
        return scored

    def recording_roll_out_iteration(engine, buffer, *args, streams, **kwargs):
        record({"event": "continued", "iteration": streams.iteration, "groups": len(buffer)})
        return roll_out_iteration(engine, buffer, *args, streams=streams, **kwargs)

    def recording_save_checkpoint(output_dir, iteration, *args):
        record({"event": "save_checkpoint", "iteration": iteration})
        return save_checkpoint(output_dir, iteration, *args)

    training.loop.score_groups, training.loop.roll_out_iteration = recording_score_groups, recording_roll_out_iteration
    training.session.save_checkpoint = recording_save_checkpoint
    hooks = TrainingHooks(
        on_iteration=lambda report: record({"event": "iteration", **dataclasses.asdict(report)}),
        on_checkpoint=lambda report: record({"event": "checkpoint", "iteration": report.iteration}),
        log=lambda line: record({"event": "log", "line": line}),
    )
    for iterations in (2, 3):
        config = parse_config(RLConfig, {**RUN_SETTINGS, "iterations": iterations, "model": model})
        outcome = training.loop.run(config, RUN_RECORDS, paths, hooks)
        record({"event": "outcome", **dataclasses.asdict(outcome),
                "checkpoints": sorted(path.name for path in (paths.output_dir / "checkpoints").iterdir())})
    (Path(out_dir) / f"rank{rank}.json").write_text(json.dumps(events))
    shutdown()


@pytest.fixture(scope="module")
def two_rank_run(tiny_model_dir, warm_model_dir, tmp_path_factory) -> tuple[RunPaths, list[list[dict]]]:
    """The run's paths and each rank's events: a 2-iteration run, then the same run resumed up to iteration 3."""
    folder = tmp_path_factory.mktemp("two-rank-run")
    paths = RunPaths(output_dir=folder / "run", models_dir=folder / "models")
    spawn(run_worker, paths, str(warm_model_dir), str(folder))
    return paths, [json.loads((folder / f"rank{rank}.json").read_text()) for rank in range(WORLD_SIZE)]


def phase(rank_events: list[dict], number: int) -> list[dict]:
    """The events of the first (2 iterations) or second (resumed) run."""
    ends = [index for index, event in enumerate(rank_events) if event["event"] == "outcome"]
    return rank_events[ends[number - 2] + 1 if number > 1 else 0:ends[number - 1] + 1]


@pytest.mark.slow
def test_a_two_rank_run_checkpoints_once_and_reports_the_whole_batch(two_rank_run):
    paths, events = two_rank_run
    main, other = phase(events[0], 1), phase(events[1], 1)
    for rank_events in (main, other):
        assert {key: rank_events[-1][key] for key in ("iterations_done", "stopped_early", "checkpoints")} == \
            {"iterations_done": 2, "stopped_early": False, "checkpoints": ["iteration-000002"]}
    assert [e["iteration"] for e in main if e["event"] == "save_checkpoint"] == [2]  # written by the main rank
    assert [e for e in other if e["event"] == "save_checkpoint"] == []
    assert [e["iteration"] for e in main if e["event"] == "checkpoint"] == [2]
    assert [e for e in other if e["event"] in ("iteration", "checkpoint", "log")] == []  # hooks: main rank only
    reports = {e["iteration"]: e for e in main if e["event"] == "iteration"}
    assert sorted(reports) == [1, 2]
    for iteration, report in reports.items():
        by_rank = [[value for e in rank_events if e["event"] == "scored" and e["iteration"] == iteration
                    for value in e["correct"]] for rank_events in (main, other)]
        correct = by_rank[0] + by_rank[1]
        if not correct:  # every group still parked: nothing to train on, on either rank
            assert report["train_accuracy"] is None and report["loss"] is None
            continue
        assert report["train_accuracy"] == pytest.approx(sum(correct) / len(correct))
        assert report["extra"]["groups_trained"] == len(correct) / RUN_SETTINGS["samples_per_problem"]
    trained = [report["train_accuracy"] for report in reports.values() if report["train_accuracy"] is not None]
    assert trained, "no iteration trained: the settings should let some groups finish"


@pytest.mark.slow
def test_a_two_rank_run_resumes_with_each_rank_s_parked_groups(two_rank_run):
    from training.checkpoint import checkpoint_dir

    paths, events = two_rank_run
    state = torch.load(checkpoint_dir(paths.output_dir, 2) / "training_state.pt", weights_only=False)
    sizes = state["replay_buffer_rank_sizes"]
    assert len(sizes) == WORLD_SIZE and sum(sizes) == len(state["replay_buffer"])
    for rank, rank_events in enumerate(events):
        resumed = phase(rank_events, 2)
        assert resumed[-1]["iterations_done"] == 3 and resumed[-1]["checkpoints"] == ["iteration-000002",
                                                                                     "iteration-000003"]
        continued = [e for e in resumed if e["event"] == "continued"]
        assert [(e["iteration"], e["groups"]) for e in continued] == [(3, sizes[rank])]  # its own groups back
    main = phase(events[0], 2)
    assert any(e["event"] == "log" and "resuming from iteration-000002" in e["line"] for e in main)
    assert [e["iteration"] for e in main if e["event"] == "iteration"] == [3]


def test_shares_split_a_total_into_contiguous_near_equal_parts():
    assert [share_bounds(5, rank, 2) for rank in range(2)] == [(0, 3), (3, 5)]
    assert [share_bounds(1, rank, 3) for rank in range(3)] == [(0, 1), (1, 1), (1, 1)]
    assert [share_bounds(6, rank, 3) for rank in range(3)] == [(0, 2), (2, 4), (4, 6)]


RANK_COUNTS = [{"fresh": 6.0, "fresh_finished": 3.0}, {"fresh": 4.0, "fresh_finished": 1.0}]


def test_a_resume_with_the_same_world_size_gives_each_rank_its_own_parked_groups():
    state = replay_buffer_state([[{"g": "a"}], [{"g": "b"}, {"g": "c"}]], RANK_COUNTS)
    assert state == {"replay_buffer": [{"g": "a"}, {"g": "b"}, {"g": "c"}], "replay_buffer_rank_sizes": [1, 2],
                     "replay_buffer_finish_counts": RANK_COUNTS}
    assert replay_buffer_for_rank(state, 0, 2) == [{"g": "a"}]
    assert replay_buffer_for_rank(state, 1, 2) == [{"g": "b"}, {"g": "c"}]
    assert [finish_counts_for_rank(state, rank, 2) for rank in range(2)] == RANK_COUNTS


def test_a_resume_with_another_world_size_splits_the_parked_groups_evenly():
    state = replay_buffer_state([[{"g": "a"}], [{"g": "b"}, {"g": "c"}]], RANK_COUNTS)
    assert replay_buffer_for_rank(state, 0, 1) == state["replay_buffer"]
    assert [replay_buffer_for_rank(state, rank, 3) for rank in range(3)] == [[{"g": "a"}], [{"g": "b"}], [{"g": "c"}]]
    assert finish_counts_for_rank(state, 0, 3) == {"fresh": 10.0, "fresh_finished": 4.0}  # the ranks' counts summed
    single_process = {"replay_buffer": [{"g": "a"}, {"g": "b"}, {"g": "c"}]}  # a checkpoint from before torchrun
    assert [replay_buffer_for_rank(single_process, rank, 2) for rank in range(2)] == [[{"g": "a"}, {"g": "b"}],
                                                                                     [{"g": "c"}]]
    assert finish_counts_for_rank(single_process, 1, 2) == {}  # not kept then


def test_in_one_process_the_collectives_are_no_ops(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert init_from_environment() == SINGLE_PROCESS and SINGLE_PROCESS.is_main
    assert all_reduce_mean({"loss": 0.5}) == {"loss": 0.5}
    assert all_gather_objects({"a": 1}) == [{"a": 1}]
    assert broadcast_from_main(True) is True
