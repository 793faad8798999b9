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
