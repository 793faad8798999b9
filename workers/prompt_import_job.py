"""Run one prompt-set import row: load the dataset, map and validate every row, create the set atomically."""

from __future__ import annotations

from common.knobs import parse_config
from evaluation.datasets.prompt_import import PromptImportConfig, describe_source, load_prompts
from webapp.prompts.models import PromptSetImport
from webapp.prompts.services import complete_prompt_import, import_uploaded_file
from workers.jobs import raise_if_cancelled
from workers.path_checks import check_import_paths


def run_prompt_import_job(job: PromptSetImport) -> None:
    """Import the dataset named by the row's config; a bad row fails the job and creates nothing.

    Every progress line is a heartbeat and a check: a cancel stops the import before its next phase, and a
    worker that lost the job (JobTakenOver) stops writing anything.
    """
    check_import_paths(job)  # the path rule again: a queued job whose path is no longer allowed fails here

    def progress(line: str) -> None:
        PromptSetImport.log_alive(job.pk, line, job.worker)
        raise_if_cancelled(job)

    if job.prompt_set_id is not None:  # a re-queued job whose set was already created
        PromptSetImport.log_alive(job.pk, f"prompt set {job.prompt_set_id} already imported", job.worker)
        return
    if job.upload_file:  # a large upload, stored by the web server
        prompt_set = import_uploaded_file(job, progress)
        PromptSetImport.log_alive(job.pk, f"imported {prompt_set.prompts.count()} prompts in prompt set "
                                          f"{prompt_set.pk}", job.worker)
        return
    config = parse_config(PromptImportConfig, job.config)
    source = describe_source(config)
    progress(f"loading {source}")
    prompts = load_prompts(config)
    progress(f"{len(prompts)} rows valid; creating prompt set {job.name!r}")
    prompt_set = complete_prompt_import(job, prompts, source)
    PromptSetImport.log_alive(job.pk, f"imported {len(prompts)} prompts into prompt set {prompt_set.pk}", job.worker)
