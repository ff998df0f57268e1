"""ReplayMiddleware: on resume, a page whose file was written but not yet
recorded is read back from disk instead of being fetched (and written) again."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.http import HtmlResponse

from ..rules.files import pagedir

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class ReplayMiddleware:
    """A downloader middleware answering ``meta['tse_replay_doc']`` requests from the page file."""

    def __init__(self, directory: str):
        self.directory = directory

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ReplayMiddleware:
        return cls(crawler.settings.get("TSE_PAGEDIR"))

    def process_request(self, request: Request) -> HtmlResponse | None:
        doc_id = request.meta.get("tse_replay_doc")
        if doc_id is None:
            return None
        page = pagedir.read_page(self.directory, doc_id)
        return HtmlResponse(page.url, body=page.body, request=request, flags=["replayed"])
