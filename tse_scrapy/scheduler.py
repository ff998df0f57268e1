"""TseScheduler: hands out requests in TSE stack order or breadth-first.

A page is *in flight* from the moment it is handed out until its item has
been through the pipelines (or its fetch failed).  ``order=tse`` hands out
the next page only when none is in flight, so every link of the previous page
has been pushed (SPEC 2.2.3); ``order=bfs`` hands out a page of depth d only
when no shallower page is in flight, so every page gets its shortest depth
at any concurrency.  A request that replaces one in flight (a redirect or a
retry, which keep the ``tse_token`` meta key) is served first.
"""

from __future__ import annotations

import itertools
import logging
from collections import deque

from scrapy import signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.utils.misc import build_from_crawler, load_object

from .frontier import FRONTIERS, request_depth
from .progress import is_found_link, log_link
from .signals import page_done

logger = logging.getLogger(__name__)


class TseScheduler(BaseScheduler):
    def __init__(self, dupefilter, stats, order: str = "tse"):
        self.df = dupefilter
        self.stats = stats
        self.order = order
        self.frontier = FRONTIERS[order]()
        self.replacements: deque = deque()
        self.in_flight: dict[int, int] = {}  # token -> depth
        self._tokens = itertools.count(1)

    @classmethod
    def from_crawler(cls, crawler):
        dupefilter = build_from_crawler(load_object(crawler.settings["DUPEFILTER_CLASS"]), crawler)
        scheduler = cls(dupefilter, crawler.stats, crawler.settings.get("TSE_ORDER", "tse"))
        for signal in (signals.item_scraped, signals.item_dropped, signals.item_error):
            crawler.signals.connect(scheduler._item_done, signal=signal)
        crawler.signals.connect(scheduler._spider_error, signal=signals.spider_error)
        crawler.signals.connect(scheduler._page_done, signal=page_done)
        return scheduler

    def open(self, spider):
        self.spider = spider
        return self.df.open()

    def close(self, reason):
        return self.df.close(reason)

    def has_pending_requests(self) -> bool:
        return bool(self.frontier) or bool(self.replacements)

    def enqueue_request(self, request) -> bool:
        replaces = request.meta.get("tse_token") in self.in_flight
        if not request.dont_filter and self.df.request_seen(request):
            self.df.log(request, self.spider)
            if replaces:
                self._release(request)
            return False
        if replaces:
            self.replacements.append(request)
        else:
            self.frontier.push(request)
            if is_found_link(request):
                log_link(request, "Added")
        self.stats.inc_value("scheduler/enqueued")
        return True

    def next_request(self):
        if self.replacements:
            return self._dequeued(self.replacements.popleft())
        depth = self.frontier.next_depth()
        if depth is None or not self._may_hand_out(depth):
            return None
        request = self.frontier.pop()
        token = next(self._tokens)
        request.meta["tse_token"] = token
        self.in_flight[token] = request_depth(request)
        return self._dequeued(request)

    def _may_hand_out(self, depth: int) -> bool:
        if self.order == "tse":
            return not self.in_flight
        return all(in_flight >= depth for in_flight in self.in_flight.values())

    def _dequeued(self, request):
        self.stats.inc_value("scheduler/dequeued")
        return request

    def _release(self, request) -> None:
        if request is not None:
            self.in_flight.pop(request.meta.get("tse_token"), None)

    def _item_done(self, item, response, **kwargs):
        self._release(getattr(response, "request", None))

    def _spider_error(self, failure, response, **kwargs):
        self._release(getattr(response, "request", None) or getattr(failure, "request", None))

    def _page_done(self, request, **kwargs):
        self._release(request)
