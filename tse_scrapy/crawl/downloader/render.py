"""RenderMiddleware: HTML pages loaded in headless Chromium (``--render``), the rendered document
kept as the page (TSE_RENDER).

The page itself is fetched by Scrapy as any page is (robots.txt, the politeness delay, the proxy,
conditional requests, the WARC); its answer is then handed to the browser as the answer to its
navigation, so the page is not fetched twice.  The browser's own requests (scripts, styles, the
JSON a script fetches) go out through the crawl's proxy, each to the crawl's own hosts or public
ones only (a page may not make the crawler contact its network), and checked against its host's
robots.txt (blocked ones are aborted), redirects included, at most TSE_RENDER_MAX_REQUESTS a page load; images, media
and fonts are not fetched (they hold no text and no links).  A page that sends the browser elsewhere
(a script, a <meta> refresh) is kept as it rendered, the navigation not followed.  The page is
settled when the network is idle, or cut at TSE_RENDER_TIMEOUT and kept as rendered so far.  A
renderer that crashes loses that page's rendering (the page is kept as fetched, counted) and the
next page gets a new one; a browser that dies is started again.  Each page load has a browser
context of its own, closed after it: the browser's memory does not grow with the crawl.
``docs/crawling.md`` says more.

Playwright drives Debian's chromium (``executable_path``): no browser is downloaded.  scrapy-
playwright is not used: it replaces the download handler, so the page would be fetched by the
browser outside Scrapy's robots, retry, conditional and WARC middlewares, and a page whose load
times out would be a failure, not a page rendered so far.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import json
import logging
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urljoin, urlsplit

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse, Response
from scrapy.utils.defer import deferred_from_coro

from ...exitcodes import first_line
from ...rules.crawling.browserhosts import canonical_addresses, ip_literal, may_reach
from ...rules.files.webarchive import HTML, UNTYPED, crawled_page_kind, media_type
from ...rules.text.encodings import browser_label, header_charset, page_encoding
from ...rules.web.robotsmeta import robots_directives
from .robots import RobotsHopRefused, TseRobotsTxtMiddleware
from .warc import CODED_BODY_HEADERS, WarcMiddleware

# Request.meta: the robots <meta> directives of a rendered page's served HTML (the spider obeys them too).
SERVED_ROBOTS = "tse_served_robots"

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

HTML_TYPES = (b"text/html", b"application/xhtml+xml")
SNIFF_BYTES = 1024  # the first bytes of an untyped answer that tell whether it is HTML (the spider's)
# What a page needs no fetching of to give its text and links.
SKIPPED_RESOURCES = frozenset({"image", "media", "font"})
# Flags the tests and the probe of this machine use: no network of Chromium's own, no GPU.
BROWSER_FLAGS = (
    "--headless=new",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
    "--disable-dev-shm-usage",
    # WebRTC sends no UDP (STUN, TURN) to any host: it is not routed, nor checked against robots.txt.
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    # V8's heap of a renderer bounded (a page's scripts that hoard memory crash their renderer: the page
    # is kept as fetched); TSE_RENDER_ARGS' own --js-flags, given after, replaces it.
    "--js-flags=--max-old-space-size=1024",
    # Every frame of a page in its page's renderer, none in a process (a browser target) of its own: the
    # redirects of each are checked where the page's are (_PageLoad.answered).
    "--disable-site-isolation-trials",
)
# Blink's interfaces turned off in every frame: a SharedWorker's requests are not routed (nor checked
# against robots.txt).  Merged with those TSE_RENDER_ARGS turns off (Chromium heeds the last switch).
DISABLED_BLINK_FEATURES = ("SharedWorker",)
BLINK_SWITCH = "--disable-blink-features"
# Seconds a browser call (a context, a page, a route) may take, TSE_RENDER_CALL_TIMEOUT (10 s): one that
# takes longer means a browser that hangs or has died; it is closed, and the next page load starts
# another.
# Seconds given past TSE_RENDER_TIMEOUT to read the rendered document (a renderer whose script never
# yields never answers: the page is then kept as fetched).
READ_GRACE = 5.0
# Seconds a browser may take to start.
LAUNCH_TIMEOUT = 60.0
# Answers the browser follows to another URL: each checked before it is followed (_PageLoad.answered).
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# Seconds a host name of a page's request may take to resolve (not resolved in time: not reached), and
# the names whose addresses a crawl keeps (then forgotten, all at once, and resolved anew).
RESOLVE_TIMEOUT = 5.0
RESOLVED_HOSTS_KEPT = 10_000
# Run in the page before its own scripts: a navigation it starts itself (a script, a <meta> refresh)
# before it has loaded is cancelled, so that the rest of it is still parsed and run; one after is
# answered 204 (_PageLoad.route), which would stop a page still loading where it stands.
STAY_WHILE_LOADING = """
if (window === window.top && window.navigation)
  navigation.addEventListener("navigate", (event) => {
    if (document.readyState !== "complete" && !event.destination.sameDocument && event.cancelable)
      event.preventDefault();
  });
"""
# Run in every frame before its scripts: no WebRTC connection (a TURN server over TCP is reached
# directly, whatever the IP handling policy), and no window opened (each would be a page of the
# browser's: 300 of them took a gigabyte); a window opened anyway is closed (_PageLoad.opened).
NO_HOSTILE_APIS = """
for (const name of ["RTCPeerConnection", "webkitRTCPeerConnection", "SharedWorker"])
  try { delete globalThis[name]; } catch (error) {}
try { window.open = () => null; } catch (error) {}
"""
# Turned off beside Playwright's own: a page handed to Chromium by route.fulfill counts as a public
# one, so its Local Network Access checks would block what it loads from another port of 127.0.0.1 or
# from a LAN host (robots.txt still holds for those requests).
DISABLED_FEATURES = ("LocalNetworkAccessChecks",)
# Chromium heeds only the last of each: Playwright's, the crawl's and TSE_RENDER_ARGS' are merged into one.
FEATURE_SWITCHES = ("--disable-features", "--enable-features")
# Hosts Chromium calls on its own (sign-in, time, updates, hints, safe browsing), seen through a proxy
# here with every background-networking flag set: sent nowhere (_proxy_pac).  A page's own scripts from
# them are not fetched either.
CHROMIUM_SERVICE_HOSTS = (
    "accounts.google.com",
    "www.google.com",
    "clients.google.com",
    "clients1.google.com",
    "clients2.google.com",
    "clients3.google.com",
    "clients4.google.com",
    "clients5.google.com",
    "clients6.google.com",
    "android.clients.google.com",
    "update.googleapis.com",
    "optimizationguide-pa.googleapis.com",
    "safebrowsing.googleapis.com",
    "content-autofill.googleapis.com",
    "gvt1.com",
    "gvt2.com",
)


def chromium_path(configured: str | None) -> str:
    """The browser to drive: TSE_CHROMIUM, else chromium on PATH (Debian's), else /usr/bin/chromium."""
    return configured or shutil.which("chromium") or "/usr/bin/chromium"


def renderer_missing(configured: str | None) -> str | None:
    """Why ``--render`` cannot run here (one line), or None."""
    import importlib.util

    if importlib.util.find_spec("playwright") is None:
        return "--render needs Playwright (pip install tse-scrapy[render])"
    path = chromium_path(configured)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return f"--render needs Chromium: {path} not found (apt-get install chromium, or -s TSE_CHROMIUM=PATH)"
    # A program that is not a browser (-s TSE_CHROMIUM=/bin/false) would leave every page unrendered.
    try:
        answer = subprocess.run([path, "--version"], capture_output=True, stdin=subprocess.DEVNULL, timeout=30)
        said = answer.stdout.decode(errors="replace").strip()
    except (OSError, subprocess.SubprocessError) as error:
        return f"--render needs Chromium: {path} does not run ({first_line(error)})"
    if answer.returncode != 0 or "chrom" not in said.lower():
        told = first_line(Exception(said)) if said else f"exit status {answer.returncode}"
        return f"--render needs Chromium: {path} --version does not answer as Chromium does ({told})"
    return None


class RenderMiddleware:
    """A downloader middleware (585: after HttpCompressionMiddleware has decoded the body, before
    ConditionalRequestMiddleware turns a 304 into the saved copy) that replaces the body of each
    HTML page answer with the document its scripts render."""

    def __init__(self, crawler: Crawler):
        settings = crawler.settings
        self.crawler = crawler
        self.stats = crawler.stats
        self.executable = chromium_path(settings.get("TSE_CHROMIUM"))
        self.extra_args = list(settings.getlist("TSE_RENDER_ARGS"))
        # Chromium's Local Network Access checks are turned off only for a crawl of a site on this
        # machine or a LAN (every prefix's host an address of those): a public site's scripts are not to
        # reach 127.0.0.1 or the LAN through the crawl's browser.
        self.prefix_hosts = {urlsplit(prefix).hostname or "" for prefix in settings.getlist("TSE_PREFIXES")} - {""}
        self.local_site = all(_is_local_host(host) for host in self.prefix_hosts)
        # The hosts a rendered page's requests may reach whatever their addresses (rules/crawling/browserhosts.py):
        # the prefixes', TSE_RENDER_HOSTS, and the seeds' (added once the spider is there).
        self._named_hosts = self.prefix_hosts | {host.strip().lower() for host in settings.getlist("TSE_RENDER_HOSTS")}
        self._seeds_named = False
        self._own_addresses: asyncio.Future | None = None  # the prefix hosts' addresses, resolved once
        self._resolved: dict[str, asyncio.Future] = {}  # a host name's addresses, resolving or resolved
        # At least a second: Playwright reads a timeout of 0 as none at all.
        self.timeout = max(1.0, settings.getfloat("TSE_RENDER_TIMEOUT"))
        self.call_timeout = max(1.0, settings.getfloat("TSE_RENDER_CALL_TIMEOUT"))
        self.max_requests = settings.getint("TSE_RENDER_MAX_REQUESTS")
        self.slots = max(1, settings.getint("TSE_RENDER_PAGES"))
        self.user_agent = settings.get("USER_AGENT")
        self.max_size = settings.getint("DOWNLOAD_MAXSIZE") or 32 * 1024 * 1024
        self._pages: asyncio.Semaphore | None = None
        self.recycle = max(0, settings.getint("TSE_RENDER_RECYCLE"))
        self._loads = self._in_flight = 0
        self._recycle_due = False
        self._playwright: Any = None
        self._browser: Any = None
        self._starting: asyncio.Lock | None = None
        # Playwright's feature switches, read once (None: they could not be read)
        self._default_features: dict[str, list[str]] | None = None
        self._features_read = False
        self._middlewares: dict[type, Any] = {}  # the robots.txt and WARC middlewares, found once
        self._ever_started = False  # a browser has started in this crawl
        self._stopping = False  # the crawl is stopping: no browser would start
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        logging.getLogger("asyncio").addFilter(DRIVER_ERRORS_NOT_DUMPED)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RenderMiddleware:
        if not crawler.settings.getbool("TSE_RENDER"):
            raise NotConfigured
        problem = renderer_missing(crawler.settings.get("TSE_CHROMIUM"))
        if problem:  # before anything is fetched (tse crawl says it on one line before this)
            raise RuntimeError(problem)
        return cls(crawler)

    # -- which answers -------------------------------------------------------------
    def _renders(self, request: Request, response: Response) -> bool:
        if response.status != 200 or "replayed" in response.flags or request.meta.get("tse_sitemap"):
            return False
        if request.meta.get("dont_obey_robotstxt"):  # robots.txt itself
            return False
        kind = media_type((response.headers.get(b"Content-Type") or b"").decode("latin-1"))
        if kind.encode() in HTML_TYPES:
            return True
        # An answer with no type, or a binary one, that the crawl takes for HTML as it sniffs it (the
        # spider's crawled_page_kind): rendered too, given to the browser as text/html (_PageLoad._headers).
        return kind in UNTYPED and crawled_page_kind(kind, response.body[:SNIFF_BYTES]) == HTML

    async def process_request(self, request: Request) -> None:
        """A robots.txt redirected elsewhere (Scrapy follows a robots.txt's redirects): the next hop goes
        only where a rendered page's own request could (``reachable``), else a public host's robots.txt
        pointing at ``http://10.0.0.5/robots.txt`` would make the crawler contact its network (a review's
        find).  The robots.txt then failed: the crawler stays out of that host, as for any unreadable one."""
        hop = request.meta.get("dont_obey_robotstxt") and request.meta.get("redirect_urls")
        if hop and not await self.reachable(request.url):
            self.stats.inc_value("tse/render_private_blocked")
            raise RobotsHopRefused(f"robots.txt redirected to {request.url}, not a public host")

    async def process_response(self, request: Request, response: Response) -> Response:
        if not self._renders(request, response):
            return response
        if self._pages is None:
            self._pages = asyncio.Semaphore(self.slots)
        async with self._pages:
            self._in_flight += 1
            try:
                rendered = await self._render(response)
            finally:
                self._in_flight -= 1
                self._loads += 1
                if self.recycle and self._loads % self.recycle == 0:
                    self._recycle_due = True
                if self._recycle_due and self._in_flight == 0:
                    # A bound on whatever Chromium and Playwright's driver keep over a very long crawl:
                    # both are started anew every TSE_RENDER_RECYCLE loads (bench/RESULTS.md).
                    self._recycle_due = False
                    self.stats.inc_value("tse/render_recycled")
                    await self._stop_browser()
        if rendered is None:
            return response
        self.stats.inc_value("tse/rendered")
        # What the served HTML's robots <meta> said, obeyed with the rendered page's (a script that
        # removes a noindex does not make the page an answer: search engines obey the HTML served).
        token = getattr(self.crawler.spider, "robots_token", None)
        if isinstance(token, str):
            # (Its byte order mark, read there, else its HTTP charset, is all a UTF-16 head needs: no
            # detection, which the page's reading runs anyway.)
            content_type = response.headers.get(b"Content-Type")
            charset = header_charset(content_type.decode("latin-1")) if content_type else None
            served = robots_directives((), response.body, token, charset)
            if served:
                request.meta[SERVED_ROBOTS] = served
        headers = response.headers.copy()
        headers[b"Content-Type"] = b"text/html; charset=utf-8"
        # A BOM: the serialized document may still carry the <meta charset> of the bytes it was
        # parsed from; every reader (a browser, the indexer) takes the BOM first.
        body = BOM + rendered.encode("utf-8", "surrogatepass")
        return response.replace(
            cls=HtmlResponse, headers=headers, body=body, flags=[*response.flags, "rendered"], encoding="utf-8"
        )

    # -- one page load ---------------------------------------------------------------
    async def _bounded(self, call: Any) -> Any:
        """A browser call's result, or asyncio.TimeoutError after TSE_RENDER_CALL_TIMEOUT (a browser that
        died may leave a call unanswered forever)."""
        return await asyncio.wait_for(call, self.call_timeout)

    async def _render(self, response: Response) -> str | None:
        """The rendered document of *response*, or None when the renderer crashed, the browser failed, or
        the document cannot be kept.  One deadline for the whole page load (TSE_RENDER_TIMEOUT), from
        when the page is given to the browser, then READ_GRACE to read the document; every browser call
        is bounded, the browser's start by LAUNCH_TIMEOUT."""
        from playwright.async_api import Error as PlaywrightError
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        try:
            browser = await self._started_browser()
        except Exception as error:  # Playwright's driver or the browser would not start, or hung starting
            self.stats.inc_value("tse/render_failed")
            logger.warning("Cannot start the browser for %s: %s", response.url, _told(error))
            await self._drop_browser()
            self._browser_failed(error)
            return None
        load = _PageLoad(self, response)
        context: Any = None
        cut = False
        try:
            context = await self._bounded(
                browser.new_context(
                    user_agent=self.user_agent,
                    service_workers="block",
                    accept_downloads=False,
                    **_context_proxy(_browser_proxy()),
                )
            )
            # On the context, not the page: a window a script opens is held to the same rules.
            await self._bounded(context.route("**/*", load.route))
            # No WebSocket reaches any server: a crawl fetches pages, and a socket is neither routed
            # (robots.txt, the request bound) nor a page.
            await self._bounded(context.route_web_socket(_any_url, load.websocket))
            await self._bounded(context.add_init_script(NO_HOSTILE_APIS + STAY_WHILE_LOADING))
            page = await self._bounded(context.new_page())
            load.page = page
            context.on("page", load.opened)  # after the page's own "page" event
            page.on("crash", load.crashed)
            context.on("requestfinished", load.finished)
            # Playwright's routes do not see the requests a redirect makes (the browser follows it on its
            # own): each answer is paused here instead, and a redirect checked before it is followed.
            load.devtools = await self._bounded(context.new_cdp_session(page))
            load.devtools.on("Fetch.requestPaused", load.paused)
            await self._bounded(
                load.devtools.send("Fetch.enable", {"patterns": [{"urlPattern": "*", "requestStage": "Response"}]})
            )
            # The page's time starts now: a browser that took long to start (6 s seen on a loaded machine),
            # or a context slow to make, no longer cuts a page that renders quickly.
            deadline = time.monotonic() + self.timeout
            try:
                left = max(0.5, deadline - time.monotonic())
                # Playwright's own timeout first; asyncio's in case the browser never answers.
                await asyncio.wait_for(page.goto(response.url, wait_until="load", timeout=left * 1000), left + 1)
                left = max(0.5, deadline - time.monotonic())
                await asyncio.wait_for(page.wait_for_load_state("networkidle", timeout=left * 1000), left + 1)
            except (TimeoutError, PlaywrightTimeout):
                cut = True
            if load.has_crashed:
                raise PlaywrightError("the renderer crashed")
            # Bounded: a script that never yields holds the renderer, and every call to it, forever.
            read_by = max(time.monotonic(), deadline) + READ_GRACE
            read = page.evaluate(DOCUMENT_READ, self.max_size)
            unparsed, html = await asyncio.wait_for(read, read_by - time.monotonic())
            if unparsed:
                raise _NotKept("the browser could not parse it")
            if html is None or len(BOM) + _utf8_length(html) > self.max_size:
                raise _NotKept(f"the rendered document is over DOWNLOAD_MAXSIZE ({self.max_size} bytes)")
            await load.archived(max(0.1, read_by - time.monotonic()))
            if cut:
                self.stats.inc_value("tse/render_timeouts")
                logger.info("Rendering %s cut at %.0f s: kept as rendered so far", response.url, self.timeout)
            return html
        except _NotKept as error:
            self.stats.inc_value("tse/render_failed")
            logger.warning("Rendering %s not kept (%s): the page is kept as fetched", response.url, error)
            return None
        except (TimeoutError, PlaywrightError) as error:
            crashed = load.has_crashed or "crash" in str(error).lower()
            self.stats.inc_value("tse/render_crashes" if crashed else "tse/render_failed")
            reason = "crashed" if crashed else "failed"
            if isinstance(error, asyncio.TimeoutError) and cut:
                told = f"cut at {self.timeout:.0f} s, and its document could not be read"
            else:
                told = _told(error)
            logger.warning("Rendering %s %s (%s): the page is kept as fetched", response.url, reason, told)
            if context is None or load.page is None:  # a browser that does not answer: started anew
                await self._drop_browser()
            return None
        finally:
            if context is not None:
                try:
                    await asyncio.wait_for(context.close(), timeout=self.call_timeout)
                except Exception:  # a hung renderer or a dead browser: the next page load starts anew
                    await self._drop_browser()

    def _browser_failed(self, error: BaseException) -> None:
        """A browser that has never started in this crawl will not start: the crawl stops (exit 1),
        rather than saving every page unrendered."""
        if self._ever_started or self._stopping:
            return
        self._stopping = True
        self.crawler.stats.set_value("tse/error", f"--render: the browser cannot start: {_told(error)}")
        engine = self.crawler.engine
        if engine is not None and engine.spider is not None:
            # close_spider_async, not close_spider: Scrapy deprecates that, and its warning was a second
            # line beside the crawl's one-line error.
            deferred_from_coro(engine.close_spider_async(reason="tse_render_browser"))

    async def _drop_browser(self) -> None:
        """Close the browser and Playwright's driver (if they still answer, bounded) so that the next
        page load starts others: a browser that dies may leave the driver's connection broken too."""
        browser, self._browser = self._browser, None
        playwright, self._playwright = self._playwright, None
        if browser is None and playwright is None:
            return
        if browser is not None:
            self.stats.inc_value("tse/render_browser_restarts")
        for closing in (browser.close() if browser else None, playwright.stop() if playwright else None):
            if closing is None:
                continue
            try:
                await asyncio.wait_for(closing, timeout=self.call_timeout)
            except Exception as error:  # gone already: its processes went with it
                logger.debug("Closing the browser: %s", _told(error))

    async def _started_browser(self) -> Any:
        if self._browser is not None and self._browser.is_connected():
            return self._browser
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            from playwright.async_api import async_playwright

            if self._playwright is None:
                self._playwright = await asyncio.wait_for(async_playwright().start(), LAUNCH_TIMEOUT)
            if self._browser is not None:  # disconnected: it died
                self.stats.inc_value("tse/render_browser_restarts")
                logger.warning("The browser went away: starting another")
            # The feature switches last, merged (_merged_features).
            args = [*BROWSER_FLAGS, _blink_switch(self.extra_args)]
            args += [arg for arg in self.extra_args if arg.partition("=")[0] not in (*FEATURE_SWITCHES, BLINK_SWITCH)]
            if os.geteuid() == 0:  # Chromium's sandbox refuses to run as root
                args.append("--no-sandbox")
            options: dict[str, Any] = {"executable_path": self.executable, "headless": True, "args": args}
            proxy = _browser_proxy()
            if proxy is not None and "username" in proxy:
                options["proxy"] = proxy  # a PAC script cannot carry credentials: Playwright answers the 407s
            else:
                # Chromium's own calls; a page load's requests have the proxy of its context (_context_proxy):
                # a PAC script never sees a loopback URL (nor heeds --proxy-bypass-list).
                args.append(f"--proxy-pac-url={_proxy_pac(proxy)}")
            disabled = DISABLED_FEATURES if self.local_site else ()
            if not self._features_read and (disabled or _feature_switches(self.extra_args)):
                self._default_features = await asyncio.wait_for(self._read_default_features(options), LAUNCH_TIMEOUT)
                self._features_read = True
            options["args"] = [*args, *_merged_features(self._default_features, self.extra_args, disabled)]
            self._browser = await asyncio.wait_for(self._playwright.chromium.launch(**options), LAUNCH_TIMEOUT)
            self._ever_started = True
            return self._browser

    async def _read_default_features(self, options: dict[str, Any]) -> dict[str, list[str]] | None:
        """The feature switches Playwright starts Chromium with, read from the command line a browser
        started as the crawl's shows (chrome://version); None when it cannot be read."""
        from playwright.async_api import Error as PlaywrightError

        browser = await self._playwright.chromium.launch(**options)
        try:
            page = await browser.new_page()
            await page.goto("chrome://version", timeout=10_000)
            command_line = await page.inner_text("#command_line", timeout=10_000)
        except PlaywrightError as error:
            logger.warning(
                "Cannot read the browser's command line (%s): its features are left as they are", first_line(error)
            )
            return None
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(browser.close(), timeout=10)
        # The last of each switch: the one Chromium heeds.
        return dict(_feature_switches(command_line.split()))

    # -- what the browser asks for -------------------------------------------------
    def robots(self) -> TseRobotsTxtMiddleware | None:
        return self._middleware(TseRobotsTxtMiddleware)

    def warc(self) -> WarcMiddleware | None:
        return self._middleware(WarcMiddleware)

    def _middleware(self, kind: type[Any]) -> Any:
        """The crawl's downloader middleware of this *kind* (None: not enabled, or no engine yet)."""
        if kind not in self._middlewares:
            try:
                self._middlewares[kind] = self.crawler.get_downloader_middleware(kind)
            except RuntimeError:  # the engine is not running yet: asked again later
                return None
        return self._middlewares[kind]

    def named_hosts(self) -> set[str]:
        if not self._seeds_named and self.crawler.spider is not None:
            self._seeds_named = True
            seeds = getattr(self.crawler.spider, "seeds", ())
            self._named_hosts |= {urlsplit(seed).hostname or "" for seed in seeds} - {""}
        return self._named_hosts

    async def reachable(self, url: str) -> bool:
        """Whether a rendered page's request for *url* may be made at all, robots.txt included: to a
        named host, or to one whose every address is public or a prefix host's (rules/crawling/browserhosts.py).
        A name is resolved here, once a crawl, before anything is sent to it."""
        host = (urlsplit(url).hostname or "").lower()
        named = self.named_hosts()
        if host in named:
            return True
        if self._own_addresses is None:
            self._own_addresses = asyncio.ensure_future(self._prefix_addresses())
        own_addresses = self._own_addresses
        own = await asyncio.shield(own_addresses)
        if not own and self._own_addresses is own_addresses:
            self._own_addresses = None  # not resolved (a resolver down a moment): asked again next time
        return may_reach(host, await self._addresses(host), named, own)

    async def _prefix_addresses(self) -> frozenset[str]:
        found: list[str] = []
        for host in self.prefix_hosts:
            found += await self._addresses(host)
        return canonical_addresses(found)

    async def _addresses(self, host: str) -> tuple[str, ...]:
        """*host*'s addresses (itself for an address; none when it does not resolve in RESOLVE_TIMEOUT)."""
        if not host:
            return ()
        if ip_literal(host) is not None:
            return (host,)
        if host not in self._resolved:
            if len(self._resolved) >= RESOLVED_HOSTS_KEPT:
                self._resolved = {name: found for name, found in self._resolved.items() if not found.done()}
            self._resolved[host] = asyncio.ensure_future(_resolved(host))
        resolving = self._resolved[host]
        addresses = await asyncio.shield(resolving)
        if not addresses and self._resolved.get(host) is resolving:
            # Not resolved: not reached now, and asked again next time (a timeout, a resolver down a
            # moment, would otherwise keep a host's scripts out for the whole crawl: a review's find).
            del self._resolved[host]
        return addresses

    async def allowed(self, url: str) -> bool:
        """Whether robots.txt lets this crawler fetch *url* (its host's robots.txt fetched by Scrapy
        as for a page, once, with the politeness delay)."""
        robots = self.robots()
        if robots is None or not self.crawler.settings.getbool("ROBOTSTXT_OBEY"):
            return True
        request = Request(url)
        try:
            parser = await robots.robot_parser(request)
            robots.process_request_2(parser, request)
        except IgnoreRequest:
            return False
        return True

    async def spider_closed(self) -> None:
        await self._stop_browser()

    async def _stop_browser(self) -> None:
        """Close the browser and Playwright's driver; a page load meanwhile waits, then starts them anew."""
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            browser, playwright = self._browser, self._playwright
            self._browser = self._playwright = None
            try:
                if browser is not None:
                    await asyncio.wait_for(browser.close(), timeout=10)
                if playwright is not None:
                    await asyncio.wait_for(playwright.stop(), timeout=10)
            except Exception as error:  # closing: nothing is left to save
                logger.debug("Closing the browser: %s", _told(error))


class _PageLoad:
    """The browser's requests for one page: the page itself answered with Scrapy's answer, the
    others checked, counted and archived."""

    def __init__(self, middleware: RenderMiddleware, response: Response):
        self.middleware = middleware
        self.response = response
        self.requests = 0
        self.has_crashed = False
        self.navigated = False
        self.page: Any = None  # this page load's page (a script may open others)
        self.devtools: Any = None  # a DevTools session of the page's, pausing its answers (paused)
        self.answering: set[asyncio.Future] = set()  # the paused answers being checked
        self.archiving: list[asyncio.Future] = []
        self.closing: list[asyncio.Future] = []  # the windows a script opened, being closed

    def crashed(self, _page: Any) -> None:
        self.has_crashed = True

    def opened(self, page: Any) -> None:
        """A window a script opened (NO_HOSTILE_APIS took window.open away; a link with a target still
        opens one): closed at once, its page not loaded (route)."""
        if page is not self.page:
            self.closing.append(asyncio.ensure_future(_closed(page, self.middleware.call_timeout)))

    async def websocket(self, socket: Any) -> None:
        """A WebSocket the page opens: closed, never connected to its server."""
        self.middleware.stats.inc_value("tse/render_websockets_blocked")
        logger.debug("Rendering %s: its WebSocket to %s not opened", self.response.url, socket.url)
        with contextlib.suppress(Exception):
            await socket.close()

    async def route(self, route: Any) -> None:
        request = route.request
        stats = self.middleware.stats
        try:
            if request.is_navigation_request() and request.frame.parent_frame is None:
                if request.frame.page is not self.page:  # a window a script opened: not this page
                    await route.abort("blockedbyclient")
                elif not self.navigated:  # the page itself (goto): Scrapy's answer
                    self.navigated = True
                    await route.fulfill(status=self.response.status, headers=self._headers(), body=self.response.body)
                else:
                    # The page sends itself elsewhere (STAY_WHILE_LOADING did not cancel it): a 204 leaves
                    # the document as rendered so far (an abort would put Chromium's error page in its
                    # place), and nothing is fetched; a link to that page is the crawl's to follow.
                    logger.debug("Rendering %s: its navigation to %s not followed", self.response.url, request.url)
                    await route.fulfill(status=204)
                return
            parts = urlsplit(request.url)
            if parts.scheme not in ("http", "https"):
                await route.continue_()  # data:, blob: (no network)
                return
            if _service_host(parts.hostname or ""):  # Chromium's own hosts (CHROMIUM_SERVICE_HOSTS): never
                await route.abort("blockedbyclient")
                return
            if request.resource_type in SKIPPED_RESOURCES:
                await route.abort("blockedbyclient")
                return
            if self.requests >= self.middleware.max_requests:
                stats.inc_value("tse/render_requests_cut")
                await route.abort("blockedbyclient")
                return
            self.requests += 1
            if not await self.middleware.reachable(request.url):
                # Before anything is sent to it (its robots.txt included): a page may not make the crawler
                # contact a host of its own network.
                stats.inc_value("tse/render_private_blocked")
                logger.debug("Rendering %s: %s not requested (not a public host)", self.response.url, request.url)
                await route.abort("blockedbyclient")
                return
            if not await self.middleware.allowed(request.url):
                stats.inc_value("tse/render_robots_blocked")
                await route.abort("blockedbyclient")
                return
            stats.inc_value("tse/render_requests")
            await route.continue_()
        except Exception as error:  # the page went away meanwhile (closed, crashed), or a check failed
            logger.debug("Browser request %s: %s", request.url, error)
            with contextlib.suppress(Exception):
                await route.abort("failed")

    def paused(self, event: dict[str, Any]) -> None:
        """An answer the browser has had (DevTools' Fetch.requestPaused, at the response stage)."""
        answering = asyncio.ensure_future(self.answered(event))
        self.answering.add(answering)
        answering.add_done_callback(self.answering.discard)

    async def answered(self, event: dict[str, Any]) -> None:
        """A redirect is followed only to a URL the page's own request could go to (reachable, then
        robots.txt); any other answer goes on to the page as it is."""
        stats = self.middleware.stats
        paused = {"requestId": event["requestId"]}
        try:
            status = event.get("responseStatusCode")
            if status is None:  # the request failed: it stays failed
                reason = event.get("responseErrorReason") or "Failed"
                await self.devtools.send("Fetch.failRequest", {**paused, "errorReason": reason})
                return
            headers = {header["name"].lower(): header["value"] for header in event.get("responseHeaders") or []}
            if status in REDIRECT_STATUSES and "location" in headers:
                target = urljoin(event["request"]["url"], headers["location"])
                if urlsplit(target).scheme in ("http", "https"):
                    # Each hop the browser follows is a request of the page load's (TSE_RENDER_MAX_REQUESTS).
                    self.requests += 1
                    refused = None
                    if self.requests > self.middleware.max_requests:
                        refused = "tse/render_requests_cut"
                    elif not await self.middleware.reachable(target):
                        refused = "tse/render_private_blocked"
                    elif not await self.middleware.allowed(target):
                        refused = "tse/render_robots_blocked"
                    if refused is not None:
                        stats.inc_value(refused)
                        logger.debug("Rendering %s: the redirect to %s not followed", self.response.url, target)
                        await self.devtools.send("Fetch.failRequest", {**paused, "errorReason": "BlockedByClient"})
                        return
                    # Counted as a request the routes let go is (the summary's "N browser requests"): the
                    # hop is one, against TSE_RENDER_MAX_REQUESTS too.
                    stats.inc_value("tse/render_requests")
            await self.devtools.send("Fetch.continueResponse", paused)
        except Exception as error:  # the page went away meanwhile (closed, crashed), or a check failed
            logger.debug("Browser answer %s: %s", event.get("request", {}).get("url"), error)
            with contextlib.suppress(Exception):
                await self.devtools.send("Fetch.failRequest", {**paused, "errorReason": "Failed"})

    def _headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        for name, values in self.response.headers.items():
            key = name.decode("latin-1")
            if key.lower() in CODED_BODY_HEADERS:  # Scrapy has undone the codings of the body
                continue
            headers[key] = ", ".join(value.decode("latin-1") for value in values)
        content_type = headers.pop(next((key for key in headers if key.lower() == "content-type"), ""), "")
        headers["Content-Type"] = self._content_type(content_type)
        return headers

    def _content_type(self, content_type: str) -> str:
        """The page's Content-Type as the browser is given it: with the charset the crawl reads the page in
        when the header names none (its byte order mark, its <meta>, detection: ``page_encoding``, as the
        spider reads its links), else a UTF-8 page served as a bare ``text/html`` (python's http.server)
        would be read in windows-1252 by the browser, its text garbled and its links other URLs."""
        kind = media_type(content_type)
        if kind in UNTYPED:  # sniffed as HTML (RenderMiddleware._renders): Chromium would not render it
            content_type, kind = "text/html" + content_type[len(content_type.split(";")[0]) :], "text/html"
        if header_charset(content_type) is not None:
            return content_type
        encoding = page_encoding(self.response.body)[0]
        return f"{kind}; charset={browser_label(encoding)}"

    def finished(self, request: Any) -> None:
        """Archive a request the browser made over the network (``--warc``)."""
        warc = self.middleware.warc()
        if warc is None or request.url == self.response.url:
            return
        self.archiving.append(asyncio.ensure_future(self._archive(warc, request)))

    async def _archive(self, warc: WarcMiddleware, request: Any) -> None:
        try:
            answer = await request.response()
            if answer is None:
                return
            if (await request.sizes()).get("responseBodySize", 0) > self.middleware.max_size:
                return  # not archived: over DOWNLOAD_MAXSIZE
            body = await answer.body()
            headers = await answer.headers_array()
            sent = await request.all_headers()
        except Exception as error:  # a redirect has no body; a page closed meanwhile
            logger.debug("Not archived: %s: %s", request.url, error)
            return
        warc.archive(
            url=request.url,
            method=request.method,
            request_headers=sent,
            status=answer.status,
            headers=[(header["name"], header["value"]) for header in headers],
            body=body,
        )

    async def archived(self, timeout: float) -> None:
        if self.archiving:
            await asyncio.wait(self.archiving, timeout=min(10.0, timeout))


class _NotKept(Exception):
    """A rendered document that is not kept (the page is kept as fetched): why, in one line."""


BOM = "\ufeff".encode()
# Read from the page once it has rendered, in one turn of its scripts (a script could not grow the document
# between a check of its size and its reading, as a timer did between two calls: a 40 MB doctype came
# through): whether it is an XML document the browser could not parse (Chromium shows its error banner, a
# <parsererror>, in its place), and the document serialized as Playwright's page.content() does (its
# doctype, then its root's outerHTML), or null when it is longer than the bound in UTF-16 code units (each
# at least a byte in UTF-8): its doctype's names and ids measured first (a script may make its public id
# 300 MB: read whole, that crashed Playwright's driver), then the whole.
DOCUMENT_READ = """(limit) => {
  const root = document.documentElement;
  const doctype = document.doctype;
  const unparsed =
    document.contentType !== "text/html" && document.getElementsByTagNameNS("*", "parsererror").length > 0;
  if (unparsed) return [true, null];
  const declared = doctype ? 28 + doctype.name.length + doctype.publicId.length + doctype.systemId.length : 0;
  if (declared > limit) return [false, null];
  const html = (doctype ? new XMLSerializer().serializeToString(doctype) : "") + (root ? root.outerHTML : "");
  return [false, html.length > limit ? null : html];
}"""


def _utf8_length(text: str) -> int:
    """The bytes of *text* in the page file (UTF-8; a lone surrogate as Python writes it there)."""
    return len(text.encode("utf-8", "surrogatepass"))


def _any_url(_url: str) -> bool:
    return True


async def _resolved(host: str) -> tuple[str, ...]:
    """*host*'s addresses, as this machine's resolver gives them (none: not resolved in time, or not at all)."""
    try:
        answers = await asyncio.wait_for(
            asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM), RESOLVE_TIMEOUT
        )
    except (TimeoutError, OSError, UnicodeError) as error:
        logger.debug("Resolving %s: %s", host, _told(error))
        return ()
    return tuple(dict.fromkeys(str(answer[4][0]) for answer in answers))


async def _closed(page: Any, seconds: float) -> None:
    try:
        await asyncio.wait_for(page.close(), seconds)
    except Exception as error:  # closed already, with its context
        logger.debug("Closing a window a script opened: %s", _told(error))


def _told(error: BaseException) -> str:
    """*error* in one line (a bound that ran out says so: asyncio's TimeoutError has no message)."""
    if isinstance(error, asyncio.TimeoutError) and not str(error):
        return "the browser did not answer in time"
    return first_line(error)


def _blink_switch(extra_args: list[str]) -> str:
    """One --disable-blink-features: the crawl's DISABLED_BLINK_FEATURES and TSE_RENDER_ARGS' own."""
    names = list(DISABLED_BLINK_FEATURES)
    for arg in extra_args:
        switch, _, value = arg.partition("=")
        if switch == BLINK_SWITCH:
            names += [name for name in value.split(",") if name]
    return f"{BLINK_SWITCH}={','.join(dict.fromkeys(names))}"


class _DriverErrorsNotDumped(logging.Filter):
    """asyncio's "Future exception was never retrieved" dumps for the calls a dead browser or driver left
    unanswered (the page load they belonged to has said, in one line, that it failed): not logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("Future exception was never retrieved"):
            return True
        error = record.exc_info[1] if record.exc_info else None
        if type(error).__module__.startswith("playwright") or "from the driver" in str(record.msg):
            logger.debug("A browser call left unanswered: %s", first_line(error) if error else record.msg)
            return False
        return True


DRIVER_ERRORS_NOT_DUMPED = _DriverErrorsNotDumped()


def _feature_switches(args: list[str]) -> list[tuple[str, list[str]]]:
    """The --disable-features and --enable-features among *args*: (switch, names), in order."""
    found = []
    for arg in args:
        switch, _, value = arg.partition("=")
        if switch in FEATURE_SWITCHES:
            found.append((switch, [name for name in value.split(",") if name]))
    return found


def _merged_features(
    defaults: dict[str, list[str]] | None, extra_args: list[str], disabled: tuple[str, ...] = DISABLED_FEATURES
) -> list[str]:
    """One --disable-features and one --enable-features: Playwright's *defaults* (none when they could
    not be read: then the crawl's *disabled* features are not added either, lest Playwright's be
    undone), the crawl's, and TSE_RENDER_ARGS', which win."""
    given: dict[str, list[str]] = {switch: [] for switch in FEATURE_SWITCHES}
    for switch, names in _feature_switches(extra_args):
        given[switch] += names
    known = defaults is not None
    ours = {"--disable-features": list(disabled) if known else [], "--enable-features": []}
    other = {"--disable-features": "--enable-features", "--enable-features": "--disable-features"}
    merged = []
    for switch in FEATURE_SWITCHES:
        if not (ours[switch] or given[switch]):
            continue  # Playwright's own stands
        names = [*(defaults or {}).get(switch, []), *ours[switch]]
        names = [name for name in names if name not in given[other[switch]]]
        merged.append(f"{switch}={','.join(dict.fromkeys([*names, *given[switch]]))}")
    return merged


def _is_local_host(host: str | None) -> bool:
    """Whether *host* (a URL's) is this machine or a LAN's: ``localhost`` or a loopback, private or
    link-local address (a name is not looked up: a public one may resolve to anything)."""
    if host is None:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def _browser_proxy() -> dict[str, str] | None:
    """The crawl's HTTP proxy (``http_proxy``, ``no_proxy``, as Scrapy reads them) for the browser."""
    proxies = urllib.request.getproxies()
    url = proxies.get("http") or proxies.get("https")
    if not url:
        return None
    parts = urlsplit(url if "://" in url else f"http://{url}")
    proxy = {"server": f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")}
    if parts.username:
        proxy["username"] = unquote(parts.username)
        proxy["password"] = unquote(parts.password or "")
    if proxies.get("no"):
        proxy["bypass"] = proxies["no"]
    return proxy


def _no_proxy_hosts(proxy: dict[str, str] | None) -> list[str]:
    """The ``no_proxy`` hosts of *proxy*, lowered, without a leading dot (each with its subdomains)."""
    return [host.strip().lstrip(".").lower() for host in (proxy or {}).get("bypass", "").split(",") if host.strip()]


def _service_host(host: str) -> bool:
    host = host.lower()
    return any(host == service or host.endswith(f".{service}") for service in CHROMIUM_SERVICE_HOSTS)


def _context_proxy(proxy: dict[str, str] | None) -> dict[str, Any]:
    """A page load's browser context's proxy (``new_context``'s): the crawl's, as fixed rules, for the pages'
    requests, loopback hosts included (Playwright adds ``<-loopback>`` to the bypass list: Chromium never
    hands a loopback URL to a PAC script, so with the browser's PAC alone a page on 127.0.0.1 was fetched
    through the proxy and its scripts' requests were not); the ``no_proxy`` hosts, and their subdomains,
    direct.  None without a proxy, or for one with credentials (given to the browser at its launch)."""
    if proxy is None or "username" in proxy:
        return {}
    bypass = [entry for host in _no_proxy_hosts(proxy) for entry in (host, f".{host}")]
    return {"proxy": {"server": proxy["server"], "bypass": ",".join(bypass)}}


def _proxy_pac(proxy: dict[str, str] | None) -> str:
    """The browser's proxy configuration, as a PAC script in a data: URL: the crawl's proxy (or none)
    for the pages' requests, the ``no_proxy`` hosts direct, and Chromium's own service hosts sent to a
    closed port on 127.0.0.1, so that rendering a site contacts no one else (Chromium calls them at
    start and while it runs, whatever its flags, through any proxy)."""
    route = "DIRECT"
    if proxy is not None:
        parts = urlsplit(proxy["server"])
        route = f"PROXY {parts.hostname}:{parts.port or 80}; DIRECT" if parts.hostname else "DIRECT"
    bypass = _no_proxy_hosts(proxy)
    script = (
        "function FindProxyForURL(url, host) {\n"
        f"  var services = {json.dumps(list(CHROMIUM_SERVICE_HOSTS))};\n"
        f"  var direct = {json.dumps(bypass)};\n"
        # The favicon Chromium asks for on its own, outside the page's routes (paths are given for http only).
        "  if (url.slice(-12) == '/favicon.ico') return 'PROXY 127.0.0.1:9';\n"
        "  for (var i = 0; i < services.length; i++)\n"
        "    if (host == services[i] || dnsDomainIs(host, '.' + services[i])) return 'PROXY 127.0.0.1:9';\n"
        "  for (var j = 0; j < direct.length; j++)\n"
        "    if (host == direct[j] || dnsDomainIs(host, '.' + direct[j])) return 'DIRECT';\n"
        f"  return {json.dumps(route)};\n"
        "}\n"
    )
    return "data:application/x-ns-proxy-autoconfig;base64," + base64.b64encode(script.encode()).decode()
