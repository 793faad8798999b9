"""Section execution: the trainer backend, its parallelism and the machines a run trains on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from common.knobs import knob
from training.config.limits import MAX_NODES, MAX_PARALLEL_SIZE, MAX_PROCESSES_PER_NODE
from training.registries import trainer_backends

# "noop-test" writes synthetic iterations and trains nothing: for tests of the job plumbing only, never a default.
TRAINER_BACKENDS = tuple(trainer_backends.entries)
MEGATRON_PRECISIONS = ("auto", "bf16", "fp32")


@dataclass(frozen=True)
class ExecutionSection:
    section_name: ClassVar[str] = "execution"
    section_title: ClassVar[str] = "Execution"

    trainer_backend: str = knob(
        "torch",
        "Trainer: torch (one process, torchrun for several GPUs) or megatron. "
        "'noop-test' trains nothing and exists for plumbing tests.",
        group="execution",
        choices=TRAINER_BACKENDS,
        test_only_choices=("noop-test",),
    )
    tensor_parallel_size: int = knob(
        1,
        "megatron only: GPUs each layer's weights are split over (must divide the "
        "heads, key-value heads and ffn size).",
        group="execution",
        minimum=1,
        maximum=MAX_PARALLEL_SIZE,
    )
    pipeline_parallel_size: int = knob(
        1,
        "megatron only: pipeline stages the layers are split into (must divide the layer count).",
        group="execution",
        minimum=1,
        maximum=MAX_PARALLEL_SIZE,
    )
    megatron_precision: str = knob(
        "auto",
        "megatron only: weights in bf16 (fp32 main copies in the optimizer) or "
        "fp32; auto = bf16 on a GPU that supports it, else fp32.",
        group="execution",
        choices=MEGATRON_PRECISIONS,
    )
    nnodes: int = knob(
        1,
        "Machines the run trains on (torchrun --nnodes; above 1 needs rdzv_endpoint).",
        group="execution",
        minimum=1,
        maximum=MAX_NODES,
    )
    nproc_per_node: int = knob(
        1,
        "Training processes per machine, usually one per GPU (torchrun "
        "--nproc_per_node; 1 with nnodes 1 = no torchrun).",
        group="execution",
        minimum=1,
        maximum=MAX_PROCESSES_PER_NODE,
    )
    node_rank: int | None = knob(
        None,
        "This machine's rank among nnodes for a static rendezvous (empty = assigned by the c10d rendezvous).",
        group="execution",
        minimum=0,
        maximum=MAX_NODES - 1,
    )
    rdzv_endpoint: str | None = knob(
        None,
        "host:port of the c10d rendezvous every node joins (empty = this machine alone, a free local port).",
        group="execution",
    )
    rdzv_id: str | None = knob(
        None, "Rendezvous id shared by the run's nodes (empty = derived from the run). Command line only: the web "
        "app always derives it, so no run can join another's rendezvous.", group="execution", deployment=True,
    )

    def section_errors(self) -> dict[str, str]:
        errors = {}
        for name in ("tensor_parallel_size", "pipeline_parallel_size"):
            if getattr(self, name) > 1 and self.trainer_backend != "megatron":
                errors[name] = "above 1 needs trainer_backend megatron"
        if self.node_rank is not None and self.node_rank >= self.nnodes:
            errors["node_rank"] = f"must be below nnodes ({self.nnodes})"
        if self.nnodes > 1 and not self.rdzv_endpoint:
            errors["rdzv_endpoint"] = "needed when nnodes > 1: host:port of the rendezvous every node joins"
        return errors
