"""The functions Mirrorlab's lm-eval task YAMLs name with `!function`: records, prompt, filter, scoring.

Scoring is our runner's (evaluation/judges/math.py): the final answer is the last \\boxed{} (or answer line);
AIME answers are compared as integers ("033" == "33", judge_integer), other answers by value
(\\frac{1}{2} == 0.5). Under the stock lm_eval CLI the equivalence check runs in-process with no time limit
(is_equivalent: math_verify without SIGALRM, so any thread is fine); run_lm_eval_task installs a
time-limited MathVerifier with use_verifier() for its run.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator

from evaluation.benchmarks import BOXED_INSTRUCTION as CHAT_INSTRUCTION
from evaluation.datasets import BenchmarkProblem
from evaluation.datasets.math_benchmarks import BOXED_INSTRUCTION, aime_answer, number_answer
from grading.judgement import Judgement
from evaluation.judges.math import judge_equivalence, judge_integer
from evaluation.lm_eval_tasks.tasks import pass_at_k_values
from evaluation.scoring import pass_at_k
from grading.verifier import extract_answer, is_equivalent
from training.prompting import prompt_text

_verifier_lock = threading.Lock()
_verifier = None  # a MathVerifier while use_verifier() is active, else None: in-process is_equivalent


# ----------------------------------------------------------------------------- records (process_docs)

def _to_docs(dataset, record_to_doc) -> Any:
    """dataset.map to {problem_id, problem, answer} only; record_to_doc(record, index) -> that dict."""
    return dataset.map(record_to_doc, with_indices=True, remove_columns=dataset.column_names)


def process_aime24_docs(dataset):
    """AIME 2024: ids kept, answers "025" -> "25" (as load_aime24)."""
    return _to_docs(dataset, lambda record, index: {
        "problem_id": str(record["id"]), "problem": record["problem"],
        "answer": aime_answer(record["answer"], f"aime24 record {index}")})


def process_aime25_docs(dataset):
    """AIME 2025: problem_id is the 0-based position, the trailing \\boxed instruction removed (as load_aime25)."""
    def to_doc(record, index):
        prompt = record["prompt"]
        if prompt.endswith(BOXED_INSTRUCTION):
            prompt = prompt[: -len(BOXED_INSTRUCTION)]
        return {"problem_id": str(index), "problem": prompt,
                "answer": aime_answer(record["answer"], f"aime25 record {index}")}
    return _to_docs(dataset, to_doc)


def process_amc23_docs(dataset):
    """AMC 2023: answers stored as floats, 27.0 -> "27" (as load_amc23)."""
    return _to_docs(dataset, lambda record, index: {
        "problem_id": str(record["id"]), "problem": record["problem"],
        "answer": number_answer(record["answer"], f"amc23 record {index}")})


def process_math500_docs(dataset):
    """MATH-500: problem_id is the unique_id ("test/precalculus/807.json"), answers are LaTeX."""
    return _to_docs(dataset, lambda record, index: {
        "problem_id": record["unique_id"], "problem": record["problem"], "answer": record["answer"]})


# ----------------------------------------------------------------------------- prompt and filter

def doc_to_text(doc: dict) -> str:
    """The plain template of models without a chat template: "Problem: ...\\nSolution:" (as our runner)."""
    return prompt_text(doc["problem"])


def doc_to_chat_text(doc: dict) -> str:
    """The user turn for models with a chat template (lm-eval applies it): the problem, then the instruction."""
    return f"{doc['problem']}\n\n{CHAT_INSTRUCTION}"


def keep_all_samples(responses, docs):
    """Filter that keeps every one of a problem's `repeats` responses (lm-eval's default keeps the first)."""
    return responses


# ----------------------------------------------------------------------------- scoring

@contextmanager
def use_verifier(verifier) -> Iterator[None]:
    """Send equivalence checks to a MathVerifier (time-limited worker processes) inside the block.

    Process-wide: one lm-eval run at a time per process may install a verifier.
    """
    global _verifier
    if not _verifier_lock.acquire(blocking=False):
        raise RuntimeError("another lm-eval run of this process is already using a verifier")
    _verifier = verifier
    try:
        yield
    finally:
        _verifier = None
        _verifier_lock.release()


def judge_responses(responses: list[str], reference: str, answer_kind: str) -> list[Judgement]:
    """One Judgement per response, as our runner judges: "integer" (AIME) or "math" (equivalence by value)."""
    pairs = [(BenchmarkProblem(problem_id="", prompt="", answer=reference), response) for response in responses]
    if answer_kind == "integer":
        return judge_integer(pairs)
    if answer_kind != "math":
        raise ValueError(f"answer_kind must be 'integer' or 'math', got {answer_kind!r}")
    verifier = _verifier
    if verifier is not None:
        return judge_equivalence(pairs, verifier)
    judgements = []
    for response in responses:
        extracted = extract_answer(response)
        judgements.append(Judgement(is_equivalent(extracted, reference), extracted or ""))
    return judgements


def pass_at_k_metrics(judgements: list[Judgement]) -> dict[str, float]:
    """pass@k of one problem for every k reported (pass@1 is the fraction of correct samples)."""
    n, correct = len(judgements), sum(judgement.correct for judgement in judgements)
    return {f"pass@{k}": pass_at_k(n, correct, k) for k in pass_at_k_values(n)}


def _responses(results: list) -> list[str]:
    """The problem's responses: lm-eval passes [filtered] = [[response, ...]] with the keep-all filter."""
    (responses,) = results
    return [responses] if isinstance(responses, str) else list(responses)


def process_integer_results(doc: dict, results: list) -> dict[str, float]:
    """pass@k metrics of one AIME-style problem: answers compared as integers."""
    return pass_at_k_metrics(judge_responses(_responses(results), doc["answer"], "integer"))


def process_math_results(doc: dict, results: list) -> dict[str, float]:
    """pass@k metrics of one problem: answers compared by value with grading.verifier."""
    return pass_at_k_metrics(judge_responses(_responses(results), doc["answer"], "math"))
