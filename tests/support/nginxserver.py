"""A real nginx for tests: Debian's nginx (``make nginx``) with a configuration
of its own, on 127.0.0.1 and a free port, stopped by its PID.

Nothing of ``/etc/nginx`` is used: the configuration, the PID file, the logs and the temporary
directories are all in *workdir*, and nginx is started in the foreground
(``nginx -p WORKDIR/ -c WORKDIR/nginx.conf -e WORKDIR/error.log -g 'daemon off;'``).  As root, the
workers run as root too (``user root root;``), so that they can read a pytest ``tmp_path``.

The layout, one directory per host, like the site server's proxy mode::

    ROOT/HOST/PATH     answers  GET http://HOST/PATH   (an absolute-form request: nginx as an HTTP proxy)
                       and      GET /PATH  with  Host: HOST
    ROOT/127.0.0.1/PATH answers GET http://127.0.0.1:PORT/PATH  (nginx as an origin: see ``site_dir``)

HOST is the host name of the request (the URI's, else the Host header's) without its port,
lowercased (nginx's ``$host``), so ``http_proxy=http://127.0.0.1:PORT`` serves a mirror of real
sites under their real URLs, and a mirror laid out for the site server's proxy mode
(``DIR/host/path``, no port in the host) serves as it is.  With ``origin=DIR``, requests for the
hosts ``127.0.0.1`` and ``localhost`` answer from DIR instead of ``ROOT/127.0.0.1``.

Files are served as nginx serves them by default: ``ETag`` (``"MTIME-LENGTH"`` in hex: a change
within the same second that keeps the length keeps the ETag), ``Last-Modified``, 304 to a matching
``If-None-Match`` and to an ``If-Modified-Since`` equal to the Last-Modified (``if_modified_since
exact``; pass ``if_modified_since="before"`` for "not newer than").  A directory answers its
``index.html``; one asked for without its slash answers 301 with a relative ``Location: /dir/``.
Every request is logged to ``WORKDIR/access.log``; ``accesses()`` reads it back.
"""

from __future__ import annotations

import grp
import http.client
import os
import pwd
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support.net import free_port

MIME_TYPES = {
    "text/html": "html htm",
    "text/plain": "txt",
    "text/css": "css",
    "text/xml": "xml",
    "application/javascript": "js",
    "application/json": "json",
    "application/pdf": "pdf",
    "image/png": "png",
    "image/jpeg": "jpg jpeg",
    "image/gif": "gif",
    "image/svg+xml": "svg",
}
PROBE_HOST = "nginx.start.invalid"  # the Host of the start-up probes, left out of accesses()
LOG_FIELDS = "$msec\t$status\t$request\t$host\t$http_if_none_match\t$http_if_modified_since\t$body_bytes_sent"
TEMP_KINDS = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
CONFIG = """\
# Written by tests/support/nginxserver.py: a test nginx on 127.0.0.1:{port}.
{user}
worker_processes 1;
pid {pid};
error_log {error_log} notice;
events {{
    worker_connections 256;
}}
http {{
    types {{
{types}
    }}
    default_type application/octet-stream;
{temp}
    log_format tse '{log_fields}';
    access_log {access_log} tse;
    sendfile on;
    keepalive_timeout 30s;
    server_tokens off;
    absolute_redirect off;
    log_not_found off;
    etag on;
    if_modified_since {if_modified_since};
    server {{
        listen 127.0.0.1:{port} default_server;
        server_name _;
        root {root};
        index index.html;
{locations}
    }}
{origin}}}
"""
ORIGIN_SERVER = """\
    server {{
        listen 127.0.0.1:{port};
        server_name 127.0.0.1 localhost;
        root {origin};
        index index.html;
{locations}
    }}
"""


def nginx_binary() -> str | None:
    """The nginx executable, or None when nginx is not installed."""
    found = shutil.which("nginx")
    if found:
        return found
    return "/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None


@dataclass
class Access:
    """One line of the access log: a request nginx answered."""

    time: float
    status: int
    method: str
    target: str  # as sent: "/path" or "http://host/path"
    host: str  # nginx's $host: the host the file was looked up for
    if_none_match: str | None
    if_modified_since: str | None
    body_bytes: int


class NginxServer:
    """nginx serving ROOT/HOST/... (see the module's docstring) on 127.0.0.1:PORT."""

    def __init__(
        self,
        root: Path,
        workdir: Path,
        origin: Path | None = None,
        if_modified_since: str = "exact",
        locations: str = "",
    ):
        self.root = Path(root).resolve()
        self.locations = locations  # nginx directives inside each server block (location {...} ...)
        self.workdir = Path(workdir).resolve()
        self.origin = Path(origin).resolve() if origin is not None else None
        self.if_modified_since = if_modified_since
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """The origin URL, also the proxy URL for ``http_proxy``."""
        return f"http://127.0.0.1:{self.port}"

    def site_dir(self, host: str = "127.0.0.1") -> Path:
        """The directory requests for *host* answer from."""
        if self.origin is not None and host in ("127.0.0.1", "localhost"):
            return self.origin
        return self.root / host

    @property
    def conf_path(self) -> Path:
        return self.workdir / "nginx.conf"

    @property
    def access_log_path(self) -> Path:
        return self.workdir / "access.log"

    @property
    def error_log_path(self) -> Path:
        return self.workdir / "error.log"

    def config(self) -> str:
        """The nginx.conf written into workdir."""
        user = ""
        if os.geteuid() == 0:  # the workers would run as nobody, who cannot read a pytest tmp_path
            user = f"user {pwd.getpwuid(0).pw_name} {grp.getgrgid(0).gr_name};"
        types = "\n".join(f"        {mime} {extensions};" for mime, extensions in MIME_TYPES.items())
        temp = "\n".join(f"    {kind}_temp_path {_quoted(self.workdir / 'tmp' / kind)};" for kind in TEMP_KINDS)
        origin = ""
        if self.origin is not None:
            origin = ORIGIN_SERVER.format(port=self.port, origin=_quoted(self.origin), locations=self.locations)
        return CONFIG.format(
            port=self.port,
            user=user,
            pid=_quoted(self.workdir / "nginx.pid"),
            error_log=_quoted(self.error_log_path),
            types=types,
            temp=temp,
            log_fields=LOG_FIELDS,
            access_log=_quoted(self.access_log_path),
            if_modified_since=self.if_modified_since,
            root=_quoted(self.root, "/$host"),
            origin=origin,
            locations=self.locations,
        )

    def start(self, timeout: float = 10) -> NginxServer:
        """Start nginx and wait until it answers (on another free port if this one was taken meanwhile)."""
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError("this nginx is running already")
        binary = nginx_binary()
        if binary is None:
            raise RuntimeError("nginx is not installed (make nginx installs it, as root)")
        for kind in TEMP_KINDS:
            (self.workdir / "tmp" / kind).mkdir(parents=True, exist_ok=True)
        self.root.mkdir(parents=True, exist_ok=True)
        for _attempt in range(3):
            if self._start(binary, timeout):
                return self
            if "Address already in use" not in self._logs():
                break
            self.port = free_port()
        raise RuntimeError(f"nginx did not start:\n{self._logs()}")

    def _start(self, binary: str, timeout: float) -> bool:
        for log in (self.error_log_path, self.access_log_path):
            log.unlink(missing_ok=True)
        self.conf_path.write_text(self.config())
        command = [binary, "-p", f"{self.workdir}/", "-c", str(self.conf_path), "-e", str(self.error_log_path)]
        with open(self.workdir / "nginx.out", "wb") as output:
            self.process = subprocess.Popen(
                [*command, "-g", "daemon off;"], stdout=output, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            if self._answers():
                return True
            time.sleep(0.05)
        self.stop()
        return False

    def _answers(self) -> bool:
        """Whether this nginx answered a probe: it is in our access log (another server may hold the port)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1)
        try:
            connection.request("HEAD", "/", headers={"Host": PROBE_HOST})
            connection.getresponse().read()
        except OSError:
            return False
        finally:
            connection.close()
        deadline = time.monotonic() + 1  # nginx logs a request just after answering it
        while time.monotonic() < deadline:
            if self.access_log_path.exists() and f"\t{PROBE_HOST}\t" in self.access_log_path.read_text():
                return True
            time.sleep(0.01)
        return False

    def _logs(self) -> str:
        parts = [path.read_text(errors="replace") for path in (self.workdir / "nginx.out", self.error_log_path)]
        return "\n".join(part for part in parts if part)

    def error_log(self) -> str:
        return self.error_log_path.read_text(errors="replace") if self.error_log_path.exists() else ""

    def accesses(self) -> list[Access]:
        """The requests answered so far, in the order logged (start-up probes left out)."""
        if not self.access_log_path.exists():
            return []
        result = []
        for line in self.access_log_path.read_text(errors="replace").splitlines():
            fields = [_unescape(field) for field in line.split("\t")]
            if len(fields) != 7 or fields[3] == PROBE_HOST:
                continue
            stamp, status, request, host, none_match, modified_since, sent = fields
            method, _, rest = request.partition(" ")
            target = rest.rpartition(" ")[0] or rest
            result.append(
                Access(float(stamp), int(status), method, target, host, none_match, modified_since, int(sent))
            )
        return result

    def stop(self) -> None:
        """A graceful stop (SIGQUIT), then a fast one (SIGTERM), then SIGKILL to its process group."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        for sig, wait in ((signal.SIGQUIT, 10), (signal.SIGTERM, 5)):
            os.kill(process.pid, sig)
            try:
                process.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                pass
        os.killpg(process.pid, signal.SIGKILL)  # its own session: the master and its workers
        process.wait()

    def __enter__(self) -> NginxServer:
        return self if self.process is not None and self.process.poll() is None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _quoted(path: Path, suffix: str = "") -> str:
    """A path (and *suffix*) quoted for nginx.conf; a test's temporary directory has no quote, backslash or $."""
    if any(char in str(path) for char in '"\\$'):
        raise ValueError(f"nginx.conf cannot hold this path: {path}")
    return f'"{path}{suffix}"'


def _unescape(field: str) -> str | None:
    """A logged value: nginx writes "-" for an empty one and \\xHH for quotes and control bytes."""
    if field == "-":
        return None
    return re.sub(r"\\x([0-9A-Fa-f]{2})", lambda match: chr(int(match.group(1), 16)), field)


def start_nginx(root: Path, workdir: Path, origin: Path | None = None, if_modified_since: str = "exact") -> NginxServer:
    """A started NginxServer serving ROOT/HOST/... (and *origin* for 127.0.0.1, if given); call ``stop()``
    at the end, or use it as a context manager."""
    return NginxServer(root, workdir, origin, if_modified_since).start()
