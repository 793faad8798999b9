"""The synthetic reasoning task: multi-digit arithmetic with an exact integer answer.

Difficulty grows with the number of operands and digits, so answering directly
gets harder while a step-by-step chain of thought keeps each step small: a
longer response can buy accuracy, as in the report's figure 5.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# level -> (operands, digits per operand)
DIFFICULTY_LEVELS: dict[str, tuple[int, int]] = {
    "easy": (2, 1),
    "medium": (3, 2),
    "hard": (4, 2),
    "expert": (5, 3),
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


def make_problem(rng: random.Random, difficulty: str, index: int) -> ArithmeticProblem:
    """One seeded problem of the given difficulty."""
    count, digits = DIFFICULTY_LEVELS[difficulty]
    low, high = 10 ** (digits - 1) if digits > 1 else 0, 10**digits - 1
    operands = tuple(rng.randint(low, high) for _ in range(count))
    operators = tuple(rng.choice(OPERATORS) for _ in range(count - 1))
    expression = " ".join([str(operands[0])] + [f"{op} {value}" for op, value in zip(operators, operands[1:])])
    return ArithmeticProblem(
        problem_id=f"arith-{difficulty}-{index}",
        problem=f"Compute {expression}.",
        answer=str(evaluate(operands, operators)),
        difficulty=difficulty,
        operands=operands,
        operators=operators,
    )


def generate(count: int, seed: int = 0, difficulties: tuple[str, ...] = tuple(DIFFICULTY_LEVELS)) -> list[ArithmeticProblem]:
    """`count` problems spread evenly over the difficulties, reproducible from the seed."""
    unknown = set(difficulties) - DIFFICULTY_LEVELS.keys()
    if unknown:
        raise ValueError(f"unknown difficulty {sorted(unknown)}; choose from {', '.join(DIFFICULTY_LEVELS)}")
    rng = random.Random(seed)
    return [make_problem(rng, difficulties[index % len(difficulties)], index) for index in range(count)]
