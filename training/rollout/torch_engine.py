"""Rollouts with Hugging Face `generate` (KV cache), on the trainer's model or on a copy in the sampling dtype.

Requests are sorted by their token limit and cut into chunks of at most `max_batch_sequences` rows; each
chunk decodes to its longest limit, every row stopping at its own, in segments between which the rows that
ended leave the batch (training.rollout.segmented_decoding). Tokens come from
training.rollout.token_sampler: one seeded random stream per row, the sampler's own log-probs, and an
optional stop at the first degenerate repeat.
"""

from __future__ import annotations

import copy
import logging
from typing import Sequence

import torch
from transformers import CompileConfig, StaticCache

from training.rollout.base import (
    FINISH_LENGTH, FINISH_REPEAT, FINISH_STOP, Completion, EngineSettings, RolloutRequest, SamplingSettings,
    SharedDeviceEngine, check_room, request_limit, request_seeds,
)
from training.context_window import config_window
from training.rollout.bucketed_prefill import bucketed_prefill
from training.rollout.lean_decoding import (KeptBuffers, compiled_step, cudagraph_skips, decode_step,
                                            lean_cache_supported, lean_decode)
from training.rollout.placement import (
    batch_sequences_for_memory, compiled_row_count, compiled_row_count_within, compiles_decoding, decodes_lean,
    keeps_through_training, sampling_device, sampling_dtype,
)
from training.rollout.segmented_decoding import SEGMENT_STEPS, DecodeCall, Decoded, decode
from training.rollout.token_sampler import row_uniforms
from training.rollout.vision import VisionInputs, VisionPrompt, check_image_requests, vision_inputs_for

logger = logging.getLogger(__name__)

CPU_BATCH_SEQUENCES = 64
STATIC_CACHE_STEP = 256  # compiled decoding: static cache lengths are multiples of this
PADDING_ROW_SEED = 0  # the stream of a compiled call's padding rows (never drawn from torch's global generator)


class TorchRolloutEngine(SharedDeviceEngine):
    """Samples from the trainer's model object, or from a copy of it on `device` in `dtype` when those differ.

    Sharing the object makes a weight update free; a copy (a CPU-held trainer copy sampled on the GPU, bf16
    sampling beside an fp32 trainer, or `own_copy` for rollouts that overlap training) is refreshed by
    update_weights. max_batch_sequences: rows per generate call; None = CPU_BATCH_SEQUENCES on a CPU, sized
    from free memory on a GPU.
    vision: for a vision-language model, what turns requests' images into model inputs; None for text.
    """

    def __init__(self, model, tokenizer, max_batch_sequences: int | None = None, vision: VisionInputs | None = None,
                 device: torch.device | None = None, dtype: torch.dtype | None = None, own_copy: bool = False):
        parameter = next(model.parameters())
        self.device = device or parameter.device
        self.dtype = dtype or parameter.dtype
        self.owns_copy = own_copy or (self.device, self.dtype) != (parameter.device, parameter.dtype)
        self.model = sampling_copy(model, self.device, self.dtype) if self.owns_copy else model
        self.pad_id = tokenizer.pad_token_id
        self.eos_id = tokenizer.eos_token_id
        self.max_batch_sequences = max_batch_sequences
        self.vision = vision
        self.window = config_window(self.model.config.to_dict())  # as the launch check reads it (rope scaling)
        self.bucket_prefill = True  # prompts of very different lengths prefill apart (rollout.bucketed_prefill)
        self.static_cache = True  # CPU calls of few new tokens beside long prompts decode into a static cache
        self.segment_steps: int | None = SEGMENT_STEPS  # rows that ended leave the batch this often (None: never)
        self.compile_decoding = False  # decode into a static cache with a compiled step
        self.lean_decoding = False  # decode in our own loop (rollout.lean_decoding), not Hugging Face generate
        self._compiled_step = None  # the lean loop's compiled step, made at its first call
        self._warned_lean_fallback = False
        self._warned_graph_skips = False
        self._kept = KeptBuffers()  # a compiled lean call's cache and rows, for the next call of its shape
        self.compiled_shapes: set[tuple[int, int]] = set()  # (rows, cache positions) of compiled calls so far

    @torch.no_grad()
    def update_weights(self, model) -> None:
        if self.owns_copy:
            self.model.load_state_dict(model.state_dict())  # copies across device and dtype
        else:
            self.model = model

    def release_for_training(self) -> None:
        """Free the kept decoding buffers for the trainer unless they take little of the GPU
        (placement.keeps_through_training): the next call allocates again and records its graph anew."""
        if not keeps_through_training(self._kept.nbytes(), self._device_bytes()):
            self._kept.drop()

    def _device_bytes(self) -> int:
        """The GPU's memory in bytes; 0 off a GPU (no CUDA graphs there, so nothing to keep for)."""
        return torch.cuda.mem_get_info(self.device)[1] if self.device.type == "cuda" else 0

    def close(self) -> None:
        self._kept.drop()
        self.model = None

    def generate(self, requests: Sequence[RolloutRequest], settings: SamplingSettings) -> list[list[Completion]]:
        check_image_requests(requests, self.vision and self.vision.image_token_id,
                             getattr(self.model.config, "name_or_path", "") or "the model")
        results: list[list[Completion] | None] = [None] * len(requests)
        seeds = [request_seeds(request, index, settings) for index, request in enumerate(requests)]
        limits = [request_limit(request, settings) for request in requests]
        self._check_context(requests, limits)
        by_limit = sorted(range(len(requests)), key=lambda index: -limits[index])
        for chunk in self._chunks(by_limit, requests, limits):
            outputs = self._generate_batch([requests[i] for i in chunk], settings, [limits[i] for i in chunk],
                                           [seeds[i] for i in chunk])
            for index, completions in zip(chunk, outputs):
                results[index] = completions
        return results  # type: ignore[return-value]

    def _check_context(self, requests: Sequence[RolloutRequest], limits: list[int]) -> None:
        """Refuse a request the model's context cannot hold (prompt + new tokens); never cut it short silently."""
        if self.window is None:
            return
        for index, (request, limit) in enumerate(zip(requests, limits)):
            length = self.vision.prompt_length(request) if request.images else len(request.prompt_ids)
            check_room(index, length, limit, self.window, "the model's context window")

    def _chunks(self, indices: list[int], requests: Sequence[RolloutRequest], limits: list[int]) -> list[list[int]]:
        """Split request indices (longest limit first) into generate calls of at most the row budget."""
        chunks, current, size = [], [], 0
        for index in indices:
            if current and size + requests[index].n > self._rows_per_call(requests, current, limits):
                chunks.append(current)
                current, size = [], 0
            current.append(index)
            size += requests[index].n
        return chunks + [current] if current else chunks

    def _rows_per_call(self, requests: Sequence[RolloutRequest], chunk: list[int], limits: list[int]) -> int:
        """The row budget of one call; a compiled call's, on the grid it is padded to (placement.compiled_row_count),
        so that padding never takes it past the budget."""
        rows = self._row_budget(requests, chunk, limits)
        return compiled_row_count_within(rows) if self.compile_decoding else rows

    def _row_budget(self, requests: Sequence[RolloutRequest], chunk: list[int], limits: list[int]) -> int:
        if self.max_batch_sequences is not None:
            return self.max_batch_sequences
        if self.device.type != "cuda":
            return CPU_BATCH_SEQUENCES
        longest = max(len(requests[index].prompt_ids) for index in chunk) + max(limits[index] for index in chunk)
        free_bytes, _ = torch.cuda.mem_get_info(self.device)
        return batch_sequences_for_memory(self.model.config, longest, free_bytes + self._kept.nbytes(), self.dtype)

    @torch.no_grad()
    def _generate_batch(self, requests: list[RolloutRequest], settings: SamplingSettings,
                        limits: list[int], seeds: list[list[int | None]]) -> list[list[Completion]]:
        """One left-padded generate call; requests of different n are expanded row by row.

        limits: per request, its new-token limit; seeds: per request, each sample's stream seed (request_seeds).
        """
        prompts = [self._prompt(request) for request in requests]
        row_prompts = [prompt for prompt, request in zip(prompts, requests) for _ in range(request.n)]
        row_limits = [limit for limit, request in zip(limits, requests) for _ in range(request.n)]
        row_seeds = [seed for per_request in seeds for seed in per_request]
        real_rows = len(row_prompts)
        padding = compiled_row_count(real_rows) - real_rows if self.compile_decoding else 0  # few compiled shapes:
        row_prompts += [row_prompts[0]] * padding  # copies of the first row, on a stream of their own, dropped
        row_limits += [row_limits[0]] * padding
        row_seeds += [PADDING_ROW_SEED] * padding
        rows = [prompt.prompt_ids for prompt in row_prompts]
        width, longest = max(len(row) for row in rows), max(row_limits)
        input_ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long, device=self.device)
        attention = torch.zeros_like(input_ids)
        for row_index, row in enumerate(rows):
            input_ids[row_index, width - len(row):] = torch.tensor(row, dtype=torch.long)
            attention[row_index, width - len(row):] = 1
        vision = self.vision.generate_inputs(row_prompts, input_ids, self.model.dtype) if self.vision else {}
        uniforms = None if settings.temperature == 0 else \
            row_uniforms(row_seeds, longest, self.device)
        call = DecodeCall(input_ids, attention, row_limits, uniforms, settings, self.pad_id, self.eos_id)
        room = self._static_room(width, longest)
        was_training = self.model.training
        self.model.eval()
        try:
            reuse = self._kept.cache_for(len(rows), width + room) if self._keeps_buffers() else None
            prefilled = None if self.vision is not None or not self.bucket_prefill else \
                bucketed_prefill(self.model, input_ids, attention, [len(row) for row in rows],
                                 static_room=room, reuse=reuse)
            if self.compile_decoding and isinstance(prefilled, StaticCache):
                self._note_compiled_shape(len(rows), width + room)
            if self.lean_decoding and self._lean_applies(prefilled):
                decoded = self._lean_decode(call, prefilled)
            else:  # images go in with the prompts: such a call decodes in one segment
                decoded = decode(self.model, call, prefilled, None if vision else self.segment_steps,
                                 {**vision, **self._compile_options()})
        finally:
            self.model.train(was_training)
        completions = [self._completion(tokens[:limit], scores[:limit], limit, stop) for tokens, scores, limit, stop
                       in zip(decoded.tokens[:real_rows], decoded.logprobs, row_limits, decoded.repeat_stops)]
        grouped, start = [], 0
        for request in requests:
            grouped.append(completions[start:start + request.n])
            start += request.n
        return grouped

    def _static_room(self, width: int, new_tokens: int) -> int | None:
        """Positions a static cache keeps past the prompts (None: a dynamic cache). A compiled call rounds the
        cache up to a multiple of STATIC_CACHE_STEP, so that calls of nearby widths reuse one compiled step."""
        if self.compile_decoding:
            return -(-(width + new_tokens) // STATIC_CACHE_STEP) * STATIC_CACHE_STEP - width
        return new_tokens if self.lean_decoding or self._decodes_in_place(width, new_tokens) else None

    def _lean_applies(self, prefilled) -> bool:
        """Whether this call can decode in the lean loop; says once in the log when it cannot (images, or a
        cache that is not plain static full attention), so that a run asking for it knows it got generate."""
        if lean_cache_supported(prefilled):
            return True
        if not self._warned_lean_fallback:
            self._warned_lean_fallback = True
            logger.warning("torch engine: rollout_loop lean needs a static cache of full-attention layers and no "
                           "images; this model's calls decode with generate")
        return False

    def _keeps_buffers(self) -> bool:
        """Compiled lean calls keep their cache and rows for the next call of the same shape."""
        return self.lean_decoding and self.compile_decoding and self.vision is None

    def _lean_decode(self, call: DecodeCall, cache: StaticCache) -> Decoded:
        """The call decoded in the lean loop: compiled (every row to the end, in kept buffers), or plain."""
        if not self.compile_decoding:
            return lean_decode(self.model, call, cache, decode_step, segment_steps=self.segment_steps)
        if self._compiled_step is None:
            self._compiled_step = compiled_step(self.device)
        skips = cudagraph_skips()
        decoded = lean_decode(self.model, call, cache, self._compiled_step, segment_steps=None,
                              state=self._kept.state_for(call, cache))
        if cudagraph_skips() > skips and not self._warned_graph_skips:
            self._warned_graph_skips = True
            logger.warning("torch engine: torch ran the compiled decoding step without CUDA graphs, so every step "
                           "pays its kernel launches; TORCH_LOGS=cudagraphs says why")
        return decoded

    def _note_compiled_shape(self, rows: int, positions: int) -> None:
        """Say in the log when a compiled call has a shape not seen before: it compiles or records first."""
        if (rows, positions) not in self.compiled_shapes:
            self.compiled_shapes.add((rows, positions))
            logger.info("torch engine: first compiled call of %d rows x %d cache positions; transformers "
                        "compiles (or records) its decoding step first, which takes longer", rows, positions)

    def _compile_options(self) -> dict:
        """generate's options for a compiled call off the GPU, where transformers compiles only when told to."""
        if not self.compile_decoding or self.device.type == "cuda":
            return {}
        config = CompileConfig()
        config._compile_all_devices = True  # transformers' own switch (a private field of CompileConfig)
        return {"compile_config": config}

    def _decodes_in_place(self, width: int, new_tokens: int) -> bool:
        """A static cache for a CPU call of no more new tokens than its prompt width: growing the cache copies
        all of it every step, while a static one makes every step attend over its full length, which costs more
        when most of it is still to be generated (measured: 64 new tokens beside prompts of up to 467, 1.44 ->
        1.17 s static; 512 beside 19, ~15% slower). GPUs keep the dynamic cache:
        transformers compiles the decoding step whenever the cache is static, which is not measured there yet."""
        return self.static_cache and self.device.type == "cpu" and new_tokens <= width

    def _prompt(self, request: RolloutRequest) -> VisionPrompt:
        """The request's prompt, with its images made into model inputs when it has any."""
        return self.vision.prompt(request) if request.images else VisionPrompt(request.prompt_ids)

    def _completion(self, tokens: list[int], scores: list[float], limit: int, repeat_stop: int) -> Completion:
        """Trim after end-of-sequence (kept) or where repeat detection stopped the row; say why it ended.

        tokens: the row's tokens up to its own limit (anything after a stop is padding).
        """
        eos_at = tokens.index(self.eos_id) if self.eos_id in tokens else None
        if 0 <= repeat_stop <= limit and (eos_at is None or eos_at >= repeat_stop):
            return Completion(tuple(tokens[:repeat_stop]), tuple(scores[:repeat_stop]), FINISH_REPEAT)
        if eos_at is not None:
            return Completion(tuple(tokens[:eos_at + 1]), tuple(scores[:eos_at + 1]), FINISH_STOP)
        return Completion(tuple(tokens), tuple(scores), FINISH_LENGTH)


def sampling_copy(model, device: torch.device, dtype: torch.dtype):
    """A copy of `model` on `device` whose parameters are in `dtype` and whose buffers keep theirs: `.to(dtype)`
    would also round the rotary inverse frequencies (float32 in the trainer, kept out of the state dict, so no
    weight update would restore them), and the sampler's positions would drift from the trainer's as responses
    grow."""
    copied = copy.deepcopy(model).to(device).eval()
    for parameter in copied.parameters():
        parameter.data = parameter.data.to(dtype)
    return copied


def build(model, tokenizer, model_path: str, settings: EngineSettings, trainer=None) -> TorchRolloutEngine:
    """An engine sampling on the GPU when there is one (a CPU-held trainer copy is copied there), in the
    settings' rollout_dtype, compiled as rollout_compile says (text models only: images go in with the prompt's
    prefill); a vision-language model also gets its image processor from model_path."""
    parameter = next(model.parameters())
    device = sampling_device(parameter.device)
    dtype = sampling_dtype(settings.rollout_dtype, device, parameter.dtype)
    engine = TorchRolloutEngine(model, tokenizer, vision=vision_inputs_for(model, model_path), device=device,
                                dtype=dtype, own_copy=settings.own_weights)
    engine.compile_decoding = compiles_decoding(settings.rollout_compile, device, settings.own_weights) \
        and engine.vision is None
    engine.lean_decoding = decodes_lean(settings.rollout_loop, engine.compile_decoding)
    return engine
