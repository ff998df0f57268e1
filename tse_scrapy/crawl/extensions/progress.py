"""CrawlProgress: the crawl's status line at the bottom of the terminal, with an ETA.

Pages saved, queued (by depth), failed, requests a second, the time so far,
and the time left, estimated from the frontier and each host's politeness
(rules/crawling/eta.py).  Only when stderr is a terminal, TSE_PROGRESS is on and the
crawl is not a scrapyd job; the progress log on stdout is untouched (when
stdout is the same terminal, its lines scroll above the status line).
"""

from __future__ import annotations

import sys
from collections import deque
from time import monotonic
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider, signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet import task

from ...rules.crawling.crawlargs import is_yes
from ...rules.crawling.eta import Estimate, FrontierCensus, HostWork, estimate, format_clock, format_eta
from ...terminal import StatusLine, at_least_sign, columns, is_terminal

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

REFRESH_SECONDS = 0.5
RATE_WINDOW = 10.0  # requests a second over the last this many seconds
SMOOTHING = 0.2  # weight of the newest response time in a host's average
GAP_SAMPLES = 200  # gaps between an answer and the next request, averaged
SHOWN_DEPTHS = 4
WAITING_FOR_REDIS = "tse/waiting_for_redis"  # stat: set while a distributed worker cannot reach Redis


class CrawlProgress:
    """An extension that draws the status line (see the module's docstring)."""

    def __init__(self, crawler: Crawler, status_stream: Any):
        self.crawler = crawler
        self.stream = status_stream
        settings = crawler.settings
        self.max_depth = settings.getint("DEPTH_LIMIT")
        self.max_pages = settings.getint("TSE_MAX_PAGES")
        self.default_delay = settings.getfloat("DOWNLOAD_DELAY")
        # One page at a time in stack order; else the engine's limit.
        self.concurrency = 1 if settings.get("TSE_ORDER") == "tse" else settings.getint("CONCURRENT_REQUESTS")
        self.response_times: dict[str, float] = {}  # host -> smoothed seconds
        # One request at a time, the next one reaches the downloader only once the page before is
        # processed: without a delay, that gap, not the delay, sets the pace.
        self.gaps: dict[str, _RecentMean] = {}  # host -> seconds from an answer to the next request
        self.answered: dict[str, float] = {}  # host -> when its last answer came
        self.counts: deque[tuple[float, int]] = deque()  # (time, requests so far), for the rate
        self.started = monotonic()
        self.status: StatusLine | None = None
        self.loop: task.LoopingCall | None = None
        self.at_least = at_least_sign(status_stream)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlProgress:
        wanted = crawler.settings.get("TSE_PROGRESS", "auto")
        if (wanted != "auto" and not is_yes(wanted)) or not is_terminal(sys.stderr):
            raise NotConfigured
        extension = cls(crawler, sys.stderr)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(extension.response_downloaded, signal=signals.response_downloaded)
        if extension.concurrency == 1:
            crawler.signals.connect(extension.request_reached_downloader, signal=signals.request_reached_downloader)
        return extension

    def spider_opened(self, spider: Spider) -> None:
        if getattr(spider, "_job", None):
            return  # a scrapyd job: its log is a file
        self.started = monotonic()
        self.status = StatusLine(self.stream)
        self.status.capture()
        self.loop = task.LoopingCall(self.refresh)
        self.loop.start(REFRESH_SECONDS, now=True)

    def spider_closed(self, spider: Spider) -> None:
        if self.loop is not None and self.loop.running:
            self.loop.stop()
        if self.status is not None:
            self.status.close()
            self.status = None

    def response_downloaded(self, response: Response, request: Request, spider: Spider) -> None:
        latency = request.meta.get("download_latency")
        if latency is None:
            return
        host = urlparse_cached(request).hostname or ""
        _smooth(self.response_times, host, latency)
        self.answered[host] = monotonic()

    def request_reached_downloader(self, request: Request, spider: Spider) -> None:
        host = urlparse_cached(request).hostname or ""
        answered = self.answered.pop(host, None)
        if answered is not None:
            self.gaps.setdefault(host, _RecentMean()).add(monotonic() - answered)

    def refresh(self) -> None:
        if self.status is not None:
            self.status.show(self.line())

    def line(self) -> str:
        """The status line's text."""
        stats = self.crawler.stats
        now = monotonic()
        parts = [f"saved {stats.get_value('tse/pages_saved', 0)}"]
        if stats.get_value(WAITING_FOR_REDIS):  # a distributed worker (distributed/outage.py)
            parts.insert(0, "waiting for Redis")
        census = getattr(self.crawler.engine.scheduler, "census", None)
        if census is not None:
            parts.append(_queued(census))
        parts.append(f"failed {stats.get_value('tse/pages_failed', 0)}")
        parts.append(f"{self._rate(now, stats.get_value('downloader/request_count', 0)):.1f} req/s")
        parts.append(format_clock(now - self.started, floor=True))
        if census is not None and self.response_times:  # from the first answer on
            parts.append(format_eta(self.estimate(census, now), self.at_least))
        separator = " \u00b7 " if self.at_least != ">=" else " | "
        return fit(parts, separator, (columns(self.stream) or 80) - 1)

    def _rate(self, now: float, requests: int) -> float:
        self.counts.append((now, requests))
        while len(self.counts) > 1 and now - self.counts[0][0] > RATE_WINDOW:
            self.counts.popleft()
        then, before = self.counts[0]
        return (requests - before) / (now - then) if now > then else 0.0

    def estimate(self, census: FrontierCensus, now: float) -> Estimate:
        """The time left, from the frontier, the requests in the downloader and each host's pace."""
        downloader = self.crawler.engine.downloader
        known = list(self.response_times.values())
        typical = sum(known) / len(known) if known else 0.0
        hosts = []
        for host in set(census.by_host) | set(downloader.slots):
            slot = downloader.slots.get(host)
            gap = self.gaps[host].mean if host in self.gaps else 0.0
            delay = max(slot.delay if slot is not None else self.default_delay, gap)
            requests = census.by_host.get(host, 0) + (len(slot.active) if slot is not None else 0)
            hosts.append(
                HostWork(
                    requests=requests,
                    delay=delay,
                    response_time=self.response_times.get(host, typical),
                    concurrency=min(slot.concurrency, self.concurrency) if slot is not None else self.concurrency,
                    ready=max(slot.lastseen + delay - now, 0.0) if slot is not None else 0.0,
                )
            )
        scheduler = self.crawler.engine.scheduler
        in_flight = getattr(scheduler, "in_flight", {})
        depths = [*census.by_depth, *in_flight.values()]
        growing = bool(depths) and min(depths) < self.max_depth
        # With a page limit, only the pages still wanted are fetched (those in flight are among them).
        limit = None
        if self.max_pages:
            saved = self.crawler.stats.get_value("tse/pages_saved", 0)
            limit = max(self.max_pages - saved, 0)
        return estimate(hosts, concurrency=self.concurrency, growing=growing, limit=limit)


class _RecentMean:
    """The mean of the last GAP_SAMPLES values: a pause (a slow page, a garbage collection) moves it little."""

    def __init__(self):
        self.values: deque[float] = deque(maxlen=GAP_SAMPLES)
        self.total = 0.0

    def add(self, value: float) -> None:
        if len(self.values) == self.values.maxlen:
            self.total -= self.values[0]
        self.values.append(value)
        self.total += value

    @property
    def mean(self) -> float:
        return self.total / len(self.values)


def _smooth(averages: dict[str, float], host: str, seconds: float) -> None:
    before = averages.get(host)
    averages[host] = seconds if before is None else before + SMOOTHING * (seconds - before)


def fit(parts: list[str], separator: str, width: int) -> str:
    """*parts* joined within *width* columns (tqdm cuts the rest, and the ETA comes last): the
    queue's detail by depth goes first, then the rate, then the time so far."""
    shorter = [
        lambda part: part.partition(" (")[0] if part.startswith("queued ") else part,
        lambda part: None if part.endswith(" req/s") else part,
        lambda part: None if part[:1].isdigit() else part,
    ]
    text = separator.join(parts)
    for shorten in shorter:
        if len(text) <= width:
            break
        parts = [short for short in map(shorten, parts) if short is not None]
        text = separator.join(parts)
    return text


def _queued(census: FrontierCensus) -> str:
    depths = sorted(census.by_depth.items())
    shown = ", ".join(f"d{depth} {count}" for depth, count in depths[:SHOWN_DEPTHS])
    more = ", ..." if len(depths) > SHOWN_DEPTHS else ""
    return f"queued {len(census)}" + (f" ({shown}{more})" if depths else "")
