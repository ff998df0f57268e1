"""uvicorn's HTTP/1.1 protocol (httptools), with a request's head bounded in size and in time.

Size: httptools sets no bound on the request line and headers: a client sending
a header of 100 MB was read whole, in 12 s of a worker's time (httptools joins
a header's pieces as they come) and 200 MB of memory.  A request whose head
takes more than MAX_REQUEST_HEAD_BYTES is answered 431 and its connection
closed.

Time: uvicorn closes a kept-alive connection 5 s after an answer when nothing
more comes, but waits without end for a connection's first request, and for the
rest of a head once a byte of it has come: connections that sent nothing, or a
head a few bytes at a time (slowloris), each held a file descriptor for good
(2,000 were held).  A request's head must be whole within REQUEST_HEAD_SECONDS
of the connection's start, or of the answer before it; else the connection is
closed, answered 408 first when part of a request had come.

Letters: a request line holding bytes past ASCII (``curl 'http://host/api/search?q=日本語'``, which
sends the query's UTF-8 as it is) was answered 400, as httptools refuses them in a URL; browsers
percent-encode them, and nginx takes them as they are.  Such bytes in a request line are
percent-encoded before it is parsed, as a browser would have sent them.  (The line of a request
pipelined behind another in the same read is parsed as it came.)

A bad request pipelined behind good ones is answered 400 after them, as nginx does, not at once.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

# What a request's line and headers may take: nginx's default is 4 buffers of 8 KB, h11's 16 KB.
MAX_REQUEST_HEAD_BYTES = 64 * 1024
# How long a request's head may take to come whole.  A client writes its head at once (a few KB,
# one or two packets): 15 s leaves it a first packet lost three times (TCP's retransmissions, 1 + 2 +
# 4 s) and outlasts the 10 s Chrome keeps a connection it opened ahead of a request unused; nginx and
# Node.js wait 60 s.  A connection holds a file descriptor at most this long without a request, or
# without its client taking any of an answer waiting for it.
REQUEST_HEAD_SECONDS: float = 15.0
# A client that has not yet taken the whole previous answer (some of it still waits in the server's
# buffer) is not timed: this often it is looked at again, and the next head's time starts once it has.
DRAIN_CHECK_SECONDS: float = 1.0
_REFUSED = b"Request header fields too large.\n"
# Each byte as a request line holds it once encoded: past ASCII, percent-encoded (a table, not a
# pattern's call a byte: 64 KB of them take about 4 ms, not 40).
_ENCODED = [bytes([byte]) if byte < 0x80 else b"%%%02X" % byte for byte in range(256)]
_TIMED_OUT = b"Request timeout.\n"


class _HeadRefused(Exception):
    """Raised in a parser callback once the request is refused: the parser stops there."""


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` refusing a request whose head takes more than MAX_REQUEST_HEAD_BYTES,
    and closing a connection whose next request's head is not whole within *head_seconds*.

    The head's bytes are counted twice.  While it is begun and not yet whole, as they arrive, a read
    at a time: a read in which the request began counts whole (a request most often starts a read),
    but not when another request ended in it (pipelined: httptools does not say where the next
    began; such a head, not yet whole, may pass the bound by that read).  Once whole, as parsed: its
    line and headers as written with one space and CRLF (the spaces a client adds around a value
    are not kept, nor counted).

    The head's time runs from the connection's start, and from the end of each answer not followed
    by a pipelined request, until the head is whole: never while a request is answered, nor while
    the client is still taking the answer (DRAIN_CHECK_SECONDS).  A client that takes nothing of an
    answer waiting for it (the server's buffer full, or not emptied at its end) for *head_seconds* has
    its connection aborted: one taking it slowly is not."""

    _head_bytes = 0  # of the request whose head is being read
    _mid_head = False  # a request's head is begun and not yet whole
    _begun = 0  # requests begun on the connection
    _ended = 0  # requests ended on the connection
    _unsent = 0  # what waited in the write buffer at the last look, while an answer waits for its client
    _unsent_since = 0.0  # the loop's time since which the client has taken none of it
    _in_request_line = False  # the last read ended inside a request line (``_with_line_encoded``)
    _refused_after: str | None = None  # a 400 owed once the requests before it are answered
    _line_bytes = 0  # ... and that line's bytes read so far

    def __init__(self, *args: Any, head_seconds: float = REQUEST_HEAD_SECONDS, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.head_seconds = head_seconds
        self._head_timer: asyncio.TimerHandle | None = None
        self._send_timer: asyncio.TimerHandle | None = None  # while writing is paused (the buffer full)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_head_clock()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_clock()
        self._stop_send_clock()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        super().pause_writing()
        self._stop_send_clock()
        self._begin_waiting_to_send()
        self._send_timer = self.loop.call_later(DRAIN_CHECK_SECONDS, self._look_at_sending)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._stop_send_clock()

    def data_received(self, data: bytes) -> None:
        # uvicorn 0.54's (pinned), but for a refusal raised from within the parser (_HeadRefused):
        # answered 431 already, where uvicorn would answer 400 to any error the parser raises.
        if self._refused_after is not None:  # (the parser stopped at a bad request: nothing more is read)
            return
        begun, ended = self._begun, self._ended
        self._unset_keepalive_if_required()
        encoded = self._with_line_encoded(data)
        if encoded is None:  # (a request line past the head's bound)
            if not self.transport.is_closing():
                self._refuse()
            return
        try:
            self.parser.feed_data(encoded)
        except httptools.HttpParserError as error:
            if not isinstance(error.__context__, _HeadRefused):
                message = "Invalid HTTP request received."
                self.logger.warning(message)
                self._answer_400(message)
            return
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
        if not self._mid_head:
            return
        if self._begun == begun:  # the whole read inside the head
            self._head_bytes += len(data)
        elif self._ended == ended:  # the head began in this read, no request ended before it
            self._head_bytes = len(data)
        if self._head_bytes > MAX_REQUEST_HEAD_BYTES and not self.transport.is_closing():
            self._refuse()

    def _with_line_encoded(self, data: bytes) -> bytes | None:
        """*data* with the bytes past ASCII of the request line it begins with (when it begins one, after
        any empty lines, which a parser skips, or goes on with one) percent-encoded; None for a line
        past the head's bound, to be refused (before it is encoded: a hostile line costs no more)."""
        if not (self._in_request_line or self._begun == self._ended):
            return data
        start = 0
        if not self._in_request_line:
            start, self._line_bytes = len(data) - len(data.lstrip(b"\r\n")), 0
        end = data.find(b"\n", start)
        self._in_request_line = end == -1
        line = data[start:] if end == -1 else data[start:end]
        self._line_bytes += len(line)
        if self._line_bytes > MAX_REQUEST_HEAD_BYTES:
            return None
        if line.isascii():
            return data
        return data[:start] + b"".join(map(_ENCODED.__getitem__, line)) + data[start + len(line) :]

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._mid_head = True
        self._head_bytes = 0
        self._begun += 1

    def on_headers_complete(self) -> None:
        self._mid_head = False
        self._stop_head_clock()
        # Whole within one read, the head was not counted as it came; a request line past 64 KB would
        # fail httptools' parse_url (16-bit offsets), which uvicorn answers 400.
        if self._parsed_head_bytes() > MAX_REQUEST_HEAD_BYTES:
            self._refuse()
            raise _HeadRefused  # what follows the head in the read is not parsed
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._ended += 1

    def _answer_400(self, message: str) -> None:
        """400 *message* and the connection closed, once the requests pipelined before the bad one are
        answered: uvicorn wrote it at once, read by the client as the first one's answer, and theirs
        were lost (a tester's find)."""
        if self.cycle is None or (self.cycle.response_complete and not self.pipeline):
            self.send_400_response(message)
            return
        self._refused_after = message
        self._stop_head_clock()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._refused_after is not None:
            if self.cycle.response_complete and not self.pipeline and not self.transport.is_closing():
                self.send_400_response(self._refused_after)
            return
        # The latest request answered (none pipelined after it, started now): the next one's head is timed.
        if self.cycle.response_complete and not self.transport.is_closing():
            self._begin_waiting_to_send()
            self._start_head_clock()

    def _parsed_head_bytes(self) -> int:
        """The request's line and headers, as parsed, written with one space and CRLF."""
        line = len(self.parser.get_method()) + 1 + len(self.url) + len(b" HTTP/1.1\r\n")
        return line + sum(len(name) + len(b": ") + len(value) + len(b"\r\n") for name, value in self.headers) + 2

    def _start_head_clock(self) -> None:
        """The next request's head has head_seconds from now, or from when the client has taken the
        previous answer (looked at again every DRAIN_CHECK_SECONDS until then)."""
        self._stop_head_clock()
        if self.transport.is_closing():
            return
        if self.transport.get_write_buffer_size():
            if self._taken_nothing():
                self.transport.abort()
                return
            self._head_timer = self.loop.call_later(DRAIN_CHECK_SECONDS, self._start_head_clock)
        else:
            self._head_timer = self.loop.call_later(self.head_seconds, self._head_timed_out)

    def _stop_head_clock(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _begin_waiting_to_send(self) -> None:
        """What waits for the client to take it is looked at from now (``_taken_nothing``)."""
        self._unsent, self._unsent_since = self.transport.get_write_buffer_size(), self.loop.time()

    def _taken_nothing(self) -> bool:
        """Whether the client has taken nothing of what waits for it for head_seconds: the write buffer
        has not changed (looked at every DRAIN_CHECK_SECONDS; nothing is added to it meanwhile: writing
        is paused, or the answer is whole)."""
        unsent = self.transport.get_write_buffer_size()
        if unsent != self._unsent:
            self._unsent_since = self.loop.time()
        self._unsent = unsent
        return self.loop.time() - self._unsent_since >= self.head_seconds

    def _look_at_sending(self) -> None:
        """While writing is paused: the connection aborted once its client has taken nothing for head_seconds."""
        self._send_timer = None
        if self.transport.is_closing():
            return
        if self._taken_nothing():
            self.transport.abort()
            return
        self._send_timer = self.loop.call_later(DRAIN_CHECK_SECONDS, self._look_at_sending)

    def _stop_send_clock(self) -> None:
        if self._send_timer is not None:
            self._send_timer.cancel()
            self._send_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        if self._mid_head:
            # Part of a request came: its client waits for an answer, and is told (as Node.js and
            # Apache's mod_reqtimeout do; nginx closes without one).
            self._answer_and_close(408, _TIMED_OUT)
        else:
            # Nothing of a request came: nothing waits for an answer, and one sent unasked would be
            # read as the answer to the request the client sends next (closed as the keep-alive does).
            self.transport.close()

    def _refuse(self) -> None:
        self.logger.warning("A request's head was refused: more than %d bytes.", MAX_REQUEST_HEAD_BYTES)
        if self.cycle is not None and not self.cycle.response_complete:
            # An earlier request pipelined on the connection is still being answered: a 431 now
            # would be read as its answer. The connection is closed without one.
            self._stop_head_clock()
            self.transport.close()
            return
        self._answer_and_close(431, _REFUSED)

    def _answer_and_close(self, status: int, body: bytes) -> None:
        self._stop_head_clock()
        self.transport.write(
            b"".join(
                (
                    STATUS_LINE[status],
                    *(name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers),
                    b"content-type: text/plain; charset=utf-8\r\n",
                    b"content-length: %d\r\n" % len(body),
                    b"connection: close\r\n\r\n",
                    body,
                )
            )
        )
        self.transport.close()
