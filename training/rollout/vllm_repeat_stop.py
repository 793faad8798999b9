"""Repeat stopping inside vLLM's decoding loop: a V1 logits processor that ends a degenerate response at once.

A request opts in through SamplingParams.extra_args[EXTRA_ARG] = RepeatLimits.as_dict() and names its stop
token (the tokenizer's EOS) under EXTRA_ARG_EOS. After every decoding step the processor updates, per tracked
request and per period p <= max_period, how many trailing tokens equal the token p places before them
(constant work a step); once the last p * max(min_repeats, ceil(min_span / p)) tokens are p-periodic, the
request's next token is forced to EOS. The engine recognises the forced EOS (the tokens before it end in
a repeat), drops it and reports FINISH_REPEAT. vLLM imports it by name (vllm_engine.REPEAT_STOP_PROCESSOR).
"""

from __future__ import annotations

import torch
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor
from vllm.v1.sample.logits_processor.builtin import process_dict_updates

EXTRA_ARG = "mirrorlab_repeat_stop"
EXTRA_ARG_EOS = "mirrorlab_repeat_stop_eos"


class RepeatWatch:
    """One request's running periodicity counts over its output tokens (a live list owned by vLLM)."""

    def __init__(self, limits: dict[str, int], eos_id: int, output_ids: list[int]):
        self.output_ids = output_ids
        self.eos_id = eos_id
        periods = range(1, limits["max_period"] + 1)
        # trailing positions t with tokens[t] == tokens[t - p] needed for the tail to be p-periodic over its span
        self.needed = {p: p * max(limits["min_repeats"], -(-limits["min_span"] // p)) - p for p in periods}
        self.matches = {p: 0 for p in periods}
        self.seen = 0

    def repeating(self) -> bool:
        """Take in the tokens generated since the last call; True once the tail is a degenerate repeat."""
        tokens = self.output_ids
        while self.seen < len(tokens):
            position = self.seen
            for period in self.matches:
                equal = position >= period and tokens[position] == tokens[position - period]
                self.matches[period] = self.matches[period] + 1 if equal else 0
            self.seen += 1
        return any(self.matches[p] >= self.needed[p] for p in self.matches)


class RepeatStopLogitsProcessor(LogitsProcessor):
    """Forces EOS as the next token of every opted-in request whose output ends in a degenerate repeat."""

    def __init__(self, vllm_config, device: torch.device, is_pin_memory: bool):
        self.watches: dict[int, RepeatWatch] = {}  # batch row -> watch
        self.stopping: list[tuple[int, int]] = []  # (row, eos id) to force this step

    def is_argmax_invariant(self) -> bool:
        return False  # it changes what greedy decoding picks

    @staticmethod
    def _watch(params, _prompt_ids, output_ids) -> RepeatWatch | None:
        limits = (params.extra_args or {}).get(EXTRA_ARG)
        return None if limits is None else RepeatWatch(limits, params.extra_args[EXTRA_ARG_EOS], output_ids)

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        process_dict_updates(self.watches, batch_update, self._watch)
        self.stopping = [(row, watch.eos_id) for row, watch in self.watches.items() if watch.repeating()]

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        for row, eos_id in self.stopping:
            logits[row] = float("-inf")
            logits[row, eos_id] = 0.0
        return logits
