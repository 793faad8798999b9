"""A checkpoint is named alike on pages, in forms, in benchmark tables and their exports: its run's (or variant's)
name and iteration, else, registered by path, its folder."""

from __future__ import annotations

import pytest
from django.urls import reverse

from webapp.evals.models import BenchmarkResult, EvalRun
from webapp.evals.tables import load_table, row_label, table_to_markdown
from webapp.runs.models import Checkpoint

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path, iteration, label", [
    ("/data/runs/demo/checkpoints/iteration-000006", 6, "demo/iteration-000006"),
    ("/shared/demo/iteration-000006/", 6, "demo/iteration-000006"),
    ("/shared/demo/iteration-000006", None, "demo/iteration-000006"),
    ("/shared/demo/iteration-000006", 8, "demo/iteration-000006 @ 8"),  # an iteration the folder does not say
    ("/models/qwen-7b", 3, "qwen-7b @ 3"),
    ("/models/qwen-7b/", None, "qwen-7b"),
])
def test_a_registered_checkpoint_is_labelled_by_its_folder_and_iteration(project, path, iteration, label):
    checkpoint = Checkpoint.objects.create(project=project, path=path, iteration=iteration)
    assert str(checkpoint) == label == row_label(EvalRun(pk=1, checkpoint=checkpoint))


def test_a_run_checkpoint_keeps_its_run_name_and_iteration(project, run):
    checkpoint = Checkpoint.objects.create(project=project, run=run, iteration=40, path="/x/iteration-000040")
    assert str(checkpoint) == "run-1 @ 40" == row_label(EvalRun(pk=1, checkpoint=checkpoint))


def test_pages_forms_and_tables_name_a_registered_checkpoint_alike(client_for, alice, project, suite):
    checkpoint = Checkpoint.objects.create(project=project, path="/data/runs/demo/checkpoints/iteration-000006",
                                           iteration=6)
    evaluation = EvalRun.objects.create(project=project, suite=suite, checkpoint=checkpoint, status="succeeded")
    BenchmarkResult.objects.create(eval_run=evaluation, benchmark="math500", score=0.5, num_problems=10)
    client = client_for(alice)
    pages = [client.get(reverse("evaluation-list")), client.get(reverse("evaluation-detail", args=[evaluation.pk])),
             client.get(reverse("evaluation-launch"), {"checkpoint": checkpoint.pk})]
    for page in pages:
        content = page.content.decode()
        assert "demo/iteration-000006" in content and "None @" not in content, page.request["PATH_INFO"]
    table = load_table(alice, evaluation_ids=[evaluation.pk])
    assert [row.label for row in table.rows] == ["demo/iteration-000006"]
    assert "| demo/iteration-000006 |" in table_to_markdown(table)
