"""A resumed run's checkpoints agree with its rows: unrecorded newer ones are redone, unrecorded older ones recorded."""

from __future__ import annotations

import pytest

from common.knobs import parse_config
from training.checkpoint import STATE_FILE, checkpoint_dir, complete_checkpoint_dirs
from training.config import RLConfig
from webapp.runs.models import Checkpoint, RLRun
from workers.rl_job import reconcile_checkpoints

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(run):
    """The run as its worker holds it: a worker records only while it holds the run's claim."""
    RLRun.claim(run.pk, "worker-a")
    run.refresh_from_db()
    return run


def saved(output_dir, iteration: int) -> None:
    folder = checkpoint_dir(output_dir, iteration)
    folder.mkdir(parents=True)
    (folder / STATE_FILE).write_bytes(b"x" * 10)


def test_a_checkpoint_ahead_of_the_recorded_iterations_is_set_aside_and_a_missing_row_recorded(run, tmp_path):
    config = parse_config(RLConfig, {"iterations": 6, "checkpoint_every_iterations": 1})
    for iteration in (1, 2, 3, 4):
        saved(tmp_path, iteration)
    Checkpoint.objects.create(project=run.project, run=run, iteration=1, path=str(checkpoint_dir(tmp_path, 1)))
    # the dead worker had recorded iterations 1-3; it saved checkpoint 3 and 4 without recording their rows,
    # and never recorded iteration 4 itself
    RLRun.objects.filter(pk=run.pk).update(current_iteration=3)
    checkpoint_dir(tmp_path, 4).with_name("iteration-000004.partial").mkdir()  # a crashed save's leftover
    reconcile_checkpoints(run, config, tmp_path)
    assert sorted(Checkpoint.objects.filter(run=run).values_list("iteration", flat=True)) == [1, 2, 3]
    assert [path.name for path in complete_checkpoint_dirs(tmp_path)][-1] == "iteration-000003"  # resumed from
    assert not checkpoint_dir(tmp_path, 4).exists()
    assert (tmp_path / "checkpoints" / "iteration-000004.partial" / STATE_FILE).exists()
    run.refresh_from_db()
    assert "checkpoint of iteration 4 set aside" in run.log
    reconcile_checkpoints(run, config, tmp_path)  # a second start changes nothing
    assert Checkpoint.objects.filter(run=run).count() == 3
