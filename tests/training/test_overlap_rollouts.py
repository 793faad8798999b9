"""overlap_rollouts: the next batch is rolled out while the trainer updates, one policy update old."""

from __future__ import annotations

import dataclasses
import importlib.util
import threading
import time

import pytest

from common.knobs import parse_config
from training.checkpoint import latest_checkpoint
from training.config import RLConfig
from training.collect import RolloutLimits, StreamKey
from training.iteration_rollouts import IterationRollouts, roll_out_iteration
from training.rollout.base import FINISH_LENGTH, Completion, SamplingSettings, request_limit
from training.loop import run
from training.rollouts_ahead import RolloutsAhead
from training.tasks.arithmetic import generate
from training.trajectories import Group, ReplayBuffer, Trajectory
from training.types import PromptRecord, RunPaths, TrainingHooks

from tests.training.test_full_batches import FILLER, LONG, ScriptedEngine, draw_from

RECORDS = [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer, difficulty=p.difficulty)
           for p in generate(32, seed=3)]
SETTINGS = dict(
    iterations=4, batch_size=3, samples_per_problem=3, max_response_tokens=24, partial_rollout_token_budget=10,
    checkpoint_every_iterations=2, learning_rate=1e-3, sampling_strategy="prioritized", seed=7,
    stored_samples_per_iteration=9, overlap_rollouts=True, length_penalty_weight=0.2,
)
FROZEN = 1e-12  # a learning rate too small to move any fp32 weight of the tiny model: the policy stays put


class Killed(Exception):
    pass


def train(paths: RunPaths, model: str, kill_after: int | None = None, **overrides) -> dict:
    """Iteration reports by iteration; optionally die right after reporting iteration `kill_after`."""
    reports = {}

    def on_iteration(report):
        reports[report.iteration] = report
        if report.iteration == kill_after:
            raise Killed()

    try:
        run(parse_config(RLConfig, {**SETTINGS, "model": model, **overrides}), RECORDS, paths,
            TrainingHooks(on_iteration=on_iteration))
    except Killed:
        pass
    return reports


def samples(report) -> list[tuple]:
    return [(s.prompt_id, s.sample_index, s.response, s.reward) for s in report.samples]


def timeless(report) -> tuple:
    return dataclasses.astuple(dataclasses.replace(report, seconds=0.0, extra={}))


@pytest.mark.slow
def test_a_frozen_policy_trains_on_the_same_samples_with_and_without_overlap(run_paths, warm_model_dir, tmp_path):
    """Random streams and draws depend on the iteration, never on when the rollouts ran."""
    model = str(warm_model_dir)
    overlapped = train(run_paths, model, learning_rate=FROZEN)
    synchronous = train(RunPaths(tmp_path / "sync", run_paths.models_dir), model, learning_rate=FROZEN,
                        overlap_rollouts=False)
    for iteration in range(1, 5):
        assert samples(overlapped[iteration]) == samples(synchronous[iteration])
        assert overlapped[iteration].train_accuracy == synchronous[iteration].train_accuracy
        assert overlapped[iteration].extra["groups_trained"] == 3
        # tokens carried over from earlier segments of partial rollouts are the same; only their policy is older
        assert overlapped[iteration].tokens_reused == synchronous[iteration].tokens_reused
    assert sum(synchronous[iteration].tokens_reused for iteration in range(1, 5)) > 0
    assert overlapped[1].extra["old_policy_token_share"] == synchronous[1].extra["old_policy_token_share"] == 0.0
    for iteration in range(2, 5):  # rolled out during the previous update: every token one policy older
        assert overlapped[iteration].extra["old_policy_token_share"] == 1.0
        assert overlapped[iteration].extra["policy_version_span"] >= 1
        assert overlapped[iteration].extra["rollout_wait_seconds"] >= 0.0
        # the engine samples exactly what the trainer scores (float32 on both), and the frozen policy never moves
        assert "sampler_kl" not in overlapped[iteration].extra
        assert 0.0 <= overlapped[iteration].extra["stale_sampler_kl"] < 1e-6
    gaps = [synchronous[iteration].extra.get("sampler_kl") for iteration in range(1, 5)]
    assert gaps[0] is not None  # (a later batch may hold only groups finished in earlier iterations)
    assert all(0.0 <= gap < 1e-6 for gap in gaps if gap is not None), gaps


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed")
def test_vllm_rolls_out_ahead_in_the_background_thread_with_the_same_streams(run_paths, warm_model_dir, tmp_path):
    model, short = str(warm_model_dir), dict(iterations=3, rollout_engine="vllm", learning_rate=FROZEN)
    overlapped = train(run_paths, model, **short)
    synchronous = train(RunPaths(tmp_path / "sync", run_paths.models_dir), model, overlap_rollouts=False, **short)
    assert [samples(overlapped[i]) for i in (1, 2, 3)] == [samples(synchronous[i]) for i in (1, 2, 3)]
    assert [overlapped[i].extra["old_policy_token_share"] for i in (2, 3)] == [1.0, 1.0]


@pytest.mark.slow
def test_the_batch_made_ahead_comes_from_the_policy_one_update_older(run_paths, warm_model_dir, tmp_path):
    """Iteration 2's batch is sampled by the starting policy (as a frozen run's), iteration 3's by the updated one."""
    model = str(warm_model_dir)
    learning = train(run_paths, model, learning_rate=3e-3)
    frozen = train(RunPaths(tmp_path / "frozen", run_paths.models_dir), model, learning_rate=FROZEN)
    assert samples(learning[2]) == samples(frozen[2])
    assert samples(learning[3]) != samples(frozen[3])  # sampled after the first update
    # the trained policy moved away from the one that sampled its batch; the frozen one did not
    assert learning[3].extra["stale_sampler_kl"] > 1e3 * frozen[3].extra["stale_sampler_kl"]
    assert learning[3].extra["stale_sampler_kl"] > 1e-5


@pytest.mark.slow
def test_a_resumed_run_trains_on_the_batch_made_ahead_before_the_kill(run_paths, warm_model_dir, tmp_path):
    model = str(warm_model_dir)
    uninterrupted = train(RunPaths(tmp_path / "straight", run_paths.models_dir), model)
    killed = train(run_paths, model, kill_after=3)
    checkpoint = latest_checkpoint(run_paths.output_dir)
    assert checkpoint.iteration == 2 and checkpoint.state["rollouts_ahead"]["iteration"] == 3
    assert len(checkpoint.state["rollouts_ahead"]["finished"]) == 3
    resumed = train(run_paths, model)
    assert sorted(resumed) == [3, 4]
    merged = {**killed, **resumed}
    assert {i: timeless(r) for i, r in merged.items()} == {i: timeless(r) for i, r in uninterrupted.items()}


def test_overlap_is_refused_under_torchrun_even_when_the_config_says_one_process(run_paths, monkeypatch):
    from training import session
    from training.distributed import DistributedContext

    monkeypatch.setattr(session.distributed, "current_context",
                        lambda: DistributedContext(rank=0, world_size=2, local_rank=0))
    config = parse_config(RLConfig, {**SETTINGS, "model": "tiny"})
    with pytest.raises(ValueError, match="single training process.*this run has 2"):
        session.start_session(config, RECORDS, run_paths, TrainingHooks())


def test_overlap_is_refused_where_it_cannot_run():
    def errors(**overrides) -> dict[str, str]:
        with pytest.raises(ValueError) as refused:
            parse_config(RLConfig, {"model": "tiny", "overlap_rollouts": True, **overrides})
        return str(refused.value)

    assert "vllm-hybrid takes turns" in errors(rollout_engine="vllm-hybrid")
    assert "needs the torch trainer" in errors(trainer_backend="megatron")
    assert "single training process" in errors(nproc_per_node=2)
    assert "exclude_segments_older_than" in errors(exclude_segments_older_than=0)
    config = parse_config(RLConfig, {"model": "tiny", "overlap_rollouts": True, "exclude_segments_older_than": 1})
    assert config.overlap_rollouts


def group(tokens: list[int], started: int) -> Group:
    trajectory = Trajectory(prompt_ids=(1, 2))
    trajectory.extend(tokens, started)
    trajectory.finish_reason = "stop"
    return Group(problem_index=5, started_iteration=started, trajectories=[trajectory], draw_position=1)


def test_rollouts_made_ahead_survive_a_checkpoint_and_belong_to_one_iteration():
    ahead = RolloutsAhead()
    made = IterationRollouts(finished=[group([7, 8, 9], 3)], tokens_generated=3, rounds=2)
    ahead.start(4, lambda: made)
    assert ahead.state_dict()["iteration"] == 4  # waits for the thread first
    restored = RolloutsAhead()
    restored.load_state_dict(ahead.state_dict())
    with pytest.raises(RuntimeError, match="iteration 4 cannot train iteration 5"):
        restored.take(5)
    taken = restored.take(4)
    assert taken == made and restored.take(5) is None and restored.state_dict() is None
    ahead.close()


def test_an_error_in_the_rollouts_made_ahead_reaches_the_loop():
    ahead = RolloutsAhead()

    def fail() -> IterationRollouts:
        raise ValueError("request 3: a prompt of 90 tokens plus 64 new tokens exceeds the window")

    ahead.start(2, fail)
    with pytest.raises(ValueError, match="request 3"):
        ahead.wait()
    assert ahead.take(2) is None
    ahead.close()


class HeldEngine(ScriptedEngine):
    """Every response runs past its segment's limit (no group ever finishes); each call is held until the test
    lets it go, or fails after 10 s."""

    def __init__(self):
        super().__init__()
        self.entered, self.released = threading.Semaphore(0), threading.Semaphore(0)

    def generate(self, requests, settings):
        self.calls += 1
        self.entered.release()
        if not self.released.acquire(timeout=10):
            raise TimeoutError(f"engine call {self.calls} was never released")
        return [[Completion((FILLER,) * request_limit(request, settings), (0.0,) * request_limit(request, settings),
                            FINISH_LENGTH)] * request.n for request in requests]


def test_closing_gives_up_the_rollouts_in_the_making_at_their_next_round():
    """A failing run does not wait for a whole batch made ahead: the rounds stop after the call under way."""
    engine, buffer, ahead = HeldEngine(), ReplayBuffer(), RolloutsAhead()
    # 4 groups wanted, none ever finishes: without the cancel, round after round would follow
    ahead.start(2, lambda: roll_out_iteration(
        engine, buffer, draw_from([0, 2]), share=4, parked_limit=64, settings=SamplingSettings(LONG),
        limits=RolloutLimits(LONG, 4, 2), streams=StreamKey(run_seed=0, iteration=2), cancelled=ahead.cancelled))
    assert engine.entered.acquire(timeout=10)  # round 0's engine call is under way
    closing = threading.Thread(target=ahead.close)
    closing.start()
    deadline = time.monotonic() + 10
    while not ahead.cancelled() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ahead.cancelled(), "close() did not ask the rollouts in the making to stop"
    engine.released.release()  # round 0 ends; no round 1 starts
    closing.join(timeout=10)
    assert not closing.is_alive() and engine.calls == 1


def test_rollouts_made_ahead_resume_from_a_checkpoint_older_than_a_counter():
    """A checkpoint saved before `stale_groups_dropped` existed resumes, the missing counter 0."""
    ahead = RolloutsAhead()
    ahead.load_state_dict({"iteration": 5, "finished": [], "tokens_generated": 100, "tokens_saved_by_repeat_stop": 0,
                           "rounds": 1, "groups_completed_over_budget": 0, "tokens_carried_over": 0})
    assert ahead.state_dict()["tokens_generated"] == 100 and ahead.state_dict()["stale_groups_dropped"] == 0
