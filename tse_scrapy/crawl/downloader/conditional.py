"""ConditionalRequestMiddleware: asks for a known page with its validators,
and turns a 304 Not Modified into the saved copy of the page.

An update crawls the whole site again (the links of an unchanged page still
lead somewhere), so a 304 must still give the spider the page's body: it is
read back from the page file, whose body is the one the validators describe.
A page noted noindex or nofollow, or naming a canonical URL in its headers, is
asked for whole: a 304 need not repeat the header that said so, and only a whole
answer tells that it no longer does (such pages are few).  The saved copy keeps the
type and charset it was saved with (its notes): a 304 that names another
``Content-Type`` (RFC 9110 says it should name none) would otherwise turn a
saved HTML page into a "PDF", or read it in another encoding.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse, Response

from ...rules.files import pagedir
from ...rules.files.pagenotes import (
    PDF,
    TYPES,
    read_canonicals,
    read_charsets,
    read_nofollow,
    read_noindex,
    read_notes,
)
from ...update.extension import UpdateExtension, update_session

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

NOT_MODIFIED = 304
# What this middleware puts on a request (and a redirect's next hop inherits).
VALIDATOR_HEADERS = (b"If-None-Match", b"If-Modified-Since")
CONDITIONAL_META = ("tse_conditional_doc", "tse_revisit_of")


class ConditionalRequestMiddleware:
    """A downloader middleware: ``If-None-Match``/``If-Modified-Since`` out, the saved copy back on a 304."""

    def __init__(self, update: UpdateExtension, directory: str):
        self.update = update
        self.directory = directory
        self.asked_whole = read_noindex(directory) | read_nofollow(directory) | read_canonicals(directory).keys()
        # The saved pages' types and HTTP charsets, as noted when they were saved (before this update).
        self.types = read_notes(directory, TYPES)
        self.charsets = read_charsets(directory)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ConditionalRequestMiddleware:
        update = update_session(crawler)
        if update is None or not update.is_update:
            raise NotConfigured
        return cls(update, crawler.settings.get("TSE_PAGEDIR"))

    def process_request(self, request: Request) -> None:
        if request.method != "GET" or "tse_replay_doc" in request.meta:
            return
        # A redirect's next hop is a copy of the request before it, its validators and docID with it:
        # they are that page's, never this one's (a 304 of the target gave it the source's saved body).
        for header in VALIDATOR_HEADERS:
            request.headers.pop(header, None)
        for key in CONDITIONAL_META:
            request.meta.pop(key, None)
        page = self.update.known_request(request)
        if page is None or not (page.etag or page.last_modified) or page.url in self.asked_whole:
            return
        if not pagedir.page_path(self.directory, page.doc_id).is_file():
            return  # its saved copy gone (removed by hand): asked for whole, saved again
        if page.etag:
            request.headers[b"If-None-Match"] = page.etag
        if page.last_modified:
            request.headers[b"If-Modified-Since"] = page.last_modified
        request.meta["tse_conditional_doc"] = page.doc_id
        if page.fetched:
            request.meta["tse_revisit_of"] = {"uri": page.url, "date": page.fetched}

    def process_response(self, request: Request, response: Response) -> Response:
        doc_id = request.meta.get("tse_conditional_doc")
        if response.status != NOT_MODIFIED or doc_id is None:
            return response
        try:
            page = pagedir.read_page(self.directory, doc_id)
        except (OSError, pagedir.PageFileError):
            return response  # the saved copy is unreadable: a failure, as any other non-200
        request.meta["tse_http_status"] = NOT_MODIFIED
        headers = response.headers.copy()
        headers[b"Content-Type"] = self.saved_type(page.url)
        return HtmlResponse(
            url=response.url,
            status=200,
            headers=headers,
            body=page.body,
            request=request,
            flags=[*response.flags, "not_modified"],
            ip_address=response.ip_address,
            protocol=response.protocol,
        )

    def saved_type(self, url: str) -> str:
        """The ``Content-Type`` the page saved for *url* was saved with, as its notes keep it: ``application/pdf``
        for a PDF, else ``text/html``, with the charset its header declared."""
        kind = "application/pdf" if self.types.get(url) == PDF else "text/html"
        charset = self.charsets.get(url)
        return f"{kind}; charset={charset}" if charset and kind != "application/pdf" else kind
