"""Scrapy's own cost of a fast crawl: Scrapy fetching a list of URLs, and
nothing of tse-scrapy's (no link extraction, no page files, no robots.txt, no
crawl state, no progress log).

``python bench/scrapy_floor.py URLS_FILE CONCURRENCY [bare]``: one URL a line,
all fetched (``dont_filter``), the answers thrown away.  With Scrapy's default
components; with ``bare``, with none but the engine, the downloader and a
proxy middleware (tse-scrapy's, which decides once per host where Scrapy's
scans the environment on every request): the least any crawler on Scrapy
runs.  crawl_bench runs both beside wget and ``tse crawl`` on the URLs that
``tse crawl`` fetches.
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
        return None


# ``bare``: no spider middleware, no extension but the stats the engine reads,
# one downloader middleware to reach the bench's proxy.
BARE = {
    "DOWNLOADER_MIDDLEWARES_BASE": {},
    "DOWNLOADER_MIDDLEWARES": {"tse_scrapy.crawl.httpproxy.CachedHttpProxyMiddleware": 750},
    "SPIDER_MIDDLEWARES_BASE": {},
    "EXTENSIONS_BASE": {"scrapy.extensions.corestats.CoreStats": 0},
}


def main(urls_file: str, concurrency: int, bare: bool = False) -> None:
    with open(urls_file) as lines:
        urls = [line.strip() for line in lines if line.strip()]
    process = CrawlerProcess(
        {
            **(BARE if bare else {}),
            "CONCURRENT_REQUESTS": concurrency,
            "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency,
            # As tse-scrapy's settings: a page's outputs one at a time, no delay,
            # no telnet console, no re-reading of the callback's source.
            "CONCURRENT_ITEMS": 1,
            "DOWNLOAD_DELAY": 0,
            "ROBOTSTXT_OBEY": False,
            "TELNETCONSOLE_ENABLED": False,
            "WARN_ON_GENERATOR_RETURN_VALUE": False,
            "LOG_LEVEL": "WARNING",
            "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
        }
    )
    process.crawl(FloorSpider, urls=urls)
    process.start()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3:] == ["bare"])
