"""Math answer verification: extract the final answer, compare it with the reference by value.

extract_answer and is_equivalent run in the calling process without a time limit; MathVerifier runs
checks in killable worker processes with a per-check time limit and an LRU cache. Importing this package
is cheap: math_verify and sympy load on the first real comparison.
"""

from grading.verifier.checker import MathVerifier, VerifierResult, VerifierStats
from grading.verifier.equivalence import fast_verdict, is_equivalent, normalise
from grading.verifier.extraction import BOXED, EXTRACTION_POLICIES, FLEXIBLE, extract_answer, last_boxed

__all__ = [
    "BOXED",
    "EXTRACTION_POLICIES",
    "FLEXIBLE",
    "MathVerifier",
    "VerifierResult",
    "VerifierStats",
    "extract_answer",
    "fast_verdict",
    "is_equivalent",
    "last_boxed",
    "normalise",
]
