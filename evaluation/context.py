"""What an evaluation shares across its benchmarks: the model, the verifier, the sandbox, the judge model,
progress reports."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Callable


class EvaluationStopped(Exception):
    """should_stop() said to stop between two batches."""


class EvalContext:
    """Loads the model, the math verifier and the code sandbox on first use; close() releases them.

    log(line) receives progress lines; should_stop() is asked between batches (cancellation).
    fetch_missing: download a benchmark whose files are not in data_dir from the Hugging Face hub.
    resolve_model(name) -> path: how a judge model's name (a preset, a folder, a hub id) becomes a local path.
    The judge model is a second ModelGenerator on the same rollout engine, loaded when a benchmark asks it
    (the evaluated model itself when the names resolve to the same path).
    """

    def __init__(self, model_path: str, data_dir: Path, *, rollout_engine: str = "torch", seed: int = 0,
                 log: Callable[[str], None] = print, should_stop: Callable[[], bool] = lambda: False,
                 sandbox_backend: str = "forkserver", batch_problems: int = 32, fetch_missing: bool = False,
                 resolve_model: Callable[[str], str] = str):
        self.model_path = model_path
        self.data_dir = Path(data_dir)
        self.rollout_engine = rollout_engine
        self.seed = seed
        self.log = log
        self.should_stop = should_stop
        self.sandbox_backend = sandbox_backend
        self.batch_problems = batch_problems
        self.fetch_missing = fetch_missing  # download benchmarks missing from data_dir from the hub
        self.resolve_model = resolve_model
        self._judge_generator = None  # (path, ModelGenerator) of the judge model last asked for
        self._judge_paths: dict[str, str] = {}  # judge model name -> resolved path

    @cached_property
    def generator(self):
        from training.generation import ModelGenerator

        self.log(f"loading {self.model_path} with the {self.rollout_engine} rollout engine")
        return ModelGenerator(self.model_path, self.rollout_engine, seed=self.seed)

    @cached_property
    def verifier(self):
        from grading.verifier import MathVerifier

        return MathVerifier()

    @cached_property
    def code_judge(self):
        from grading.sandbox import CodeJudge

        return CodeJudge(backend=self.sandbox_backend)

    def judge_generator(self, judge_model: str):
        """The judge model's generator: the evaluated model's own when it is the same model, else loaded once
        (a benchmark asking another judge model releases the previous one)."""
        if judge_model not in self._judge_paths:  # resolved once: a hub id may cost a request
            self._judge_paths[judge_model] = self.resolve_model(judge_model)
        path = self._judge_paths[judge_model]
        if path == self.model_path:
            return self.generator
        if self._judge_generator is None or self._judge_generator[0] != path:
            self._close_judge_generator()
            from training.generation import ModelGenerator

            self.log(f"loading the judge model {judge_model} with the {self.rollout_engine} rollout engine")
            self._judge_generator = (path, ModelGenerator(path, self.rollout_engine, seed=self.seed))
        return self._judge_generator[1]

    def cot_judge(self, judge_model: str, max_tokens: int):
        """The chain-of-thought judge over the judge model, greedy, in batches of batch_problems prompts; the
        model loads on the judge's first prompts (rule_then_judge may never need it)."""
        from training.generation import text_generate
        from grading.cot_judge import CotJudge

        def generate(prompts: list[str]) -> list[str]:
            return text_generate(self.judge_generator(judge_model), max_tokens, self.seed)(prompts)

        return CotJudge(generate, batch_size=self.batch_problems)

    def _close_judge_generator(self) -> None:
        if self._judge_generator is not None:
            self._judge_generator[1].close()
            self._judge_generator = None

    def check_stop(self) -> None:
        if self.should_stop():
            raise EvaluationStopped()

    def close(self) -> None:
        """Release whatever was loaded (safe to call twice)."""
        self._close_judge_generator()
        for name in ("generator", "verifier", "code_judge"):
            resource = self.__dict__.pop(name, None)
            if resource is not None:
                resource.close()

    def __enter__(self) -> EvalContext:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
