"""Prompt ids come out as plain token ids with and without a chat template."""

from common.knobs import parse_config
from training.config import RLConfig
from training.models.loading import load_tokenizer
from training.prompting import decode_response, prompt_ids, prompt_text


def test_prompt_ids_use_the_plain_template_or_the_chat_template(tiny_model_dir):
    tokenizer = load_tokenizer(str(tiny_model_dir))
    assert prompt_ids("Compute 1+2.", tokenizer) == tuple(tokenizer(prompt_text("Compute 1+2.")).input_ids)
    tokenizer.chat_template = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}<assistant>"
    ids = prompt_ids("Compute 1+2.", tokenizer, instruction="Box it.")
    assert all(isinstance(token, int) for token in ids)
    assert tokenizer.decode(list(ids)) == tokenizer.decode(
        tokenizer("<user>Compute 1+2.\n\nBox it.<assistant>").input_ids)


TURNS = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}<assistant>"
OPENS_THINKING = TURNS + "<think>\n"
THINKING_OFF = TURNS + "<think>\n\n</think>\n\n"


def test_a_response_to_a_template_that_opened_thinking_is_graded_after_the_model_closes_it(tiny_model_dir):
    """DeepSeek-R1's distills end the prompt with '<think>': the response starts mid-thought, so its draft box
    is no answer until '</think>' (RL rewards read the trajectories' prompts); a closed block is no opening."""
    from training.group_rewards import score_groups
    from training.rewards import CorrectnessRewards
    from training.rollout.base import FINISH_STOP
    from training.trajectories import Group, Trajectory
    from training.types import PromptRecord

    tokenizer = load_tokenizer(str(tiny_model_dir))
    responses = ["3+4 could be \\boxed{7}, checking", "draft \\boxed{8} then </think> The answer is \\boxed{7}",
                 "draft \\boxed{7} then </think> The answer is \\boxed{8}"]
    ids = [list(tokenizer(text, add_special_tokens=False).input_ids) + [tokenizer.eos_token_id] for text in responses]
    results = {}
    for name, template in (("opens", OPENS_THINKING), ("off", THINKING_OFF), ("none", None)):
        tokenizer.chat_template = template
        prompt = prompt_ids("3+4", tokenizer)
        texts = [decode_response(response, tokenizer, prompt) for response in ids]
        group = Group(problem_index=0, started_iteration=1, trajectories=[
            Trajectory(prompt_ids=prompt, response_ids=response, finish_reason=FINISH_STOP) for response in ids])
        with CorrectnessRewards() as correctness:
            scored = score_groups([group], [PromptRecord("p", "3+4", "7")], tokenizer, parse_config(RLConfig, {}),
                                  1, correctness)
        results[name] = (texts, scored.correct.tolist()[0])
    texts, correct = results["opens"]
    assert all(text.startswith("<think>") for text in texts)
    assert correct == [0.0, 1.0, 0.0]  # unclosed: no answer; else the box after </think>
    for name in ("off", "none"):
        texts, correct = results[name]
        assert not any(text.startswith("<think>") for text in texts)
        assert correct == [1.0, 1.0, 0.0]  # no opened block: the first response's box is its answer


def test_thinking_tags_registered_as_special_tokens_are_kept_and_other_special_tokens_dropped(tiny_model_dir):
    """A tokenizer may make <think> and </think> special tokens: decoded away, the response's closing tag was lost
    and (its prompt having opened the block) no response was ever graded. End-of-sequence still goes."""
    tokenizer = load_tokenizer(str(tiny_model_dir))
    tokenizer.add_special_tokens({"additional_special_tokens": ["<think>", "</think>"]})
    tokenizer.chat_template = OPENS_THINKING
    prompt = prompt_ids("3+4", tokenizer)
    response = tokenizer("ok 3+4=7 </think> The answer is \\boxed{7}", add_special_tokens=False).input_ids
    text = decode_response(response + [tokenizer.eos_token_id], tokenizer, prompt)
    assert text.startswith("<think>") and "</think>" in text and tokenizer.eos_token not in text
    from grading.verifier import extract_answer

    assert extract_answer(text) == "7"
