"""Container health checks: `python deploy/healthcheck.py web` or `... services`; exit 0 when healthy.

web: the web server answers a page (any status below 500) on 127.0.0.1:8000, asking for the first
ALLOWED_HOSTS name so Django does not refuse the Host header.
services: the database and the Celery broker accept connections. Workers use this one, never
`celery inspect ping`: a worker with --pool=solo cannot answer a ping while it runs a job for hours.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the project root
WEB_URL = "http://127.0.0.1:8000/login/"
TIMEOUT_SECONDS = 10


def check_web() -> str:
    """The web server answers with a status below 500."""
    from django.conf import settings

    host = next((name for name in settings.ALLOWED_HOSTS if name not in ("*", "")), "localhost").lstrip(".")
    request = urllib.request.Request(WEB_URL, headers={"Host": host})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            status = response.status
    except urllib.error.HTTPError as error:
        status = error.code
    if status >= 500:
        raise RuntimeError(f"{WEB_URL} (Host: {host}) answered {status}")
    return f"web answered {status}"


def check_services() -> str:
    """The database and the broker accept connections."""
    from django.conf import settings
    from django.db import connection
    from kombu import Connection

    connection.ensure_connection()
    with Connection(settings.CELERY_BROKER_URL, connect_timeout=TIMEOUT_SECONDS) as broker:
        broker.ensure_connection(max_retries=1)
    return "database and broker reachable"


CHECKS = {"web": check_web, "services": check_services}


def main(argv: list[str]) -> int:
    """Run the named check; print what was found."""
    if len(argv) != 1 or argv[0] not in CHECKS:
        print(f"usage: healthcheck.py {'|'.join(CHECKS)}", file=sys.stderr)
        return 2
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    try:
        print(CHECKS[argv[0]]())
    except Exception as error:  # any failure means unhealthy; say which and why
        print(f"unhealthy ({argv[0]}): {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
