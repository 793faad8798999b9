"""Final-answer extraction from a model response, under a policy.

boxed: the \\boxed{} (or \\fbox{}) answer only. flexible: that, else the last answer line ("The answer is 9",
"**Answer:** $9$", "Final answer: 9"), else a closing "Final Answer" heading's sentence ("## Final Answer" then
"The number of ways is **120**."), else a last line that is only an expression ("$9$", "x = 5").
Boxes: an empty one ("put the answer in \\boxed{}") quotes the instruction, a box around a box is the inner
one, and several boxes are one answer when the verifier's fast path finds them equal in value ("\\boxed{0.5}"
then "\\boxed{\\frac12}"). An answer line gives its first math span (more spans only when joined to it by
"or", "and" or commas: "$n=1$ or $n=-2$"), or its words up to the end of the sentence or a reason
("6, since 2 * 3 = 6"); a unit may follow the answer.
A reasoning model is graded on what it writes after its thinking (grading.thinking): boxes inside
<think> ... </think> are drafts, and a response whose thinking never closes gave no answer.
Boxes in one run joined by commas, "and" or "or" ("$\\boxed{1}$ and $\\boxed{-2}$") are one list, never equal to
a single reference. Hack-prone responses extract nothing: under both policies, boxes that differ in value and
stand apart ("\\boxed{0.5}. ... Final: \\boxed{\\frac13}") and responses whose text after thinking goes beyond
MAX_RESPONSE_CHARACTERS (extraction must stay cheap: 0.2 s a million characters); under flexible, a last
answer line that guesses or takes its answer back ("Maybe the answer is $12\\pi$? That seems too small"),
which leaves only a final expression line.
"""

from __future__ import annotations

import re

from grading.thinking import after_thinking
from grading.verifier.delimiters import leading_math_span, math_spans, strip_math_delimiters

_BOX_OPENING = re.compile(r"\\(?:boxed|fbox)\s*\{")
_TEXT_OPENING = re.compile(r"\\(?:text|textbf|textit|mbox|texttt)\s*\{")
_CODE = re.compile(r"```.*?(?:```|$)|`[^`\n]*`", re.DOTALL)
# "Answer: 5", "**Final Answer:** 5", "The final answer is $5$.", "answer = 5"
_ANSWER_MARKER = re.compile(r"(?<![a-zA-Z])answer\b[*_\s]*(?:is\b[*_\s]*:?|:|=)[*_\s]*", re.IGNORECASE)
# A sentence ends at "." ";" or "?" before a space or the line's end ("3.5" and "5!" end none).
_SENTENCE_END = re.compile(r"[.;?](?=[\s*_]|$)")
# A reason after the answer ends it: "6, since 2 * 3 = 6", "$\\frac12$, which is 50%".
# (Anchored at the start of a run of spaces: unanchored, a long run of spaces was rescanned from every position.)
_REASON = re.compile(r",?(?<!\s)\s+(?:since|because|which|as|where|so|thus|hence|meaning|giving)\b", re.IGNORECASE)
# Words that doubt or take back an answer stated just before ("but that ignores the overlap").
_DOUBT = re.compile(r"\b(?:but|however|though|although|actually|wait|wrong|incorrect|mistake|instead|rather|"
                    r"seems?|maybe|perhaps|probably|unless|if)\b", re.IGNORECASE)
# Words before the answer marker that make its answer a guess ("My first guess for the answer is").
_TENTATIVE = re.compile(r"\b(?:maybe|perhaps|probably|guess|guessed|suppose|assume|assuming)\b"
                        r"|\b(?:I|we)\s+(?:\w+\s+)?thought\b", re.IGNORECASE)
# What may follow a math answer in its sentence: a unit of up to three words ("$5$ cm", "$36$ square units").
_UNIT = re.compile(r"[a-zA-Z]+(?:\s+[a-zA-Z]+){0,2}(?:\s*\^\s*\{?[23]\}?)?")
# Signs that belong to a math answer written just after it: "$50$%", "$5$°" ("$7$!" is an exclamation mark:
# a factorial would be inside the maths).
_ATTACHED_SIGN = re.compile(r"\\?%|°|\^\s*\{?\\circ\}?")
# A remark in brackets after the answer ("$7$ (since 3 + 4 = 7)", "$6$ (option C)"): left out, unless it hedges.
# (Both anchored at the start of a run of spaces: unanchored, a long run of spaces was rescanned from every position,
# 58 s for a response ending in 100,000 spaces and a unit.)
_REMARK = re.compile(r"(?<!\s)\s*\((?P<remark>[^()]*)\)\s*$")
_MINERVA_CLOSE = re.compile(r"(?<!\s)\s*I hope it is correct\W*$", re.IGNORECASE)
_NOT_A_UNIT = re.compile(r"\b(?:is|are|was|were|be|it|that|this|too|and|or|then|not)\b", re.IGNORECASE)
# Between math answers that form one list: ", " ", and " " or " " and ".
_JOINER = re.compile(r"\s*(?:,\s*(?:(?P<listed>and|or)\s+)?|(?P<word>and|or)\s+)", re.IGNORECASE)
# Between two boxes of one list: "$ and $", ", ", "\\) or \\(x = ".
_BOX_JOINER = re.compile(r"\s*(?:\$|\\\))?\s*(?:,\s*(?:and|or)?|and|or)\s*(?:\$|\\\()?\s*(?:[a-zA-Z]\s*=\s*)?",
                         re.IGNORECASE)
# A heading that announces the answer on the next line: "## Final Answer", "**Final Answer:**".
_FINAL_HEADING = re.compile(r"\s*(?:#{1,6}\s*)?[*_]*\s*final\s+answer\s*[*_]*\s*:?\s*[*_]*\s*", re.IGNORECASE)
_IS = re.compile(r"\b(?:is|are|equals)\b[*_\s]*:?[*_\s]*", re.IGNORECASE)
_MAX_BOX_GAP = 40  # characters between two boxes of one list (the joiner's pattern backtracks on long runs)
_MAX_BOX_FORMS = 8  # differently written boxes compared by value; more are a hedge (and bound the work)
# A last line counts as an expression when, outside LaTeX commands and \\text{}, no word of three letters is left
# and it does not open a sentence with a two-letter word ("So", the cut-off line of a truncated response).
_COMMANDS_AND_TEXT = re.compile(r"\\(?:text|mathrm|mbox|textbf)\s*\{[^{}]*\}|\\[a-zA-Z]+")
_WORD = re.compile(r"[a-zA-Z]{3,}|^[A-Z][a-z]\b")
_MAX_EXPRESSION_LINE = 200
# A last line that is cut off mid-step ("8-", "3+4=") or only arithmetic on numbers is no final answer.
_DANGLING_OPERATOR = re.compile(r"(?:[-+*/×÷=^]|\\(?:cdot|times|div))\s*$")
_NUMBERS_AND_OPERATORS = re.compile(r"[\d\s.,()+\-*/×÷=]+")
_SIMPLE_NUMBER = re.compile(r"\s*[-+]?\s*\d[\d,]*(?:\.\d+)?(?:\s*/\s*\d+)?\s*")
MAX_RESPONSE_CHARACTERS = 1_000_000  # a long CoT of 128k tokens without <think> tags is about 500k characters


def boxed_answers(text: str, inside_text_too: bool = False) -> list[str]:
    """Contents of every complete \\boxed{...} or \\fbox{...}, braces balanced, in order of opening.

    One pass with a stack of open braces. Escaped braces (\\{ and \\}) do not count. Boxes inside code
    (fenced blocks or `inline`) are never answers; boxes inside \\text{...} only with inside_text_too
    (printed text is not a claim, but a box hidden there still makes a disagreement).
    """
    text = _CODE.sub(" ", text)
    return [text[opening + 1:closing].strip() for _, opening, closing in _boxes(text, inside_text_too)]


def _boxes(text: str, inside_text_too: bool) -> list[tuple[int, int, int]]:
    """(start of the command, opening brace, closing brace) of every complete box, in order of opening."""
    box_commands = {match.end() - 1: match.start() for match in _BOX_OPENING.finditer(text)}
    text_braces = {match.end() - 1 for match in _TEXT_OPENING.finditer(text)}
    stack: list[int] = []  # positions of the open braces
    inside_text = 0  # open \text braces on the stack
    found: list[tuple[int, int, int]] = []
    position = 0
    while position < len(text):
        character = text[position]
        if character == "\\":
            position += 2
            continue
        if character == "{":
            stack.append(position)
            inside_text += position in text_braces
        elif character == "}" and stack:
            opening = stack.pop()
            inside_text -= opening in text_braces
            if opening in box_commands and (inside_text_too or not inside_text):
                found.append((box_commands[opening], opening, position))
        position += 1
    return sorted(found)


def last_boxed(text: str) -> str | None:
    """Content of the last complete \\boxed{...} or \\fbox{...}, braces balanced, or None."""
    answers = boxed_answers(text)
    return answers[-1] if answers else None


def _answer_boxes(text: str, inside_text_too: bool = False) -> list[str]:
    """Contents of the boxes that hold an answer, in order: not empty ("put it in \\boxed{}" quotes the
    instruction), and not only another box ("\\boxed{\\boxed{5}}" is the box 5, listed on its own)."""
    text = _CODE.sub(" ", text)
    boxes = _boxes(text, inside_text_too)
    whole_boxes = {(start, closing) for start, _, closing in boxes}
    answers = []
    for _, opening, closing in boxes:
        content = text[opening + 1:closing]
        first = opening + 1 + len(content) - len(content.lstrip())
        last = opening + len(content.rstrip())
        if content.strip() and (first, last) not in whole_boxes:
            answers.append(content.strip())
    return answers


def _single_boxed(text: str, final: str) -> str | None:
    """The final box when every box, also one inside \\text{}, holds its value; None when two differ (a hedge)."""
    forms = {_spacing_free(answer): answer for answer in _answer_boxes(text, inside_text_too=True)}
    forms.pop(_spacing_free(final), None)
    if len(forms) > _MAX_BOX_FORMS or not all(_same_value(form, final) for form in forms.values()):
        return None
    return final


def _joined_boxes(text: str) -> str | None:
    """'The roots are $\\boxed{1}$ and $\\boxed{-2}$' -> '1, -2': every box of the response, in one run joined by
    commas, "and" or "or" (each may restate its variable: '$x = \\boxed{1}$ or $x = \\boxed{-2}$'), is one list,
    which never equals a single reference; None otherwise (boxes apart from each other are drafts or a hedge)."""
    text = _CODE.sub(" ", text)
    boxes = _boxes(text, inside_text_too=True)
    gaps = [(closing + 1, start) for (_, _, closing), (start, _, _) in zip(boxes, boxes[1:])]
    if len(boxes) < 2 or not all(end - begin <= _MAX_BOX_GAP and _BOX_JOINER.fullmatch(text, begin, end)
                                 for begin, end in gaps):
        return None
    return ", ".join(text[opening + 1:closing].strip() for _, opening, closing in boxes)


def _same_value(answer: str, other: str) -> bool:
    """Whether the verifier's fast path finds the two answers equal (undecided counts as different)."""
    # Imported here: fast_compare loads mpmath, and the run config imports this module for the policy names only.
    from grading.verifier.fast_compare import structured_verdict

    return structured_verdict(answer, other) is True


def _spacing_free(answer: str) -> str:
    return re.sub(r"\s+|\\[,;:! ]", "", strip_math_delimiters(answer)).rstrip(".")


def _clean_answer_line(answer: str) -> str:
    """'$\\frac12$.' -> '\\frac12': trailing full stop, markdown emphasis and math delimiters removed."""
    answer = answer.strip().rstrip(".").strip().strip("*_").strip()
    return strip_math_delimiters(answer).rstrip(".").strip()


BOXED = "boxed"
FLEXIBLE = "flexible"
# The extraction policies a benchmark or a run may choose; FLEXIBLE is the default.
EXTRACTION_POLICIES = (FLEXIBLE, BOXED)


def check_policy(policy: str) -> str:
    if policy not in EXTRACTION_POLICIES:
        raise ValueError(f"extraction policy must be one of {', '.join(EXTRACTION_POLICIES)}, got {policy!r}")
    return policy


def _expression_line(response: str) -> str | None:
    """The last non-empty line when it is only an expression ("$9$", "x = 5", "\\frac{1}{2}.", "\\text{Monday}");
    a display block that closes the response ("\\[", "\\frac{14}{3}", "\\]" on lines of their own) is one line."""
    lines = _display_block_joined([line.strip() for line in response.splitlines() if line.strip()])
    if not lines or len(lines[-1]) > _MAX_EXPRESSION_LINE:
        return None
    if math_spans(lines[-1]) > 1:
        return None
    answer = _clean_answer_line(lines[-1])
    if not answer or not re.search(r"[\w\\]", answer):
        return None
    if _WORD.search(_COMMANDS_AND_TEXT.sub(" ", answer)) or _BOX_OPENING.search(answer):
        return None
    if _DANGLING_OPERATOR.search(answer) or _is_computation(answer):
        return None
    return answer


def _display_block_joined(lines: list[str]) -> list[str]:
    """The lines with a final display block whose delimiters stand on lines of their own joined into one line."""
    closer = {"\\]": "\\[", "$$": "$$"}.get(lines[-1]) if lines else None
    if closer is None:
        return lines
    for start in range(len(lines) - 2, -1, -1):
        line = lines[start]
        if line.endswith(closer) and line.count("$$") % 2 == (closer == "$$"):  # opens here, after any words
            words = line[:-len(closer)].strip()
            return lines[:start] + ([words] if words else []) + [" ".join([closer, *lines[start + 1:]])]
    return lines


def _is_computation(text: str) -> bool:
    """A line of numbers joined by operators ("8+5-7", "3+4=7", "7+5"): a step of the working, or the problem
    echoed, not a final answer (whose value it may well have: echoing "8+5-7" earned the reward for 6);
    a single number or fraction ("-7", "3/4") is an answer."""
    return (_NUMBERS_AND_OPERATORS.fullmatch(text) is not None and _SIMPLE_NUMBER.fullmatch(text) is None
            and re.search(r"[\d)]\s*[-+*/×÷=]", text) is not None)


def _answer_line(response: str) -> str | None:
    """The answer stated on the last line that has an answer marker, or None (see _stated_answer)."""
    for line in reversed(response.splitlines()):
        markers = list(_ANSWER_MARKER.finditer(line))
        if markers:  # the last marker: "Final Answer: The final answer is $025$."
            return _stated_answer(line[:markers[-1].start()], line[markers[-1].end():])
    return None


def _answer_under_heading(response: str) -> str | None:
    """The answer on the line that follows a closing "Final Answer" heading ("## Final Answer", "**Final
    Answer**"), when that line is the response's last: stated after its last "is" ("The number of ways is
    **120**."), else the line itself as an expression; None when there is no such heading."""
    lines = [line for line in response.splitlines() if line.strip()]
    if len(lines) < 2 or not _FINAL_HEADING.fullmatch(lines[-2]):
        return None
    statements = list(_IS.finditer(lines[-1]))
    if statements:
        return _stated_answer(lines[-1][:statements[-1].start()], lines[-1][statements[-1].end():])
    return _expression_line(lines[-1])


def _stated_answer(before: str, rest: str) -> str | None:
    """The answer in rest, the text after an answer marker: its first math span (with any joined to it by
    "or", "and" or commas, and a unit) or its words up to the end of the sentence or a reason.

    None when the answer is a guess ("Maybe the answer is"), is followed by a question mark, by prose in its
    sentence or by a doubt ("$\\frac{14}{3}$ but that ignores the overlap"), or when a later sentence on the
    line doubts it or gives another number ("Answer: $5$. Actually no, $7$.", "The answer is 5. No, 7.").
    """
    if _TENTATIVE.search(_SENTENCE_END.split(before)[-1]):
        return None
    if leading_math_span(rest) is not None:
        answer, end = _joined_math_spans(rest)
        tail = _MINERVA_CLOSE.sub("", rest[end:_answer_end(rest, end)]).strip(" *_")
        if sign := _ATTACHED_SIGN.match(tail):
            answer, tail = answer + sign.group(), tail[sign.end():].strip(" *_")
        tail = tail.removeprefix("!").strip(" *_")
        if remark := _REMARK.search(tail):
            if _DOUBT.search(remark.group("remark")) or re.search(r"\bor\b", remark.group("remark")):
                return None
            tail = tail[:remark.start()].strip(" *_")
        if tail and not _is_unit(tail):
            return None
        answer = f"{answer}\\text{{ {tail}}}" if tail else answer
    else:
        end = _answer_end(rest, 0)
        answer = rest[:end]
        if _DOUBT.search(answer) or math_spans(answer) > 1:  # "about $5$ or $7$": two candidates
            return None
    if _doubted_after(rest, end):
        return None
    return _clean_answer_line(answer) or None


def _joined_math_spans(rest: str) -> tuple[str, int]:
    """(answer, end) for the math spans at the start of rest: '$n=1$ or $n=-2$' -> 'n=1 \\text{ or } n=-2'."""
    answer, end = leading_math_span(rest)
    while (joiner := _JOINER.match(rest, end)) and (span := leading_math_span(rest, joiner.end())):
        word = joiner.group("listed") or joiner.group("word")
        answer += f" \\text{{ {word.lower()} }} " if word else ", "
        answer, end = answer + span[0], span[1]
    return answer, end


def _answer_end(rest: str, start: int) -> int:
    """Where the answer that starts at start ends: at the end of its sentence, a reason or the line."""
    ends = [match.start() for match in (_SENTENCE_END.search(rest, start), _REASON.search(rest, start)) if match]
    return min(ends, default=len(rest))


def _is_unit(text: str) -> bool:
    return bool(_UNIT.fullmatch(text)) and not _NOT_A_UNIT.search(text) and not _DOUBT.search(text)


def _doubted_after(rest: str, answer_end: int) -> bool:
    """Whether the text after an answer doubts it: a question mark ending its sentence, a doubting word in
    its sentence, or later on the line a doubting word or a "no" ("The answer is 5. No, 7."); a later check
    of the answer ("Let me double-check: 1+2=3. Yes.") does not."""
    sentence_end = _SENTENCE_END.search(rest, answer_end)
    if sentence_end is None:
        return bool(_DOUBT.search(rest[answer_end:]))
    later = rest[sentence_end.end():]
    return sentence_end.group() == "?" or bool(_DOUBT.search(rest[answer_end:sentence_end.start()])
                                                  or _later_doubt(later) or re.search(r"\bno\b", later, re.I))


def _later_doubt(text: str) -> bool:
    """Whether a sentence after the answer's doubts it; a courtesy whose only such word is "if", with no number or
    maths ("Let me know if you have any questions!"), does not."""
    for sentence in re.split(r"(?<=[.;?!])\s+", text):
        words = {match.group().lower() for match in _DOUBT.finditer(sentence)}
        if words and (words != {"if"} or re.search(r"[\d$\\=]", sentence)):
            return True
    return False


def extract_answer(response: str, policy: str = FLEXIBLE) -> str | None:
    """The final answer of a response under the policy (see the module docstring), or None."""
    check_policy(policy)
    response = after_thinking(response)
    if response is None or len(response) > MAX_RESPONSE_CHARACTERS:  # the thinking is never parsed: not counted
        return None
    boxes = _answer_boxes(response)
    if boxes:
        answer = _single_boxed(response, boxes[-1]) or _joined_boxes(response)
        return answer if answer and math_spans(answer) <= 1 else None
    if policy == BOXED:
        return None
    return _answer_line(response) or _answer_under_heading(response) or _expression_line(response)
