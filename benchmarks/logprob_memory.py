"""Peak memory and time of the trainer's token log-probs, full logits against chunks of the decoder's states.

A gradient pass (forward, then backward of a weighted sum) over --rows x --tokens tokens of a model with
Qwen2's 151,936-token vocabulary (random weights, --hidden wide, 2 layers: the vocabulary, not the model, is what
the logits cost). Each way runs in a fresh process; printed: its peak resident memory above what the process
held before scoring (model and inputs loaded), the median seconds of --repeats passes, and chunked/full ratios.
`full` scores through the model's logits of every position (training.trainer.logprobs.full_token_logprobs, as
the trainer did before); `chunked` through the decoder's last hidden states, --chunk-tokens at a time, each
chunk recomputed in the backward pass (what the trainer now does where the model allows it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
QWEN2_VOCABULARY = 151_936


def parse_arguments() -> argparse.Namespace:
    from training.trainer.logprobs import CHUNK_TOKENS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=1024)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--chunk-tokens", type=int, default=CHUNK_TOKENS)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--way", choices=("full", "chunked"), help=argparse.SUPPRESS)  # one way, in this process
    return parser.parse_args()


def peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


def measure(arguments: argparse.Namespace) -> dict:
    """One way's peak memory above the loaded state and its median pass time, in this process."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from training.trainer.logprobs import chunked_token_logprobs, full_token_logprobs

    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=QWEN2_VOCABULARY, hidden_size=arguments.hidden,
                         intermediate_size=2 * arguments.hidden, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, tie_word_embeddings=True)
    model = Qwen2ForCausalLM(config)
    inputs = {"input_ids": torch.randint(0, QWEN2_VOCABULARY, (arguments.rows, arguments.tokens)),
              "attention_mask": None, "position_ids": None}
    weights = torch.linspace(-1.0, 1.0, arguments.rows * (arguments.tokens - 1)).view(arguments.rows, -1)
    before = peak_kib()
    seconds = []
    for _ in range(arguments.repeats):
        model.zero_grad(set_to_none=True)
        started = time.perf_counter()
        if arguments.way == "full":
            values = full_token_logprobs(model, inputs, 1.0)
        else:
            values = chunked_token_logprobs(model, inputs, 1.0, arguments.chunk_tokens)
        (values * weights).sum().backward()
        seconds.append(time.perf_counter() - started)
        del values
    return {"peak_mib": (peak_kib() - before) / 1024, "seconds": statistics.median(seconds)}


def main() -> None:
    arguments = parse_arguments()
    if arguments.way:
        print(json.dumps(measure(arguments)))
        return
    results = {}
    for way in ("full", "chunked"):
        finished = subprocess.run([sys.executable, __file__, "--way", way, "--rows", str(arguments.rows),
                                   "--tokens", str(arguments.tokens), "--hidden", str(arguments.hidden),
                                   "--chunk-tokens", str(arguments.chunk_tokens), "--repeats", str(arguments.repeats)],
                                  capture_output=True, text=True, check=True)
        results[way] = json.loads(finished.stdout.strip().splitlines()[-1])
    predictions = arguments.rows * (arguments.tokens - 1)
    full_logits_mib = predictions * QWEN2_VOCABULARY * 4 / 2**20
    print(f"{arguments.rows} rows x {arguments.tokens} tokens, vocabulary {QWEN2_VOCABULARY:,}, hidden "
          f"{arguments.hidden}: one float32 copy of the logits is {full_logits_mib:,.0f} MiB; chunks of "
          f"{arguments.chunk_tokens} positions; median of {arguments.repeats} gradient passes")
    for way, result in results.items():
        print(f"{way:<8} peak above loaded {result['peak_mib']:>9,.0f} MiB   {result['seconds']:>7.2f} s a pass")
    full, chunked = results["full"], results["chunked"]
    print(f"chunked/full: peak memory {chunked['peak_mib'] / max(full['peak_mib'], 1e-9):.2f}x, "
          f"time {chunked['seconds'] / full['seconds']:.2f}x")


if __name__ == "__main__":
    main()
