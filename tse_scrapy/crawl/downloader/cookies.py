"""OptionalCookiesMiddleware: Scrapy's cookie handling, only when COOKIES_ENABLED.

A tse crawl keeps no cookies by default (settings.py), as the reference
crawler does not.  Scrapy's CookiesMiddleware turns itself off then, but its
module is imported all the same, and it imports tldextract, requests and
urllib3: 0.05 s of every crawl's start-up.  This stand-in imports it only
when cookies are on, and is then Scrapy's middleware itself.  To use a
cookie middleware of your own, replace this one in DOWNLOADER_MIDDLEWARES.

Scrapy's middleware asks tldextract which domains are public suffixes (a
cookie set for ``co.uk`` is refused), and tldextract fetches the Public Suffix
List from publicsuffix.org the first time, a host the crawl never named (a
WARNING and a traceback when it cannot be reached).  Here it reads the list
tldextract ships (its pinned version's snapshot), offline, and writes no cache.
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
        from scrapy.downloadermiddlewares import cookies
        from tldextract import TLDExtract

        # (Scrapy 2.19's module-level splitter, pinned: a module attribute its _is_public_domain reads.)
        cookies._split_domain = TLDExtract(cache_dir=None, suffix_list_urls=(), include_psl_private_domains=True)
        return cookies.CookiesMiddleware.from_crawler(crawler)
