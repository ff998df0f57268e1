"""RedirectWithoutRefererMiddleware: Scrapy's redirects, in a crawl that may send no Referer.

A tse crawl sends no Referer by default (settings.py: REFERER_ENABLED), as the
reference crawler sends none.  Scrapy's RedirectMiddleware then logs a
warning at every start that it found no RefererMiddleware to set the header
on redirects; there is no header to set.  This subclass looks for one only
when REFERER_ENABLED; either way it is Scrapy's middleware.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.redirect import RedirectMiddleware

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class RedirectWithoutRefererMiddleware(RedirectMiddleware):
    """Scrapy's RedirectMiddleware, silent about the Referer when REFERER_ENABLED is off."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedirectWithoutRefererMiddleware:
        if crawler.settings.getbool("REFERER_ENABLED"):
            return super().from_crawler(crawler)
        # As Scrapy's from_crawler, without the engine_started look-up that warns.
        middleware = cls(crawler.settings)
        middleware.crawler = crawler
        return middleware
