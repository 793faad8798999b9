"""Create the demo user, project, synthetic prompt set and benchmark suite (idempotent)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from training.tasks.arithmetic import generate
from webapp.evals.models import BenchmarkSuite
from webapp.projects.models import Project
from common.prompt_files import ParsedPrompt
from webapp.prompts.models import PromptSet
from webapp.prompts.services import add_prompts

DEMO_PROMPTS = 256


class Command(BaseCommand):
    help = "Create the demo user (demo/demo), the Demo project, its synthetic arithmetic prompt set and suite."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", default="demo")

    @transaction.atomic
    def handle(self, *args, username: str, password: str, **options):
        user, created = get_user_model().objects.get_or_create(username=username, defaults={"is_staff": True,
                                                                                             "is_superuser": True})
        if created:
            user.set_password(password)
            user.save()
        project, _ = Project.objects.get_or_create(slug="demo", defaults={"name": "Demo"})
        project.add_member(user, role="owner")
        prompt_set, made = PromptSet.objects.get_or_create(
            project=project, name="Synthetic arithmetic",
            defaults={"source": "generator: training.tasks.arithmetic, seed 0",
                      "description": "Multi-digit addition and subtraction, four difficulty levels."},
        )
        if made:
            add_prompts(prompt_set, [
                ParsedPrompt(line=index + 1, problem=item.problem, answer=item.answer, domain="math",
                             tags=("arithmetic",), difficulty=item.difficulty)
                for index, item in enumerate(generate(DEMO_PROMPTS, seed=0))
            ])
        BenchmarkSuite.objects.get_or_create(
            project=project, name="Synthetic arithmetic (held out)",
            defaults={"benchmarks": [{"benchmark": "synthetic-arithmetic", "samples_per_problem": 4,
                                      "max_tokens": 256, "temperature": 1.0, "top_p": 1.0, "limit": 64}]},
        )
        self.stdout.write(f"demo ready: log in as {username!r} (password {password!r} if it was just created)")
