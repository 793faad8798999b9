"""The demo seed queues the demo run and its four long2short variants, once."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from common.knobs import parse_config
from training.config import LONG2SHORT_CONFIGS
from webapp.long2short.models import Long2ShortVariant
from webapp.runs.models import RLRun

pytestmark = pytest.mark.django_db


def test_the_demo_queues_one_variant_per_method_on_the_held_out_suite(capsys):
    call_command("seed_demo", "--launch-run")
    run = RLRun.objects.get(project__slug="demo")
    variants = list(Long2ShortVariant.objects.filter(parent_run=run).order_by("pk"))
    assert [variant.method for variant in variants] == ["merge", "shortest_rejection", "dpo", "long2short_rl"]
    assert {(variant.status, variant.evaluation_suite_id, variant.parent_checkpoint_id) for variant in variants} == {
        ("queued", run.evaluation_suite_id, None)}
    assert variants[0].parameters["other_run_iterations"] == "0"  # the run's warm-up checkpoint
    for variant in variants:
        parse_config(LONG2SHORT_CONFIGS[variant.method], variant.parameters)  # what the worker will parse
    assert f"/long2short/?parent={run.pk}" in capsys.readouterr().out

    call_command("seed_demo", "--launch-run")
    assert Long2ShortVariant.objects.count() == 4 and RLRun.objects.count() == 1


def test_without_launch_run_nothing_is_queued():
    call_command("seed_demo")
    assert not RLRun.objects.exists() and not Long2ShortVariant.objects.exists()
