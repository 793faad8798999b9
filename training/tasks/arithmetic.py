"""The synthetic reasoning task: multi-digit arithmetic with an exact integer answer.

Difficulty grows with the number of operands, so answering directly
gets harder while a step-by-step chain of thought keeps each step small: a
longer response can buy accuracy, as in the report's figure 5.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass

# level -> (operands, digits per operand). Single digits keep every written step small
# enough for a tiny model, while a direct answer must add up several numbers at once.
DIFFICULTY_LEVELS: dict[str, tuple[int, int]] = {
    "easy": (2, 1),
    "medium": (3, 1),
    "hard": (4, 1),
    "expert": (6, 1),
}
OPERATORS = ("+", "-")


@dataclass(frozen=True)
class ArithmeticProblem:
    problem_id: str
    problem: str
    answer: str
    difficulty: str
    operands: tuple[int, ...]
    operators: tuple[str, ...]


def evaluate(operands: tuple[int, ...], operators: tuple[str, ...]) -> int:
    """Left-to-right value of operands joined by + and -."""
    total = operands[0]
    for operator, operand in zip(operators, operands[1:]):
        total = total + operand if operator == "+" else total - operand
    return total


TRAIN, HELD_OUT = "train", "held_out"
HELD_OUT_EVERY = 5  # one expression in five belongs to the held-out split


def split_of(expression: str) -> str:
    """The split an expression belongs to, fixed by its text (a CRC), so no seed can draw it into the other."""
    return HELD_OUT if zlib.crc32(expression.encode()) % HELD_OUT_EVERY == 0 else TRAIN


def make_problem(rng: random.Random, difficulty: str, index: int, split: str | None = TRAIN) -> ArithmeticProblem:
    """One seeded problem of the given difficulty from `split` (None: either); running totals never go below
    zero. Draws are repeated until the expression is in the split."""
    while True:
        operands, operators = _operation(rng, difficulty)
        expression = str(operands[0]) + "".join(f"{op}{value}" for op, value in zip(operators, operands[1:]))
        if split is None or split_of(expression) == split:
            break
    return ArithmeticProblem(
        problem_id=f"arith-{difficulty}-{index}",
        problem=f"Compute {expression}.",
        answer=str(evaluate(operands, operators)),
        difficulty=difficulty,
        operands=operands,
        operators=operators,
    )


def _operation(rng: random.Random, difficulty: str) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Random operands and operators of the difficulty, with running totals never below zero."""
    count, digits = DIFFICULTY_LEVELS[difficulty]
    low, high = 10 ** (digits - 1) if digits > 1 else 0, 10**digits - 1
    operands, operators = [rng.randint(low, high)], []
    total = operands[0]
    for _ in range(count - 1):
        operand = rng.randint(low, high)
        operator = rng.choice(OPERATORS) if operand <= total else "+"
        total = total + operand if operator == "+" else total - operand
        operands.append(operand)
        operators.append(operator)
    return tuple(operands), tuple(operators)


def generate(count: int, seed: int = 0, difficulties: tuple[str, ...] = tuple(DIFFICULTY_LEVELS),
             split: str | None = TRAIN) -> list[ArithmeticProblem]:
    """`count` problems spread evenly over the difficulties, reproducible from the seed.

    split: TRAIN (what training and warm-up draw), HELD_OUT (the synthetic-arithmetic benchmark's problems:
    no training seed draws them) or None (either; for text that is not a training set, like a tokenizer's).
    """
    unknown = set(difficulties) - DIFFICULTY_LEVELS.keys()
    if unknown:
        raise ValueError(f"unknown difficulty {sorted(unknown)}; choose from {', '.join(DIFFICULTY_LEVELS)}")
    if split not in (TRAIN, HELD_OUT, None):
        raise ValueError(f"split must be {TRAIN!r}, {HELD_OUT!r} or None, got {split!r}")
    rng = random.Random(seed)
    return [make_problem(rng, difficulties[index % len(difficulties)], index, split) for index in range(count)]


def step_by_step(problem: ArithmeticProblem) -> str:
    """A chain of thought: one line per operation with the running total, then the answer."""
    total, lines = problem.operands[0], []
    for operator, operand in zip(problem.operators, problem.operands[1:]):
        updated = total + operand if operator == "+" else total - operand
        lines.append(f"{total}{operator}{operand}={updated}")
        total = updated
    return "\n".join(lines + [f"Answer: {total}"])


def direct(problem: ArithmeticProblem) -> str:
    """The answer with no reasoning."""
    return f"Answer: {problem.answer}"


def warmup_traces(count: int, seed: int, step_by_step_share: float = 0.5) -> list[tuple[ArithmeticProblem, str]]:
    """(problem, response) pairs for the long-CoT warm-up: a mix of reasoned and direct answers.

    Both styles are verified correct; RL later learns which style pays off, so the mean
    response length grows as accuracy rises (the report's figure 5).
    """
    rng = random.Random(seed + 7919)
    return [
        (problem, step_by_step(problem) if rng.random() < step_by_step_share else direct(problem))
        for problem in generate(count, seed=seed)
    ]
