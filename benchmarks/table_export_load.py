"""Requests per second and p50/p99 latency of GET /api/benchmark-tables/?format=csv under 1, 4 and 16 clients.

Starts a real server process on 127.0.0.1 (gunicorn with threaded workers when installed, else Django's
WSGI app under a threaded wsgiref server started by this same script), fills a throwaway PostgreSQL
database (default mirrorlab_bench_export, created and dropped here) with a table of evaluations by
benchmarks, and hits the export with token-authenticated client threads, a new connection per request.
Each level stops after --requests requests or --seconds seconds, whichever comes first.
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.throwaway_database import create_database, drop_database  # noqa: E402

EXPORT_PATH = "/api/benchmark-tables/?format=csv"
BENCHMARKS = ["aime24", "math500", "gsm8k", "humaneval", "mbpp", "livecodebench", "gpqa", "mmlu_pro"]


def server_environment(database: str) -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{database}",
            "DJANGO_SETTINGS_MODULE": "webapp.settings", "DEBUG": "0", "LOG_LEVEL": "WARNING",
            "MIRRORLAB_DATA_DIR": os.environ.get("MIRRORLAB_DATA_DIR") or tempfile.mkdtemp(prefix="mirrorlab-load-"),
            "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}


def fill(evaluations: int) -> str:
    """A user, a suite of BENCHMARKS and `evaluations` succeeded evaluations with every result; returns a token."""
    import random

    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from rest_framework.authtoken.models import Token

    from webapp.evals.models import BenchmarkResult, BenchmarkSuite, EvalRun
    from webapp.projects.models import Project

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("loadtest", password="loadtest-password")
    project = Project.objects.create(name="load", slug="load")
    project.add_member(user, role="owner")
    suite = BenchmarkSuite.objects.create(project=project, name="paper", benchmarks=[
        {"benchmark": name, "samples_per_problem": 4} for name in BENCHMARKS])
    rng = random.Random(0)
    for index in range(evaluations):
        evaluation = EvalRun.objects.create(project=project, suite=suite, model=f"model-{index}", owner=user,
                                            status="succeeded")
        for name in BENCHMARKS:
            score = rng.random()
            BenchmarkResult.objects.create(eval_run=evaluation, benchmark=name, score=score, ci_low=score * 0.9,
                                           ci_high=min(1.0, score * 1.1), mean_response_tokens=rng.uniform(200, 4000),
                                           num_problems=500, samples_per_problem=4)
    return Token.objects.create(user=user).key


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def server_command(kind: str, port: int, workers: int, threads: int) -> list[str]:
    if kind == "gunicorn":
        return [sys.executable, "-m", "gunicorn", "webapp.wsgi:application", "--bind", f"127.0.0.1:{port}",
                "--workers", str(workers), "--threads", str(threads), "--worker-class", "gthread",
                "--log-level", "warning"]
    return [sys.executable, str(Path(__file__).resolve()), "--serve", str(port)]


def serve_with_wsgiref(port: int) -> None:
    """The fallback server: Django's WSGI app on a thread per request (this script, re-invoked with --serve)."""
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    from webapp.wsgi import application

    class ThreadingServer(ThreadingMixIn, WSGIServer):
        daemon_threads = True
        request_queue_size = 128

    class QuietHandler(WSGIRequestHandler):
        def log_message(self, format, *args):  # one line per request would dominate the measurement
            pass

    server = make_server("127.0.0.1", port, application, server_class=ThreadingServer, handler_class=QuietHandler)
    server.serve_forever()


def get(port: int, token: str, timeout: float = 30.0) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", EXPORT_PATH, headers={"Authorization": f"Token {token}"})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def wait_until_serving(port: int, token: str, process: subprocess.Popen, timeout: float = 60.0) -> bytes:
    """The export's bytes once the server answers 200; fails if the server exits or never answers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited with status {process.returncode} before answering")
        try:
            status, body = get(port, token, timeout=5)
        except OSError:
            time.sleep(0.2)
            continue
        if status != 200:
            raise SystemExit(f"GET {EXPORT_PATH} answered {status}: {body[:300]!r}")
        return body
    raise SystemExit(f"the server did not answer on 127.0.0.1:{port} within {timeout:.0f}s")


def load_level(port: int, token: str, clients: int, requests: int, seconds: float, expected: bytes) -> dict:
    """Run `clients` threads sharing a budget of `requests` requests; latencies in ms, wrong answers counted."""
    latencies: list[float] = []
    failures = [0]
    budget = iter(range(requests))
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client() -> None:
        while time.monotonic() < deadline:
            with lock:
                if next(budget, None) is None:
                    return
            start = time.perf_counter()
            try:
                status, body = get(port, token)
                ok = status == 200 and body == expected
            except OSError:
                ok = False
            elapsed = (time.perf_counter() - start) * 1000
            with lock:
                if ok:
                    latencies.append(elapsed)
                else:
                    failures[0] += 1

    threads = [threading.Thread(target=client) for _ in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    latencies.sort()
    return {"clients": clients, "done": len(latencies), "failed": failures[0], "rps": len(latencies) / wall,
            "p50": statistics.median(latencies) if latencies else float("nan"),
            "p99": latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))] if latencies else float("nan")}


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16], help="concurrency levels")
    parser.add_argument("--requests", type=int, default=400, help="requests per level (at most)")
    parser.add_argument("--seconds", type=float, default=60.0, help="time limit per level")
    parser.add_argument("--evaluations", type=int, default=20, help="rows of the exported table")
    parser.add_argument("--server", choices=["gunicorn", "wsgiref"],
                        default="gunicorn" if importlib.util.find_spec("gunicorn") else "wsgiref")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker")
    parser.add_argument("--database", default="mirrorlab_bench_export")
    parser.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    if args.serve:
        import django

        django.setup()
        serve_with_wsgiref(args.serve)
        return
    create_database(args.database)
    environment = server_environment(args.database)
    for key in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE", "MIRRORLAB_DATA_DIR"):
        os.environ[key] = environment[key]
    import django

    django.setup()
    try:
        token = fill(args.evaluations)
        run_levels(args, environment, token)
    finally:
        drop_database(args.database)


def run_levels(args: argparse.Namespace, environment: dict[str, str], token: str) -> None:
    port = free_port()
    process = subprocess.Popen(server_command(args.server, port, args.workers, args.threads), cwd=REPO,
                               env=environment)
    try:
        expected = wait_until_serving(port, token, process)
        shape = (f"{args.workers} workers x {args.threads} threads" if args.server == "gunicorn"
                 else "a thread per request")
        print(f"{args.server} ({shape}) on 127.0.0.1:{port}; CSV of {args.evaluations} evaluations x "
              f"{len(BENCHMARKS)} benchmarks, {len(expected):,} bytes")
        print(f"{'clients':>8}{'requests':>10}{'failed':>8}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}")
        for clients in args.clients:
            level = load_level(port, token, clients, args.requests, args.seconds, expected)
            print(f"{level['clients']:>8}{level['done']:>10}{level['failed']:>8}{level['rps']:>9.1f}"
                  f"{level['p50']:>9.1f}{level['p99']:>9.1f}")
    finally:
        stop(process)


if __name__ == "__main__":
    main()
