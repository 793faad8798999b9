"""Benchmarks, verifiers, the code sandbox and scoring: a plain library (no Django)."""
