"""How a problem becomes prompt tokens, and a response becomes training tokens."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from grading.thinking import THINK_CLOSE, THINK_OPEN

INSTRUCTION = "Solve the problem step by step. End with a line 'Answer: <answer>'."
PROMPT_TAIL_TOKENS = 16  # the prompt's last tokens read for a thinking block its chat template opened


def prompt_text(problem: str) -> str:
    """The plain-text template used by models without a chat template (the tiny preset)."""
    return f"Problem: {problem}\nSolution:"


def prompt_ids(problem: str, tokenizer, instruction: str = INSTRUCTION) -> tuple[int, ...]:
    """Prompt token ids: the tokenizer's chat template (problem, then instruction) when it has one,
    else the plain template."""
    if getattr(tokenizer, "chat_template", None):
        messages = [{"role": "user", "content": f"{problem}\n\n{instruction}" if instruction else problem}]
        ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        return tuple(ids["input_ids"] if isinstance(ids, Mapping) else ids)  # transformers 5: BatchEncoding
    return tuple(tokenizer(prompt_text(problem)).input_ids)


def vision_prompt_ids(problem: str, tokenizer, instruction: str = INSTRUCTION, images: int = 1) -> tuple[int, ...]:
    """Prompt token ids for a vision-language model: its chat template with `images` image placeholders
    before the problem and instruction (one placeholder token each; the rollout engine expands them)."""
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(f"tokenizer {getattr(tokenizer, 'name_or_path', '')!r} has no chat template, so it has "
                         "no place for an image; use a vision-language model's own tokenizer")
    text = f"{problem}\n\n{instruction}" if instruction else problem
    messages = [{"role": "user", "content": [{"type": "image"}] * images + [{"type": "text", "text": text}]}]
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    return tuple(ids["input_ids"] if isinstance(ids, Mapping) else ids)


def response_ids(response: str, tokenizer) -> tuple[int, ...]:
    """A reference response as the model should emit it: leading space, then end-of-sequence."""
    return tuple(tokenizer(" " + response).input_ids) + (tokenizer.eos_token_id,)


def decode_response(token_ids, tokenizer, prompt: Sequence[int] = ()) -> str:
    """The response text as graded and stored: special tokens left out except the thinking tags (a tokenizer may
    register them as special: dropped, the answer could not be told from the thinking), and `<think>` first
    when the prompt's chat template opened the thinking block (DeepSeek-R1's distills end the prompt with
    '<think>'), so an answer is read only after the model closes it and a response cut off mid-thought has none."""
    dropped = _special_ids_but_thinking(tokenizer, len(tokenizer))  # the size: tokens added later are seen
    text = tokenizer.decode([token for token in token_ids if token not in dropped], skip_special_tokens=False)
    return THINK_OPEN + text if prompt and prompt_opens_thinking(prompt, tokenizer) else text


@functools.lru_cache(maxsize=8)
def _special_ids_but_thinking(tokenizer, size: int) -> frozenset[int]:
    """Ids decode(skip_special_tokens=True) would drop, less those of the thinking tags."""
    special = set(tokenizer.all_special_ids)
    special |= {token_id for token_id, token in getattr(tokenizer, "added_tokens_decoder", {}).items()
                if getattr(token, "special", False)}
    return frozenset(token_id for token_id in special
                     if tokenizer.convert_ids_to_tokens(token_id) not in (THINK_OPEN, THINK_CLOSE))


def prompt_opens_thinking(prompt: Sequence[int], tokenizer) -> bool:
    """Whether the prompt ends inside a <think> block (an opening tag after the last closing one)."""
    return _tail_opens_thinking(tokenizer, tuple(prompt[-PROMPT_TAIL_TOKENS:]))


@functools.lru_cache(maxsize=1024)
def _tail_opens_thinking(tokenizer, tail: tuple[int, ...]) -> bool:
    """Cached: the n samples of a prompt share its tail, decoded once."""
    text = tokenizer.decode(list(tail), skip_special_tokens=False)
    return text.rfind(THINK_OPEN) > text.rfind(THINK_CLOSE)
