"""Strict parsing of the judge's output: the last JSON object must be exactly {"verdict": "correct"|"incorrect"}.

Anything else (no JSON object, malformed JSON, other or extra keys, another value, a repeated key, text after
the verdict, two verdicts) is an error with its reason: the sample is not passed, and the error is counted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

CORRECT = "correct"
INCORRECT = "incorrect"
VERDICTS = (CORRECT, INCORRECT)
VERDICT_KEY = "verdict"
ALLOWED_AFTER_VERDICT = "```"  # a closing code fence around the JSON verdict; whitespace is allowed too


@dataclass(frozen=True)
class JudgeVerdict:
    """The judge's verdict on one sample: "correct" or "incorrect", or None on a judge error with the reason in
    error; reasoning is the text before the verdict (the whole output when it could not be parsed)."""

    verdict: str | None
    reasoning: str
    error: str = ""

    @property
    def correct(self) -> bool:
        """Only a parsed "correct" verdict passes; a judge error never does."""
        return self.verdict == CORRECT

    @property
    def is_error(self) -> bool:
        return self.verdict is None


class _RepeatedKey(ValueError):
    pass


def _no_repeated_keys(pairs: list[tuple[str, object]]) -> dict:
    keys = [key for key, _ in pairs]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise _RepeatedKey(f"the key {repeated[0]!r} appears twice in one object")
    return dict(pairs)


_DECODER = json.JSONDecoder(object_pairs_hook=_no_repeated_keys)


def json_objects(text: str) -> list[tuple[int, int, object]]:
    """Every top-level JSON object of the text as (start, end, value), left to right; nested ones are inside.

    A "{" that does not start a valid JSON object is skipped; a repeated key raises _RepeatedKey.
    """
    found, position = [], text.find("{")
    while position != -1:
        try:
            value, end = _DECODER.raw_decode(text, position)
        except json.JSONDecodeError:
            position = text.find("{", position + 1)
            continue
        found.append((position, end, value))
        position = text.find("{", end)
    return found


def schema_error(value: object) -> str:
    """Why a JSON value is not exactly {"verdict": "correct"|"incorrect"}; "" when it is."""
    if not isinstance(value, dict):
        return f"the verdict must be a JSON object, got {type(value).__name__}"
    if set(value) != {VERDICT_KEY}:
        return f"the verdict object must have exactly the key {VERDICT_KEY!r}, got {sorted(value)}"
    if value[VERDICT_KEY] not in VERDICTS:
        return f"{VERDICT_KEY!r} must be one of {', '.join(map(repr, VERDICTS))}, got {value[VERDICT_KEY]!r}"
    return ""


def parse_verdict(output: str) -> JudgeVerdict:
    """The verdict at the end of a judge's output, or an error saying why there is none (never a pass)."""
    try:
        objects = json_objects(output)
    except _RepeatedKey as error:
        return JudgeVerdict(None, output, f"malformed verdict: {error}")
    if not objects:
        return JudgeVerdict(None, output, "no JSON verdict in the judge's output")
    start, end, value = objects[-1]
    trailing = output[end:].strip()
    if trailing and trailing != ALLOWED_AFTER_VERDICT:
        return JudgeVerdict(None, output, f"text after the last JSON object: {trailing[:80]!r}")
    if error := schema_error(value):
        return JudgeVerdict(None, output, error)
    verdicts = [value for _, _, value in objects if not schema_error(value)]
    if len(verdicts) > 1:
        return JudgeVerdict(None, output, f"{len(verdicts)} verdicts in one output; exactly one is allowed")
    return JudgeVerdict(value[VERDICT_KEY], output[:start].rstrip().removesuffix("```json").rstrip())
