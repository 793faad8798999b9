"""The judge's prompt: the question, the reference answer and the response, then how to answer."""

from __future__ import annotations

JUDGE_PROMPT = """You are grading a response to a math problem against the problem's reference answer.

## Question
{question}

## Reference answer
{reference}

## Response
{response}

## Your task
Decide whether the final answer of the response is mathematically equivalent to the reference answer.
Different written forms of the same answer are equivalent (for example a^2-4 and (a+2)(a-2), or 0.5 and 1/2).
Judge only the final answer, not the quality of the reasoning; a response with no final answer is incorrect.
Think step by step: first find the final answer of the response, then compare it with the reference answer.
End your reply with your verdict as one JSON object on its own line, with nothing after it:
{{"verdict": "correct"}} or {{"verdict": "incorrect"}}"""


def judge_prompt(question: str, reference: str, response: str) -> str:
    """The judge's prompt text for one response (a chat template, if any, is applied by the engine's caller)."""
    return JUDGE_PROMPT.format(question=question.strip(), reference=reference.strip(), response=response.strip())
