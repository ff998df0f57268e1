"""RedirectWithoutRefererMiddleware: Scrapy's redirects, in a crawl that may send no Referer.

A tse crawl sends no Referer by default (settings.py: REFERER_ENABLED), as the
reference crawler sends none.  Scrapy's RedirectMiddleware then logs a
warning at every start that it found no RefererMiddleware to set the header
on redirects; there is no header to set.  This subclass looks for one only
when REFERER_ENABLED; either way it is Scrapy's middleware.

A redirect it cannot follow fails as what it is: past REDIRECT_MAX_TIMES ("too many redirects": Scrapy's
IgnoreRequest was said "ignored"), or to a URL no request can be made of ("invalid redirect": a port past
65535 was said "ValueError").  A hop is de-duplicated as a link is, a retried page's too: Scrapy's retry
sets ``dont_filter``, which Scrapy's redirect hands on to the hop.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from scrapy.core.downloader import Downloader
from scrapy.downloadermiddlewares.redirect import RedirectMiddleware
from scrapy.exceptions import IgnoreRequest
from w3lib.url import safe_url_string

from ...rules.web.urls import normalize_url

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

# Why a redirect was not followed: the start of its IgnoreRequest's message, the reason record.failure_reason gives.
TOO_MANY_REDIRECTS = "too many redirects"
INVALID_REDIRECT = "invalid redirect"
DOWNLOAD_SLOT = Downloader.DOWNLOAD_SLOT  # (request.meta's key, "download_slot")
# A path segment "." or "..", written or percent-encoded ("%2e"), before the query: one a hop removes.
_DOT_SEGMENT = re.compile(r"^[^?#]*/(?:\.|%2e){1,2}(?:[/?#]|$)", re.I)


class RedirectWithoutRefererMiddleware(RedirectMiddleware):
    """Scrapy's RedirectMiddleware, silent about the Referer when REFERER_ENABLED is off."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedirectWithoutRefererMiddleware:
        if crawler.settings.getbool("REFERER_ENABLED"):
            return super().from_crawler(crawler)
        # As Scrapy's from_crawler, without the engine_started look-up that warns.
        middleware = cls(crawler.settings)
        middleware.crawler = crawler
        return middleware

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Request | Response:
        try:
            hop = super().process_response(request, response)
        except (ValueError, UnicodeError) as error:  # its Location names no URL a request can be made of
            raise IgnoreRequest(f"{INVALID_REDIRECT}: {error}") from None
        except IgnoreRequest as error:
            if str(error) == "max redirections reached":  # (Scrapy's words)
                raise IgnoreRequest(f"{TOO_MANY_REDIRECTS}: more than {self.max_redirect_times}") from None
            raise
        if hop is response:
            if (scheme := self._other_scheme(request, response)) is not None:
                # Scrapy passes a redirect to a file:, data: or ftp: URL on as the 3xx answer, which then
                # failed as "HTTP 302": it leads out of the prefixes (all http or https), and is said so,
                # counted as Scrapy's offsite refusal of a hop to another host is.
                self.crawler.stats.inc_value("offsite/filtered")
                raise IgnoreRequest(f"Filtered offsite request to a {scheme}: URL, from {request.url[:200]}")
            return hop
        # Scrapy gives the hop the request's dont_filter, and Scrapy's retry sets it on the request it
        # retries: a retried page's hop passed the dupefilter, so a redirect to a page seen saved it
        # again, counted by the page limit, and a loop went on to REDIRECT_MAX_TIMES (a review's find).
        # A hop is a URL like a link's: seen once.  (robots.txt's and the sitemaps' fetches never pass
        # the scheduler: the engine follows their hops itself.)
        hop.dont_filter = False
        if urlsplit(hop.url).netloc != urlsplit(request.url).netloc:
            # Scrapy copies the request's download slot to the hop: a hop to another host was asked in
            # the first host's slot, with its delay, and that host's Crawl-delay set on the first's slot
            # (a review's find).  The hop's own host's slot, as for any request to it.
            hop.meta.pop(DOWNLOAD_SLOT, None)
        if not _DOT_SEGMENT.search(hop.url):
            return hop
        # An absolute Location's dot segments are kept by urljoin: the hop was fetched as written, and
        # robots.txt (which matches the path as requested) did not forbid "/d/ok/../no.html" under
        # "Disallow: /d/no" (a review's find).  Asked as a link naming it is: dot segments removed.
        normalized = normalize_url(hop.url, tse_extensions=False)
        return hop.replace(url=normalized) if normalized else hop

    def _other_scheme(self, request: Request, response: Response) -> str | None:
        """The scheme of the URL *response* redirects to when Scrapy would follow it but for that scheme
        (none of http and https), else None."""
        location = response.headers.get("Location")
        if location is None or response.status not in {301, 302, 303, 307, 308} or request.meta.get("dont_redirect"):
            return None
        if request.meta.get("handle_httpstatus_all") or response.status in (
            *getattr(self.crawler.spider, "handle_httpstatus_list", ()),
            *request.meta.get("handle_httpstatus_list", ()),
        ):
            return None
        try:
            scheme = urlsplit(urljoin(request.url, safe_url_string(location))).scheme.lower()
        except ValueError:
            return None
        return scheme if scheme and scheme not in {"http", "https"} else None
