"""Benchmark suite form: create, edit in place while unused, copy with changes once used; per-row errors."""

from __future__ import annotations

import pytest
from django.urls import reverse

from common.knobs import config_to_dict, parse_config
from evaluation.suite_config import BenchmarkSettings
from webapp.evals.models import BenchmarkSuite, EvalRun

pytestmark = pytest.mark.django_db

DEFAULTS = {"samples_per_problem": "1", "max_tokens": "1024", "temperature": "0.0", "top_p": "1.0", "limit": "",
            "extraction_policy": "flexible", "grader_mode": "rule", "judge_model": "", "judge_max_tokens": "1024",
            "truncated_counts_wrong": "on"}  # a checked box, as a browser posts it


def suite_post(name: str, entries: list[dict], initial: int = 0, blank_rows: int = 1, deleted=()) -> dict:
    """What the suite form posts: the entries (defaults for unset settings), then untouched blank rows."""
    rows = [{**DEFAULTS, **{key: str(value) for key, value in entry.items()}} for entry in entries]
    rows += [{**DEFAULTS, "benchmark": ""}] * blank_rows
    data = {"name": name, "description": "", "benchmarks-TOTAL_FORMS": str(len(rows)),
            "benchmarks-INITIAL_FORMS": str(initial), "benchmarks-MIN_NUM_FORMS": "0",
            "benchmarks-MAX_NUM_FORMS": "1000"}
    for index, row in enumerate(rows):
        data.update({f"benchmarks-{index}-{key}": value for key, value in row.items()})
        if index in deleted:
            data[f"benchmarks-{index}-DELETE"] = "on"
    return data


def resolved(*entries: dict) -> list[dict]:
    return [config_to_dict(parse_config(BenchmarkSettings, entry)) for entry in entries]


def test_suite_form_shows_each_setting_with_its_default_and_help(client_for, alice, project):
    response = client_for(alice).get(reverse("suite-create"))
    assert response.status_code == 200
    formset = response.context["formset"]
    assert len(formset.forms) == 3
    row = formset.forms[0]
    assert [field.name for field in row.visible_fields()] == [
        "benchmark", "samples_per_problem", "max_tokens", "temperature", "top_p", "limit", "extraction_policy",
        "grader_mode", "judge_model", "judge_max_tokens", "truncated_counts_wrong", "DELETE"]
    assert row["truncated_counts_wrong"].value() is True
    assert (row["benchmark"].value(), row["max_tokens"].value(), row["top_p"].value()) == ("", 1024, 1.0)
    content = response.content.decode()
    assert "Samples per problem; Pass@1 is averaged over them." in content
    assert '<option value="math500">' in content and 'list="benchmark-names"' in content


def test_member_creates_a_suite_with_ordered_benchmarks(client_for, bob, project):
    entries = [{"benchmark": "aime24", "samples_per_problem": 8, "temperature": 0.6, "max_tokens": 4096},
               {"benchmark": "lm-eval:gsm8k", "limit": 100}]
    response = client_for(bob).post(reverse("suite-create"), suite_post("reasoning", entries, blank_rows=2))
    suite = BenchmarkSuite.objects.get(name="reasoning")
    assert response.status_code == 302 and response.url == reverse("suite-detail", kwargs={"pk": suite.pk})
    assert suite.project == project
    assert suite.benchmarks == resolved(*entries)
    assert suite.benchmarks[0]["top_p"] == 1.0 and suite.benchmarks[1]["limit"] == 100


def test_suite_form_attaches_each_error_to_its_row_and_field(client_for, alice, project):
    entries = [{"benchmark": "math500"}, {"benchmark": "aime24", "top_p": 1.5, "max_tokens": 0},
               {"benchmark": "mmlu-pro"}]
    response = client_for(alice).post(reverse("suite-create"), suite_post("bad", entries))
    assert response.status_code == 200
    rows = response.context["formset"].forms
    assert rows[0].errors == {}
    assert rows[1].errors == {"top_p": ["must be greater than 0.0 and at most 1.0, not 1.5"],
                              "max_tokens": ["must be at least 1 and at most 1048576, not 0"]}
    assert rows[2].errors["benchmark"][0].startswith("unknown benchmark 'mmlu-pro'; choose one of aime24")
    assert not BenchmarkSuite.objects.exists()


def test_suite_form_refuses_several_greedy_samples_on_the_temperature_field(client_for, alice, project):
    entries = [{"benchmark": "aime24", "samples_per_problem": 8}]
    response = client_for(alice).post(reverse("suite-create"), suite_post("aime", entries))
    assert response.status_code == 200
    reason = response.context["formset"].forms[0].errors["temperature"][0]
    assert reason.startswith("0 is greedy decoding, so the 8 samples per problem would be identical")
    assert not BenchmarkSuite.objects.exists()


def test_suite_form_refuses_a_benchmark_listed_twice_on_the_repeated_row(client_for, alice, project):
    entries = [{"benchmark": "math500"}, {"benchmark": "aime24"}, {"benchmark": "math500", "max_tokens": 10}]
    response = client_for(alice).post(reverse("suite-create"), suite_post("twice", entries))
    rows = response.context["formset"].forms
    assert rows[2].errors["benchmark"] == ["'math500' is listed twice"]
    assert rows[0].errors == {} and rows[1].errors == {}
    assert b"is listed twice" in response.content
    assert not BenchmarkSuite.objects.exists()


def test_suite_form_refuses_a_suite_without_benchmarks(client_for, alice, project):
    response = client_for(alice).post(reverse("suite-create"), suite_post("empty", [], blank_rows=3))
    assert response.context["formset"].non_form_errors() == ["Add at least one benchmark."]
    assert not BenchmarkSuite.objects.exists()


def test_suite_form_refuses_a_name_already_used(client_for, alice, suite):
    response = client_for(alice).post(reverse("suite-create"), suite_post("math", [{"benchmark": "aime24"}]))
    assert response.context["form"].errors["name"] == ["This project already has a suite named 'math'."]
    assert BenchmarkSuite.objects.count() == 1


def test_unused_suite_is_edited_in_place_with_rows_removed_and_added(client_for, alice, suite):
    edit = reverse("suite-edit", kwargs={"pk": suite.pk})
    form = client_for(alice).get(edit).context["formset"]
    assert form.forms[0]["benchmark"].value() == "math500" and form.forms[0]["max_tokens"].value() == 512
    entries = [{"benchmark": "math500", "max_tokens": 512},
               {"benchmark": "amc23", "samples_per_problem": 4, "temperature": 0.6}]
    response = client_for(alice).post(edit, suite_post("math v2", entries, initial=1, deleted=(0,)))
    assert response.status_code == 302
    suite.refresh_from_db()
    assert (suite.name, suite.benchmarks) == ("math v2", resolved({"benchmark": "amc23", "samples_per_problem": 4,
                                                                   "temperature": 0.6}))
    assert BenchmarkSuite.objects.count() == 1


def test_a_used_suite_is_not_changed_but_copied_with_its_benchmarks(client_for, alice, suite, project):
    EvalRun.objects.create(project=project, suite=suite, model="tiny", owner=alice)
    response = client_for(alice).get(reverse("suite-edit", kwargs={"pk": suite.pk}))
    assert response.status_code == 302
    assert response.url == f"{reverse('suite-create')}?copy={suite.pk}"
    copy_form = client_for(alice).get(response.url).context
    assert copy_form["form"]["name"].value() == "math (copy)"
    assert copy_form["formset"].forms[0]["max_tokens"].value() == 512
    before = list(suite.benchmarks)
    client_for(alice).post(reverse("suite-create"), suite_post("math long", [{"benchmark": "math500",
                                                                               "max_tokens": 8192}]))
    suite.refresh_from_db()
    assert suite.benchmarks == before
    assert BenchmarkSuite.objects.get(name="math long").benchmarks == resolved({"benchmark": "math500",
                                                                                "max_tokens": 8192})


def test_outsider_gets_404_on_suite_edit_and_cannot_copy_it(client_for, charlie, suite):
    client = client_for(charlie)
    assert client.get(reverse("suite-edit", kwargs={"pk": suite.pk})).status_code == 404
    assert client.post(reverse("suite-edit", kwargs={"pk": suite.pk}),
                       suite_post("stolen", [{"benchmark": "aime24"}], initial=1)).status_code == 404
    response = client.get(reverse("suite-create"), {"copy": suite.pk})
    assert response.context["form"] is None  # charlie has no project
    suite.refresh_from_db()
    assert suite.name == "math"


def test_suite_pages_link_the_forms_and_the_evaluate_button(client_for, bob, suite):
    content = client_for(bob).get(reverse("suite-detail", kwargs={"pk": suite.pk})).content.decode()
    assert f'href="{reverse("evaluation-launch")}?suite={suite.pk}"' in content
    assert f'href="{reverse("suite-edit", kwargs={"pk": suite.pk})}"' in content
    listing = client_for(bob).get(reverse("suite-list")).content.decode()
    assert reverse("suite-create") in listing and f"?suite={suite.pk}" in listing
