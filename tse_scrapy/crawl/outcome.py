"""A finished crawl's outcome: success, or the one-line reason it failed.

``scrapy crawl`` exits 0 even when a callback raised or a page could not be
written; both ``tse crawl`` and the project's ``scrapy crawl`` turn the
outcome into their exit status with ``report``.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..exitcodes import FAILED, OK, SUCCESS_REASONS
from ..rules.crawling.eta import format_clock
from ..rules.crawling.units import format_size

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


def summary_line(stats: Mapping[str, Any]) -> str:
    """The crawl in one line, from its stats: pages, links ignored, requests, bytes, time, pace."""
    saved = stats.get("tse/pages_saved", 0)
    seconds = stats.get("elapsed_time_seconds") or 0.0
    ignored = {
        "external": stats.get("offsite/filtered", 0),
        "duplicate": stats.get("dupefilter/filtered", 0),
        "denied": stats.get("tse/denied", 0),
    }
    per_minute = saved / seconds * 60 if seconds else 0.0
    line = (
        f"{_count(saved, 'page')} saved, {stats.get('tse/pages_failed', 0)} failed, "
        f"{_count(sum(ignored.values()), 'link')} ignored ({', '.join(f'{n} {kind}' for kind, n in ignored.items())}); "
        f"{_count(stats.get('downloader/request_count', 0), 'request')}, "
        f"{format_size(stats.get('downloader/response_bytes', 0))} in {format_clock(seconds, floor=True)}, "
        f"{per_minute:.1f} pages/min"
    )
    if any(name.startswith("tse/sitemap") for name in stats):  # --sitemaps
        line += (
            f"; sitemaps: {stats.get('tse/sitemaps_read', 0)} read, {stats.get('tse/sitemaps_cut', 0)} cut, "
            f"{_count(stats.get('tse/sitemap_urls', 0), 'URL')} taken, "
            f"{stats.get('tse/sitemap_urls_ignored', 0)} ignored"
        )
    if stats.get("tse/pdfs"):
        line += f"; {_count(stats['tse/pdfs'], 'PDF')}"
    if any(name.startswith("tse/render") for name in stats):  # --render
        line += (
            f"; rendered: {stats.get('tse/rendered', 0)} ({stats.get('tse/render_timeouts', 0)} cut at the timeout, "
            f"{stats.get('tse/render_crashes', 0)} crashed, {stats.get('tse/render_failed', 0)} failed; "
            f"{_count(stats.get('tse/render_requests', 0), 'browser request')}, "
            f"{stats.get('tse/render_robots_blocked', 0)} blocked by robots.txt, "
            f"{stats.get('tse/render_requests_cut', 0)} over the bound; "
            f"browser started anew {stats.get('tse/render_recycled', 0)} times by rule, "
            f"{stats.get('tse/render_browser_restarts', 0)} after a failure)"
        )
    return line


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"
