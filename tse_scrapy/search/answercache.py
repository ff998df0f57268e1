"""Answers a server process has sent, kept to send again when the same search is asked again.

A search engine's traffic repeats itself (the same words typed by many readers,
a result page reloaded, the next page and back): Solr's query result cache and
Elasticsearch's request cache keep answers for this.  Here a whole answer is
kept, its body and headers, keyed by what the answer is made of: the request's
path, its query string as sent and its ``Accept-Language`` (the only header a
search's answer depends on).  Answered again, it costs a dictionary look-up
where the search took a few milliseconds of CPU.

An answer is kept only for the index it came from: when the process answers
from another (``tse index`` wrote it anew) or without other pages (a new gone
list), every kept answer is dropped.  Memory is bounded by the bytes kept
(bodies, headers and keys); the answer used longest ago goes first.  Only
successful answers (200) are kept, and only of query strings of MAX_KEY_BYTES
or fewer.  ``tse serve --answer-cache MB`` sets the bound (0: nothing kept).
"""

from __future__ import annotations

import sys
from collections import OrderedDict

from starlette.requests import Request
from starlette.responses import Response

MEGABYTE = 1024 * 1024
# The bytes of answers one server process keeps by default (each process keeps its own).
DEFAULT_BYTES = 16 * MEGABYTE
# The most tse serve --answer-cache may ask for, in MB (a process's memory is the machine's to share).
MAX_MEGABYTES = 4096
# Query strings longer than this are answered, not kept (a query is at most 1,000 characters, each at
# most four UTF-8 bytes, twelve once percent-encoded: 12,000 bytes, with room for the other parameters).
MAX_KEY_BYTES = 20_000
# What a kept answer costs beyond its objects' own sizes (``_cost``): its two tuples, its size's
# number and the ordered dictionary's slot and link.  Measured (tracemalloc, 20,000 answers through a
# 4 MB bound, a server's keys and headers): answers of 80 bytes take 0.95 of what they count for,
# of 5 KB 0.99; with a path shared by every key, 0.82 (counted for each).
ENTRY_OVERHEAD = 300
# An answer larger than this share of the bound is not kept (a few of them would push out the rest).
LARGEST_SHARE = 16

Key = tuple[str, bytes, str]
Kept = tuple[bytes, list[tuple[bytes, bytes]], int]  # (body, headers, the bytes it counts for)


class KeptResponse(Response):
    """A kept answer sent again: its body and headers as they were (none computed again)."""

    def __init__(self, kept: Kept | tuple[bytes, list[tuple[bytes, bytes]]]) -> None:
        self.status_code = 200
        self.background = None
        self.body, self.raw_headers = kept[0], list(kept[1])


class AnswerCache:
    """The answers of one server process, kept for the index (and gone pages) they were made from."""

    def __init__(self, limit_bytes: int = DEFAULT_BYTES) -> None:
        self.limit_bytes = limit_bytes
        self._kept: OrderedDict[Key, Kept] = OrderedDict()
        self._bytes = 0
        self._made_from: tuple[object, object] | None = None

    @staticmethod
    def key(request: Request) -> Key | None:
        """What *request*'s answer is made of, or None when it is not to be kept."""
        query = request.scope.get("query_string", b"")
        if len(query) > MAX_KEY_BYTES:
            return None
        return request.url.path, query, request.headers.get("accept-language", "")

    def answer(self, key: Key | None, made_from: tuple[object, object]) -> Response | None:
        """The answer kept for *key* from the index *made_from* (the served index and its gone pages,
        compared by identity), or None."""
        if key is None or not self.limit_bytes:
            return None
        self._drop_unless_made_from(made_from)
        kept = self._kept.get(key)
        if kept is None:
            return None
        self._kept.move_to_end(key)
        return KeptResponse(kept)

    def keepable(self, key: Key | None, response: Response) -> tuple[bytes, list[tuple[bytes, bytes]]] | None:
        """*response*'s body and headers when it is an answer to keep: a whole successful one (not
        streamed, nothing to run after it), keys not too long, answers kept at all."""
        if key is None or not self.limit_bytes or response.status_code != 200 or response.background is not None:
            return None
        body = getattr(response, "body", None)
        if not isinstance(body, bytes):  # (a streamed answer: none is kept)
            return None
        return body, list(response.raw_headers)

    def keep(self, key: Key | None, made_from: tuple[object, object], response: Response) -> Response:
        """*response*, kept for *key* when it is a whole successful answer within the bound."""
        keepable = self.keepable(key, response)
        if key is None or keepable is None:
            return response
        self._drop_unless_made_from(made_from)
        body, headers = keepable
        size = _cost(key, body, headers)
        if size * LARGEST_SHARE > self.limit_bytes or key in self._kept:
            return response
        while self._bytes + size > self.limit_bytes:
            self._bytes -= self._kept.popitem(last=False)[1][2]
        self._kept[key] = (body, headers, size)
        self._bytes += size
        return response

    def _drop_unless_made_from(self, made_from: tuple[object, object]) -> None:
        kept_from = self._made_from
        if kept_from is None or kept_from[0] is not made_from[0] or kept_from[1] is not made_from[1]:
            self._kept.clear()
            self._bytes = 0
            self._made_from = made_from

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def bytes_kept(self) -> int:
        return self._bytes


def _cost(key: Key, body: bytes, headers: list[tuple[bytes, bytes]]) -> int:
    """The memory an answer kept takes: its objects' sizes (a small answer's are more than its bytes:
    counted by their lengths alone, 20,000 empty results took 1.8 times the bound), and the entry's."""
    sizeof = sys.getsizeof
    held = sizeof(body) + sizeof(headers) + sum(sizeof(pair) + sizeof(pair[0]) + sizeof(pair[1]) for pair in headers)
    return held + sum(map(sizeof, key)) + ENTRY_OVERHEAD
