"""The pages that could not be fetched, and why: said at the end of a crawl.

A crawl whose seed fails saves nothing and exits 0 (SPEC 2.4: a failed fetch
is not an error), with only Scrapy's log of a robots.txt that could not be
read to tell why.  ``SeedFailures`` hears each failed page (``page_done``)
and keeps a seed's reason in the stats (``tse/seed_failures``: [URL, reason]
pairs, the URL's secrets masked: Scrapy dumps the stats in its log);
``seed_failure_line`` turns them into the line ``outcome.report`` writes on
stderr.  Every other failed page is kept the same way
(``tse/failed_pages``: the first FAILED_PAGES_SAID; ``tse/failed_pages_more``
counts the rest), which ``failed_page_lines`` says, a line each, and ``tse
crawl`` writes before its summary: the progress log's ``Failed`` line says no
reason (the reference's format), which was said only at ``-vv`` and in the
crawl record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import signals
from w3lib.url import safe_url_string

from ..rules.crawling.secrets import mask_url
from ..rules.web.urls import normalize_url
from .signals import page_done

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy import Request
    from scrapy.crawler import Crawler

SEED_FAILURES = "tse/seed_failures"  # stat: [URL, reason] for each seed that could not be fetched
FAILED_PAGES = "tse/failed_pages"  # stat: [URL, reason] for each other page that failed, the first ones
FAILED_PAGES_MORE = "tse/failed_pages_more"  # stat: how many more failed
# Said before the summary, a line each: the first pages that failed (a crawl of a site gone down fails
# every page: the rest are counted, and the crawl record says why for each).
FAILED_PAGES_SAID = 20


class SeedFailures:
    """An extension that notes in the stats each seed whose fetch failed, with the reason (see the
    module's docstring)."""

    def __init__(self, crawler: Crawler):
        self.crawler = crawler
        self._requested: dict[str, str] | None = None  # each seed as Scrapy requests it -> the seed
        # The seeds that failed, as given: the stats hold them masked (Scrapy dumps the stats in the log,
        # and a seed's ?token=SECRET was shown there with -v), where two may read the same.
        self._failed_seeds: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SeedFailures:
        """The extension (``EXTENSIONS`` in settings.py), listening to ``page_done``."""
        extension = cls(crawler)
        crawler.signals.connect(extension.page_done, signal=page_done)
        crawler.signals.connect(extension.request_dropped, signal=signals.request_dropped)
        return extension

    def request_dropped(self, request: Request, **_: Any) -> None:
        """A redirect's next hop the dupefilter dropped: a seed that redirects in a loop failed
        (the dupefilter logs it "Failed"; no answer came to say why)."""
        if request.meta.get("tse_redirect_loop"):
            self.page_done(request, reason="redirect loop")

    def page_done(
        self,
        request: Request,
        status: int | None = None,
        reason: str | None = None,
        kept: bool = False,
        checked: bool = False,
        **_: Any,
    ) -> None:
        if checked:  # a page `scrapy check` read (its item discarded): no failure
            return
        spider = self.crawler.spider
        first_url = request.meta.get("redirect_urls", [request.url])[0]
        normalized = normalize_url(first_url, getattr(spider, "tse_extensions", True)) or first_url
        if self._requested is None:
            # A seed's request URL is percent-encoded (Scrapy's safe_url_string: "a b.html" is asked for
            # as "a%20b.html", "café" as "caf%C3%A9"): known by that, said as given.
            seeds = getattr(spider, "seeds", ())
            self._requested = {safe_url_string(seed): seed for seed in seeds} | {seed: seed for seed in seeds}
        url = self._requested.get(normalized) if request.meta.get("depth", 0) == 0 else None
        redirected = "redirect_urls" in request.meta
        if url is None:  # a page (a sitemap's URL, at depth 0 too), not a seed
            self._page_failed(normalized, status, reason, kept, redirected, request.url)
            return
        if url not in self._failed_seeds:
            self._failed_seeds.add(url)
            failures = self.crawler.stats.get_value(SEED_FAILURES) or []
            why = self._why(status, reason, redirected, request.url)
            # An update keeps a known page that failed for a while: its saved copy, its links followed
            # (the line said only that it could not be fetched, the site down a moment: a helper's find).
            why += ", its saved copy kept" if kept else ""
            self.crawler.stats.set_value(SEED_FAILURES, [*failures, [mask_url(url), why]])

    def _page_failed(
        self, url: str, status: int | None, reason: str | None, kept: bool, redirected: bool, last_hop: str
    ) -> None:
        stats = self.crawler.stats
        said = stats.get_value(FAILED_PAGES) or []
        if len(said) < FAILED_PAGES_SAID:
            why = self._why(status, reason, redirected, last_hop) + (", its saved copy kept" if kept else "")
            stats.set_value(FAILED_PAGES, [*said, [mask_url(url), why]])
        else:
            stats.inc_value(FAILED_PAGES_MORE)

    def _why(self, status: int | None, reason: str | None, redirected: bool, last_hop: str) -> str:
        """*reason* (``failure_reason``'s) said as a sentence; *redirected*: the page's URL redirected, and
        the reason is its *last_hop*'s (the URL that failed)."""
        if status is not None:
            return f"HTTP {status}"
        from .downloader.offsite import URL_NOT_TAKEN, URL_TOO_LONG, PrefixOffsiteMiddleware
        from .downloader.redirect import INVALID_REDIRECT, TOO_MANY_REDIRECTS

        if reason == URL_TOO_LONG:
            offsite = self.crawler.get_downloader_middleware(PrefixOffsiteMiddleware)
            bound = f"{offsite.max_url_length:,}" if offsite is not None else "TSE_MAX_URL_LENGTH"
            return f"{'redirected to ' if redirected else ''}a URL over {bound} characters"
        if reason == TOO_MANY_REDIRECTS:
            return f"too many redirects: more than {self.crawler.settings.getint('REDIRECT_MAX_TIMES')}"
        if reason == INVALID_REDIRECT:
            return "redirected to an invalid URL"
        if reason is not None and reason.startswith(URL_NOT_TAKEN) and redirected:
            # "not a page: a .pdf URL, without --pdf": "redirected to a .pdf URL, not a page without --pdf"
            url_kind, _, more = reason.removeprefix("not a page: ").partition(", ")
            return f"redirected to {url_kind}, not a page" + (f" {more}" if more else "")
        if reason == "robots.txt":
            # Refused by robots.txt: because it forbids the page, or because it could not be
            # read (then the crawler stays out of the server, and that is the reason to give).
            from .downloader.robots import TseRobotsTxtMiddleware

            robots = self.crawler.get_downloader_middleware(TseRobotsTxtMiddleware)
            # (the robots.txt of the host refused: the last hop's, where a redirect led to another)
            unreachable = robots.unreachable.get(urlsplit(last_hop).netloc) if robots is not None else None
            return unreachable or "robots.txt forbids it"
        return {
            "offsite": "redirected out of the prefixes",
            "denied": "refused by --allow, --deny or --deny-ext",
            "ignored": "ignored",
            None: "unknown",
        }.get(reason, reason or "unknown")


def seed_failure_line(stats: Mapping[str, Any], seeds: int) -> str | None:
    """The one line that says which of the crawl's *seeds* (their number) could not be fetched and
    why, or None when none failed."""
    failures = stats.get(SEED_FAILURES) or []
    if not failures:
        return None
    nothing = ": nothing was saved" if not stats.get("tse/pages_saved") else ""
    if seeds <= 1 and len(failures) == 1:
        return f"the seed URL could not be fetched ({failures[0][1]}){nothing}"
    told = ", ".join(f"{mask_url(url)} ({why})" for url, why in failures)
    return f"{len(failures)} of {max(seeds, len(failures))} seed URLs could not be fetched{nothing}: {told}"


def failed_page_lines(stats: Mapping[str, Any]) -> list[str]:
    """A line for each page but a seed that failed, with the reason (the first FAILED_PAGES_SAID of
    them), and one counting the rest."""
    lines = [f"failed: {mask_url(url)} ({why})" for url, why in stats.get(FAILED_PAGES) or []]
    more = stats.get(FAILED_PAGES_MORE) or 0
    if more:
        lines.append(f"and {more} more page{'s' if more > 1 else ''} failed (--record lists each, and why)")
    return lines
