"""RL run launch form: every RLConfig knob grouped with its default and help; clone-with-changes via ?copy=."""

from __future__ import annotations

import pytest
from django.urls import reverse

from common.knobs import config_to_dict, describe_knobs, parse_config
from training.config import RLConfig
from webapp.pages.forms import RunLaunchForm, knob_label
from webapp.runs.models import RLRun

pytestmark = pytest.mark.django_db

# What a researcher sets on the form: every knob but the deployment ones (the worker's, such as the sidecar socket).
FORM_KNOBS = [knob for knob in describe_knobs(RLConfig) if not knob["deployment"]]

# A value other than the default for every knob (all valid together).
CHANGED = {
    "model": "/shared-models/qwen-7b", "seed": 3, "warmup_sft_steps": 5, "warmup_sft_learning_rate": 2e-4,
    "warmup_sft_batch_size": 4, "warmup_sft_sequence_length": 128, "iterations": 40, "batch_size": 16,
    "samples_per_problem": 4, "sampling_strategy": "curriculum", "curriculum_iterations": 7, "learning_rate": 3e-6,
    "gradient_steps_per_iteration": 2, "micro_batch_size": 8, "max_grad_norm": 0.5, "tau": 0.05,
    "log_z_estimate": "log_mean_exp", "policy_loss": "rest", "length_penalty_weight": 0.2,
    "length_penalty_warmup_iterations": 10, "rollout_engine": "vllm", "max_response_tokens": 512,
    "temperature": 0.8, "partial_rollout_token_budget": 128, "exclude_segments_older_than": 2,
    "repeat_penalty": 0.1, "trainer_backend": "noop-test", "checkpoint_every_iterations": 5,
    "evaluate_every_iterations": 10, "stored_samples_per_iteration": 16,
}


def posted(form) -> dict:
    """What the browser posts for a rendered form: every field's shown value."""
    data = {}
    for field in form:
        value = field.value()
        if value is None or value is False:
            continue
        data[field.name] = "on" if value is True else str(value)
    return data


@pytest.fixture
def source_run(project, prompt_set, suite, alice, tmp_path):
    knobs = {knob["name"] for knob in describe_knobs(RLConfig)}
    changed = {**CHANGED, "model": str(tmp_path / "qwen-7b")}  # a path under the test settings' model root
    config = config_to_dict(parse_config(RLConfig, {name: changed[name] for name in knobs if name in changed}))
    return RLRun.objects.create(project=project, name="long-cot", description="the baseline", prompt_set=prompt_set,
                                evaluation_suite=suite, config=config, owner=alice, total_iterations=40)


def test_every_knob_has_a_field_in_its_groups_fieldset_with_default_and_help(client_for, alice, prompt_set):
    response = client_for(alice).get(reverse("run-launch"))
    form = response.context["form"]
    fieldsets = {title: [field.name for field in fields] for title, fields in form.knob_fieldsets()}
    content = response.content.decode()
    for knob in FORM_KNOBS:
        title = RunLaunchForm.knob_group_titles.get(knob["group"], knob_label(knob["group"]))
        assert knob["name"] in fieldsets[title], knob["name"]
        field = form.fields[knob["name"]]
        assert (field.initial, field.help_text) == (knob["default"], knob["help"])
        assert f'<code>{knob["name"]}</code>' in content
    assert set(fieldsets) >= {"Model", "Data and sampling", "Optimization", "Length penalty", "Rollouts", "Evaluation"}
    assert sum(len(names) for names in fieldsets.values()) == len(FORM_KNOBS)
    assert "vllm_sidecar_socket" not in form.fields
    assert "Default: <code>0.1</code>" in content and "changed</span>" not in content


def test_copy_prefills_every_knob_the_data_and_the_suite(client_for, bob, source_run):
    response = client_for(bob).get(reverse("run-launch"), {"copy": source_run.pk})
    form = response.context["form"]
    shown = {knob["name"] for knob in FORM_KNOBS}
    assert {name: form[name].value() for name in shown} == {name: source_run.config[name] for name in shown}
    assert (form["name"].value(), form["description"].value()) == ("long-cot (copy)", "the baseline")
    assert (form["prompt_set"].value(), form["evaluation_suite"].value()) == \
        (source_run.prompt_set_id, source_run.evaluation_suite_id)
    content = response.content.decode()
    assert content.count('<span class="changed-mark">changed</span>') == len(CHANGED) + 1  # + the legend


def test_a_copy_launched_with_one_change_keeps_everything_else(client_for, bob, source_run):
    client = client_for(bob)
    data = posted(client.get(reverse("run-launch"), {"copy": source_run.pk}).context["form"])
    data["tau"] = "0.2"
    response = client.post(reverse("run-launch"), data)
    assert response.status_code == 302, response.context["form"].errors
    copy = RLRun.objects.get(name="long-cot (copy)")
    assert copy.config == {**source_run.config, "tau": 0.2}
    assert (copy.prompt_set, copy.evaluation_suite, copy.description, copy.owner) == \
        (source_run.prompt_set, source_run.evaluation_suite, "the baseline", bob)
    assert (copy.status, copy.total_iterations) == ("queued", 40)


def test_a_copy_of_an_old_run_fills_knobs_added_since_with_defaults(client_for, alice, source_run):
    old_config = {name: value for name, value in source_run.config.items() if name != "stored_samples_per_iteration"}
    RLRun.objects.filter(pk=source_run.pk).update(config={**old_config, "retired_knob": 1})
    form = client_for(alice).get(reverse("run-launch"), {"copy": source_run.pk}).context["form"]
    assert form["stored_samples_per_iteration"].value() == 64
    assert "retired_knob" not in form.fields


def test_run_page_offers_launch_a_copy(client_for, bob, source_run):
    content = client_for(bob).get(reverse("run-detail", kwargs={"pk": source_run.pk})).content.decode()
    assert f'href="{reverse("run-launch")}?copy={source_run.pk}"' in content


def test_outsider_cannot_copy_a_run(client_for, charlie, source_run):
    response = client_for(charlie).get(reverse("run-launch"), {"copy": source_run.pk})
    assert response.context["form"] is None  # charlie has no project, and sees no run


def test_the_test_only_trainer_is_offered_on_the_form_only_to_the_test_suite(client_for, alice, prompt_set, settings):
    def offered() -> list[str]:
        form = client_for(alice).get(reverse("run-launch")).context["form"]
        return [value for value, _ in form.fields["trainer_backend"].choices]

    assert offered() == ["torch", "megatron", "noop-test"]  # settings_test offers it to the browser journey
    settings.OFFER_TEST_ONLY_CHOICES = False
    assert offered() == ["torch", "megatron"]
