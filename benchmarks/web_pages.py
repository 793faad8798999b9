"""Server time of the run page, its status JSON, the compare view and the sample browsers as sample rows grow.

Two runs with 10k iterations each; the first also gets N evaluation samples (SampleResult rows of an
evaluation of its checkpoint) and, where the model exists, N training samples; N = 1k, 10k, 100k. Pages are rendered by
Django's test Client in this process (no network); each figure is the median of --repeats requests.
Uses a throwaway PostgreSQL database (default mirrorlab_bench_web on 127.0.0.1), created and dropped here.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.throwaway_database import create_database, drop_database  # noqa: E402

SIZES = (1_000, 10_000, 100_000)
BATCH = 5_000


def setup_django(database: str) -> None:
    os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{database}"
    os.environ.setdefault("MIRRORLAB_DATA_DIR", tempfile.mkdtemp(prefix="mirrorlab-bench-web-"))
    os.environ["DJANGO_SETTINGS_MODULE"] = "webapp.settings"
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def create_runs(iterations: int):
    """(user, target run, other run, evaluation of the target's checkpoint), each run with `iterations` metrics."""
    from django.contrib.auth import get_user_model

    from webapp.evals.models import BenchmarkSuite, EvalRun
    from webapp.projects.models import Project
    from webapp.prompts.models import Prompt, PromptSet
    from webapp.runs.models import Checkpoint, IterationMetric, RLRun

    user = get_user_model().objects.create_user("bench", password="bench-password")
    project = Project.objects.create(name="bench", slug="bench")
    project.add_member(user, role="owner")
    prompt_set = PromptSet.objects.create(project=project, name="bench")
    Prompt.objects.create(prompt_set=prompt_set, position=0, problem="What is 2+3?", answer="5")
    runs = []
    for name in ("target", "other"):
        run = RLRun.objects.create(project=project, name=name, prompt_set=prompt_set, owner=user, status="succeeded",
                                   config={"iterations": iterations, "trainer_backend": "noop-test"},
                                   current_iteration=iterations, total_iterations=iterations)
        IterationMetric.objects.bulk_create(
            (IterationMetric(run=run, iteration=step, train_accuracy=min(1.0, step / iterations),
                             mean_response_length=100 + step % 500, p95_response_length=200 + step % 700,
                             loss=1.0 / step, kl=0.01, tokens_generated=64 * step, seconds=0.5)
             for step in range(1, iterations + 1)), batch_size=BATCH)
        runs.append(run)
    checkpoint = Checkpoint.objects.create(project=project, run=runs[0], iteration=iterations, path="/tmp/bench")
    suite = BenchmarkSuite.objects.create(project=project, name="bench", benchmarks=[{"benchmark": "math500"}])
    evaluation = EvalRun.objects.create(project=project, suite=suite, checkpoint=checkpoint, owner=user,
                                        status="succeeded")
    return user, runs[0], runs[1], evaluation


def training_sample_model():
    """The per-sample training rows' model (runs.TrainingSample) if this version has one, else None."""
    from django.apps import apps

    try:
        return apps.get_model("runs", "TrainingSample")
    except LookupError:
        return None


def add_samples(run, evaluation, start: int, stop: int) -> None:
    """Evaluation samples (and training samples where the model exists) numbered start..stop-1."""
    import random

    from webapp.evals.models import SampleResult

    rng = random.Random(start)
    for first in range(start, stop, BATCH):
        indexes = range(first, min(stop, first + BATCH))
        SampleResult.objects.bulk_create(
            SampleResult(eval_run=evaluation, benchmark="math500", problem_id=str(index // 8), sample_index=index % 8,
                         response=f"The answer is {index % 97}.", response_tokens=int(rng.lognormvariate(6, 0.8)),
                         correct=rng.random() < 0.6) for index in indexes)
    add_training_samples(run, start, stop)


def add_training_samples(run, start: int, stop: int) -> None:
    """Training samples numbered start..stop-1, 64 per iteration (8 problems x k=8), newest iterations last."""
    model = training_sample_model()
    if model is None:
        return
    for first in range(start, stop, BATCH):
        model.objects.bulk_create(
            model(run=run, iteration=1 + index // 64, prompt_id=str(index // 8 % 500),
                  problem=f"Problem {index // 8 % 500}", sample_index=index % 8, response=f"Response {index}.",
                  reward=float(index % 3 == 0), correct=index % 3 == 0, response_tokens=50 + index % 900)
            for index in range(first, min(stop, first + BATCH)))


def median_milliseconds(client, url: str, repeats: int) -> float:
    """Median server time of GET url; the first (warm-up) request is not counted."""
    response = client.get(url)
    if response.status_code != 200:
        raise SystemExit(f"GET {url} answered {response.status_code}: {response.content[:300]!r}")
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        client.get(url)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def page_urls(target, other, evaluation) -> dict[str, str]:
    """Column name -> URL; a page this version lacks is left out, saying so."""
    from django.urls import NoReverseMatch, reverse

    pages = {
        "run page": ("run-detail", [target.pk], ""),
        "status JSON": ("run-status", [target.pk], ""),
        "compare view": ("compare", [], f"?runs={target.pk},{other.pk}"),
        "run samples": ("run-samples", [target.pk], ""),
        "eval samples": ("evaluation-samples", [evaluation.pk], ""),
    }
    urls = {}
    for column, (name, args, query) in pages.items():
        try:
            urls[column] = reverse(name, args=args) + query
        except NoReverseMatch:
            print(f"(no {column} in this version: its column is left out)")
    return urls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="sample rows, ascending")
    parser.add_argument("--iterations", type=int, default=10_000, help="iteration rows per run")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--database", default="mirrorlab_bench_web")
    args = parser.parse_args()
    create_database(args.database)
    try:
        setup_django(args.database)
        measure(args)
    finally:
        drop_database(args.database)


def measure(args) -> None:
    from django.db import connection
    from django.test import Client

    user, target, other, evaluation = create_runs(args.iterations)
    client = Client()
    client.force_login(user)
    urls = page_urls(target, other, evaluation)
    samples_kind = "evaluation + training" if training_sample_model() else "evaluation"
    print(f"{args.iterations:,} iterations per run; {samples_kind} sample rows; median of {args.repeats} requests")
    print(f"{'sample rows':>12}" + "".join(f"{name + ' ms':>16}" for name in urls))
    results, filled = {}, 0
    for size in sorted(args.sizes):
        add_samples(target, evaluation, filled, size)
        filled = size
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        results[size] = {name: median_milliseconds(client, url, args.repeats) for name, url in urls.items()}
        print(f"{size:>12,}" + "".join(f"{results[size][name]:>16.1f}" for name in urls))
    smallest, largest = min(results), max(results)
    if smallest != largest:
        print(f"{f'{largest:,} / {smallest:,}':>12}"
              + "".join(f"{results[largest][name] / results[smallest][name]:>15.2f}x" for name in urls))


if __name__ == "__main__":
    main()
