"""lm-evaluation-harness 0.4.13 integration: Mirrorlab's benchmarks as lm-eval tasks, and a runner for any task.

- tasks.py: the benchmarks whose module of evaluation.benchmarks names an lm-eval task (mirrorlab_aime24,
  mirrorlab_aime25, mirrorlab_amc23, mirrorlab_math500) as lm-eval task configs over local JSONL files;
  `python -m evaluation.lm_eval_tasks write --out DIR` writes them as YAML for `lm_eval`.
- utils.py: the functions those YAMLs name (`!function`): records, prompt, keep-all filter, verifier scoring.
- runner.py: run_lm_eval_task, the "lm-eval:<task>" runner of suite benchmarks (HFLM on an in-memory model).
- timing.py: time_run, a timed run of any runner, for side-by-side benchmarks.

Importing this package is cheap: lm_eval, datasets and torch load when a run starts.
"""

from evaluation.lm_eval_tasks.runner import LmEvalTaskError, hub_offline, lm_eval_task_name, run_lm_eval_task
from evaluation.lm_eval_tasks.tasks import (
    TASKS,
    GenerationSettings,
    available_tasks,
    task_config,
    write_task_files,
)
from evaluation.lm_eval_tasks.timing import TimedRun, time_run

__all__ = [
    "GenerationSettings", "LmEvalTaskError", "TASKS", "TimedRun", "available_tasks", "hub_offline",
    "lm_eval_task_name", "run_lm_eval_task", "task_config", "time_run", "write_task_files",
]
