"""The crawler's progress log on stdout, in the reference format (SPEC 2.3)."""

from __future__ import annotations

import sys


def progress_line(depth: int, word: str, url: str) -> str:
    # printf("%2d %*s%9s: %s\n", depth, depth, "", word, url) in the reference.
    return f"{depth:2d} {'':{depth}}{word:>9}: {url}\n"


def log_progress(depth: int, word: str, url: str) -> None:
    sys.stdout.write(progress_line(depth, word, url))


def log_link(request, verdict: str) -> None:
    """Log ``Found`` and the verdict for a link found on a scanned page."""
    depth = request.meta["tse_found_at"]
    url = request.meta.get("tse_link", request.url)
    log_progress(depth, "Found", url)
    log_progress(depth, verdict, url)


def is_found_link(request) -> bool:
    """True for a request made from a link found while scanning a page, before
    it is handed out (a redirect or retry of it carries the scheduler's token,
    or the distributed scheduler's lease)."""
    meta = request.meta
    return "tse_found_at" in meta and "tse_token" not in meta and "tse_lease" not in meta
