"""Scrapy's own cost of a fast crawl: Scrapy fetching a list of URLs, and
nothing of tse-scrapy's (no link extraction, no page files, no robots.txt, no
crawl state, no progress log).

``python bench/scrapy_floor.py URLS_FILE CONCURRENCY [MODE]``: one URL a line,
all fetched (``dont_filter``), the answers thrown away.  MODE is one of:

- ``default``: Scrapy's default components;
- ``bare``: Scrapy's engine, its default scheduler and downloader, its core
  stats, and a proxy middleware (tse-scrapy's, which decides once per host
  where Scrapy's scans the environment on every request); no other
  component: the least any crawler on Scrapy runs;
- ``tse-components``: the Scrapy components a ``tse crawl`` runs, set as
  tse-scrapy's settings set them (robots.txt obeyed, its middlewares, stats
  and extensions, its timeouts and size limits), with tse-scrapy's drop-in
  replacements for Scrapy's proxy middleware, stats collector and log
  formatter, and one item a page through Scrapy's item path; none of the
  rest of tse-scrapy (no scheduler, dupefilter, offsite or robots rules,
  links, pipeline, state or log).  robots.txt is left out of the list: the
  robots.txt middleware fetches it, as in ``tse crawl``.

crawl_bench runs them beside wget and ``tse crawl`` on the URLs that ``tse
crawl`` fetches.
"""

from __future__ import annotations

import sys

import scrapy
from scrapy.crawler import CrawlerProcess


class FloorSpider(scrapy.Spider):
    name = "floor"

    def __init__(self, urls: list[str], **kwargs):
        super().__init__(**kwargs)
        self.urls = urls

    async def start(self):
        for url in self.urls:
            yield scrapy.Request(url, callback=self.parse, dont_filter=True)

    def parse(self, response):
        if self.settings.getbool("FLOOR_ITEMS"):
            yield {"url": response.url}


def mode_settings(mode: str) -> dict:
    if mode == "default":
        return {"ROBOTSTXT_OBEY": False}
    if mode == "bare":
        # No spider middleware, no extension but the core stats, one downloader
        # middleware to reach the bench's proxy.
        return {
            "ROBOTSTXT_OBEY": False,
            "DOWNLOADER_MIDDLEWARES_BASE": {},
            "DOWNLOADER_MIDDLEWARES": {"tse_scrapy.crawl.downloader.httpproxy.CachedHttpProxyMiddleware": 750},
            "SPIDER_MIDDLEWARES_BASE": {},
            "EXTENSIONS_BASE": {"scrapy.extensions.corestats.CoreStats": 0},
        }
    if mode == "tse-components":
        from tse_scrapy import settings as tse

        def scrapy_components_only(components: dict) -> dict:
            return {path: order for path, order in components.items() if path.startswith("scrapy.")}

        return {
            "ROBOTSTXT_OBEY": True,
            "USER_AGENT": tse.USER_AGENT,
            "DOWNLOAD_TIMEOUT": tse.DOWNLOAD_TIMEOUT,
            "DOWNLOAD_MAXSIZE": tse.DOWNLOAD_MAXSIZE,
            "DOWNLOAD_WARNSIZE": tse.DOWNLOAD_WARNSIZE,
            "COOKIES_ENABLED": tse.COOKIES_ENABLED,
            "DOWNLOADER_MIDDLEWARES_BASE": tse.DOWNLOADER_MIDDLEWARES_BASE,
            "DOWNLOADER_MIDDLEWARES": {
                **scrapy_components_only(tse.DOWNLOADER_MIDDLEWARES),
                "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": 100,
                "tse_scrapy.crawl.downloader.httpproxy.CachedHttpProxyMiddleware": 750,
            },
            "SPIDER_MIDDLEWARES": tse.SPIDER_MIDDLEWARES,
            "REFERER_ENABLED": tse.REFERER_ENABLED,
            "EXTENSIONS_BASE": tse.EXTENSIONS_BASE,
            "STATS_CLASS": tse.STATS_CLASS,
            "LOG_FORMATTER": tse.LOG_FORMATTER,
            "FLOOR_ITEMS": True,
        }
    raise SystemExit(f"scrapy_floor: unknown mode {mode}")


def main(urls_file: str, concurrency: int, mode: str = "default") -> None:
    with open(urls_file) as lines:
        urls = [line.strip() for line in lines if line.strip()]
    if mode == "tse-components":
        urls = [url for url in urls if not url.endswith("/robots.txt")]
    process = CrawlerProcess(
        {
            **mode_settings(mode),
            "CONCURRENT_REQUESTS": concurrency,
            "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency,
            # As tse-scrapy's settings: a page's outputs one at a time, no delay,
            # no telnet console, no re-reading of the callback's source.
            "CONCURRENT_ITEMS": 1,
            "DOWNLOAD_DELAY": 0,
            "TELNETCONSOLE_ENABLED": False,
            "WARN_ON_GENERATOR_RETURN_VALUE": False,
            "LOG_LEVEL": "WARNING",
            "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
        }
    )
    process.crawl(FloorSpider, urls=urls)
    process.start()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), *sys.argv[3:4])
