"""Benchmark data loaders: every benchmark's local files read into BenchmarkProblem lists.

The caller passes the datasets folder (the layout of shared/datasets: <benchmark>/<file>);
only default_data_dir (for the command-line tools) reads the environment, as webapp/settings.py does.
evaluation.datasets.hub downloads the same files from the Hugging Face hub
(`python -m evaluation.datasets fetch ...`). Which loader and hub source a benchmark has is said in its
module of evaluation.benchmarks (load_benchmark, LOADERS and HUB_SOURCES by name live there).
"""

from __future__ import annotations

from pathlib import Path

from common.paths import datasets_dir
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
    "BenchmarkProblem", "DatasetError", "DatasetMissing", "ImagesMissing", "default_data_dir",
    "images_available", "load_aime24", "load_aime25", "load_amc23", "load_gsm8k",
    "load_humaneval", "load_livecodebench", "load_math500", "load_mathvista", "require_images",
]


def default_data_dir() -> Path:
    """MIRRORLAB_DATASETS_DIR, else <data dir>/datasets: the folder the workers read (webapp/settings.py)."""
    return datasets_dir()

