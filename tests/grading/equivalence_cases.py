"""Answer-equivalence cases: (category, reference, predicted, equal), the verdicts a careful human grader gives.

Written for this project (issue 15), not copied from another suite. Both sides are bare final answers (what
extraction returns), never whole responses. A verdict is about value, not form: "\\sqrt{8}" equals
"2\\sqrt{2}" and "x^2+2x+1" equals "(x+1)^2" even though a question asking to simplify or to factor would
want one form; form requirements belong to the question, not to the equivalence check.

Rules for the contested conventions (cases that no rule settles clearly are left out):

- Thousands separators: a comma, a space, "\\," "\\!" or "{,}" between digit groups is a thousands separator
  when every group after the first has exactly three digits ("1,000", "12 345", "1{,}000,000").
- Decimal comma: never read. A comma between digits that is not a thousands separator separates list items,
  so "3,5" is the list 3, 5: it equals "3, 5" and does not equal 3.5. "1.000" is one (a decimal point), so
  it does not equal "1,000". ("3{,}5" is left out: LaTeX writes both separators that way.)
- Percent: "\\%" and "%" are the same sign. The sign may be dropped (it is a unit) or read as 1/100, and
  either reading that matches counts: reference "50\\%" accepts "50", "50%", "0.5" and "1/2"; reference "0.5"
  accepts "50%"; but reference "50" rejects "0.5" and reference "0.5" rejects "50".
- Units and currency: a unit word, "\\text{ cm}", "\\mathrm{cm}", "\\$", "dollars", "^\\circ" may be dropped
  from either side; the number must still match ("\\$18.90" == "18.9" != "1890"). Unit conversions
  ("5 m" vs "500 cm") are left out.
- Degrees and radians: "90^\\circ" equals "90"; no conversion between degrees and radians is assumed, and
  cases that would need one ("\\frac{\\pi}{2}" vs "90^\\circ") are left out.
- Rounding: a decimal equals an exact reference only when it is exactly that value ("0.125" == "\\frac18",
  "2.50" == "2.5"). Approximations are unequal: "0.333" != "\\frac13", "3.14" != "\\pi",
  "1.414" != "\\sqrt2", and two different exact values are unequal however close ("0.5000001" != "\\frac12",
  2^{100}+1 != 2^{100}). Long approximations (ten or more digits), which some graders accept, are left out.
- Mixed numbers: an integer written directly before a fraction is a mixed number: "2\\frac{1}{2}" is 5/2,
  not 1.
- Lists: a bare comma list of answers ("1, 2", "x=1, x=2") is unordered, like a set; a parenthesised tuple
  "(1, 2)" is ordered. "(1, 3)" with a reference interval is read as the open interval.
- Equations: "x = 5" equals "5" and "y = 2x+1" equals "2x+1" (a variable named on one side may be dropped).
- Notation: "oo" (sympy), "\u221e" and "+\\infty" are "\\infty"; "1.5e3" is 1500; "\u2212" is a minus sign.
- Text answers: "\\text{...}", "\\textbf{...}" and surrounding parentheses around a choice letter may be
  dropped; case does not matter for words ("monday" == "\\text{Monday}").
"""

from __future__ import annotations

from typing import NamedTuple


class EquivalenceCase(NamedTuple):
    """One graded pair: is_equivalent(predicted, reference) should return equal."""

    category: str
    reference: str
    predicted: str
    equal: bool


def _cases(category: str, reference: str, same: tuple[str, ...] = (),
           different: tuple[str, ...] = ()) -> list[EquivalenceCase]:
    """The equal cases (same) then the unequal ones (different) for one reference."""
    return ([EquivalenceCase(category, reference, predicted, True) for predicted in same]
            + [EquivalenceCase(category, reference, predicted, False) for predicted in different])


CASES: list[EquivalenceCase] = [
    # Integers, thousands separators, signs and leading zeros.
    *_cases("integers", "1000", same=("1,000", "1 000", "1{,}000", "1\\,000", "1\\!000", "1000.0", "01000"),
            different=("100", "10000", "1.000", "1,0000")),
    *_cases("integers", "1000000", same=("1,000,000", "1{,}000{,}000", "1\\,000\\,000", "10^6"),
            different=("100000", "1,000,00")),
    *_cases("integers", "12345", same=("12,345", "12\\,345"), different=("12.345", "1234")),
    *_cases("integers", "25", same=("025", "+25", "\\mathbf{25}"), different=("-25", "52", "2.5")),
    *_cases("integers", "-7", same=("-7.0", "\u22127", "-(7)"), different=("7", "-1")),
    *_cases("integers", "12", different=("1.2", "120", "21")),

    # Decimal comma: never read; a non-thousands comma separates list items.
    *_cases("decimal_comma", "3, 5", same=("3,5", "5, 3", "\\{3, 5\\}"), different=("3.5", "35")),
    *_cases("decimal_comma", "3.5", same=("\\frac{7}{2}", "3.50"), different=("3,5", "35")),
    *_cases("decimal_comma", "1500", same=("1,500",), different=("1.5", "1.500", "15,00")),
    *_cases("decimal_comma", "1.5", same=("\\frac32", "1.500"), different=("1,500", "1,5")),

    # Decimals and rounding: exact values only.
    *_cases("decimals", "\\frac{1}{8}", same=("0.125", "1/8", ".125"), different=("0.13", "0.12", "8")),
    *_cases("decimals", "2.5", same=("2.50", "5/2", "\\frac{5}{2}"), different=("2.05", "25")),
    *_cases("decimals", "\\frac{1}{3}", same=("\\frac{2}{6}", "1/3"), different=("0.333", "0.33", "3")),
    *_cases("decimals", "0.1", same=("\\frac{1}{10}", "0.10", "1/10"), different=("0.01", "1")),
    *_cases("decimals", "\\frac{14}{3}", same=("4\\frac{2}{3}",), different=("4.67", "4.6", "4\\frac{1}{3}")),
    *_cases("decimals", "-0.75", same=("-\\frac{3}{4}", "-3/4"), different=("0.75", "-0.57")),

    # Percentages: the sign is a droppable unit or a factor of 1/100.
    *_cases("percent", "50\\%", same=("50%", "50", "0.5", "\\frac{1}{2}", "50\\ \\%"),
            different=("5%", "0.05", "500", "5")),
    *_cases("percent", "12.5\\%", same=("12.5%", "12.5", "0.125"), different=("1.25%", "125")),
    *_cases("percent", "0.5", same=("50\\%", "\\frac12"), different=("50", "5%")),
    *_cases("percent", "10", same=("10\\%", "10%"), different=("0.1", "100", "1%")),

    # Units and currency.
    *_cases("units", "5", same=("5\\text{ cm}", "5\\,\\mathrm{cm}", "5 \\text{cm}^2", "5\\text{ inches}",
                                 "5 dollars", "\\$5", "\\$5.00", "5\\text{ hours}", "5 \\mbox{ meters}"),
            different=("6\\text{ cm}", "\\$50", "0.5\\text{ cm}", "55")),
    *_cases("units", "18.90", same=("\\$18.90", "\\$18.9", "18.9", "18.90\\text{ dollars}"),
            different=("1890", "\\$18.09", "\\$19.80")),
    *_cases("units", "\\$18.90", same=("18.90", "\\$ 18.90"), different=("\\$1890", "18")),
    *_cases("units", "36 \\text{ square units}", same=("36",), different=("6",)),
    *_cases("units", "4\\text{ cm}", same=("4",), different=("40", "\\frac{1}{4}")),

    # Degrees (no degree/radian conversion).
    *_cases("degrees", "90^\\circ", same=("90", "90^{\\circ}", "90\u00b0", "90 \\text{ degrees}", "90^\\circ."),
            different=("9", "45^\\circ", "180", "-90^\\circ")),
    *_cases("degrees", "30", same=("30^\\circ", "30^{\\circ}"), different=("60^\\circ", "3")),
    *_cases("degrees", "112.5^\\circ", same=("112.5", "\\frac{225}{2}^\\circ"), different=("112", "67.5^\\circ")),
    *_cases("degrees", "60^\\circ", different=("60^\\circ, 120^\\circ",)),

    # Fractions.
    *_cases("fractions", "\\frac{14}{3}", same=("\\dfrac{14}{3}", "\\tfrac{14}{3}", "14/3", "\\frac{28}{6}",
                                               "{14}/{3}", "\\frac{14}3"),
            different=("\\frac{3}{14}", "14", "\\frac{14}{5}", "143")),
    *_cases("fractions", "\\frac12", same=("\\frac{1}{2}", "1/2", "0.5", "\\dfrac12"),
            different=("2", "12", "\\frac21")),
    *_cases("fractions", "\\frac{3}{4}", same=("\\frac{6}{8}", "0.75", "3/4"),
            different=("\\frac{4}{3}", "\\frac{3}{5}")),
    *_cases("fractions", "-\\frac{2}{5}", same=("\\frac{-2}{5}", "\\frac{2}{-5}", "-0.4", "-2/5"),
            different=("\\frac{2}{5}", "-\\frac{5}{2}")),
    *_cases("fractions", "2", different=("1/2", "\\frac{1}{2}")),

    # Mixed numbers.
    *_cases("mixed_numbers", "\\frac{5}{2}", same=("2\\frac{1}{2}", "2 \\frac{1}{2}", "2\\tfrac12", "2\\frac12"),
            different=("1", "2\\frac{1}{3}", "\\frac{1}{2}")),
    *_cases("mixed_numbers", "3\\frac{3}{4}", same=("\\frac{15}{4}", "3.75", "15/4"),
            different=("\\frac{9}{4}", "3.34")),
    *_cases("mixed_numbers", "-\\frac{7}{3}", same=("-2\\frac{1}{3}",), different=("-\\frac{2}{3}", "2\\frac{1}{3}")),

    # Scientific notation.
    *_cases("scientific", "1500", same=("1.5 \\times 10^{3}", "1.5e3", "1.5\\cdot10^3", "15 \\times 10^2", "1.5E3"),
            different=("1.5 \\times 10^{4}", "1.5e4", "150", "15^3")),
    *_cases("scientific", "0.0015", same=("1.5 \\times 10^{-3}", "1.5e-3"), different=("1.5 \\times 10^{3}", "0.015")),
    *_cases("scientific", "3 \\times 10^{8}", same=("300000000", "300,000,000", "3e8"),
            different=("3 \\times 10^{9}", "38")),

    # Intervals and unions.
    *_cases("intervals", "[1,3)", same=("[1, 3)", "\\left[1, 3\\right)", "x \\in [1,3)", "1 \\le x < 3"),
            different=("(1,3)", "[1,3]", "(1,3]", "[1,2)", "[3,1)")),
    *_cases("intervals", "(-\\infty, 2] \\cup [3, \\infty)",
            same=("(-\\infty,2]\\cup[3,\\infty)", "[3, \\infty) \\cup (-\\infty, 2]",
                  "(-\\infty, 2] \\cup [3, +\\infty)",
                  "\\left(-\\infty, 2\\right] \\cup \\left[3, \\infty\\right)"),
            different=("(-\\infty, 2) \\cup [3, \\infty)", "(-\\infty, 2] \\cap [3, \\infty)", "[2, 3]",
                       "(-\\infty, 3] \\cup [2, \\infty)")),
    *_cases("intervals", "[-2,7]", same=("x \\in [-2,7]", "-2 \\le x \\le 7", "[-2, 7]"),
            different=("(-2,7)", "[-7,2]")),
    *_cases("intervals", "(0, \\infty)", same=("(0,\\infty)", "x > 0"), different=("[0, \\infty)", "(-\\infty, 0)")),

    # Sets: order-free.
    *_cases("sets", "\\{1,2,3\\}",
            same=("\\{3,2,1\\}", "\\{1, 2, 3\\}", "\\left\\{ 2, 1, 3 \\right\\}", "1, 2, 3", "3,1,2"),
            different=("\\{1,2\\}", "\\{1,2,3,4\\}", "\\{1,2,4\\}", "\\{0,1,2\\}")),
    *_cases("sets", "\\{1,2\\}", same=("\\{2, 1\\}", "\\{ 1 , 2 \\}"), different=("\\{1\\}", "\\{-1,-2\\}")),
    *_cases("sets", "\\{-1, \\frac{1}{2}\\}", same=("\\{\\frac12, -1\\}", "\\{0.5, -1\\}"),
            different=("\\{1, \\frac{1}{2}\\}", "\\{-1, 2\\}")),

    # Tuples: ordered.
    *_cases("tuples", "(1,2)", same=("(1, 2)", "\\left( 1, 2 \\right)", "(1.0, 2)", "\\left(1,2\\right)"),
            different=("(2,1)", "(1,2,3)", "(1,-2)", "(2, 2)")),
    *_cases("tuples", "(3, \\frac{\\pi}{2})",
            same=("\\left( 3, \\frac{\\pi}{2} \\right)", "(3, \\pi/2)", "(3,\\tfrac{\\pi}{2})"),
            different=("(\\frac{\\pi}{2}, 3)", "(3, \\pi)", "(3, \\frac{\\pi}{4})")),
    *_cases("tuples", "(-1, 0, 4)", same=("(-1,0,4)", "(-1, 0.0, 4)"),
            different=("(4, 0, -1)", "(-1, 4)", "(1, 0, 4)")),

    # Matrices and column vectors.
    *_cases("matrices", "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
            same=("\\begin{bmatrix} 1 & 2 \\\\ 3 & 4 \\end{bmatrix}", "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}",
                  "\\begin{pmatrix} 1 & 2.0 \\\\ \\frac{6}{2} & 4 \\end{pmatrix}"),
            different=("\\begin{pmatrix} 1 & 3 \\\\ 2 & 4 \\end{pmatrix}",
                       "\\begin{pmatrix} 1 & 2 \\\\ 3 & 5 \\end{pmatrix}",
                       "\\begin{pmatrix} 4 & 3 \\\\ 2 & 1 \\end{pmatrix}")),
    *_cases("matrices", "\\begin{pmatrix} \\frac{1}{2} \\\\ -3 \\end{pmatrix}",
            same=("\\begin{pmatrix} 1/2 \\\\ -3 \\end{pmatrix}", "\\begin{pmatrix} 0.5 \\\\ -3 \\end{pmatrix}"),
            different=("\\begin{pmatrix} -3 \\\\ \\frac{1}{2} \\end{pmatrix}",
                       "\\begin{pmatrix} \\frac{1}{2} \\\\ 3 \\end{pmatrix}")),

    # Equations.
    *_cases("equations", "5", same=("x=5", "x = 5", "n=5"), different=("x=6", "x=-5")),
    *_cases("equations", "x=5", same=("5", "x = 5.0"), different=("x=50", "-5")),
    *_cases("equations", "y = 2x+1", same=("2x+1", "y=1+2x", "y = 2x + 1"), different=("y=2x-1", "2x", "y=x+1")),
    *_cases("equations", "2x+1", same=("y=2x+1",), different=("2x+2",)),
    *_cases("equations", "x + y = 5", same=("y = 5 - x", "x+y=5"), different=("x + y = 6", "x - y = 5")),
    *_cases("equations", "2x+1", same=("f(x) = 2x + 1",), different=("f(x) = 2x - 1",)),

    # Several roots: an unordered list.
    *_cases("roots", "1, 2",
            same=("x=1, x=2", "2, 1", "x = 2, x = 1", "\\{1, 2\\}", "1 \\text{ and } 2", "x=1 \\text{ or } x=2"),
            different=("1", "1, 2, 3", "1, -2", "x=1", "12")),
    *_cases("roots", "3, 5, 7", same=("7, 5, 3", "3,5,7", "5, 3, 7"), different=("3, 5", "3, 5, 8", "357")),
    *_cases("roots", "-2, \\frac{1}{3}", same=("\\frac13, -2", "x=-2, x=\\frac{1}{3}"),
            different=("2, \\frac{1}{3}", "-2, 3")),
    *_cases("roots", "\\pm 3", same=("3, -3", "-3, 3", "x = \\pm 3"), different=("3", "\\pm 9")),

    # Precision: large exact values and tiny differences that a float tolerance would hide.
    *_cases("precision", "2^{100}",
            same=("1267650600228229401496703205376", "1{,}267{,}650{,}600{,}228{,}229{,}401{,}496{,}703{,}205{,}376"),
            different=("1267650600228229401496703205377", "1267650600228229401496703205000")),
    *_cases("precision", "0", same=("0.0", "-0", "\\frac{0}{5}"), different=("10^{-9}", "1e-7", "\\frac{1}{1000000}")),
    *_cases("precision", "\\frac{1}{2}", same=("0.50000",), different=("0.5000001", "0.500001")),
    *_cases("precision", "1000000", same=("10^{6}",), different=("1000001", "999999.9")),
    *_cases("precision", "1", same=("1.000",), different=("1.0001", "0.9999")),
    *_cases("precision", "\\sqrt{2}", different=("1.4142",)),
    *_cases("precision", "\\pi", different=("3.1416",)),
    *_cases("precision", "1024", same=("2^{10}", "4^5"), different=("2^{11}", "1023")),

    # Infinity.
    *_cases("infinity", "\\infty", same=("+\\infty", "oo", "\u221e", "\\infty."),
            different=("-\\infty", "0", "10^{100}")),
    *_cases("infinity", "-\\infty", same=("-oo", "-\u221e"), different=("\\infty", "-1")),

    # Complex numbers.
    *_cases("complex", "3+4i", same=("4i+3", "3 + 4i", "3+4\\cdot i", "i \\cdot 4 + 3"),
            different=("3-4i", "4+3i", "3+4", "7i")),
    *_cases("complex", "-i", same=("-1i", "0 - i"), different=("i", "-1")),
    *_cases("complex", "\\frac{1}{2} - \\frac{\\sqrt{3}}{2}i",
            same=("\\frac{1 - \\sqrt{3} i}{2}", "0.5 - \\frac{\\sqrt3}{2} i"),
            different=("\\frac{1}{2} + \\frac{\\sqrt{3}}{2}i", "\\frac{\\sqrt{3}}{2} - \\frac{1}{2}i")),

    # Text answers.
    *_cases("text", "\\text{Monday}", same=("Monday", "\\text{ Monday}", "\\textbf{Monday}", "monday"),
            different=("\\text{Tuesday}", "Sunday")),
    *_cases("text", "\\text{(A)}", same=("A", "(A)", "\\text{A}", "\\textbf{(A)}"),
            different=("B", "(D)", "\\text{(C)}")),
    *_cases("text", "\\text{Evelyn}", same=("Evelyn", "\\text{evelyn}"), different=("\\text{Emily}", "Eve")),
    *_cases("text", "\\text{even}", same=("even", "\\textbf{even}"), different=("odd", "\\text{neither}")),
    *_cases("text", "C", same=("\\text{C}", "(C)"), different=("\\text{(E)}", "D")),
    *_cases("text", "\\text{yes}", same=("Yes", "\\text{Yes}", "\\textbf{yes}"), different=("\\text{no}", "No")),
    *_cases("text", "\\text{Devon}", same=("Devon",), different=("\\text{Devon and Evelyn}", "\\text{Evelyn}")),

    # LaTeX spacing, delimiters and decoration.
    *_cases("latex_format", "\\frac{1}{2}",
            same=("$\\frac{1}{2}$", "\\(\\frac12\\)", "\\[ \\frac{1}{2} \\]", "$$\\frac{1}{2}$$",
                  "\\displaystyle\\frac{1}{2}", "\\frac{1}{2}.", "{\\frac{1}{2}}"),
            different=("$\\frac{1}{3}$", "\\(2\\)")),
    *_cases("latex_format", "(1,2)", same=("\\left( 1 , 2 \\right)", "(1,\\!2)", "( 1 ,\\; 2 )", "(1,\\quad 2)"),
            different=("\\left[ 1, 2 \\right)", "\\left( 2, 1 \\right)")),
    *_cases("latex_format", "x+1", same=("x \\, + \\, 1", "x~+~1", "1+x"), different=("x \\, - \\, 1", "x")),
    *_cases("latex_format", "-5", same=("$-5$", "\\(-5\\)", "\u22125", "-5."),
            different=("$5$", "\\( 5 \\)", "\\left( -5 \\right)^2", "$-5.5$")),
    *_cases("latex_format", "6", same=("\\text{6}", "{6}", "\\mathrm{6}"),
            different=("\\text{7}", "{60}", "\\mathrm{9}", "{6}^{2}")),

    # Expressions.
    *_cases("expressions", "x^2+2x+1", same=("(x+1)^2", "x^{2} + 2x + 1", "1 + 2x + x^2", "(1+x)(x+1)"),
            different=("(x-1)^2", "x^2+1", "x^2+2x")),
    *_cases("expressions", "x^2", same=("x\\cdot x", "x^{2}", "x*x"), different=("x^3", "2x", "x^{-2}")),
    *_cases("expressions", "p - q", same=("-q + p", "p-q", "-(q-p)"), different=("q - p", "p + q", "pq")),
    *_cases("expressions", "2(x+1)", same=("2x+2", "2 x + 2", "2(1+x)"), different=("2x+1", "x+2")),
    *_cases("expressions", "\\frac{a}{b}", same=("a/b", "\\dfrac{a}{b}", "a b^{-1}"), different=("\\frac{b}{a}", "ab")),
    *_cases("expressions", "3n^2 - n", same=("n(3n-1)", "-n + 3n^2"), different=("3n^2 + n", "n(3n+1)")),
    *_cases("expressions", "x^2 - y^2", same=("(x-y)(x+y)", "-(y^2 - x^2)"),
            different=("(x-y)^2", "y^2 - x^2", "x^2 + y^2")),
    *_cases("expressions", "2x", same=("x+x", "2 x", "x \\cdot 2"), different=("2y", "x^2", "2+x")),
    *_cases("expressions", "\\frac{x+1}{x-1}", same=("\\frac{-x-1}{1-x}", "(x+1)/(x-1)"),
            different=("\\frac{x-1}{x+1}", "\\frac{x+1}{x}")),
    *_cases("expressions", "3", same=("\\log_2 8", "\\frac{\\sqrt{9}\\cdot 2}{2}"),
            different=("\\log_2 9", "\\log_3 8")),

    # Radicals.
    *_cases("radicals", "2\\sqrt{2}", same=("\\sqrt{8}", "2 \\sqrt 2", "\\sqrt{2}\\cdot 2", "2\\sqrt2"),
            different=("\\sqrt{2}", "2\\sqrt{3}", "4", "\\sqrt{6}", "2.83")),
    *_cases("radicals", "11\\sqrt2", same=("11\\sqrt{2}", "\\sqrt{242}"),
            different=("11\\sqrt{3}", "11", "\\sqrt{22}")),
    *_cases("radicals", "\\frac{\\sqrt{2}}{2}",
            same=("\\sqrt{2}/2", "\\frac{1}{\\sqrt{2}}", "\\frac{\\sqrt2}2", "\\sqrt{\\frac{1}{2}}"),
            different=("\\frac{\\sqrt{3}}{2}", "\\frac{1}{2}", "1.414", "\\sqrt{2}")),
    *_cases("radicals", "2", same=("\\sqrt[3]{8}", "\\sqrt{4}"), different=("\\sqrt{2}", "\\sqrt[3]{2}")),
    *_cases("radicals", "\\sqrt{2}", different=("1.414", "1.41")),
    *_cases("radicals", "3 + 2\\sqrt{5}", same=("2\\sqrt5+3", "3 + \\sqrt{20}"),
            different=("3 - 2\\sqrt{5}", "5\\sqrt{5}")),
    *_cases("radicals", "\\frac{\\sqrt{3}}{3}", same=("\\frac{1}{\\sqrt{3}}", "\\frac{\\sqrt3}{3}"),
            different=("\\frac{\\sqrt{3}}{2}", "\\sqrt{3}")),

    # Pi expressions.
    *_cases("pi", "\\frac{\\pi}{2}", same=("\\pi/2", "\\frac12\\pi", "0.5\\pi", "\\frac{1}{2}\\pi", "\\dfrac{\\pi}{2}"),
            different=("\\frac{\\pi}{3}", "\\frac{2}{\\pi}", "1.57", "\\pi")),
    *_cases("pi", "2\\pi", same=("2 \\pi", "\\pi \\cdot 2", "\\pi+\\pi"), different=("2", "\\pi^2", "6.28")),
    *_cases("pi", "\\pi", same=("\\pi.",), different=("3.14", "3.14159", "\\frac{22}{7}")),
    *_cases("pi", "36\\pi", same=("36 \\pi", "\\pi \\cdot 36"), different=("36", "6\\pi", "113.1")),
    *_cases("pi", "\\frac{4}{3}\\pi r^3", same=("\\frac{4\\pi r^3}{3}", "4\\pi r^3/3"),
            different=("\\frac{4}{3}\\pi r^2", "4\\pi r^2")),
]
