"""Realistic model responses graded as the RL reward and the evaluation judge grade them: MathVerifier.check
(extraction under the flexible policy, then equivalence). The examples are an audit's, as models wrote them.

Each test names a behaviour with the responses it now grades right, and the wrong answers that stay wrong.
"""

from __future__ import annotations

import pytest

from grading.verifier import MathVerifier, extract_answer


@pytest.fixture(scope="module")
def verifier():
    with MathVerifier(workers=1, timeout_seconds=10) as shared:
        yield shared


def boxed(answer: str) -> str:
    return f"Let's solve this step by step.\n\n1. ...\n2. ...\n\nTherefore, $\\boxed{{{answer}}}$"


def assert_graded(verifier: MathVerifier, response: str, reference: str, correct: bool) -> None:
    result = verifier.check(response, reference)
    assert result.correct is correct, f"{response!r} against {reference!r}: extracted {result.extracted!r}"


# 1. A numeral in a base other than ten is its digits, not its decimal value.


@pytest.mark.parametrize(("answer", "reference"), [
    ("4210", "4210_{5}"), ("4210_5", "4210_{5}"), ("4210_{5}", "4210_{5}"), ("4210_{(5)}", "4210_{5}"),
    ("4343", "4343_6"), ("4343_{6}", "4343_6"), ("52", "52_8"), ("52_8", "52_8"), ("2516", "2516_8"),
    ("02516_8", "2516_8"),
])
def test_a_base_n_reference_accepts_its_digits_with_or_without_the_subscript(verifier, answer, reference):
    assert_graded(verifier, boxed(answer), reference, True)


@pytest.mark.parametrize(("answer", "reference"), [
    ("555", "4210_{5}"),  # "Express 555_{10} in base 5": the question's number repeated
    ("999", "4343_6"),
    ("42", "52_8"),  # 6*7 not converted to base 8
    ("1358", "2516_8"),
    ("4210_{6}", "4210_{5}"),  # the right digits in another base
    ("555_{10}", "4210_{5}"),
    ("4210", "555"),  # and the other way round: base-5 digits are not the decimal answer
    ("4210_5", "555"),
])
def test_a_base_n_numeral_never_equals_a_decimal_of_the_same_value(verifier, answer, reference):
    assert_graded(verifier, boxed(answer), reference, False)


def test_a_base_ten_subscript_compares_by_value(verifier):
    assert_graded(verifier, boxed("555"), "555_{10}", True)
    assert_graded(verifier, boxed("556"), "555_{10}", False)


# 2. Two numbers separated by words are a compound quantity, never its first number.


@pytest.mark.parametrize(("answer", "reference"), [
    ("4 \\text{ hours } 30 \\text{ minutes}", "4"),
    ("4 \\text{ hours and } 30 \\text{ minutes}", "4"),
    ("2 \\text{ hours } 15 \\text{ minutes}", "2"),
    ("4 \\text{ feet } 6 \\text{ inches}", "4"),
    ("7 \\text{ weeks } 3 \\text{ days}", "7"),
    ("20\\text{ m by }30\\text{ m}", "20"),
    ("5 \\text{ apples and } 3 \\text{ oranges}", "5"),
    ("12 \\text{ dollars and } 50 \\text{ cents}", "12"),
])
def test_a_compound_quantity_is_not_its_first_number(verifier, answer, reference):
    assert_graded(verifier, boxed(answer), reference, False)


def test_numbers_joined_only_by_and_or_or_are_still_a_list_of_answers(verifier):
    assert_graded(verifier, boxed("1 \\text{ and } 2"), "1, 2", True)
    assert_graded(verifier, boxed("x=1 \\text{ or } x=2"), "1, 2", True)
    assert_graded(verifier, boxed("5 \\text{ cm}"), "5", True)  # one number with a unit


# 3. A guess taken back on the last answer line is no answer (the responses are truncated).


@pytest.mark.parametrize(("response", "reference"), [
    ("Maybe the answer is $12\\pi$? That seems too small\n"
     "Let me redo the computation with r = 3 and h = 8 so that the volume is", "12\\pi"),
    ("I initially thought the answer is $\\frac{14}{3}$ but that ignores the overlap.\n"
     "Recomputing: the overlap has area 1/3 so the total is 14/3 - 1/3 =", "\\frac{14}{3}"),
    ("My first guess for the answer is $7$ however the constraint rules it out.\nSo", "7"),
    ("So the answer is $12$? Wait, that can't be right.\nLet me recount. The cases are", "12"),
    ("Answer: $5$. Actually no, $7$.", "5"),
    ("The answer is 5. No, 7.", "5"),
])
def test_a_guess_taken_back_on_the_last_answer_line_extracts_nothing(verifier, response, reference):
    assert extract_answer(response) is None
    result = verifier.check(response, reference)
    assert result.correct is False and result.decided is False


@pytest.mark.parametrize(("response", "expected"), [
    ("The answer is $5$ cm.", "5\\text{ cm}"),  # a unit may follow the answer
    ("The length is 5 cm.\nThe answer is 12 apples.", "12 apples"),
    ("After much thought, the answer is 5.", "5"),
])
def test_an_answer_line_followed_by_a_unit_or_nothing_keeps_its_answer(response, expected):
    assert extract_answer(response) == expected


# 4. MATH's thousands separator ",\\!" is read.


@pytest.mark.parametrize(("answer", "reference"), [
    ("10080", "10,\\!080"), ("10,080", "10,\\!080"), ("10{,}080", "10,\\!080"), ("10\\,080", "10,\\!080"),
    ("\\$32,348", "\\$32,\\!348"), ("32348", "\\$32,\\!348"), ("11111111100", "11,\\! 111,\\! 111,\\! 100"),
    ("1,000,000", "1,\\!000,\\!000"), ("1000000", "1,\\!000,\\!000"), ("2,\\!000", "2000"),
])
def test_the_math_thousands_separator_groups_digits(verifier, answer, reference):
    assert_graded(verifier, boxed(answer), reference, True)


@pytest.mark.parametrize(("answer", "reference"), [
    ("10081", "10,\\!080"), ("1008", "10,\\!080"), ("10,08", "10,\\!080"), ("2,\\!000", "200"),
    ("(1,\\!2)", "12"),  # groups of other sizes stay a tuple
])
def test_a_different_number_against_a_math_thousands_reference_stays_wrong(verifier, answer, reference):
    assert_graded(verifier, boxed(answer), reference, False)


# 5. Several boxes are one answer when they hold one value; empty and doubled boxes are not answers.


@pytest.mark.parametrize(("response", "reference"), [
    ("So the probability is $\\boxed{\\frac{1}{2}}$? Let me double check... yes.\n</think>\n\n"
     "The probability is $\\boxed{\\dfrac{1}{2}}$.", "\\frac{1}{2}"),
    ("Thus $P = \\boxed{0.5}$.\n\n**Final Answer**\n$\\boxed{\\frac{1}{2}}$", "\\frac{1}{2}"),
    ("So the answer is \\boxed{25}.\n</think>\n\nThe answer is $\\boxed{025}$.", "25"),
    ("so $x=\\boxed{5}$.\n\n**Final Answer**\n\\boxed{x = 5}", "5"),
    ("$\\boxed{18}$\n\nSo Janet makes $\\boxed{\\$18}$ every day.", "18"),
    ("The problem asks me to put the final answer in \\boxed{}.\n...\n$\\boxed{14}$", "14"),
    ("I'll present the result as \\boxed{} at the end.\n\nThe sum is $\\boxed{14}$.", "14"),
    ("$\\boxed{12}$ \\\\ \\boxed{}", "12"),
    ("$$\\boxed{\\boxed{\\frac{\\sqrt{21}}{5}}}$$", "\\frac{\\sqrt{21}}{5}"),
])
def test_boxes_that_hold_one_value_are_one_answer(verifier, response, reference):
    assert_graded(verifier, response, reference, True)


@pytest.mark.parametrize("response", [
    "Thus $P = \\boxed{0.5}$.\n\n**Final Answer**\n$\\boxed{\\frac{1}{3}}$",
    "\\boxed{\\boxed{5}} \\boxed{7}",
    "First, $a = \\boxed{3}$ and $b=\\boxed{11}$, so $a+b = \\boxed{14}$.",  # intermediate boxes: a hedge
    "The problem asks me to put the final answer in \\boxed{}.",  # an empty box only
])
def test_boxes_that_differ_in_value_still_extract_nothing(response):
    assert extract_answer(response) is None
    assert extract_answer(response, "boxed") is None


@pytest.mark.parametrize("response, reference, correct", [
    ("So the answer is \\boxed{25}.\n</think>\n\nThe answer is $\\boxed{026}$.", "26", True),  # a draft, an answer
    ("So the answer is \\boxed{25}.\n</think>\n\nThe answer is $\\boxed{026}$.", "25", False),
    ("<think>\nSo it is \\boxed{112}. Wait, I made an error.\n</think>\n\n**Answer:** $\\boxed{113}$", "113", True),
    ("<think>\nSo it is \\boxed{7}.\n</think>\nThe answer is 5.", "7", False),  # only what follows the thinking counts
    ("<think>\nLet me think. The answer is \\boxed{7}", "7", False),  # thinking never closed: no answer given
])
def test_a_reasoning_model_is_graded_on_what_follows_its_thinking(verifier, response, reference, correct):
    assert_graded(verifier, response, reference, correct)


def test_a_wrong_value_boxed_twice_stays_wrong(verifier):
    assert_graded(verifier, "$\\boxed{17}$\n\nSo Janet makes $\\boxed{\\$17}$ every day.", "18", False)


# 6. The answer sentence ends at its full stop or at a reason, and its first math span is the answer.


@pytest.mark.parametrize(("response", "reference"), [
    ("Final Answer: The final answer is $025$. I hope it is correct.", "25"),
    ("Therefore, the answer is 6, since 2 * 3 = 6.", "6"),
    ("Therefore, the answer is $\\frac{1}{2}$, which is 50%.", "\\frac{1}{2}"),
])
def test_the_answer_sentence_ends_at_its_full_stop_or_at_a_reason(verifier, response, reference):
    assert_graded(verifier, response, reference, True)


@pytest.mark.parametrize(("response", "reference"), [
    ("Final Answer: The final answer is $026$. I hope it is correct.", "25"),
    ("Therefore, the answer is 7, since 2 * 3 = 6.", "6"),
    ("Therefore, the answer is $\\frac{1}{3}$, which is 50%.", "\\frac{1}{2}"),
])
def test_a_wrong_answer_before_a_reason_stays_wrong(verifier, response, reference):
    assert_graded(verifier, response, reference, False)


def test_the_minerva_format_is_read_under_the_flexible_policy_only():
    response = "Final Answer: The final answer is $025$. I hope it is correct."
    assert extract_answer(response) == "025"
    assert extract_answer(response, "boxed") is None


# 7. \\pm inside a set stands for two items.


def test_plus_minus_inside_a_set_stands_for_two_items(verifier):
    assert_graded(verifier, boxed("-2, 1+\\sqrt5, 1-\\sqrt5"), "\\{1\\pm\\sqrt{5},-2\\}", True)
    assert_graded(verifier, boxed("1-\\sqrt5, -2, 1+\\sqrt5"), "\\{1\\pm\\sqrt{5},-2\\}", True)
    assert_graded(verifier, boxed("-2, 1+\\sqrt5"), "\\{1\\pm\\sqrt{5},-2\\}", False)
    assert_graded(verifier, boxed("2, 1+\\sqrt5, 1-\\sqrt5"), "\\{1\\pm\\sqrt{5},-2\\}", False)


# 8. Roots joined by "or" on an answer line, and a choice label before the value.


def test_roots_joined_by_or_on_an_answer_line_are_a_list(verifier):
    response = "Therefore, the integers are $n = 1$ or $n = -2$.\n\n**Answer:** $n=1$ or $n=-2$"
    assert_graded(verifier, response, "1,-2", True)
    assert_graded(verifier, response, "1", False)
    assert_graded(verifier, "**Answer:** $n=1$ or $n=2$", "1,-2", False)
    assert_graded(verifier, "Answer: $5$ or $7$", "7", False)  # two candidates for one answer


def test_a_choice_label_before_the_value_is_read_as_the_option(verifier):
    assert_graded(verifier, boxed("\\textbf{(B) } 27"), "27", True)
    assert_graded(verifier, boxed("\\textbf{(B) } 27"), "28", False)
    assert_graded(verifier, boxed("\\text{(C) Plane}"), "\\text{(C)}", True)  # against a letter, the letter
    assert_graded(verifier, boxed("\\text{(C) Plane}"), "\\text{(B)}", False)
    assert_graded(verifier, boxed("(A)(B)"), "\\text{(A)}", False)  # two labels are a hedge


@pytest.mark.parametrize("response, reference, correct", [
    ("\\boxed{70 \\text{ thousand}}", "70000", True),
    ("\\boxed{70 \\text{ thousand}}", "70", False),  # the word scales the number: not its first number
    ("\\boxed{2 \\text{ thousand}}", "2", False),
    ("\\boxed{1.5 million}", "1500000", True),
    ("\\boxed{70 \\text{thousand dollars}}", "70000", True),
    ("\\boxed{5 \\text{ squared}}", "25", True),
    ("\\boxed{5 \\text{ squared}}", "5", False),
])
def test_a_word_that_scales_a_number_is_read_as_its_value(verifier, response, reference, correct):
    assert_graded(verifier, response, reference, correct)


# What a small policy writes on the arithmetic task when it echoes the problem or is cut off mid-step: no
# final answer, so no reward (the value of "8+5-7" is the reference 6, and it earned 1 before).


@pytest.mark.parametrize(("response", "reference"), [
    (" 8+5-7", "6"), (" 3+9+9-0-0+4.", "25"), (" 3+4=7\n7+5", "12"), (" 4+4=8\n8-", "8"), (" 9-5=123", "123"),
    ("Let me compute.\n3 \\times", "3"),
])
def test_a_last_line_of_arithmetic_or_cut_off_mid_step_is_no_answer(verifier, response, reference):
    assert extract_answer(response) is None
    assert_graded(verifier, response, reference, False)


@pytest.mark.parametrize(("response", "reference"), [
    ("So the result is\n$-7$", "-7"), ("Working...\n3/4", "\\frac34"), ("Therefore\nx = 5", "5"),
    ("Hence\n$2\\sqrt{3}+1$", "1+2\\sqrt{3}"), ("Then\n3+4i", "3+4i"), (" 8-3=5\n14Answer: 25", "25"),
])
def test_a_last_line_that_is_a_value_is_still_the_answer(verifier, response, reference):
    assert_graded(verifier, response, reference, True)


# Shapes a review found lost by the first version of the answer-line reader (they graded correct before it).


@pytest.mark.parametrize(("response", "reference"), [
    ("The answer is $50$%.", "50"), ("The answer is $50$\\%.", "50"), ("The answer is $5$°.", "5"),
    ("The answer is $7$ (since 3 + 4 = 7).", "7"), ("The answer is $6$ (option C).", "6"),
    ("The answer is $7$!", "7"),
    ("The answer is $2\\sqrt{3}$ units^2.", "2\\sqrt{3}"),
    ("Final Answer: $\\frac{3}{4}$ I hope it is correct.", "3/4"),
    ("The answer is 3. Let me double-check: 1+2=3. Yes.", "3"), ("The answer is 2 sqrt 3.", "2\\sqrt{3}"),
    ("The answer is $5$" + " " * 20_000 + "cm", "5"),  # a run of spaces once took seconds per 10,000
])
def test_an_answer_line_keeps_its_answer_beside_signs_remarks_and_checks(verifier, response, reference):
    assert_graded(verifier, response, reference, True)


@pytest.mark.parametrize("response", ["The answer is $5$ (or maybe $8$).", "The answer is 5. No, 7."])
def test_a_remark_or_a_later_sentence_that_takes_the_answer_back_still_extracts_nothing(response):
    assert extract_answer(response) is None


@pytest.mark.parametrize("response, reference, correct", [
    ("\\boxed{(0,100)}", "(0, 100)", True),  # a pair, not the numeral 0100
    ("\\boxed{(-1,250)}", "(-1, 250)", True),
    ("\\boxed{100}", "[0,100]", False),
    ("\\boxed{1250}", "(1,250)", False),
    ("\\boxed{(10,000, 20,000)}", "(10000, 20000)", True),  # thousands separators inside a pair still join
    ("\\boxed{10,080}", "10080", True),
])
def test_commas_inside_brackets_separate_coordinates_not_thousands(verifier, response, reference, correct):
    assert_graded(verifier, response, reference, correct)


@pytest.mark.parametrize("response, reference, correct", [
    ("\\boxed{2\u221a5}", "2\\sqrt{5}", True),
    ("The answer is \u221a51.", "\\sqrt{51}", True),
    ("\\boxed{-\u221a3}", "-\\sqrt{3}", True),
    ("\\boxed{\u221a(x+1)}", "\\sqrt{x+1}", True),
    ("\\boxed{2\u221a6}", "2\\sqrt{5}", False),
])
def test_the_typed_root_sign_is_a_square_root(verifier, response, reference, correct):
    assert_graded(verifier, response, reference, correct)


@pytest.mark.parametrize("response, expected", [
    ("The final answer is 12. Let me know if you have any questions!", "12"),
    ("**Answer:** 12. If you need more detail, just ask.", "12"),
    ("The answer is 5. It holds if x > 0.", None),  # a condition with maths still doubts it
    ("The answer is 5. But if n = 2 it is 7.", None),
    ("Thus, the value is\n\\[\n\\frac{14}{3}\n\\]", "\\frac{14}{3}"),  # a display block on lines of its own
    ("So we get \\[\n\\frac{14}{3}\n\\]", "\\frac{14}{3}"),
    ("$$\n42\n$$", "42"),
])
def test_courtesies_after_the_answer_and_display_blocks(response, expected):
    assert extract_answer(response) == expected


def test_a_long_run_of_spaces_before_a_unit_or_a_remark():
    """A degenerate response ("$5$", 100,000 spaces, "cm") took 58 s when two patterns rescanned the run of
    spaces from every position (extraction runs in the caller's process with no time limit); now milliseconds."""
    assert extract_answer("The answer is $5$" + " " * 100_000 + "cm") == "5\\text{ cm}"
    assert extract_answer("The answer is $5$" + " " * 100_000 + "(since 2 + 3 = 5)") == "5"


@pytest.mark.parametrize("response, correct", [("$\\boxed{\\mathbb{R}}$", True), ("The answer is \u211d.", True),
                                               ("$\\boxed{\\mathbb{R}^+}$", False)])
def test_the_real_line_written_as_a_set(verifier, response, correct):
    assert_graded(verifier, response, "(-\\infty,\\infty)", correct)


@pytest.mark.parametrize("response, reference, correct", [
    ("The solutions are $\\boxed{1}$ and $\\boxed{-2}$.", "1,-2", True),
    ("So $x = \\boxed{1}$ or $x = \\boxed{-2}$.", "-2, 1", True),
    ("The roots are \\(\\boxed{-2}\\) and \\(\\boxed{1}\\).", "1,-2", True),
    ("The primes are $\\boxed{3}$, $\\boxed{5}$, and $\\boxed{7}$.", "3, 5, 7", True),
    ("The primes are $\\boxed{3}$, $\\boxed{5}$, and $\\boxed{7}$.", "3, 5", False),
    ("It is \\boxed{1} or \\boxed{2}.", "1", False),  # two candidates for one answer: a list, never equal to it
    ("It is \\boxed{1} or \\boxed{2}.", "2", False),
])
def test_boxes_joined_in_one_run_are_one_list(verifier, response, reference, correct):
    assert_graded(verifier, response, reference, correct)


def test_degenerate_root_signs_and_box_gaps_do_not_crash_or_stall(verifier):
    """An empty root sign crashed the fast path (StopIteration in the caller's process); a long run of spaces
    between two boxes made the list joiner backtrack (seconds at 800 spaces, growing cubically)."""
    assert verifier.check("So the answer is $\\boxed{2\u221a()}$", "5").correct is False  # raised StopIteration
    assert extract_answer("\\boxed{1}," + " " * 5_000 + "q\\boxed{2}") is None


@pytest.mark.parametrize("response, reference, correct", [
    ("So there are 120 ways.\n\n## Final Answer\nThe number of ways is **120**.", "120", True),
    ("...\n**Final Answer**\nThe probability is $\\frac{1}{2}$.", "\\frac12", True),
    ("...\n## Final Answer\nThe number of ways is **121**.", "120", False),
    ("...\n## Final Answer\nThe value is 5 or 7.", "5", False),  # a hedge stays one
    ("...\n## Final Answer\nThe value is 5. Wait, no.", "5", False),
])
def test_a_final_answer_heading_then_a_sentence(verifier, response, reference, correct):
    assert_graded(verifier, response, reference, correct)


def test_a_long_chain_of_thought_is_read_after_its_thinking_and_up_to_a_million_characters(verifier):
    """A 300,000-character thinking block (a long CoT of about 75k tokens) once put the response over the
    200,000-character cap, so its answer was never read; the thinking is not parsed and does not count, and
    an untagged long CoT of 500,000 characters (128k tokens) is read too. Beyond the cap: no answer."""
    thinking = "<think>" + "Let me try another case. " * 12_000 + "</think>"
    assert len(thinking) > 200_000
    assert_graded(verifier, thinking + "\nThe answer is $\\boxed{204}$.", "204", True)
    untagged = "Let me try another case. " * 20_000 + "\nThe answer is $\\boxed{204}$."
    assert_graded(verifier, untagged, "204", True)
    assert extract_answer("x " * 500_001 + "\\boxed{204}") is None
