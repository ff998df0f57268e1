"""The crawler's progress log on stdout (SPEC 2.3): one line per event."""

from __future__ import annotations

import sys

from scrapy import Request

from ..rules.progress import progress_line


def log_progress(depth: int, word: str, url: str) -> None:
    sys.stdout.write(progress_line(depth, word, url))


def log_link(request: Request, verdict: str) -> None:
    """Log ``Found`` and the verdict for a link found on a scanned page."""
    depth = request.meta["tse_found_at"]
    url = request.meta.get("tse_link", request.url)
    log_progress(depth, "Found", url)
    log_progress(depth, verdict, url)


def is_found_link(request: Request) -> bool:
    """True for a request made from a link found while scanning a page, before
    it is handed out (a redirect or retry of it carries the scheduler's token,
    or the distributed scheduler's lease)."""
    meta = request.meta
    return "tse_found_at" in meta and "tse_token" not in meta and "tse_lease" not in meta
