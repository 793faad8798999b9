"""Trainer backends, looked up by the `trainer_backend` knob (registered in training.registries)."""

from training.registries import trainer_backends, trainer_classes

__all__ = ["trainer_backends", "trainer_classes"]
