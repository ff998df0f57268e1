"""Running the search app on a real HTTP server (uvicorn), on a socket bound before it starts.

With several workers, uvicorn's own supervisor runs one process each (each
opens the index), all accepting on the same socket: a search uses one core,
so this is how a server uses the machine's cores.  The workers are forked,
not spawned: they start with every module imported (about 0.2 s sooner), and
open the index themselves (an SQLite connection must not cross a fork), one
after the other: the first alone, the others once it listens (the first answer
waits for one worker's start on the whole machine, not for two sharing it).  On
Linux they share the connections evenly (``balancing``), and end with the
process that started them, however it ends (``kill -9`` included: the kernel
kills them, ``PR_SET_PDEATHSIG``), so a server killed leaves no worker
holding its port.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import signal
import socket
import sys

import uvicorn
import uvicorn._subprocess
import uvicorn.lifespan.on
import uvicorn.loops.auto
import uvicorn.protocols.websockets.auto
import uvicorn.supervisors.multiprocess
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess
from uvicorn.supervisors.multiprocess import SIGNALS as SUPERVISOR_SIGNALS

from ..index.engine import QueryEngine
from ..processes import end_with_parent, find_prctl
from . import served
from .answercache import DEFAULT_BYTES
from .app import (
    ENVIRONMENT_ANSWER_BYTES,
    ENVIRONMENT_CHECKED,
    ENVIRONMENT_HOSTS,
    ENVIRONMENT_INDEX,
    ENVIRONMENT_PAGEDIR,
    ENVIRONMENT_SHARED_ANSWERS,
    allowed_hosts,
    create_app,
)
from .balancing import BalancedConfig, BalancedServer, ConnectionShares
from .protocol import REQUEST_HEAD_SECONDS, BoundedHttpToolsProtocol
from .sharedanswers import SharedAnswers

# What each worker's uvicorn imports as it starts (its lifespan, event loop and websocket protocol, above,
# and uvloop), imported once before the workers are forked, not by each after.
with contextlib.suppress(ImportError):
    import uvloop  # noqa: F401

# uvicorn logs only warnings; its HTTP protocol (serve_forever) is httptools with the request head bounded.
UVICORN_OPTIONS = {"log_level": "warning", "access_log": False, "lifespan": "on"}
# Connections the kernel holds for the workers to take (capped by net.core.somaxconn).
BACKLOG = 2048


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on *host*:*port* (raises OSError: the caller says it in one line)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, said explicitly, makes asyncio set TCP_NODELAY on each connection: without it
    # a kept-alive answer waits ~40 ms for the client's delayed ACK (uvicorn writes head and body apart).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        # uvicorn's own backlog: a burst of connections waits for the workers, which take them one at a
        # time by turns (balancing), where 128 dropped some for a second (the kernel's SYN sent again).
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


def serve_forever(
    engine: QueryEngine,
    sock: socket.socket,
    workers: int = 1,
    head_seconds: float = REQUEST_HEAD_SECONDS,
    answer_bytes: int = DEFAULT_BYTES,
) -> bool:
    """Answer on *sock* until Ctrl-C or SIGTERM, the usual ways to stop a server (uvicorn logs only
    warnings), closing a connection whose request's head is not whole within *head_seconds*, each
    process keeping up to *answer_bytes* of answers to send again; False when a worker process could
    not start (its page directory or index changed)."""
    supervisor = None
    shared = None
    hosts = allowed_hosts(sock.getsockname()[0])
    # uvicorn makes each connection's protocol with this (a module's class and a number: it pickles, for spawn).
    options = {**UVICORN_OPTIONS, "http": functools.partial(BoundedHttpToolsProtocol, head_seconds=head_seconds)}
    try:
        if workers == 1:
            uvicorn.Server(uvicorn.Config(create_app(engine, hosts, answer_bytes), **options)).run(sockets=[sock])
            return True
        # Each worker process opens the index anew (see create_app_from_environment).
        engine.close()
        os.environ[ENVIRONMENT_PAGEDIR] = str(engine.directory)
        os.environ[ENVIRONMENT_INDEX] = str(engine.index.path)
        os.environ[ENVIRONMENT_HOSTS] = ",".join(hosts or [])
        os.environ[ENVIRONMENT_CHECKED] = " ".join(map(str, engine.index.key))
        os.environ[ENVIRONMENT_ANSWER_BYTES] = str(answer_bytes)
        # The answers the workers share (sharedanswers.py), removed when the server stops.
        shared = SharedAnswers.create(answer_bytes) if answer_bytes else None
        os.environ[ENVIRONMENT_SHARED_ANSWERS] = str(shared.directory) if shared is not None else ""
        app = "tse_scrapy.search.app:create_app_from_environment"
        if sys.platform == "linux":  # fork, as the indexer's workers; elsewhere uvicorn's spawn
            # uvicorn 0.54 starts its workers from this context (a module attribute, pinned version).
            uvicorn._subprocess.spawn = multiprocessing.get_context("fork")  # type: ignore[assignment]
            # ... and builds each worker's server from this class: one that shares the connections
            # evenly among the workers, by counts in memory the forked workers share (balancing.py).
            uvicorn.supervisors.multiprocess.Server = BalancedServer  # type: ignore[misc]
            config = BalancedConfig(app, ConnectionShares(workers), factory=True, workers=workers, **options)
            # A forked worker would keep the supervisor's handlers (which only queue a signal) until
            # its server sets its own: until then, Ctrl-C and SIGTERM stop it, as a spawned one.
            os.register_at_fork(after_in_child=_default_signals)
            # Killed with the supervisor, which cannot stop them when it is killed itself (they kept the port).
            os.register_at_fork(after_in_child=functools.partial(end_with_parent, os.getpid(), find_prctl()))
            served.said_once = served.SaidOnce()  # what the workers warn of said by one of them
        else:
            config = uvicorn.Config(app, factory=True, workers=workers, **options)
        supervisor = Supervisor(config, sockets=[sock])
        supervisor.run()
    except KeyboardInterrupt:
        pass  # uvicorn has shut down cleanly, then raised the signal again
    finally:
        if shared is not None:
            shared.remove()
    # uvicorn's supervisor stops every worker when one fails to start.
    return supervisor is None or all(worker.exitcode != STARTUP_FAILURE for worker in supervisor.processes)


class Supervisor(Multiprocess):
    """uvicorn's supervisor, stopping on a hang-up (SIGHUP) and Ctrl-\\ (SIGQUIT) as on Ctrl-C, as a server
    of one process does: uvicorn restarts its workers on the one and ignores the other, so a server whose
    terminal closed kept running, and its port.  Its workers stay as many as ``--workers`` (uvicorn
    adds or removes one on SIGTTIN or SIGTTOU: the connections' shares are counted for that many)."""

    def handle_hup(self) -> None:
        self.should_exit.set()

    def handle_quit(self) -> None:
        self.should_exit.set()

    def handle_ttin(self) -> None:
        pass

    def handle_ttou(self) -> None:
        pass


def _default_signals() -> None:
    for number in SUPERVISOR_SIGNALS:
        signal.signal(number, signal.default_int_handler if number == signal.SIGINT else signal.SIG_DFL)
