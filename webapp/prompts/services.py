"""Create prompt sets and import prompts (from files, or from datasets through a queued import), atomically."""

from __future__ import annotations

import time
import uuid
from functools import partial
from pathlib import Path
from typing import Callable, Iterable

from django.conf import settings
from django.db import transaction
from django.db.models import Max

from common.path_rules import PathRefused
from common.prompt_files import ParsedPrompt, parse_prompt_file
from common.sizes import decimal_size
from webapp.celery import enqueue_job
from webapp.jobs import JobStatus, JobTakenOver
from webapp.path_policy import checked_image
from webapp.prompts.models import Prompt, PromptSet, PromptSetImport, uploads_folder

# A stored upload that no queued or running import reads is deleted by the workers' recovery this long after it
# was written (an import cancelled or failed before it deleted it, a web process killed before it queued it).
UNCLAIMED_UPLOAD_GRACE_SECONDS = 3600


class PromptLimitError(ValueError):
    """Prompts over the deployment's limits (MAX_PROMPT_CHARS, MAX_PROMPTS_PER_SET) or with an image path the
    path rule refuses; `field` is the input that carried them (file, problem, answer or image)."""

    def __init__(self, field: str, reason: str):
        self.field = field
        super().__init__(reason)


def check_prompt_limits(existing: int, prompts: list[ParsedPrompt], field: str = "file") -> None:
    """Raise PromptLimitError when the set would hold more than MAX_PROMPTS_PER_SET prompts or a prompt's
    problem or answer is longer than MAX_PROMPT_CHARS (naming its line)."""
    check_set_size(existing + len(prompts), field)
    check_prompt_lengths(prompts, field)


def check_set_size(total: int, field: str = "file") -> None:
    """PromptLimitError when a set would hold `total` prompts, more than MAX_PROMPTS_PER_SET."""
    if total > settings.MAX_PROMPTS_PER_SET:
        raise PromptLimitError(field, f"the set would hold {total} prompts; a set holds at most "
                                      f"{settings.MAX_PROMPTS_PER_SET} (MIRRORLAB_MAX_PROMPTS_PER_SET)")


def check_prompt_lengths(prompts: list[ParsedPrompt], field: str = "file") -> None:
    """PromptLimitError when a prompt's problem or answer is longer than MAX_PROMPT_CHARS (naming its line in a
    file, else the field)."""
    limit = settings.MAX_PROMPT_CHARS
    for item in prompts:
        for name in ("problem", "answer"):
            if len(getattr(item, name)) > limit:
                where = f"line {item.line}: " if field == "file" else ""
                raise PromptLimitError(field if field == "file" else name,
                                       f"{where}the {name} has {len(getattr(item, name))} characters; at most "
                                       f"{limit} (MIRRORLAB_MAX_PROMPT_CHARS)")


def add_prompts(prompt_set: PromptSet, prompts: Iterable[ParsedPrompt]) -> int:
    """Append parsed prompts after the set's last position, all or none; returns how many were added.

    The set's row is locked first, so appends to one set at once (two uploads, an upload and a single
    prompt) take turns and all land, each after the other's last position. PromptLimitError when they
    break the deployment's limits.
    """
    prompts = list(prompts)
    rows = [
        Prompt(problem=item.problem, image=allowed_image(item), answer=item.answer, test_cases=item.test_cases,
               domain=item.domain, tags=list(item.tags), difficulty=item.difficulty, pass_rate=item.pass_rate)
        for item in prompts
    ]
    with transaction.atomic():
        start = _lock_for_append(prompt_set)
        check_prompt_limits(prompt_set.prompts.count(), prompts)
        for offset, row in enumerate(rows):
            row.prompt_set, row.position = prompt_set, start + offset
        Prompt.objects.bulk_create(rows, batch_size=1000)
    return len(rows)


def allowed_image(item: ParsedPrompt, field: str = "file") -> str:
    """A prompt's image path, resolved, when the path rule allows it (under MIRRORLAB_IMPORT_ROOTS): workers
    open it, so a path elsewhere (another project's files, the app's own) is refused naming the line."""
    if not item.image:
        return ""
    try:
        return checked_image(item.image)
    except PathRefused as refused:
        where = f"line {item.line}: " if field == "file" else ""
        raise PromptLimitError(field, f"{where}image: {refused.reason}") from None


def checked_prompt_fields(fields: dict) -> dict:
    """One prompt's fields as the API writes them (a new prompt, or an edit's changes), checked as a file's lines
    are: the image by the path rule (stored resolved), the problem and answer within MAX_PROMPT_CHARS;
    PromptLimitError naming the field."""
    if fields.get("image"):
        fields = {**fields, "image": allowed_image(ParsedPrompt(line=1, problem="", image=fields["image"]),
                                                   field="image")}
    check_prompt_lengths([ParsedPrompt(line=1, problem=fields.get("problem", ""), answer=fields.get("answer", ""))],
                         field="problem")
    return fields


def add_prompt(prompt_set: PromptSet, **fields) -> Prompt:
    """One prompt (its fields from checked_prompt_fields) appended at the set's end, in turn with other appends;
    PromptLimitError when the set is full."""
    with transaction.atomic():
        position = _lock_for_append(prompt_set)
        check_set_size(prompt_set.prompts.count() + 1, field="prompt_set")
        return Prompt.objects.create(prompt_set=prompt_set, position=position, **fields)


def _lock_for_append(prompt_set: PromptSet) -> int:
    """Lock the set's row until the transaction ends; the next free position."""
    PromptSet.objects.select_for_update().filter(pk=prompt_set.pk).exists()
    return (prompt_set.prompts.aggregate(last=Max("position"))["last"] or 0) + 1


def import_prompt_file(prompt_set: PromptSet, content: bytes, file_format: str) -> int:
    """Parse the whole file first, then append it: all lines or none."""
    return add_prompts(prompt_set, parse_prompt_file(content, file_format))


def create_prompt_set(project, name: str, prompts: Iterable[ParsedPrompt] = (), user=None, description: str = "",
                      source: str = "") -> PromptSet:
    """A new prompt set with its prompts; nothing is created if anything fails."""
    with transaction.atomic():
        prompt_set = PromptSet.objects.create(
            project=project, name=name, description=description, source=source, created_by=user
        )
        add_prompts(prompt_set, prompts)
    return prompt_set


def create_prompt_set_from_file(project, name: str, content: bytes, file_format: str, user=None,
                                description: str = "", source: str = "") -> PromptSet:
    """A new prompt set with the file's prompts; nothing is created if any line is bad."""
    return create_prompt_set(project, name, parse_prompt_file(content, file_format), user, description, source)


def pending_import_names(project) -> set[str]:
    """Names of the prompt sets that queued or running imports of the project will create."""
    pending = PromptSetImport.objects.filter(project=project, status__in=("queued", "running"))
    return set(pending.values_list("name", flat=True))


def prompt_set_name_error(project, name: str, renamed: PromptSet | None = None) -> str | None:
    """Why `name` cannot name a new prompt set of the project (or the set `renamed`), or None."""
    others = PromptSet.objects.filter(project=project, name=name)
    if renamed is not None:
        others = others.exclude(pk=renamed.pk)
    if others.exists():
        return f"This project already has a prompt set named {name!r}."
    if name in pending_import_names(project):
        return f"An import into a prompt set named {name!r} is already under way in this project."
    return None


def launch_prompt_import(**fields) -> PromptSetImport:
    """Create a queued import (config: a resolved PromptImportConfig) and send it to the cpu queue after commit (a
    broker that is down leaves it queued: the workers' recovery sends it)."""
    return PromptSetImport.create_queued(partial(enqueue_job, "prompt_import"), **fields)


def imports_in_request(upload) -> bool:
    """Whether an uploaded file is small enough to import inside the request (else a background job)."""
    return upload.size <= settings.UPLOAD_IMPORT_IN_REQUEST_BYTES


def queue_upload_import(project, owner, upload, file_format: str, name: str, description: str = "",
                        append_to: PromptSet | None = None) -> PromptSetImport:
    """Store a large uploaded file in the project's uploads folder and queue its import by a cpu worker: a new
    set named `name`, or the prompts appended to `append_to`."""
    folder = uploads_folder(project.pk)
    folder.mkdir(parents=True, exist_ok=True)
    stored = folder / f"{uuid.uuid4().hex}.{file_format}"
    with open(stored, "wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    try:
        return launch_prompt_import(project=project, owner=owner, name=name, description=description,
                                    config={"file_name": upload.name[:200], "size_bytes": upload.size},
                                    upload_file=str(stored), upload_format=file_format, append_to=append_to)
    except BaseException:
        stored.unlink(missing_ok=True)
        raise


def import_uploaded_file(job: PromptSetImport, progress: Callable[[str], None]) -> PromptSet:
    """Worker side of a large upload: parse the stored file (all lines or none), create the set or append to
    it, link it to the job and delete the file. `progress(line)` reports each phase and may raise to stop the
    job before the next one (a cancel: the file is deleted too).

    The file is parsed whole and written in one transaction, so a cancel is seen before parsing and between
    parsing and writing, not inside either. A worker that lost the job (JobTakenOver) leaves the file to the
    worker that holds the job now.
    """
    path = Path(job.upload_file)
    try:
        prompt_set = _import_stored_file(job, path, progress)
    except JobTakenOver:
        raise
    except BaseException:  # refused for good, cancelled or failed: the job ends here and its file is not kept
        path.unlink(missing_ok=True)
        raise
    path.unlink(missing_ok=True)
    return prompt_set


def _import_stored_file(job: PromptSetImport, path: Path, progress: Callable[[str], None]) -> PromptSet:
    progress(f"parsing {job.config.get('file_name', path.name)} ({decimal_size(path.stat().st_size)})")
    prompts = parse_prompt_file(path.read_bytes(), job.upload_format)
    progress(f"{len(prompts)} prompts valid; writing them")
    if job.append_to_id is None:
        return complete_prompt_import(job, prompts, job.config.get("file_name", ""))
    with job.holding_claim():  # the job's row is locked: attempts of this job take turns
        done = PromptSetImport.objects.filter(pk=job.pk).values_list("prompt_set_id", flat=True).get()
        if done is not None:  # another attempt of this job appended it already
            return PromptSet.objects.get(pk=done)
        add_prompts(job.append_to, prompts)
        PromptSetImport.objects.filter(pk=job.pk).update(prompt_set=job.append_to)
    return job.append_to


def remove_unclaimed_uploads() -> list[Path]:
    """Delete the stored uploads that no queued or running import will read, written more than
    UNCLAIMED_UPLOAD_GRACE_SECONDS ago; returns them."""
    root = Path(settings.UPLOADS_DIR)
    if not root.is_dir():
        return []
    pending = PromptSetImport.objects.filter(status__in=(JobStatus.QUEUED, JobStatus.RUNNING)).exclude(upload_file="")
    wanted = {Path(stored).name for stored in pending.values_list("upload_file", flat=True)}  # uuid names
    written_before = time.time() - UNCLAIMED_UPLOAD_GRACE_SECONDS
    removed = []
    for path in root.glob("project-*/*"):
        try:
            unclaimed = path.name not in wanted and path.is_file() and path.stat().st_mtime < written_before
        except FileNotFoundError:  # deleted meanwhile by the import that ended
            continue
        if unclaimed:
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def complete_prompt_import(job: PromptSetImport, prompts: list[ParsedPrompt], source: str) -> PromptSet:
    """Create the import's prompt set with every prompt and link it to the job, in one transaction that holds
    the job's claim (JobTakenOver, nothing created, when the worker lost it)."""
    with job.holding_claim():
        if PromptSet.objects.filter(project=job.project_id, name=job.name).exists():
            raise ValueError(f"name: the project already has a prompt set named {job.name!r}; nothing was imported")
        prompt_set = PromptSet.objects.create(project_id=job.project_id, name=job.name, description=job.description,
                                              source=source[:300], created_by=job.owner)
        add_prompts(prompt_set, prompts)
        PromptSetImport.objects.filter(pk=job.pk).update(prompt_set=prompt_set)
    return prompt_set
