"""The `tiny-vl` preset: a Qwen2-VL model of about 2M parameters (a two-block vision encoder in front of
the tiny preset's decoder shape), created locally on first use so image inputs can be tested offline.

Its tokenizer is the tiny preset's plus the Qwen2-VL vision tokens and a chat template that puts
`<|vision_start|><|image_pad|><|vision_end|>` where a message has an image; the image processor is
the PIL one (torchvision is absent on CPU hosts). The weights are random: outputs are noise, but they
depend on the image, which is what tests need.
"""

from __future__ import annotations

from pathlib import Path

from training.models.presets import TINY_VL
from training.models.tiny import ARCHITECTURE, train_tokenizer, write_preset_once

PRESET_NAME = TINY_VL

VISION_TOKENS = ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")
CHAT_TOKENS = ("<|im_start|>", "<|im_end|>")
VISION_ARCHITECTURE = dict(depth=2, embed_dim=64, num_heads=4, mlp_ratio=2, patch_size=14, temporal_patch_size=2,
                           spatial_merge_size=2)
# Multimodal rotary sections (time, height, width) of half the decoder's 32-wide attention head.
MROPE_SECTION = [4, 6, 6]
# Images are resized to between 56x56 and 112x112 pixels: 4 to 16 image tokens each.
IMAGE_PIXELS = dict(min_pixels=56 * 56, max_pixels=112 * 112)
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}{{ '<|vision_start|><|image_pad|><|vision_end|>' }}"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
    "{{ '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def vision_tokenizer(seed: int = 0):
    """The tiny preset's tokenizer with the vision and chat tokens added, and the chat template."""
    tokenizer = train_tokenizer(seed)
    tokenizer.add_special_tokens({"additional_special_tokens": [*VISION_TOKENS, *CHAT_TOKENS]})
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def build_vision_model(tokenizer, seed: int = 0):
    """A freshly initialised Qwen2-VL model whose decoder has the tiny preset's shape."""
    import torch
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    vision_start, vision_end, image, video = tokenizer.convert_tokens_to_ids(list(VISION_TOKENS))
    text_config = dict(
        vocab_size=len(tokenizer), tie_word_embeddings=False, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, **ARCHITECTURE,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": MROPE_SECTION},
    )
    config = Qwen2VLConfig(
        text_config=text_config, vision_config=dict(hidden_size=ARCHITECTURE["hidden_size"], **VISION_ARCHITECTURE),
        vision_start_token_id=vision_start, vision_end_token_id=vision_end, image_token_id=image,
        video_token_id=video, tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    return Qwen2VLForConditionalGeneration(config)


def build_image_processor():
    """Qwen2-VL's PIL image processor with small images (IMAGE_PIXELS), patches matching the encoder."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    return Qwen2VLImageProcessorPil(patch_size=VISION_ARCHITECTURE["patch_size"],
                                    temporal_patch_size=VISION_ARCHITECTURE["temporal_patch_size"],
                                    merge_size=VISION_ARCHITECTURE["spatial_merge_size"], **IMAGE_PIXELS)


def create_tiny_vl_preset(directory: Path, seed: int = 0) -> Path:
    """Write tokenizer, image processor and weights (safetensors) to `directory` once; safe across processes."""

    def write(staging: Path) -> None:
        tokenizer = vision_tokenizer(seed)
        model = build_vision_model(tokenizer, seed)
        model.generation_config.pad_token_id = tokenizer.pad_token_id
        model.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
        build_image_processor().save_pretrained(staging)

    return write_preset_once(directory, write)
