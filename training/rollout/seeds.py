"""Random streams of rollouts: one seed per sampled response, derived from what identifies the response.

A response's stream depends only on its key (for RL: run seed, iteration, rank, the group's draw, sample
index), never on how an engine chunks or orders its batch, so two draws of one problem sample
independently while a rerun with the same key samples the same tokens.
"""

from __future__ import annotations

import hashlib

import numpy as np

SEED_BITS = 62  # below 2**63 for every consumer (torch.Generator, vLLM's int seed); room for vLLM's seed + j


def stream_seed(*key: int) -> int:
    """A well-mixed SEED_BITS-bit seed for the non-negative integers `key` (numpy's SeedSequence hash)."""
    if any(part < 0 for part in key):
        raise ValueError(f"stream keys must be non-negative integers; got {key}")
    low, high = np.random.SeedSequence([int(part) for part in key]).generate_state(2, dtype=np.uint32)
    return ((int(high) << 32) | int(low)) >> (64 - SEED_BITS)


def text_key(text: str) -> int:
    """A stable non-negative integer for a name, as a stream key part (a benchmark, a problem id): the same in
    every process, unlike hash()."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
