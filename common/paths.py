"""The data folders for the command-line tools (no Django): the same defaults as webapp/settings.py.

MIRRORLAB_DATA_DIR (default <repo>/data) holds models, checkpoints and datasets;
MIRRORLAB_DATASETS_DIR (default <data dir>/datasets) the local benchmark files. Empty counts as unset.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

REPO_DIR = Path(__file__).resolve().parent.parent


def data_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """MIRRORLAB_DATA_DIR, else <repo>/data, as an absolute path."""
    return Path(environ.get("MIRRORLAB_DATA_DIR") or REPO_DIR / "data").resolve()


def datasets_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """MIRRORLAB_DATASETS_DIR, else <data dir>/datasets."""
    return Path(environ.get("MIRRORLAB_DATASETS_DIR") or data_dir(environ) / "datasets")


def datasets_dir_origin(environ: Mapping[str, str] = os.environ) -> str:
    """Where datasets_dir comes from, for messages: the variable, or the default."""
    return "MIRRORLAB_DATASETS_DIR" if environ.get("MIRRORLAB_DATASETS_DIR") else "default: <data dir>/datasets"
