"""The run log writes a saved checkpoint's size as the run page's checkpoint table shows it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from common.knobs import parse_config
from training.config import RLConfig
from training.types import CheckpointReport
from webapp.runs.models import RLRun
from workers.rl_job import record_checkpoint

pytestmark = pytest.mark.django_db


def test_the_log_and_the_checkpoint_table_give_the_same_size(run, client_for, alice, tmp_path):
    RLRun.claim(run.pk, "worker-a")
    run.refresh_from_db()
    config = parse_config(RLConfig, {"iterations": 6})
    record_checkpoint(run, config, CheckpointReport(iteration=6, path=tmp_path, size_bytes=6_912_345))
    assert "checkpoint saved: iteration 6 (6.9 MB)" in RLRun.objects.get(pk=run.pk).log
    page = client_for(alice).get(reverse("run-detail", args=[run.pk])).content.decode()
    assert '<td class="num nowrap">6.9 MB</td>' in page
