"""Image inputs of rollout requests: open them, check their placeholders, and turn them into model inputs.

A request's prompt holds one placeholder token per image (what a chat template writes); a Qwen2-VL
style model wants one placeholder per image token, so the engine repeats each placeholder
grid_t * grid_h * grid_w / merge_size**2 times, as the model's processor does to text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch

from training.rollout.base import RolloutRequest

PLACEHOLDER_HINT = "build the prompt with training.prompting.vision_prompt_ids"


def open_image(image: Any):
    """An RGB PIL image from a PIL image or an image file path (read whole; the file is closed)."""
    from PIL import Image

    if isinstance(image, (str, Path)):
        with Image.open(image) as opened:
            return opened.convert("RGB")
    if isinstance(image, Image.Image):
        return image if image.mode == "RGB" else image.convert("RGB")
    raise TypeError(f"an image must be a PIL image or a file path, not {type(image).__name__}")


def image_size(image: Any) -> tuple[int, int]:
    """(height, width) of a PIL image or an image file (read from the file's header, not its pixels)."""
    from PIL import Image

    if isinstance(image, (str, Path)):
        with Image.open(image) as opened:
            return opened.height, opened.width
    if isinstance(image, Image.Image):
        return image.height, image.width
    raise TypeError(f"an image must be a PIL image or a file path, not {type(image).__name__}")


def check_image_requests(requests: Sequence[RolloutRequest], image_token_id: int | None, model_name: str) -> None:
    """Raise ValueError naming the request when images reach a text-only model, or placeholders and images differ."""
    for index, request in enumerate(requests):
        if not request.images and image_token_id is None:
            continue
        if image_token_id is None:
            raise ValueError(f"request {index} carries {len(request.images)} image(s), but {model_name} is a "
                             "text-only model with no vision encoder; use a vision-language model")
        placeholders = request.prompt_ids.count(image_token_id)
        if placeholders != len(request.images):
            raise ValueError(f"request {index}: prompt_ids hold {placeholders} image placeholder(s) (token id "
                             f"{image_token_id}) for {len(request.images)} image(s); {PLACEHOLDER_HINT}")


def expand_placeholders(prompt_ids: Sequence[int], image_token_id: int,
                        tokens_per_image: Sequence[int]) -> tuple[int, ...]:
    """Repeat the k-th image placeholder tokens_per_image[k] times; other tokens stay as they are."""
    counts = iter(tokens_per_image)
    expanded: list[int] = []
    for token in prompt_ids:
        expanded += [token] * next(counts) if token == image_token_id else [token]
    return tuple(expanded)


@dataclass(frozen=True)
class VisionPrompt:
    """A prompt ready for the model: expanded token ids, pixel patches (patches, channels * patch volume)
    and each image's (time, height, width) patch grid (images, 3); no tensors for a text-only prompt."""

    prompt_ids: tuple[int, ...]
    pixel_values: torch.Tensor | None = None
    image_grid_thw: torch.Tensor | None = None


class VisionInputs:
    """Builds a vision-language model's inputs from requests with the model's image processor."""

    def __init__(self, image_processor, image_token_id: int):
        self.image_processor = image_processor
        self.image_token_id = image_token_id
        self.merge_size = image_processor.merge_size

    def prompt(self, request: RolloutRequest) -> VisionPrompt:
        """The request's prompt with its images turned into patches and its placeholders expanded."""
        if not request.images:
            return VisionPrompt(request.prompt_ids)
        encoded = self.image_processor(images=[open_image(image) for image in request.images], return_tensors="pt")
        grids = encoded["image_grid_thw"]
        tokens_per_image = (grids.prod(dim=-1) // self.merge_size**2).tolist()
        return VisionPrompt(expand_placeholders(request.prompt_ids, self.image_token_id, tokens_per_image),
                            encoded["pixel_values"], grids)

    def tokens_per_image(self, images: Sequence[Any]) -> list[int]:
        """Image tokens each image becomes: its patches after the processor's resize, merged (from its size)."""
        return [self.image_processor.get_number_of_image_patches(*image_size(image)) // self.merge_size**2
                for image in images]

    def prompt_length(self, request: RolloutRequest) -> int:
        """Tokens of the request's prompt once its image placeholders are expanded (what the context holds)."""
        return len(request.prompt_ids) + sum(tokens - 1 for tokens in self.tokens_per_image(request.images))

    def generate_inputs(self, prompts: Sequence[VisionPrompt], input_ids: torch.Tensor, dtype: torch.dtype) -> dict:
        """Extra `generate` arguments for a batch whose rows are `prompts` (left-padded into input_ids)."""
        with_images = [prompt for prompt in prompts if prompt.pixel_values is not None]
        if not with_images:
            return {}
        return {
            "pixel_values": torch.cat([prompt.pixel_values for prompt in with_images]).to(input_ids.device, dtype),
            "image_grid_thw": torch.cat([prompt.image_grid_thw for prompt in with_images]).to(input_ids.device),
            # (batch, seq): 1 marks image tokens, 0 text; the model places its 3D rotary positions from it
            "mm_token_type_ids": (input_ids == self.image_token_id).int(),
        }


def vision_inputs_from_folder(model_path: str, image_token_id: int | None = None) -> VisionInputs:
    """VisionInputs of the vision-language model saved in model_path: its processor, and its config's image token
    unless given."""
    from transformers import AutoConfig

    from training.models.loading import load_image_processor

    if image_token_id is None:
        image_token_id = AutoConfig.from_pretrained(model_path).image_token_id
    return VisionInputs(load_image_processor(model_path), image_token_id)


def vision_inputs_for(model, model_path: str) -> VisionInputs | None:
    """VisionInputs for a vision-language model (its image processor loaded from model_path); None otherwise."""
    from training.models.loading import is_vision_language

    if not is_vision_language(model.config):
        return None
    return vision_inputs_from_folder(model_path, model.config.image_token_id)
