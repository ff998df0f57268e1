"""WarcMiddleware: archives every HTTP exchange as WARC/1.1 records (TSE_WARC)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class WarcMiddleware:
    """Placeholder until the WARC writer lands: not configured."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WarcMiddleware:
        raise NotConfigured
