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


def test_the_ablations_wait_for_the_demo_runs_warm_up_checkpoint():
    from django.core.management.base import CommandError

    call_command("seed_demo", "--launch-run")
    with pytest.raises(CommandError, match="warm-up checkpoint"):
        call_command("seed_demo", "--ablations")
    assert RLRun.objects.count() == 1


def test_the_ablations_pair_each_knob_with_the_baseline_on_the_same_seeds(capsys, tmp_path):
    from webapp.runs.models import Checkpoint

    call_command("seed_demo", "--launch-run")
    demo = RLRun.objects.get(project__slug="demo")
    Checkpoint.objects.create(project=demo.project, run=demo, iteration=0, path=str(tmp_path / "iteration-0"))
    call_command("seed_demo", "--ablations", "--ablation-seeds", "3", "4")
    runs = {run.name: run for run in RLRun.objects.exclude(pk=demo.pk)}
    assert sorted(runs) == sorted(f"Ablation: {label} (seed {seed})" for seed in (3, 4)
                                  for label in ("uniform sampling, mirror descent", "warmup_then_hard", "ReST"))
    for seed in (3, 4):
        baseline, curriculum, rest = (runs[f"Ablation: {label} (seed {seed})"].config
                                      for label in ("uniform sampling, mirror descent", "warmup_then_hard", "ReST"))
        assert {config["seed"] for config in (baseline, curriculum, rest)} == {seed}
        assert {config["model"] for config in (baseline, curriculum, rest)} == {str(tmp_path / "iteration-0")}
        assert (baseline["sampling_strategy"], baseline["policy_loss"]) == ("uniform", "mirror_descent")
        assert (curriculum["sampling_strategy"], curriculum["curriculum_iterations"]) == ("warmup_then_hard", 10)
        assert (rest["sampling_strategy"], rest["policy_loss"]) == ("uniform", "rest")
        assert baseline["warmup_sft_steps"] == 0 and baseline["iterations"] == 20
    out = capsys.readouterr().out
    first = runs["Ablation: uniform sampling, mirror descent (seed 3)"].pk
    assert f"figure 9, seed 3: /compare/?runs={first},{runs['Ablation: warmup_then_hard (seed 3)'].pk}" in out
    assert f"figure 10, seed 3: /compare/?runs={first},{runs['Ablation: ReST (seed 3)'].pk}" in out
    call_command("seed_demo", "--ablations", "--ablation-seeds", "3", "4")
    assert RLRun.objects.count() == 7  # nothing queued twice
