"""The crawler's progress log line, in the reference format (SPEC 2.3)."""

from __future__ import annotations


def progress_line(depth: int, word: str, url: str) -> str:
    """``printf("%2d %*s%9s: %s\\n", depth, depth, "", word, url)`` in the reference."""
    return f"{depth:2d} {'':{depth}}{word:>9}: {url}\n"
