"""Sizes read alike everywhere: decimal units (1 MB = 10^6 bytes), as the run log writes a checkpoint's size."""

from __future__ import annotations

import pytest
from django.urls import reverse

from common.sizes import decimal_size
from webapp.long2short.models import Long2ShortVariant
from webapp.runs.models import Checkpoint

pytestmark = pytest.mark.django_db

SIZE = 6_912_345  # 6.9 MB, or 6.6 MiB


def test_sizes_are_written_in_decimal_units():
    assert [decimal_size(size) for size in (0, 999, 1000, 6_912_345, 999_960, 2_500_000_000, 3 * 10**12)] == [
        "0 B", "999 B", "1.0 kB", "6.9 MB", "1.0 MB", "2.5 GB", "3.0 TB"]


def test_the_run_page_shows_a_checkpoint_size_as_the_run_log_writes_it(client_for, alice, project, run):
    Checkpoint.objects.create(project=project, run=run, iteration=6, path="/x/iteration-000006", size_bytes=SIZE)
    content = client_for(alice).get(reverse("run-detail", args=[run.pk])).content.decode()
    assert '<td class="num nowrap">6.9 MB</td>' in content and "MiB" not in content and "6.6" not in content


def test_the_variant_page_shows_its_checkpoint_size_in_decimal_units(client_for, alice, project, run):
    variant = Long2ShortVariant.objects.create(project=project, name="v", method="dpo", parent_run=run)
    Checkpoint.objects.create(project=project, variant=variant, path="/x/variant", size_bytes=SIZE)
    content = client_for(alice).get(reverse("variant-detail", args=[variant.pk])).content.decode()
    assert '<td class="num nowrap">6.9 MB</td>' in content
