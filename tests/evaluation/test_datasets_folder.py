"""The datasets folder: the command-line tools default to the folder the workers read (MIRRORLAB_DATASETS_DIR)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from common.paths import REPO_DIR, data_dir, datasets_dir
from evaluation.datasets import __main__ as cli
from evaluation.datasets import default_data_dir


@pytest.fixture
def environment(monkeypatch):
    """No data-folder variables set unless a test sets them."""
    for name in ("MIRRORLAB_DATA_DIR", "MIRRORLAB_DATASETS_DIR"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_default_is_the_data_dir_s_datasets_folder(environment):
    assert default_data_dir() == REPO_DIR / "data" / "datasets"


def test_the_data_dir_moves_the_default(environment, tmp_path):
    environment.setenv("MIRRORLAB_DATA_DIR", str(tmp_path))
    assert default_data_dir() == tmp_path.resolve() / "datasets"


def test_mirrorlab_datasets_dir_wins(environment, tmp_path):
    environment.setenv("MIRRORLAB_DATA_DIR", str(tmp_path / "data"))
    environment.setenv("MIRRORLAB_DATASETS_DIR", str(tmp_path / "benchmarks"))
    assert default_data_dir() == tmp_path / "benchmarks"


def test_empty_variables_count_as_unset(environment):
    environment.setenv("MIRRORLAB_DATA_DIR", "")
    environment.setenv("MIRRORLAB_DATASETS_DIR", "")
    assert default_data_dir() == REPO_DIR / "data" / "datasets"


@pytest.mark.parametrize("variables", [  # (settings creates the data dir: only under tmp_path here)
    {"MIRRORLAB_DATA_DIR": "DATA"}, {"MIRRORLAB_DATA_DIR": "DATA", "MIRRORLAB_DATASETS_DIR": "BENCH"},
])
def test_the_cli_default_is_the_workers_setting(variables, tmp_path):
    """webapp/settings.py's DATASETS_DIR and MODELS_DIR equal the helpers' folders under the same environment."""
    variables = {name: str(tmp_path / value) for name, value in variables.items()}
    env = {name: value for name, value in os.environ.items() if name not in ("MIRRORLAB_DATA_DIR",
                                                                             "MIRRORLAB_DATASETS_DIR")}
    env.update(variables, DJANGO_SETTINGS_MODULE="webapp.settings", CELERY_BROKER_URL="memory://")
    script = ("import json; from django.conf import settings; "
              "print(json.dumps([str(settings.DATASETS_DIR), str(settings.MODELS_DIR)]))")
    shown = subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO_DIR, capture_output=True, text=True,
                           check=True)
    assert json.loads(shown.stdout) == [str(datasets_dir(variables)), str(data_dir(variables) / "models")]


def test_list_reads_mirrorlab_datasets_dir_and_names_the_folder(environment, tmp_path, capsys):
    (tmp_path / "aime24").mkdir()
    (tmp_path / "aime24" / "test.jsonl").write_text("")
    environment.setenv("MIRRORLAB_DATASETS_DIR", str(tmp_path))
    assert cli.main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(f"local files in {tmp_path} (MIRRORLAB_DATASETS_DIR)")
    by_name = {line.split()[0]: line for line in lines[1:]}
    assert by_name["aime24"].endswith("present") and "missing: math500/test.jsonl" in by_name["math500"]


def test_list_with_data_dir_names_the_flag(environment, tmp_path, capsys):
    environment.setenv("MIRRORLAB_DATASETS_DIR", str(tmp_path / "elsewhere"))
    assert cli.main(["list", "--data-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith(f"local files in {tmp_path} (--data-dir)")


def test_fetch_without_data_dir_writes_where_the_workers_read(environment, tmp_path, capsys, monkeypatch):
    from evaluation.datasets import hub

    def unreachable(*args, **kwargs):
        raise ConnectionError("no network")

    monkeypatch.setattr(hub, "hub_load_dataset", unreachable)
    environment.setenv("MIRRORLAB_DATA_DIR", str(tmp_path))
    assert cli.main(["fetch", "aime24"]) == 1
    error = capsys.readouterr().err
    assert error.splitlines()[0] == f"datasets folder: {tmp_path.resolve() / 'datasets'} (default: <data dir>/datasets)"
    assert str(Path(tmp_path.resolve() / "datasets" / "aime24" / "test.jsonl")) in error
