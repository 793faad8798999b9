"""Benchmark data loaders: every benchmark's local files read into BenchmarkProblem lists.

The caller passes the datasets folder (the layout of shared/datasets: <benchmark>/<file>);
only default_data_dir (for the command-line tools) reads the environment, as webapp/settings.py does.
evaluation.datasets.hub downloads the same files from the Hugging Face hub
(`python -m evaluation.datasets fetch ...`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from common.paths import datasets_dir
from common.registry import UnknownEntry
from evaluation.datasets.code_benchmarks import load_humaneval, load_livecodebench
from evaluation.datasets.math_benchmarks import load_aime24, load_aime25, load_amc23, load_gsm8k, load_math500
from evaluation.datasets.mathvista import load_mathvista
from evaluation.datasets.problems import (
    BenchmarkProblem,
    DatasetError,
    DatasetMissing,
    ImagesMissing,
    images_available,
    require_images,
)

__all__ = [
    "BenchmarkProblem", "DatasetError", "DatasetMissing", "ImagesMissing", "LOADERS", "default_data_dir",
    "images_available", "load_aime24", "load_aime25", "load_amc23", "load_benchmark", "load_gsm8k",
    "load_humaneval", "load_livecodebench", "load_math500", "load_mathvista", "require_images",
]

Loader = Callable[..., list[BenchmarkProblem]]  # (data_dir: Path, limit: int | None = None)

LOADERS: dict[str, Loader] = {
    "aime24": load_aime24,
    "aime25": load_aime25,
    "amc23": load_amc23,
    "math500": load_math500,
    "gsm8k": load_gsm8k,
    "livecodebench": load_livecodebench,
    "humaneval": load_humaneval,
    "mathvista": load_mathvista,
}


def default_data_dir() -> Path:
    """MIRRORLAB_DATASETS_DIR, else <data dir>/datasets: the folder the workers read (webapp/settings.py)."""
    return datasets_dir()


def load_benchmark(name: str, data_dir: Path, limit: int | None = None,
                   fetch_missing: bool = False) -> list[BenchmarkProblem]:
    """Load benchmark `name` from data_dir; DatasetMissing names the expected file when it is absent.

    fetch_missing: when the local files are absent, download them from the Hugging Face hub into
    data_dir first (evaluation.datasets.hub), then load them.
    """
    if name not in LOADERS:
        raise UnknownEntry(f"unknown benchmark {name!r}; available: {', '.join(sorted(LOADERS))}")
    try:
        return LOADERS[name](Path(data_dir), limit)
    except DatasetMissing:
        if not fetch_missing:
            raise
    from evaluation.datasets.hub import fetch_benchmark

    fetch_benchmark(name, Path(data_dir))
    return LOADERS[name](Path(data_dir), limit)
