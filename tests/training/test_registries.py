"""Every name a config may choose leads to an implementation, and the config offers exactly those names."""

from __future__ import annotations

import pytest

from common.knobs import describe_knobs
from training import registries
from training.config import RLConfig

REGISTRIES = {"sampling_strategy": registries.samplers, "log_z_estimate": registries.log_z_estimates,
              "policy_loss": registries.policy_losses, "rollout_engine": registries.rollout_engines,
              "trainer_backend": registries.trainer_backends}


@pytest.mark.parametrize("knob", sorted(REGISTRIES))
def test_every_choice_of_a_knob_names_a_callable_implementation(knob):
    choices = next(entry["choices"] for entry in describe_knobs(RLConfig) if entry["name"] == knob)
    assert list(choices) == list(REGISTRIES[knob].entries)
    for name in choices:
        assert callable(REGISTRIES[knob].get(name)), f"{knob} {name!r}"


def test_every_trainer_class_is_a_class_of_a_registered_backend():
    for name in registries.trainer_classes.entries:
        assert name in registries.trainer_backends.entries
        assert isinstance(registries.trainer_classes.get(name), type)
