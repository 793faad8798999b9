"""The web app under load while a 50 MB prompt file is imported: requests per second and p99 latency.

Starts gunicorn (threaded workers) and a cpu-queue Celery worker against a throwaway PostgreSQL database
(default mirrorlab_bench_load, created and dropped here; Redis db 13 as the broker), fills it with a run of
--iterations metrics and a table of evaluations, then drives 4 and 16 client threads over four endpoints:
the run page, the metrics API, a CSV table export and the run list (logged-in session for the pages, a token
for the API). Each level runs twice: idle, then during the background import of a --upload-mb JSONL upload
(POST /api/prompt-sets/ answers 202 at once; the worker parses and writes it while the clients run). Prints
one row per level, phase and endpoint, and whether the run list stayed under --p99-limit seconds p99 during
the import (the issue 17 target: 1 s).

    .venv/bin/python benchmarks/web_load_during_import.py [--seconds 10] [--upload-mb 50]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.table_export_load import free_port, server_command, stop  # noqa: E402
from benchmarks.throwaway_database import create_database, drop_database  # noqa: E402

BROKER = "redis://127.0.0.1:6379/13"


def environment(database: str, data_dir: str) -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{database}",
            "DJANGO_SETTINGS_MODULE": "webapp.settings", "DEBUG": "0", "LOG_LEVEL": "WARNING",
            "MIRRORLAB_DATA_DIR": data_dir, "CELERY_BROKER_URL": BROKER, "CELERY_RESULT_BACKEND": BROKER,
            "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}


def fill(iterations: int, evaluations: int) -> dict:
    """A user with a session and a token, a run with `iterations` metrics, `evaluations` finished evaluations."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.contrib.sessions.backends.db import SessionStore
    from django.core.management import call_command
    from rest_framework.authtoken.models import Token

    from webapp.evals.models import BenchmarkResult, BenchmarkSuite, EvalRun
    from webapp.projects.models import Project
    from webapp.prompts.services import create_prompt_set_from_file
    from webapp.runs.models import IterationMetric, RLRun

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("loadtest", password="loadtest-password")
    project = Project.objects.create(name="load", slug="load")
    project.add_member(user, role="owner")
    prompts = create_prompt_set_from_file(project, "seed", b'{"problem": "1+1?", "answer": "2"}\n', "jsonl", user)
    run = RLRun.objects.create(project=project, name="long", prompt_set=prompts, owner=user, config={},
                               status="running", total_iterations=iterations, current_iteration=iterations)
    IterationMetric.objects.bulk_create(
        IterationMetric(run=run, iteration=i, train_accuracy=i / iterations, mean_response_length=100 + i,
                        p95_response_length=200 + i, loss=1 / i, kl=0.01, tokens_generated=1000, tokens_reused=0,
                        seconds=1.0) for i in range(1, iterations + 1))
    suite = BenchmarkSuite.objects.create(project=project, name="paper", benchmarks=[{"benchmark": "math500"}])
    for index in range(evaluations):
        evaluation = EvalRun.objects.create(project=project, suite=suite, model=f"model-{index}", owner=user,
                                            status="succeeded")
        BenchmarkResult.objects.create(eval_run=evaluation, benchmark="math500", score=0.5, ci_low=0.45,
                                       ci_high=0.55, mean_response_tokens=900, num_problems=500,
                                       samples_per_problem=1)
    session = SessionStore()
    session.update({SESSION_KEY: str(user.pk), BACKEND_SESSION_KEY: "django.contrib.auth.backends.ModelBackend",
                    HASH_SESSION_KEY: user.get_session_auth_hash()})
    session.create()
    return {"token": Token.objects.create(user=user).key, "session": session.session_key, "project": project.pk,
            "endpoints": {"run page": (f"/runs/{run.pk}/", "session"),
                          "metrics API": (f"/api/iteration-metrics/?run={run.pk}&page_size=500", "token"),
                          "CSV export": (f"/api/benchmark-tables/?suite={suite.pk}&format=csv", "token"),
                          "run list": ("/runs/", "session")}}


def request(port: int, method: str, path: str, headers: dict, body: bytes | None = None,
            timeout: float = 120.0) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def auth_headers(state: dict, kind: str) -> dict:
    if kind == "token":
        return {"Authorization": f"Token {state['token']}"}
    return {"Cookie": f"sessionid={state['session']}"}


def upload_body(megabytes: float) -> tuple[bytes, str]:
    """A multipart body creating a prompt set from a JSONL file of about `megabytes` MB."""
    line = json.dumps({"problem": "Compute the sum of the first n odd numbers for n = {i}. " + "x" * 120,
                       "answer": "{i}"})
    count = int(megabytes * 1e6 / (len(line) + 8))
    content = "".join(line.replace("{i}", str(i)) + "\n" for i in range(count)).encode()
    boundary = uuid.uuid4().hex
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
             for name, value in (("project", "{project}"), ("name", "big upload"))]
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.jsonl"\r\n'
                 f"Content-Type: application/octet-stream\r\n\r\n".encode() + content + b"\r\n")
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), boundary


def drive(port: int, state: dict, clients: int, seconds: float, until=None) -> dict[str, list[float]]:
    """`clients` threads cycling over the endpoints for `seconds` (or until `until()` is true); latencies in s."""
    latencies: dict[str, list[float]] = {name: [] for name in state["endpoints"]}
    errors = [0]
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client(offset: int) -> None:
        names = list(state["endpoints"])
        turn = offset
        while time.monotonic() < deadline and not (until and until()):
            name = names[turn % len(names)]
            turn += 1
            path, kind = state["endpoints"][name]
            start = time.perf_counter()
            status, _ = request(port, "GET", path, auth_headers(state, kind))
            elapsed = time.perf_counter() - start
            with lock:
                latencies[name].append(elapsed)
                errors[0] += status != 200

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    latencies["_seconds"] = [time.monotonic() - started]
    latencies["_errors"] = [float(errors[0])]
    return latencies


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] if len(values) >= 2 else (values[0] if values else float("nan"))


def report(level: int, phase: str, measured: dict[str, list[float]]) -> None:
    seconds = measured.pop("_seconds")[0]
    errors = int(measured.pop("_errors")[0])
    for name, values in measured.items():
        print(f"{level:>7} | {phase:<16} | {name:<12} | {len(values) / seconds:8.1f} | "
              f"{statistics.median(values) * 1000:8.0f} | {p99(values) * 1000:8.0f}" + (f" | {errors} errors"
                                                                                     if errors else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds per level and phase")
    parser.add_argument("--upload-mb", type=float, default=50.0)
    parser.add_argument("--iterations", type=int, default=2000, help="metric rows of the run")
    parser.add_argument("--evaluations", type=int, default=40)
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes (4 threads each)")
    parser.add_argument("--p99-limit", type=float, default=1.0)
    parser.add_argument("--database", default="mirrorlab_bench_load")
    args = parser.parse_args()

    data_dir = tempfile.mkdtemp(prefix="mirrorlab-bench-load-")
    create_database(args.database)
    env = environment(args.database, data_dir)
    os.environ.update({key: env[key] for key in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE", "MIRRORLAB_DATA_DIR",
                                                 "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")})
    import django
    import redis

    django.setup()
    redis.Redis.from_url(BROKER).flushdb()
    state = fill(args.iterations, args.evaluations)
    port = free_port()
    server = subprocess.Popen(server_command("gunicorn", port, args.workers, 4), cwd=REPO, env=env)
    worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "workers", "worker", "-Q", "cpu",
                               "--pool=solo", "-n", "bench-cpu@%h", "--loglevel=WARNING"], cwd=REPO, env=env)
    try:
        measure(port, state, args)
    finally:
        stop(server)
        stop(worker)
        drop_database(args.database)


def measure(port: int, state: dict, args: argparse.Namespace) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if request(port, "GET", "/runs/", auth_headers(state, "session"), timeout=5)[0] == 200:
                break
        except OSError:
            time.sleep(0.3)
    body, boundary = upload_body(args.upload_mb)
    body = body.replace(b"{project}", str(state["project"]).encode(), 1)
    print(f"upload: {len(body) / 1e6:.1f} MB; gunicorn {args.workers} workers x 4 threads; {os.cpu_count()} cores")
    print(" clients | phase            | endpoint     |    req/s |  p50 ms |  p99 ms")
    from webapp.prompts.models import PromptSetImport

    run_list_p99 = []
    for level in (4, 16):
        report(level, "idle", drive(port, state, level, args.seconds))
        PromptSetImport.objects.all().delete()
        from webapp.prompts.models import PromptSet

        PromptSet.objects.filter(name="big upload").delete()
        started = time.perf_counter()
        status, answer = request(port, "POST", "/api/prompt-sets/", {
            **auth_headers(state, "token"), "Content-Type": f"multipart/form-data; boundary={boundary}"}, body)
        accepted = time.perf_counter() - started
        if status != 202:
            raise SystemExit(f"the upload answered {status}: {answer[:300]!r}")
        job_id = json.loads(answer)["id"]
        print(f"        | upload answered 202 in {accepted:.1f} s; import #{job_id} queued")

        def import_done() -> bool:
            return PromptSetImport.objects.get(pk=job_id).is_terminal

        measured = drive(port, state, level, args.seconds, until=import_done)
        run_list_p99.append(p99(measured["run list"]))
        report(level, "during import", measured)
        wait_start = time.monotonic()
        while not import_done() and time.monotonic() - wait_start < 600:
            time.sleep(0.5)
        job = PromptSetImport.objects.get(pk=job_id)
        print(f"        | import #{job_id}: {job.status} ({job.prompt_set.prompts.count() if job.prompt_set else 0} "
              f"prompts){' ' + job.error if job.error else ''}")
    worst = max(run_list_p99)
    verdict = "reached" if worst < args.p99_limit else "NOT reached"
    print(f"run list p99 during the import: {worst:.2f} s (target < {args.p99_limit:.0f} s: {verdict})")


if __name__ == "__main__":
    main()
