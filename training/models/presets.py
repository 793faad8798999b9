"""The built-in model presets by name, with what is known of them before they exist (no torch here)."""

TINY = "tiny"
TINY_VL = "tiny-vl"
PRESET_NAMES = (TINY, TINY_VL)
# The tiny decoder's shape; tiny-vl's language model has the same one.
ARCHITECTURE = dict(hidden_size=192, intermediate_size=512, num_hidden_layers=4, num_attention_heads=6,
                    num_key_value_heads=2, max_position_embeddings=2048)
PRESET_WINDOWS = {name: ARCHITECTURE["max_position_embeddings"] for name in PRESET_NAMES}
# Marks a finished preset directory; written last, so a crash mid-creation leaves none.
READY_MARKER = "mirrorlab-tiny-ready"
