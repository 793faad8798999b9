"""Benchmark scoring: pass@k, Pass@1 averaged, maj@k, bootstrap intervals and accuracy by length (numpy only)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np

# Upper bound on the (resamples, problems) index block drawn at once, so large benchmarks stay within memory.
_BOOTSTRAP_BLOCK_ELEMENTS = 4_000_000


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one problem with n samples, c of them correct: 1 - C(n-c, k) / C(n, k) (Chen et al. 2021)."""
    for name, value in (("n", n), ("c", c)):
        if value < 0:
            raise ValueError(f"{name} must be non-negative, got {value}")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if c > n:
        raise ValueError(f"c={c} correct samples exceed the n={n} samples")
    if k > n:
        raise ValueError(f"k={k} exceeds the n={n} samples")
    if n - c < k:
        return 1.0
    # C(n-c, k) / C(n, k) = prod_{i=n-c+1..n} (1 - k/i): no large binomials.
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def _check_problems(correct: Sequence[Sequence[bool]]) -> None:
    """Refuse an empty benchmark or a problem without samples."""
    if len(correct) == 0:
        raise ValueError("correct holds no problems")
    for index, samples in enumerate(correct):
        if len(samples) == 0:
            raise ValueError(f"correct[{index}] holds no samples")


def mean_pass_at_k(correct: Sequence[Sequence[bool]], k: int) -> float:
    """Mean over problems of pass@k; correct is (problems, samples) with each problem its own sample count."""
    _check_problems(correct)
    return float(np.mean([pass_at_k(len(samples), int(sum(samples)), k) for samples in correct]))


def per_problem_accuracy(correct: Sequence[Sequence[bool]]) -> list[float]:
    """Fraction of each problem's samples that are correct: (problems,) in 0 to 1."""
    _check_problems(correct)
    return [float(np.mean(np.asarray(samples, dtype=float))) for samples in correct]


def pass_at_1_averaged(correct: Sequence[Sequence[bool]]) -> float:
    """Pass@1 averaged over n samples: mean over problems of each problem's fraction of correct samples."""
    return float(np.mean(per_problem_accuracy(correct)))


_CORRECT = ("the reference answer",)  # the vote class of every correct sample (a tuple: never an answer string)
_OPTION_LETTER = re.compile(r"\(?([A-Za-z])\)?\.?")
_THOUSANDS = re.compile(r"[-+]?\d{1,3}(,\d{3})+(\.\d*)?")  # 12,345.6: commas that group digits, not a list


def vote_key(answer: str | None, correct: bool) -> Hashable | None:
    """The class a sample votes for: one class for all correct samples (the grader found each equal to the
    reference, however it is written: "025" and "25.0" for 25; a judge may find one correct that the rule
    extracted nothing from), wrong ones by their answer with spaces and dollar signs dropped, option letters
    and numbers in one form ("1,000" is 1000, the list "1,2" stays a list); None (no vote) for a wrong sample
    with nothing extracted."""
    if correct:
        return _CORRECT
    if answer is None:
        return None
    text = re.sub(r"\s+", "", answer).strip("$")
    letter = _OPTION_LETTER.fullmatch(text)
    if letter:
        return letter.group(1).upper()
    try:
        number = float(text.replace(",", "") if _THOUSANDS.fullmatch(text) else text)
    except ValueError:
        return text
    return f"{number:.12g}" if math.isfinite(number) else text


def merged_vote_keys(keys: Sequence[Hashable | None], answers: Sequence[str | None],
                     same_answer: Callable[[str, str], bool] | None,
                     value_key: Callable[[str], Hashable | None] | None = None) -> list[Hashable | None]:
    """The keys with wrong answers of one value in one class, as every correct sample is in one: answers with
    one value_key (a number's exact value) join at once; an answer with none, or a new value, joins the first
    earlier class whose first answer `same_answer` finds equal to it ("0.5", "1/2" and "\\frac{1}{2}" vote
    together); without same_answer the keys as they are. Pairs are compared only where a value key is missing
    on one side, so numeric answers cost no comparisons."""
    if same_answer is None:
        return list(keys)
    merged: list[Hashable | None] = []
    class_of: dict[Hashable, Hashable] = {}  # a key seen (or ("value", v)) -> the key of the class it joined
    classes: list[tuple[Hashable, str, bool]] = []  # (class key, its first answer, whether it has a value key)
    for key, answer in zip(keys, answers):
        if key is None or key == _CORRECT or answer is None:
            merged.append(key)
            continue
        if key not in class_of:
            value = value_key(answer) if value_key is not None else None
            known = class_of.get(("value", value)) if value is not None else None
            if known is None:
                known = next((class_key for class_key, first, valued in classes
                              if not (valued and value is not None) and same_answer(answer, first)), key)
                if known == key:
                    classes.append((key, answer, value is not None))
            class_of[key] = known
            if value is not None:
                class_of.setdefault(("value", value), known)
        merged.append(class_of[key])
    return merged


def _majority_index(keys: Sequence[Hashable | None]) -> int | None:
    """Index of the first sample of the most common non-None key; ties go to the first to reach the top count."""
    counts: dict[Hashable, int] = {}
    first_index: dict[Hashable, int] = {}
    best_key, best_count = None, 0
    for index, key in enumerate(keys):
        if key is None:
            continue
        counts[key] = counts.get(key, 0) + 1
        first_index.setdefault(key, index)
        if counts[key] > best_count:  # strictly greater: a key that only ties never takes over
            best_key, best_count = key, counts[key]
    return None if best_key is None else first_index[best_key]


def majority_vote_accuracy(answers: Sequence[Sequence[str | None]], correct: Sequence[Sequence[bool]],
                           k: int | None = None, same_answer: Callable[[str, str], bool] | None = None,
                           value_key: Callable[[str], Hashable | None] | None = None) -> float:
    """maj@k over problems: answers and correct are (problems, samples); k=None votes over all samples.

    Samples vote by vote_key: every correct sample for the reference, wrong ones by their (normalised) answer,
    merged by value with same_answer (merged_vote_keys); the problem counts as right when the reference wins.
    A problem where none of the first k samples votes (all wrong, nothing extracted) counts as wrong.
    """
    _check_problems(correct)
    if len(answers) != len(correct):
        raise ValueError(f"answers holds {len(answers)} problems but correct holds {len(correct)}")
    if k is not None and k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    hits = []
    for index, (problem_answers, problem_correct) in enumerate(zip(answers, correct)):
        if len(problem_answers) != len(problem_correct):
            raise ValueError(f"answers[{index}] holds {len(problem_answers)} samples but correct[{index}] "
                             f"holds {len(problem_correct)}")
        if k is not None and k > len(problem_answers):
            raise ValueError(f"k={k} exceeds the {len(problem_answers)} samples of problem {index}")
        voters = list(zip(problem_answers[:k], problem_correct[:k]))
        keys = [vote_key(answer, bool(right)) for answer, right in voters]
        chosen = _majority_index(merged_vote_keys(keys, [answer for answer, _ in voters], same_answer, value_key))
        hits.append(chosen is not None and bool(problem_correct[chosen]))
    return float(np.mean(hits))


def bootstrap_ci(per_problem_scores: Sequence[float], confidence: float = 0.95, resamples: int = 10_000,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean score, resampling problems with replacement: (low, high)."""
    scores = np.asarray(per_problem_scores, dtype=float)
    if scores.ndim != 1 or scores.size == 0:
        raise ValueError("per_problem_scores must be a non-empty flat sequence")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if scores.size == 1:
        return float(scores[0]), float(scores[0])
    rng = np.random.default_rng(seed)
    rows_per_block = max(1, _BOOTSTRAP_BLOCK_ELEMENTS // scores.size)
    means = np.empty(resamples)
    for start in range(0, resamples, rows_per_block):
        rows = min(rows_per_block, resamples - start)
        picks = rng.integers(0, scores.size, size=(rows, scores.size))  # (rows, problems) problem indices
        means[start:start + rows] = scores[picks].mean(axis=1)
    low, high = np.quantile(means, [(1.0 - confidence) / 2, (1.0 + confidence) / 2])
    return float(low), float(high)


def accuracy_by_length_bins(lengths: Sequence[int], correct: Sequence[bool], bin_tokens: int,
                            truncated: Sequence[bool] | None = None) -> list[dict]:
    """Accuracy per response-length bin of flat per-sample (tokens, correct[, truncated]); twin of webapp
    accuracy_by_length.

    Returns rows {"bin_start", "samples", "accuracy", "mean_tokens", "truncated"} ordered by length, empty bins
    left out; truncated counts the bin's samples cut off at max_tokens (none when not given).
    """
    if bin_tokens < 1:
        raise ValueError("bin_tokens must be at least 1")
    cut_off = truncated if truncated is not None else [False] * len(lengths)
    if not len(lengths) == len(correct) == len(cut_off):
        raise ValueError(f"lengths holds {len(lengths)} samples but correct holds {len(correct)} and truncated "
                         f"{len(cut_off)}")
    bins: dict[int, list[tuple[int, bool, bool]]] = {}
    for tokens, is_correct, is_cut in zip(lengths, correct, cut_off):
        if tokens < 0:
            raise ValueError(f"lengths must be non-negative token counts, got {tokens}")
        bins.setdefault(int(tokens) // bin_tokens, []).append((int(tokens), bool(is_correct), bool(is_cut)))
    rows = []
    for index in sorted(bins):
        members = bins[index]
        rows.append({"bin_start": index * bin_tokens, "samples": len(members),
                     "accuracy": sum(hit for _, hit, _ in members) / len(members),
                     "mean_tokens": float(np.mean([tokens for tokens, _, _ in members])),
                     "truncated": sum(cut for _, _, cut in members)})
    return rows


# How a result's score reads, in its metrics: a 0-1 fraction (every built-in benchmark; shown as a percent) or a
# raw value (an lm-eval metric such as BLEU's 0-100 or a perplexity), and whether higher is better.
SCORE_SCALE, FRACTION, RAW, HIGHER_IS_BETTER = "score_scale", "fraction", "raw", "higher_is_better"


@dataclass(frozen=True)
class BenchmarkScore:
    """One benchmark's result, shaped like webapp's BenchmarkResult row (scores 0 to 1, lengths in tokens)."""

    score: float
    ci_low: float | None  # None: no interval (a corpus-level metric, such as BLEU, has no per-problem scores)
    ci_high: float | None
    mean_response_tokens: float
    num_problems: int
    samples_per_problem: int
    metrics: dict

    def summary(self) -> str:
        """A progress-log line: 'score 0.412 [0.380, 0.441], mean 812.3 tokens' (the interval only if there is one)."""
        interval = f" [{self.ci_low:.3f}, {self.ci_high:.3f}]" if self.ci_low is not None else " (no interval)"
        return f"score {self.score:.3f}{interval}, mean {self.mean_response_tokens:.1f} tokens"


def score_benchmark(correct: Sequence[Sequence[bool]], lengths: Sequence[Sequence[int]],
                    answers: Sequence[Sequence[str | None]] | None = None,
                    ks: Sequence[int] = (1, 4, 8),
                    same_answer: Callable[[str, str], bool] | None = None,
                    value_key: Callable[[str], Hashable | None] | None = None) -> BenchmarkScore:
    """Score one benchmark from (problems, samples) correctness, token lengths and optional extracted answers.

    score is Pass@1 averaged with a 95% bootstrap interval over problems; samples_per_problem is the smallest
    n; metrics hold pass@k for each k up to that n, and maj@n when answers are given (wrong answers that
    same_answer finds equal vote together).
    """
    per_problem = per_problem_accuracy(correct)
    if len(lengths) != len(correct):
        raise ValueError(f"lengths holds {len(lengths)} problems but correct holds {len(correct)}")
    for index, (problem_lengths, problem_correct) in enumerate(zip(lengths, correct)):
        if len(problem_lengths) != len(problem_correct):
            raise ValueError(f"lengths[{index}] holds {len(problem_lengths)} samples but correct[{index}] "
                             f"holds {len(problem_correct)}")
    smallest_n = min(len(samples) for samples in correct)
    metrics = {f"pass@{k}": mean_pass_at_k(correct, k) for k in sorted(set(ks)) if k <= smallest_n}
    if answers is not None:
        metrics[f"maj@{smallest_n}"] = majority_vote_accuracy(answers, correct, k=smallest_n, same_answer=same_answer,
                                                              value_key=value_key)
    ci_low, ci_high = bootstrap_ci(per_problem)
    all_lengths = np.concatenate([np.asarray(problem_lengths, dtype=float) for problem_lengths in lengths])
    return BenchmarkScore(score=float(np.mean(per_problem)), ci_low=ci_low, ci_high=ci_high,
                          mean_response_tokens=float(all_lengths.mean()), num_problems=len(correct),
                          samples_per_problem=smallest_n, metrics=metrics)
