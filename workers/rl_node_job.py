"""The other nodes of a multi-node RL run: the claiming worker asks for them, each joins without claiming the row."""

from __future__ import annotations

import logging

from common.knobs import parse_config
from training.config import RLConfig
from webapp.celery import enqueue_node_join
from webapp.jobs import JobStatus
from webapp.runs.models import RLRun
from workers.jobs import worker_name
from workers.rl_run_paths import run_paths, torchrun_run_key
from training.torchrun.launcher import JoinWatch, join_under_torchrun, other_node_ranks

logger = logging.getLogger(__name__)


def request_node_joins(run: RLRun, config: RLConfig) -> None:
    """Send one join task per other node to the gpu queue (one gpu-queue worker per node takes each)."""
    for node_index in range(1, config.nnodes):
        enqueue_node_join(run.pk, node_index, claimer=run.worker)
    RLRun.append_log(run.pk, f"asked the gpu queue for {config.nnodes - 1} more node(s) to join")


def node_watch(run_id: int, label: str, claimer: str = "") -> JoinWatch:
    """The row as a joined node sees it: prefixed log lines, the cancel flag, whether the run still runs (under
    the claim that asked for this node, when given: a run taken over by another worker has its own nodes)."""
    rows = RLRun.objects.filter(pk=run_id)
    held = rows.filter(status=JobStatus.RUNNING, **({"worker": claimer} if claimer else {}))
    return JoinWatch(
        log=lambda line: RLRun.append_log(run_id, f"[{label}] {line}"),
        cancel_requested=lambda: rows.filter(cancel_requested=True).exists(),
        still_running=held.exists,
    )


def join_rl_run(run_id: int, node_index: int, claimer: str = "") -> str:
    """Run node `node_index`'s torchrun of a running multi-node run; its failure is logged on the row. A join
    asked by a claim the run no longer holds (`claimer`) does not join: the new claim asks for its own nodes."""
    run = RLRun.objects.filter(pk=run_id).first()
    if run is None or run.status != JobStatus.RUNNING:
        logger.info("rl_run %s is not running: node %s does not join", run_id, node_index)
        return "not running"
    if claimer and run.worker != claimer:
        logger.info("rl_run %s is now held by %s, not %s: node %s does not join", run_id, run.worker, claimer,
                    node_index)
        return "taken over"
    label = f"node {node_index} on {worker_name()}"
    watch = node_watch(run_id, label, claimer)
    config = parse_config(RLConfig, run.config)
    try:
        code = join_under_torchrun(config, run_paths(run).output_dir, torchrun_run_key(run), watch,
                                   node_rank=other_node_ranks(config)[node_index - 1],
                                   node_label=f"node{node_index}")
    except Exception as error:  # the row shows why this node is missing; the rendezvous fails the main node
        logger.exception("node %s of rl_run %s failed", node_index, run_id)
        watch.log(f"failed: {type(error).__name__}: {error}")
        return JobStatus.FAILED
    return JobStatus.SUCCEEDED if code == 0 else JobStatus.FAILED
