"""The synthetic arithmetic task: correct answers, reproducible, spread over difficulties."""

import pytest

from training.tasks.arithmetic import DIFFICULTY_LEVELS, evaluate, generate


def test_answers_are_the_left_to_right_value_of_the_expression():
    assert evaluate((12, 5, 30), ("-", "+")) == 37
    for problem in generate(40, seed=3):
        expression = problem.problem.removeprefix("Compute ").removesuffix(".")
        assert " " not in expression
        assert int(problem.answer) == eval(expression)  # trusted: our own generated digits and +/-


def test_the_same_seed_gives_the_same_problems_and_another_seed_differs():
    assert generate(10, seed=1) == generate(10, seed=1)
    assert generate(10, seed=1) != generate(10, seed=2)


def test_problems_cycle_through_difficulties_with_the_right_shape():
    problems = generate(8, seed=0)
    assert [p.difficulty for p in problems[:4]] == list(DIFFICULTY_LEVELS)
    for problem in problems:
        count, digits = DIFFICULTY_LEVELS[problem.difficulty]
        assert len(problem.operands) == count
        assert all(len(str(value)) <= digits for value in problem.operands)


def test_an_unknown_difficulty_is_refused():
    with pytest.raises(ValueError, match="unknown difficulty"):
        generate(3, difficulties=("impossible",))


def test_no_training_seed_draws_a_held_out_problem():
    """The held-out benchmark's problems are their own split of the expressions: training sets and warm-up traces
    from any seed never contain them (the easy level has only ~155 expressions, so seeds alone collided: 10 of
    the demo suite's 64 problems were in the demo's training set)."""
    from evaluation.benchmarks import load_synthetic_arithmetic
    from training.tasks.arithmetic import HELD_OUT, TRAIN, split_of, warmup_traces

    held_out = {problem.prompt for problem in load_synthetic_arithmetic()}
    trained = {p.problem for seed in range(4) for p in generate(2000, seed=seed)}
    trained |= {problem.problem for problem, _ in warmup_traces(512, seed=0)}
    assert held_out and not held_out & trained
    assert {split_of(p.problem.removeprefix("Compute ").removesuffix(".")) for p in generate(40, split=HELD_OUT)} \
        == {HELD_OUT}
    either = [split_of(p.problem.removeprefix("Compute ").removesuffix(".")) for p in generate(2000, split=None)]
    assert 0.15 < either.count(HELD_OUT) / len(either) < 0.25 and TRAIN in either
    with pytest.raises(ValueError, match="split must be"):
        generate(3, split="test")
