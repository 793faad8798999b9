"""Hybrid deployment switch times: train-to-rollout and rollout-to-train seconds, weight transfer s/GB.

The `vllm-hybrid` engine (vLLM in its own process, released between rollouts by `--release restart`
or `sleep`) is cycled a few times on the tiny preset (or --model-dir), and its median phase times
are printed beside the in-process `vllm` engine's weight-update time on the same model. On a GPU
host the trainer's weights live on the GPU and are offloaded during rollouts; use `--release sleep`
there (vLLM's sleep mode, GPU only). The report's figures at its scale: under a minute to switch
from training to rollouts, about 10 s for the weight handover.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from training.rollout.base import EngineSettings

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch is imported
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=3, help="rollout / release / update cycles (median)")
    parser.add_argument("--release", choices=("restart", "sleep"), default="restart")
    parser.add_argument("--update-repeats", type=int, default=5, help="timed in-process updates (median)")
    parser.add_argument("--model-dir", help="a saved Hugging Face model directory instead of the tiny preset")
    return parser.parse_args()


def load(model_dir: str):
    """(model on the trainer's device, tokenizer)."""
    import torch

    from training.models.loading import load_model, load_tokenizer

    model = load_model(model_dir)
    return model.to("cuda") if torch.cuda.is_available() else model, load_tokenizer(model_dir)


def hybrid_cycles(model, tokenizer, model_dir: str, release: str, cycles: int) -> list[dict[str, float]]:
    """Phase seconds of each cycle: rollout, release and onload, then offload, wake and handover."""
    from training.hybrid.engine import build
    from training.rollout.base import RolloutRequest, SamplingSettings

    requests = [RolloutRequest(tuple(tokenizer("Problem: 1+2\nSolution:")["input_ids"]), n=4)]
    settings = SamplingSettings(max_new_tokens=32, temperature=1.0, seed=0)
    engine = build(model, tokenizer, model_dir, EngineSettings(seed=0, hybrid_release=release))
    engine.take_phase_seconds()  # the first start is not a switch
    measured = []
    try:
        for _ in range(cycles):
            engine.generate(requests, settings)
            engine.release_for_training()
            engine.update_weights(model)
            measured.append(engine.take_phase_seconds())
    finally:
        engine.close()
    return measured


def in_process_update_seconds(model, tokenizer, model_dir: str, repeats: int) -> tuple[float, float]:
    """(median seconds of the in-process engine's weight update, gigabytes sent)."""
    from training.rollout.vllm_engine import build, weight_buckets

    engine = build(model, tokenizer, model_dir, EngineSettings(seed=0))
    try:
        dtype = engine.llm.llm_engine.model_config.dtype
        gigabytes = sum(t.numel() * t.element_size() for bucket in weight_buckets(model.state_dict(), dtype, 2**40)
                        for t in bucket.values()) / 1e9
        durations = []
        for _ in range(repeats):
            started = time.perf_counter()
            engine.update_weights(model)
            durations.append(time.perf_counter() - started)
    finally:
        engine.close()
    return statistics.median(durations), gigabytes


def median_of(cycles: list[dict[str, float]], name: str) -> float:
    return statistics.median(cycle.get(name, 0.0) for cycle in cycles)


def main() -> None:
    args = parse_arguments()
    import torch

    from training.models.tiny import create_tiny_preset

    model_dir = args.model_dir or str(create_tiny_preset(Path(tempfile.mkdtemp()) / "tiny"))
    model, tokenizer = load(model_dir)
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU"
    parameters = sum(p.numel() for p in model.parameters()) / 1e6
    cycles = hybrid_cycles(model, tokenizer, model_dir, args.release, args.cycles)
    update, gigabytes = in_process_update_seconds(model, tokenizer, model_dir, args.update_repeats)
    print(f"model {model_dir} ({parameters:.1f}M parameters) on {device}; hybrid release mode {args.release}; "
          f"median of {args.cycles} cycles")
    rows = [
        ("train -> rollout (offload + wake + handover)", median_of(cycles, "hybrid_train_to_rollout_seconds")),
        ("  trainer offload", median_of(cycles, "hybrid_offload_seconds")),
        (f"  vLLM wake ({args.release})", median_of(cycles, "hybrid_wake_seconds")),
        ("  weight handover (other process)", median_of(cycles, "hybrid_weight_handover_seconds")),
        ("rollout -> train (release + onload)", median_of(cycles, "hybrid_rollout_to_train_seconds")),
        ("  vLLM release", median_of(cycles, "hybrid_release_seconds")),
        ("  trainer onload", median_of(cycles, "hybrid_onload_seconds")),
        ("in-process vllm engine: weight update", update),
    ]
    for label, seconds in rows:
        print(f"{label:<46} {seconds:9.3f} s")
    handover_rate = median_of(cycles, "hybrid_handover_seconds_per_gigabyte")
    print(f"{'weight transfer, hybrid (s per GB)':<46} {handover_rate:9.3f}   "
          f"({median_of(cycles, 'hybrid_weight_gigabytes'):.4f} GB per handover)")
    print(f"{'weight transfer, in-process (s per GB)':<46} {update / gigabytes:9.3f}   ({gigabytes:.4f} GB)")


if __name__ == "__main__":
    main()
