"""Run one long2short variant row through its method."""

from __future__ import annotations

from training.config import LONG2SHORT_CONFIGS
from common.knobs import parse_config
from training.long2short import long2short_methods
from webapp.long2short.models import Long2ShortVariant


def run_long2short_job(variant: Long2ShortVariant) -> None:
    """Apply the variant's method (methods arrive with the long2short work)."""
    config = parse_config(LONG2SHORT_CONFIGS[variant.method], variant.parameters)
    method = long2short_methods.get(variant.method)
    method(variant, config)
