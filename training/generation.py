"""Batched generation through the rollout engines (torch or vLLM): evaluations, and CoT judges of rewards."""

from __future__ import annotations

from dataclasses import dataclass
from training.rollout.base import EngineSettings
from typing import Any, Callable, Sequence

from training.prompting import decode_response, prompt_ids
from training.rollout import rollout_engines
from training.rollout.base import FINISH_STOP, RolloutRequest, SamplingSettings
from training.rollout.seeds import stream_seed


@dataclass(frozen=True)
class GeneratedResponse:
    """One sampled response: its text, its length in tokens, and whether it ended before finishing."""

    text: str
    tokens: int
    truncated: bool


# vLLM reserves room for max_model_len tokens per sequence: long-window models are capped here.
MAX_DEFAULT_WINDOW = 32768


def default_window(model_path: str) -> int:
    """The model's own context window (from its config.json), at most MAX_DEFAULT_WINDOW tokens."""
    from training.context_window import folder_window

    return min(folder_window(model_path) or MAX_DEFAULT_WINDOW, MAX_DEFAULT_WINDOW)


class ModelGenerator:
    """A model, its tokenizer and a rollout engine over it, loaded once per evaluation."""

    def __init__(self, model_path: str, rollout_engine: str = "torch", seed: int = 0,
                 max_model_len: int | None = None):
        import torch

        from training.models.loading import is_vision_language, load_model, load_tokenizer
        from training.models.memory_fit import check_inference_fits, free_gpu_bytes

        self.model_path = model_path
        on_gpu = torch.cuda.is_available()
        check_inference_fits(model_path, on_gpu, free_gpu_bytes())
        self.tokenizer = load_tokenizer(model_path)
        self.model = load_model(model_path, dtype="bfloat16" if on_gpu else "float32")
        self.model.to("cuda" if on_gpu else "cpu").eval()
        self.sees_images = is_vision_language(self.model.config)  # a vision-language model
        settings = EngineSettings(seed=seed, max_model_len=max_model_len or default_window(model_path))
        self.engine = rollout_engines.get(rollout_engine)(self.model, self.tokenizer, model_path, settings)

    def generate(self, prompts: Sequence[tuple[int, ...]], n: int, max_tokens: int, temperature: float,
                 top_p: float, seed: int, images: Sequence[Sequence[Any]] | None = None,
                 stream_keys: Sequence[tuple[int, ...]] | None = None) -> list[list[GeneratedResponse]]:
        """n responses per prompt (token ids), in order; temperature 0 is greedy.

        images: per prompt, its images (PIL images or file paths), one per image placeholder of the prompt.
        stream_keys: per prompt, what identifies it (non-negative integers): sample j of a prompt then draws
        from stream_seed(seed, *key, j), whatever the batch holds; without them, from the prompt's place in
        this call.
        """
        settings = SamplingSettings(max_new_tokens=max_tokens, temperature=temperature, top_p=top_p, seed=seed)
        images = images if images is not None else [()] * len(prompts)
        keys = stream_keys if stream_keys is not None else [None] * len(prompts)
        requests = [RolloutRequest(tuple(prompt), n=n, images=tuple(prompt_images),
                                   sample_seeds=tuple(stream_seed(seed, *key, sample) for sample in range(n))
                                   if key is not None else ())
                    for prompt, prompt_images, key in zip(prompts, images, keys, strict=True)]
        outputs = self.engine.generate(requests, settings)
        return [[self._response(completion, prompt) for completion in completions]
                for prompt, completions in zip(prompts, outputs)]

    def _response(self, completion, prompt) -> GeneratedResponse:
        return GeneratedResponse(text=decode_response(completion.token_ids, self.tokenizer, tuple(prompt)),
                                 tokens=len(completion.token_ids), truncated=completion.finish_reason != FINISH_STOP)

    def close(self) -> None:
        self.engine.close()
        self.model = None


def text_generate(generator: ModelGenerator, max_tokens: int, seed: int) -> Callable[[list[str]], list[str]]:
    """The generator as a CoT judge's generate(prompts) -> texts: each prompt as one user message of the chat
    template (the bare text without one), one greedy output each, the whole batch in one engine call."""
    def generate(prompts: list[str]) -> list[str]:
        tokenizer = generator.tokenizer
        ids = [prompt_ids(prompt, tokenizer, instruction="") if getattr(tokenizer, "chat_template", None)
               else tuple(tokenizer(prompt).input_ids) for prompt in prompts]
        outputs = generator.generate(ids, n=1, max_tokens=max_tokens, temperature=0.0, top_p=1.0, seed=seed)
        return [samples[0].text for samples in outputs]
    return generate
