"""Worker processes that share a server's connections evenly.

uvicorn's workers all accept on the one listening socket, and whichever the
kernel wakes first takes what is waiting (libuv accepts every connection
queued).  Kept-alive connections then stay where they landed: 8 clients were
seen split 7 to 1, and all 8 on one worker while the other core sat idle
(about half the searches a second, and twice the median).  Here each worker
accepts a connection itself, and only while it holds no more connections
than the fewest any other worker holds (nginx's ``least_conn``, among
processes); the counts live in memory the forked workers share.  A worker
never waits on another for long: a connection left waiting WAIT_LIMIT seconds
is taken by the first worker to look (one may be busy with a long search).

uvicorn 0.54 (pinned) builds each worker's server from
``uvicorn.supervisors.multiprocess.Server``; ``serve_forever`` makes that
``BalancedServer``, which accepts the connections and gives each to the
protocol uvicorn would have made for it.
"""

from __future__ import annotations

import asyncio
import ctypes
import multiprocessing
import os
import select
import socket
from collections.abc import Callable
from multiprocessing.sharedctypes import RawArray
from typing import Any

import uvicorn

# How long a worker holding more connections than another leaves a new one to it before looking
# again, and how long at most a connection waits for the worker holding the fewest.
RECHECK_SECONDS = 0.002
WAIT_LIMIT = 0.02
# After the process ran out of file descriptors (EMFILE): how long before accepting again.
RESOURCES_PAUSE = 0.1


def takes_connection(held: int, fewest_elsewhere: int | None, waited: float) -> bool:
    """Whether a worker holding *held* connections accepts a waiting one now: the other workers hold
    *fewest_elsewhere* at fewest (None: there is no other), and it has left this one *waited* seconds."""
    return fewest_elsewhere is None or held <= fewest_elsewhere or waited >= WAIT_LIMIT


class ConnectionShares:
    """Each worker's count of open connections, in memory shared by the processes forked after it is
    made.  A worker claims a slot when it starts (a slot whose process is gone is free again)."""

    def __init__(self, workers: int):
        # Twice the workers: uvicorn starts new workers before stopping the old on SIGHUP.
        self.pids = RawArray(ctypes.c_int, 2 * workers)
        self.counts = RawArray(ctypes.c_int, 2 * workers)
        self.lock = multiprocessing.get_context("fork").Lock()

    def claim(self) -> int | None:
        """This process's slot, or None when every slot is another live worker's."""
        with self.lock:
            for slot, pid in enumerate(self.pids):
                if pid == 0 or not _alive(pid):
                    self.pids[slot], self.counts[slot] = os.getpid(), 0
                    return slot
        return None

    def release(self, slot: int) -> None:
        with self.lock:
            if self.pids[slot] == os.getpid():
                self.pids[slot], self.counts[slot] = 0, 0

    def fewest_elsewhere(self, slot: int) -> int | None:
        """The fewest connections a live worker other than *slot*'s holds (None: there is none)."""
        counts = [self.counts[other] for other, pid in enumerate(self.pids) if other != slot and pid and _alive(pid)]
        return min(counts, default=None)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process has taken the number: not a worker
        return False
    return True


class BalancedConfig(uvicorn.Config):
    """uvicorn's configuration, with the shares its workers' servers balance their connections by."""

    def __init__(self, app: Any, shares: ConnectionShares, **options: Any):
        super().__init__(app, **options)
        self.shares = shares


class BalancedServer(uvicorn.Server):
    """uvicorn's server, accepting its connections itself, by ``takes_connection``."""

    def __init__(self, config: uvicorn.Config):
        super().__init__(config)
        self._acceptors: list[_Acceptor] = []
        self._slot: int | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        shares = getattr(self.config, "shares", None)
        if not isinstance(shares, ConnectionShares) or not sockets:
            await super().startup(sockets=sockets)
            return
        await super().startup(sockets=[])  # everything but the listening: done below
        self._slot = shares.claim()
        connections = _CountedConnections(self._publish)
        self.server_state.connections = connections
        loop = asyncio.get_running_loop()
        for sock in sockets:
            acceptor = _Acceptor(loop, sock, self._protocol, self._held, self._fewest_elsewhere, self._publish)
            acceptor.watch()
            self._acceptors.append(acceptor)
        self._publish()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for acceptor in self._acceptors:
            acceptor.stop()
        shares = getattr(self.config, "shares", None)
        if isinstance(shares, ConnectionShares) and self._slot is not None:
            shares.release(self._slot)
            self._slot = None
        await super().shutdown(sockets=sockets)

    def _protocol(self) -> asyncio.Protocol:
        """What uvicorn's own ``startup`` makes for each connection."""
        return self.config.http_protocol_class(  # type: ignore[call-arg]
            config=self.config, server_state=self.server_state, app_state=self.lifespan.state
        )

    def _held(self) -> int:
        return len(self.server_state.connections) + sum(acceptor.pending for acceptor in self._acceptors)

    def _fewest_elsewhere(self) -> int | None:
        shares = self.config.shares  # type: ignore[attr-defined]
        return None if self._slot is None else shares.fewest_elsewhere(self._slot)

    def _publish(self) -> None:
        if self._slot is not None:
            self.config.shares.counts[self._slot] = self._held()  # type: ignore[attr-defined]


class _CountedConnections(set):  # type: ignore[type-arg]
    """uvicorn's set of a server's connections, saying each change (its protocols add and discard)."""

    def __init__(self, changed: Callable[[], None]):
        super().__init__()
        self.changed = changed

    def add(self, connection: Any) -> None:
        super().add(connection)
        self.changed()

    def discard(self, connection: Any) -> None:
        super().discard(connection)
        self.changed()


class _Acceptor:
    """Accepts on a listening socket while ``takes_connection`` says so, and connects each
    accepted socket to a new protocol."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        sock: socket.socket,
        protocol: Callable[[], asyncio.Protocol],
        held: Callable[[], int],
        fewest_elsewhere: Callable[[], int | None],
        changed: Callable[[], None],
    ):
        self.loop, self.sock, self.protocol = loop, sock, protocol
        self.held, self.fewest_elsewhere, self.changed = held, fewest_elsewhere, changed
        self.pending = 0  # accepted, not yet connected to a protocol
        self.waiting_since: float | None = None  # when this worker first left the waiting connection
        self.timer: asyncio.TimerHandle | None = None
        self.tasks: set[asyncio.Task[None]] = set()
        self.stopped = False
        sock.setblocking(False)

    def watch(self) -> None:
        self.timer = None
        if not self.stopped:
            self.loop.add_reader(self.sock.fileno(), self._ready)

    def stop(self) -> None:
        self.stopped = True
        if self.timer is not None:
            self.timer.cancel()
        self.loop.remove_reader(self.sock.fileno())

    def _later(self, seconds: float, then: Callable[[], None]) -> None:
        self.loop.remove_reader(self.sock.fileno())
        self.timer = self.loop.call_later(seconds, then)

    def _ready(self) -> None:
        now = self.loop.time()
        waited = 0.0 if self.waiting_since is None else now - self.waiting_since
        if not takes_connection(self.held(), self.fewest_elsewhere(), waited):
            if self.waiting_since is None:
                self.waiting_since = now
            self._later(RECHECK_SECONDS, self._recheck)
            return
        try:
            connection, _ = self.sock.accept()
        except (BlockingIOError, InterruptedError):  # another worker took it
            self.waiting_since = None
            return
        except OSError:  # out of file descriptors, say: the connection waits in the queue meanwhile
            self._later(RESOURCES_PAUSE, self.watch)
            return
        self.waiting_since = None
        connection.setblocking(False)
        if connection.family in (socket.AF_INET, socket.AF_INET6):
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.pending += 1
        self.changed()
        task = self.loop.create_task(self._connect(connection))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def _recheck(self) -> None:
        readable, _, _ = select.select([self.sock], [], [], 0)
        if not readable:  # another worker took it
            self.waiting_since = None
        self.watch()

    async def _connect(self, connection: socket.socket) -> None:
        try:
            await self.loop.connect_accepted_socket(self.protocol, connection)
        except OSError:  # the client has gone already
            connection.close()
        finally:
            self.pending -= 1
            self.changed()
