"""Prompt ids come out as plain token ids with and without a chat template."""

from training.models.loading import load_tokenizer
from training.prompting import prompt_ids, prompt_text


def test_prompt_ids_use_the_plain_template_or_the_chat_template(tiny_model_dir):
    tokenizer = load_tokenizer(str(tiny_model_dir))
    assert prompt_ids("Compute 1+2.", tokenizer) == tuple(tokenizer(prompt_text("Compute 1+2.")).input_ids)
    tokenizer.chat_template = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}<assistant>"
    ids = prompt_ids("Compute 1+2.", tokenizer, instruction="Box it.")
    assert all(isinstance(token, int) for token in ids)
    assert tokenizer.decode(list(ids)) == tokenizer.decode(
        tokenizer("<user>Compute 1+2.\n\nBox it.<assistant>").input_ids)
