"""A relay on 127.0.0.1 between tse and a real Redis that cuts it at an exact instant: the first
command whose bytes hold *trigger* (``b"ZCARD"``: the scheduler's first look) is not passed on;
every connection is dropped, new ones are closed at once for *away* seconds, and *during* runs
meanwhile (a restart of the Redis, empty).  Then it relays again.  What tse meets is a real
outage of a real Redis, at the instant a test chooses rather than one a race gives.  With *refusal*
(``b"-NOPERM ..."``), that command is answered so instead, and nothing is cut."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

from tests.support.net import free_port


class RedisGap:
    def __init__(
        self,
        target_port: int,
        trigger: bytes,
        away: float = 0.0,
        during: Callable[[], None] | None = None,
        refusal: bytes | None = None,
    ):
        self.target_port = target_port
        self.refusal = refusal
        self.trigger = trigger
        self.away = away
        self.during = during
        self.port = free_port()
        self.cut = threading.Event()  # set once the gap began
        self.refusing = False
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def close(self) -> None:
        self._listener.close()
        self._drop()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            if self.refusing:
                client.close()
                continue
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets |= {client, server}
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, from_client: bool) -> None:
        try:
            while chunk := source.recv(65536):
                if from_client and not self.cut.is_set() and self.trigger in chunk and self._triggered(chunk):
                    self.cut.set()
                    if self.refusal is not None:
                        source.sendall(self.refusal + b"\r\n")  # (one command in the chunk: as asked)
                        continue
                    self._begin_gap()
                    return
                target.sendall(chunk)
        except OSError:
            pass
        for end in (source, target):
            end.close()

    def _triggered(self, chunk: bytes) -> bool:
        """Whether *chunk*, a client's that holds the trigger, begins the gap (a subclass may wait for a later one)."""
        return True

    def _begin_gap(self) -> None:
        self.refusing = True
        self._drop()
        threading.Thread(target=self._gap, daemon=True).start()

    def _gap(self) -> None:
        started = time.monotonic()
        if self.during is not None:
            self.during()
        time.sleep(max(0.0, self.away - (time.monotonic() - started)))
        self.refusing = False

    def _drop(self) -> None:
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for end in sockets:
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            end.close()
