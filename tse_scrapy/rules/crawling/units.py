"""Sizes for people: a byte count in bytes, kB, MB, GB or TB (powers of 1000)."""

from __future__ import annotations


def format_size(count: int) -> str:
    """``512 bytes``, ``8.7 kB``, ``195.2 MB`` ... one decimal from a kilobyte on."""
    if count < 1000:
        return f"{count} bytes"
    size = count / 1000
    for unit in ("kB", "MB", "GB"):
        if size < 1000:
            return f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:,.1f} TB"
