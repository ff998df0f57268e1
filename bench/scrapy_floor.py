"""Scrapy's own cost of a fast crawl: Scrapy with its default components
fetching a list of URLs, and nothing of tse-scrapy's (no link extraction, no
page files, no robots.txt, no crawl state, no progress log).

``python bench/scrapy_floor.py URLS_FILE CONCURRENCY``: one URL a line, all
fetched (``dont_filter``), the answers thrown away.  crawl_bench runs it beside
wget and ``tse crawl`` on the URLs that ``tse crawl`` fetches.
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


def main(urls_file: str, concurrency: int) -> None:
    with open(urls_file) as lines:
        urls = [line.strip() for line in lines if line.strip()]
    process = CrawlerProcess(
        {
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
    main(sys.argv[1], int(sys.argv[2]))
