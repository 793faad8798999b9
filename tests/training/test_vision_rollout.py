"""Image inputs through the rollout engines, on the randomly initialised tiny-vl preset (Qwen2-VL)."""

from __future__ import annotations

import importlib.util

import pytest
import torch
from PIL import Image

from training.prompting import vision_prompt_ids
from training.rollout.base import EngineSettings, RolloutRequest, SamplingSettings
from training.rollout.vision import expand_placeholders

GREEDY = SamplingSettings(max_new_tokens=6, temperature=0.0)
LOGPROB_TOLERANCE = 1e-4


def red_block() -> Image.Image:
    """80x60 pixels: resized to 84x56, a 6x4 patch grid, 6 image tokens."""
    return Image.new("RGB", (80, 60), (200, 30, 30))


def stripes() -> Image.Image:
    """100x100 pixels of vertical black and white stripes: resized to 112x112, 16 image tokens."""
    image = Image.new("RGB", (100, 100), (255, 255, 255))
    for x in range(0, 100, 10):
        image.paste((0, 0, 0), (x, 0, x + 5, 100))
    return image


@pytest.fixture(scope="module")
def tiny_vl(tmp_path_factory):
    """(model, tokenizer, directory) of the tiny-vl preset, created in a temporary folder."""
    from training.models.loading import load_model, load_tokenizer
    from training.models.tiny_vl import create_tiny_vl_preset

    directory = str(create_tiny_vl_preset(tmp_path_factory.mktemp("models") / "tiny-vl"))
    return load_model(directory).eval(), load_tokenizer(directory), directory


@pytest.fixture(scope="module")
def torch_engine(tiny_vl):
    from training.rollout.torch_engine import build

    model, tokenizer, directory = tiny_vl
    return build(model, tokenizer, directory, EngineSettings())


@pytest.fixture(scope="module")
def question(tiny_vl) -> tuple[int, ...]:
    return vision_prompt_ids("How many stripes are there?", tiny_vl[1], "Answer with a number.")


def test_placeholders_expand_to_each_images_token_count():
    assert expand_placeholders([5, 9, 7, 9, 8], 9, [3, 1]) == (5, 9, 9, 9, 7, 9, 8)
    assert expand_placeholders([5, 7], 9, []) == (5, 7)


def test_the_vision_prompt_holds_one_placeholder_per_image(tiny_vl, question):
    model, tokenizer, _ = tiny_vl
    assert question.count(model.config.image_token_id) == 1
    text = tokenizer.decode(list(question), skip_special_tokens=False)
    assert text.startswith("<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>How many stripes")
    assert text.endswith("<|im_start|>assistant\n")
    two = vision_prompt_ids("Compare them.", tokenizer, "", images=2)
    assert two.count(model.config.image_token_id) == 2


def test_the_engine_expands_placeholders_to_the_images_patch_grid(torch_engine, question):
    vision = torch_engine.vision
    red = vision.prompt(RolloutRequest(question, images=(red_block(),)))
    striped = vision.prompt(RolloutRequest(question, images=(stripes(),)))
    assert red.image_grid_thw.tolist() == [[1, 4, 6]] and striped.image_grid_thw.tolist() == [[1, 8, 8]]
    # 2x2 patches merge into one token: 24 / 4 = 6 and 64 / 4 = 16 image tokens
    assert len(red.prompt_ids) == len(question) + 5 and len(striped.prompt_ids) == len(question) + 15
    assert red.pixel_values.shape == (24, 3 * 2 * 14 * 14)  # patches x (channels * time * height * width)


def test_the_counted_prompt_length_is_the_expanded_prompts(torch_engine, tiny_vl, question, tmp_path):
    """The context check counts image tokens from each image's size alone; it must equal the real expansion."""
    vision = torch_engine.vision
    wide = Image.new("RGB", (1000, 230), (10, 120, 40))
    wide.save(tmp_path / "wide.png")
    two = vision_prompt_ids("Compare them.", tiny_vl[1], "", images=2)
    for request in (RolloutRequest(question, images=(red_block(),)), RolloutRequest(question, images=(wide,)),
                    RolloutRequest(question, images=(str(tmp_path / "wide.png"),)),
                    RolloutRequest(two, images=(stripes(), wide))):
        assert vision.prompt_length(request) == len(vision.prompt(request).prompt_ids)
    assert vision.tokens_per_image([stripes(), red_block()]) == [16, 6]


def test_an_image_prompt_the_window_cannot_hold_is_refused_with_its_expanded_length(torch_engine, question):
    """Text alone would fit; the 16 image tokens of the stripes do not: refused, never cut short."""
    limit = torch_engine.window - len(question) - 2
    with pytest.raises(ValueError, match=f"request 0: a prompt of {len(question) + 15} tokens plus {limit} new "
                                         f"tokens exceeds the model's context window of {torch_engine.window}"):
        torch_engine.generate([RolloutRequest(question, images=(stripes(),), max_new_tokens=limit)], GREEDY)


def test_the_image_reaches_the_model(tiny_vl, torch_engine, question):
    """Same text, two images: different first-step log-probs; the same image alone or batched: the same."""
    text_only = tuple(tiny_vl[1]("Problem: 2+3\nSolution:").input_ids)
    batched = torch_engine.generate([
        RolloutRequest(question, images=(red_block(),)),
        RolloutRequest(question, n=2, images=(stripes(),)),
        RolloutRequest(text_only),
    ], GREEDY)
    red_alone = torch_engine.generate([RolloutRequest(question, images=(red_block(),))], GREEDY)[0][0]
    striped_alone = torch_engine.generate([RolloutRequest(question, images=(stripes(),))], GREEDY)[0][0]
    red, striped = batched[0][0], batched[1][0]
    assert abs(red.logprobs[0] - striped.logprobs[0]) > 1e-3 or red.token_ids != striped.token_ids
    assert red.token_ids == red_alone.token_ids and striped.token_ids == striped_alone.token_ids
    assert red.logprobs == pytest.approx(red_alone.logprobs, abs=LOGPROB_TOLERANCE)
    assert striped.logprobs == pytest.approx(striped_alone.logprobs, abs=LOGPROB_TOLERANCE)
    assert batched[1][1].token_ids == striped.token_ids  # greedy: both samples alike
    assert len(batched[2][0].token_ids) == GREEDY.max_new_tokens  # a text request in the same batch works


def test_the_first_step_logits_depend_on_the_image(tiny_vl, torch_engine, question):
    """Direct forward passes: the next-token distribution moves with the image, not with a repeat of it."""
    model = tiny_vl[0]

    def next_token_logits(image) -> torch.Tensor:
        prompt = torch_engine.vision.prompt(RolloutRequest(question, images=(image,)))
        input_ids = torch.tensor([prompt.prompt_ids])
        with torch.no_grad():
            output = model(input_ids=input_ids, pixel_values=prompt.pixel_values,
                           image_grid_thw=prompt.image_grid_thw,
                           mm_token_type_ids=(input_ids == model.config.image_token_id).int())
        return output.logits[0, -1]

    red, striped, red_again = next_token_logits(red_block()), next_token_logits(stripes()), next_token_logits(
        red_block())
    assert torch.equal(red, red_again)
    assert (red - striped).abs().max() > 1e-3


def test_an_image_file_path_works_like_the_image(torch_engine, question, tmp_path):
    stripes().save(tmp_path / "stripes.png")  # lossless, so the pixels are the same
    from_file = torch_engine.generate([RolloutRequest(question, images=(tmp_path / "stripes.png",))], GREEDY)
    from_memory = torch_engine.generate([RolloutRequest(question, images=(stripes(),))], GREEDY)
    assert from_file[0][0].token_ids == from_memory[0][0].token_ids
    assert from_file[0][0].logprobs == pytest.approx(from_memory[0][0].logprobs, abs=LOGPROB_TOLERANCE)


def test_it_rejects_a_prompt_whose_placeholders_do_not_match_its_images(torch_engine, question):
    with pytest.raises(ValueError, match=r"request 1: prompt_ids hold 1 image placeholder\(s\) .* for 2 image"):
        torch_engine.generate([RolloutRequest(question, images=(red_block(),)),
                               RolloutRequest(question, images=(red_block(), stripes()))], GREEDY)
    with pytest.raises(ValueError, match=r"request 0: prompt_ids hold 1 image placeholder\(s\) .* for 0 image"):
        torch_engine.generate([RolloutRequest(question)], GREEDY)


def test_it_rejects_images_for_a_text_only_model(tiny_model_dir):
    from training.models.loading import load_model, load_tokenizer
    from training.rollout.torch_engine import build

    directory = str(tiny_model_dir)
    engine = build(load_model(directory), load_tokenizer(directory), directory, EngineSettings())
    assert engine.vision is None
    with pytest.raises(ValueError, match="request 0 carries 1 image.*text-only model with no vision encoder"):
        engine.generate([RolloutRequest((1, 2, 3), images=(red_block(),))], GREEDY)


def torchvision_imports() -> bool:
    try:
        from torchvision.transforms.v2 import functional  # noqa: F401
    except (ImportError, RuntimeError):
        return False
    return True


@pytest.mark.skipif(torchvision_imports(), reason="torchvision imports here, so vLLM may load a vision model")
def test_vllm_refuses_a_vision_model_where_torchvision_does_not_import(tiny_vl):
    from training.rollout.vllm_engine import VisionUnsupported, build

    model, tokenizer, directory = tiny_vl
    with pytest.raises(VisionUnsupported, match=r"torchvision does not import .*image_processing_qwen2_vl.*torch "
                                                 r"rollout engine"):
        build(model, tokenizer, directory, EngineSettings())


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed")
@pytest.mark.skipif(not torchvision_imports(), reason="vLLM's Qwen2-VL code needs torchvision, which does not import")
def test_vllm_generates_from_the_image_like_the_torch_engine(tiny_vl, torch_engine, question):
    from training.rollout.vllm_engine import build

    model, tokenizer, directory = tiny_vl
    engine = build(model, tokenizer, directory, EngineSettings())
    try:
        requests = [RolloutRequest(question, images=(red_block(),)), RolloutRequest(question, images=(stripes(),))]
        from_vllm = engine.generate(requests, GREEDY)
    finally:
        engine.close()
    from_torch = torch_engine.generate(requests, GREEDY)
    for vllm_samples, torch_samples in zip(from_vllm, from_torch):
        assert vllm_samples[0].logprobs[0] == pytest.approx(torch_samples[0].logprobs[0], abs=2e-3)
    assert from_vllm[0][0].logprobs[0] != pytest.approx(from_vllm[1][0].logprobs[0], abs=1e-3)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed")
def test_vllm_rejects_images_for_a_text_only_model(tiny_model_dir):
    from training.rollout.vllm_engine import VllmRolloutEngine

    engine = VllmRolloutEngine(str(tiny_model_dir), eos_id=1, max_model_len=256, enforce_eager=True)
    try:
        with pytest.raises(ValueError, match="request 1 carries 1 image.*text-only model"):
            engine.generate([RolloutRequest((5, 6, 7)), RolloutRequest((5, 6, 7), images=(red_block(),))], GREEDY)
    finally:
        engine.close()
