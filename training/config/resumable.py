"""Which knobs a run may change once it has trained: the rest are its recipe, which its checkpoints carry.

Torch-free, so the web app refuses such a change when it is asked for, and the resume check
(training.resume_config) refuses it again when a run restarts from a checkpoint.
"""

from __future__ import annotations

from typing import Any, Mapping

RESUMABLE_KNOBS = frozenset({
    "iterations",  # extend (or shorten) the run
    "checkpoint_every_iterations", "evaluate_every_iterations", "stored_samples_per_iteration",  # bookkeeping
    "keep_last_checkpoints",  # retention: which old checkpoint folders stay on disk, not what the run learns
    "micro_batch_size",  # gradient accumulation: the same gradient in smaller passes (the knob to lower after an OOM)
    "vllm_sidecar_socket", "hybrid_release",  # where and how the vLLM servers run
    "nnodes", "nproc_per_node", "node_rank", "rdzv_endpoint", "rdzv_id",  # the deployment of the processes
    "tensor_parallel_size", "pipeline_parallel_size",  # megatron's layout (checkpoints are Hugging Face weights)
})


# Recipe knobs added after runs had trained, with the value in effect before they existed where today's
# default differs: a checkpoint that predates one resumes with that value (its recipe), not the new default.
LEGACY_VALUES: dict[str, Any] = {
    "truncated_counts_wrong": False,  # cut-off responses were graded on their text
}


def legacy_knobs(saved: Mapping[str, Any]) -> dict[str, Any]:
    """The LEGACY_VALUES of the knobs a saved config predates."""
    return {name: value for name, value in LEGACY_VALUES.items() if name not in saved}


def config_differences(saved: Mapping[str, Any], current: Mapping[str, Any],
                       defaults: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """(knob, checkpoint value, new value) for every changed knob outside RESUMABLE_KNOBS, in `current`'s order.

    A knob missing from the saved config (the checkpoint predates it) counts at its legacy value
    (LEGACY_VALUES), else its default; a saved knob that no longer exists is ignored.
    """
    differences = []
    for name, value in current.items():
        old = saved.get(name, LEGACY_VALUES.get(name, defaults.get(name)))
        if name not in RESUMABLE_KNOBS and old != value:
            differences.append((name, old, value))
    return differences
