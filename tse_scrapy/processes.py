"""Child processes that end with the process that started them, however it ends (``kill -9``
included): Linux's ``PR_SET_PDEATHSIG``, set in the child at once.  Elsewhere nothing is set (the
callers' own ways to notice a parent gone still hold).  ``ForkedCall``: a function's work done in such
a child meanwhile."""

from __future__ import annotations

import contextlib
import ctypes
import os
import pickle
import select
import signal
import sys
import time
from collections.abc import Callable

# Linux's prctl option: the signal a process gets when its parent ends (<linux/prctl.h>).
PR_SET_PDEATHSIG = 1

Prctl = Callable[..., int]
# How long a ``ForkedCall``'s result is waited for before the caller does the work itself.
RESULT_SECONDS = 60.0


def find_prctl() -> Prctl | None:
    """The C library's prctl (found before a fork, not in each child), None where there is none."""
    if sys.platform != "linux":
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def end_with_parent(parent: int, prctl: Prctl | None, how: int = signal.SIGKILL) -> None:
    """In a forked child, at once: signal *how* when its parent, *parent*, ends; and now when it has
    ended already (between the fork and here: the child's parent is then another process).  The
    kernel sends it when the *thread* that forked the child ends: fork from the main thread."""
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, how, 0, 0, 0)
    if os.getppid() != parent:
        os.kill(os.getpid(), how)


class ForkedCall:
    """A function run in a forked child (Linux) while this process goes on with other work, its result
    (pickled) read when wanted: two cores' work at a start that would be one's.  The child says nothing
    and changes nothing (its function only reads); Ctrl-C ends it quietly.  Its result is None where it
    failed, was ended, or there is no fork: the caller then does the work itself."""

    def __init__(self, function: Callable[[], object]):
        self._pid: int | None = None
        self._read: int | None = None
        if sys.platform != "linux":
            return
        prctl = find_prctl()
        parent = os.getpid()
        read, write = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read)
            os.close(write)
            return
        if pid == 0:  # the child: its result written, it ends without running the parent's exit code
            try:
                os.close(read)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                end_with_parent(parent, prctl)
                data = memoryview(pickle.dumps(function()))
                while data:
                    data = data[os.write(write, data) :]
            except BaseException:  # (nothing said: the parent does the work itself)
                pass
            finally:
                os._exit(0)
        os.close(write)
        self._pid, self._read = pid, read

    def result(self, timeout: float = RESULT_SECONDS) -> object:
        """The function's result (waiting for it up to *timeout* seconds), or None; once."""
        if self._pid is None or self._read is None:
            return None
        chunks = []
        deadline = time.monotonic() + timeout
        try:
            while select.select([self._read], [], [], max(0.0, deadline - time.monotonic()))[0]:
                chunk = os.read(self._read, 65536)
                if not chunk:
                    return pickle.loads(b"".join(chunks)) if chunks else None
                chunks.append(chunk)
            self.cancel()  # (stuck: a lock another thread held at the fork, say)
            return None
        except (OSError, pickle.UnpicklingError, EOFError, ValueError):
            return None
        except BaseException:  # Ctrl-C while waiting: the child ended too
            self.cancel()
            raise
        finally:
            self._end()

    def cancel(self) -> None:
        """The child ended now, its result unread (the caller stopped before it needed it)."""
        if self._pid is not None:
            with contextlib.suppress(OSError):
                os.kill(self._pid, signal.SIGKILL)
            self._end()

    def _end(self) -> None:
        if self._read is not None:
            os.close(self._read)
            self._read = None
        if self._pid is not None:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self._pid, 0)
            self._pid = None
