"""``tse`` commands run as processes forked from one that has imported Scrapy already: the suite's
crawls without their Python start (0.4-1 s of CPU each, most of a small crawl's; the suite is bound by
its CPU on this 2-core machine).

Each command is still a process of its own, running ``tse``'s real code from ``tse_scrapy.cli.main``
on its own pipes, in its own folder and environment, with its own exit status (a signal's ``-N``), as
``subprocess.run`` gives it (``run_tse`` in tests/conftest.py), or as a ``Popen`` (``popen``).  What
a fork cannot give as an exec would, those run by exec instead: an environment that Python or a module
reads as it starts (``PYTHON*``, the locale, ``TSE_PURE_PYTHON``), a ``preexec_fn`` or another of
``Popen``'s options; and the tests that stop a command during its start-up call ``subprocess`` itself.

The forking process (the zygote) is one per test process, started on first use: it imports what a
crawl imports before its reactor (no reactor installed, no thread started), then forks a child for
each request on its Unix socket and sends the child's exit status back when the child ends.  Should
those imports give a warning, which a command started anew would say and a forked one not, it forks
nothing: every command is started anew."""

from __future__ import annotations

import json
import os
import select
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

# What a forked command would take from the zygote, not from its own environment, as Python or a
# module imported in the zygote reads it on start: a command given other values is run by exec.
READ_ON_START = ("PYTHON", "LANG", "LC_", "TSE_PURE_PYTHON")
_STATUS = struct.Struct("!ii")  # (pid, wait status) on the request's socket


def _read_on_start(env: dict) -> dict:
    return {name: value for name, value in env.items() if name.startswith(READ_ON_START)}


def forkable(env: dict, zygote_env: dict) -> bool:
    return _read_on_start(env) == _read_on_start(zygote_env)


# The zygote's side.


def _imported() -> list[warnings.WarningMessage]:
    """What a crawl imports before its reactor, and the indexer and querier, imported; the warnings
    that import gave (a command started anew would say them, a forked one would not)."""
    with warnings.catch_warnings(record=True) as said:
        from scrapy.crawler import AsyncCrawlerProcess  # noqa: F401
        from scrapy.utils.project import get_project_settings  # noqa: F401

        import tse_scrapy.cli
        import tse_scrapy.crawlstart
        import tse_scrapy.index.engine
        import tse_scrapy.index.indexer
        import tse_scrapy.index.querier
        import tse_scrapy.index.update
        import tse_scrapy.spiders.tse  # noqa: F401
    return said


def _serve(listener: socket.socket) -> None:
    assert "twisted.internet.reactor" not in sys.modules, "a reactor was installed on import"
    assert threading.active_count() == 1, "a thread was started on import"
    waiting: dict[int, socket.socket] = {}
    woken_r, woken_w = os.pipe()
    os.set_blocking(woken_w, False)
    signal.set_wakeup_fd(woken_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(woken_r, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj is listener:
                connection, _ = listener.accept()
                pid = _fork(connection, [selector, listener, *waiting.values()], (woken_r, woken_w))
                waiting[pid] = connection
            else:
                os.read(woken_r, 4096)
        while waiting:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            connection = waiting.pop(pid, None)
            if connection is not None:
                try:
                    connection.sendall(_STATUS.pack(pid, status))
                except OSError:
                    pass
                connection.close()


def _fork(connection: socket.socket, closed: list, pipe: tuple[int, int]) -> int:
    """A child forked for the request on *connection*, which closes the zygote's own *closed* objects
    and *pipe* (as objects: none left to close a number the command reuses), then runs it."""
    message, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
    request = json.loads(message)
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        connection.sendall(_STATUS.pack(pid, 0))
        return pid
    # The child: the command's process.
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for thing in (*closed, connection):
            thing.close()
        for fd in pipe:
            os.close(fd)
        for number, fd in enumerate(fds):
            os.dup2(fd, number)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = request["argv"]
        sys.path[0] = str(Path(request["argv"][0]).parent)  # as the ``tse`` script's own folder
        from tse_scrapy.cli import main

        code = main()
    except SystemExit as leaving:
        code = leaving.code
    # Python's own end: atexit, streams flushed, as when ``tse`` ends; an exception not caught (a
    # traceback, exit 1; Ctrl-C's KeyboardInterrupt, ended by SIGINT) goes up to Python as it would there.
    raise SystemExit(code)


def _zygote_main() -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sys.argv[1])
    listener.listen(64)
    # Signal actions as a process started anew has them (the test process may ignore SIGTERM).
    for number in signal.valid_signals():
        if number not in (signal.SIGKILL, signal.SIGSTOP, signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT):
            try:
                if signal.getsignal(number) == signal.SIG_IGN:
                    signal.signal(number, signal.SIG_DFL)
            except (OSError, ValueError):
                pass
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    if _imported():  # (then every command is started anew: run_tse and popen)
        sys.stdout.write("warned\n")
        sys.stdout.flush()
        return
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    _serve(listener)


# The test's side.


class Zygote:
    def __init__(self, root: Path, env: dict, folder: Path) -> None:
        self.env = dict(env)
        self.address = str(folder / f"zygote-{os.getpid()}.sock")
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from tests.support.zygote import _zygote_main; _zygote_main()", self.address],
            cwd=root,
            env={**env, "PYTHONPATH": str(root)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
        )
        # Not ready: its imports gave a warning, which a forked command would not say; none is forked.
        self.ready = self.process.stdout.readline() == b"ready\n"

    def alive(self) -> bool:
        return not self.ready or self.process.poll() is None

    def start(self, argv: list[str], env: dict, cwd: Path, stdout, stderr, input_pipe: bool) -> ForkedProcess:
        """*argv* forked as a process of its own: its stdin a pipe (*input_pipe*) or empty, its stdout and
        stderr as ``Popen`` takes them (``PIPE``, ``DEVNULL``, ``STDOUT`` for stderr, a file, None)."""
        own, theirs = [], []  # (fds this process keeps, fds the command gets)
        stdin_r, stdin_w = os.pipe()
        theirs.append(stdin_r)
        own.append(stdin_w)
        kept: list[int | None] = []
        for stream, standard in ((stdout, 1), (stderr, 2)):
            if stream == subprocess.PIPE:
                read_end, write_end = os.pipe()
                theirs.append(write_end)
                kept.append(read_end)
            else:
                if stream == subprocess.DEVNULL:
                    theirs.append(os.open(os.devnull, os.O_WRONLY))
                elif stream == subprocess.STDOUT:  # stderr to wherever stdout goes
                    theirs.append(os.dup(theirs[1]))
                elif stream is None:  # this process's own
                    theirs.append(os.dup(standard))
                else:  # a file, or a descriptor
                    theirs.append(os.dup(stream if isinstance(stream, int) else stream.fileno()))
                kept.append(None)
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.connect(self.address)
            request = json.dumps({"argv": argv, "env": env, "cwd": str(cwd)}).encode()
            socket.send_fds(connection, [request], theirs)
            pid, _ = _STATUS.unpack(_receive(connection, _STATUS.size))
        except BaseException:
            connection.close()
            for fd in (*own, *(fd for fd in kept if fd is not None)):
                os.close(fd)
            raise
        finally:
            for fd in theirs:
                os.close(fd)
        if not input_pipe:
            os.close(stdin_w)
            stdin_w = None
        return ForkedProcess(argv, pid, connection, stdin_w, *kept)

    def run(
        self, argv: list[str], env: dict, cwd: Path, input: bytes | None, timeout: float | None
    ) -> subprocess.CompletedProcess:
        process = self.start(argv, env, cwd, subprocess.PIPE, subprocess.PIPE, bool(input))
        try:
            output, errors = process.communicate(input, timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise
        return subprocess.CompletedProcess(argv, process.returncode, output, errors)

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


def _receive(connection: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        piece = connection.recv(size - len(data))
        if not piece:
            raise RuntimeError("the zygote ended")
        data += piece
    return data


class ForkedProcess:
    """A forked command as ``subprocess.Popen`` gives one (``pid``, ``stdout``, ``stderr``, ``poll``,
    ``wait``, ``communicate``, ``send_signal``, ``terminate``, ``kill``, ``returncode``): its exit status
    comes from the zygote, which reaps it, on the request's socket."""

    def __init__(
        self,
        args: list[str],
        pid: int,
        connection: socket.socket,
        stdin: int | None,
        stdout: int | None,
        stderr: int | None,
    ) -> None:
        self.args, self.pid, self.returncode = args, pid, None
        self._connection, self._status = connection, b""
        self.stdin = None
        self._stdin = stdin
        self.stdout = None if stdout is None else open(stdout, "rb", buffering=0)  # noqa: SIM115
        self.stderr = None if stderr is None else open(stderr, "rb", buffering=0)  # noqa: SIM115
        self._fds = (stdout, stderr)
        self._read: dict[int | None, list[bytes]] = {fd: [] for fd in self._fds}

    def _take_status(self, timeout: float | None) -> bool:
        """Whether the exit status came within *timeout* (None: wait for it)."""
        while self.returncode is None:
            ready, _, _ = select.select([self._connection], [], [], timeout)
            if not ready:
                return False
            piece = self._connection.recv(_STATUS.size - len(self._status))
            if not piece:
                raise RuntimeError("the zygote ended")
            self._status += piece
            if len(self._status) == _STATUS.size:
                _, status = _STATUS.unpack(self._status)
                self.returncode = os.waitstatus_to_exitcode(status)
                self._connection.close()
        return True

    def poll(self) -> int | None:
        self._take_status(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._take_status(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def send_signal(self, number: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, number)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def communicate(
        self, input: bytes | None = None, timeout: float | None = None
    ) -> tuple[bytes | None, bytes | None]:
        """The command's stdout and stderr read to their ends (what was read before a TimeoutExpired
        kept), *input* written to its stdin, then its exit status awaited: as ``Popen.communicate``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        streams = [stream for stream in (self.stdout, self.stderr) if stream is not None and not stream.closed]
        selector = selectors.DefaultSelector()
        for stream in streams:
            selector.register(stream, selectors.EVENT_READ)
        view = memoryview(input or b"")
        if self._stdin is not None:
            if view:
                os.set_blocking(self._stdin, False)
                selector.register(self._stdin, selectors.EVENT_WRITE)
            else:
                os.close(self._stdin)
                self._stdin = None
        try:
            while selector.get_map():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise subprocess.TimeoutExpired(self.args, timeout, *self._so_far())
                for key, _ in selector.select(left):
                    if key.fileobj == self._stdin:
                        try:
                            written = os.write(self._stdin, view[:65536])
                        except BrokenPipeError:
                            written = len(view)
                        view = view[written:]
                        if not view:
                            selector.unregister(self._stdin)
                            os.close(self._stdin)
                            self._stdin = None
                    else:
                        data = os.read(key.fd, 65536)
                        if data:
                            self._read[key.fd].append(data)
                        else:
                            selector.unregister(key.fileobj)
                            key.fileobj.close()
        finally:
            selector.close()
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not self._take_status(left):
            raise subprocess.TimeoutExpired(self.args, timeout, *self._so_far())
        return self._so_far()

    def _so_far(self) -> tuple[bytes | None, bytes | None]:
        return tuple(None if fd is None else b"".join(self._read[fd]) for fd in self._fds)
