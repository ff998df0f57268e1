"""SitemapReader: the page URLs of the prefixes' sitemaps (``--sitemaps``), as entry points.

For each prefix's host, the ``Sitemap:`` lines of its robots.txt, else
``PREFIX/sitemap.xml``; a sitemap index leads to its sitemaps, at most
``MAX_SITEMAP_DEPTH`` levels down and ``MAX_SITEMAP_FILES`` files in all, each
fetched once (named another way, with a fragment say, it is the same file: ``sitemap_key``).
Sitemaps are fetched by the engine itself, as Scrapy's robots.txt middleware
fetches robots.txt: through the downloader middlewares
(robots.txt rules, politeness, the WARC), never through the scheduler, the
spider or the page directory.  What a sitemap file holds is read by the pure
``rules/web/sitemaps.py`` (in a thread), bounded (50,000 URLs, 50 MB uncompressed
a file; TSE_SITEMAP_PAGES URLs and TSE_SITEMAP_CHARACTERS of them a crawl): a file cut short (a gzip bomb,
too many URLs), an index chain too deep or too long, a sitemap that cannot be
fetched is counted (``tse/sitemaps_cut``) and logged on one line; the crawl
goes on with what was read.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.threads import deferToThread

from ..rules.crawling.secrets import mask_url
from ..rules.web.sitemaps import (
    MAX_SITEMAP_BYTES,
    MAX_SITEMAP_DEPTH,
    SitemapEntry,
    is_html_page,
    read_sitemap,
    sitemap_key,
    sitemap_urls_in_robots,
)
from .downloader.offsite import SITEMAP_REQUEST, PrefixOffsiteMiddleware
from .downloader.robots import TseRobotsTxtMiddleware

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

# Sitemap files read in one crawl, whatever their nesting: an endless chain of
# distinct index URLs ends here.
MAX_SITEMAP_FILES = 1_000
# A gzipped sitemap is at most 50 MB uncompressed: its transfer cannot be larger.
MAX_TRANSFER_BYTES = MAX_SITEMAP_BYTES + 1024 * 1024


class SitemapReader:
    """Fetches and reads the sitemaps of one crawl's prefixes."""

    def __init__(self, crawler: Crawler):
        self.crawler = crawler
        self.stats = crawler.stats
        self.prefixes: list[str] = crawler.settings.getlist("TSE_PREFIXES")
        # (0: no bound, as TSE_PAGE_LINKS's and DEPTH_LIMIT's)
        self.max_pages = crawler.settings.getint("TSE_SITEMAP_PAGES")
        self.max_characters = crawler.settings.getint("TSE_SITEMAP_CHARACTERS")
        # The PREFIX/sitemap.xml looked for where robots.txt names none: missing, no fault of the site.
        self._guessed: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SitemapReader:
        return cls(crawler)

    async def entries(self) -> AsyncIterator[SitemapEntry]:
        """Every page entry of every sitemap, in the order read (a URL may come twice)."""
        queue: deque[tuple[str, int]] = deque((url, 1) for url in await self._first_sitemaps())
        seen: set[str] = set()
        taken = characters = 0
        offsite = self._offsite()
        while queue:
            url, level = queue.popleft()
            # One file, however it is named: "index.xml#again", "HTTP://HOST//index.xml" and "index.xml"
            # were each fetched and read (an index naming one 50 MB sitemap 1,000 times, read 1,000 times).
            key = sitemap_key(url)
            if key in seen:
                continue
            seen.add(key)
            if len(seen) > MAX_SITEMAP_FILES:
                self._cut(url, f"more than {MAX_SITEMAP_FILES} sitemap files")
                return
            if level > MAX_SITEMAP_DEPTH:
                self._cut(url, f"sitemap indexes nested more than {MAX_SITEMAP_DEPTH} deep")
                continue
            if self._closing():
                return  # the crawl is stopping (a page limit, Ctrl-C): no more sitemaps
            body = await self._fetch(url)
            if body is None:
                continue
            # In a thread: a hostile file of 50 MB can take seconds to parse, the crawl goes on meanwhile.
            sitemap = await maybe_deferred_to_future(deferToThread(read_sitemap, body, url))
            del body
            self.stats.inc_value("tse/sitemaps_read")
            if sitemap.cut:
                self._cut(url, sitemap.cut)
            if sitemap.kind == "sitemapindex":
                for child in sitemap.entries:
                    if len(seen) + len(queue) > MAX_SITEMAP_FILES:  # never read: not kept either
                        self.stats.inc_value("tse/sitemaps_ignored")
                    elif offsite is None or offsite.on_prefix_host(child.loc):
                        queue.append((child.loc, level + 1))
                    else:  # sitemaps.org: an index names sitemaps of its own host
                        self.stats.inc_value("tse/sitemaps_ignored")
                continue
            for entry in sitemap.entries:
                if 0 < self.max_pages <= taken:
                    self._cut(url, f"more than {self.max_pages} page URLs in the sitemaps")
                    return
                characters += len(entry.loc)
                if 0 < self.max_characters < characters:
                    self._cut(url, f"more than {self.max_characters} characters of page URLs in the sitemaps")
                    return
                taken += 1
                yield entry

    async def _first_sitemaps(self) -> list[str]:
        """The robots.txt ``Sitemap:`` lines of each prefix's host, else ``PREFIX/sitemap.xml``."""
        found: list[str] = []
        hosts: dict[str, list[str]] = {}
        for prefix in self.prefixes:
            parts = urlsplit(prefix)
            hosts.setdefault(f"{parts.scheme}://{parts.netloc}", []).append(prefix)
        for host, prefixes in hosts.items():
            named = sitemap_urls_in_robots(await self._robots_txt(f"{host}/robots.txt"))
            offsite = self._offsite()
            named = [url for url in named if offsite is None or offsite.on_prefix_host(url)]
            guessed = [] if named else [urljoin(prefix, "sitemap.xml") for prefix in prefixes]
            self._guessed.update(guessed)
            found += named or guessed
        return list(dict.fromkeys(found))

    async def _robots_txt(self, url: str) -> bytes:
        robots = self._robots_middleware()
        if robots is not None:  # fetched once, for its rules and its Sitemap: lines
            return await robots.robots_txt(url)
        return await self._fetch(url, quiet=True) or b""  # ROBOTSTXT_OBEY off: read for its Sitemap: lines only

    async def _fetch(self, url: str, quiet: bool = False) -> bytes | None:
        """The body of a 200 answer for *url*, or None (counted and logged unless *quiet*)."""
        request = Request(url, meta={SITEMAP_REQUEST: True, "download_maxsize": MAX_TRANSFER_BYTES})
        try:
            response: Response = await self.crawler.engine.download_async(request)
        except IgnoreRequest as error:  # robots.txt forbids it, say
            why = f"not fetched: {error}"
        except Exception as error:  # a network error: the crawl goes on without this sitemap
            if self._closing():
                return None  # cancelled as the crawl stops: not the sitemap's fault
            why = f"not fetched: {type(error).__name__}: {error}"
        else:
            # None there, no fault of the site: a 404, or an HTML page sent with a 200 (a soft 404).
            if url in self._guessed and (
                response.status in (404, 410) or (response.status == 200 and is_html_page(response.body))
            ):
                if not quiet:
                    self.stats.inc_value("tse/sitemaps_missing")
                    said = "an HTML page" if response.status == 200 else f"http {response.status}"
                    logger.info("No sitemap at %s (%s)", mask_url(url), said)
                return None
            if response.status == 200:
                return response.body
            why = f"http {response.status}"
        if not quiet:
            self._cut(url, why)
        return None

    def _closing(self) -> bool:
        engine = self.crawler.engine
        slot = getattr(engine, "_slot", None)  # Scrapy 2.19's: closing once the spider is being closed
        return not engine.running or slot is None or slot.closing is not None

    def _cut(self, url: str, why: str) -> None:
        self.stats.inc_value("tse/sitemaps_cut")
        logger.warning("Sitemap %s: %s", mask_url(url), why)

    def _robots_middleware(self) -> TseRobotsTxtMiddleware | None:
        try:
            return self.crawler.get_downloader_middleware(TseRobotsTxtMiddleware)
        except RuntimeError:
            return None

    def _offsite(self) -> PrefixOffsiteMiddleware | None:
        try:
            return self.crawler.get_downloader_middleware(PrefixOffsiteMiddleware)
        except RuntimeError:
            return None
