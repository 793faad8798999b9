"""Celery app and tasks: the only bridge from database rows to the engines."""

from workers.celery_app import app

__all__ = ["app"]
