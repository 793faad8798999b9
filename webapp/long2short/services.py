"""Launching long2short variants."""

from __future__ import annotations

from django.db import transaction

from webapp.long2short.models import Long2ShortVariant
from workers.dispatch import enqueue_job


def launch_variant(**fields) -> Long2ShortVariant:
    """Create a queued variant and send it to the gpu queue after commit."""
    variant = Long2ShortVariant.objects.create(**fields)
    transaction.on_commit(lambda: enqueue_job("long2short", variant.pk))
    return variant
