"""Pure-Python building blocks shared by training/, evaluation/, workers/ and webapp/:
the config system (frozen dataclasses with validated knobs) and the name registry."""
