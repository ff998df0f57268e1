"""What an update learns about each page, and how likely a page is to have changed.

An update compares each page before and after: *live* means saved and not
gone.  A page is ``new`` when it is live after and was not before (found for
the first time, or back after being gone), ``changed`` when its body or
depth differ, ``unchanged`` when neither does, ``gone`` when it was live and
is not any more.

The change rate is Cho and Garcia-Molina's estimator ("Estimating frequency
of change", ACM TOIT 2003) for a page visited ``n`` times after its first
visit, ``c`` of which found it changed:

    r = -ln((n - c + 0.5) / (n + 0.5))    changes per mean visit interval

and the probability that it has changed since its last visit, ``t`` seconds
ago with a mean interval ``I`` between visits, is ``1 - exp(-r t / I)``.  A
page with no history (``n = 0``) gets ``PRIOR``.

A sitemap's ``lastmod`` (``--sitemaps``) says more than the estimate: after
the page's last download, it has changed (1); not after, it has not (0).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from ..files.outputfile import OutputKind

NEW, CHANGED, UNCHANGED, GONE = "new", "changed", "unchanged", "gone"
CHANGES = (NEW, CHANGED, UNCHANGED, GONE)
GONE_STATUSES = (404, 410)  # an answer that says the page is gone (other failures keep it)
PRIOR = 0.5  # the change probability of a page never seen twice


@dataclass(frozen=True)
class Version:
    """What the page directory holds of a page: its depth and a digest of its body."""

    depth: int
    digest: bytes


def classify(before: Version | None, after: Version | None) -> str | None:
    """The change from *before* to *after* (None: not live); None when the page is not live either time."""
    if after is None:
        return GONE if before is not None else None
    if before is None:
        return NEW
    return UNCHANGED if before == after else CHANGED


def change_probability(visits: int, changes: int, since_last: float = 1.0, interval: float = 1.0) -> float:
    """How likely a page is to have changed since its last visit (see above), in [0, 1].

    *visits* counts every fetch of the page, the first included; *changes*
    those that found it changed (at most ``visits - 1``)."""
    observed = max(visits - 1, 0)
    if observed == 0:
        return PRIOR
    changes = min(max(changes, 0), observed)
    rate = -math.log((observed - changes + 0.5) / (observed + 0.5))
    if rate <= 0:  # never seen changed: 0 however long ago (0 times an infinite elapsed is not a number)
        return 0.0
    # Intervals of zero (visits in the same instant, as in tests) count as one interval.
    elapsed = since_last / interval if interval > 0 and since_last >= 0 else 1.0
    return 1.0 - math.exp(-rate * elapsed)


def sitemap_change(lastmod: str | None, fetched: str | None) -> float | None:
    """1.0 when the sitemap's *lastmod* is after *fetched* (the last download), 0.0 when it is
    not, None when either is unknown; both UTC, ``YYYY-MM-DDTHH:MM:SS`` then fractions (a WARC
    date's) or ``Z``, compared to the second (they sort as text)."""
    if not lastmod or not fetched or len(lastmod) < 19 or len(fetched) < 19:
        return None
    return 1.0 if lastmod[:19] > fetched[:19] else 0.0


# A changes file (``tse crawl --update --changes FILE``) is JSON lines, one a page, each beginning as
# ``json.dumps`` writes the update's entries (update/merge.py): ``{"docid": 3, "url": "...", "change": ...``.
# A first line longer than what is read of it (a URL of megabytes) is told by that beginning.
_CHANGE_START = re.compile(rb'\{"docid": [1-9][0-9]*, "url": "')


def looks_like_changes(start: bytes, whole: bool) -> bool:
    """Whether a file beginning with *start* (*whole*: all of it) is a changes file: its first line one
    page's change (a docID, a URL, one of CHANGES)."""
    line, newline, _ = start.partition(b"\n")
    if not (newline or whole):  # cut where the read stopped
        return _CHANGE_START.match(line) is not None
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):  # (not JSON, or nested deeper than Python goes)
        return False
    return (
        isinstance(entry, dict)
        and type(entry.get("docid")) is int
        and entry["docid"] > 0
        and isinstance(entry.get("url"), str)
        and entry.get("change") in CHANGES
    )


# What ``--changes`` may replace (``rules/files/outputfile.py``): a changes file, last night's.
CHANGES_FILE = OutputKind(
    noun="a changes file",
    what="the changes",
    not_it='its first line is no page\'s change, {"docid": ..., "url": ..., "change": ...}',
    recognises=looks_like_changes,
)
