"""Padding-free forward passes: several responses share one row, their position ids restarting at each.

A heavy-tailed batch padded to its longest response is mostly padding (three 530-token responses and
thirteen of 35 tokens: 8,480 positions for 2,045 tokens). Packing puts the rows into bins (first fit,
longest first); Hugging Face models read the restarts in `position_ids` (with no attention mask and no
cache) as separate sequences and mask attention between them. That mask is dense, so a bin's attention
costs its width squared whatever it holds: a 35-token response in a bin 530 tokens wide scores ~15x the
keys it attends to. So rows are first split by width (`width_groups`): each group is
packed at its own longest row's width, one pass per group. Token log-probs come back in the padded layout.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from training.length_buckets import length_buckets
from training.trainer.logprobs import token_logprobs

# the support probe: four short sequences packed into two bins of PROBE_WIDTH (one with a padded tail), and alone
PROBE_LENGTHS = (7, 5, 7, 4)
PROBE_WIDTH = 12
PROBE_TOLERANCE = {torch.float32: 1e-4, torch.float64: 1e-6}  # other dtypes: 2e-2
MIN_GROUP_WIDTH = 128  # rows no longer than this share one group: their attention is cheap at any width up to it


def first_fit_decreasing(lengths: list[int], capacity: int) -> list[list[int]]:
    """Row indices in bins of total length <= capacity: longest first, each into the first bin it fits."""
    if any(length > capacity for length in lengths):
        raise ValueError(f"a row of {max(lengths)} tokens does not fit a bin of {capacity}")
    bins: list[list[int]] = []
    room: list[int] = []
    for row in sorted(range(len(lengths)), key=lambda index: (-lengths[index], index)):
        for number, free in enumerate(room):
            if lengths[row] <= free:
                bins[number].append(row)
                room[number] -= lengths[row]
                break
        else:
            bins.append([row])
            room.append(capacity - lengths[row])
    return bins


@dataclass
class PackedRows:
    """Right-padded rows packed into bins, and where each row's next-token predictions land."""

    input_ids: torch.Tensor  # (bins, width)
    position_ids: torch.Tensor  # (bins, width): 0, 1, ... within every row; the bin's tail is a sequence of its own
    prediction_index: torch.Tensor  # (rows, width - 1): flat index into (bins, width - 1) predictions
    valid: torch.Tensor  # (rows, width - 1) bool: j < the row's length - 1


def pack_rows(input_ids: torch.Tensor, lengths: list[int]) -> PackedRows:
    """Pack right-padded (rows, width) ids whose first lengths[r] tokens are real into bins of that width."""
    rows, width = input_ids.shape
    bins = first_fit_decreasing(lengths, width)
    packed = torch.zeros((len(bins), width), dtype=input_ids.dtype, device=input_ids.device)
    positions = torch.zeros_like(packed)
    starts = [0] * rows  # flat start of each row in (bins, width - 1) predictions
    for number, members in enumerate(bins):
        offset = 0
        for row in members:
            length = lengths[row]
            packed[number, offset:offset + length] = input_ids[row, :length]
            positions[number, offset:offset + length] = torch.arange(length, device=input_ids.device)
            starts[row] = number * (width - 1) + offset
            offset += length
        positions[number, offset:] = torch.arange(width - offset, device=input_ids.device)
    steps = torch.arange(width - 1, device=input_ids.device)
    lengths_tensor = torch.tensor(lengths, device=input_ids.device)
    valid = steps.unsqueeze(0) < (lengths_tensor - 1).unsqueeze(1)
    index = torch.tensor(starts, device=input_ids.device).unsqueeze(1) + steps.unsqueeze(0)
    return PackedRows(packed, positions, torch.where(valid, index, 0), valid)


def width_groups(lengths: list[int], floor: int | None = None) -> list[list[int]]:
    """Row indices, longest first, in groups that are packed each at its first row's width: every row's bin is
    at most twice its length wide, or at most `floor` (default MIN_GROUP_WIDTH), in as many passes as halvings
    of the length range above the floor."""
    return length_buckets(lengths, 0.5, MIN_GROUP_WIDTH if floor is None else floor)


def packed_token_logprobs(model, input_ids: torch.Tensor, lengths: list[int],
                          temperature: float = 1.0) -> torch.Tensor:
    """(rows, width - 1) log-prob of each next token under softmax(logits / temperature), in float32, from one
    packed forward pass per width group; 0 past each row's length (where a padded pass would score padding)."""
    width = input_ids.shape[1]
    groups = width_groups(lengths)
    parts = []
    for group in groups:
        group_width = max(2, lengths[group[0]])
        rows = torch.tensor(group, device=input_ids.device)
        part = _packed_pass(model, input_ids[rows, :group_width], [lengths[row] for row in group], temperature)
        parts.append(F.pad(part, (0, width - group_width)))
    order = torch.tensor([row for group in groups for row in group], device=input_ids.device)
    return torch.cat(parts)[torch.argsort(order)]


def _packed_pass(model, input_ids: torch.Tensor, lengths: list[int], temperature: float) -> torch.Tensor:
    """packed_token_logprobs of rows packed into bins as wide as `input_ids`, in one forward pass."""
    packed = pack_rows(input_ids, lengths)
    predictions = token_logprobs(model, packed.input_ids, None, temperature, packed.position_ids).reshape(-1)
    return torch.where(packed.valid, predictions[packed.prediction_index], 0.0)


@torch.no_grad()
def packing_supported(model) -> bool:
    """True when the model keeps packed sequences apart: a probe's log-probs packed equal those alone.

    Models whose attention ignores restarting position ids would let a response attend to its neighbours.
    """
    parameter = next(model.parameters())
    device = parameter.device
    vocabulary = model.get_output_embeddings().weight.shape[0]
    ids = (torch.arange(sum(PROBE_LENGTHS), device=device) * 7 + 3) % vocabulary
    rows = torch.zeros((len(PROBE_LENGTHS), PROBE_WIDTH), dtype=torch.long, device=device)
    start = 0
    for row, length in enumerate(PROBE_LENGTHS):
        rows[row, :length] = ids[start:start + length]
        start += length
    was_training = model.training
    model.eval()
    try:
        together = _packed_pass(model, rows, list(PROBE_LENGTHS), 1.0)  # bins of PROBE_WIDTH, shared
        alone = [token_logprobs(model, rows[row:row + 1, :length], None)[0] for row, length in enumerate(PROBE_LENGTHS)]
    except torch.OutOfMemoryError:
        raise
    except (TypeError, ValueError, RuntimeError):  # a model that takes no position_ids, or other shapes
        return False
    finally:
        model.train(was_training)
    tolerance = PROBE_TOLERANCE.get(parameter.dtype, 2e-2)
    return all(bool((together[row, :length - 1] - alone[row]).abs().max() <= tolerance)
               for row, length in enumerate(PROBE_LENGTHS))

