"""uvicorn's HTTP/1.1 protocol (httptools), with the size of a request's head bounded.

httptools sets no bound on the request line and headers: a client sending a
header of 100 MB was read whole, in 12 s of a worker's time (httptools joins
a header's pieces as they come) and 200 MB of memory. A request whose head
grows past MAX_REQUEST_HEAD_BYTES is answered 431 and its connection closed.
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

# What a request's line and headers may take: nginx's default is 4 buffers of 8 KB, h11's 16 KB.
MAX_REQUEST_HEAD_BYTES = 64 * 1024
_REFUSED = b"Request header fields too large.\n"


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` refusing a request whose head takes more than MAX_REQUEST_HEAD_BYTES.

    The bytes are counted as they arrive, a read at a time, while a request's head is begun and not
    yet whole. A read in which the request began counts whole (a request most often starts a read),
    but not when another request ended in it (pipelined: httptools does not say where the next
    began), nor when the head is whole in it: a head is refused at most one read (256 KB) past the
    bound."""

    _head_bytes = 0  # of the request whose head is being read
    _mid_head = False  # a request's head is begun and not yet whole
    _begun = 0  # requests begun on the connection
    _ended = 0  # requests ended on the connection

    def data_received(self, data: bytes) -> None:
        begun, ended = self._begun, self._ended
        super().data_received(data)
        if not self._mid_head:
            return
        if self._begun == begun:  # the whole read inside the head
            self._head_bytes += len(data)
        elif self._ended == ended:  # the head began in this read, no request ended before it
            self._head_bytes = len(data)
        if self._head_bytes > MAX_REQUEST_HEAD_BYTES and not self.transport.is_closing():
            self._refuse()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._mid_head = True
        self._head_bytes = 0
        self._begun += 1

    def on_headers_complete(self) -> None:
        self._mid_head = False
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._ended += 1

    def _refuse(self) -> None:
        self.logger.warning("A request's head was refused: more than %d bytes.", MAX_REQUEST_HEAD_BYTES)
        if self.cycle is not None and not self.cycle.response_complete:
            # An earlier request pipelined on the connection is still being answered: a 431 now
            # would be read as its answer. The connection is closed without one.
            self.transport.close()
            return
        self.transport.write(
            b"".join(
                (
                    STATUS_LINE[431],
                    *(name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers),
                    b"content-type: text/plain; charset=utf-8\r\n",
                    b"content-length: %d\r\n" % len(_REFUSED),
                    b"connection: close\r\n\r\n",
                    _REFUSED,
                )
            )
        )
        self.transport.close()
