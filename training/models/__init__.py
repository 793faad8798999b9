"""Model presets and loading: any Hugging Face causal LM, or the built-in `tiny` preset."""
