"""Scrapy contracts for the TSE rules, used by ``scrapy check tse``.

``scrapy check`` serves the site in TSE_CHECK_SITE (the demo site) on
127.0.0.1 and crawls it at depth TSE_CHECK_DEPTH, so the checks run offline.
"""

from __future__ import annotations

from typing import Any

from scrapy import Request
from scrapy.contracts import Contract
from scrapy.exceptions import ContractFail
from scrapy.http import Response

from ..crawl.items import PageItem
from ..crawl.signals import page_done
from ..rules.web.urls import is_internal


class LocalSiteContract(Contract):
    """@local_site PATH: the sample request is PATH on the local check site."""

    name = "local_site"

    def adjust_request_args(self, args: dict[str, Any]) -> dict[str, Any]:
        self.spider = args["callback"].__self__
        args["url"] = self.spider.check_site_url + self.args[0].lstrip("/")
        return args

    def pre_process(self, response: Response) -> None:
        self.request = response.request

    def post_process(self, output: list[Any]) -> None:
        # `scrapy check` discards what the callback yields, so no item reaches
        # the pipeline: tell the scheduler the page is over (checked: no failure of the crawl's).
        self.spider.crawler.signals.send_catch_log(page_done, request=self.request, checked=True)


class PageDepthContract(Contract):
    """@page_depth N: a page at depth N yields an item of depth N and links of
    depth N + 1, and no link at all at maxDepth."""

    name = "page_depth"

    def adjust_request_args(self, args: dict[str, Any]) -> dict[str, Any]:
        self.spider = args["callback"].__self__
        args["meta"] = {**(args.get("meta") or {}), "depth": int(self.args[0])}
        return args

    def post_process(self, output: list[Any]) -> None:
        depth = int(self.args[0])
        for item in (o for o in output if isinstance(o, PageItem)):
            if item.depth != depth:
                raise ContractFail(f"item of depth {item.depth}, expected {depth}")
        requests = [o for o in output if isinstance(o, Request)]
        if depth >= self.spider.crawl_args.depth and requests:
            raise ContractFail(f"{len(requests)} links yielded at maxDepth {depth}")
        for request in requests:
            if request.meta.get("depth") != depth + 1:
                raise ContractFail(f"{request.url} has depth {request.meta.get('depth')}, expected {depth + 1}")


class InternalFetchesContract(Contract):
    """@fetches_only_internal: every link yielded is internal, or a found link
    the offsite middleware drops unfetched (and logs IgnExtrn)."""

    name = "fetches_only_internal"

    def adjust_request_args(self, args: dict[str, Any]) -> dict[str, Any]:
        self.prefixes = args["callback"].__self__.crawl_args.prefixes
        return args

    def post_process(self, output: list[Any]) -> None:
        for request in (o for o in output if isinstance(o, Request)):
            if not is_internal(request.url, self.prefixes) and "tse_found_at" not in request.meta:
                raise ContractFail(f"external request that would be fetched: {request.url}")
