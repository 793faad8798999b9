"""Judges: whether each response to a benchmark problem is correct, batched over many responses.

Every judge takes [(problem, response text)] and returns one Judgement per pair, in order.
"""

from grading.judgement import Judgement

__all__ = ["Judgement"]
