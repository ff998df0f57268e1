"""ConditionalRequestMiddleware: asks for known pages with their validators."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class ConditionalRequestMiddleware:
    """Placeholder until updates land: not configured."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ConditionalRequestMiddleware:
        raise NotConfigured
