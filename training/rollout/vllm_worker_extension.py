"""Methods mixed into every vLLM worker (`LLM(worker_extension_cls=...)`), called by `collective_rpc`.

Runs inside vLLM's worker, in this process or in a worker process: keep it free of project imports.
"""

from __future__ import annotations


class WeightUpdateExtension:
    """Loads weights sent as safetensors bytes into the running model, in place."""

    def load_weights_from_safetensors(self, blob: bytes) -> int:
        """Reload the tensors in `blob` (Hugging Face names, any subset of whole layers); returns their count.

        Bytes survive collective_rpc's serialisation; raw tensors arrive as lists.
        """
        from safetensors.torch import load

        tensors = load(bytes(blob))
        self.reload_weights(weights_iterator=iter(tensors.items()))  # provided by vLLM's Worker
        return len(tensors)

    def refresh_shared_weights(self) -> int:
        """Redo vLLM's after-load step for layers whose weight is another layer's (a tied LM head); returns how many.

        Call it after the last blob of an update. A reload post-processes only the layers that received tensors,
        and a tied head receives none (its weight arrives as the embedding's); on a CPU vLLM computes logits from
        a packed copy of the head made in that step, which would otherwise keep the weights loaded at start.
        """
        import torch

        sharing: dict[int, list] = {}
        for module in self.model_runner.model.modules():
            weight = getattr(module, "weight", None)
            # unquantized layers only: a quantized layer's after-load step may transform its weight, not repeatable
            if isinstance(weight, torch.nn.Parameter) and \
                    type(getattr(module, "quant_method", None)).__name__ == "UnquantizedEmbeddingMethod":
                sharing.setdefault(id(weight), []).append(module)
        refreshed = [module for modules in sharing.values() if len(modules) > 1 for module in modules]
        for module in refreshed:
            module.quant_method.process_weights_after_loading(module)
        return len(refreshed)
