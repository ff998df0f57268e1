"""Polling with a deadline: a test that waits for something never hangs."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], T], timeout: float, message: str, interval: float = 0.01) -> T:
    """Call *condition* every *interval* seconds until it returns a true value, and return that value.

    At the deadline (*timeout* seconds from now, after one last try) the test fails with an
    AssertionError carrying *message*.  An exception raised by *condition* (such as
    ``assert process.poll() is None``) propagates at once.
    """
    deadline = time.monotonic() + timeout
    while True:
        last_try = time.monotonic() >= deadline
        value = condition()
        if value:
            return value
        if last_try:
            raise AssertionError(f"{message} (after waiting {timeout:g} s)")
        time.sleep(interval)


def while_running(process: subprocess.Popen, condition: Callable[[], object], what: str) -> Callable[[], bool]:
    """A condition for wait_until: *condition*, failing at once when *process* had ended before it was
    checked (then it cannot become true any more).  *what* completes "the process ended before ..."."""

    def check() -> bool:
        running = process.poll() is None  # looked at first: the process may end right after the condition holds
        if condition():
            return True
        assert running, f"the process ended (exit status {process.returncode}) before {what}"
        return False

    return check


def still_running(pids: list[int]) -> list[int]:
    """Those of *pids* still running (neither gone nor a zombie waiting to be reaped)."""
    import psutil  # (a test needing it skips without it: pytest.importorskip)

    running = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                running.append(pid)
        except psutil.NoSuchProcess:
            pass
    return running
