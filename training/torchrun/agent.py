"""`python -m training.torchrun.agent ARGS`: torchrun (torch.distributed.run ARGS) that dies with the worker that
started it, so a worker killed with SIGKILL leaves no agent behind (its ranks die with the agent: entry.py)."""

import runpy

from common.processes import die_with_parent

if __name__ == "__main__":
    die_with_parent()
    runpy.run_module("torch.distributed.run", run_name="__main__", alter_sys=True)
