"""Fixtures of the web app's tests beyond the shared ones (tests/conftest.py)."""

from __future__ import annotations

import pytest


@pytest.fixture
def held_run(run):
    """The run as its worker holds it: a worker records only while it holds the run's claim."""
    from webapp.runs.models import RLRun

    RLRun.claim(run.pk, "worker-a")
    run.refresh_from_db()
    return run


@pytest.fixture
def checkpoints(settings, tmp_path):
    """The app's checkpoints folder, in the test's own temporary folder (the path-rule tests)."""
    settings.CHECKPOINT_DIR = tmp_path / "checkpoints"
    return settings.CHECKPOINT_DIR
