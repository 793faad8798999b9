"""The math answer verifier: extraction, equivalence of written forms, and the time-limited worker pool."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from grading.verifier import MathVerifier, VerifierResult, extract_answer, fast_verdict, is_equivalent
from grading.verifier.cache import LruCache

REPOSITORY = Path(__file__).resolve().parents[2]
# Never finishes: sympy evaluates a power tower with a 370-million-digit exponent inside one C call.
HUNG_ANSWER = "9^{9^{9^9}}"

# (predicted, reference)
EQUIVALENT = [
    ("025", "25"),  # AIME answers with leading zeros
    ("007", "7"),
    ("25", "025"),
    ("\\frac{1}{2}", "1/2"),
    ("1/2", "0.5"),
    ("0.5", "\\frac12"),
    ("\\dfrac{1}{2}", "0.5"),
    ("\\tfrac{3}{4}", "0.75"),
    ("3.50", "3.5"),
    ("0.125", "\\frac{1}{8}"),
    ("-3", "-3.0"),
    ("-\\frac{1}{2}", "-0.5"),
    ("\\frac{-1}{2}", "-\\frac{1}{2}"),
    ("[1,3)", "[1, 3)"),
    ("\\left[1, 3\\right)", "[1,3)"),
    ("(-\\infty, 2]", "(-\\infty,2]"),
    ("\\{1,2\\}", "\\{2,1\\}"),
    ("\\left\\{1,2\\right\\}", "\\{2, 1\\}"),
    ("\\{1, 2, 3\\}", "\\{3,2,1\\}"),
    ("(3, \\pi/2)", "\\left(3, \\frac{\\pi}{2}\\right)"),
    ("5\\text{ cm}", "5"),
    ("5 \\text{cm}", "5\\text{ cm}"),
    ("30^\\circ", "30"),
    ("30^{\\circ}", "30"),
    ("\\text{(C)}", "C"),
    ("\\text{Evelyn}", "Evelyn"),
    ("\\$18.90", "18.90"),
    ("\\sqrt{2}/2", "\\frac{\\sqrt2}{2}"),
    ("2\\sqrt{3}", "\\sqrt{12}"),
    ("\\frac{1}{\\sqrt{2}}", "\\frac{\\sqrt{2}}{2}"),
    ("\\frac{\\pi}{2}", "\\pi/2"),
    ("1\\!000", "1000"),
    ("1{,}000", "1000"),
    ("3\\,\\text{cm}", "3"),
    ("2\\ \\text{m}", "2"),
    ("\\frac{1}{2}\\,", "\\frac12"),
    ("10\\%", "10"),
    ("10\\%", "0.1"),
    ("50\\%", "\\frac{1}{2}"),
    ("$\\frac{1}{2}$", "\\frac{1}{2}"),
    ("x^2+1", "1+x^2"),
    ("x=5", "5"),
    ("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\begin{pmatrix}1\\\\2\\end{pmatrix}"),
]

NOT_EQUIVALENT = [
    ("1/2", "1/3"),
    ("25", "26"),
    ("025", "26"),
    ("1000", "100"),
    ("-3", "3"),
    ("0.5", "0.25"),
    ("0.333", "\\frac13"),
    ("\\frac{1}{2}", "2"),
    ("[1,3)", "[1,3]"),
    ("(1,3)", "[1,3)"),
    ("(-\\infty, 2]", "(-\\infty, 2)"),
    ("\\{1,2\\}", "\\{1,3\\}"),
    ("(2,1)", "(1,2)"),
    ("(3, \\frac{\\pi}{2})", "(3, \\frac{\\pi}{3})"),
    ("\\sqrt{2}/2", "\\sqrt{3}/2"),
    ("5\\text{ cm}", "6"),
    ("10\\%", "0.2"),
    ("\\pi", "3.14"),
    ("x^2+1", "x^2-1"),
    ("\\text{Evelyn}", "\\text{Bob}"),
    ("C", "D"),
    ("", "5"),
    ("5", ""),
]


@pytest.fixture(scope="module")
def verifier():
    with MathVerifier(workers=2, timeout_seconds=10) as shared:
        yield shared


# Extraction


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("So the result is \\boxed{\\frac{1}{\\sqrt{2}}}.", "\\frac{1}{\\sqrt{2}}"),
        ("First \\boxed{3}, and checking again: \\boxed{ 3 }.", "3"),
        ("\\fbox{42}", "42"),
        ("The set is \\boxed{\\{1, 2\\}}", "\\{1, 2\\}"),
        ("$\\boxed{ (3, \\frac{\\pi}{2}) }$", "(3, \\frac{\\pi}{2})"),
        ("Answer: \\boxed{7} and later Answer: 8", "7"),
        ("I think \\boxed{3}. Checking again \\boxed{4", "3"),
        ("Work...\nAnswer: 42", "42"),
        ("Work...\nThe final answer is $\\frac{1}{2}$.", "\\frac{1}{2}"),
        ("**Final Answer:** 17", "17"),
        ("Answer: 1\nHmm, no.\nAnswer: 2", "2"),
        ("The answer is: \\(x = 5\\)", "x = 5"),
    ],
)
def test_it_extracts_the_last_boxed_answer_else_the_last_answer_line(response, expected):
    assert extract_answer(response) == expected


@pytest.mark.parametrize("response", ["I answered quickly.\nNo conclusion here.", "", "\\boxed{}", "\\boxed{5"])
def test_it_extracts_nothing_when_no_answer_is_given(response):
    assert extract_answer(response) is None


@pytest.mark.parametrize(("response", "expected"), [
    ("The answer is 9", "9"),
    ("Work...\n**Answer:** $9$", "9"),
    ("Final answer: 9", "9"),
    ("We add the two.\n$\\frac{1}{2}$", "\\frac{1}{2}"),
    ("Solving,\nx = 5.", "x = 5"),
    ("1,000", "1,000"),  # a bare answer
    ("\\text{Monday}", "\\text{Monday}"),
])
def test_the_flexible_policy_reads_answer_lines_and_final_expressions(response, expected):
    assert extract_answer(response) == expected
    assert extract_answer(response, "boxed") is None  # the strict policy reads boxes only


@pytest.mark.parametrize("response", [
    "First \\boxed{1}, then \\boxed{2}, finally \\boxed{3}.",  # several different boxed answers
    "Thinking...\nSo it is probably 9 or so.",  # a last line of prose
    "x" * 1_000_001 + "\\boxed{7}",  # beyond the response limit (MAX_RESPONSE_CHARACTERS)
])
def test_hedged_or_oversized_responses_extract_nothing(response):
    assert extract_answer(response) is None
    assert extract_answer(response, "boxed") is None


@pytest.mark.parametrize(("response", "reference"), [
    ("The answers could be 1, 2, 3 or 4.\nAnswer: 1, 2, 3, 4", "3"),  # a list of candidates
    ("\\boxed{1 \\text{ or } 2}", "2"),
    ("\\boxed{A, B, C, D}", "\\text{(C)}"),
])
def test_a_list_of_candidates_is_not_the_answer(response, reference):
    with MathVerifier(workers=1) as fresh:
        assert fresh.check(response, reference).correct is False


def test_an_enormous_expression_times_out_as_wrong():
    enormous = "+".join(f"{index}^{{{index}^{{{index}}}}}" for index in range(2, 400))
    with MathVerifier(workers=1, timeout_seconds=1.0) as short:
        started = time.monotonic()
        result = short.check(f"\\boxed{{{enormous}}}", "5")
        assert result.correct is False and time.monotonic() - started < 30
        assert not result.decided


def test_an_unknown_policy_is_refused_by_name():
    with pytest.raises(ValueError, match="extraction policy must be one of flexible, boxed, got 'any'"):
        extract_answer("Answer: 1", "any")


# Equivalence


@pytest.mark.parametrize(("predicted", "reference"), EQUIVALENT)
def test_equivalent_written_forms_are_equal(predicted, reference):
    assert is_equivalent(predicted, reference) is True


@pytest.mark.parametrize(("predicted", "reference"), NOT_EQUIVALENT)
def test_different_values_are_not_equal(predicted, reference):
    assert is_equivalent(predicted, reference) is False


def test_math500_tuple_with_left_right_equals_the_plain_tuple():
    assert is_equivalent("\\left( 3, \\frac{\\pi}{2} \\right)", "(3,\\frac{\\pi}{2})")
    assert is_equivalent("\\left( 3, \\frac{\\pi}{2} \\right)", "(3,\\pi/2)")  # math-verify, not the fast path
    assert not is_equivalent("\\left( 3, \\frac{\\pi}{2} \\right)", "(3,\\frac{\\pi}{4})")


def test_the_fast_path_decides_common_forms_and_leaves_the_rest_to_math_verify():
    assert fast_verdict("\\left[ 1,\\, 3 \\right)", "[1,3)") is True
    assert fast_verdict("025", "25.0") is True
    assert fast_verdict("25", "26") is False
    assert fast_verdict("0.3333333", "1/3") is True  # six or more places: a truncation of the exact value
    assert fast_verdict("0.333", "1/3") is False
    assert fast_verdict("\\frac{1}{2}", "0.5") is True
    assert fast_verdict("2\\sqrt{2}", "\\sqrt{8}") is True
    assert fast_verdict("(x+1)^2", "x^2+2x+1") is True
    assert fast_verdict("\\log_2 8", "3") is None  # outside the fast grammar
    assert fast_verdict("\\sin x", "x") is None


def test_none_predicts_nothing():
    assert is_equivalent(None, "5") is False


def test_is_equivalent_works_off_the_main_thread():
    results = []
    thread = threading.Thread(target=lambda: results.append(is_equivalent("\\sqrt{2}/2", "\\frac{\\sqrt2}{2}")))
    thread.start()
    thread.join()
    assert results == [True]


def test_importing_the_verifier_does_not_import_math_verify_or_sympy():
    code = "import sys, grading.verifier; print(sorted({'math_verify', 'sympy'} & set(sys.modules)))"
    output = subprocess.run([sys.executable, "-c", code], cwd=REPOSITORY, capture_output=True, text=True, check=True)
    assert output.stdout.strip() == "[]"


# MathVerifier


def test_it_checks_a_response_against_the_reference(verifier):
    result = verifier.check("We get $\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}$.", "(3,\\frac{\\pi}{2})")
    assert result == VerifierResult(correct=True, extracted="\\left( 3, \\frac{\\pi}{2} \\right)", timed_out=False)
    assert verifier.check("Answer: 1/3", "\\frac{1}{2}") == VerifierResult(False, "1/3", False)


def test_a_response_without_an_answer_is_incorrect_without_a_worker():
    with MathVerifier(workers=1) as fresh:
        assert fresh.check("I give up.", "5") == VerifierResult(correct=False, extracted=None, timed_out=False)
        assert fresh.check("\\boxed{025}", "25") == VerifierResult(correct=True, extracted="025", timed_out=False)
        assert fresh.stats().worker_checks == 0


def test_check_many_answers_in_order_and_checks_duplicates_once(verifier):
    pairs = [(f"\\boxed{{{predicted}}}", reference) for predicted, reference in EQUIVALENT[:12] + NOT_EQUIVALENT[:6]]
    pairs += [("\\boxed{\\frac{7}{9}}", "0.777777777")] * 3
    before = verifier.stats()
    results = verifier.check_many(pairs)
    assert [result.correct for result in results] == [True] * 12 + [False] * 6 + [True] * 3
    assert not any(result.timed_out for result in results)
    assert verifier.stats().worker_checks - before.worker_checks <= 12 + 6 + 1


def test_a_second_identical_check_is_served_from_the_cache(verifier):
    verifier.check("\\boxed{\\frac{\\sqrt{3}}{2}}", "\\frac{\\sqrt 3}{2}")
    before = verifier.stats()
    # A different response with the same final answer is the same (answer, reference) key.
    result = verifier.check("Another derivation. \\boxed{\\frac{\\sqrt{3}}{2}}", "\\frac{\\sqrt 3}{2}")
    after = verifier.stats()
    assert result.correct
    assert after.cache_hits == before.cache_hits + 1
    assert after.worker_checks == before.worker_checks


def test_it_checks_from_a_thread(verifier):
    results = []
    thread = threading.Thread(target=lambda: results.append(verifier.check("\\boxed{[1, 3)}", "[1,3)")))
    thread.start()
    thread.join()
    assert results == [VerifierResult(correct=True, extracted="[1, 3)", timed_out=False)]


def test_it_checks_from_many_threads_at_once(verifier):
    chosen = EQUIVALENT[20:32] + NOT_EQUIVALENT[8:16]
    pairs = [(f"\\boxed{{{predicted}}}", reference) for predicted, reference in chosen]
    with ThreadPoolExecutor(max_workers=6) as threads:
        results = list(threads.map(lambda pair: verifier.check(*pair), pairs))
    assert [result.correct for result in results] == [True] * 12 + [False] * 8


def test_a_hung_check_times_out_and_its_worker_is_replaced():
    before = {process.pid for process in multiprocessing.active_children()}
    with MathVerifier(workers=1, timeout_seconds=1.5) as short:
        assert short.check("\\boxed{\\log_2 8}", "3").correct  # math-verify: starts the pool outside the timing
        old_workers = {process.pid for process in multiprocessing.active_children()} - before
        start = time.monotonic()
        result = short.check(f"\\boxed{{{HUNG_ANSWER}}}", "1")
        elapsed = time.monotonic() - start
        assert result == VerifierResult(correct=False, extracted=HUNG_ANSWER, timed_out=True)
        assert 1.5 <= elapsed < 2.5
        assert short.check("\\boxed{\\log_2 16}", "4") == VerifierResult(True, "\\log_2 16", False)
        assert (short.stats().timeouts, short.stats().pool_restarts) == (1, 1)
        assert old_workers
        for pid in old_workers:
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)


def test_checks_beside_a_hung_check_in_one_batch_still_get_answers():
    with MathVerifier(workers=2, timeout_seconds=1.5) as short:
        results = short.check_many([
            (f"\\boxed{{{HUNG_ANSWER}}}", "2"),
            ("\\boxed{\\frac{1}{2}}", "0.5"),
            ("\\boxed{\\{1,2\\}}", "\\{2,1\\}"),
            ("\\boxed{[1,3)}", "[1,3]"),
        ])
    assert [(result.correct, result.timed_out) for result in results] == [
        (False, True), (True, False), (True, False), (False, False)]


def test_it_runs_checks_with_the_forkserver_start_method():
    with MathVerifier(workers=1, start_method="forkserver") as forkserver:
        assert forkserver.check("\\boxed{\\log_2 8}", "3").correct  # outside the fast path: a worker decides
        assert forkserver.stats().worker_checks == 1


def test_a_closed_verifier_refuses_checks():
    verifier = MathVerifier(workers=1)
    verifier.close()
    with pytest.raises(RuntimeError, match="closed"):
        verifier.check("\\boxed{\\frac{1}{2}}", "0.5")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"workers": 0}, "workers"),
        ({"timeout_seconds": 0}, "timeout_seconds"),
        ({"start_method": "fork"}, "start_method"),
    ],
)
def test_it_rejects_invalid_settings(arguments, message):
    with pytest.raises(ValueError, match=message):
        MathVerifier(**arguments)


def test_the_cache_evicts_the_least_recently_used_entry():
    cache = LruCache(maxsize=2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3)
    assert (cache.get("b"), cache.get("a"), cache.get("c")) == (None, 1, 3)
    assert (cache.hits, cache.misses, len(cache)) == (3, 1, 2)


def _check_in_child(queue) -> None:
    verifier = MathVerifier(workers=1)
    queue.put(verifier.check("\\boxed{x^2+1}", "1+x^2").correct)  # starts the pool; never closed by hand


def test_a_process_that_never_closes_its_verifier_still_exits():
    """multiprocessing joins a child's children at exit, where atexit does not run: the pool closes itself."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=_check_in_child, args=(queue,))
    child.start()
    assert queue.get(timeout=120) is True
    child.join(timeout=60)
    exit_code = child.exitcode
    if exit_code is None:
        child.kill()
    assert exit_code == 0
