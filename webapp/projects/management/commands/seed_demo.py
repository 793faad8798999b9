"""Create the demo user, project, synthetic prompt set and benchmark suite (idempotent)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
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
ABLATION_SEEDS = (0, 1)


class Command(BaseCommand):
    help = "Create the demo user (demo/demo), the Demo project, its synthetic arithmetic prompt set and suite."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", default="demo")
        parser.add_argument("--launch-run", action="store_true", dest="queue_run",
                            help="queue the demo RL run (warm-up SFT, then RL on the tiny model) unless one exists, "
                                 "and its four long2short variants (they wait for the run)")
        parser.add_argument("--ablations", action="store_true",
                            help="queue the report's figure 9 and 10 comparisons as small runs from the demo run's "
                                 "warm-up checkpoint: uniform sampling against warmup_then_hard, mirror descent "
                                 "against ReST, each pair on the same seeds")
        parser.add_argument("--ablation-seeds", type=int, nargs="+", default=list(ABLATION_SEEDS),
                            help=f"run seeds of the ablations (default: {' '.join(map(str, ABLATION_SEEDS))})")

    @transaction.atomic
    def handle(self, *args, username: str, password: str, queue_run: bool = False, ablations: bool = False,
               ablation_seeds: list[int] = ABLATION_SEEDS, **options):
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
                                      "max_tokens": 128, "temperature": 1.0, "top_p": 1.0, "limit": 256}]},
        )
        if queue_run:
            self.queue_demo_run(project, prompt_set, suite, user)
        if ablations:
            for line in queue_ablations(project, prompt_set, suite, user, ablation_seeds):
                self.stdout.write(line)
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


# Report section 2.4 on the demo run, small enough for a few minutes on 2 cores: each variant is evaluated on the
# held-out suite, so /long2short/?parent=<run> draws accuracy against tokens (the report's figure 7). Settings
# chosen by measurement on the demo run (docs/demo-design.md, section 6): each shortens the held-out responses
# with a paired interval that excludes zero; the defaults suit 7B models and barely move the tiny one.
DEMO_VARIANTS = (
    ("Merge with the warm-up checkpoint", "merge", {"parent_weight": 0.5, "other_run_iterations": "0"}),
    ("Shortest rejection sampling", "shortest_rejection",
     {"samples_per_problem": 8, "max_response_tokens": 64, "learning_rate": 3e-4, "epochs": 2}),
    ("DPO: shortest correct over long or wrong", "dpo",
     {"samples_per_problem": 4, "max_response_tokens": 64, "beta": 0.1, "learning_rate": 1e-4, "epochs": 2}),
    ("Long2short RL", "long2short_rl",
     {"iterations": 8, "length_penalty_weight": 0.5, "max_response_fraction": 0.5, "learning_rate": 1e-4}),
)


def launch_demo_variants(run: RLRun, suite, user) -> list[Long2ShortVariant]:
    """Queue each demo variant of the run that does not exist yet (by name)."""
    existing = set(Long2ShortVariant.objects.filter(parent_run=run).values_list("name", flat=True))
    return [
        launch_variant(project=run.project, name=name, method=method, parent_run=run, evaluation_suite=suite,
                       owner=user, parameters=config_to_dict(parse_config(LONG2SHORT_CONFIGS[method], knobs)))
        for name, method, knobs in DEMO_VARIANTS if name not in existing
    ]


# The report's figures 9 and 10 on the demo task: small runs from the demo run's warm-up checkpoint, each knob
# against the same baseline on the same seed. Figure 9: uniform sampling against warmup_then_hard (the whole set
# for the first half, then the hard and expert problems only); figure 10: mirror descent against ReST.
ABLATION_ITERATIONS = 20
ABLATIONS = (
    ("uniform sampling, mirror descent", {}),
    ("warmup_then_hard", {"sampling_strategy": "warmup_then_hard", "curriculum_iterations": ABLATION_ITERATIONS // 2}),
    ("ReST", {"policy_loss": "rest"}),
)


def ablation_name(label: str, seed: int) -> str:
    return f"Ablation: {label} (seed {seed})"


def queue_ablations(project, prompt_set, suite, user, seeds) -> list[str]:
    """Queue each ablation run that is missing (by name); lines saying what was queued and where to compare."""
    demo = RLRun.objects.filter(project=project, name=DEMO_RUN_NAME).first()
    warm = demo and demo.checkpoints.filter(iteration=0, files_removed_at=None).first()
    if warm is None:
        raise CommandError("the ablations start from the demo run's warm-up checkpoint (iteration 0): queue the demo "
                           "first (seed_demo --launch-run) and run them once its warm-up has finished")
    lines, runs = [], {}
    for seed in seeds:
        for label, knobs in ABLATIONS:
            name = ablation_name(label, seed)
            run = RLRun.objects.filter(project=project, name=name).first()
            if run is None:
                config = config_to_dict(parse_config(RLConfig, {
                    **TINY_DEMO, "model": warm.path, "warmup_sft_steps": 0, "seed": seed,
                    "iterations": ABLATION_ITERATIONS, "evaluate_every_iterations": ABLATION_ITERATIONS // 2,
                    **knobs}))
                run = launch_run(project=project, name=name, prompt_set=prompt_set, owner=user, config=config,
                                 evaluation_suite=suite,
                                 description=f"The report's figure 9/10 ablation on the demo task: {label}, from the "
                                             f"demo run's warm-up checkpoint, seed {seed}.")
                lines.append(f"queued run #{run.pk}: {name}")
            runs[(label, seed)] = run
    baseline = ABLATIONS[0][0]
    for label, figure in ((ABLATIONS[1][0], 9), (ABLATIONS[2][0], 10)):
        for seed in seeds:
            lines.append(f"figure {figure}, seed {seed}: /compare/?runs={runs[(baseline, seed)].pk},"
                         f"{runs[(label, seed)].pk}")
    return lines
