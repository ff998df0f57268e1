"""QuietLogFormatter: Scrapy's log messages, without the per-page ones nobody sees, and without bodies.

Scrapy sets the root logger to NOTSET and filters by ``LOG_LEVEL`` in its
handler, so the two DEBUG messages of every page ("Crawled (200) ...",
"Scraped from ...") are built and turned into log records, then thrown away
below DEBUG: about 3 % of a fast crawl's CPU.  Here they are not built unless
``LOG_LEVEL`` shows them.

Scrapy's messages about an item ("Scraped from", "Dropped: REASON", "Error
processing") hold the item's repr: a page's whole body, megabytes of bytes on
stderr for a page that could not be written.  Here an item is named by its
URL and its size (``item_summary``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from scrapy.logformatter import LogFormatter, LogFormatterResult

from ...rules.crawling.secrets import mask_url
from ...rules.crawling.units import format_size

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.python.failure import Failure

# An item that has no URL is shown by its repr, cut to this many characters.
SHOWN_REPR = 200


def item_summary(item: Any) -> str:
    """*item* in a few words: ``PageItem http://h/a.html (depth 1, 5.8 MB)``, never its body."""
    fields = item if isinstance(item, Mapping) else getattr(item, "__dict__", {})
    url = fields.get("url")
    if not isinstance(url, str):
        shown = repr(item)
        return shown if len(shown) <= SHOWN_REPR else f"{shown[:SHOWN_REPR]}... ({len(shown)} characters)"
    details = []
    if isinstance(fields.get("depth"), int):
        details.append(f"depth {fields['depth']}")
    if isinstance(fields.get("body"), (bytes, bytearray, str)):
        details.append(format_size(len(fields["body"])))
    return f"{type(item).__name__} {mask_url(url)}" + (f" ({', '.join(details)})" if details else "")


class QuietLogFormatter(LogFormatter):
    """``LogFormatter`` whose ``crawled`` and ``scraped`` (DEBUG) return None when DEBUG is not logged,
    and whose messages about an item show ``item_summary`` instead of the item."""

    def __init__(self, debug: bool = True):
        self.debug = debug

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> QuietLogFormatter:
        level = crawler.settings.get("LOG_LEVEL")
        if isinstance(level, str):
            level = logging.getLevelName(level.upper())
        return cls(debug=not isinstance(level, int) or level <= logging.DEBUG)

    def crawled(self, request: Request, response: Response, spider: Spider) -> LogFormatterResult | None:
        return super().crawled(request, response, spider) if self.debug else None

    def scraped(self, item: Any, response: Response | Failure | None, spider: Spider) -> LogFormatterResult | None:
        return _summarized(super().scraped(item, response, spider), item) if self.debug else None

    def dropped(
        self, item: Any, exception: BaseException, response: Response | Failure | None, spider: Spider
    ) -> LogFormatterResult:
        return _summarized(super().dropped(item, exception, response, spider), item)

    def item_error(
        self, item: Any, exception: BaseException, response: Response | Failure | None, spider: Spider
    ) -> LogFormatterResult:
        return _summarized(super().item_error(item, exception, response, spider), item)


def _summarized(result: LogFormatterResult, item: Any) -> LogFormatterResult:
    """Scrapy's message about *item*, the item shown by ``item_summary``."""
    args = result["args"]
    if isinstance(args, dict) and "item" in args:
        result["args"] = {**args, "item": item_summary(item)}
    return result
