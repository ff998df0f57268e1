"""TseScheduler: hands out requests in TSE stack order, breadth-first, or by priority.

A page is *in flight* from the moment it is handed out until its file starts
being written (``page_writing``: its links are all queued and its docID is
taken), or its fetch failed.  ``order=tse`` hands out
the next page only when none is in flight, so every link of the previous page
has been pushed (SPEC 2.2.3); ``order=bfs`` hands out a page of depth d only
when no shallower page is in flight, so every page gets its shortest depth
at any concurrency; ``order=bfs`` and ``order=priority`` keep at most
CONCURRENT_REQUESTS pages in flight, so that scores include every link found
so far, and one at a time the pages' links are queued in the order of the
pages (the same order every run, and resumed).  With a
page limit, no more pages are in flight than are still needed.  A request
that replaces one in flight (a redirect or a retry, which keep the
``tse_token`` meta key) is served first.

With a durable crawl state (``resume``), every request pushed is also
written to it, and a resumed crawl starts from what it holds: the pages that
were being saved first, then the frontier in its order.
"""

from __future__ import annotations

import itertools
import logging
from collections import OrderedDict, deque
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider, signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.exceptions import CloseSpider
from scrapy.http import Response
from scrapy.statscollectors import StatsCollector
from scrapy.utils.misc import build_from_crawler, load_object
from scrapy.utils.request import request_from_dict
from twisted.python.failure import Failure

from ...exitcodes import PAGE_LIMIT
from ...resume.extension import CrawlStateExtension, crawl_state
from ...resume.statedb import ENDED
from ...rules.crawling.eta import FrontierCensus
from ...rules.files import pagedir
from ...update.extension import UpdateExtension, redirect_chain, sitemaps_read, update_session
from ..progresslog import is_found_link, log_link
from ..signals import page_done, page_writing
from .dupefilter import NormalizedUrlDupeFilter
from .engineturn import wake_engine
from .frontier import FRONTIERS, Prioritizer, StoredRequest, request_depth
from .serialize import request_to_dict

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

# Requests pushed lately, kept as they are: order=tse hands out most pages a few
# pushes after their own, order=bfs a level's worth later (a frontier smaller
# than this never reads one back), and reading one back from the crawl state (a
# query, unpickling, a Request built again) is a twentieth of a page's cost.
# About 0.8 kB each: 3.3 MB at most.
RECENT_REQUESTS = 4096


class TseScheduler(BaseScheduler):
    """Hands out one page at a time in stack order, level by level, or by priority (see above)."""

    def __init__(
        self,
        dupefilter: NormalizedUrlDupeFilter,
        stats: StatsCollector,
        order: str = "tse",
        state_extension: CrawlStateExtension | None = None,
        directory: str | None = None,
        prioritizer: Prioritizer | None = None,
        max_pages: int = 0,
        concurrency: int = 1,
        update: UpdateExtension | None = None,
    ):
        self.df = dupefilter
        self.stats = stats
        self.order = order
        self.frontier = FRONTIERS[order](prioritizer) if order == "priority" else FRONTIERS[order]()
        self.max_pages = max_pages
        self.concurrency = concurrency
        self.saved = 0
        self.replacements: deque = deque()
        self.resumed: deque = deque()  # pages interrupted mid-save, refetched first
        self.state = state_extension.state if state_extension else None
        self.resuming = bool(state_extension and state_extension.resuming)
        self.directory = directory
        self.in_flight: dict[int, int] = {}  # token -> depth
        self.writing: set[int] = set()  # tokens of pages whose files are being written
        self.crawler: Crawler | None = None  # set by from_crawler
        self.census = FrontierCensus()  # the frontier by host and depth, for the progress display
        # With a crawl state, the stack and bfs frontiers keep requests on disk
        # (the priority frontier needs them in memory to score them).
        self.stored = self.state is not None and order != "priority"
        self.recent: OrderedDict[int, Request] = OrderedDict()  # row -> request, the last RECENT_REQUESTS pushed
        self._tokens = itertools.count(1)
        # An update in priority order queues every live page at once, scored by
        # the prioritizer (a revisit policy); the links found tell, at the
        # end, which of them are still reachable.
        self.update = update
        self.revisiting = bool(update and update.is_update and order == "priority")
        # With --sitemaps such an update hands out no page before the sitemaps are read: their
        # lastmods say which pages changed (the prioritizer), and every page is scored by then.
        self.waiting_for_sitemaps = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> TseScheduler:
        dupefilter = build_from_crawler(load_object(crawler.settings["DUPEFILTER_CLASS"]), crawler)
        settings = crawler.settings
        scheduler = cls(
            dupefilter,
            crawler.stats,
            settings.get("TSE_ORDER", "tse"),
            crawl_state(crawler),
            settings.get("TSE_PAGEDIR"),
            build_from_crawler(load_object(settings["TSE_PRIORITIZER"]), crawler),
            settings.getint("TSE_MAX_PAGES"),
            settings.getint("CONCURRENT_REQUESTS"),
            update_session(crawler),
        )
        scheduler.crawler = crawler
        scheduler.waiting_for_sitemaps = scheduler.revisiting and settings.getbool("TSE_SITEMAPS")
        crawler.signals.connect(scheduler._page_writing, signal=page_writing)
        crawler.signals.connect(scheduler._item_saved, signal=signals.item_scraped)
        for signal in (signals.item_dropped, signals.item_error):
            crawler.signals.connect(scheduler._item_not_saved, signal=signal)
        crawler.signals.connect(scheduler._spider_error, signal=signals.spider_error)
        crawler.signals.connect(scheduler._page_done, signal=page_done)
        crawler.signals.connect(scheduler._sitemaps_read, signal=sitemaps_read)
        crawler.signals.connect(scheduler._spider_idle, signal=signals.spider_idle)
        return scheduler

    def _sitemaps_read(self, lastmods: dict[str, str]) -> None:
        if not self.waiting_for_sitemaps:
            return
        self.waiting_for_sitemaps = False
        # Also on resume: an update stopped while reading the sitemaps had queued none (the
        # dupefilter drops those it had queued or fetched).
        self._queue_revisits(self.spider)
        wake_engine(self.crawler)

    def open(self, spider: Spider) -> Any:
        self.spider = spider
        if self.resuming:
            self._restore(spider)
        elif self.revisiting and not self.waiting_for_sitemaps:
            self._queue_revisits(spider)
        return self.df.open()

    def _queue_revisits(self, spider: Spider) -> None:
        for page in self.update.revisits():
            meta = {"depth": page.depth, "tse_revisit": True}
            self.enqueue_request(Request(page.url, callback=spider.parse, errback=spider.fetch_failed, meta=meta))

    def _restore(self, spider: Spider) -> None:
        """Rebuild the frontier from the durable state and reconcile it with the page files."""
        pagedir.remove_partial_files(self.directory)
        self.saved = self.state.saved_count() if self.update else self.state.next_doc_id() - 1
        if self.state.meta(ENDED) is not None:
            # The crawl had ended, its clean-up had not: that alone is left, nothing is handed out.
            self.waiting_for_sitemaps = False
            logger.info("Resuming a crawl that had ended: %d pages saved, nothing to fetch", self.saved)
            return
        for row, request_dict, writing_doc in self.state.frontier():
            depth = (request_dict.get("meta") or {}).get("depth", 0)
            if writing_doc is None:
                self.census.add(request_dict["url"], depth)
            if writing_doc is None and self.stored:
                self.frontier.push(StoredRequest(row, depth))
                continue
            request = request_from_dict(request_dict, spider=spider)
            request.meta["tse_row"] = row
            if writing_doc is None:
                self.frontier.push(request)
                continue
            request.meta["tse_doc_id"] = writing_doc
            # Written, not yet recorded (a page known before an update has a file either way: fetched again).
            known = self.update is not None and self.update.is_known_doc(writing_doc)
            if pagedir.page_path(self.directory, writing_doc).is_file() and not known:
                request.meta["tse_replay_doc"] = writing_doc
            self.resumed.append(request)
        for doc_id, request_dict in self.state.pages():
            if not pagedir.page_path(self.directory, doc_id).is_file():
                # Recorded, but its file lost: not saved (yet).
                request = request_from_dict(request_dict, spider=spider)
                request.meta["tse_doc_id"] = doc_id
                request.meta.pop("tse_row", None)
                self.resumed.append(request)
                self.saved -= 1
        logger.info(
            "Resuming: %d pages saved, %d to finish, %d in the frontier",
            self.state.next_doc_id() - 1,
            len(self.resumed),
            len(self.frontier),
        )

    def close(self, reason: str) -> Any:
        return self.df.close(reason)

    def has_pending_requests(self) -> bool:
        """Requests this scheduler will still hand out: none once the page limit is reached (the
        engine then finds the crawl idle, and it ends on its limit: ``_spider_idle``), though its
        frontier is not empty.  Said otherwise, a crawl resumed with a limit it had reached waited
        for ever, for a page it would never be handed."""
        if self._limit_reached():
            return False
        return bool(self.frontier) or bool(self.replacements) or bool(self.resumed)

    def _limit_reached(self) -> bool:
        return bool(self.max_pages) and self.saved >= self.max_pages

    def _spider_idle(self, **kwargs: Any) -> None:
        """The crawl is idle with its page limit reached: it ends on its limit, not as finished.
        (The pipeline ends it so at the limit's page; this is for a crawl that starts with its
        limit reached, which ``crawlstart`` does not let start from the commands.)"""
        if self._limit_reached():
            raise CloseSpider(PAGE_LIMIT)

    def enqueue_request(self, request: Request) -> bool:
        replaces = request.meta.get("tse_token") in self.in_flight
        if is_found_link(request):
            self.frontier.found(request)
        if not request.dont_filter and self.df.request_seen(request):
            self.df.log(request, self.spider)
            if replaces and self.update is not None:
                # A redirect to a page of the crawl already seen, or a loop: the known pages it went
                # through are gone, with their redirect's status (committed by _release).
                loop = bool(request.meta.get("tse_redirect_loop"))
                chain = redirect_chain(request, self.df.normalize)
                self.update.redirects_seen(chain, self.df.request_key(request), loop)
            if replaces:
                self._release(request)
            return False
        if replaces:
            self.replacements.append(request)
        else:
            if is_found_link(request):
                # First: this takes the lines of the links judged before it out of its meta.
                log_link(request, "Added")
            if self.state is not None:
                request.meta["tse_row"] = self.state.push(request_to_dict(request, self.spider))
            depth = request_depth(request)
            if self.stored:
                self.frontier.push(StoredRequest(request.meta["tse_row"], depth))
                self._remember(request)
            else:
                self.frontier.push(request)
            self.census.add(request.url, depth)
        self.stats.inc_value("scheduler/enqueued")
        return True

    def next_request(self) -> Request | None:
        if self.waiting_for_sitemaps:
            return None
        if self.replacements:
            return self._dequeued(self.replacements.popleft())
        from_frontier = not self.resumed
        if from_frontier:
            depth, pop = self.frontier.next_depth(), self.frontier.pop
        else:
            depth, pop = request_depth(self.resumed[0]), self.resumed.popleft
        if depth is None or not self._may_hand_out(depth):
            return None
        request = pop()
        if isinstance(request, StoredRequest):
            request = self.recent.pop(request.row, None) or self._load(request)
        if from_frontier:
            self.census.remove(request.url, request_depth(request))
        token = next(self._tokens)
        request.meta["tse_token"] = token
        self.in_flight[token] = request_depth(request)
        return self._dequeued(request)

    def _remember(self, request: Request) -> None:
        self.recent[request.meta["tse_row"]] = request
        if len(self.recent) > RECENT_REQUESTS:
            self.recent.popitem(last=False)

    def _load(self, stored: StoredRequest) -> Request:
        request = request_from_dict(self.state.request(stored.row), spider=self.spider)
        request.meta["tse_row"] = stored.row
        return request

    def _may_hand_out(self, depth: int) -> bool:
        if self.max_pages and self.saved + len(self.in_flight) >= self.max_pages:
            return False  # enough pages are saved or on their way
        if self.order == "tse":
            return not self.in_flight
        # (A page is in flight until its links are queued, and Scrapy's downloader counts it only while it
        # downloads: with CONCURRENT_REQUESTS=1, order=bfs handed out the next page while the links of the
        # page before were still queued, and under load their links came interleaved, the order of a
        # level then another in a crawl resumed.)
        if len(self.in_flight) >= self.concurrency:
            return False
        return self.order == "priority" or all(in_flight >= depth for in_flight in self.in_flight.values())

    def _dequeued(self, request: Request) -> Request:
        self.stats.inc_value("scheduler/dequeued")
        return request

    def _release(self, request: Request | None, *, over: bool = True) -> None:
        """The page of *request* is no longer in flight; *over*: its row leaves the crawl
        state now (not when it must be fetched again on resume, its page file not written,
        nor when the pipeline has recorded it)."""
        if request is None or self.in_flight.pop(request.meta.get("tse_token"), None) is None:
            return
        if over and self.state is not None:
            self.state.finished(request.meta.get("tse_row"))

    def _page_writing(self, token: int | None, **kwargs: Any) -> None:
        """The page's file is being written: the next page may go (counted as saved)."""
        if self.in_flight.pop(token, None) is None:
            return
        self.writing.add(token)
        self.saved += 1
        # Scrapy looks for the next request when the response is done with; this is sooner.
        wake_engine(self.crawler)

    def _item_saved(self, item: Any, response: Response, **kwargs: Any) -> None:
        if self._written(response):
            return
        self.saved += 1
        # The pipeline's ``saved`` took the page's row out of the crawl state already,
        # in the commit that recorded it: a transaction of its own would be a tenth of the state's cost.
        self._release(getattr(response, "request", None), over=False)

    def _item_not_saved(self, item: Any, response: Response, **kwargs: Any) -> None:
        if self._written(response):
            self.saved -= 1
            return
        self._release(getattr(response, "request", None), over=False)

    def _written(self, response: Response) -> bool:
        """Whether the page of *response* left the pages in flight at ``page_writing``."""
        token = getattr(response, "request", None) and response.request.meta.get("tse_token")
        if token in self.writing:
            self.writing.discard(token)
            return True
        return False

    def _spider_error(self, failure: Failure, response: Response, **kwargs: Any) -> None:
        self._release(getattr(response, "request", None) or getattr(failure, "request", None))

    def _page_done(self, request: Request, status: int | None = None, kept: bool = False, **kwargs: Any) -> None:
        if kept:
            # Failed for a while, its saved copy stands in for it (an update): in flight until it is saved.
            return
        if self.update is not None and request.meta.get("tse_token") in self.in_flight:
            self.update.failed(request, status)  # committed by _release
        self._release(request)
