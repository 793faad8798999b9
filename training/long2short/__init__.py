"""Long2short methods by name (METHOD.md section 8): each turns a long-CoT parent into a shorter model.

A method is `run(config, job: Long2ShortJob, hooks: Long2ShortHooks) -> Long2ShortOutcome`
(training/long2short/base.py); the worker builds the job from rows and stores the outcome.
"""

from common.registry import Registry

long2short_methods = Registry("long2short method", {
    "merge": "training.long2short.merge:run",
    "shortest_rejection": "training.long2short.shortest_rejection:run",
    "dpo": "training.long2short.dpo:run",
    "long2short_rl": "training.long2short.rl:run",
})
