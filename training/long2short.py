"""Long2short methods by name (METHOD.md section 8)."""

from common.registry import Registry

# Filled by the long2short work: merge, shortest_rejection, dpo, long2short_rl.
long2short_methods = Registry("long2short method")
