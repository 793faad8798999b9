"""The `tiny` preset: a Qwen2-architecture model of a few million parameters with a tokenizer
trained locally, created on first use so everything works offline.

The head is untied from the embeddings: a tiny model with tied, scaled-up embeddings was seen to
repeat one token forever (PLATFORM.md).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from training.models.presets import ARCHITECTURE, READY_MARKER, TINY
from training.tasks.arithmetic import DIFFICULTY_LEVELS, generate, step_by_step

PRESET_NAME = TINY
VOCAB_SIZE = 512
SPECIAL_TOKENS = {"pad": "<pad>", "bos": "<s>", "eos": "</s>", "unk": "<unk>"}


def tokenizer_corpus(seed: int = 0) -> list[str]:
    """Text the tokenizer is trained on: the synthetic task plus generic prose and LaTeX."""
    problems = generate(2000, seed=seed, difficulties=tuple(DIFFICULTY_LEVELS), split=None)
    texts = [f"Problem: {p.problem}\nSolution: {step_by_step(p)}" for p in problems]
    texts += [
        "Solve the problem step by step, then give the final answer in \\boxed{}.",
        "The answer is \\frac{1}{2}, so \\boxed{\\frac{1}{2}}. Let x = 3; then x^2 + 2x = 15.",
        "Read two integers from standard input and print their sum. def solve(): print(a + b)",
        "Therefore the probability is 3/4 and the area is 12 square units.",
    ]
    return texts


def train_tokenizer(seed: int = 0):
    """A byte-level BPE tokenizer with single-digit numbers, as a Hugging Face fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE(unk_token=SPECIAL_TOKENS["unk"]))
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=list(SPECIAL_TOKENS.values()),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    bpe.train_from_iterator(tokenizer_corpus(seed), trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token=SPECIAL_TOKENS["bos"], eos_token=SPECIAL_TOKENS["eos"],
        pad_token=SPECIAL_TOKENS["pad"], unk_token=SPECIAL_TOKENS["unk"],
    )


def build_model(tokenizer, seed: int = 0):
    """A freshly initialised Qwen2 causal LM sized for CPUs and tests."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=len(tokenizer), tie_word_embeddings=False, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, **ARCHITECTURE,
    )
    torch.manual_seed(seed)
    return Qwen2ForCausalLM(config)


def create_tiny_preset(directory: Path, seed: int = 0) -> Path:
    """Write tokenizer and weights (safetensors) to `directory` once; safe across processes."""

    def write(staging: Path) -> None:
        tokenizer = train_tokenizer(seed)
        model = build_model(tokenizer, seed)
        model.generation_config.pad_token_id = tokenizer.pad_token_id
        model.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)

    return write_preset_once(directory, write)


def write_preset_once(directory: Path, write: Callable[[Path], None]) -> Path:
    """Run write(staging folder) once and move the result to `directory`; safe across processes."""
    directory = Path(directory)
    if (directory / READY_MARKER).exists():
        return directory
    directory.parent.mkdir(parents=True, exist_ok=True)
    with open(directory.parent / f".{directory.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (directory / READY_MARKER).exists():
            return directory
        staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}-", dir=directory.parent))
        write(staging)
        (staging / READY_MARKER).write_text("ok\n")
        if directory.exists():
            shutil.rmtree(directory)
        os.replace(staging, directory)
    return directory
