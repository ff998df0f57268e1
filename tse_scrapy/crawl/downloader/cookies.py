"""OptionalCookiesMiddleware: Scrapy's cookie handling, only when COOKIES_ENABLED.

A tse crawl keeps no cookies by default (settings.py), as the reference
crawler does not.  Scrapy's CookiesMiddleware turns itself off then, but its
module is imported all the same, and it imports tldextract, requests and
urllib3: 0.05 s of every crawl's start-up.  This stand-in imports it only
when cookies are on, and is then Scrapy's middleware itself.  To use a
cookie middleware of your own, replace this one in DOWNLOADER_MIDDLEWARES.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.downloadermiddlewares.cookies import CookiesMiddleware


class OptionalCookiesMiddleware:
    """Builds Scrapy's CookiesMiddleware when COOKIES_ENABLED, else is not configured."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CookiesMiddleware:
        if not crawler.settings.getbool("COOKIES_ENABLED"):
            raise NotConfigured
        from scrapy.downloadermiddlewares.cookies import CookiesMiddleware

        return CookiesMiddleware.from_crawler(crawler)
