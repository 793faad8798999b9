"""Math answer verification: extract the final answer, compare it with the reference by value.

extract_answer and is_equivalent run in the calling process without a time limit; MathVerifier runs
checks in killable worker processes with a per-check time limit and an LRU cache. Exports load lazily,
so a module that needs only the policy names (the run config, the web app) imports neither mpmath nor
multiprocessing; math_verify and sympy load on the first comparison the fast path cannot settle.
"""

import importlib

_EXPORTS = {
    "grading.verifier.checker": ("MathVerifier", "VerifierResult", "VerifierStats"),
    "grading.verifier.equivalence": ("fast_verdict", "is_equivalent", "normalise", "same_value"),
    "grading.verifier.extraction": ("BOXED", "EXTRACTION_POLICIES", "FLEXIBLE", "extract_answer", "last_boxed"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    if name not in _MODULE_OF:
        raise AttributeError(f"module 'grading.verifier' has no attribute {name!r}")
    return getattr(importlib.import_module(_MODULE_OF[name]), name)
