"""The rollout interface: prompts in, sampled token ids with log-probs and finish reasons out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence

from training.rollout.repeats import RepeatLimits
from training.rollout.seeds import stream_seed

FINISH_STOP = "stop"  # the model emitted end-of-sequence (kept as the last token)
FINISH_LENGTH = "length"  # the token limit of this call was reached
FINISH_REPEAT = "repeat"  # repeat detection ended a degenerate response


@dataclass(frozen=True)
class SamplingSettings:
    """How to sample; temperature 0 means greedy decoding."""

    max_new_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int | None = None  # makes a call reproducible (a resumed run samples what the original did)
    # stop a response as soon as its tail repeats (training.rollout.repeats.RepeatLimits); None = never
    stop_repeats: RepeatLimits | None = None


@dataclass(frozen=True)
class RolloutRequest:
    """Token ids to continue (a prompt, or a prompt plus a partial response) and how many samples.

    images (vision-language models only): PIL images or image file paths, one per image placeholder
    token in prompt_ids, in order; each placeholder is a single token (training.prompting.vision_prompt_ids),
    which the engine expands to the image's size.
    """

    prompt_ids: tuple[int, ...]
    n: int = 1
    max_new_tokens: int | None = None  # overrides SamplingSettings.max_new_tokens for this request
    images: tuple[Any, ...] = ()
    # one random-stream seed per sample (n of them); empty = derived from SamplingSettings.seed and the
    # request's position in the call (request_seeds)
    sample_seeds: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.sample_seeds and len(self.sample_seeds) != self.n:
            raise ValueError(f"a request for {self.n} samples carries {len(self.sample_seeds)} sample seeds")


@dataclass(frozen=True)
class Completion:
    """One sampled continuation: generated token ids, their log-probs under the sampler, why it ended."""

    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    finish_reason: str


@dataclass(frozen=True)
class EngineSettings:
    """How a rollout engine is built (the run's knobs of the same names; evaluations set a few).

    seed: the engine's own seed (vLLM); max_model_len: the context window (None = the model's own);
    rollout_dtype: auto, float32, bfloat16 or float16; rollout_compile: auto, on or off and
    rollout_loop: auto, generate or lean (torch engine);
    hybrid_release and vllm_sidecar_socket: vllm-hybrid only;
    own_weights: sample from a copy of the weights that only update_weights changes (rollouts that overlap
    training must not see the optimizer's half-done steps).
    """

    seed: int = 0
    max_model_len: int | None = None
    rollout_dtype: str = "auto"
    rollout_compile: str = "auto"
    rollout_loop: str = "auto"
    hybrid_release: str = "restart"
    vllm_sidecar_socket: str | None = None
    own_weights: bool = False

    @classmethod
    def of_run(cls, config) -> EngineSettings:
        """The engine settings of an RLConfig."""
        return cls(seed=config.seed, max_model_len=config.max_model_len, rollout_dtype=config.rollout_dtype,
                   rollout_compile=config.rollout_compile, rollout_loop=config.rollout_loop,
                   hybrid_release=config.hybrid_release, vllm_sidecar_socket=config.vllm_sidecar_socket,
                   own_weights=config.overlap_rollouts)


class RolloutEngine(Protocol):
    """Everything the RL loop, evaluations and long2short ask of a rollout engine."""

    def generate(self, requests: Sequence[RolloutRequest], settings: SamplingSettings) -> list[list[Completion]]:
        """For each request, its n completions, in order."""

    def update_weights(self, model) -> None:
        """Make the engine sample from `model`'s current weights."""

    def release_for_training(self) -> None:
        """Before an update: free the rollout memory the trainer needs (hybrid engines) or do nothing."""

    def take_phase_seconds(self) -> dict[str, float]:
        """Seconds of each switch phase since the last call, as iteration metrics ({} without phases)."""

    def close(self) -> None:
        """Release the engine's memory and processes."""


class SharedDeviceEngine:
    """The protocol's answers for an engine that shares the devices with the trainer: nothing to release,
    no phases to time."""

    def release_for_training(self) -> None:
        return None

    def take_phase_seconds(self) -> dict[str, float]:
        return {}


def request_seeds(request: RolloutRequest, index: int, settings: SamplingSettings) -> list[int | None]:
    """The seed of each of the request's samples: its own, else derived from (settings.seed, index, sample).

    None (no seed anywhere) means an unseeded draw from the process's random state.
    """
    if request.sample_seeds:
        return list(request.sample_seeds)
    if settings.seed is None:
        return [None] * request.n
    return [stream_seed(settings.seed, index, sample) for sample in range(request.n)]


def check_room(index: int, prompt_tokens: int, limit: int, window: int, whose: str) -> None:
    """Refuse a request whose prompt (`prompt_tokens`, image placeholders expanded) plus `limit` new tokens exceed
    the context `window`: engines never cut short."""
    if prompt_tokens + limit > window:
        raise ValueError(f"request {index}: a prompt of {prompt_tokens} tokens plus {limit} new tokens "
                         f"exceeds {whose} of {window}; lower the response limit or shorten the prompt")


def request_limit(request: RolloutRequest, settings: SamplingSettings) -> int:
    return settings.max_new_tokens if request.max_new_tokens is None else request.max_new_tokens
