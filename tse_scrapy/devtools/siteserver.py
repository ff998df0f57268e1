"""A site server for tests and the demo: serves a directory tree on 127.0.0.1.

As an origin, ``GET /path`` answers ``DIR/path``; as an HTTP proxy, an
absolute-URI request ``GET http://host/path`` answers ``DIR/host/path``
(so a mirror of a real site can be crawled under its real URLs without
leaving this machine).  A directory answers its ``index.html``; a directory
asked for without its slash answers 301 to the slashed URL.  Per-path rules
inject statuses, redirects, delays, connection resets, slow drips and chunked
bodies, for a number of answers and then another rule's (a ``.redirects`` file in DIR, lines of
``PATH STATUS LOCATION``, adds redirect rules); every request is recorded with
the time it arrived, its headers and the status answered.

A file served (a 200 from DIR, not a rule's injected answer) carries
validators: ``ETag``, a strong entity-tag derived from the file's bytes (so a
change within the same second is still seen), and ``Last-Modified``, the
file's mtime as an HTTP-date.  Conditional GET and HEAD follow RFC 9110:
``If-None-Match`` (a list of entity-tags or ``*``, weak comparison) answers
304 when one matches; only without it, ``If-Modified-Since`` answers 304 when
the file's mtime, to the second, is not after the date given.  A 304 has no
body and carries the same ``ETag`` and ``Last-Modified``, and the headers a
rule of nothing but headers adds to the file's answers (as nginx's
``add_header`` adds them to a 200 and a 304).  ``validators=False``
(``--no-validators``) sends neither and ignores conditional headers: a server
without validators.

    python -m tse_scrapy.devtools.siteserver DIR [--port N] [--no-validators]
"""

from __future__ import annotations

import argparse
import email.utils
import hashlib
import mimetypes
import os
import re
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC
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
    headers: dict[str, str] = field(default_factory=dict)  # alone: added to the file's 200 and 304
    reset_after: int | None = None  # send this many body bytes, then reset the connection
    drip: float | None = None  # send the body a byte at a time, this many seconds apart
    chunked: bool = False  # send the body with Transfer-Encoding: chunked
    cut_chunks: int | None = None  # chunked: send this many chunks of the body, then close (no last chunk)
    then: Rule | None = None  # once *times* is spent, this rule answers instead (a 503 once, then a 302)


@dataclass
class Hit:
    """One request the server received."""

    time: float  # when it arrived
    method: str
    target: str  # the request target as sent (path, or absolute URI via proxy)
    key: str  # "host/path" for proxy requests, "/path" for origin requests
    headers: dict[str, str]  # the request's headers, as sent
    done: float | None = None  # when its answer was sent
    status: int | None = None  # the status answered (None until the status line is sent)

    def header(self, name: str) -> str | None:
        """The request header *name* (any case), or None."""
        return next((value for key, value in self.headers.items() if key.lower() == name.lower()), None)


class SiteServer:
    """A threaded HTTP server on loopback, answering from a directory tree; ``hits`` records every request.

    With ``validators=False`` files are served without ``ETag`` and ``Last-Modified`` and conditional
    requests are answered in full.
    """

    def __init__(self, root: str | os.PathLike, host: str = "127.0.0.1", port: int = 0, validators: bool = True):
        self.root = Path(root)
        self.validators = validators
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
            while rule.times is not None and rule.times <= 0:
                if rule.then is None:
                    return None
                rule = self.rules[key] = rule.then
            if rule.times is not None:
                rule.times -= 1
            return rule


def _shapes_body(rule: Rule) -> bool:
    return rule.reset_after is not None or rule.drip is not None or rule.chunked or rule.cut_chunks is not None


def _read_redirects(path: Path) -> dict[str, Rule]:
    rules = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            fields = line.split()
            if len(fields) == 3 and not line.startswith("#"):
                rules[fields[0]] = Rule(status=int(fields[1]), location=fields[2])
    return rules


def entity_tag(body: bytes) -> str:
    """The strong ETag the server sends for a file of these bytes: a quoted short hash."""
    return f'"{hashlib.blake2b(body, digest_size=8).hexdigest()}"'


def _none_match(field: str, etag: str) -> bool:
    """Whether an If-None-Match *field* (``*`` or entity-tags) matches *etag*, by weak comparison."""
    if field.strip() == "*":
        return True
    opaque = etag.removeprefix("W/")
    return any(tag == opaque for tag in re.findall(r'"[^"]*"', field))


def _not_modified_since(field: str, mtime: float) -> bool:
    """Whether a file of this mtime is not newer, to the second, than an If-Modified-Since *field*
    (False when the field is not a date)."""
    try:
        since = email.utils.parsedate_to_datetime(field.strip())
    except (TypeError, ValueError, IndexError):
        return False
    if since.tzinfo is None:  # asctime dates, and "-0000", are UTC
        since = since.replace(tzinfo=UTC)
    return int(mtime) <= since.timestamp()


def _handler_for(server: SiteServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # Without this, a kept-alive connection stalls ~40 ms per response.
        disable_nagle_algorithm = True
        protocol_version = "HTTP/1.1"

        _hit: Hit | None = None  # the request being answered

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def send_response(self, code: int, message: str | None = None) -> None:
            if self._hit is not None:
                self._hit.status = code
            super().send_response(code, message)

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
            self._hit = hit
            try:
                self._answer(key, target, send_body)
            finally:
                self._hit = None
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
            self._serve_file(key, target, send_body, rule.headers if rule is not None else {})

        def _file_body(self, key: str) -> bytes | None:
            path = server.root / unquote(key).lstrip("/")
            return path.read_bytes() if path.is_file() else None

        def _serve_file(self, key: str, target: str, send_body: bool, added: dict[str, str]) -> None:
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
            if not server.validators:
                self._send(200, path.read_bytes(), send_body, {"Content-Type": content_type, **added})
                return
            mtime = path.stat().st_mtime  # before reading: Last-Modified is never later than the bytes sent
            body = path.read_bytes()
            validators = {
                "ETag": entity_tag(body),
                "Last-Modified": email.utils.formatdate(min(int(mtime), int(time.time())), usegmt=True),
            }
            if self._not_modified(validators["ETag"], mtime):
                self.send_response(304)
                for name, value in {**validators, **added}.items():
                    self.send_header(name, value)
                self.end_headers()  # no body, no Content-Length: a 304 has none
                return
            self._send(200, body, send_body, {"Content-Type": content_type, **validators, **added})

        def _not_modified(self, etag: str, mtime: float) -> bool:
            """RFC 9110 13.2.2, steps 3 and 4, for GET and HEAD."""
            none_match = self.headers.get_all("If-None-Match")
            if none_match:
                return _none_match(", ".join(none_match), etag)
            since = self.headers.get_all("If-Modified-Since")
            return since is not None and len(since) == 1 and _not_modified_since(since[0], mtime)

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
            if rule is not None and (rule.chunked or rule.cut_chunks is not None):
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
                for number, start in enumerate(range(0, len(body), 1000)):
                    if number == rule.cut_chunks:  # a clean close mid-body: the answer is cut short
                        self.wfile.flush()
                        self.close_connection = True
                        return
                    piece = body[start : start + 1000]
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                if rule.cut_chunks is not None:
                    self.close_connection = True
                    return
                self.wfile.write(b"0\r\n\r\n")

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--no-validators", action="store_true", help="send no ETag or Last-Modified, answer no 304")
    options = parser.parse_args(argv)
    server = SiteServer(options.root, port=options.port, validators=not options.no_validators)
    print(f"serving {options.root} on {server.url}", flush=True)
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
