"""The megatron trainer backend: Megatron-core GPT models built from Hugging Face Qwen2/Llama checkpoints.

Every megatron import lives inside this package (and inside functions), so the rest of training/ imports
without megatron-core installed.
"""
