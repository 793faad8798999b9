"""Sizes in bytes as people read them: decimal units (1 MB = 1,000,000 bytes), as `du --si` and file managers
print them. The run log, the web pages and the error messages all write sizes with `decimal_size`."""

from __future__ import annotations

UNITS = ("kB", "MB", "GB", "TB", "PB")


def decimal_size(size_bytes: int | float | None) -> str:
    """6_900_000 -> '6.9 MB', 1_500 -> '1.5 kB', 512 -> '512 B', 2.5e12 -> '2.5 TB'; '' for None."""
    if size_bytes is None:
        return ""
    size = float(size_bytes)
    if abs(size) < 1000:
        return f"{int(size)} B"
    for unit in UNITS[:-1]:
        size /= 1000
        if abs(size) < 999.95:  # 999.96 kB would print as 1000.0 kB: 1.0 MB instead
            return f"{size:.1f} {unit}"
    return f"{size / 1000:.1f} {UNITS[-1]}"
