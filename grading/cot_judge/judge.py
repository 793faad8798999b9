"""CotJudge: judge prompts sent in batches to any engine's generate(prompts) -> texts, verdicts parsed strictly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from grading.cot_judge.prompt import judge_prompt
from grading.cot_judge.verdict import JudgeVerdict, parse_verdict

Generate = Callable[[list[str]], list[str]]  # prompt texts -> one output text each, in order


@dataclass(frozen=True)
class JudgeItem:
    """What the judge sees of one sample: the question, the reference answer and the response."""

    question: str
    reference: str
    response: str


class CotJudge:
    """The chain-of-thought reward model over a batched generate callable; counts the samples it judged
    and its errors (outputs whose verdict did not parse) since it was created.

    batch_size: prompts per generate call.
    """

    def __init__(self, generate: Generate, batch_size: int = 32):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.generate = generate
        self.batch_size = batch_size
        self.judged = 0
        self.errors = 0

    def judge_many(self, items: Sequence[JudgeItem]) -> list[JudgeVerdict]:
        """One verdict per item, in order."""
        verdicts: list[JudgeVerdict] = []
        for start in range(0, len(items), self.batch_size):
            batch = items[start:start + self.batch_size]
            outputs = self.generate([judge_prompt(item.question, item.reference, item.response) for item in batch])
            if len(outputs) != len(batch):
                raise ValueError(f"the judge's generate returned {len(outputs)} outputs for {len(batch)} prompts")
            verdicts += [self._verdict(output) for output in outputs]
        return verdicts

    def _verdict(self, output: str) -> JudgeVerdict:
        parsed = parse_verdict(output)
        self.judged += 1
        self.errors += parsed.verdict is None
        return parsed
