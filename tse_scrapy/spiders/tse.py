"""The TSE crawler as a Scrapy spider (SPEC 2)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any

import scrapy
from scrapy import signals
from scrapy.downloadermiddlewares.retry import get_retry_request
from scrapy.http import HtmlResponse, Response
from scrapy.settings import SETTINGS_PRIORITIES, Settings
from scrapy.utils.httpobj import urlparse_cached
from twisted.python.failure import Failure

from ..crawl.downloader.conditional import NOT_MODIFIED
from ..crawl.downloader.offsite import PrefixOffsiteMiddleware
from ..crawl.downloader.record import DATA_LOSS, LASTING_REASONS, failure_reason
from ..crawl.downloader.render import SERVED_ROBOTS
from ..crawl.extensions.politeness import robots_user_agent
from ..crawl.items import PageItem
from ..crawl.progresslog import JUDGED_BEFORE, log_progress
from ..crawl.signals import page_done
from ..crawlstart import CrawlStart, prepare_crawl
from ..rules.crawling.crawlargs import ArgumentError, CrawlArgs, check_crawl_args
from ..rules.files.pagenotes import FOLLOW, NOTE_KINDS, ROBOTS, TYPES, notes_said, page_nofollow, read_nofollow
from ..rules.files.webarchive import PDF, crawled_page_kind, media_type
from ..rules.text.encodings import header_charset, page_encoding
from ..rules.web.duplicates import named_canonical
from ..rules.web.links import EXTRACTORS
from ..rules.web.robotsmeta import NOFOLLOW, NOINDEX, product_token, robots_directives
from ..rules.web.urls import normalize_url
from ..update.extension import (
    ROBOTS_FORBIDS,
    UpdateExtension,
    redirect_chain,
    sitemaps_read,
    transient_failure,
    update_session,
)

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

UNFETCHABLE_URL = "data:,"
# A URL that scrapy.Request keeps as it is (ASCII, nothing to percent-encode):
# the offsite middleware will judge exactly this URL, so the spider may judge it first.
_KEPT_BY_REQUEST = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*\Z")
_UNKNOWN: Any = object()
_SNIFF_BYTES = 1024  # the first bytes of an answer that tell what it is (crawled_page_kind)
# In the meta of an update's request for a known page that failed only for a while: why.  Its saved
# copy is then parsed in its place (``_saved_copy``).
KEPT_AFTER_FAILURE = "tse_kept_after_failure"
# The reason (``redirect_reasons``) of a redirect an update follows as it was known, its source failing.
KNOWN_REDIRECT = "known redirect"
# What one attempt at a URL leaves in its request's meta, not carried to the request that follows a
# known redirect (a retry count would deny the target its own retries).
_ATTEMPT_META = frozenset(
    {
        "retry_times",
        "download_latency",
        "download_slot",
        "tse_warc_date",
        "tse_http_status",
        "tse_conditional_doc",
        "tse_revisit_of",
        ROBOTS_FORBIDS,
    }
)


class TseSpider(scrapy.Spider):
    """Fetch, save and scan pages from ``seed`` down to ``depth``."""

    name = "tse"

    def __init__(
        self,
        seed: str | None = None,
        pagedir: str | None = None,
        depth: str | int | None = None,
        order: str | None = None,
        links: str | None = None,
        prefix: str | None = None,
        resume: str | None = None,
        update: str | None = None,
        allow: str | None = None,
        deny: str | None = None,
        deny_ext: str | None = None,
        pdf: str | None = None,
        sitemaps: str | None = None,
        render: str | None = None,
        **kwargs: Any,
    ):
        # Extra keyword arguments (scrapyd's _job, ...) are accepted and ignored.
        super().__init__(**kwargs)
        self.arguments = dict(
            seed=seed,
            pagedir=pagedir,
            depth=depth,
            order=order,
            links=links,
            prefix=prefix,
            allow=allow,
            deny=deny,
            deny_ext=deny_ext,
            pdf=pdf,
            sitemaps=sitemaps,
            render=render,
        )
        self.resume = resume
        self.update = update
        self.check_site_url: str | None = None
        self.recording = False  # keep each page's links for the crawl record (TSE_RECORD)
        self.page_links = 0  # links followed on a page at most, its first (TSE_PAGE_LINKS; 0: all)
        self.crawl_args: CrawlArgs | None = None
        self._offsite_middleware: PrefixOffsiteMiddleware | None = _UNKNOWN
        self.seeds: tuple[str, ...] = ()
        self.sitemap_lastmods: dict[str, str] = {}  # URL -> the lastmod its sitemap gave (--sitemaps)
        if not self.checking:
            try:
                self._use(check_crawl_args(**self.arguments))
            except ArgumentError:
                # A worker joining a distributed crawl takes what it lacks
                # from Redis (from_crawler); elsewhere this is raised there.
                pass

    @property
    def checking(self) -> bool:
        """Run by `scrapy check` without arguments: crawl the local check site."""
        return bool(os.environ.get("SCRAPY_CHECK")) and self.arguments["seed"] is None

    def _use(self, crawl_args: CrawlArgs) -> None:
        self.crawl_args = crawl_args
        self.seeds = crawl_args.seeds
        self.extract_links = EXTRACTORS[crawl_args.links]
        self.tse_extensions = crawl_args.extension_rule

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, tse_start: Any = None, **kwargs: Any) -> TseSpider:
        """The spider of *crawler*; *tse_start* is how the crawl starts, when the command that
        runs it has decided it already (``prepare_crawl``), so that it is decided once."""
        spider = super().from_crawler(crawler, *args, **kwargs)
        settings = crawler.settings
        if spider.checking:
            spider._serve_check_site(settings)
        start = tse_start
        if not isinstance(start, CrawlStart):  # not given, or given as text (scrapyd's -a): decided here
            arguments = {**spider.arguments, "resume": spider.resume, "update": spider.update}
            # The settings given (a script's, -s's: those above Scrapy's defaults and its commands'),
            # checked by name as tse crawl -s checks them: a misspelt one was ignored, unsaid.
            given = [name for name in settings if settings.getpriority(name) >= SETTINGS_PRIORITIES["project"]]
            start = prepare_crawl(arguments, settings.get, f"scrapy crawl {cls.name}", given)
        spider._use(start.args)
        # The pages the crawl starts from, read as they were checked: UpdateExtension.setup takes them.
        spider.pages_before = start.pages_before
        if start.distributed_name:
            spider._join_distributed_crawl(settings, start.distributed_name)
        elif start.nothing_to_do:
            spider.logger.info("%s", start.nothing_to_do)
            spider.seeds = ()
            # Nothing to do: nothing is written (the page directory's marker is there, and left as it is).
            settings.set("TSE_STATE_ENABLED", False, priority="cmdline")
            for name in ("TSE_WARC", "TSE_RECORD", "TSE_CHANGES"):
                settings.set(name, None, priority="cmdline")
        if start.ended:
            # Its clean-up alone is left (``statedb.ENDED``): no seed is asked for again, nor any page.
            spider.logger.info("The crawl had ended (%s): finishing its clean-up, fetching nothing", start.ended)
            spider.seeds = ()
        if start.lock is not None:  # the page directory's: let go once everything has closed
            crawler.signals.connect(start.lock.release, signal=signals.engine_stopped, weak=False)
        spider.recording = bool(settings.get("TSE_RECORD"))
        spider.page_links = max(settings.getint("TSE_PAGE_LINKS"), 0)
        args = start.args
        # Derived from the checked arguments: a -s NAME=VALUE cannot contradict them.
        for name, value in (
            ("TSE_ORDER", args.order),
            ("TSE_PREFIXES", list(args.prefixes)),
            ("TSE_PAGEDIR", args.pagedir),
            ("TSE_ARGUMENTS", args.identity()),
            ("TSE_ALLOW", list(args.allow)),
            ("TSE_DENY", list(args.deny)),
            ("TSE_DENY_EXT", args.deny_ext),
            ("TSE_PDF", args.pdf),
            ("TSE_SITEMAPS", args.sitemaps),
            ("TSE_RENDER", args.render),
            ("TSE_UPDATE", start.update),
            # Scrapy's DEPTH_LIMIT=0 means unlimited; maxDepth 0 is handled by
            # never scanning a page at maxDepth.
            ("DEPTH_LIMIT", args.depth),
        ):
            settings.set(name, value, priority="cmdline")
        # Scrapy's CLOSESPIDER_PAGECOUNT counts responses and overshoots under
        # concurrency: the scheduler and the pipeline stop at exactly N pages.
        limit = settings.getint("CLOSESPIDER_PAGECOUNT")
        if limit:
            settings.set("TSE_MAX_PAGES", limit, priority="cmdline")
            settings.set("CLOSESPIDER_PAGECOUNT", 0, priority="cmdline")
        return spider

    def _serve_check_site(self, settings: Settings) -> None:
        """For `scrapy check tse`: the check site on 127.0.0.1, a scratch page directory."""
        from ..devtools.siteserver import SiteServer

        self._check_server = SiteServer(settings["TSE_CHECK_SITE"]).start()
        self.check_site_url = self._check_server.url + "/"
        self.arguments.update(
            seed=self.check_site_url + "index.html",
            pagedir=tempfile.mkdtemp(prefix="tse-check-"),
            depth=settings["TSE_CHECK_DEPTH"],
            prefix=self.check_site_url,
        )
        for name, value in (
            # Contract requests wrap their callbacks: they cannot be stored.
            ("TSE_STATE_ENABLED", False),
            ("TSE_REDIS_URL", None),
            # A site on this machine: no delay, and never through a proxy.
            ("DOWNLOAD_DELAY", 0),
            ("HTTPPROXY_ENABLED", False),
        ):
            settings.set(name, value, priority="cmdline")

    def _join_distributed_crawl(self, settings: Settings, name: str) -> None:
        """Use the shared components of distributed crawl *name* instead of the embedded ones."""
        from ..distributed.wiring import use_distributed_components

        use_distributed_components(settings, name)
        if not self.arguments["seed"]:
            self.seeds = ()  # a worker joining with only the crawl's name
        args = self.crawl_args
        self.logger.info(
            "Distributed crawl %s: seeds %s, depth %d, prefixes %s, pages in %s",
            name,
            ", ".join(args.seeds),
            args.depth,
            ", ".join(args.prefixes),
            args.pagedir,
        )

    def closed(self, reason: str) -> None:
        if self.check_site_url:
            self._check_server.stop()
            shutil.rmtree(self.crawl_args.pagedir, ignore_errors=True)

    async def start(self) -> AsyncIterator[scrapy.Request]:
        # The seeds first, seen at depth 0 before the sitemaps are read (politely: seconds, with the
        # delay): a page of a sitemap fetched meanwhile that links a seed found it at depth 1, and the
        # seed's own request, after every sitemap's, was dropped as a duplicate, its links never followed
        # at maxDepth 1.  (An update's revisits wait for what the sitemaps say changed: the scheduler.)
        for seed in self.seeds:
            yield scrapy.Request(seed, callback=self.parse, errback=self.fetch_failed, meta={"depth": 0})
        if self.crawl_args.sitemaps and self.seeds:
            async for request in self._sitemap_requests():
                yield request
        if self.crawler.settings.get("TSE_REDIS_URL") and self.seeds:
            # Every seed is queued now: workers may tell an empty frontier from a crawl not begun.
            from ..distributed.extension import distributed_crawl

            await distributed_crawl(self.crawler).mark_seeded()  # (an outage waited out, as later)

    async def _sitemap_requests(self) -> AsyncIterator[scrapy.Request]:
        """A depth-0 request for each URL of the sitemaps under the prefixes that the filters allow
        (``--sitemaps``); the others are counted (``tse/sitemap_urls_ignored``), not requested."""
        from ..crawl.sitemaps import SitemapReader

        stats = self.crawler.stats
        offsite = self._offsite()
        try:
            async for entry in SitemapReader.from_crawler(self.crawler).entries():
                url = self.normalize(entry.loc)
                if url is None or (offsite is not None and offsite.verdict(url) is not None):
                    stats.inc_value("tse/sitemap_urls_ignored")
                    continue
                stats.inc_value("tse/sitemap_urls")
                meta: dict[str, Any] = {"depth": 0}
                if entry.lastmod:
                    self.sitemap_lastmods[url] = entry.lastmod
                    meta["tse_lastmod"] = entry.lastmod
                yield scrapy.Request(url, callback=self.parse, errback=self.fetch_failed, meta=meta)
        except Exception as error:  # the crawl goes on from its seeds without the rest of the sitemaps
            stats.inc_value("tse/sitemaps_cut")
            self.logger.warning("Sitemaps not read to the end: %s: %s", type(error).__name__, error)
        finally:
            # Read (or given up): the catalog keeps the lastmods, an update queues its revisits.
            self.crawler.signals.send_catch_log(sitemaps_read, lastmods=dict(self.sitemap_lastmods))

    def parse(self, response: Response) -> Iterator[scrapy.Request | PageItem]:
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
            yield from self._instead(self._failed(response.request, depth, response.status, f"http {response.status}"))
            return
        if "dataloss" in response.flags:
            # An answer cut short (a chunked body closed before its last chunk), handed on because
            # DOWNLOAD_FAIL_ON_DATALOSS is off: no page, retried then failed as Scrapy fails one by default.
            retry = get_retry_request(response.request, spider=self, reason=DATA_LOSS)
            yield from (
                [retry] if retry is not None else self._instead(self._failed(response.request, depth, None, DATA_LOSS))
            )
            return
        pdf = self._is_pdf(response)
        not_a_page = None if pdf else self._not_a_page(response)
        stats = getattr(getattr(self, "crawler", None), "stats", None)  # none: a spider fed responses
        if not_a_page:
            # Neither saved nor indexed: the indexer would read its bytes as text (SPEC 2's
            # reference saved every 200 answer; ``--links tse`` still does).
            if stats is not None:
                stats.inc_value("tse/not_pages")
            self._failed(response.request, depth, None, not_a_page)
            return
        if KEPT_AFTER_FAILURE not in response.meta:  # else logged "Failed"
            log_progress(depth, "Fetched", url)
        scanned = depth < self.crawl_args.depth and not pdf
        # The encoding the page is read in, as the indexer reads it (its byte order mark, its HTTP
        # charset, its <meta>, detection), for its links; its robots <meta> needs no more than its
        # HTTP charset (a UTF-16 page's byte order mark is read there): a page not scanned is not read
        # for it (detection reads 64 KB).
        encoding = page_encoding(response.body if scanned else b"", self._header_charset(response))[0]
        directives = self._robots_directives(response, pdf, encoding)
        for directive in directives if stats is not None else ():
            stats.inc_value(f"tse/robots_{directive}")
        if pdf and stats is not None:
            stats.inc_value("tse/pdfs")
        said = self._notes_said(response, NOINDEX in directives, pdf, NOFOLLOW in directives)
        # A PDF's links are not followed: its text is indexed, its links are not read.  A page read back
        # from its file (a 304 without X-Robots-Tag, a kept copy, a resume's) is nofollow as noted.
        nofollow = not pdf and self._nofollow(url, NOFOLLOW in directives, said)
        if scanned and not nofollow:
            log_progress(depth, "Scanning", url)
            found: list[str] | None = [] if self.recording else None
            yield from self._link_requests(response.body, url, depth, found, encoding)
            if found is not None:
                response.meta["tse_links"] = found
        meta = response.meta
        yield PageItem(
            url=url,
            depth=depth,
            body=response.body,
            state_row=meta.get("tse_row"),
            doc_id=meta.get("tse_doc_id"),
            replayed="tse_replay_doc" in meta,
            status=meta.get("tse_http_status", response.status),
            validators=_validators(response.headers, meta.get("tse_warc_date")),
            revisit=bool(meta.get("tse_revisit")),
            token=meta.get("tse_token"),
            http_charset=None if pdf else self._http_charset(response),
            noindex=NOINDEX in directives,
            nofollow=nofollow,
            pdf=pdf,
            canonical=self._canonical(response, url),  # (a PDF's too: its Link header is its only way)
            said=said,
            lastmod=meta.get("tse_lastmod") or self.sitemap_lastmods.get(url),
            redirected_from=redirect_chain(response.request, self.normalize) if "redirect_urls" in meta else (),
        )

    def _is_pdf(self, response: Response) -> bool:
        """The answer is a PDF document (``--links html``): by its Content-Type, or by its first
        bytes when the server says nothing more precise than binary data."""
        if self.crawl_args.links != "html":
            return False
        return crawled_page_kind(_content_type(response), response.body[:_SNIFF_BYTES]) == PDF

    def _not_a_page(self, response: Response) -> str | None:
        """Why a 200 answer is no page to save (``--links html``): an image, an archive, binary data
        whose bytes are not HTML's (``crawled_page_kind``); None for a page.  A page read back from
        its file (resume, a 304 of an update) was judged when it was fetched."""
        if self.crawl_args.links != "html" or not _answered_whole(response):
            return None
        content_type = _content_type(response)
        if crawled_page_kind(content_type, response.body[:_SNIFF_BYTES]) is not None:
            return None
        return f"not a page: {media_type(content_type) or 'no Content-Type'}"

    def _canonical(self, response: Response, url: str) -> str | None:
        """The canonical URL the page's ``Link:`` headers name, normalized as links are, when it is
        not the page's own (``--links html`` only; a PDF's too, which has no head to name one in).  A
        ``<link rel="canonical">`` is in the page file: ``tse index`` reads it there, at no cost to the
        crawl."""
        if self.crawl_args.links != "html":
            return None
        headers = [value.decode("latin-1") for value in response.headers.getlist(b"Link")]
        if not headers:
            return None
        return named_canonical(headers, b"", url)

    def _robots_directives(self, response: Response, pdf: bool = False, encoding: str | None = None) -> frozenset[str]:
        """``noindex`` and ``nofollow`` as the page's X-Robots-Tag header and robots ``<meta>``
        (not a PDF's: it has no head) give them (``--links html`` only, and not with
        ``--ignore-robots-meta``); *encoding*: the page's (a UTF-16 page's head is read as text)."""
        token = self.robots_token
        if token is None:
            return frozenset()
        headers = [value.decode("latin-1") for value in response.headers.getlist(b"X-Robots-Tag")]
        # A rendered page: its served HTML's robots <meta> too (a script may remove a noindex; search
        # engines obey one in the HTML served: RenderMiddleware keeps what it said).
        served = response.meta.get(SERVED_ROBOTS, frozenset()) if "rendered" in response.flags else frozenset()
        return robots_directives(headers, b"" if pdf else response.body, token, encoding) | served

    @cached_property
    def robots_token(self) -> str | None:
        """This crawler's user-agent token for robots directives; None when they are not obeyed
        (``--links tse``, ``--ignore-robots-meta``).  Worked out once, not for every page."""
        crawler = getattr(self, "crawler", None)
        settings = crawler.settings if crawler is not None else Settings()
        if self.crawl_args.links != "html" or settings.getbool("TSE_IGNORE_ROBOTS_META"):
            return None
        return product_token(robots_user_agent(settings))

    def _notes_said(self, response: Response, noindex: bool, pdf: bool, nofollow: bool = False) -> frozenset[str]:
        """The kinds of note the page's answer speaks to (``PageItem.said``): a 304's, those whose headers
        it carries, and what the saved body says for certain (its robots <meta> noindex or nofollow, a
        PDF's bytes)."""
        if _answered_whole(response):
            return NOTE_KINDS
        meta = response.meta
        if meta.get("tse_http_status") == NOT_MODIFIED and KEPT_AFTER_FAILURE not in meta:
            certain = {ROBOTS} if noindex else set()
            certain |= {FOLLOW} if nofollow else set()
            certain |= {TYPES} if pdf else set()
            return notes_said(name.decode("latin-1") for name in response.headers) | certain
        return frozenset()

    def _nofollow(self, url: str, answered: bool, said: frozenset[str]) -> bool:
        """Whether the links of the page at *url* are not followed: as its answer says (*answered*), or,
        when the answer does not speak to it (*said*), as its ``nofollow`` note says (``--links html``,
        not with ``--ignore-robots-meta``): the note is read only for such an answer, once."""
        if answered or FOLLOW in said or self.robots_token is None:
            return answered
        return page_nofollow(said, answered, url in self._noted_nofollow)

    @cached_property
    def _noted_nofollow(self) -> frozenset[str]:
        """The pages noted nofollow in the page directory (``pagenotes.read_nofollow``), read when first
        needed: a page read back from its file keeps no header."""
        return read_nofollow(self.crawl_args.pagedir)

    def _http_charset(self, response: Response) -> str | None:
        """The charset the page's Content-Type header declares, noted (``--links html`` only: the
        reference crawl's files stay as the reference's)."""
        if self.crawl_args.links != "html":
            return None
        return self._header_charset(response)

    @staticmethod
    def _header_charset(response: Response) -> str | None:
        """The charset the page's Content-Type header declares: its links are read in it (either scanner)."""
        content_type = response.headers.get(b"Content-Type")
        return header_charset(content_type.decode("latin-1")) if content_type else None

    def parse_at_max_depth(self, response: Response) -> Iterator[scrapy.Request | PageItem]:
        """`parse`, checked on a page at maxDepth: saved, not scanned.

        @local_site /about.html
        @page_depth 1
        @returns items 1 1
        @returns requests 0 0
        """
        return self.parse(response)

    def fetch_failed(self, failure: Failure) -> Iterator[scrapy.Request | PageItem] | None:
        request = failure.request
        response = getattr(failure.value, "response", None)  # an HttpError's answer
        status = getattr(response, "status", None)
        return self._instead(self._failed(request, request.meta.get("depth", 0), status, failure_reason(failure.value)))

    def _instead(self, kept: HtmlResponse | scrapy.Request | None) -> Iterator[scrapy.Request | PageItem]:
        """What a request that failed gives: the saved copy's page and links, or the known redirect's request."""
        if isinstance(kept, scrapy.Request):
            yield kept
        elif kept is not None:
            yield from self.parse(kept)

    def _failed(
        self, request: scrapy.Request, depth: int, status: int | None = None, reason: str | None = None
    ) -> HtmlResponse | scrapy.Request | None:
        """Log and signal a request that gave no page.  In an update, a known page that failed only
        for a while is returned as its saved copy, for ``parse`` (its links followed, as after a 304),
        and a URL that redirected to a known page as a request for that page (``_known_redirect``)."""
        followed = self._known_redirect(request, status, reason)
        if followed is not None:
            return followed  # still in flight: logged and signalled with the page it leads to
        first_url = request.meta.get("redirect_urls", [request.url])[0]
        log_progress(depth, "Failed", self.normalize(first_url) or first_url)
        self.crawler.stats.inc_value("tse/pages_failed")
        kept = self._saved_copy(request, status, reason)
        self.crawler.signals.send_catch_log(
            page_done, request=request, status=status, reason=reason, kept=kept is not None
        )
        return kept

    def _update(self) -> UpdateExtension | None:
        """The update this crawl is, or None."""
        crawler = getattr(self, "crawler", None)
        update = update_session(crawler) if crawler is not None and crawler.settings.getbool("TSE_UPDATE") else None
        return update if update is not None and update.is_update else None

    def _known_redirect(self, request: scrapy.Request, status: int | None, reason: str | None) -> scrapy.Request | None:
        """In an update, when *request* failed only for a while and its URL redirected to a known page
        when that page was last fetched, the request for that page, as the redirect would have made it:
        the page is then fetched, or kept when it fails too (docs/updating.md)."""
        update = self._update()
        target = update.known_redirect(request) if update is not None else None
        if target is None:
            return None
        if not (_transient(status, reason) or self._robots_unreachable(request, reason)):
            return None
        meta = {name: value for name, value in request.meta.items() if name not in _ATTEMPT_META}
        meta["redirect_times"] = request.meta.get("redirect_times", 0) + 1
        meta["redirect_urls"] = [*request.meta.get("redirect_urls", []), request.url]
        meta["redirect_reasons"] = [*request.meta.get("redirect_reasons", []), KNOWN_REDIRECT]
        # Not a found link any more, but the page in flight (its token, its row): served first.
        return request.replace(url=target.url, meta=meta)

    def _saved_copy(self, request: scrapy.Request, status: int | None, reason: str | None) -> HtmlResponse | None:
        """The saved copy of the known page *request* asked for, when an update's fetch of it failed
        only for a while (a 5xx, a timeout, a connection refused, its site's robots.txt unreadable):
        a transient failure loses no page, nor the pages only it links to (docs/updating.md)."""
        update = self._update()
        if update is None:
            return None
        why = reason if _transient(status, reason) else self._robots_unreachable(request, reason)
        copy = update.saved_copy(request, why) if why else None
        if copy is None:
            return None
        page, body = copy
        # As after a 304 (ConditionalRequestMiddleware): the status the item carries, judged a page before.
        request.meta["tse_http_status"] = status
        request.meta[KEPT_AFTER_FAILURE] = why
        return HtmlResponse(url=page.url, status=200, body=body, request=request, flags=["kept"])

    def _robots_unreachable(self, request: scrapy.Request, reason: str | None) -> str | None:
        """Why the site's robots.txt could not be read, when that refused *request* ("disallow
        all"); None when it was read (it forbids the page: gone) or was not the reason."""
        if reason != "robots.txt" or request.meta.get(ROBOTS_FORBIDS):
            return None
        from ..crawl.downloader.robots import TseRobotsTxtMiddleware

        try:
            robots = self.crawler.get_downloader_middleware(TseRobotsTxtMiddleware)
        except RuntimeError:  # no engine
            return None
        unreachable = robots.unreachable.get(urlparse_cached(request).netloc) if robots is not None else None
        if not unreachable:
            return None
        return unreachable if unreachable.startswith("robots.txt") else f"robots.txt: {unreachable}"

    def normalize(self, url: str) -> str | None:
        return normalize_url(url, self.tse_extensions)

    def _link_requests(
        self, body: bytes, page_url: str, depth: int, found: list[str] | None, encoding: str | None = None
    ) -> Iterator[scrapy.Request]:
        """A request for each link of the page, but for the external links that the
        offsite middleware would drop: it judges them here, and they are logged
        with the next request (``JUDGED_BEFORE``), the page's last with its last link.
        The page is read in *encoding*, the one the indexer reads it in (its byte order mark, its
        HTTP charset, its ``<meta>``, detection: ``page_encoding``), so the links followed are those
        it names."""
        offsite = self._offsite()
        judged: list[tuple[str, str]] = []
        links = self.extract_links(body, page_url, encoding)
        if self.page_links and len(links) > self.page_links:
            self.logger.warning(
                "%s holds %d links: its first %d are followed (TSE_PAGE_LINKS)", page_url, len(links), self.page_links
            )
            stats = getattr(getattr(self, "crawler", None), "stats", None)
            if stats is not None:
                stats.inc_value("tse/pages_links_cut")
            links = links[: self.page_links]
        for link in links:
            url = self.normalize(link) or link
            if found is not None:
                found.append(url)
            if offsite is not None and _KEPT_BY_REQUEST.match(url) and offsite.verdict(url) == "IgnExtrn":
                judged.append((url, "IgnExtrn"))
                continue
            yield self._carrying(judged, self._link_request(url, depth, page_url), offsite)
            judged = []
        if judged:
            url, _ = judged.pop()
            yield self._carrying(judged, self._link_request(url, depth, page_url), offsite)

    @staticmethod
    def _carrying(
        judged: list[tuple[str, str]], request: scrapy.Request, offsite: PrefixOffsiteMiddleware | None
    ) -> scrapy.Request:
        if judged:
            request.meta[JUDGED_BEFORE] = judged
            offsite.count_ignored("IgnExtrn", len(judged))
        return request

    def _offsite(self) -> PrefixOffsiteMiddleware | None:
        """The crawl's offsite middleware, whose verdict the spider asks before making a request."""
        if self._offsite_middleware is _UNKNOWN:
            crawler = getattr(self, "crawler", None)
            try:
                self._offsite_middleware = crawler and crawler.get_downloader_middleware(PrefixOffsiteMiddleware)
            except RuntimeError:  # no engine: a spider fed responses outside a crawl
                self._offsite_middleware = None
        return self._offsite_middleware

    def _link_request(self, url: str, depth: int, page_url: str) -> scrapy.Request:
        # Non-normalizable links (and the last external link) are requested too,
        # so that the offsite middleware logs them in link order; it drops them unfetched.
        meta = {"depth": depth + 1, "tse_found_at": depth, "tse_link": url, "tse_found_on": page_url}
        try:
            return scrapy.Request(url, callback=self.parse, errback=self.fetch_failed, meta=meta)
        except (ValueError, UnicodeError):
            # A link Scrapy cannot even represent (a bad port, host or scheme):
            # an external placeholder keeps it in order in the log.
            return scrapy.Request(UNFETCHABLE_URL, meta=meta)


def _transient(status: int | None, reason: str | None) -> bool:
    """``transient_failure``, but for the reasons the crawl's downloader knows to last (``LASTING_REASONS``)."""
    return reason not in LASTING_REASONS and transient_failure(status, reason)


def _answered_whole(response: Response) -> bool:
    """Whether *response* is the server's whole answer now: not a page read back from its file (a resume,
    a 304 of an update, a copy kept after a failure), which was judged when it was fetched."""
    return "tse_replay_doc" not in response.meta and "tse_http_status" not in response.meta


def _content_type(response: Response) -> str | None:
    value = response.headers.get(b"Content-Type")
    return value.decode("latin-1") if value is not None else None


def _validators(headers: Any, archived: str | None) -> dict[str, str | None]:
    """What the catalog keeps of the response: its ETag and Last-Modified, and the
    WARC-Date of its record (a later revisit record refers to it), those it has."""
    found = {"etag": headers.get(b"ETag"), "last_modified": headers.get(b"Last-Modified")}
    validators = {name: value.decode("latin-1") for name, value in found.items() if value}
    if archived:
        validators["fetched"] = archived
    return validators
