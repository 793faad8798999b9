"""Model presets and loading: any Hugging Face causal LM or vision-language model, or the built-in `tiny` and
`tiny-vl` presets."""
