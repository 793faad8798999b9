"""Rollouts with vLLM: one batched `LLM.generate` per call, weights pushed from the trainer in memory.

The engine loads the saved model directory once at start, then receives the trainer's weights as
safetensors bytes through `collective_rpc` (training.rollout.vllm_worker_extension), reloaded in
place; the prefix cache is reset after every update, since stale KV blocks would be reused.

Environment variables (read by vLLM; the engine sets the defaults below when they are unset,
before vLLM is imported):
- VLLM_ENABLE_V1_MULTIPROCESSING=0: run vLLM's engine core in this process; it starts in seconds
  instead of ~20 s and takes ~2 GB less memory. Set it to 1 to run the core in its own process.
- VLLM_CPU_KVCACHE_SPACE=1 (CPU only, GiB of KV cache): vLLM's default wants most of the memory
  and fails to start on small machines. It takes precedence over `kv_cache_memory_bytes` on CPU,
  so it is only defaulted when that argument is not given.
- OMP_NUM_THREADS: torch reads it when first imported, which is before this module runs; set it
  yourself (1 on small shared CPUs, where torch's default made generation ~30x slower).

Images (vision-language models): a request's images go to vLLM as `multi_modal_data`, its one-token
placeholders expanded by vLLM's processor; the context check counts that expansion from each image's size
(training.rollout.vision.VisionInputs.prompt_length). vLLM's Qwen2-VL / Qwen2.5-VL code imports transformers'
torchvision image processor, so without a working torchvision such a model cannot load; the engine
says so before starting vLLM (require_vision_support).

All vLLM imports stay inside this module and the worker extension.
"""

from __future__ import annotations

import gc
import os
import re
import time
from typing import Sequence

import torch

from training.rollout.base import (
    FINISH_LENGTH, FINISH_REPEAT, FINISH_STOP, Completion, EngineSettings, RolloutRequest, SamplingSettings,
    SharedDeviceEngine, check_room, request_limit, request_seeds,
)
from training.rollout.repeats import repeated_tail_start
from training.rollout.vision import open_image, vision_inputs_from_folder

WORKER_EXTENSION = "training.rollout.vllm_worker_extension.WeightUpdateExtension"
REPEAT_STOP_PROCESSOR = "training.rollout.vllm_repeat_stop:RepeatStopLogitsProcessor"  # vllm_repeat_stop.py
UPDATE_BUCKET_BYTES = 512 * 1024**2  # largest safetensors blob sent in one collective_rpc call
CPU_KV_CACHE_GIB = "1"
ONEDNN_PRIMITIVE_CACHE = "128"
# "model.layers.12.self_attn.q_proj.weight" -> "model.layers.12": a decoder layer goes whole in one blob.
_LAYER_PREFIX = re.compile(r"^(.*?\.\d+)\.")


def _set_default_environment(kv_cache_memory_bytes: int | None) -> None:
    """Defaults for the environment variables vLLM reads (see the module docstring)."""
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    if kv_cache_memory_bytes is None:
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", CPU_KV_CACHE_GIB)
    # vllm-cpu's matmuls go through oneDNN, which keeps a primitive for every new row count (tokens in a step,
    # ever new with partial rollouts): 1,024 of them by default, about 1.5 MB more per RL iteration for hundreds
    # of iterations. A smaller cache bounds it (read when oneDNN first builds a primitive).
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", ONEDNN_PRIMITIVE_CACHE)


def _cpu_scheduling(model_path: str, max_model_len: int | None) -> dict:
    """vllm-cpu: whole prefills only. A chunked prefill makes vLLM rewind the seeded request's generator
    (gpu_model_runner: gen.set_offset), which CPU generators refuse ("CPU Generator does not use offset"),
    killing the engine once prompts of seeded requests outgrow a step's token budget."""
    from training.context_window import folder_window

    window = max_model_len or folder_window(model_path) or 8192
    return {"enable_chunked_prefill": False, "max_num_batched_tokens": max(window, 8192)}


class VisionUnsupported(RuntimeError):
    """vLLM cannot run a vision-language model on this host; the message says why and what to use instead."""


def require_vision_support() -> None:
    """Raise VisionUnsupported when torchvision, which vLLM's Qwen2-VL code imports, does not import."""
    try:
        from torchvision.transforms.v2 import functional  # noqa: F401
    except (ImportError, RuntimeError) as error:  # absent, or built for another torch (a RuntimeError)
        raise VisionUnsupported(
            f"vLLM cannot load a vision-language model here: torchvision does not import ({error}). vLLM's "
            "Qwen2-VL and Qwen2.5-VL models import transformers.models.qwen2_vl.image_processing_qwen2_vl, "
            "which needs torchvision. On CPU hosts scripts/setup.sh removes torchvision because the PyPI wheel "
            "is built for the CUDA torch and fails under torch+cpu ('operator torchvision::nms does not exist'). "
            "Use the torch rollout engine for vision-language models, or install the torchvision build that "
            "matches your torch (the +cpu one from the PyTorch CPU index)."
        ) from error


def vllm_dtype(settings: EngineSettings) -> str | None:
    """The settings' rollout_dtype for vLLM (None: chosen from the trainer's dtype)."""
    return None if settings.rollout_dtype == "auto" else settings.rollout_dtype


def _engine_dtype(model_dtype: torch.dtype, on_cpu: bool) -> str:
    """The trainer's dtype on CPU; on accelerators a float32 trainer samples in vLLM's 16-bit choice."""
    if model_dtype == torch.float32 and not on_cpu:
        return "auto"
    return str(model_dtype).removeprefix("torch.")


class VllmRolloutEngine(SharedDeviceEngine):
    """Samples from a vLLM copy of the policy; `update_weights` copies the trainer's weights into it."""

    def __init__(self, model_path: str, eos_id: int, *, model_dtype: torch.dtype = torch.float32,
                 dtype: str | None = None, seed: int = 0, max_model_len: int | None = None,
                 kv_cache_memory_bytes: int | None = None, gpu_memory_utilization: float = 0.4,
                 enforce_eager: bool | None = None, update_bucket_bytes: int = UPDATE_BUCKET_BYTES,
                 vision: bool = False, enable_sleep_mode: bool = False):
        if vision:
            require_vision_support()
        _set_default_environment(kv_cache_memory_bytes)
        from vllm import LLM
        from vllm.platforms import current_platform

        self.eos_id = eos_id
        # a vision-language model's image processing (requests may carry images), None for a text model: here it
        # counts the tokens vLLM's processor expands each image placeholder to, for the context check
        self.vision = vision_inputs_from_folder(model_path) if vision else None
        self.update_bucket_bytes = update_bucket_bytes
        self.last_update_seconds: float | None = None
        self.on_cpu = current_platform.is_cpu()
        self.dtype = dtype or _engine_dtype(model_dtype, self.on_cpu)
        options = dict(
            model=model_path, dtype=self.dtype, seed=seed, max_model_len=max_model_len,
            # eager on CPU: compiling took a minute at start for ~25% more tokens/s on the tiny model
            enforce_eager=self.on_cpu if enforce_eager is None else enforce_eager,
            worker_extension_cls=WORKER_EXTENSION,
            # log-probs after temperature and top-p, like the torch engine's: the sampler's own.
            logprobs_mode="processed_logprobs",
            generation_config="vllm",  # sampling comes from SamplingSettings only
            enable_prefix_caching=True,
            enable_sleep_mode=enable_sleep_mode,  # the hybrid engine's vLLM process frees its memory between rollouts
            logits_processors=[REPEAT_STOP_PROCESSOR],  # repeat stopping, for requests that ask for it
            # vLLM's async scheduling (its GPU default) hands logits processors a placeholder for each newest
            # token, so the repeat check would never see a repeat; vllm-cpu schedules synchronously anyway
            async_scheduling=False,
        )
        if kv_cache_memory_bytes is not None:
            options["kv_cache_memory_bytes"] = kv_cache_memory_bytes
        if not self.on_cpu:
            options["gpu_memory_utilization"] = gpu_memory_utilization
        else:
            options |= _cpu_scheduling(model_path, max_model_len)
        if enable_sleep_mode and not current_platform.is_sleep_mode_available():
            raise ValueError(f"hybrid_release: 'sleep' needs vLLM's sleep mode, which the "
                             f"{current_platform.device_name} platform lacks; set hybrid_release to 'restart'")
        set_num_threads = torch.set_num_threads
        self.llm = LLM(**options)
        # vLLM's in-process CPU worker replaces torch.set_num_threads with a warning stub; give the
        # trainer sharing this process its function back.
        torch.set_num_threads = set_num_threads
        self.max_model_len = self.llm.llm_engine.model_config.max_model_len
        self._warm_up()

    def _warm_up(self) -> None:
        """One seeded token with its log-prob, in the thread that builds the engine. vLLM compiles its log-prob
        kernel (torch.compile) on the first call that asks for log-probs, and while it compiles torch says
        "compiling" to every thread: a training update running then in the overlap's other thread took AdamW's
        compiled path (a float32 step count), so a resumed overlap run, whose first rollouts run in that
        thread, drifted from the uninterrupted run at rounding level."""
        from vllm import SamplingParams

        self.llm.generate([{"prompt_token_ids": [self.eos_id]}],
                          [SamplingParams(max_tokens=1, temperature=1.0, logprobs=0, seed=0, detokenize=False)],
                          use_tqdm=False)

    def generate(self, requests: Sequence[RolloutRequest], settings: SamplingSettings) -> list[list[Completion]]:
        """All requests in one vLLM call; greedy requests are decoded once and repeated n times.

        A seeded sample goes in as its own vLLM request with its own seed (request_seeds): vLLM would seed
        the n children of one request with seed, seed + 1, ..., which overlap between requests. The
        prompt's KV blocks are computed once and shared through the prefix cache.
        """
        greedy = settings.temperature == 0
        prompts, params, owners = [], [], []  # owners: the request index of each submitted vLLM request
        for index, request in enumerate(requests):
            limit = self._token_limit(index, request, settings)
            prompt = self._prompt(index, request)
            seeds = request_seeds(request, index, settings)
            if greedy or seeds[0] is None:
                streams = [(1 if greedy else request.n, None)]
            else:
                streams = [(1, seed) for seed in seeds]
            for n, seed in streams:
                prompts.append(prompt)
                params.append(self._sampling_params(n, limit, settings, seed))
                owners.append(index)
        outputs = self.llm.generate(prompts, params, use_tqdm=False) if prompts else []
        results: list[list[Completion]] = [[] for _ in requests]
        for index, output in zip(owners, outputs):
            results[index].extend(self._completion(sample, settings) for sample in output.outputs)
        if greedy:
            results = [completions * request.n for completions, request in zip(results, requests)]
        return results

    def _prompt(self, index: int, request: RolloutRequest):
        """vLLM's token prompt, with the request's images as multi-modal data."""
        from vllm.inputs import TokensPrompt

        if not request.images:
            return TokensPrompt(prompt_token_ids=list(request.prompt_ids))
        if self.vision is None:
            raise ValueError(f"request {index} carries {len(request.images)} image(s), but the engine's model "
                             "is a text-only model with no vision encoder; use a vision-language model")
        return TokensPrompt(prompt_token_ids=list(request.prompt_ids),
                            multi_modal_data={"image": [open_image(image) for image in request.images]})

    def _token_limit(self, index: int, request: RolloutRequest, settings: SamplingSettings) -> int:
        """New tokens for this request; a limit the model's context cannot hold is refused, never cut short."""
        if not request.prompt_ids:
            raise ValueError(f"request {index}: prompt_ids is empty")
        limit = request_limit(request, settings)
        length = self.vision.prompt_length(request) if request.images and self.vision else len(request.prompt_ids)
        check_room(index, length, limit, self.max_model_len, "the engine's max_model_len")
        if limit < 1:
            raise ValueError(f"request {index}: asks for {limit} new tokens; at least 1 is needed")
        return limit

    def _sampling_params(self, n: int, limit: int, settings: SamplingSettings, seed: int | None):
        from vllm import SamplingParams

        from training.rollout.vllm_repeat_stop import EXTRA_ARG, EXTRA_ARG_EOS

        greedy = settings.temperature == 0
        repeat_stop = None if settings.stop_repeats is None else \
            {EXTRA_ARG: settings.stop_repeats.as_dict(), EXTRA_ARG_EOS: self.eos_id}
        # ignore_eos + stop_token_ids: stop at the tokenizer's EOS only (as the torch engine does),
        # not at extra end ids a generation_config.json may list; the stop token stays in token_ids.
        # flat log-probs (where this vLLM has them): a few lists per response instead of a dict per token
        flat = {"flat_logprobs": True} if "flat_logprobs" in getattr(SamplingParams, "__struct_fields__", ()) else {}
        return SamplingParams(
            n=n, temperature=settings.temperature, top_p=1.0 if greedy else settings.top_p,
            max_tokens=limit, logprobs=0, ignore_eos=True, stop_token_ids=[self.eos_id], detokenize=False,
            seed=seed, extra_args=repeat_stop, **flat,
        )

    def _completion(self, sample, settings: SamplingSettings) -> Completion:
        """Token ids with EOS kept last when the model stopped, and each token's sampler log-prob.

        With repeat stopping, an EOS right after a degenerate repeat is the one the processor forced: it is
        dropped and the response is reported as FINISH_REPEAT (the repeat would have been caught a step earlier
        had it been complete before).
        """
        tokens = tuple(sample.token_ids)
        if sample.logprobs is None or len(sample.logprobs) != len(tokens):
            raise RuntimeError("vLLM returned no log-prob for some sampled tokens; was logprobs=0 dropped?")
        logprobs = sampled_logprobs(sample.logprobs, tokens)
        stopped = bool(tokens) and tokens[-1] == self.eos_id
        if stopped and settings.stop_repeats is not None and \
                repeated_tail_start(tokens[:-1], **settings.stop_repeats.as_dict()) is not None:
            return Completion(tokens[:-1], logprobs[:-1], FINISH_REPEAT)
        return Completion(tokens, logprobs, FINISH_STOP if stopped else FINISH_LENGTH)

    @torch.no_grad()
    def update_weights(self, model) -> None:
        """Send `model`'s state dict to vLLM as safetensors blobs (whole layers each), then drop the prefix cache."""
        from safetensors.torch import save

        started = time.perf_counter()
        dtype = self.llm.llm_engine.model_config.dtype  # what "auto" resolved to
        for bucket in weight_buckets(model.state_dict(), dtype, self.update_bucket_bytes):
            self.llm.collective_rpc("load_weights_from_safetensors", args=(save(bucket),))
        self.llm.collective_rpc("refresh_shared_weights")  # a tied LM head (vllm_worker_extension)
        if not self.llm.reset_prefix_cache():
            raise RuntimeError("vLLM refused to reset its prefix cache after a weight update; "
                               "requests were still running")
        self.last_update_seconds = time.perf_counter() - started

    def close(self) -> None:
        """Shut vLLM's engine down and free its memory; the engine is unusable afterwards."""
        if self.llm is None:
            return
        from vllm.distributed.parallel_state import cleanup_dist_env_and_memory

        self.llm.llm_engine.engine_core.shutdown()
        self.llm = None
        gc.collect()
        cleanup_dist_env_and_memory()  # process groups, then the accelerator's cached memory


def sampled_logprobs(positions, tokens: tuple[int, ...]) -> tuple[float, ...]:
    """Each sampled token's log-prob: from vLLM's flat lists (logprobs=0 puts the sampled token first at each
    position, checked), or from its per-position dicts."""
    starts = getattr(positions, "start_indices", None)
    if starts is None:
        return tuple(position[token].logprob for position, token in zip(positions, tokens))
    if [positions.token_ids[start] for start in starts] != list(tokens):
        raise RuntimeError("vLLM's flat log-probs do not start with the sampled tokens")
    return tuple(positions.logprobs[start] for start in starts)


def layer_groups(state_dict: dict[str, torch.Tensor]):
    """Lists of (name, tensor), one per decoder layer or other module, in state-dict order.

    A tensor sharing storage with an earlier one (tied embeddings) is left out: safetensors
    refuses shared tensors, and vLLM fills a tied head from the embedding.
    """
    group, group_key, seen = [], None, set()
    for name, tensor in state_dict.items():
        identity = (tensor.device, tensor.untyped_storage().data_ptr(), tensor.storage_offset(), tensor.shape)
        if identity in seen:
            continue
        seen.add(identity)
        match = _LAYER_PREFIX.match(name)
        key = match.group(1) if match else name.rpartition(".")[0]
        if group and key != group_key:
            yield group
            group = []
        group_key = key
        group.append((name, tensor))
    if group:
        yield group


def weight_buckets(state_dict: dict[str, torch.Tensor], dtype: torch.dtype, bucket_bytes: int):
    """Dicts of contiguous CPU tensors (floating ones cast to `dtype`) of whole layers, about bucket_bytes each.

    Whole layers, because vLLM fuses some weights (q, k and v; gate and up) and reloads a fused
    weight only once all its parts arrived. Only one bucket is copied to the CPU at a time.
    """
    bucket, size = {}, 0
    for group in layer_groups(state_dict):
        group_bytes = sum(tensor.numel() * dtype.itemsize if tensor.is_floating_point()
                          else tensor.numel() * tensor.element_size() for _, tensor in group)
        if bucket and size + group_bytes > bucket_bytes:
            yield bucket
            bucket, size = {}, 0
        for name, tensor in group:
            tensor = tensor.detach().to("cpu", dtype) if tensor.is_floating_point() else tensor.detach().cpu()
            bucket[name] = tensor.contiguous()
        size += group_bytes
    if bucket:
        yield bucket


def build(model, tokenizer, model_path: str, settings: EngineSettings, trainer=None) -> VllmRolloutEngine:
    """An engine over the saved `model_path`, then serving `model`'s current (in-memory) weights."""
    from training.models.loading import is_vision_language

    engine = VllmRolloutEngine(
        model_path, tokenizer.eos_token_id, model_dtype=next(model.parameters()).dtype,
        seed=settings.seed, max_model_len=settings.max_model_len,
        vision=is_vision_language(model.config), dtype=vllm_dtype(settings),
    )
    engine.update_weights(model)
    return engine
