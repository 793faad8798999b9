"""The verdict on one response."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Judgement:
    correct: bool
    extracted: str = ""  # the final answer, or the program that was run
    detail: str = ""  # why: a sandbox verdict, a verifier timeout...
