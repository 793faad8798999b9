"""A thread-safe least-recently-used cache with hit and miss counts."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any


class LruCache:
    """Maps keys to values, dropping the least recently used entry beyond maxsize (0 disables caching)."""

    def __init__(self, maxsize: int):
        if maxsize < 0:
            raise ValueError(f"cache maxsize must be non-negative, got {maxsize}")
        self.maxsize = maxsize
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any | None:
        """The value stored under key (now the most recently used), or None; counts a hit or a miss."""
        with self._lock:
            if key not in self._entries:
                self.misses += 1
                return None
            self.hits += 1
            self._entries.move_to_end(key)
            return self._entries[key]

    def put(self, key: Hashable, value: Any) -> None:
        """Store value under key, evicting the least recently used entry when full."""
        if self.maxsize == 0:
            return
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            if len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
