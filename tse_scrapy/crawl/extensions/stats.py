"""TseStatsCollector: Scrapy's in-memory stats collector, without its per-access shim.

Scrapy 2.19's ``StatsCollector.__getattribute__`` wraps its methods to warn
about a deprecated ``spider`` argument, and answers every attribute access
(``self._stats`` inside ``inc_value`` included) by first raising and catching
an ``AttributeError``: 1.6 µs a call against 0.1 µs, and a crawl makes tens of
calls a page.  Nothing here passes ``spider``; the stats are the same.

Secrets never appear in the log: the stats dump (``STATS_DUMP``, shown with
``-v``) has every URL's password or token masked (``rules/crawling/secrets``).
"""

from __future__ import annotations

from scrapy.statscollectors import MemoryStatsCollector

from ...rules.crawling.secrets import mask_secrets


class TseStatsCollector(MemoryStatsCollector):
    """``MemoryStatsCollector`` with plain attribute access, its dump's secrets masked."""

    __getattribute__ = object.__getattribute__

    def __str__(self) -> str:
        """The stats as Scrapy dumps them in the log at the crawl's end, every URL's password or token masked
        (a stat that quotes a URL: a failure's message)."""
        return mask_secrets(super().__str__())
