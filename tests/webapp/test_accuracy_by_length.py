"""Accuracy-versus-length curves derived from per-sample rows."""

import pytest

from webapp.evals.models import BenchmarkResult, EvalRun, SampleResult
from webapp.evals.services import accuracy_by_length

pytestmark = pytest.mark.django_db


def test_bins_count_samples_and_accuracy_in_the_database(project, suite):
    eval_run = EvalRun.objects.create(project=project, suite=suite, model="tiny")
    # (tokens, correct): bin 0-99 holds 3 samples (2 correct), bin 100-199 holds 1 (wrong), bin 300-399 holds 2 (1).
    samples = [(10, True), (50, True), (99, False), (150, False), (300, True), (399, False)]
    SampleResult.objects.bulk_create(
        SampleResult(eval_run=eval_run, benchmark="math500", problem_id=f"p{index}", response_tokens=tokens,
                     correct=correct, truncated=tokens == 399) for index, (tokens, correct) in enumerate(samples)
    )
    SampleResult.objects.create(eval_run=eval_run, benchmark="aime24", problem_id="other", response_tokens=20,
                                correct=False)
    curve = accuracy_by_length(eval_run.pk, "math500", bin_tokens=100)
    assert [(row["bin_start"], row["samples"]) for row in curve] == [(0, 3), (100, 1), (300, 2)]
    assert [row["accuracy"] for row in curve] == pytest.approx([2 / 3, 0.0, 0.5])
    assert curve[0]["mean_tokens"] == pytest.approx(53.0)
    assert [row["truncated"] for row in curve] == [0, 0, 1]  # the one cut off at the limit, in its bin


def test_a_bin_width_below_one_is_refused():
    with pytest.raises(ValueError, match="bin_tokens"):
        accuracy_by_length(1, "math500", 0)


@pytest.fixture
def evaluated(project, suite):
    eval_run = EvalRun.objects.create(project=project, suite=suite, model="tiny", status="succeeded")
    samples = [(10, True), (50, True), (99, False), (150, False), (300, True), (399, False)]
    SampleResult.objects.bulk_create(
        SampleResult(eval_run=eval_run, benchmark="math500", problem_id=f"p{index}", response_tokens=tokens,
                     correct=correct) for index, (tokens, correct) in enumerate(samples))
    BenchmarkResult.objects.create(eval_run=eval_run, benchmark="math500", score=0.5, num_problems=6,
                                   samples_per_problem=1)
    return eval_run


def test_the_api_bins_one_benchmarks_samples(api_for, alice, evaluated):
    url = f"/api/evaluations/{evaluated.pk}/length-curve/"
    (body,) = api_for(alice).get(url, {"benchmark": "math500", "bin_tokens": 200}).json()["curves"]
    assert (body["benchmark"], body["bin_tokens"]) == ("math500", 200)
    assert [(row["bin_start"], row["samples"], row["accuracy"]) for row in body["bins"]] == [
        (0, 4, 0.5), (200, 2, 0.5)]
    assert [row["truncated"] for row in body["bins"]] == [0, 0]
    (default,) = api_for(alice).get(url).json()["curves"]  # every benchmark, default width
    assert default["bin_tokens"] == 25  # 400 token counts (0..399) in 16 bins
    assert sum(row["samples"] for row in default["bins"]) == 6


def test_the_api_names_a_bad_parameter_and_hides_other_projects(api_for, alice, charlie, evaluated):
    url = f"/api/evaluations/{evaluated.pk}/length-curve/"
    unknown = api_for(alice).get(url, {"benchmark": "aime24"})
    assert unknown.status_code == 400 and "it has: math500" in unknown.json()["benchmark"][0]
    assert api_for(alice).get(url, {"benchmark": "math500", "bin_tokens": 0}).status_code == 400
    assert api_for(charlie).get(url, {"benchmark": "math500"}).status_code == 404


def test_the_evaluation_page_draws_a_curve_per_benchmark(client_for, alice, evaluated):
    import json

    content = client_for(alice).get(f"/evaluations/{evaluated.pk}/").content.decode()
    marker = '<script id="length-curve-data" type="application/json">'
    data = json.loads(content[content.index(marker) + len(marker):content.index("</script>", content.index(marker))])
    assert [(curve["benchmark"], curve["bin_tokens"]) for curve in data] == [("math500", 25)]
    assert "length_curves.js" in content


def test_the_length_bins_read_only_the_covering_index_on_postgres(project, suite):
    """correct and truncated are INCLUDEd in sample_length_idx, so the aggregate never reads the table."""
    from django.db import connection, transaction

    from webapp.evals.services import length_bin_rows

    if connection.vendor != "postgresql":
        pytest.skip("covering indexes are PostgreSQL's")
    eval_run = EvalRun.objects.create(project=project, suite=suite, model="tiny")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off")
        plan = length_bin_rows(eval_run.pk, "math500", 100).explain()
    assert "Index Only Scan using sample_length_idx" in plan, plan
