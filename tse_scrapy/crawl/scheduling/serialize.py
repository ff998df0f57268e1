"""Requests as dicts for the crawl state and Redis, without Scrapy's slow path.

``Request.to_dict(spider=...)`` finds a callback's name by listing every
method of the spider (``inspect.getmembers``) twice per request: a quarter of
a millisecond, a tenth of a crawl's time.  A bound method of the spider names
itself; anything else takes Scrapy's way.  ``request_from_dict`` reads both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from scrapy import Request, Spider


def request_to_dict(request: Request, spider: Spider) -> dict[str, Any]:
    callback, errback = _own_name(request.callback, spider), _own_name(request.errback, spider)
    if type(request) is not Request or callback is False or errback is False:
        return request.to_dict(spider=spider)
    encoded = {attr: getattr(request, attr) for attr in Request.attributes}
    encoded.update(callback=callback, errback=errback, headers=dict(request.headers))
    return encoded


def _own_name(method: Callable | str | None, spider: Spider) -> str | Literal[False] | None:
    """The spider method's name, None for no callback, False when it must be looked up."""
    if method is None or isinstance(method, str):
        return method
    name = getattr(method, "__name__", None)
    bound = getattr(spider, name, None) if name else None
    if getattr(method, "__self__", None) is spider and getattr(bound, "__func__", None) is method.__func__:
        return name
    return False
