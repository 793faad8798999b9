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
