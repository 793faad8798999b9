"""Short RL runs that differ in one knob, for tests that compare what the loop does under each value."""

from __future__ import annotations

from pathlib import Path


def reports_per_value(model_dir: Path, output: Path, knob: str, values: tuple[str, ...], **fixed) -> dict[str, list]:
    """Each value's iteration reports: 3 iterations of 4 arithmetic problems x 4 samples of up to 24 tokens,
    learning rate 1e-3 (so the weights move), from `model_dir`; `fixed`: other knobs, the same for every value."""
    from common.knobs import parse_config
    from training.config import RLConfig
    from training.loop import run
    from training.tasks.arithmetic import generate
    from training.types import PromptRecord, RunPaths, TrainingHooks

    records = [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer) for p in generate(16, seed=2)]
    reports: dict[str, list] = {}
    for value in values:
        reports[value] = []
        config = parse_config(RLConfig, dict(model=str(model_dir), iterations=3, batch_size=4, samples_per_problem=4,
                                             max_response_tokens=24, learning_rate=1e-3, **fixed, **{knob: value}))
        run(config, records, RunPaths(output / value, output / "models"),
            TrainingHooks(on_iteration=reports[value].append))
    return reports
