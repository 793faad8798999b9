"""Token log-probs taken from the decoder's hidden states in chunks equal those of the full logits, gradients too."""

from __future__ import annotations

import copy

import pytest
import torch

from training.models.loading import load_model
from training.trainer import logprobs
from training.trainer.logprobs import chunked_token_logprobs, chunking_supported, full_token_logprobs, token_logprobs


@pytest.fixture(scope="module")
def model(tiny_model_dir):
    return load_model(str(tiny_model_dir)).eval()


def padded_batch():
    ids = torch.randint(3, 300, (3, 11), generator=torch.Generator().manual_seed(4))
    attention = torch.ones_like(ids)
    attention[1, 7:] = 0  # a right-padded row, as the trainer's rows are
    return {"input_ids": ids, "attention_mask": attention, "position_ids": None}


@pytest.mark.parametrize("chunk_tokens", [1, 4, 7, 64])
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_chunks_give_the_full_logits_values_and_gradients(model, chunk_tokens, temperature):
    inputs = padded_batch()
    results = []
    for score in (lambda m: full_token_logprobs(m, inputs, temperature),
                  lambda m: chunked_token_logprobs(m, inputs, temperature, chunk_tokens)):
        copied = copy.deepcopy(model)
        values = score(copied)
        (values * torch.linspace(-1.0, 1.0, values.numel()).view_as(values)).sum().backward()
        results.append((values.detach(), {name: p.grad for name, p in copied.named_parameters()}))
    (full, full_grads), (chunked, chunked_grads) = results
    assert chunked.shape == full.shape == (3, 10)
    assert torch.allclose(chunked, full, atol=1e-5), (chunked - full).abs().max()
    for name, grad in full_grads.items():
        assert torch.allclose(chunked_grads[name], grad, atol=1e-5, rtol=1e-4), name


def test_packed_rows_and_the_default_path_use_the_chunks(model):
    """token_logprobs takes the chunked path on a supported model; restarting position ids (packing) agree."""
    assert chunking_supported(model)
    ids = torch.randint(3, 300, (2, 9), generator=torch.Generator().manual_seed(5))
    positions = torch.tensor([[0, 1, 2, 3, 0, 1, 2, 3, 4]] * 2)
    inputs = {"input_ids": ids, "attention_mask": None, "position_ids": positions}
    with torch.no_grad():
        expected = full_token_logprobs(model, inputs, 1.0)
        got = token_logprobs(model, ids, None, position_ids=positions)
    assert torch.allclose(got, expected, atol=1e-5)


def test_the_sft_loss_is_the_mean_cross_entropy_of_the_masked_tokens(model):
    """Warm-up SFT and long2short's shortest-rejection SFT score through the chunks too: their loss equals the
    full logits' cross-entropy over response tokens, padding excluded."""
    from training.trainer.logprobs import masked_mean_nll

    inputs = padded_batch()
    loss_mask = torch.zeros_like(inputs["input_ids"])
    loss_mask[:, 5:] = inputs["attention_mask"][:, 5:]  # the response: positions 5 on, not the padding
    with torch.no_grad():
        got = masked_mean_nll(model, inputs["input_ids"], inputs["attention_mask"], loss_mask)
        logits = model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"]).logits[:, :-1]
    losses = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(),
                                               inputs["input_ids"][:, 1:].reshape(-1), reduction="none")
    mask = loss_mask[:, 1:].reshape(-1).float()
    assert float(got) == pytest.approx(float((losses * mask).sum() / mask.sum()), rel=1e-6)
    assert float(mask.sum()) == 3 * 6 - 4  # rows of 6 response targets, one row padded after position 7


class DoubledLogits(torch.nn.Module):
    """A model whose logits are not its output layer over its decoder (as logit soft-capping or scaling)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def get_output_embeddings(self):
        return self.inner.get_output_embeddings()

    def get_decoder(self):
        return self.inner.get_decoder()

    def forward(self, **inputs):
        output = self.inner(**inputs)
        output.logits = output.logits * 2.0
        return output


def test_a_model_whose_logits_are_not_its_head_over_its_decoder_scores_through_its_logits(model, monkeypatch):
    doubled = DoubledLogits(copy.deepcopy(model))
    assert not chunking_supported(doubled)
    monkeypatch.setattr(logprobs, "chunked_token_logprobs", lambda *args: pytest.fail("chunked a doubled model"))
    inputs = padded_batch()
    with torch.no_grad():
        got = token_logprobs(doubled, inputs["input_ids"], inputs["attention_mask"])
        logits = 2.0 * model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"]).logits[:, :-1]
    expected = torch.log_softmax(logits.float(), dim=-1).gather(2, inputs["input_ids"][:, 1:, None]).squeeze(-1)
    assert torch.allclose(got, expected, atol=1e-5)


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_the_chunk_gradient_is_the_analytic_one(temperature):
    """ChunkLogprobs' hand-written backward (softmax less the one-hot target, recomputed in place) against
    autograd's numerical check in float64, with a bias."""
    from torch.autograd import gradcheck

    from training.logprob_chunks import ChunkLogprobs

    generator = torch.Generator().manual_seed(6)
    hidden = torch.randn(5, 4, dtype=torch.float64, generator=generator, requires_grad=True)
    weight = torch.randn(9, 4, dtype=torch.float64, generator=generator, requires_grad=True)
    bias = torch.randn(9, dtype=torch.float64, generator=generator, requires_grad=True)
    targets = torch.tensor([0, 8, 3, 3, 5])
    assert gradcheck(lambda h, w, b: ChunkLogprobs.apply(h, w, b, targets, temperature), (hidden, weight, bias))
    expected = torch.log_softmax((hidden @ weight.T + bias) / temperature, dim=-1).gather(1, targets[:, None])
    assert torch.allclose(ChunkLogprobs.apply(hidden, weight, bias, targets, temperature), expected.squeeze(1))


def test_a_vocabulary_shard_leaves_its_padding_rows_out_of_the_softmax_and_their_gradient():
    """One rank's shard (Megatron pads the vocabulary to split evenly): rows past the real vocabulary are not
    tokens; log-probs and gradients are those of the real rows alone, in float64 by gradcheck."""
    from torch.autograd import gradcheck

    from training.logprob_chunks import ChunkLogprobs, VocabShard

    generator = torch.Generator().manual_seed(8)
    hidden = torch.randn(5, 4, dtype=torch.float64, generator=generator, requires_grad=True)
    weight = torch.randn(12, 4, dtype=torch.float64, generator=generator, requires_grad=True)  # 9 real + 3 padding
    targets = torch.tensor([0, 8, 3, 3, 5])
    shard = VocabShard(first=0, real_rows=9)
    got = ChunkLogprobs.apply(hidden, weight, None, targets, 0.7, shard)
    expected = torch.log_softmax(hidden @ weight[:9].T / 0.7, dim=-1).gather(1, targets[:, None]).squeeze(1)
    assert torch.allclose(got, expected)
    got.sum().backward()
    assert float(weight.grad[9:].abs().max()) == 0.0 and float(weight.grad[:9].abs().max()) > 0
    assert gradcheck(lambda h, w: ChunkLogprobs.apply(h, w, None, targets, 0.7, shard), (hidden, weight))


def test_under_bfloat16_autocast_the_chunks_match_the_full_logits():
    """As on a GPU: the output layer in bfloat16, log-probs and float32 gradients within bfloat16 rounding."""
    from training.logprob_chunks import ChunkLogprobs

    generator = torch.Generator().manual_seed(7)
    hidden = torch.randn(6, 16, generator=generator, requires_grad=True)
    weight = torch.randn(50, 16, generator=generator, requires_grad=True)
    targets = torch.randint(0, 50, (6,), generator=generator)
    results = []
    for chunked in (False, True):
        hidden.grad = weight.grad = None
        with torch.autocast("cpu", dtype=torch.bfloat16):
            if chunked:
                values = ChunkLogprobs.apply(hidden, weight, None, targets, 1.0)
            else:
                logits = torch.nn.functional.linear(hidden, weight).float()
                values = torch.log_softmax(logits, dim=-1).gather(1, targets[:, None]).squeeze(1)
        values.sum().backward()
        results.append((values.detach(), hidden.grad.clone(), weight.grad.clone()))
    for expected, got in zip(results[0], results[1]):
        assert got.dtype == torch.float32 and torch.allclose(got, expected, atol=2e-2, rtol=2e-2)


def test_a_soft_capped_head_scores_through_its_logits_even_when_the_probe_would_pass(model):
    """A fresh model's logits are small, where soft-capping is nearly the identity: the config decides."""
    capped = copy.deepcopy(model)
    capped.config.final_logit_softcapping = 30.0
    assert not chunking_supported(capped)
    assert chunking_supported(copy.deepcopy(model))


def test_the_probe_runs_outside_autocast():
    """Under bfloat16 autocast (the trainer's first call on a GPU) the probe still compares in the weights' dtype."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    fresh = Qwen2ForCausalLM(Qwen2Config(vocab_size=300, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=4, num_key_value_heads=2))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert chunking_supported(fresh)
