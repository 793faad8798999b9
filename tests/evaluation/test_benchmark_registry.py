"""Each benchmark is defined in one module of evaluation.benchmarks and registered once; every list derives from it."""

from __future__ import annotations

import pytest

from evaluation.benchmarks import (
    ANSWER_JUDGES,
    BUILTIN_BENCHMARKS,
    HUB_SOURCES,
    LM_EVAL_TASKS,
    LOADERS,
    benchmark_registry,
)
from evaluation.benchmarks.spec import register
from evaluation.lm_eval_tasks.tasks import TASK_PREFIX, TASKS
from evaluation.runners import runner_for
from evaluation.suite_config import BENCHMARKS


def test_the_suite_choices_are_the_registered_benchmarks_in_registration_order():
    assert BENCHMARKS == tuple(benchmark_registry.entries) == tuple(BUILTIN_BENCHMARKS)


def test_each_name_is_registered_where_its_spec_is_defined():
    for name, target in benchmark_registry.entries.items():
        assert target.startswith("evaluation.benchmarks.")
        assert benchmark_registry.get(name).name == name


def test_the_loaders_are_those_of_the_benchmarks_stored_in_files():
    assert LOADERS == {name: spec.read for name, spec in BUILTIN_BENCHMARKS.items() if spec.reads_files}
    assert "synthetic-arithmetic" in BENCHMARKS and "synthetic-arithmetic" not in LOADERS


def test_each_hub_source_belongs_to_a_registered_benchmark():
    assert HUB_SOURCES == {name: spec.hub for name, spec in BUILTIN_BENCHMARKS.items() if spec.hub is not None}
    assert set(HUB_SOURCES) == set(LOADERS)


def test_benchmarks_with_images_say_where_the_hub_images_go():
    for name, spec in BUILTIN_BENCHMARKS.items():
        assert bool(spec.needs_images) == bool(spec.hub and spec.hub.images), name


def test_the_lm_eval_tasks_are_those_the_benchmark_modules_name():
    assert TASKS == LM_EVAL_TASKS == {spec.lm_eval_task.name: spec.lm_eval_task
                                      for spec in BUILTIN_BENCHMARKS.values() if spec.lm_eval_task}
    assert all(name.startswith(TASK_PREFIX) for name in TASKS)


def test_the_answer_judges_are_those_of_benchmarks_graded_on_a_final_answer():
    assert set(ANSWER_JUDGES) == {spec.judge.name for spec in BUILTIN_BENCHMARKS.values()
                                  if spec.grades_final_answers}


def test_every_registered_benchmark_runs_on_the_builtin_runner():
    from evaluation.builtin_runner import run_builtin_benchmark

    assert all(runner_for(name) is run_builtin_benchmark for name in BENCHMARKS)


def test_a_name_is_registered_only_once():
    with pytest.raises(ValueError, match="'aime24' is registered twice"):
        register(BUILTIN_BENCHMARKS["aime24"], "somewhere.else:AIME24")
    assert benchmark_registry.entries["aime24"] == "evaluation.benchmarks.aime:AIME24"
