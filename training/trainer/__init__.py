"""Trainer backends: per-token log-probs, loss step, state dict out."""
