"""A site server for tests and the demo: serves a directory tree on 127.0.0.1.

As an origin, ``GET /path`` answers ``DIR/path``; as an HTTP proxy, an
absolute-URI request ``GET http://host/path`` answers ``DIR/host/path``
(so a mirror of a real site can be crawled under its real URLs without
leaving this machine).  A directory answers its ``index.html``; a directory
asked for without its slash answers 301 to the slashed URL.  Per-path rules
inject statuses, redirects, delays, connection resets, slow drips and chunked
bodies (a ``.redirects`` file in DIR, lines of
``PATH STATUS LOCATION``, adds redirect rules); every request is recorded with
the time it arrived.

    python -m tse_scrapy.devtools.siteserver DIR [--port N]
"""

from __future__ import annotations

import argparse
import mimetypes
import os
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit


@dataclass
class Rule:
    """What to do instead of serving the file, for one path."""

    status: int | None = None  # answer this status (with a short body)
    location: str | None = None  # redirect here (status defaults to 302)
    delay: float = 0.0  # wait this long before answering
    times: int | None = None  # apply this many times, then serve normally
    body: bytes | None = None  # serve these bytes instead of the file
    headers: dict[str, str] = field(default_factory=dict)
    reset_after: int | None = None  # send this many body bytes, then reset the connection
    drip: float | None = None  # send the body a byte at a time, this many seconds apart
    chunked: bool = False  # send the body with Transfer-Encoding: chunked


@dataclass
class Hit:
    """One request the server received."""

    time: float  # when it arrived
    method: str
    target: str  # the request target as sent (path, or absolute URI via proxy)
    key: str  # "host/path" for proxy requests, "/path" for origin requests
    headers: dict[str, str]
    done: float | None = None  # when its answer was sent


class SiteServer:
    """A threaded HTTP server on loopback, answering from a directory tree; ``hits`` records every request."""

    def __init__(self, root: str | os.PathLike, host: str = "127.0.0.1", port: int = 0):
        self.root = Path(root)
        self.rules: dict[str, Rule] = _read_redirects(self.root / ".redirects")
        self.hits: list[Hit] = []
        self.active = 0
        self.max_active = 0  # the most requests being answered at once
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer((host, port), _handler_for(self))
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> SiteServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> SiteServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def record(self, hit: Hit) -> None:
        with self._lock:
            self.hits.append(hit)

    def count_active(self, change: int) -> None:
        with self._lock:
            self.active += change
            self.max_active = max(self.max_active, self.active)

    def take_rule(self, key: str) -> Rule | None:
        with self._lock:
            rule = self.rules.get(key)
            if rule is None:
                return None
            if rule.times is not None:
                if rule.times <= 0:
                    return None
                rule.times -= 1
            return rule


def _shapes_body(rule: Rule) -> bool:
    return rule.reset_after is not None or rule.drip is not None or rule.chunked


def _read_redirects(path: Path) -> dict[str, Rule]:
    rules = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            fields = line.split()
            if len(fields) == 3 and not line.startswith("#"):
                rules[fields[0]] = Rule(status=int(fields[1]), location=fields[2])
    return rules


def _handler_for(server: SiteServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # Without this, a kept-alive connection stalls ~40 ms per response.
        disable_nagle_algorithm = True
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._counted(send_body=True)

        def do_HEAD(self) -> None:
            self._counted(send_body=False)

        def _counted(self, send_body: bool) -> None:
            server.count_active(+1)
            target = self.path
            parts = urlsplit(target)
            key = parts.netloc + (parts.path or "/") if parts.scheme and parts.netloc else parts.path or "/"
            hit = Hit(time.time(), self.command, target, key, dict(self.headers))
            server.record(hit)
            try:
                self._answer(key, target, send_body)
            finally:
                hit.done = time.time()
                server.count_active(-1)

        def _answer(self, key: str, target: str, send_body: bool) -> None:
            rule = server.take_rule(key)
            if rule is not None:
                if rule.delay:
                    time.sleep(rule.delay)
                if rule.location is not None:
                    self._send(rule.status or 302, b"", send_body, {"Location": rule.location})
                    return
                if rule.status is not None or rule.body is not None or _shapes_body(rule):
                    body = rule.body if rule.body is not None else self._file_body(key) or b"injected\n"
                    self._send(rule.status or 200, body, send_body, {"Content-Type": "text/html", **rule.headers}, rule)
                    return
            self._serve_file(key, target, send_body)

        def _file_body(self, key: str) -> bytes | None:
            path = server.root / unquote(key).lstrip("/")
            return path.read_bytes() if path.is_file() else None

        def _serve_file(self, key: str, target: str, send_body: bool) -> None:
            relative = unquote(key).lstrip("/")
            path = (server.root / relative).resolve()
            if server.root.resolve() not in (path, *path.parents):
                self._send(403, b"forbidden\n", send_body)
                return
            if path.is_dir():
                if not key.endswith("/"):
                    location = urlsplit(target)._replace(path=urlsplit(target).path + "/").geturl()
                    self._send(301, b"", send_body, {"Location": location})
                    return
                path = path / "index.html"
            if not path.is_file():
                self._send(404, b"<html><body>404 Not Found</body></html>\n", send_body, {"Content-Type": "text/html"})
                return
            content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            self._send(200, path.read_bytes(), send_body, {"Content-Type": content_type})

        def _send(
            self,
            status: int,
            body: bytes,
            send_body: bool,
            headers: dict[str, str] | None = None,
            rule: Rule | None = None,
        ) -> None:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            if rule is not None and rule.chunked:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not send_body:
                return
            if rule is None or not _shapes_body(rule):
                self.wfile.write(body)
            elif rule.reset_after is not None:
                self.wfile.write(body[: rule.reset_after])
                self.wfile.flush()
                # SO_LINGER 0: close with a TCP reset rather than a clean end.
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
                self.close_connection = True
            elif rule.drip is not None:
                for i in range(len(body)):
                    self.wfile.write(body[i : i + 1])
                    self.wfile.flush()
                    time.sleep(rule.drip)
            else:
                for start in range(0, len(body), 1000):
                    piece = body[start : start + 1000]
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.write(b"0\r\n\r\n")

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root")
    parser.add_argument("--port", type=int, default=0)
    options = parser.parse_args(argv)
    server = SiteServer(options.root, port=options.port)
    print(f"serving {options.root} on {server.url}", flush=True)
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
