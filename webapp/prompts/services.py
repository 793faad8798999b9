"""Create prompt sets and import prompts, atomically."""

from __future__ import annotations

from typing import Iterable

from django.db import transaction
from django.db.models import Max

from common.prompt_files import ParsedPrompt, parse_prompt_file
from webapp.prompts.models import Prompt, PromptSet


def add_prompts(prompt_set: PromptSet, prompts: Iterable[ParsedPrompt]) -> int:
    """Append parsed prompts after the set's last position; returns how many were added."""
    start = (prompt_set.prompts.aggregate(last=Max("position"))["last"] or 0) + 1
    rows = [
        Prompt(
            prompt_set=prompt_set, position=start + offset, problem=item.problem, image=item.image,
            answer=item.answer, test_cases=item.test_cases, domain=item.domain, tags=list(item.tags),
            difficulty=item.difficulty, pass_rate=item.pass_rate,
        )
        for offset, item in enumerate(prompts)
    ]
    Prompt.objects.bulk_create(rows, batch_size=1000)
    return len(rows)


def import_prompt_file(prompt_set: PromptSet, content: bytes, file_format: str) -> int:
    """Parse the whole file first, then insert in one transaction: all lines or none."""
    parsed = parse_prompt_file(content, file_format)
    with transaction.atomic():
        return add_prompts(prompt_set, parsed)


def create_prompt_set_from_file(project, name: str, content: bytes, file_format: str, user=None,
                                description: str = "", source: str = "") -> PromptSet:
    """A new prompt set with the file's prompts; nothing is created if any line is bad."""
    parsed = parse_prompt_file(content, file_format)
    with transaction.atomic():
        prompt_set = PromptSet.objects.create(
            project=project, name=name, description=description, source=source, created_by=user
        )
        add_prompts(prompt_set, parsed)
    return prompt_set
