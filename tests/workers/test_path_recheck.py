"""The worker checks paths again when a job starts (issue 17): a queued job whose path the settings no longer allow
(or that was queued around the API) fails with the reason before anything is read."""

from __future__ import annotations

import pytest

from common.knobs import config_to_dict, parse_config
from evaluation.datasets.prompt_import import PromptImportConfig
from training.config import RLConfig
from webapp.evals.models import BenchmarkResult, BenchmarkSuite, EvalRun
from webapp.evals.services import launch_evaluation
from webapp.jobs import JobStatus
from webapp.long2short.models import Long2ShortVariant
from webapp.prompts.models import PromptSet, PromptSetImport
from webapp.prompts.services import launch_prompt_import
from webapp.runs.models import Checkpoint, IterationMetric, RLRun
from workers.eval_job import run_eval_job
from workers.jobs import execute_job
from workers.long2short_job import run_long2short_job
from workers.prompt_import_job import run_prompt_import_job
from workers.rl_job import run_rl_job

pytestmark = pytest.mark.django_db

JOB_FUNCTIONS = {"eval_run": run_eval_job, "prompt_import": run_prompt_import_job, "rl_run": run_rl_job,
                 "long2short": run_long2short_job}


def run_in_process(kind: str, row):
    """The worker's task body, without Celery: claim, run, record the outcome."""
    execute_job(kind, row.pk, JOB_FUNCTIONS[kind])
    row.refresh_from_db()
    return row


@pytest.fixture
def model_root(settings, tmp_path):
    root = tmp_path / "shared-models"
    (root / "qwen").mkdir(parents=True)
    (root / "qwen" / "config.json").write_text("{}")
    settings.MODEL_ROOTS = [str(root)]
    return root


@pytest.fixture
def arithmetic_suite(project):
    return BenchmarkSuite.objects.create(project=project, name="one", benchmarks=[
        {"benchmark": "synthetic-arithmetic", "limit": 2}])


def test_a_queued_evaluation_whose_model_root_was_removed_fails_with_the_reason(project, alice, arithmetic_suite,
                                                                                model_root, settings):
    eval_run = launch_evaluation(project=project, suite=arithmetic_suite, model=str(model_root / "qwen"), owner=alice)
    settings.MODEL_ROOTS = []
    eval_run = run_in_process("eval_run", eval_run)
    assert eval_run.status == JobStatus.FAILED
    assert eval_run.error.startswith(f"PathRefused: model: '{model_root / 'qwen'}' is not a path this project may "
                                     f"use: give a checkpoint id, a preset (tiny, tiny-vl), a hub id (org/name), or "
                                     f"an absolute path inside the project's own checkpoint folders or under "
                                     f"MIRRORLAB_MODEL_ROOTS (none set)")
    assert not BenchmarkResult.objects.filter(eval_run=eval_run).exists()


def test_a_queued_evaluation_of_a_system_folder_fails(project, alice, arithmetic_suite):
    eval_run = run_in_process("eval_run", launch_evaluation(project=project, suite=arithmetic_suite, model="/etc",
                                                            owner=alice))
    assert eval_run.status == JobStatus.FAILED
    assert eval_run.error.startswith("PathRefused: model: '/etc' is not a path this project may use")


def test_a_registered_checkpoint_no_longer_under_a_root_fails_its_evaluation(project, alice, arithmetic_suite,
                                                                             model_root, settings):
    checkpoint = Checkpoint.objects.create(project=project, path=str(model_root / "qwen"))
    eval_run = launch_evaluation(project=project, suite=arithmetic_suite, checkpoint=checkpoint, owner=alice)
    settings.MODEL_ROOTS = []
    eval_run = run_in_process("eval_run", eval_run)
    assert eval_run.status == JobStatus.FAILED
    assert eval_run.error.startswith(f"PathRefused: checkpoint: '{model_root / 'qwen'}' is not a path this project")


def test_a_hub_id_that_is_a_folder_relative_to_the_worker_fails(project, alice, arithmetic_suite, tmp_path,
                                                                monkeypatch):
    (tmp_path / "org" / "model").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    eval_run = run_in_process("eval_run", launch_evaluation(project=project, suite=arithmetic_suite,
                                                            model="org/model", owner=alice))
    assert eval_run.status == JobStatus.FAILED
    assert eval_run.error.startswith("PathRefused: model: 'org/model' names a file or folder relative to the "
                                     "worker's working directory, not a hub id")


def test_a_queued_import_of_a_file_outside_the_import_roots_fails(project, alice, settings, tmp_path):
    dataset = tmp_path / "train.jsonl"
    dataset.write_text('{"problem": "1+1?", "answer": "2"}\n')
    config = config_to_dict(parse_config(PromptImportConfig, {"dataset_id": str(dataset)}))
    job = launch_prompt_import(project=project, name="imported", config=config, owner=alice)
    settings.IMPORT_ROOTS = []
    job = run_in_process("prompt_import", job)
    assert job.status == JobStatus.FAILED
    assert job.error.startswith(f"PathRefused: dataset_id: '{dataset}' is not a path this project may use: give a "
                                f"hub dataset id (org/name), or an absolute path under MIRRORLAB_IMPORT_ROOTS "
                                f"(none set)")
    assert not PromptSet.objects.filter(name="imported").exists()


def test_a_queued_import_of_the_apps_settings_fails(project, alice, settings):
    settings_file = str(settings.BASE_DIR / "webapp" / "settings.py")
    settings.IMPORT_ROOTS = ["/"]  # even a root over everything leaves the app's own files closed
    config = config_to_dict(parse_config(PromptImportConfig, {"dataset_id": settings_file}))
    job = run_in_process("prompt_import", PromptSetImport.objects.create(project=project, name="imported",
                                                                        config=config, owner=alice))
    assert job.status == JobStatus.FAILED
    assert job.error.startswith(f"PathRefused: dataset_id: '{settings_file}' is not a path this project may use")


def test_a_queued_run_whose_model_is_another_projects_folder_fails(project, prompt_set, alice, charlie, settings,
                                                                   tmp_path):
    from tests.webapp.path_support import model_folder, other_projects_run

    settings.CHECKPOINT_DIR = tmp_path / "checkpoints"
    secret = model_folder(tmp_path / "checkpoints" / f"run-{other_projects_run(charlie).pk}" / "iteration-1")
    config = config_to_dict(parse_config(RLConfig, {"trainer_backend": "noop-test", "iterations": 1,
                                                    "model": str(secret)}))
    run = RLRun.objects.create(project=project, name="r", prompt_set=prompt_set, config=config, owner=alice,
                               total_iterations=1)
    run = run_in_process("rl_run", run)
    assert run.status == JobStatus.FAILED
    assert run.error.startswith(f"PathRefused: model: '{secret}' is not a path this project may use")
    assert not IterationMetric.objects.filter(run=run).exists()


def test_a_variant_of_a_registered_checkpoint_no_longer_allowed_fails(run, model_root, settings):
    parent = Checkpoint.objects.create(project=run.project, path=str(model_root / "qwen"))
    variant = Long2ShortVariant.objects.create(project=run.project, name="v", method="dpo", parent_checkpoint=parent,
                                               owner=run.owner)
    settings.MODEL_ROOTS = []
    variant = run_in_process("long2short", variant)
    assert variant.status == JobStatus.FAILED
    assert variant.error.startswith(f"PathRefused: parent_checkpoint: '{model_root / 'qwen'}' is not a path")
    assert not EvalRun.objects.exists()


def test_a_run_whose_prompt_image_is_no_longer_allowed_fails_before_training(run, settings, tmp_path):
    from webapp.prompts.models import Prompt

    Prompt.objects.create(prompt_set=run.prompt_set, position=99, problem="look", answer="1",
                          image="/etc/passwd")  # queued around the API (an old row, or a changed root)
    run = run_in_process("rl_run", run)
    assert run.status == JobStatus.FAILED
    assert run.error.startswith("PathRefused: image: '/etc/passwd' is not a path this project may use")
    assert not IterationMetric.objects.filter(run=run).exists()
