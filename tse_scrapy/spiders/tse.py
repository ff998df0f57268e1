"""The TSE crawler as a Scrapy spider (SPEC 2)."""

from __future__ import annotations

import os
import shutil
import tempfile

import scrapy

from ..crawlargs import ArgumentError, check_crawl_args, check_no_page_limit, check_resume
from ..items import PageItem
from ..links import extract_links_html, extract_links_tse
from ..progress import log_progress
from ..siteserver import SiteServer
from ..signals import page_done
from ..urls import normalize_url

EXTRACTORS = {"html": extract_links_html, "tse": extract_links_tse}
UNFETCHABLE_URL = "data:,"


class TseSpider(scrapy.Spider):
    """Fetch, save and scan pages from ``seed`` down to ``depth``."""

    name = "tse"

    def __init__(self, seed=None, pagedir=None, depth=None, order=None, links="html",
                 prefix=None, resume=None, allow=None, deny=None, deny_ext=None, **kwargs):
        # Extra keyword arguments (scrapyd's _job, ...) are accepted and ignored.
        super().__init__(**kwargs)
        self.arguments = dict(seed=seed, pagedir=pagedir, depth=depth, order=order, links=links,
                              prefix=prefix, allow=allow, deny=deny, deny_ext=deny_ext)
        self.resume = resume
        self.check_site_url = None
        self.crawl_args = None
        self.seeds = None       # a worker joining a distributed crawl brings none
        if not self.checking:
            try:
                self._check_arguments()
            except ArgumentError:
                # A worker joining a distributed crawl takes what it lacks
                # from Redis (from_crawler); elsewhere this is raised there.
                pass

    @property
    def checking(self) -> bool:
        """Run by `scrapy check` without arguments: crawl the local check site."""
        return bool(os.environ.get("SCRAPY_CHECK")) and self.arguments["seed"] is None

    def _check_arguments(self, crawl_args=None):
        self.crawl_args = crawl_args or check_crawl_args(**self.arguments)
        self.extract_links = EXTRACTORS[self.crawl_args.links]
        self.tse_extensions = self.crawl_args.deny_ext is None

    def _serve_check_site(self, settings):
        """For `scrapy check tse`: the check site on 127.0.0.1, a scratch page directory."""
        self._check_server = SiteServer(settings["TSE_CHECK_SITE"]).start()
        self.check_site_url = self._check_server.url + "/"
        self.arguments.update(seed=self.check_site_url + "index.html", pagedir=tempfile.mkdtemp(prefix="tse-check-"),
                              depth=settings["TSE_CHECK_DEPTH"], prefix=self.check_site_url)
        self._check_arguments()

    def closed(self, reason):
        if self.check_site_url:
            self._check_server.stop()
            shutil.rmtree(self.crawl_args.pagedir, ignore_errors=True)

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        if spider.checking:
            spider._serve_check_site(crawler.settings)
        if crawler.settings.get("TSE_REDIS_URL") and not spider.checking:
            spider._join_distributed_crawl(crawler.settings)
        else:
            spider._check_arguments(spider.crawl_args)
            check_resume(spider.crawl_args, spider.resume, crawler.settings.get("JOBDIR"))
        args = spider.crawl_args
        if spider.check_site_url:
            # Contract requests wrap their callbacks: they cannot be stored.
            crawler.settings.set("TSE_STATE_ENABLED", False, priority="cmdline")
            crawler.settings.set("DOWNLOAD_DELAY", 0, priority="cmdline")   # a local site
        crawler.settings.set("TSE_ORDER", args.order, priority="spider")
        crawler.settings.set("TSE_PREFIXES", list(args.prefixes), priority="spider")
        crawler.settings.set("TSE_PAGEDIR", args.pagedir, priority="spider")
        crawler.settings.set("TSE_ARGUMENTS", args.identity(), priority="spider")
        crawler.settings.set("TSE_ALLOW", list(args.allow), priority="spider")
        crawler.settings.set("TSE_DENY", list(args.deny), priority="spider")
        crawler.settings.set("TSE_DENY_EXT", args.deny_ext, priority="spider")
        # Scrapy's CLOSESPIDER_PAGECOUNT counts responses and overshoots under
        # concurrency: the scheduler and the pipeline stop at exactly N pages.
        limit = crawler.settings.getint("CLOSESPIDER_PAGECOUNT")
        if limit:
            crawler.settings.set("TSE_MAX_PAGES", limit, priority="cmdline")
            crawler.settings.set("CLOSESPIDER_PAGECOUNT", 0, priority="cmdline")
        # Scrapy's DEPTH_LIMIT=0 means unlimited; maxDepth 0 is handled by
        # never scanning a page at maxDepth.
        crawler.settings.set("DEPTH_LIMIT", args.depth, priority="spider")
        return spider

    def _join_distributed_crawl(self, settings):
        """Create or join the crawl in Redis; its components replace the embedded ones."""
        from ..redisstore import join_crawl

        check_no_page_limit(settings.get)
        crawl, args, _ = join_crawl(settings["TSE_REDIS_URL"], settings.get("TSE_CRAWL_NAME"), self.arguments)
        self._check_arguments(args)
        if not self.arguments["seed"]:
            self.seeds = ()
        for name, value in (("TSE_CRAWL_NAME", crawl.name),
                            ("SCHEDULER", "tse_scrapy.redisscheduler.RedisTseScheduler"),
                            ("DUPEFILTER_CLASS", "tse_scrapy.redisdupefilter.RedisUrlDupeFilter"),
                            ("TSE_STATE_ENABLED", False),
                            # One politeness clock per host, in Redis (redispoliteness.py).
                            ("TSE_HOST_DELAY", settings.getfloat("DOWNLOAD_DELAY")),
                            ("DOWNLOAD_DELAY", 0)):
            settings.set(name, value, priority="cmdline")
        self.logger.info("Distributed crawl %s: seeds %s, depth %d, prefixes %s, pages in %s", crawl.name,
                         ", ".join(args.seeds), args.depth, ", ".join(args.prefixes), args.pagedir)

    async def start(self):
        seeds = self.crawl_args.seeds if self.seeds is None else self.seeds
        for seed in seeds:
            yield scrapy.Request(seed, callback=self.parse, errback=self.fetch_failed, meta={"depth": 0})
        if self.crawler.settings.get("TSE_REDIS_URL") and seeds:
            # Every seed is queued now: workers may tell an empty frontier from a crawl not begun.
            from ..distributed import distributed_crawl

            distributed_crawl(self.crawler).crawl.mark_seeded()

    def parse(self, response):
        """Save the page; below maxDepth, follow its links first.

        The page item comes last: the scheduler hands out the next page once
        it has been saved, and by then every link has been queued.

        @local_site /index.html
        @page_depth 0
        @returns items 1 1
        @returns requests 7 7
        @scrapes url depth body
        @fetches_only_internal
        """
        depth = response.meta.get("depth", 0)
        url = self.normalize(response.url) or response.url
        if response.status != 200:
            self._failed(response.request, depth)
            return
        log_progress(depth, "Fetched", url)
        if depth < self.crawl_args.depth:
            log_progress(depth, "Scanning", url)
            for link in self.extract_links(response.body, url):
                yield self._link_request(link, depth, url)
        meta = response.meta
        yield PageItem(url=url, depth=depth, body=response.body, state_row=meta.get("tse_row"),
                       doc_id=meta.get("tse_doc_id"), replayed="tse_replay_doc" in meta)

    def parse_at_max_depth(self, response):
        """`parse`, checked on a page at maxDepth: saved, not scanned.

        @local_site /about.html
        @page_depth 1
        @returns items 1 1
        @returns requests 0 0
        """
        return self.parse(response)

    def fetch_failed(self, failure):
        request = failure.request
        self._failed(request, request.meta.get("depth", 0))

    def _failed(self, request, depth):
        first_url = request.meta.get("redirect_urls", [request.url])[0]
        log_progress(depth, "Failed", self.normalize(first_url) or first_url)
        self.crawler.signals.send_catch_log(page_done, request=request)

    def normalize(self, url):
        return normalize_url(url, self.tse_extensions)

    def _link_request(self, link, depth, page_url):
        # External and non-normalizable links are requested too, so that the
        # offsite middleware logs them in link order; it drops them unfetched.
        url = self.normalize(link) or link
        meta = {"depth": depth + 1, "tse_found_at": depth, "tse_link": url, "tse_found_on": page_url}
        try:
            return scrapy.Request(url, callback=self.parse, errback=self.fetch_failed, meta=meta)
        except (ValueError, UnicodeError):
            # A link Scrapy cannot even represent (a bad port, host or scheme):
            # an external placeholder keeps it in order in the log.
            return scrapy.Request(UNFETCHABLE_URL, meta=meta)
