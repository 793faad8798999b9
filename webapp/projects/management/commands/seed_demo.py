"""Create the demo user, project, synthetic prompt set and benchmark suite (idempotent)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from common.knobs import config_to_dict, parse_config
from training.config import LONG2SHORT_CONFIGS, RLConfig
from training.recipes import TINY_DEMO
from training.tasks.arithmetic import generate
from webapp.evals.models import BenchmarkSuite
from webapp.long2short.models import Long2ShortVariant
from webapp.long2short.services import launch_variant
from webapp.projects.models import Project
from common.prompt_files import ParsedPrompt
from webapp.prompts.models import PromptSet
from webapp.prompts.services import add_prompts
from webapp.runs.models import RLRun
from webapp.runs.services import launch_run

DEMO_PROMPTS = 256


class Command(BaseCommand):
    help = "Create the demo user (demo/demo), the Demo project, its synthetic arithmetic prompt set and suite."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", default="demo")
        parser.add_argument("--launch-run", action="store_true", dest="queue_run",
                            help="queue the demo RL run (warm-up SFT, then RL on the tiny model) unless one exists, "
                                 "and its four long2short variants (they wait for the run)")

    @transaction.atomic
    def handle(self, *args, username: str, password: str, queue_run: bool = False, **options):
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
                      "description": "Sums and differences of 2 to 6 single-digit numbers, four difficulty levels."},
        )
        if made:
            add_prompts(prompt_set, [
                ParsedPrompt(line=index + 1, problem=item.problem, answer=item.answer, domain="math",
                             tags=("arithmetic",), difficulty=item.difficulty)
                for index, item in enumerate(generate(DEMO_PROMPTS, seed=0))
            ])
        suite, _ = BenchmarkSuite.objects.get_or_create(
            project=project, name="Synthetic arithmetic (held out)",
            defaults={"benchmarks": [{"benchmark": "synthetic-arithmetic", "samples_per_problem": 4,
                                      "max_tokens": 256, "temperature": 1.0, "top_p": 1.0, "limit": 64}]},
        )
        if queue_run:
            self.queue_demo_run(project, prompt_set, suite, user)
        self.stdout.write(f"demo ready: log in as {username!r} (password {password!r} if it was just created)")

    def queue_demo_run(self, project, prompt_set, suite, user) -> None:
        """The demo run unless it exists, then each of its long2short variants that is missing."""
        run = RLRun.objects.filter(project=project, name=DEMO_RUN_NAME).first()
        if run is None:
            run = launch_run_row(project, prompt_set, suite, user)
            self.stdout.write(f"queued the demo RL run #{run.pk}: warm-up SFT, then {run.total_iterations} RL "
                              "iterations")
        queued = launch_demo_variants(run, suite, user)
        if queued:
            self.stdout.write(f"queued {len(queued)} long2short variants of run #{run.pk} (they start when it ends); "
                              f"compare them at /long2short/?parent={run.pk}")


DEMO_RUN_NAME = "Tiny demo: warm-up SFT, then RL"


def launch_run_row(project, prompt_set, suite, user) -> RLRun:
    """The demo run; its checkpoints (every 10 iterations) are evaluated on the held-out suite."""
    config = config_to_dict(parse_config(RLConfig, {**TINY_DEMO, "evaluate_every_iterations": 10}))
    return launch_run(project=project, name=DEMO_RUN_NAME, prompt_set=prompt_set, owner=user, config=config,
                      evaluation_suite=suite,
                      description="The README's demo: the tiny Qwen2 model learns multi-step arithmetic.")


# Report section 8 on the demo run, small enough for a few minutes on 2 cores: each variant is evaluated on the
# held-out suite, so /long2short/?parent=<run> draws accuracy against tokens (the report's figure 7). Learning
# rates as in benchmarks/long2short.py (the defaults suit 7B models and barely move the tiny one); 4 samples
# per problem and one epoch keep the sampling methods short.
DEMO_VARIANTS = (
    ("Merge with the warm-up checkpoint", "merge", {"parent_weight": 0.5, "other_run_iterations": "0"}),
    ("Shortest rejection sampling", "shortest_rejection",
     {"samples_per_problem": 4, "max_response_tokens": 64, "learning_rate": 1e-4, "epochs": 1}),
    ("DPO: shortest correct over long or wrong", "dpo",
     {"samples_per_problem": 4, "max_response_tokens": 64, "beta": 0.1, "learning_rate": 5e-5, "epochs": 1}),
    ("Long2short RL", "long2short_rl",
     {"iterations": 8, "length_penalty_weight": 0.5, "max_response_fraction": 0.5, "learning_rate": 2e-4}),
)


def launch_demo_variants(run: RLRun, suite, user) -> list[Long2ShortVariant]:
    """Queue each demo variant of the run that does not exist yet (by name)."""
    existing = set(Long2ShortVariant.objects.filter(parent_run=run).values_list("name", flat=True))
    return [
        launch_variant(project=run.project, name=name, method=method, parent_run=run, evaluation_suite=suite,
                       owner=user, parameters=config_to_dict(parse_config(LONG2SHORT_CONFIGS[method], knobs)))
        for name, method, knobs in DEMO_VARIANTS if name not in existing
    ]
