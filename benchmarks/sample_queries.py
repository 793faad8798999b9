"""Dashboard queries over 100k per-sample rows, with and without the sample indexes, side by side.

Uses its own PostgreSQL database (default mirrorlab_bench on 127.0.0.1), created and migrated here.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def setup_django(database: str) -> None:
    import psycopg

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as admin:
        if not admin.execute("select 1 from pg_database where datname = %s", (database,)).fetchone():
            admin.execute(f'create database "{database}"')
    os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{database}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def fill(rows: int, other_runs: int):
    """One target evaluation with `rows` samples, plus `other_runs` evaluations of the same size."""
    import random

    from webapp.evals.models import BenchmarkSuite, EvalRun, SampleResult
    from webapp.projects.models import Project

    project, _ = Project.objects.get_or_create(slug="bench", defaults={"name": "bench"})
    suite, _ = BenchmarkSuite.objects.get_or_create(project=project, name="bench",
                                                    defaults={"benchmarks": [{"benchmark": "math500"}]})
    EvalRun.objects.filter(project=project).delete()
    rng = random.Random(0)
    runs = [EvalRun.objects.create(project=project, suite=suite, model=f"m{index}") for index in range(other_runs + 1)]
    for eval_run in runs:
        batch = []
        for index in range(rows):
            tokens = int(rng.lognormvariate(6, 0.8))
            batch.append(SampleResult(eval_run=eval_run, benchmark="math500", problem_id=str(index // 8),
                                      sample_index=index % 8, response_tokens=tokens,
                                      correct=rng.random() < max(0.05, 0.9 - tokens / 4000)))
        SampleResult.objects.bulk_create(batch, batch_size=5000)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE evals_sampleresult")
    return runs[0]


def time_queries(eval_run_id: int, repeats: int) -> dict[str, float]:
    """Median milliseconds of each dashboard query."""
    from webapp.evals.models import SampleResult
    from webapp.evals.services import accuracy_by_length

    queries = {
        "accuracy_by_length": lambda: accuracy_by_length(eval_run_id, "math500", 256),
        "wrong_long_samples_page": lambda: list(
            SampleResult.objects.filter(eval_run_id=eval_run_id, benchmark="math500", correct=False,
                                        response_tokens__gte=2000).order_by("response_tokens")[:50]),
    }
    medians = {}
    for name, query in queries.items():
        query()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            query()
            times.append((time.perf_counter() - start) * 1000)
        medians[name] = statistics.median(times)
    return medians


def without_indexes(action):
    """Run `action` with every secondary index of the sample table dropped, in a rolled-back transaction."""
    from django.db import connection, transaction

    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("DROP INDEX sample_length_idx; DROP INDEX sample_correct_idx; "
                           "ALTER TABLE evals_sampleresult DROP CONSTRAINT one_row_per_sample")
        try:
            return action()
        finally:
            transaction.set_rollback(True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000, help="sample rows of the measured evaluation")
    parser.add_argument("--other-runs", type=int, default=3, help="other evaluations of the same size in the table")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--database", default="mirrorlab_bench")
    args = parser.parse_args()
    setup_django(args.database)
    start = time.perf_counter()
    target = fill(args.rows, args.other_runs)
    print(f"filled {args.rows * (args.other_runs + 1):,} sample rows in {time.perf_counter() - start:.1f}s")
    indexed = time_queries(target.pk, args.repeats)
    unindexed = without_indexes(lambda: time_queries(target.pk, args.repeats))
    print(f"{'query':<26}{'indexed ms':>12}{'no index ms':>13}{'speed-up':>10}")
    for name in indexed:
        print(f"{name:<26}{indexed[name]:>12.1f}{unindexed[name]:>13.1f}{unindexed[name] / indexed[name]:>9.1f}x")


if __name__ == "__main__":
    main()
