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
        enqueue_node_join(run.pk, node_index)
    RLRun.append_log(run.pk, f"asked the gpu queue for {config.nnodes - 1} more node(s) to join")


def node_watch(run_id: int, label: str) -> JoinWatch:
    """The row as a joined node sees it: prefixed log lines, the cancel flag, whether the run still runs."""
    rows = RLRun.objects.filter(pk=run_id)
    return JoinWatch(
        log=lambda line: RLRun.append_log(run_id, f"[{label}] {line}"),
        cancel_requested=lambda: rows.filter(cancel_requested=True).exists(),
        still_running=lambda: rows.filter(status=JobStatus.RUNNING).exists(),
    )


def join_rl_run(run_id: int, node_index: int) -> str:
    """Run node `node_index`'s torchrun of a running multi-node run; its failure is logged on the row."""
    run = RLRun.objects.filter(pk=run_id).first()
    if run is None or run.status != JobStatus.RUNNING:
        logger.info("rl_run %s is not running: node %s does not join", run_id, node_index)
        return "not running"
    label = f"node {node_index} on {worker_name()}"
    watch = node_watch(run_id, label)
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
