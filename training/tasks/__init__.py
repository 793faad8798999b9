"""Task families with verifiable answers."""
