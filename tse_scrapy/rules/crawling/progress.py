"""The crawler's progress log line, in the reference format (SPEC 2.3)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

# Control characters (C0, DEL, C1): a link's URL is printed as found, and one holding ESC or CSI could
# clear a terminal or set its title.  Percent-encoded, as in a URL; every other character as it is.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f]")


def progress_line(depth: int, word: str, url: str) -> str:
    """``printf("%2d %*s%9s: %s\\n", depth, depth, "", word, url)`` in the reference, the URL's control
    characters percent-encoded (``shown_url``)."""
    return f"{depth:2d} {'':{depth}}{word:>9}: {shown_url(url)}\n"


def shown_url(url: str) -> str:
    """*url* with its control characters percent-encoded (UTF-8, as a URL's): ``\\x1b[2J`` -> ``%1B[2J``."""
    if _CONTROLS.search(url) is None:
        return url
    return _CONTROLS.sub(lambda found: quote(found.group(), safe="", errors="surrogateescape"), url)


def found_link(meta: Mapping[str, Any]) -> bool:
    """Whether a request's *meta* is a link's found while scanning a page, before it is handed out (a
    redirect or a retry of it carries the scheduler's token, ``tse_token``, or the distributed
    scheduler's lease, ``tse_lease``)."""
    return "tse_found_at" in meta and "tse_token" not in meta and "tse_lease" not in meta
