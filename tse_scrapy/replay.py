"""ReplayMiddleware: on resume, a page whose file was written but not yet
recorded is read back from disk instead of being fetched (and written) again."""

from __future__ import annotations

from scrapy.http import HtmlResponse

from . import pagedir


class ReplayMiddleware:
    def __init__(self, directory):
        self.directory = directory

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler.settings.get("TSE_PAGEDIR"))

    def process_request(self, request):
        doc_id = request.meta.get("tse_replay_doc")
        if doc_id is None:
            return None
        page = pagedir.read_page(self.directory, doc_id)
        return HtmlResponse(page.url, body=page.body, request=request, flags=["replayed"])
