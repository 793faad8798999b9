"""The lifecycle manager of the hybrid deployment (the report's checkpoint engine): the `vllm-hybrid` rollout engine.

One iteration, as training/loop.py drives it:

    generate          wake-up check (restart after a crash, re-sending the latest weights), rollout
    release_for_training   release vLLM's memory (sleep, or stop the process), onload the trainer
    (the trainer updates the policy)
    update_weights    offload the trainer, wake vLLM (or start it again), hand the weights over in memory

Weights travel as safetensors blobs of whole layers over the socket to the server process, which
reloads them in place and resets its prefix cache; nothing touches the disk. Every phase is timed;
`take_phase_seconds` returns the sums since the last call as `hybrid_<phase>_seconds` metrics.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path
from typing import Sequence

import torch

from training.hybrid import memory
from training.hybrid.process import ServerSettings, VllmProcess, VllmProcessDied
from training.rollout.base import Completion, EngineSettings, RolloutRequest, SamplingSettings
from training.rollout.vllm_engine import UPDATE_BUCKET_BYTES, vllm_dtype, weight_buckets

logger = logging.getLogger(__name__)

RELEASE_MODES = ("restart", "sleep")
START_TIMEOUT_SECONDS = 900.0  # building a large model's engine (and compiling) takes minutes
HEALTH_TIMEOUT_SECONDS = 30.0


class HybridRolloutEngine:
    """Runs vLLM in its own process beside the trainer, on the same devices, one at a time."""

    def __init__(self, settings: ServerSettings, *, local_rank: int | None = None, log_dir: Path | None = None,
                 update_bucket_bytes: int = UPDATE_BUCKET_BYTES, health_timeout: float = HEALTH_TIMEOUT_SECONDS,
                 start_timeout: float = START_TIMEOUT_SECONDS, sidecar_socket: str | None = None, trainer=None):
        if settings.release not in RELEASE_MODES:
            raise ValueError(f"hybrid_release must be one of {', '.join(RELEASE_MODES)}; got {settings.release!r}")
        self.settings = settings
        self.update_bucket_bytes = update_bucket_bytes
        self.health_timeout, self.start_timeout = health_timeout, start_timeout
        self.log_dir = Path(log_dir or tempfile.mkdtemp(prefix="mirrorlab-vllm-"))
        self.owns_log_dir = log_dir is None  # a folder of its own is removed on a clean close (one per engine)
        # With a sidecar socket the sidecar starts each server (a crash restart = a new connection).
        self.server = VllmProcess(settings, self.log_dir / "vllm-server.log", local_rank, sidecar_socket)
        self.model = None  # the model last handed over: its weights are re-sent after a crash
        # What holds the training memory: a trainer with offload_to_cpu()/onload() (megatron), else the model.
        self.trainer = trainer if hasattr(trainer, "offload_to_cpu") else None
        self.trainer_device: torch.device | None = None  # where the offloaded trainer goes back to
        self.sleeping = False
        self.weights_loaded = False  # the server holds the current model's weights
        self.phases: dict[str, float] = defaultdict(float)
        self.weight_bytes = 0  # of the last handover
        self.server_failed = False  # a start failed or the server died (restarted): its log stays after close

    @property
    def pid(self) -> int | None:
        """The server process's id (None while stopped)."""
        return self.server.pid

    @contextmanager
    def phase(self, name: str):
        started = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] += time.perf_counter() - started

    def generate(self, requests: Sequence[RolloutRequest], settings: SamplingSettings) -> list[list[Completion]]:
        """Roll out on the server; a crash before or during the call restarts it once, transparently."""
        self._ensure_ready()
        try:
            with self.phase("rollout"):
                return self.server.call("generate", (list(requests), settings))
        except VllmProcessDied as error:
            self._restart(f"it died during a rollout: {str(error).splitlines()[0]}")
            with self.phase("rollout"):
                return self.server.call("generate", (list(requests), settings))

    def update_weights(self, model) -> None:
        """Offload the trainer, wake (or start) vLLM, and hand it `model`'s weights in memory."""
        self.model = model
        with self.phase("offload"):
            moved_from = memory.offload(self.memory_holder)
            self.trainer_device = moved_from or self.trainer_device
        self.weights_loaded = False  # new weights to send
        self._ensure_ready()

    def release_for_training(self) -> None:
        """Free vLLM's memory (sleep, or stop the process) and bring the trainer back."""
        with self.phase("release"):
            if self.settings.release == "sleep" and self.server.alive():
                self.server.call("sleep", timeout=self.health_timeout)
                self.sleeping, self.weights_loaded = True, False  # level-2 sleep drops the weights
            else:
                self.server.stop()
                self.weights_loaded = False
        with self.phase("onload"):
            if self.model is not None:
                memory.onload(self.memory_holder, self.trainer_device)

    def take_phase_seconds(self) -> dict[str, float]:
        """Seconds per phase since the last call (plus restarts, the switch sums and transfer rate); resets them."""
        phases, self.phases = dict(self.phases), defaultdict(float)
        metrics = {f"hybrid_{name}_seconds": seconds for name, seconds in phases.items() if name != "restarts"}
        if "restarts" in phases:
            metrics["hybrid_restarts"] = phases["restarts"]
        metrics["hybrid_train_to_rollout_seconds"] = sum(phases.get(name, 0.0)
                                                         for name in ("offload", "wake", "weight_handover"))
        metrics["hybrid_rollout_to_train_seconds"] = phases.get("release", 0.0) + phases.get("onload", 0.0)
        if "weight_handover" in phases and self.weight_bytes:
            gigabytes = self.weight_bytes / 1e9
            metrics["hybrid_weight_gigabytes"] = gigabytes
            metrics["hybrid_handover_seconds_per_gigabyte"] = phases["weight_handover"] / gigabytes
        return metrics

    def close(self) -> None:
        """Stop the server and give the trainer its memory back; remove the log folder it made for itself unless
        the server ever failed (a start that failed, a restart, a dead server): its log is what explains it, and
        the errors name the file."""
        healthy = not self.server_failed and (not self.server.started or self.server.alive())
        self.server.stop()
        if self.owns_log_dir and healthy:
            shutil.rmtree(self.log_dir, ignore_errors=True)
        elif self.owns_log_dir:
            logger.warning("vLLM server log kept for inspection: %s", self.log_dir / "vllm-server.log")
        if self.model is not None:
            memory.onload(self.memory_holder, self.trainer_device)
            self.model = None

    @property
    def memory_holder(self):
        return self.trainer if self.trainer is not None else self.model

    def _ensure_ready(self) -> None:
        """A started, awake, healthy server holding the latest weights: restart it after a crash."""
        if not self.server.started:
            with self.phase("wake"):
                self._start()
        elif not self.server.healthy(self.health_timeout):
            self._restart(f"the health check failed (pid {self.server.pid}, "
                          f"{'alive' if self.server.alive() else 'dead'})")
        elif self.sleeping:
            with self.phase("wake"):
                self.server.call("wake_up", timeout=self.start_timeout)
                self.sleeping = False
        if not self.weights_loaded and self.model is not None:
            with self.phase("weight_handover"):
                self._send_weights()

    def _restart(self, reason: str) -> None:
        """Kill what is left of the server, start a new one and re-send the latest weights."""
        logger.warning("restarting the vLLM server: %s", reason)
        self.server_failed = True
        with self.phase("restart"):
            self.server.kill()
            self._start()
            if self.model is not None:
                self._send_weights()
        self.phases["restarts"] += 1

    def _start(self) -> None:
        try:
            self.server.start(self.start_timeout)
        except BaseException:
            self.server_failed = True
            raise
        self.sleeping, self.weights_loaded = False, False

    @torch.no_grad()
    def _send_weights(self) -> None:
        """The model's state dict as safetensors blobs of whole layers, in vLLM's dtype; then a fresh prefix cache."""
        from safetensors.torch import save

        dtype = getattr(torch, self.server.info["dtype"])
        self.weight_bytes = 0

        def blobs():  # one bucket in host memory at a time; the empty blob ends the stream
            for bucket in weight_buckets(self.model.state_dict(), dtype, self.update_bucket_bytes):
                blob = save(bucket)
                self.weight_bytes += len(blob)
                yield blob
            yield b""

        self.server.call("load_weights", None, timeout=self.start_timeout, blobs=blobs())
        self.weights_loaded = True


def build(model, tokenizer, model_path: str, engine_settings: EngineSettings, trainer=None) -> HybridRolloutEngine:
    """A hybrid engine over the saved `model_path`, serving `model`'s current weights (the trainer offloaded).

    A `trainer` with offload_to_cpu()/onload() (megatron: its weights, gradients and optimizer live apart
    from `model`, a host copy) has its memory offloaded instead of `model`'s.
    """
    from training import distributed
    from training.models.loading import is_vision_language

    context = distributed.current_context()
    settings = ServerSettings(
        model_path=model_path, eos_id=tokenizer.eos_token_id,
        model_dtype=str(next(model.parameters()).dtype).removeprefix("torch."),
        seed=engine_settings.seed, max_model_len=engine_settings.max_model_len,
        release=engine_settings.hybrid_release, vision=is_vision_language(model.config),
        dtype=vllm_dtype(engine_settings),
    )
    engine = HybridRolloutEngine(settings, local_rank=context.local_rank if context.world_size > 1 else None,
                                 sidecar_socket=engine_settings.vllm_sidecar_socket, trainer=trainer)
    engine.update_weights(model)
    return engine
