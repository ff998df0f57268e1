"""Worker processes that share a server's connections evenly.

uvicorn's workers all accept on the one listening socket, and whichever the
kernel wakes first takes what is waiting (libuv accepts every connection
queued).  Kept-alive connections then stay where they landed: 8 clients were
seen split 7 to 1, and all 8 on one worker while the other core sat idle
(about half the searches a second, and twice the median).  Here each worker
accepts connections itself, and watches the socket only while it holds no
more connections than the fewest any other worker holds (nginx's
``least_conn``, among processes).  The counts live in memory the forked
workers share; a worker whose count rises wakes, through a pipe, the workers
that stopped watching and may now hold the fewest, and a worker whose own
count falls looks again at once, so that a connection never waits on a
sleeping worker.  Nor on a busy or stopped one for long: a connection left
waiting WAIT_LIMIT seconds is taken by a worker that sees it, and the worker
it waited for is passed over until it runs again.

uvicorn 0.54 (pinned) builds each worker's server from
``uvicorn.supervisors.multiprocess.Server``; ``serve_forever`` makes that
``BalancedServer``, which accepts the connections and gives each to the
protocol uvicorn would have made for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import fcntl
import os
import select
import socket
import tempfile
import time
from collections.abc import Callable
from multiprocessing.sharedctypes import RawArray, RawValue
from pathlib import Path
from typing import Any

import uvicorn

# How long a connection may wait for the worker holding the fewest (busy with a long search, or
# stopped) before another that sees it takes it; a worker not watching looks this often.
WAIT_LIMIT = 0.02
# After the process ran out of file descriptors (EMFILE): how long before accepting again.
RESOURCES_PAUSE = 0.1
# Slots for workers uvicorn adds (SIGTTIN) or starts before stopping the old ones (SIGHUP).
SPARE_SLOTS = 8
# How long the other workers wait for the first to listen before they start anyway (``ConnectionShares.
# wait_turn``), and how often each looks whether that first one is still running.
START_ALONE_SECONDS = 5.0
START_LOOK_SECONDS = 0.05


def takes_connection(held: int, fewest_elsewhere: int | None, waited: float) -> bool:
    """Whether a worker holding *held* connections accepts a waiting one now: the other workers hold
    *fewest_elsewhere* at fewest (None: there is no other), and it has left this one *waited* seconds."""
    return fewest_elsewhere is None or held <= fewest_elsewhere or waited >= WAIT_LIMIT


class ProcessLock:
    """A lock between the processes forked after it is made that a process killed while holding it
    does not keep held: a POSIX record lock (``fcntl.lockf``) on a file of its own, which the kernel
    releases when its process dies.  (A multiprocessing ``Lock``, a semaphore, stayed held by a worker
    killed in ``claim`` or ``forget_the_dead``: the others then froze at their next look at the shares,
    and at their shutdown, so Ctrl-C stopped no server.)  Not a lock between threads: each process
    takes it from its event loop only."""

    def __init__(self) -> None:
        self._descriptor, path = tempfile.mkstemp(prefix="tse-serve-lock-")
        os.unlink(path)  # (unnamed: nothing left to remove; the forked processes share the descriptor)

    def __enter__(self) -> ProcessLock:
        fcntl.lockf(self._descriptor, fcntl.LOCK_EX)
        return self

    def __exit__(self, *_exc: object) -> None:
        fcntl.lockf(self._descriptor, fcntl.LOCK_UN)


class ConnectionShares:
    """Each worker's count of open connections, in memory shared by the processes forked after it is
    made, and a pipe a worker to wake it.  A worker claims a slot when it starts (a slot whose process
    is gone is free again)."""

    def __init__(self, workers: int):
        slots = 2 * workers + SPARE_SLOTS
        self.pids = RawArray(ctypes.c_int, slots)
        self.counts = RawArray(ctypes.c_int, slots)
        self.asleep = RawArray(ctypes.c_byte, slots)  # 1: not watching the socket, to be woken
        # 1: left a connection waiting WAIT_LIMIT (stopped, or busy with a long search): passed over
        # until it runs again (it clears its own mark).
        self.unresponsive = RawArray(ctypes.c_byte, slots)
        self.lock = ProcessLock()
        self.pipes = [os.pipe() for _ in range(slots)]
        # The worker starting first, and whether a worker listens yet (a byte down the pipe when one does).
        self.first_starting = RawValue(ctypes.c_int, 0)
        self.listening = RawValue(ctypes.c_byte, 0)
        self.listening_pipe = os.pipe()
        for pipe in (*self.pipes, self.listening_pipe):
            for end in pipe:
                os.set_blocking(end, False)

    def wait_turn(self) -> None:
        """Called by each worker before it starts (opens the index): the first goes at once, the others
        once a worker listens (or the first is gone, or START_ALONE_SECONDS passed).  All starting at once,
        each took a share of the cores, and the first answer waited for the first of them to open the
        index on half the machine; the others' start comes after the answer's."""
        with self.lock:
            first = self.first_starting.value
            if first == 0 or (not self.listening.value and not _alive(first)):
                self.first_starting.value = os.getpid()
                return
        deadline = time.monotonic() + START_ALONE_SECONDS
        while not self.listening.value and time.monotonic() < deadline and _alive(first):
            select.select([self.listening_pipe[0]], [], [], START_LOOK_SECONDS)

    def said_listening(self) -> None:
        """A worker listens: the workers waiting for their turn (``wait_turn``) start."""
        if not self.listening.value:
            self.listening.value = 1
            with contextlib.suppress(BlockingIOError):  # (full: woken already)
                os.write(self.listening_pipe[1], b"\0")

    def claim(self) -> int | None:
        """This process's slot, or None when every slot is another live worker's."""
        with self.lock:
            for slot, pid in enumerate(self.pids):
                if pid == 0 or not _alive(pid):
                    self._clear(slot, os.getpid())
                    return slot
        return None

    def release(self, slot: int) -> None:
        with self.lock:
            if self.pids[slot] == os.getpid():
                self._clear(slot, 0)

    def _clear(self, slot: int, pid: int) -> None:
        self.pids[slot], self.counts[slot], self.asleep[slot], self.unresponsive[slot] = pid, 0, 0, 0

    def fewest_elsewhere(self, slot: int | None) -> int | None:
        """The fewest connections a responsive worker other than *slot*'s holds (None: there is none)."""
        pids, counts, unresponsive = self.pids, self.counts, self.unresponsive
        return min(
            (counts[other] for other in range(len(pids)) if other != slot and pids[other] and not unresponsive[other]),
            default=None,
        )

    def pass_over(self, slot: int | None, fewest: int) -> None:
        """Marks unresponsive the workers but *slot*'s holding *fewest*: one of them left a connection
        waiting WAIT_LIMIT."""
        for other in range(len(self.pids)):
            if other != slot and self.pids[other] and self.counts[other] == fewest:
                self.unresponsive[other] = 1

    def forget_the_dead(self, slot: int | None) -> None:
        """Frees the slots of workers that are gone (killed, say): their counts would hold others back."""
        for other, pid in enumerate(self.pids):
            if other != slot and pid and not _alive(pid):
                with self.lock:
                    if self.pids[other] == pid:
                        self._clear(other, 0)

    def wake(self, slot: int | None, held: int) -> None:
        """Wakes the sleeping workers holding no more than *held*: now that *slot*'s worker holds
        *held*, one of them may hold the fewest."""
        pids, counts, asleep = self.pids, self.counts, self.asleep
        for other in range(len(pids)):
            if asleep[other] and other != slot and pids[other] and counts[other] <= held:
                asleep[other] = 0
                try:
                    os.write(self.pipes[other][1], b"\0")
                except BlockingIOError:  # the pipe is full: it has been woken already
                    pass


def _alive(pid: int) -> bool:
    """Whether process *pid* runs (a zombie, killed and not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


class BalancedConfig(uvicorn.Config):
    """uvicorn's configuration, with the shares its workers' servers balance their connections by."""

    def __init__(self, app: Any, shares: ConnectionShares, **options: Any):
        super().__init__(app, **options)
        self.shares = shares


class BalancedServer(uvicorn.Server):
    """uvicorn's server, accepting its connections itself, by ``takes_connection``."""

    def __init__(self, config: uvicorn.Config):
        super().__init__(config)
        self._acceptor: _Acceptor | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        shares = getattr(self.config, "shares", None)
        if not isinstance(shares, ConnectionShares) or not sockets or len(sockets) != 1:
            await super().startup(sockets=sockets)
            if isinstance(shares, ConnectionShares):
                shares.said_listening()
            return
        await super().startup(sockets=[])  # everything but the listening: done below
        acceptor = self._acceptor = _Acceptor(asyncio.get_running_loop(), sockets[0], shares, self._protocol)
        # uvicorn's protocols add and discard themselves here: each change is counted at once.
        self.server_state.connections = _CountedConnections(acceptor.added, acceptor.changed)
        acceptor.start(self.server_state.connections)
        shares.said_listening()

    def run(self, sockets: list[socket.socket] | None = None) -> None:
        shares = getattr(self.config, "shares", None)
        if isinstance(shares, ConnectionShares):
            shares.wait_turn()
        super().run(sockets=sockets)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self._acceptor is not None:
            await self._acceptor.stop()  # the connections it accepted are then uvicorn's to close
        await super().shutdown(sockets=sockets)

    def _protocol(self) -> asyncio.Protocol:
        """What uvicorn's own ``startup`` makes for each connection."""
        return self.config.http_protocol_class(  # type: ignore[call-arg]
            config=self.config, server_state=self.server_state, app_state=self.lifespan.state
        )


class _CountedConnections(set):  # type: ignore[type-arg]
    """uvicorn's set of a server's connections, saying each change (its protocols add and discard)."""

    def __init__(self, added: Callable[[], None], discarded: Callable[[], None]):
        super().__init__()
        self.added, self.discarded = added, discarded

    def add(self, connection: Any) -> None:
        super().add(connection)
        self.added()

    def discard(self, connection: Any) -> None:
        super().discard(connection)
        self.discarded()


class _Acceptor:
    """One worker's accepting: it watches the listening socket while ``takes_connection`` says so,
    else sleeps until woken (by its pipe, its own count falling, or WAIT_LIMIT), and connects each
    accepted socket to a new protocol."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        sock: socket.socket,
        shares: ConnectionShares,
        protocol: Callable[[], asyncio.Protocol],
    ):
        self.loop, self.sock, self.shares, self.protocol = loop, sock, shares, protocol
        self.slot = shares.claim()
        self.connections: set[Any] = set()
        self.pending = 0  # accepted, not yet uvicorn's (its protocol adds itself to the set)
        self.published = 0
        self.watching = False
        self.left_since: float | None = None  # when this worker first left a waiting connection to another
        self.timer: asyncio.TimerHandle | None = None
        self.tasks: set[asyncio.Task[None]] = set()
        self.stopped = False
        sock.setblocking(False)

    def start(self, connections: set[Any]) -> None:
        self.connections = connections
        if self.slot is not None:
            self.loop.add_reader(self.shares.pipes[self.slot][0], self._woken)
        self._watch()

    async def stop(self) -> None:
        self._unwatch()
        self.stopped = True
        if self.timer is not None:
            self.timer.cancel()
        if self.slot is not None:
            self.loop.remove_reader(self.shares.pipes[self.slot][0])
            self.shares.release(self.slot)
        if self.tasks:  # accepted just now: let them reach uvicorn's set, which it closes next
            await asyncio.wait(set(self.tasks), timeout=1)

    def held(self) -> int:
        return len(self.connections) + self.pending

    def added(self) -> None:
        """A protocol made for an accepted connection joined uvicorn's set: no longer pending."""
        self.pending = max(0, self.pending - 1)
        self.changed()

    def changed(self) -> None:
        """Publishes this worker's count; wakes the sleeping workers it may now hold more than, or
        looks again when it may now hold the fewest."""
        if self.stopped:
            return
        held = self.held()
        if self.slot is not None:
            self.shares.counts[self.slot] = held
        self._runs()
        if held > self.published:
            self.shares.wake(self.slot, held)
        elif held < self.published and not self.watching:
            self._reconsider()
        self.published = held

    def _runs(self) -> None:
        """Clears this worker's mark of unresponsive (``ConnectionShares.pass_over``): it runs."""
        if self.slot is not None:
            self.shares.unresponsive[self.slot] = 0

    def _watch(self) -> None:
        if not self.watching and not self.stopped:
            self.watching = True
            if self.slot is not None:
                self.shares.asleep[self.slot] = 0
            self.loop.add_reader(self.sock.fileno(), self._ready)

    def _unwatch(self) -> None:
        if self.watching:
            self.watching = False
            self.loop.remove_reader(self.sock.fileno())

    def _sleep(self) -> None:
        """Stops watching until woken, or until a connection it left has waited WAIT_LIMIT."""
        self._unwatch()
        if self.slot is not None:
            self.shares.asleep[self.slot] = 1  # flagged first, then checked: a wake-up is not missed
        if self._takes():
            self._watch()
            return
        if self.timer is None:
            # uvloop's clock counts milliseconds: a millisecond more, so that the limit is reached.
            began = self.loop.time() if self.left_since is None else self.left_since
            self.timer = self.loop.call_at(began + WAIT_LIMIT + 0.001, self._timer_fired)

    def _takes(self) -> bool:
        waited = 0.0 if self.left_since is None else self.loop.time() - self.left_since
        return takes_connection(self.held(), self.shares.fewest_elsewhere(self.slot), waited)

    def _ready(self) -> None:
        """A connection waits."""
        self._runs()
        if not self._takes():
            self.shares.forget_the_dead(self.slot)  # a killed worker's count held this one back?
            if not self._takes():
                if self.left_since is None:
                    self.left_since = self.loop.time()
                self._sleep()
                return
        if self.left_since is not None:
            # Taken after WAIT_LIMIT: the worker it was left to is passed over until it runs again
            # (else each connection would wait for it again).
            fewest = self.shares.fewest_elsewhere(self.slot)
            if fewest is not None and self.held() > fewest:
                self.shares.pass_over(self.slot, fewest)
            self.left_since = None
        try:
            connection, _ = self.sock.accept()
        except (BlockingIOError, InterruptedError):  # another worker took it
            return
        except OSError:  # out of file descriptors, say: the connection waits in the queue meanwhile
            self._unwatch()
            self.loop.call_later(RESOURCES_PAUSE, self._watch)
            return
        connection.setblocking(False)
        if connection.family in (socket.AF_INET, socket.AF_INET6):
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.pending += 1
        self.changed()
        task = self.loop.create_task(self._connect(connection))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def _woken(self) -> None:
        try:
            os.read(self.shares.pipes[self.slot][0], 4096)  # type: ignore[index]
        except BlockingIOError:
            pass
        self._runs()
        if not self.watching and not self.stopped:
            self._reconsider()

    def _timer_fired(self) -> None:
        """Asleep since WAIT_LIMIT: a connection still waiting is noted (and taken when it has waited
        so long), and a worker gone is forgotten."""
        self.timer = None
        self._runs()
        if self.watching or self.stopped:
            return
        if not select.select([self.sock], [], [], 0)[0]:
            self.left_since = None
        elif self.left_since is None:
            self.left_since = self.loop.time()
        self.shares.forget_the_dead(self.slot)
        self._reconsider()

    def _reconsider(self) -> None:
        if self._takes():
            self._watch()
        else:
            self._sleep()

    async def _connect(self, connection: socket.socket) -> None:
        try:
            await self.loop.connect_accepted_socket(self.protocol, connection)
        except OSError:  # the client has gone already: no protocol joined the set
            connection.close()
            self.pending = max(0, self.pending - 1)
            self.changed()
