"""Decoding one torch engine call in a loop of our own: one step function holds the forward pass, the sampler and
the bookkeeping.

Hugging Face `generate` spends every step on work outside the model: its logits processors and stopping
criteria, growing the attention mask and position ids, bookkeeping of finished rows. Each of those is a few
kernel launches, which on a GPU cost more than a small model's arithmetic. Here the call decodes into a
static KV cache (prefilled by training.rollout.bucketed_prefill) with a step function whose shapes stay fixed
for the whole call: the forward pass of every row's last token, then the seeded inverse-CDF draw
(token_sampler.choose_tokens), so that `torch.compile` can take the whole step as one graph (on a GPU, with
CUDA graphs, one launch).
The attention mask never changes during the call: every cache position past the prompts is open from the
start, and causality hides those not yet written.

The step also does the call's bookkeeping, in place on buffers of fixed addresses (RowState): it writes
each row's token and log-prob, marks rows that ended (end of sequence, their own token limit) and moves every
row on, so that a compiled step on a GPU is one CUDA graph replay and nothing else. Rows that ended are padded
from then on. The loop asks whether every row has ended only every `check_every` steps, so the host waits on
the device that often; repeat stops, when asked for, are looked for outside the step.
Uncompiled, the rows that ended leave the batch every `segment_steps` steps (as in segmented decoding); a
compiled step keeps every row to the end, since each new row count would be a new graph.

Tokens and log-probs are those of segmented decoding over a static cache: the same draws from the same
per-row streams (tests/training/test_lean_decoding.py).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from transformers import StaticCache
from transformers.cache_utils import StaticLayer

from training.rollout.repeats import repeating_rows
from training.rollout.segmented_decoding import SEGMENT_STEPS, DecodeCall, Decoded
from training.rollout.token_sampler import choose_tokens, processed_logprobs

CHECK_EVERY = 8  # steps between two looks at whether every row has ended


class RowState(NamedTuple):
    """A call's per-row state, which the step reads and updates in place. `live` indexes the rows still in the
    batch into the call's rows (tokens, logprobs, uniforms); the other per-row tensors hold live rows only."""

    live: torch.Tensor  # (live,) long
    last: torch.Tensor  # (live, 1) each row's last token
    positions: torch.Tensor  # (live, 1) that token's position
    mask: torch.Tensor  # (live, cache positions) the attention mask, fixed for the call
    ended: torch.Tensor  # (live,) bool
    limits: torch.Tensor  # (live,) each row's new-token limit
    uniforms: torch.Tensor | None  # (rows, longest) float64 stream of each row; None = greedy
    tokens: torch.Tensor  # (rows, longest) chosen tokens, pad after a row's end
    logprobs: torch.Tensor  # (rows, longest) float32
    done: torch.Tensor  # () steps taken

    def key(self) -> tuple:
        """What a reused state must match: rows, cache positions, longest limit, greedy or not."""
        return (*self.mask.shape, self.tokens.shape[1], self.uniforms is None)


def lean_cache_supported(cache) -> bool:
    """A static cache of full-attention layers that count their own positions (transformers 5's StaticLayer):
    the step then needs no cache positions from the caller, and its shapes stay fixed."""
    return isinstance(cache, StaticCache) and bool(cache.layers) and all(
        type(layer) is StaticLayer and isinstance(getattr(layer, "cumulative_length", None), torch.Tensor)
        for layer in cache.layers)


def sample_step(model, last_tokens: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor, cache,
                uniforms: torch.Tensor | None, temperature: float, top_p: float) -> tuple[torch.Tensor, torch.Tensor]:
    """One decoding step: (rows, 1) last tokens at (rows, 1) positions -> (rows,) chosen tokens and their
    log-probs under the processed distribution (temperature, top-p); uniforms (rows,) float64, None = greedy."""
    logits = model(input_ids=last_tokens, attention_mask=mask, position_ids=positions, past_key_values=cache,
                   use_cache=True, logits_to_keep=1).logits[:, -1]
    logprobs = processed_logprobs(logits.float(), temperature, top_p)
    chosen = choose_tokens(logprobs, uniforms)
    return chosen.squeeze(1), logprobs.gather(1, chosen).squeeze(1)


def decode_step(model, state: RowState, cache, temperature: float, top_p: float, pad_id: int, eos_id: int) -> None:
    """One step of every live row, its bookkeeping included, in place on `state` and `cache`."""
    done = state.done
    column = done.view(1)  # a 1-element index: a 0-d one would be read back to the host as a number
    uniforms = None if state.uniforms is None else state.uniforms[state.live, column]
    chosen, chosen_logprobs = sample_step(model, state.last, state.positions, state.mask, cache, uniforms,
                                          temperature, top_p)
    chosen = chosen.masked_fill(state.ended, pad_id)
    state.tokens[state.live, column] = chosen
    state.logprobs[state.live, column] = chosen_logprobs.float()
    state.ended.logical_or_((chosen == eos_id) | (state.limits <= done + 1))
    state.last.copy_(chosen.unsqueeze(1))
    state.positions.add_(1)
    done.add_(1)


def compiled_step(device: torch.device):
    """decode_step compiled: CUDA graphs on a GPU (reduce-overhead), inductor's code on a CPU.

    The first shape compiles static; a second makes the rows and cache positions symbolic (automatic dynamic
    shapes), so calls of other row counts reuse that code instead of compiling each anew: with static shapes
    every new count took a compilation, and after torch's 8 the step silently ran uncompiled."""
    mode = "reduce-overhead" if device.type == "cuda" else None
    return torch.compile(decode_step, mode=mode, dynamic=None)


def cudagraph_skips() -> int:
    """How many times torch has run a compiled function without its CUDA graphs so far (it says why only under
    TORCH_LOGS=cudagraphs)."""
    from torch._dynamo.utils import counters
    return counters["inductor"]["cudagraph_skips"]


def row_state(call: DecodeCall, cache_positions: int, reuse: RowState | None = None) -> RowState:
    """The call's starting state; written into `reuse` when its shapes fit (a compiled step's CUDA graph then
    replays on the same addresses instead of recording anew), else into new tensors."""
    rows, width = call.input_ids.shape
    longest = max(call.row_limits)
    if reuse is None or reuse.key() != (rows, cache_positions, longest, call.uniforms is None):
        device = call.input_ids.device
        reuse = RowState(
            live=torch.empty(rows, dtype=torch.long, device=device),
            last=torch.empty((rows, 1), dtype=torch.long, device=device),
            positions=torch.empty((rows, 1), dtype=call.attention.dtype, device=device),
            mask=call.attention.new_empty((rows, cache_positions)),
            ended=torch.empty(rows, dtype=torch.bool, device=device),
            limits=torch.empty(rows, dtype=torch.long, device=device),
            uniforms=None if call.uniforms is None else torch.empty_like(call.uniforms),
            tokens=torch.empty((rows, longest), dtype=torch.long, device=device),
            logprobs=torch.empty((rows, longest), dtype=torch.float32, device=device),
            done=torch.empty((), dtype=torch.long, device=device))
    _start(reuse, call)
    return reuse


def _start(state: RowState, call: DecodeCall) -> None:
    """Write the call's starting values into `state`, in place."""
    width = call.input_ids.shape[1]
    torch.arange(len(state.live), out=state.live)
    state.last.copy_(call.input_ids[:, -1:])
    state.positions.copy_((call.attention.sum(dim=1, keepdim=True) - 1).clamp(min=0))  # as generate numbers rows
    state.mask.fill_(1)  # positions past the prompts: open, hidden by causality until written
    state.mask[:, :width] = call.attention
    state.ended.zero_()
    state.limits.copy_(torch.tensor(call.row_limits))
    if state.uniforms is not None:
        state.uniforms.copy_(call.uniforms)
    state.tokens.fill_(call.pad_id)
    state.logprobs.zero_()
    state.done.zero_()


def mark_static(state: RowState) -> None:
    """Tell torch.compile that these buffers keep their addresses from call to call (no copies into the graph)."""
    for tensor in state:
        if tensor is not None:
            torch._dynamo.mark_static_address(tensor)


class KeptBuffers:
    """A compiled call's static cache and row state, kept for the next call of the same shape, whose CUDA graph
    then replays on the same addresses. New addresses would make torch record the graph again, and it keeps
    every recording, looking through them at each step."""

    def __init__(self) -> None:
        self.cache: StaticCache | None = None
        self.state: RowState | None = None

    def cache_for(self, rows: int, positions: int) -> StaticCache | None:
        """The kept cache if it holds `rows` x `positions`; otherwise what is kept is dropped (freed before a
        call allocates anew) and None is returned."""
        layer = self.cache.layers[0] if self.cache is not None else None
        if layer is not None and layer.is_initialized and layer.keys.shape[0] == rows \
                and layer.max_cache_len == positions:
            return self.cache
        self.drop()
        return None

    def state_for(self, call: DecodeCall, cache: StaticCache) -> RowState:
        """The call's row state, in the kept buffers when they fit; what it returns is kept with `cache`."""
        reuse = self.state if cache is self.cache else None
        state = row_state(call, cache.layers[0].max_cache_len, reuse)
        if state is not reuse:
            mark_static(state)
        self.cache, self.state = cache, state
        return state

    def nbytes(self) -> int:
        """Device bytes held by the kept cache."""
        if self.cache is None:
            return 0
        return sum(tensor.numel() * tensor.element_size() for layer in self.cache.layers if layer.is_initialized
                   for tensor in (layer.keys, layer.values))

    def drop(self) -> None:
        self.cache = self.state = None


@torch.no_grad()
def lean_decode(model, call: DecodeCall, cache: StaticCache, step=decode_step, check_every: int = CHECK_EVERY,
                segment_steps: int | None = SEGMENT_STEPS, state: RowState | None = None) -> Decoded:
    """Every row's tokens, decoded from `cache` (a static cache holding every prompt but its last token).

    step: decode_step or its compiled form (then give segment_steps None: the rows stay to the end);
    state: the call's row_state (made here when None).
    """
    state = state or row_state(call, cache.layers[0].max_cache_len)
    settings = call.settings
    longest = state.tokens.shape[1]
    repeat_stops = torch.full((len(state.tokens),), -1, dtype=torch.long, device=state.tokens.device)
    graphs = step is not decode_step and state.tokens.device.type == "cuda"  # CUDA graphs: a new replay a step
    for done in range(longest):
        if graphs:
            torch.compiler.cudagraph_mark_step_begin()
        step(model, state, cache, settings.temperature, settings.top_p, call.pad_id, call.eos_id)
        if settings.stop_repeats is not None:
            found = repeating_rows(state.tokens[state.live, :done + 1], settings.stop_repeats) & ~state.ended
            repeat_stops[state.live[found]] = done + 1
            state.ended.logical_or_(found)
        if (done + 1) % check_every == 0 or done + 1 == longest:
            if bool(state.ended.all()):
                break
        if segment_steps and (done + 1) % segment_steps == 0 and bool(state.ended.any()):
            keep = (~state.ended).nonzero().squeeze(1)
            if not len(keep):
                break
            state = _keep_rows(state, keep)
            _select_rows(cache, keep)
    return Decoded(state.tokens.tolist(), state.logprobs.tolist(), repeat_stops.tolist())


def _keep_rows(state: RowState, keep: torch.Tensor) -> RowState:
    """The state of the `keep` live rows only (an uncompiled step only: new shapes)."""
    return state._replace(live=state.live[keep], last=state.last[keep], positions=state.positions[keep],
                          mask=state.mask[keep], ended=state.ended[keep], limits=state.limits[keep])


def _select_rows(cache: StaticCache, keep: torch.Tensor) -> None:
    """Keep only the `keep` rows of every layer's keys and values (an uncompiled step only: new shapes)."""
    for layer in cache.layers:
        layer.keys, layer.values = layer.keys.index_select(0, keep), layer.values.index_select(0, keep)
        layer.batch_size = len(keep)
