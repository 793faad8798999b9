"""A variant's kept samples and pairs: the read-only API and the records section of the variant page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from webapp.long2short.models import Long2ShortRecord, Long2ShortVariant

pytestmark = pytest.mark.django_db

API = "/api/variant-records/"


@pytest.fixture
def dpo_variant(run):
    """A DPO variant with 25 pairs (prompts p0..p24) and a shortest-rejection variant with one kept sample."""
    variant = Long2ShortVariant.objects.create(project=run.project, name="dpo", method="dpo", parent_run=run)
    Long2ShortRecord.objects.bulk_create(
        Long2ShortRecord(variant=variant, kind="pair", prompt_id=f"p{index}", problem=f"What is {index}+1?",
                         chosen=f"{index + 1}", chosen_tokens=1, rejected=f"long answer number {index}",
                         rejected_tokens=10 + index,
                         rejected_reason="wrong_longer" if index % 2 else "correct_too_long")
        for index in range(25))
    kept = Long2ShortVariant.objects.create(project=run.project, name="kept", method="shortest_rejection",
                                            parent_run=run)
    Long2ShortRecord.objects.create(variant=kept, kind="kept_sample", prompt_id="p0", problem="What is 0+1?",
                                    chosen="so 1", chosen_tokens=2, extra={"samples_drawn": 8, "correct_samples": 5})
    return variant


def test_the_api_filters_records_by_variant_and_kind(api_for, alice, dpo_variant):
    api = api_for(alice)
    response = api.get(API, {"variant": dpo_variant.pk, "rejected_reason": "wrong_longer"})
    assert response.status_code == 200
    rows = response.json()["results"] if "results" in response.json() else response.json()
    assert [row["prompt_id"] for row in rows] == [f"p{index}" for index in range(1, 25, 2)]
    assert rows[0] | {"id": None, "variant": None} == {
        "id": None, "variant": None, "kind": "pair", "prompt_id": "p1", "problem": "What is 1+1?", "chosen": "2",
        "chosen_tokens": 1, "rejected": "long answer number 1", "rejected_tokens": 11,
        "rejected_reason": "wrong_longer", "extra": {}}

    kept = api.get(API, {"kind": "kept_sample"}).json()
    kept = kept["results"] if "results" in kept else kept
    assert [(row["prompt_id"], row["extra"]) for row in kept] == [("p0", {"samples_drawn": 8, "correct_samples": 5})]


def test_records_are_invisible_outside_the_project_and_read_only(api_for, charlie, bob, dpo_variant):
    empty = api_for(charlie).get(API).json()
    assert (empty["results"] if "results" in empty else empty) == []
    record = Long2ShortRecord.objects.filter(variant=dpo_variant).first()
    assert api_for(charlie).get(f"{API}{record.pk}/").status_code == 404
    assert api_for(bob).get(f"{API}{record.pk}/").status_code == 200
    assert api_for(bob).post(API, {"variant": dpo_variant.pk, "kind": "pair"}).status_code == 405
    assert api_for(bob).delete(f"{API}{record.pk}/").status_code == 405


def test_the_variant_page_pages_through_the_records_of_one_kind(client_for, alice, dpo_variant):
    url = reverse("variant-detail", args=[dpo_variant.pk])
    first = client_for(alice).get(url).content.decode()
    assert "long answer number 0" in first and "long answer number 19" in first
    assert "long answer number 20" not in first and "page 1 of 2 (25 rows)" in first

    second = client_for(alice).get(url, {"page": 2, "kind": "pair"}).content.decode()
    assert "long answer number 24" in second and "long answer number 19" not in second
    assert "wrong_longer" in second and "correct_too_long" in second


def test_a_kept_sample_shows_how_many_samples_were_correct(client_for, alice, dpo_variant):
    kept = Long2ShortVariant.objects.get(name="kept")
    page = client_for(alice).get(reverse("variant-detail", args=[kept.pk])).content.decode()
    assert "kept: 5 of 8 samples correct" in page and "so 1" in page


def test_the_records_section_costs_the_same_queries_for_many_records(client_for, alice, dpo_variant,
                                                                     django_assert_max_num_queries):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = client_for(alice)
    url = reverse("variant-detail", args=[dpo_variant.pk])
    client.get(url)  # warm caches (session, user)
    with CaptureQueriesContext(connection) as few:
        assert client.get(url).status_code == 200
    Long2ShortRecord.objects.bulk_create(
        Long2ShortRecord(variant=dpo_variant, kind="pair", prompt_id=f"q{index}", chosen="1", chosen_tokens=1,
                         rejected="22", rejected_tokens=2, rejected_reason="wrong_longer") for index in range(500))
    with django_assert_max_num_queries(len(few.captured_queries)):
        page = client.get(url, {"page": 20}).content.decode()
    assert "page 20 of 27 (525 rows)" in page
