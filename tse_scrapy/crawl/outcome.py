"""A finished crawl's outcome: success, or the one-line reason it failed.

``scrapy crawl`` exits 0 even when a callback raised or a page could not be
written; both ``tse crawl`` and the project's ``scrapy crawl`` turn the
outcome into their exit status with ``report``.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

from ..exitcodes import FAILED, OK, SUCCESS_REASONS

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


def crawl_failure(crawler: Crawler) -> str | None:
    """Why the finished crawl failed, in one line, or None if it succeeded."""
    stats = crawler.stats
    error = stats.get_value("tse/error")
    if error:
        return error
    reason = stats.get_value("finish_reason")
    if reason is None:
        return "the crawl was stopped before it could finish (a second Ctrl-C stops at once)"
    if reason not in SUCCESS_REASONS:
        return f"crawl stopped: {reason}"
    exceptions = stats.get_value("spider_exceptions/count")
    if exceptions:
        return f"the spider raised {exceptions} exception(s); see the log above"
    return None


def report(program: str, crawler: Crawler) -> int:
    """Print the failure (if any) as one line on stderr; return the exit status."""
    failure = crawl_failure(crawler)
    if failure is None:
        return OK
    # Last in the log (scrapyd shows a failed job as "finished": its log says why)...
    logging.getLogger("tse").critical("The crawl failed: %s", failure)
    # ...and one plain line on stderr.
    sys.stderr.write(f"{program}: {failure}\n")
    return FAILED
