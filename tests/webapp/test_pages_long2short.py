"""Long2short pages: the accuracy-versus-tokens dashboard, and variant list, detail, launch and cancel."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from common.knobs import describe_knobs
from training.config import DPOConfig, MergeConfig
from webapp.evals.models import BenchmarkResult, EvalRun
from webapp.long2short.models import Long2ShortVariant
from webapp.runs.models import Checkpoint

pytestmark = pytest.mark.django_db

DASHBOARD_URL = reverse("long2short-dashboard")
LAUNCH_URL = reverse("variant-launch")


def evaluate(checkpoint, suite, results, status="succeeded"):
    """results: benchmark -> (score, mean tokens)."""
    evaluation = EvalRun.objects.create(project=checkpoint.project, suite=suite, checkpoint=checkpoint, status=status)
    BenchmarkResult.objects.bulk_create(
        BenchmarkResult(eval_run=evaluation, benchmark=name, score=score, mean_response_tokens=tokens)
        for name, (score, tokens) in results.items())
    return evaluation


def variant_with_score(run, suite, name, method, score, tokens, **parent):
    variant = Long2ShortVariant.objects.create(project=run.project, name=name, method=method,
                                               **(parent or {"parent_run": run}))
    evaluate(Checkpoint.objects.create(project=run.project, variant=variant, path=f"/v/{name}"), suite,
             {"math500": (score, tokens)})
    return variant


@pytest.fixture
def family(run, suite):
    """The parent at iterations 10 and 20, a merge of the run and a DPO variant of its checkpoint at 10."""
    early = Checkpoint.objects.create(project=run.project, run=run, iteration=10, path="/c/10")
    late = Checkpoint.objects.create(project=run.project, run=run, iteration=20, path="/c/20")
    evaluate(early, suite, {"math500": (0.5, 2000.0)})
    evaluate(late, suite, {"math500": (0.6, 3000.0)})
    merge = variant_with_score(run, suite, "merged", "merge", 0.55, 1500.0, parent_run=run, started_from=late)
    dpo = variant_with_score(run, suite, "shortened", "dpo", 0.52, 1000.0, parent_checkpoint=early)
    return {"early": early, "late": late, "merge": merge, "dpo": dpo}


def chart_data(content: str) -> dict:
    marker = '<script id="long2short-data" type="application/json">'
    start = content.index(marker) + len(marker)
    return json.loads(content[start:content.index("</script>", start)])


def test_the_dashboard_draws_the_parent_curve_and_one_point_per_variant(client_for, alice, run, family):
    response = client_for(alice).get(DASHBOARD_URL, {"parent": run.pk})
    assert response.status_code == 200
    (chart,) = chart_data(response.content.decode())["charts"]
    assert chart["benchmark"] == "math500"
    assert [(point["label"], point["score"], point["tokens"]) for point in chart["parent"]] == [
        ("run-1 @ 10", 0.5, 2000.0), ("run-1 @ 20", 0.6, 3000.0)]
    assert [(point["label"], point["score"], point["tokens"]) for point in chart["variants"]] == [
        ("shortened (DPO)", 0.52, 1000.0), ("merged (Model merging)", 0.55, 1500.0)]  # newest first


def test_the_efficiency_table_compares_each_variant_with_its_parent(client_for, alice, run, family):
    table = client_for(alice).get(DASHBOARD_URL, {"parent": run.pk}).context["table"]
    rows = {row["label"]: row for row in table}
    merged = rows["merged (Model merging)"]  # against the run's last checkpoint: 60% at 3000 tokens
    assert merged["reference"] == "run-1 @ 20"
    assert merged["efficiency"].accuracy_change_points == pytest.approx(-5.0)
    assert merged["efficiency"].token_change_percent == pytest.approx(-50.0)
    assert merged["efficiency"].accuracy_per_1k_tokens == pytest.approx(55 / 1.5)
    shortened = rows["shortened (DPO)"]  # against its parent checkpoint: 50% at 2000 tokens
    assert shortened["reference"] == "run-1 @ 10"
    assert shortened["efficiency"].accuracy_change_points == pytest.approx(2.0)
    assert shortened["efficiency"].token_change_percent == pytest.approx(-50.0)
    assert shortened["efficiency"].accuracy_per_1k_tokens == pytest.approx(52.0)


def test_a_variant_is_compared_only_with_the_checkpoint_it_started_from(client_for, alice, run, suite, family):
    newest = Checkpoint.objects.create(project=run.project, run=run, iteration=30, path="/c/30")  # not evaluated
    variant_with_score(run, suite, "from-30", "dpo", 0.4, 800.0, parent_run=run, started_from=newest)
    variant_with_score(run, suite, "from-30-chosen", "dpo", 0.4, 800.0, parent_checkpoint=newest)
    rows = {row["label"]: row for row in client_for(alice).get(DASHBOARD_URL, {"parent": run.pk}).context["table"]}
    for label in ("from-30 (DPO)", "from-30-chosen (DPO)"):  # not the run's last evaluated one (iteration 20)
        assert rows[label]["efficiency"].accuracy_change_points is None
        assert rows[label]["efficiency"].token_change_percent is None
        assert rows[label]["efficiency"].accuracy_per_1k_tokens == pytest.approx(50.0)


def test_the_table_renders_the_changes(client_for, alice, run, family):
    content = client_for(alice).get(DASHBOARD_URL, {"parent": run.pk}).content.decode()
    assert '<td class="num">-5.0</td>' in content and '<td class="num">-50.0%</td>' in content
    assert '<td class="num">36.67</td>' in content and '<td class="num">+2.0</td>' not in content
    assert '<td class="num">2.0</td>' in content and '<td class="num">52.00</td>' in content


def test_the_latest_succeeded_evaluation_of_a_variant_counts(client_for, alice, run, suite, family):
    checkpoint = family["merge"].checkpoints.get()
    evaluate(checkpoint, suite, {"math500": (0.7, 1200.0)})
    evaluate(checkpoint, suite, {"math500": (0.1, 10.0)}, status="running")
    (chart,) = chart_data(client_for(alice).get(DASHBOARD_URL, {"parent": run.pk}).content.decode())["charts"]
    assert {point["label"]: point["score"] for point in chart["variants"]}["merged (Model merging)"] == 0.7


def test_the_parent_picker_lists_runs_with_variants(client_for, alice, run, family, prompt_set):
    from webapp.runs.models import RLRun

    RLRun.objects.create(project=run.project, name="lonely", prompt_set=prompt_set, config=run.config)
    response = client_for(alice).get(DASHBOARD_URL)
    assert [parent.name for parent in response.context["parents"]] == ["run-1"]


def test_outsiders_get_404_on_the_dashboard_and_variant_pages(client_for, charlie, run, family):
    client = client_for(charlie)
    assert client.get(DASHBOARD_URL, {"parent": run.pk}).status_code == 404
    assert client.get(reverse("variant-detail", args=[family["merge"].pk])).status_code == 404
    assert client.post(reverse("variant-cancel", args=[family["merge"].pk])).status_code == 404
    assert "merged" not in client.get(reverse("variant-list")).content.decode()


def test_the_dashboard_query_count_does_not_grow_with_variants(client_for, alice, run, suite, family,
                                                               django_assert_num_queries):
    client = client_for(alice)
    with django_assert_num_queries(10) as few:  # the same ten with two or eight variants (one for the samples)
        client.get(DASHBOARD_URL, {"parent": run.pk})
    for index in range(6):
        variant_with_score(run, suite, f"more-{index}", "shortest_rejection", 0.4, 900.0,
                           parent_checkpoint=family["late"])
    with django_assert_num_queries(len(few.captured_queries)):
        response = client.get(DASHBOARD_URL, {"parent": run.pk})
    assert len(response.context["table"]) == 8


def test_the_variant_list_and_detail_show_method_parameters_and_scores(client_for, bob, run, family):
    client = client_for(bob)
    assert "shortened" in client.get(reverse("variant-list")).content.decode()
    Long2ShortVariant.objects.filter(pk=family["dpo"].pk).update(parameters={"beta": 0.2})
    content = client.get(reverse("variant-detail", args=[family["dpo"].pk])).content.decode()
    assert "<code>beta</code>" in content and "<code>0.2</code>" in content
    assert "math500 52.0%" in content and "1000 tokens" in content
    assert "Cancel variant" in content


def test_cancelling_a_queued_variant_cancels_it(client_for, alice, run, family):
    response = client_for(alice).post(reverse("variant-cancel", args=[family["merge"].pk]))
    assert response.status_code == 302
    family["merge"].refresh_from_db()
    assert family["merge"].status == "cancelled"


def launch_data(method_config, **overrides) -> dict:
    """What the launch form posts with the method's defaults, and some fields changed."""
    data = {knob["name"]: "" if knob["default"] is None else str(knob["default"])  # an empty field
            for knob in describe_knobs(method_config)}
    data.update({name: str(value) for name, value in overrides.items()})
    return data


def test_the_launch_form_shows_the_methods_knobs_with_defaults_and_help(client_for, alice, run):
    response = client_for(alice).get(LAUNCH_URL, {"method": "dpo", "parent_run": run.pk})
    form = response.context["form"]
    assert [knob["name"] for knob in describe_knobs(DPOConfig)] == [
        name for name in form.fields if name not in ("name", "method", "parent_run", "parent_checkpoint",
                                                     "evaluation_suite")]
    content = response.content.decode()
    assert 'name="beta"' in content and 'value="0.1"' in content
    assert "DPO beta (strength of the implicit KL to the reference)." in content
    assert f'<option value="{run.pk}" selected>' in content


def test_launching_queues_a_variant_with_the_resolved_parameters(client_for, alice, run, suite):
    data = launch_data(DPOConfig, name="dpo-1", method="dpo", parent_run=run.pk, evaluation_suite=suite.pk, beta=0.3)
    response = client_for(alice).post(LAUNCH_URL, data)
    variant = Long2ShortVariant.objects.get(name="dpo-1")
    assert response.status_code == 302 and response["Location"] == reverse("variant-detail", args=[variant.pk])
    assert (variant.status, variant.method, variant.parent_run, variant.evaluation_suite, variant.owner) == (
        "queued", "dpo", run, suite, alice)
    assert variant.parameters == {"samples_per_problem": 8, "max_response_tokens": None, "long_correct_ratio": 1.5,
                                  "beta": 0.3, "learning_rate": 1e-6, "epochs": 1, "temperature": 1.0,
                                  "pairs_per_step": 8, "seed": 0}


@pytest.mark.parametrize("overrides, field, message", [
    ({"parent_run": ""}, "parent_run", "Choose a parent run or a parent checkpoint."),
    ({"beta": "0"}, "beta", "must be greater than 0.0 and at most 1000.0, not 0.0"),
    ({"epochs": "x"}, "epochs", "Enter a whole number."),
    ({"name": ""}, "name", "This field is required."),
])
def test_it_rejects_an_invalid_launch_naming_the_field(client_for, alice, run, overrides, field, message):
    data = launch_data(DPOConfig, name="dpo-1", method="dpo", parent_run=run.pk)
    data.update(overrides)
    response = client_for(alice).post(LAUNCH_URL, data)
    assert response.status_code == 200
    assert response.context["form"].errors[field] == [message]
    assert not Long2ShortVariant.objects.exists()


def test_it_rejects_a_checkpoint_of_another_run_and_unknown_merge_checkpoints(client_for, alice, run, prompt_set):
    from webapp.runs.models import RLRun

    other = RLRun.objects.create(project=run.project, name="other", prompt_set=prompt_set, config=run.config)
    foreign = Checkpoint.objects.create(project=run.project, run=other, iteration=5, path="/o/5")
    data = {"name": "m", "method": "merge", "parent_run": run.pk, "parent_checkpoint": foreign.pk,
            "parent_weight": "0.5", "other_checkpoint_ids": f"{foreign.pk},999999"}
    errors = client_for(alice).post(LAUNCH_URL, data).context["form"].errors
    assert errors["parent_checkpoint"] == [f"Checkpoint {foreign.pk} is not one of run run-1's."]
    assert errors["other_checkpoint_ids"] == ["Checkpoint 999999 is not in this project."]


def test_a_merge_with_nothing_to_merge_is_refused_as_the_api_does(client_for, alice, run):
    data = launch_data(MergeConfig, name="m", method="merge", parent_run=run.pk, other_checkpoint_ids="",
                       other_run_iterations="", other_weights="")
    response = client_for(alice).post(LAUNCH_URL, data)
    assert response.status_code == 200
    assert response.context["form"].errors["other_checkpoint_ids"] == [
        "merge: give other_checkpoint_ids or other_run_iterations (the models merged with the parent)"]
    assert not Long2ShortVariant.objects.exists()


def test_the_launch_form_offers_only_the_current_projects_runs(client_for, charlie, run):
    response = client_for(charlie).get(LAUNCH_URL)
    assert response.context["form"] is None
    assert "No project yet" in response.content.decode()


def add_samples(evaluation, correct_by_problem: dict[str, list[bool]]):
    from webapp.evals.models import SampleResult

    SampleResult.objects.bulk_create(
        SampleResult(eval_run=evaluation, benchmark="math500", problem_id=problem, sample_index=index,
                     response_tokens=10, correct=correct)
        for problem, samples in correct_by_problem.items() for index, correct in enumerate(samples))


def test_the_accuracy_change_carries_a_paired_interval_over_the_problems_both_scored(client_for, alice, run, suite,
                                                                                   family):
    """Variant minus parent, problems resampled in pairs and samples within them; a variant scored on other
    problems gets none."""
    from common.paired_bootstrap import paired_change
    from webapp.pages.long2short_data import CHANGE_RESAMPLES

    parent = {"p1": [True, True], "p2": [False, False], "p3": [True, False], "p4": [False, False]}
    variant = {"p1": [True, True], "p2": [True, False], "p3": [True, True], "p4": [False, False]}
    for checkpoint, samples, score in ((family["late"], parent, 0.375),
                                       (family["merge"].checkpoints.get(), variant, 0.625),
                                       (family["dpo"].checkpoints.get(), {"p1": [True], "p9": [False]}, 0.5),
                                       (family["early"], {"p1": [True], "p2": [False]}, 0.5)):
        evaluation = EvalRun.objects.get(checkpoint=checkpoint)
        add_samples(evaluation, samples)
        BenchmarkResult.objects.filter(eval_run=evaluation).update(score=score)  # the mean of its samples
    response = client_for(alice).get(DASHBOARD_URL, {"parent": run.pk})
    rows = {row["label"]: row for row in response.context["table"]}
    expected = paired_change([parent[p] for p in sorted(parent)], [variant[p] for p in sorted(variant)],
                             resamples=CHANGE_RESAMPLES).scaled(100)
    low, high = expected.low / 100, expected.high / 100
    assert rows["merged (Model merging)"]["efficiency"].accuracy_change_interval == pytest.approx(
        (expected.low, expected.high))
    assert rows["merged (Model merging)"]["efficiency"].token_change_interval == (0.0, 0.0)  # every sample 10 tokens
    point = rows["merged (Model merging)"]["point"]
    assert point["score_interval"] == pytest.approx([0.375 + low, 0.375 + high])
    assert low * 100 < 25.0 < high * 100  # the change, 25 points, inside (sample noise reaches below 0 here)
    assert rows["shortened (DPO)"]["efficiency"].accuracy_change_interval is None  # p9 against p2
    assert f'<span class="muted small change-interval">[{low * 100:.1f}, {high * 100:.1f}]</span>' \
        in response.content.decode()

    # the parent scored by lm-eval's own metric (not its samples' mean), or graded under the other policy: none
    late = BenchmarkResult.objects.filter(eval_run__checkpoint=family["late"])
    late.update(score=0.4)
    rows = {row["label"]: row for row in client_for(alice).get(DASHBOARD_URL, {"parent": run.pk}).context["table"]}
    assert rows["merged (Model merging)"]["efficiency"].accuracy_change_interval is None
    late.update(score=0.375, metrics={"truncated_counts_wrong": True})  # the variant's result predates the policy
    response = client_for(alice).get(DASHBOARD_URL, {"parent": run.pk})
    merged = {row["label"]: row for row in response.context["table"]}["merged (Model merging)"]["efficiency"]
    assert (merged.accuracy_change_interval, merged.grading_differs) == (None, True)
    assert "graded differently</span>" in response.content.decode()


def test_the_api_gives_the_token_efficiency_table_with_its_intervals(client_for, alice, charlie, run, suite, family):
    from common.paired_bootstrap import paired_change
    from webapp.pages.long2short_data import CHANGE_RESAMPLES

    parent = {"p1": [True, True], "p2": [False, False], "p3": [True, False], "p4": [False, False]}
    variant = {"p1": [True, True], "p2": [True, False], "p3": [True, True], "p4": [False, False]}
    for checkpoint, samples, score in ((family["late"], parent, 0.375),
                                       (family["merge"].checkpoints.get(), variant, 0.625)):
        evaluation = EvalRun.objects.get(checkpoint=checkpoint)
        add_samples(evaluation, samples)
        BenchmarkResult.objects.filter(eval_run=evaluation).update(score=score)
    url = f"/api/runs/{run.pk}/token-efficiency/"
    response = client_for(alice).get(url)
    assert response.status_code == 200
    rows = {row["label"]: row for row in response.json()["results"]}
    merged = rows["merged (Model merging)"]
    expected = paired_change([parent[p] for p in sorted(parent)], [variant[p] for p in sorted(variant)],
                             resamples=CHANGE_RESAMPLES).scaled(100)
    assert merged["accuracy_change_points"] == pytest.approx(25.0)
    assert merged["accuracy_change_interval"] == pytest.approx([expected.low, expected.high])
    assert merged["token_change_interval"] == [0.0, 0.0] and merged["compared_with"] == "run-1 @ 20"
    assert client_for(charlie).get(url).status_code == 404
