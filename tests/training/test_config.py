"""The one config system: parsing, coercion, defaults and named errors."""

import dataclasses

import pytest

from common.knobs import ConfigError, config_to_dict, parse_config
from training.config import LONG2SHORT_CONFIGS, RLConfig


def test_defaults_fill_every_knob_and_the_config_is_frozen():
    config = parse_config(RLConfig, {})
    assert config == RLConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.tau = 1.0


def test_form_strings_are_coerced_to_the_knob_types():
    config = parse_config(RLConfig, {"iterations": "12", "tau": "0.25", "partial_rollout_token_budget": "",
                                     "max_response_tokens": "64"})
    assert (config.iterations, config.tau, config.partial_rollout_token_budget) == (12, 0.25, None)


def test_every_refused_knob_is_reported_at_once():
    with pytest.raises(ConfigError) as error:
        parse_config(RLConfig, {"tau": -1, "samples_per_problem": 0, "rollout_engine": "x", "bogus": 1})
    assert set(error.value.errors) == {"tau", "samples_per_problem", "rollout_engine", "bogus"}
    assert "tau: must be greater than 0.0" in str(error.value)


def test_a_misspelt_setting_names_the_knob_it_is_closest_to():
    with pytest.raises(ConfigError) as error:
        parse_config(RLConfig, {"temprature": 0.7, "max_response_token": 64, "bogus": 1})
    assert error.value.errors == {"temprature": "unknown setting (did you mean 'temperature'?)",
                                  "max_response_token": "unknown setting (did you mean 'max_response_tokens'?)",
                                  "bogus": "unknown setting"}


@pytest.mark.parametrize("value", [float("nan"), float("inf"), True])
def test_non_finite_or_boolean_numbers_are_refused(value):
    with pytest.raises(ConfigError) as error:
        parse_config(RLConfig, {"learning_rate": value})
    assert list(error.value.errors) == ["learning_rate"]


def test_a_required_knob_cannot_be_null():
    with pytest.raises(ConfigError) as error:
        parse_config(RLConfig, {"model": None})
    assert error.value.errors == {"model": "is required"}


def test_cross_field_constraints_name_the_dependent_knob():
    with pytest.raises(ConfigError) as error:
        parse_config(RLConfig, {"iterations": 5, "length_penalty_warmup_iterations": 6})
    assert list(error.value.errors) == ["length_penalty_warmup_iterations"]


def test_the_resolved_config_round_trips_through_plain_data():
    config = parse_config(RLConfig, {"tau": 0.3, "sampling_strategy": "prioritized"})
    assert parse_config(RLConfig, config_to_dict(config)) == config


@pytest.mark.parametrize("method", sorted(LONG2SHORT_CONFIGS))
def test_every_long2short_method_has_valid_defaults(method):
    assert parse_config(LONG2SHORT_CONFIGS[method], {}) == LONG2SHORT_CONFIGS[method]()


def test_the_training_config_imports_no_heavy_dependency():
    import subprocess
    import sys

    code = ("import sys, training.config, evaluation.suite_config; "
            "print('torch' in sys.modules, 'django' in sys.modules)")
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.split() == ["False", "False"]


def test_in_process_vllm_is_refused_for_several_training_processes():
    with pytest.raises(ConfigError) as error:
        parse_config(RLConfig, {"rollout_engine": "vllm", "nproc_per_node": 2})
    assert set(error.value.errors) == {"rollout_engine"} and "use vllm-hybrid" in error.value.errors["rollout_engine"]
    assert parse_config(RLConfig, {"rollout_engine": "vllm-hybrid", "nproc_per_node": 2}).nproc_per_node == 2


def test_the_sections_partition_the_run_config_in_form_order():
    from training.config import SECTIONS

    section_fields = [field.name for section in SECTIONS for field in dataclasses.fields(section)]
    assert section_fields == [field.name for field in dataclasses.fields(RLConfig)]
    for section in SECTIONS:
        assert {field.metadata["group"] for field in dataclasses.fields(section)} == {section.section_name}
    assert [section.section_name for section in SECTIONS] == [
        "model", "data", "optimization", "length_penalty", "rollouts", "evaluation", "execution"]


def test_a_section_comes_back_as_its_own_typed_object_with_the_runs_values():
    from training.config import ExecutionSection, RolloutSection

    config = parse_config(RLConfig, {"max_response_tokens": 64, "temperature": 0.7, "nproc_per_node": 2})
    rollouts = config.section(RolloutSection)
    assert type(rollouts) is RolloutSection
    assert (rollouts.max_response_tokens, rollouts.temperature) == (64, 0.7)
    assert config.section(ExecutionSection).nproc_per_node == 2
    assert not hasattr(rollouts, "nproc_per_node")


def test_a_sections_own_constraint_is_checked_through_the_run_config():
    with pytest.raises(ConfigError) as error:
        parse_config(RLConfig, {"nnodes": 2})
    assert error.value.errors == {"rdzv_endpoint": "needed when nnodes > 1: host:port of the rendezvous every node "
                                                    "joins"}


@pytest.mark.parametrize("name, value, message", [
    ("batch_size", 10**12, "must be at least 1 and at most 65536, not 1000000000000"),
    ("nproc_per_node", 1000, "must be at least 1 and at most 64, not 1000"),
    ("max_response_tokens", 10**9, "must be at least 1 and at most 1048576, not 1000000000"),
    ("learning_rate", 1e308, "must be greater than 0.0 and at most 1.0, not 1e+308"),
    ("seed", 2**70, f"must be at least 0 and at most {2**31 - 1}, not {2**70}"),
    ("seed", 2**31, f"must be at least 0 and at most {2**31 - 1}, not {2**31}"),
    ("seed", 2**31 - 1, None),
])
def test_every_numeric_knob_has_a_range_named_with_the_value_when_refused(name, value, message):
    if message is None:
        assert getattr(parse_config(RLConfig, {name: value}), name) == value
        return
    with pytest.raises(ConfigError) as error:
        parse_config(RLConfig, {name: value})
    assert error.value.errors == {name: message}


@pytest.mark.parametrize("config_class", [RLConfig, *LONG2SHORT_CONFIGS.values()])
def test_every_numeric_knob_of_every_config_has_an_upper_bound(config_class):
    from common.knobs import describe_knobs

    unbounded = [knob["name"] for knob in describe_knobs(config_class)
                 if knob["type"] in ("int", "float") and knob["maximum"] is None]
    assert unbounded == []


def test_a_list_where_comma_separated_text_is_expected_says_how_to_write_it():
    merge = LONG2SHORT_CONFIGS["merge"]
    with pytest.raises(ConfigError) as refused:
        parse_config(merge, {"other_checkpoint_ids": [12, 15], "other_run_iterations": []})
    assert refused.value.errors == {
        "other_checkpoint_ids": 'must be text, not a list: write the items comma-separated, e.g. "12,15"',
        "other_run_iterations": 'must be text, not a list: write the items comma-separated, e.g. "3,7"'}
