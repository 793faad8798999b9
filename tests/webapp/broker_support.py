"""A broker that is down (the Celery app pointed at a closed port), and the real Redis broker's queued messages."""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from typing import Iterator

CLOSED_PORT_BROKER = "redis://127.0.0.1:1/0"  # nothing listens there: every send is refused


@contextmanager
def broker_down() -> Iterator[None]:
    """Point the web project's Celery app at a closed port, then back at the real broker."""
    from webapp.celery import app

    real = app.conf.broker_write_url  # where tasks are sent
    app.conf.broker_write_url = CLOSED_PORT_BROKER
    forget_broker_connections(app)
    try:
        yield
    finally:
        app.conf.broker_write_url = real
        forget_broker_connections(app)


def forget_broker_connections(app) -> None:
    """The next send opens a connection to the app's broker URL of now (as after a fork)."""
    app._pool = None
    app.amqp._producer_pool = None


def take_queued_tasks(queue: str, task_name: str, pk: int) -> int:
    """Remove the messages of task `task_name` for row `pk` from the real Redis broker's `queue`; how many."""
    import redis

    broker = redis.Redis.from_url(os.environ["CELERY_BROKER_URL"])
    taken = 0
    for raw in broker.lrange(queue, 0, -1):
        headers = json.loads(raw)["headers"]
        if headers["task"] == task_name and headers["argsrepr"] in (f"[{pk}]", f"({pk},)"):
            taken += broker.lrem(queue, 1, raw)
    return taken
