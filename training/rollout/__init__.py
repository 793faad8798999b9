"""Rollout engines behind one interface (training.rollout.base.RolloutEngine), registered in training.registries."""

from training.registries import rollout_engines

__all__ = ["rollout_engines"]
