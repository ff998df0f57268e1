"""Worker processes for the indexer and ``--update``: ranges of pages worked on in processes of
their own (``jobs`` > 1) or in the calling one, their results taken in docID order.

On an error or Ctrl-C the workers are stopped at once (terminated, waited
for) and later Ctrl-Cs are ignored until that is done
(``interrupts_during_cleanup_ignored``): none is left running.
"""

from __future__ import annotations

import gc
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
import traceback
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, NoReturn

from ..processes import Prctl, end_with_parent, find_prctl

# Allocations between two collections of a worker's youngest generation (Python's default: 700).
GC_YOUNGEST = 10_000


class WorkerDied(RuntimeError):
    """A worker process died (killed, out of memory), or failed with what it could not send back but as
    text; the message is for the user."""


@contextmanager
def interrupts_during_cleanup_ignored() -> Iterator[Callable[[], None]]:
    """Within: the first Ctrl-C raises KeyboardInterrupt and the ones after it are ignored, as they are
    once the function given is called (cleanup has begun); on leaving, Ctrl-C is as it was.  SIGTERM,
    where the command takes it as Ctrl-C (``cli``: a handler of its own), is ignored alike from then on,
    and left ignored: the command's way out is its clean-up too.

    Only in the main thread (where Python handles signals), and only when Ctrl-C raises
    KeyboardInterrupt there: an ignored or application-handled Ctrl-C is left alone."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    previous = signal.getsignal(signal.SIGINT)
    interrupt_ours = previous is signal.default_int_handler
    terminate_ours = callable(signal.getsignal(signal.SIGTERM))  # (whatever Ctrl-C is: `tse index &`)

    def ignore() -> None:
        if interrupt_ours:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        if terminate_ours:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)

    def interrupt(_signal: int, _frame: object) -> None:
        ignore()
        raise KeyboardInterrupt

    if interrupt_ours:
        signal.signal(signal.SIGINT, interrupt)
    try:
        yield ignore
    finally:
        if interrupt_ours:
            signal.signal(signal.SIGINT, previous)


def ranges_in_order(
    workers: Workers, range_pages: int, more: Callable[[int], tuple[object, ...]] = lambda start: ()
) -> Iterator[Any]:
    """The result of each range of *range_pages* docIDs, in docID order, until the one where the
    directory ends (its result's ``ended``); *more*: what else a range's work is given, by its start.

    Ranges are handed out ahead (two a worker) since the end is not known before
    it is reached; those past the end are dropped, their errors with them."""
    next_start = 1

    def hand_out() -> None:
        nonlocal next_start
        workers.hand_out(next_start, next_start + range_pages, *more(next_start))
        next_start += range_pages

    for _ in range(workers.ahead):
        hand_out()
    while True:
        result = workers.next_result()
        yield result
        if result.ended:
            return
        hand_out()


class Workers:
    """Worker processes working on ranges of pages (*jobs* > 1), or the calling process itself (1):
    each range given to *work* (``work(start, stop, *more)``), its result sent back.

    Each worker has a pipe of its own: a worker that dies, even halfway through
    sending a range's result, is seen at once (its pipe ends, its process exits),
    where a shared result queue (``ProcessPoolExecutor``) can wait for the rest
    of that result forever.  A range goes to the worker with the fewest to do.
    """

    def __init__(self, jobs: int, work: Callable[..., Any]):
        """*work*: what a range is given to; a forked worker inherits it (elsewhere it is pickled)."""
        self._work = work
        self._processes: list[BaseProcess] = []
        self._connections: list[Connection] = []
        self._to_do: list[int] = []  # ranges each worker was given and has not returned
        self._handed_out: deque[int] = deque()  # the first docID of the ranges not yet taken, in order
        self._returned: dict[int, tuple[Any, Exception | None, str]] = {}
        self.ahead = 2 * jobs if jobs > 1 else 1
        if jobs == 1:
            return
        # Linux: fork, its default up to Python 3.13 (3.14's forkserver would add a server process to
        # stop); a worker starts at once, sharing the modules loaded.  Elsewhere the platform's default.
        context = multiprocessing.get_context("fork" if sys.platform == "linux" else None)
        # A worker forked from the main thread is killed by the kernel when this process ends, however it
        # ends: killed, it would read on to its range's end before finding nobody to send it to (the
        # kernel's signal comes when the forking *thread* ends: from another, the pipe alone tells).
        forked_here = context.get_start_method() == "fork" and threading.current_thread() is threading.main_thread()
        parent = (os.getpid(), find_prctl()) if forked_here else None
        try:
            for _ in range(jobs):
                ours, theirs = context.Pipe()
                # A forked worker has copies of the parent's ends of the pipes, its own included: it closes
                # them, so that its pipe ends when the parent does (killed, it leaves no worker behind).
                parent_ends = [*self._connections, ours] if context.get_start_method() == "fork" else []
                args = (theirs, parent_ends, work, parent)
                process = context.Process(target=_work_on_ranges, args=args, daemon=True)
                # Ctrl-C and SIGTERM held back until the worker is known to stop(); the worker inherits
                # the mask, and ignores Ctrl-C and takes SIGTERM's default (not the parent's handler)
                # before unblocking them.
                with _interrupts_blocked():
                    process.start()
                    self._processes.append(process)
                    self._connections.append(ours)
                    self._to_do.append(0)
                theirs.close()  # the worker's end is the worker's only: its pipe ends when it does
        except BaseException:
            self.stop()
            raise

    def hand_out(self, start: int, stop: int, *more: object) -> None:
        """Have pages *start* to *stop* - 1 worked on (``work(start, stop, *more)``); in this process, at
        once (its exception raised here)."""
        self._handed_out.append(start)
        if not self._processes:
            self._returned[start] = (self._work(start, stop, *more), None, "")
            return
        worker = min(range(len(self._processes)), key=self._to_do.__getitem__)
        try:
            self._connections[worker].send((start, stop, *more))
        except OSError:  # its pipe is closed: it died
            self._died(worker)
        self._to_do[worker] += 1

    def next_result(self) -> Any:
        """The result of the first range handed out and not yet taken, or its exception;
        ``WorkerDied`` when a worker died or ran out of memory."""
        start = self._handed_out.popleft()
        while start not in self._returned:
            self._receive()
        result, error, remote_traceback = self._returned.pop(start)
        if isinstance(error, MemoryError):
            raise WorkerDied("a worker process ran out of memory")
        if error is not None:
            raise error from _RemoteTraceback(remote_traceback)
        return result

    def _receive(self) -> None:
        """Wait for a result from any worker, or for a worker's death."""
        worker_of: dict[object, int] = {}
        for worker, (connection, process) in enumerate(zip(self._connections, self._processes, strict=True)):
            worker_of[connection] = worker_of[process.sentinel] = worker
        for ready in multiprocessing.connection.wait(list(worker_of)):
            worker = worker_of[ready]
            if ready is not self._connections[worker]:  # its process ended
                self._died(worker)
            try:
                start, *returned = self._connections[worker].recv()
            except (EOFError, OSError):  # its pipe ended, maybe halfway through a result
                self._died(worker)
            except Exception as error:  # sent whole, but pickle cannot make it again (an exception's arguments)
                raise WorkerDied(
                    f"a worker process sent what cannot be read: {type(error).__name__}: {error}"
                ) from None
            self._returned[start] = tuple(returned)
            self._to_do[worker] -= 1

    def _died(self, worker: int) -> NoReturn:
        process = self._processes[worker]
        process.join(5)  # its end is at hand: its pipe or its process said so
        raise WorkerDied(f"a worker process died: {_how_it_ended(process.exitcode)}")

    def stop(self) -> None:
        """Stop the workers at once, whatever they are doing (the work past the end, or all of it on
        an error), and wait for them."""
        for process in self._processes:
            process.terminate()
        for process in self._processes:
            process.join()
        for connection in self._connections:
            connection.close()
        self._processes, self._connections, self._to_do = [], [], []


def _how_it_ended(status: int | None) -> str:
    if status is not None and status < 0:
        return f"killed by {signal.Signals(-status).name}"
    if status is not None:
        return f"exit status {status}"
    return "its pipe closed"


class _RemoteTraceback(Exception):
    """Where in a worker process the exception it sent back was raised."""

    def __str__(self) -> str:
        return "\n" + str(self.args[0])


def _work_on_ranges(
    connection: Connection,
    parent_ends: list[Connection],
    work: Callable[..., Any],
    parent: tuple[int, Prctl | None] | None = None,
) -> None:
    """A worker process: work on the ranges it is sent, (start, stop, ...) each, and send back
    (start, what *work* gives, its exception, where it was raised) for each, until the parent
    stops it or is gone (its pipe ends; *parent*: its pid and prctl, to be killed when it ends)."""
    if parent is not None:
        end_with_parent(*parent)
    _leave_interrupts_to_parent()
    for parent_end in parent_ends:
        parent_end.close()
    # A range's pages make and drop millions of lists and tuples, none in a cycle that lasts: the
    # youngest generation collected every GC_YOUNGEST allocations, not 700 (an indexing worker's
    # page 6.86 -> 6.69 ms of CPU, 1,000 wikipedia pages, medians of 3 rounds).
    gc.set_threshold(GC_YOUNGEST, *gc.get_threshold()[1:])
    try:
        while True:
            task = connection.recv()
            try:
                returned = (task[0], work(*task), None, "")
            except Exception as error:  # the parent raises it if it needs the range (not past the end)
                returned = (task[0], None, error, traceback.format_exc())
            try:
                connection.send(returned)
            except MemoryError as error:  # pickling a result bigger than the memory left
                connection.send((task[0], None, error, ""))
            except Exception as error:  # a result or an exception pickle cannot take: told as text
                told = returned[2] if returned[2] is not None else error
                failed = WorkerDied(f"a worker process failed: {type(told).__name__}: {told}")
                connection.send((task[0], None, failed, returned[3]))
    except (EOFError, OSError):  # the parent is gone: nobody to work for
        return


@contextmanager
def _interrupts_blocked() -> Iterator[None]:
    """SIGINT and SIGTERM held back (pending) within, in this thread and in the processes it starts
    (until a worker has made them its own: ``_leave_interrupts_to_parent``)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _leave_interrupts_to_parent() -> None:
    """Ctrl-C reaches the whole process group: the parent stops the workers and cleans up.  SIGTERM
    ends a worker (the parent's way to stop it), whatever the parent made of it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
