"""Plain data passed between the long2short worker and the methods (no torch here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from training.types import PromptRecord


@dataclass(frozen=True)
class Long2ShortJob:
    """What a method needs: the parent model, the problems, where to write.

    parent_model_path: the parent checkpoint directory (Hugging Face layout), the long-CoT model.
    parent_config: the parent run's resolved RLConfig as a dict (prompting, max length, knobs the RL variant keeps).
    merge_model_paths: further checkpoint directories for model merging (method `merge` only).
    output_dir: the variant's folder; the produced checkpoint goes in a subfolder of it.
    """

    parent_model_path: Path
    parent_config: dict[str, Any]
    records: tuple[PromptRecord, ...]
    output_dir: Path
    models_dir: Path
    merge_model_paths: tuple[Path, ...] = ()


@dataclass(frozen=True)
class KeptSample:
    """Shortest rejection sampling: the shortest correct of a problem's samples (the SFT target)."""

    prompt_id: str
    response: str
    response_tokens: int
    samples_drawn: int
    correct_samples: int
    token_ids: tuple[int, ...] = ()  # the response as sampled, the SFT target


@dataclass(frozen=True)
class PreferencePair:
    """DPO: chosen = the shortest correct response; rejected = a wrong longer or a too-long correct one."""

    prompt_id: str
    chosen: str
    rejected: str
    chosen_tokens: int
    rejected_tokens: int
    rejected_reason: str  # "wrong_longer" or "correct_too_long"
    chosen_ids: tuple[int, ...] = ()  # the responses as sampled, what DPO scores
    rejected_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class Long2ShortOutcome:
    """The produced checkpoint and the data the method built (kept samples or pairs), for the rows."""

    checkpoint_path: Path
    size_bytes: int
    iteration: int | None = None  # RL iterations run (long2short RL); None for the other methods
    kept_samples: tuple[KeptSample, ...] = ()
    pairs: tuple[PreferencePair, ...] = ()
    metrics: dict[str, float] = field(default_factory=dict)


def _ignore(*_args: Any) -> None:
    return None


def _never() -> bool:
    return False


@dataclass(frozen=True)
class Long2ShortHooks:
    """How a method reports progress (fraction 0..1) and log lines, and learns that it should stop."""

    log: Callable[[str], None] = _ignore
    progress: Callable[[float], None] = _ignore
    should_stop: Callable[[], bool] = _never

    def within(self, start: float, end: float) -> Long2ShortHooks:
        """These hooks for one stage of a method: its progress 0..1 maps onto start..end of the whole."""
        report = self.progress
        return Long2ShortHooks(log=self.log, should_stop=self.should_stop,
                               progress=lambda fraction: report(start + (end - start) * fraction))


def parent_run_config(parent_config: dict[str, Any]):
    """The parent run's RLConfig, parsed from its resolved knobs (names RLConfig does not know are left out)."""
    import dataclasses

    from common.knobs import parse_config
    from training.config import RLConfig

    known = {field.name for field in dataclasses.fields(RLConfig)}
    return parse_config(RLConfig, {name: value for name, value in parent_config.items() if name in known})


def sampling_limit(max_response_tokens: int | None, job: Long2ShortJob) -> int:
    """A method's response limit: its own, else the parent run's max_response_tokens."""
    return max_response_tokens or parent_run_config(job.parent_config).max_response_tokens


def parent_rewards(job: Long2ShortJob):
    """The parent run's grader (answer extraction, grader mode and judge), so a variant judges its samples as the
    run judged its rollouts; close it after use."""
    from training.session import run_rewards
    from training.types import RunPaths

    return run_rewards(parent_run_config(job.parent_config), RunPaths(job.output_dir, job.models_dir))


class Long2ShortStopped(Exception):
    """A method stopped between steps because it was asked to."""
