"""Fixtures of the grading tests: a CodeJudge per sandbox backend, skipped (saying why) where it cannot run."""

from __future__ import annotations

import pytest

from grading.sandbox import CodeJudge
from tests.grading.sandbox_support import BACKENDS, LIMITS, skip_reason


@pytest.fixture(scope="module", params=BACKENDS)
def judge(request):
    reason = skip_reason(request.param)
    if reason:
        pytest.skip(reason)
    with CodeJudge(backend=request.param, limits=LIMITS, workers=2) as code_judge:
        yield code_judge
