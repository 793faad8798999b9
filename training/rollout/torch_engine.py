"""Rollouts with Hugging Face `generate` (KV cache) on the trainer's own model object."""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import torch

from training.rollout.base import (
    FINISH_LENGTH, FINISH_STOP, Completion, RolloutRequest, SamplingSettings, request_limit,
)
from training.rollout.vision import VisionInputs, VisionPrompt, check_image_requests, vision_inputs_for


class TorchRolloutEngine:
    """Samples from the very model the trainer updates, so a weight update costs nothing.

    vision: for a vision-language model, what turns requests' images into model inputs; None for text.
    """

    def __init__(self, model, tokenizer, max_batch_sequences: int = 64, vision: VisionInputs | None = None):
        self.model = model
        self.pad_id = tokenizer.pad_token_id
        self.eos_id = tokenizer.eos_token_id
        self.max_batch_sequences = max_batch_sequences
        self.vision = vision

    def update_weights(self, model) -> None:
        self.model = model

    def close(self) -> None:
        self.model = None

    def generate(self, requests: Sequence[RolloutRequest], settings: SamplingSettings) -> list[list[Completion]]:
        check_image_requests(requests, self.vision and self.vision.image_token_id,
                             getattr(self.model.config, "name_or_path", "") or "the model")
        results: list[list[Completion] | None] = [None] * len(requests)
        by_limit: dict[int, list[int]] = defaultdict(list)
        for index, request in enumerate(requests):
            by_limit[request_limit(request, settings)].append(index)
        for limit, indices in by_limit.items():
            for chunk in self._chunks(indices, requests):
                outputs = self._generate_batch([requests[i] for i in chunk], settings, limit)
                for index, completions in zip(chunk, outputs):
                    results[index] = completions
        return results  # type: ignore[return-value]

    def _chunks(self, indices: list[int], requests: Sequence[RolloutRequest]) -> list[list[int]]:
        """Split request indices so each generate call holds at most max_batch_sequences samples."""
        chunks, current, size = [], [], 0
        for index in indices:
            if current and size + requests[index].n > self.max_batch_sequences:
                chunks.append(current)
                current, size = [], 0
            current.append(index)
            size += requests[index].n
        return chunks + [current] if current else chunks

    @torch.no_grad()
    def _generate_batch(self, requests: list[RolloutRequest], settings: SamplingSettings,
                        limit: int) -> list[list[Completion]]:
        """One left-padded generate call; requests of different n are expanded row by row."""
        prompts = [self._prompt(request) for request in requests]
        row_prompts = [prompt for prompt, request in zip(prompts, requests) for _ in range(request.n)]
        rows = [prompt.prompt_ids for prompt in row_prompts]
        width = max(len(row) for row in rows)
        device = next(self.model.parameters()).device
        input_ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long, device=device)
        attention = torch.zeros_like(input_ids)
        for row_index, row in enumerate(rows):
            input_ids[row_index, width - len(row):] = torch.tensor(row, dtype=torch.long)
            attention[row_index, width - len(row):] = 1
        vision = self.vision.generate_inputs(row_prompts, input_ids, self.model.dtype) if self.vision else {}
        greedy = settings.temperature == 0
        if settings.seed is not None:
            torch.manual_seed(settings.seed)
        was_training = self.model.training
        self.model.eval()
        try:
            output = self.model.generate(
                input_ids=input_ids, attention_mask=attention, max_new_tokens=limit, do_sample=not greedy,
                temperature=None if greedy else settings.temperature, top_p=None if greedy else settings.top_p,
                top_k=None, pad_token_id=self.pad_id, eos_token_id=self.eos_id, use_cache=True,
                output_scores=True, return_dict_in_generate=True, **vision,
            )
        finally:
            self.model.train(was_training)
        new_tokens = output.sequences[:, width:]
        logprobs = self.model.compute_transition_scores(output.sequences, output.scores, normalize_logits=True)
        completions = [self._completion(tokens.tolist(), scores.tolist(), limit)
                       for tokens, scores in zip(new_tokens, logprobs)]
        grouped, start = [], 0
        for request in requests:
            grouped.append(completions[start:start + request.n])
            start += request.n
        return grouped

    def _prompt(self, request: RolloutRequest) -> VisionPrompt:
        """The request's prompt, with its images made into model inputs when it has any."""
        return self.vision.prompt(request) if request.images else VisionPrompt(request.prompt_ids)

    def _completion(self, tokens: list[int], scores: list[float], limit: int) -> Completion:
        """Trim after end-of-sequence (kept) and record why generation ended."""
        if self.eos_id in tokens:
            end = tokens.index(self.eos_id) + 1
            return Completion(tuple(tokens[:end]), tuple(scores[:end]), FINISH_STOP)
        return Completion(tuple(tokens[:limit]), tuple(scores[:limit]), FINISH_LENGTH)


def build(model, tokenizer, model_path: str, config, trainer=None) -> TorchRolloutEngine:
    """An engine over `model`; a vision-language model also gets its image processor from model_path."""
    return TorchRolloutEngine(model, tokenizer, vision=vision_inputs_for(model, model_path))
